// The sd pack's Vulkan side: its SPIR-V modules (shaders/, compiled by glslc at build time), the
// ggml_ext_vulkan_v1 service, and one registration function per part. Public ggx headers only.
#pragma once

#include <ggml-ext-vulkan.h>
#include <ggml-ext.h>

#include <cstddef>
#include <cstdint>
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

// For the rules' optimize callbacks: delays the leading links of chain (node indices, increasing)
// past the independent nodes before each next link with ggml_ext_graph_delay, so the chain ends
// consecutive at its last link; stops at a refused delay (a crossed node depends on the chain, so
// the legality check would refuse the fusion anyway). Whether anything moved.
bool make_consecutive(ggml_cgraph * graph, const std::vector<int> & chain);

// The devices of the Vulkan registry.
std::vector<ggml_backend_dev_t> devices();

// Records the module named shader over bindings (0, 1, ...) with the constants, push constants and
// workgroup counts, through the service; the status of dispatch (error set on failure).
ggml_status dispatch(ggml_backend_t backend, const char * shader,
                     std::initializer_list<ggml_ext_vulkan_binding> bindings,
                     std::initializer_list<uint32_t> constants, const void * push, uint32_t push_bytes,
                     uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);

// Each registers its part's kernels and fusion rules on one Vulkan device; false after setting the
// error when a registration fails.
bool register_rope(ggml_backend_dev_t device, ggml_ext_op_t rope_op);  // vulkan/rope.cpp
bool register_int8(ggml_backend_dev_t device);                         // vulkan/int8.cpp

// The descriptor of the kernel "sd.rope_apply.vulkan" that register_rope registers, for
// ggml_ext_check_kernel in tests; its callbacks work once register_rope has run.
const ggml_ext_kernel_desc * rope_kernel_desc();

// The descriptors of "sd.quantize_i8_convrot.vulkan" and "sd.linear_i8.vulkan" that register_int8
// registers (on devices able to run them), for ggml_ext_check_kernel in tests.
const ggml_ext_kernel_desc * int8_quantize_kernel_desc();
const ggml_ext_kernel_desc * int8_linear_kernel_desc();

}  // namespace sd::vulkan
