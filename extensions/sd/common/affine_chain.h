// The F32 Mul(gate) -> Add(residual) chain the pack fuses (ggml-extensions.md's affine rules), parsed
// alike by the CPU rule (cpu/affine_fusions.cpp) and the Vulkan rule (vulkan/affine.cpp).
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

}  // namespace sd::affine_chain
