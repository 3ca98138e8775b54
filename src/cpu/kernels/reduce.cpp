// Reductions: SUM (all elements), SUM_ROWS and MEAN (per row), ARGMAX (per row of an F32 matrix).
//
// Sums accumulate in double (eight independent partial sums, so the loop is not latency-bound),
// which keeps long rows accurate to the oracle's double precision before the final rounding to the
// result type. ARGMAX returns the first maximum; a NaN is never greater than anything, so NaNs are
// skipped unless the row starts with one (then index 0 is returned), exactly like the loop
// "best = 0; for i: if (x[i] > x[best]) best = i".
#include <ggml.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cpu/kernels/common.h"

namespace ggx::cpu::kernels {
namespace {

constexpr int64_t kChunk = 1024;

double sum_f32(const float * x, int64_t n) {
    constexpr int64_t lanes = 8;
    double acc[lanes] = {};
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        for (int64_t k = 0; k < lanes; ++k)
            acc[k] += x[i + k];
    for (; i < n; ++i)
        acc[0] += x[i];
    double s = 0.0;
    for (double a : acc)
        s += a;
    return s;
}

// Sum of elements [j0, j0 + n) of a row of t (any float type, any stride).
double sum_span(const ggml_tensor * t, const char * row, int64_t j0, int64_t n) {
    if (t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float))
        return sum_f32(reinterpret_cast<const float *>(row) + j0, n);
    double s = 0.0;
    float buf[kChunk];
    for (int64_t j = j0; j < j0 + n; j += kChunk) {
        const int64_t len = std::min(kChunk, j0 + n - j);
        load_row(t->type, row + j * t->nb[0], t->nb[0], len, buf);
        s += sum_f32(buf, len);
    }
    return s;
}

bool supports_sum_rows(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && is_float(a->type) && node->type == a->type && node->ne[0] == 1 && node->ne[1] == a->ne[1] &&
           node->ne[2] == a->ne[2] && node->ne[3] == a->ne[3];
}

void sum_rows_into(const ComputeParams & params, ggml_tensor * node, bool mean) {
    const ggml_tensor * a = node->src[0];
    for_each_row(params, a, [&](int64_t i1, int64_t i2, int64_t i3) {
        if (params.should_stop()) return;
        const double s = sum_span(a, row_at(a, i1, i2, i3), 0, a->ne[0]);
        store_float(node->type, row_at(node, i1, i2, i3), static_cast<float>(mean ? s / a->ne[0] : s));
    });
}

void compute_sum_rows(const ComputeParams & params, ggml_tensor * node) {
    sum_rows_into(params, node, false);
}
void compute_mean(const ComputeParams & params, ggml_tensor * node) { sum_rows_into(params, node, true); }

// ---- SUM: every thread sums its share of (row, chunk) pieces into its workspace slot; thread 0 adds
// the slots after a barrier. --------------------------------------------------------------------------

constexpr size_t kSlot = 64;  // one cache line per thread

bool supports_sum(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && is_float(a->type) && node->type == a->type && ggml_nelements(node) == 1;
}

size_t sum_workspace(const ggml_tensor *, int n_threads) { return kSlot * static_cast<size_t>(n_threads); }

void compute_sum(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const int64_t per_row = (a->ne[0] + kChunk - 1) / kChunk;
    const auto [begin, end] = chunk_range(ggml_nrows(a) * per_row, params.ith(), params.nth());
    double s = 0.0;
    for (int64_t c = begin; c < end && !params.should_stop(); ++c) {
        const int64_t r = c / per_row, j0 = c % per_row * kChunk;
        const int64_t i1 = r % a->ne[1], i2 = r / a->ne[1] % a->ne[2], i3 = r / (a->ne[1] * a->ne[2]);
        s += sum_span(a, row_at(a, i1, i2, i3), j0, std::min(kChunk, a->ne[0] - j0));
    }
    char * slots = static_cast<char *>(params.workspace);
    std::memcpy(slots + kSlot * params.ith(), &s, sizeof s);
    params.thread.barrier();
    if (params.ith() != 0) return;
    double total = 0.0;
    for (int t = 0; t < params.nth(); ++t) {
        double part;
        std::memcpy(&part, slots + kSlot * t, sizeof part);
        total += part;
    }
    store_float(node->type, node->data, static_cast<float>(total));
}

// ---- ARGMAX ---------------------------------------------------------------------------------------

bool supports_argmax(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_I32 && a->ne[0] > 0 &&
           ggml_is_matrix(a) && node->ne[0] == a->ne[1] && ggml_nelements(node) == a->ne[1];
}

void compute_argmax(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const auto [begin, end] = chunk_range(a->ne[1], params.ith(), params.nth());
    for (int64_t i1 = begin; i1 < end && !params.should_stop(); ++i1) {
        const char * row = row_at(a, i1);
        float best_value = load_float(GGML_TYPE_F32, row);
        int32_t best = 0;
        for (int64_t i0 = 1; i0 < a->ne[0]; ++i0) {
            const float v = load_float(GGML_TYPE_F32, row + i0 * a->nb[0]);
            if (v > best_value) {
                best_value = v;
                best = static_cast<int32_t>(i0);
            }
        }
        std::memcpy(element_at(node, i1, 0), &best, sizeof best);
    }
}

}  // namespace

const Kernel sum = cpu_kernel<supports_sum, sum_workspace, compute_sum>("cpu.sum");
const Kernel sum_rows = cpu_kernel<supports_sum_rows, nullptr, compute_sum_rows>("cpu.sum_rows");
const Kernel mean = cpu_kernel<supports_sum_rows, nullptr, compute_mean>("cpu.mean");
const Kernel argmax = cpu_kernel<supports_argmax, nullptr, compute_argmax>("cpu.argmax");

}  // namespace ggx::cpu::kernels
