// MUL_MAT with BF16 weights on AMX-BF16 tiles (amx_bf16.cpp), used by the MUL_MAT kernel
// (kernels/matmul.cpp) for products of 16 columns or more at default precision.
#pragma once

#include <ggml.h>

#include <cstddef>
#include <cstdint>

#include "cpu/kernels/exec.h"

namespace ggx::cpu::amx {

// c[n * ldc + m] = sum_k a[m, k] * bf16(b[n, k]) for m < M, n < N: a BF16 rows at a + m * lda
// (dense), b's rows (any float type, element stride b_nb0) rounded to BF16 to nearest even, as
// ggml's BF16 dot product rounds its activations; F32 accumulation.
struct Bf16Product {
    const char * a;
    size_t lda;
    const char * b;
    ggml_type b_type;
    size_t b_nb0, b_nb1;
    float * c;
    int64_t ldc, M, N, K;
};

// Whether the CPU has AMX-BF16 tiles the process may use (ggx::cpu::has_amx_bf16).
bool bf16_usable();
// Workspace bytes of a product of these sizes (64-byte aligned start expected).
size_t bf16_workspace(int64_t M, int64_t N, int64_t K);
// Run by every thread of the node (ex: its share; ex.workspace holds bf16_workspace bytes); all
// threads have left when it returns.
void bf16_compute(const Exec & ex, const Bf16Product & p);

}  // namespace ggx::cpu::amx
