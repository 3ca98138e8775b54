// The MUL_MAT kernel's blocked GEMM driver (matmul.cpp) for products whose M-side operand is an
// implicit matrix that the caller packs itself: the convolutions multiply an unfolded input they
// never materialise by their weights.
#pragma once

#include <ggml.h>

#include <cstddef>
#include <cstdint>

#include "cpu/kernels/exec.h"

namespace ggx::cpu::gemm {

// Writes rows [r0, r0 + rows) of batch `batch`'s A over k in [k0, k0 + kc) as out[k * R + r]
// (r < R; the rows from `rows` to R must be written as zeros). Called concurrently by all threads.
using PackRows = void (*)(const void * context, int64_t batch, int64_t r0, int64_t rows, int64_t R,
                          int64_t k0, int64_t kc, float * out);

// C[n * ldc + m] = sum_k A[m, k] * B[n, k] for each of `batches` products (M x N x K each).
struct Problem {
    int64_t M = 0, N = 0, K = 0, batches = 1;
    PackRows pack_a = nullptr;
    const void * a_context = nullptr;
    // B: element (n, k) at b + n * b_nb1 + k * b_nb0 (F32, F16 or BF16), the same for every batch.
    const char * b = nullptr;
    ggml_type b_type = GGML_TYPE_F32;
    size_t b_nb0 = 0, b_nb1 = 0;
    float * c = nullptr;  // batch i's C at c + i * c_batch
    int64_t ldc = 0, c_batch = 0;
};

// Workspace bytes compute needs with n_threads.
size_t workspace(const Problem & problem, int n_threads);
// Run by every thread of the node (ex: its share); all threads have left when it returns.
void compute(const Exec & ex, const Problem & problem);

}  // namespace ggx::cpu::gemm
