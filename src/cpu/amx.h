// MUL_MAT on AMX tiles, used by the MUL_MAT kernel (kernels/matmul.cpp) for products of 16 columns
// or more at default precision: BF16 weights on AMX-BF16 (amx_bf16.cpp), Q8_0 / Q4_0 weights on
// AMX-INT8 (amx_int8.cpp).
#pragma once

#include <ggml.h>

#include <cstddef>
#include <cstdint>

#include "cpu/kernels/exec.h"

namespace ggx::cpu::amx {

// c[n * ldc + m] = sum_k a[m, k] * b[n, k] for m < M, n < N: a's rows at a + m * lda (dense
// elements or blocks of a_type), b's rows of any float type (dense, rows b_nb1 apart).
struct Product {
    const char * a;
    ggml_type a_type;
    size_t lda;
    const char * b;
    ggml_type b_type;
    size_t b_nb1;
    float * c;
    int64_t ldc, M, N, K;
};

// BF16 a: b's values rounded to BF16 to nearest even, as ggml's BF16 dot product rounds its
// activations; F32 accumulation.
// Whether the CPU has AMX-BF16 tiles the process may use (ggx::cpu::has_amx_bf16).
bool bf16_usable();
// Workspace bytes of a product of these sizes (64-byte aligned start expected).
size_t bf16_workspace(int64_t M, int64_t N, int64_t K);
// Run by every thread of the node (ex: its share; ex.workspace holds bf16_workspace bytes); all
// threads have left when it returns.
void bf16_compute(const Exec & ex, const Product & p);

// Q8_0 / Q4_0 a: b quantized per 32-block to int8 as the int8 matrix-vector product does
// (d = amax / 127, q = round-to-nearest-even(x / d)); each block product is an exact int32 dot
// product scaled by d_a * d_b and accumulated in F32.
// Whether the CPU has AMX-INT8 tiles the process may use (ggml_cpu_has_amx_int8).
bool int8_usable();
// Whether a's type has an AMX-INT8 product.
bool int8_weights(ggml_type type);
// Workspace bytes of a product of these sizes run by nth threads (64-byte aligned start expected).
size_t int8_workspace(int64_t M, int64_t N, int64_t K, int nth);
// As bf16_compute, with int8_workspace bytes.
void int8_compute(const Exec & ex, const Product & p);

}  // namespace ggx::cpu::amx
