// The INT8 GEMM of sd.linear_i8.v1 (cpu/int8.cpp) and its AMX implementation (cpu/int8_amx.cpp).
#pragma once

#include <ggml-backend.h>
#include <ggml-ext.h>

#include <cstddef>
#include <cstdint>

namespace sd::int8::cpu {

// y[r * n + o] = epilogue(sum_k w[o * k + kk] * x[r * k + kk]) for o < n, r < m (sd-ops.md 3.4).
struct Gemm {
    const int8_t * w;  // n rows of k codes
    const int8_t * x;  // m rows of k codes
    int64_t k, n, m;
    const float * sx;      // m row scales or NULL (1)
    const float * sw;      // n weight scales or NULL (1)
    const float * bias;    // n or NULL
    const int32_t * xsum;  // VNNI: sum of each activation row over the vector part of K
    float * y;             // [n, m]: y[r * n + o]
};

namespace amx {

// Whether the CPU registry's features list AMX_INT8 (the CPU backend has obtained the tile-data
// permission); fixed for the process, so workspace requests made with it stay valid.
bool available();
// Whether the AMX path runs: available() and no test has turned it off.
bool enabled();
// Test hook: false forces the AVX-512 VNNI path on AMX machines (true restores detection).
void set_enabled(bool on);

// Workspace bytes of a product of these sizes (64-byte aligned start expected).
size_t workspace(int64_t k, int64_t n, int64_t m);
// Computes g on the pool with up to nth threads, using workspace (workspace(k, n, m) bytes).
ggml_status run(const ggml_ext_cpu_parallel_v1 * pool, ggml_backend_t backend, const Gemm & g,
                void * workspace, int nth);

}  // namespace amx
}  // namespace sd::int8::cpu
