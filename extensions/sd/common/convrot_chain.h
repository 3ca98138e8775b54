// The chains the pack fuses into ConvRot quantization (ggml-extensions.md's ConvRot fusions): SCALE,
// SWIGLU (packed, swapped or split) or SILU / SIGMOID -> MUL, then sd.quantize_i8_convrot.v1. Parsed
// alike by the CPU rules (cpu/convrot_fusions.cpp) and the Vulkan rule (vulkan/convrot.cpp), which
// add their device's constraints.
#pragma once

#include <ggml-ext.h>
#include <ggml.h>

#include <cstdint>
#include <vector>

namespace sd::convrot_chain {

// What produces the quantize input.
enum class Producer : int32_t {
    scale,        // SCALE(x)
    silu_mul,     // MUL(SILU(x), other), operands in the MUL's order
    sigmoid_mul,  // MUL(SIGMOID(x), other)
    swiglu,       // GLU SWIGLU: merged x (halves, swapped or not) or split x, other
};

// One fused range, from its nodes. Every F32 tensor has contiguous elements (nb0 == 4) and
// float-aligned row strides.
struct Chain {
    Producer producer;
    const ggml_tensor * x;  // the first node's input: rows of k (2k for merged SwiGLU) values
    const ggml_tensor *
        other;              // MUL's other operand (k values per row, rows broadcast) or SwiGLU's up; or NULL
    bool activation_first;  // MUL: the activation is src0
    bool swapped;           // merged SwiGLU: the activation takes the second half
    float scale, bias;      // SCALE
    int64_t k;              // the row length of the quantize input
    int group;              // ConvRot's G (1: none)
};

// Whether nodes[0, n) form a chain of n nodes (2: SCALE or SWIGLU, 3: SILU / SIGMOID -> MUL) ending
// in a quantize node of contiguous F32 input.
bool parse(const ggml_tensor * const * nodes, int n, Chain * chain);

// The rules' match: the chain of kNodes nodes at `first` starting with a node of op (0: none).
int match(const ggml_cgraph * graph, int first, ggml_op op, int n_nodes, Chain * chain);

// For the optimize callbacks: the positions of the SILU / SIGMOID -> MUL -> quantize chain whose
// activation is node `first`, each link the next consumer of the previous one; empty when none.
std::vector<int> activation_chain(const ggml_cgraph * graph, int first);

}  // namespace sd::convrot_chain
