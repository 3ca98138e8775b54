// The Vulkan device's kernels: the one Kernel descriptor made from each family's functions
// (kernels/<family>.cpp), their table indexed by ggml_op (checked at compile time), and the helpers
// the families share.
#pragma once

#include <ggml.h>

#include <array>
#include <cstdint>

#include "core/op_params.h"
#include "interface/kernel.h"
#include "vulkan/ext_service.h"
#include "vulkan/recorder.h"

namespace ggx::vulkan {

using ggx::Kernel;

// Bytes a workspace request is padded by, so that the backend can align the workspace's start to
// the device's storage-buffer offset alignment (kernels bind it from offset 0 of
// Recorder::workspace()).
size_t workspace_padding(ggml_backend_t backend);

// A Vulkan kernel family's functions as the one Kernel descriptor (kNative): supports on the
// device's Vulkan state, the scratch bytes a node needs (nullptr: none), and record, which records
// the node's dispatches into the Recorder the backend passes as call.context (throwing Error).
template <bool (*supports)(const Device & device, const ggml_tensor * node),
          size_t (*workspace)(const ggml_tensor * node),
          void (*record)(Recorder & recorder, const ggml_tensor * node)>
constexpr Kernel vulkan_kernel(const char * name) {
    Kernel k{name,
             Kernel::Kind::kNative,
             [](const Kernel &, ggml_backend_dev_t device, const ggml_tensor * node) {
                 return supports(*vulkan_device(device), node);
             },
             nullptr,
             [](const Kernel &, const KernelCall & call) {
                 record(*static_cast<Recorder *>(call.context), call.nodes[0]);
                 return GGML_STATUS_SUCCESS;
             },
             nullptr};
    if constexpr (workspace != nullptr) {
        k.prepare = [](const Kernel &, const KernelPrepare & step, void **, size_t * bytes) {
            const size_t needed = workspace(step.nodes[0]);
            *bytes = needed ? needed + workspace_padding(step.backend) : 0;
            return GGML_STATUS_SUCCESS;
        };
    }
    return k;
}

using KernelTable = std::array<Kernel, GGML_OP_COUNT>;
// The kernel of every op: ops the backend lacks have kernels::unsupported (supports is false).
const KernelTable & kernel_table();

// The kernel families, one file each (kernels/<family>.cpp, the op families of tests/ops).
namespace kernels {
extern const Kernel none, unsupported;  // table.cpp: layout ops; ops without a Vulkan kernel
extern const Kernel copy;               // copy.cpp
// Records CPY of node->src[0] into node (any tensors supports_copy of kernels::copy accepts); the
// ACC/SET kernel copies through it too.
void record_copy(Recorder & rec, const ggml_tensor * node);
extern const Kernel binary, silu_back, add_id, acc_set, opt_step, map, unary, glu;       // elementwise.cpp
extern const Kernel sum, sum_rows, argmax, cumsum, count_equal, argsort, cross_entropy;  // reduce.cpp
extern const Kernel repeat, concat, pad, roll, pad_reflect_1d, diag, tri, diag_mask, win_part, win_unpart,
    arange, repeat_back, get_rel_pos, add_rel_pos, upscale, timestep_embedding;  // shape.cpp
extern const Kernel row_norm, group_norm, rms_norm_back;                         // norm.cpp
// row_back.comp's rows: SOFT_MAX_BACK (param: scale) and RMS_NORM_BACK (param: eps) of node's
// (dy, y or x) sources.
enum class RowBack : uint32_t { kSoftMax = 0, kRmsNorm = 1 };
void record_row_back(Recorder & rec, const ggml_tensor * node, RowBack op, float param);
extern const Kernel mul_mat, mul_mat_id, out_prod;      // matmul.cpp
extern const Kernel soft_max, soft_max_back;            // softmax.cpp
extern const Kernel rope;                               // rope.cpp
extern const Kernel flash_attn_ext;                     // attention.cpp
extern const Kernel get_rows, set_rows, get_rows_back;  // indexing.cpp
extern const Kernel im2col, conv, conv_2d_dw, conv_transpose, im2col_back, col2im_1d, pool,
    pool_2d_back;  // conv.cpp
// recurrent.cpp (linear_attention: RWKV_WKV6, GATED_LINEAR_ATTN, RWKV_WKV7)
extern const Kernel ssm_conv, ssm_scan, linear_attention, gated_delta_net;
// attention.cpp (dsv4_hc: DSV4_HC_COMB, DSV4_HC_PRE, DSV4_HC_POST) and shape.cpp
extern const Kernel lightning_indexer, dsv4_hc, solve_tri;
}  // namespace kernels

// A tensor as the shaders address it (struct View in shaders/common.glsl): the offset of its first
// element and its strides, in elements of unit bytes, from the start of its binding.
struct View {
    uint32_t offset, s0, s1, s2, s3;
};
View view_of(const Recorder & recorder, const ggml_tensor * tensor, uint32_t unit);

// A shape as the shaders take it (uvec4 in a push-constant block).
struct Shape {
    uint32_t ne[4];
};
Shape shape_of(const ggml_tensor * tensor);

// Whether every stride of tensor is a whole number of units and the tensor fits in one binding.
bool addressable(const Device & device, const ggml_tensor * tensor, uint32_t unit);
// Whether the tensor's element count fits the 32-bit indices of the shaders.
bool small_enough(const ggml_tensor * tensor);
// The shader-name suffix of a storage type ("f32", "f16", "bf16"), or nullptr for other types.
const char * float_type_name(ggml_type type);
// The shader-name suffix of a block-quantized type the shaders dequantize (its ggml_type_name:
// "q8_0", "q4_K", ...), or nullptr for other types.
const char * block_type_name(ggml_type type);
// Whether the shaders also quantize into block type type (CPY and SET_ROWS from floats).
bool quantizable_block_type(ggml_type type);
// For a block type whose shaders read the i-quant grids, appends the grid table (uploaded once per
// device) to a dispatch's args: the binding after the tensors' (quant.glsl's QUANT_GRID_BINDING).
void add_grids(const Recorder & rec, ggml_type type, std::vector<Arg> & args);
// Bytes per shader array element for a float storage type (4 for F32, 2 for F16/BF16).
uint32_t float_unit(ggml_type type);
// An F32, F16 or BF16 tensor that the float shaders can address.
bool float_tensor(const Device & device, const ggml_tensor * tensor);
// Whether node and its src[0] are F32 tensors of one shape that the float shaders can address.
bool same_f32_shape(const Device & device, const ggml_tensor * node);

// Tensors moved as raw bits and block-quantized tensors (copy, indexing and shape families).
constexpr uint32_t kBlockUnit = 1;  // blocks are addressed in bytes (shaders/quant.glsl)
// The shader-name suffix of a type moved as raw bits, by element size ("u32", "u16", "u8"), or
// nullptr for block-quantized types and other sizes.
const char * raw_name(ggml_type type);
// A tensor moved as raw bits that the shaders can address.
bool raw_tensor(const Device & device, const ggml_tensor * t);
// A tensor of a block_type_name type with dense whole-block rows.
bool block_tensor(const Device & device, const ggml_tensor * t);
// The shape of t in blocks of block_type along dimension 0.
Shape block_shape(const ggml_tensor * t, ggml_type block_type);
// The element count of shape s.
uint64_t count(const Shape & s);

// One workgroup per reduced range (norm, softmax and reduce families).
// Workgroup size for ranges of n elements: a power of two in [32, 256], no larger than needed.
uint32_t block_size(uint64_t n);
// Groups for units workgroups of local_size invocations each.
Groups unit_groups(const Recorder & rec, uint64_t units, uint32_t local_size);

}  // namespace ggx::vulkan
