// The chains of the pack's affine fusions (ggml-extensions.md's affine rules), parsed alike by the CPU
// rules (cpu/affine_fusions.cpp) and the Vulkan rules (vulkan/affine.cpp): F32 Mul(gate) ->
// Add(residual), and the F16 copies of a Concat or a scaled Contiguous.
#pragma once

#include <ggml.h>

namespace sd::affine_chain {

// out = (x * gate) + residual, or residual + (x * gate): x of the output's shape, gate and residual
// of its row length or one value per row (ne0 == 1), their rows broadcast (ggml_can_repeat); every
// tensor F32 with contiguous elements, the output contiguous.
struct MulAdd {
    const ggml_tensor *x, *gate, *residual;
    bool mul_first;  // the product is the Add's src0
};

// Whether mul -> add is such a chain (a self-residual add(m, m) is not).
bool parse_mul_add(const ggml_tensor * mul, const ggml_tensor * add, MulAdd * m);

// The value source of a copy chain: c, a contiguous F32 tensor (the Concat's or the Contiguous's
// result, eliminated) read through the copy's (possibly permuted) view of it.
struct CopyChain {
    const ggml_tensor * c;     // the contiguous producer (Concat or Contiguous node)
    const ggml_tensor * view;  // what the copy reads: c, or a Permute view of it
    const ggml_tensor *a, *b;  // Concat: its inputs, joined along dim; Contiguous: a, b NULL
    int dim;
    bool scaled;
    float scale, bias;
    int axis_of[GGML_MAX_DIMS];  // the view's dimension walking each dimension of c (-1: c's is 1)
};

// nodes[0, n): Concat [-> Permute] -> CPY into F16, or Contiguous -> Scale -> Permute -> CPY into F16
// (the copy of its source's shape), or false.
bool parse_copy(const ggml_tensor * const * nodes, int n, CopyChain * chain);

}  // namespace sd::affine_chain
