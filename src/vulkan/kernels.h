// The Vulkan device's kernels: one table indexed by ggml_op (the same shape of descriptor as the
// CPU's and as extension kernels: supports, workspace, record), filled by one function per kernel
// family in kernels/<family>.cpp, and the helpers the families share.
#pragma once

#include <ggml.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "vulkan/recorder.h"

namespace ggx::vulkan {

struct Kernel {
    // Whether the node's types, shapes and layouts are supported (metadata only).
    bool (*supports)(const Device & device, const ggml_tensor * node) = nullptr;
    // Scratch bytes the node needs, reachable through Recorder::workspace(); nullptr means none.
    size_t (*workspace)(const ggml_tensor * node) = nullptr;
    // Records the node's dispatches.
    void (*record)(Recorder & recorder, const ggml_tensor * node) = nullptr;
};

using KernelTable = std::array<Kernel, GGML_OP_COUNT>;
const KernelTable & kernel_table();

// The kernel families (kernels/<family>.cpp).
void add_elementwise_kernels(KernelTable & table);
void add_copy_kernels(KernelTable & table);
void add_norm_kernels(KernelTable & table);
void add_matmul_kernels(KernelTable & table);
void add_rope_kernels(KernelTable & table);
void add_attention_kernels(KernelTable & table);
void add_image_kernels(KernelTable & table);
void add_argmax_kernels(KernelTable & table);

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

// op_params word index of node as T (int32_t, uint32_t or float).
template <class T>
T param(const ggml_tensor * node, int index) {
    T value;
    std::memcpy(&value, reinterpret_cast<const char *>(node->op_params) + index * 4, sizeof value);
    return value;
}

// Whether every stride of tensor is a whole number of units and the tensor fits in one binding.
bool addressable(const Device & device, const ggml_tensor * tensor, uint32_t unit);
// Whether the tensor's element count fits the 32-bit indices of the shaders.
bool small_enough(const ggml_tensor * tensor);
// The shader-name suffix of a storage type ("f32", "f16", "bf16"), or nullptr for other types.
const char * float_type_name(ggml_type type);
// The shader-name suffix of a block-quantized type ("q8_0", "q4_0"), or nullptr for other types.
const char * block_type_name(ggml_type type);
// Bytes per shader array element for a float storage type (4 for F32, 2 for F16/BF16).
uint32_t float_unit(ggml_type type);
// An F32, F16 or BF16 tensor that the float shaders can address.
bool float_tensor(const Device & device, const ggml_tensor * tensor);

}  // namespace ggx::vulkan
