// The sd pack's Vulkan side: its SPIR-V modules (shaders/, compiled by glslc at build time), the
// ggml_ext_vulkan_v1 service, and one registration function per part. Public ggx headers only.
#pragma once

#include <ggml-ext-vulkan.h>
#include <ggml-ext.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

namespace sd::vulkan {

struct SpirvModule {
    const char * name;
    const uint32_t * words;
    size_t n_words;
};

// Generated from shaders/*.cmake (see extensions/sd/CMakeLists.txt).
const std::vector<SpirvModule> & shader_table();

// The Vulkan registry's service table, or nullptr when ggx has no Vulkan backend.
const ggml_ext_vulkan_v1 * service();

// GGML_VK_DISABLE_FUSION set to anything but "0": the pack's Vulkan fusion rules match nothing
// (read on every match).
bool fusion_disabled();

// sd::make_chains_consecutive (common/pack.h), nothing when fusion_disabled().
void make_chains_consecutive(ggml_cgraph * graph, const std::function<std::vector<int>(int)> & chain_at);

// ---- binding tensors for the kernels -------------------------------------------------------------

// A binding of a byte range and where the service resolved it.
struct Bound {
    ggml_ext_vulkan_binding binding;
    ggml_ext_vulkan_buffer_info info;
};

// Binds `size` bytes of t from byte `offset` (size 0: to its end), written or read; false with the
// service's error when the range is invalid.
bool bind(ggml_backend_t backend, const ggml_tensor * t, bool written, Bound * out, size_t offset = 0,
          size_t size = 0);

// Binds the F32 output range written by a shader, which must start on a float (error set otherwise).
bool bind_output(ggml_backend_t backend, const ggml_ext_vulkan_range & range, Bound * out);

// The first `bytes` of a plan workspace (execute params' workspace and workspace_data): the range of
// its buffer from workspace_data, which need not be the buffer's start.
ggml_ext_vulkan_range workspace_range(ggml_backend_buffer_t workspace, const void * workspace_data,
                                      size_t bytes);

// Binds the first `bytes` of a fusion's workspace as a written output (for an output that overlaps an
// input); false with the error set when the workspace is smaller.
bool bind_workspace(const ggml_ext_fusion_execute_params * params, size_t bytes, Bound * out);

// Whether two bound ranges share bytes, and whether they are the same range.
bool overlaps(const Bound & a, const Bound & b);
bool same_range(const Bound & a, const Bound & b);

// Sets the error and returns GGML_STATUS_FAILED.
ggml_status fail(const char * message);

// Whether a byte range of `bytes` fits one binding of the device (and 32-bit indices).
bool fits_binding(ggml_backend_dev_t device, size_t bytes);

// F32 with float-aligned strides, in one binding with 32-bit float indices.
bool bindable_f32(ggml_backend_dev_t device, const ggml_tensor * t);

// The other operand of node, an F32 `op` of value's shape with value as one operand: a bindable F32
// tensor repeated over the node (ggml_can_repeat), or NULL when node is not such a node.
const ggml_tensor * repeated_operand(ggml_backend_dev_t device, const ggml_tensor * node, ggml_op op,
                                     const ggml_tensor * value);

// A bound F32 tensor as shaders index it (repeated over an output): its first float, extents and
// strides in floats.
struct View {
    uint32_t offset, ne[4], nb[4];
};
View view_of(const Bound & bound, const ggml_tensor * t);

// The devices of the Vulkan registry.
std::vector<ggml_backend_dev_t> devices();

// Records the module named shader over bindings (0, 1, ...) with the constants, push constants and
// workgroup counts, through the service; the status of dispatch (error set on failure).
ggml_status dispatch(ggml_backend_t backend, const char * shader,
                     std::initializer_list<ggml_ext_vulkan_binding> bindings,
                     std::initializer_list<uint32_t> constants, const void * push, uint32_t push_bytes,
                     uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);

// The pack's Vulkan kernels and fusion rules only record dispatches and copies computed from tensor
// metadata, addresses and attributes, initialize every workspace byte they read within the same
// execution and own no device memory: they opt into replay, across scheduler rebuilds too (spec:
// replayable plans). These register desc with those flags.
inline constexpr uint32_t kReplayFusionFlags = GGML_EXT_FUSION_CAPTURE_SAFE | GGML_EXT_FUSION_REPLAY_REUSABLE;
bool register_replayable_kernel(ggml_backend_dev_t device, const ggml_ext_kernel_desc * desc);
bool register_replayable_fusion(ggml_backend_dev_t device, const ggml_ext_fusion_desc * desc);

// Each registers its part's kernels and fusion rules on one Vulkan device; false after setting the
// error when a registration fails.
bool register_rope(ggml_backend_dev_t device, ggml_ext_op_t rope_op);  // vulkan/rope.cpp
bool register_convrot(ggml_backend_dev_t device);                      // vulkan/convrot.cpp
bool register_int8(ggml_backend_dev_t device);                         // vulkan/int8.cpp
bool register_affine(ggml_backend_dev_t device);                       // vulkan/affine.cpp

// Records ConvRot quantization (sd-ops.md 3.3; group 1: no rotation) of `rows` contiguous F32 rows of
// k values (k a multiple of 4 and of the group) bound as `in` into the packed layout bound as `out`
// (packed_bytes(k, rows) bytes, not overlapping in); both must start on 4 bytes (vulkan/convrot.cpp).
ggml_status record_quantize(ggml_backend_t backend, const Bound & in, const Bound & out, int64_t k,
                            int64_t rows, int group);

// The descriptor of the kernel "sd.rope_apply.vulkan" that register_rope registers, for
// ggml_ext_check_kernel in tests; its callbacks work once register_rope has run.
const ggml_ext_kernel_desc * rope_kernel_desc();

// The descriptors of "sd.quantize_i8_convrot.vulkan" (register_convrot) and "sd.linear_i8.vulkan"
// (register_int8), registered on devices able to run them, for ggml_ext_check_kernel in tests.
const ggml_ext_kernel_desc * int8_quantize_kernel_desc();
const ggml_ext_kernel_desc * int8_linear_kernel_desc();

// dispatch with the bindings and constants in vectors (counts known only at run time).
ggml_status dispatch_vectors(ggml_backend_t backend, const char * shader,
                             const std::vector<ggml_ext_vulkan_binding> & bindings,
                             const std::vector<uint32_t> & constants, const void * push, uint32_t push_bytes,
                             uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);

}  // namespace sd::vulkan
