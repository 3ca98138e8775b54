// Reductions: SUM (all elements), SUM_ROWS and MEAN (per row), ARGMAX (per row of an F32 matrix),
// CUMSUM (running sums of rows), COUNT_EQUAL, ARGSORT and TOP_K (per row), CROSS_ENTROPY_LOSS and
// its gradient CROSS_ENTROPY_LOSS_BACK.
//
// Sums accumulate in double (eight independent partial sums, so the loop is not latency-bound),
// which keeps long rows accurate to the oracle's double precision before the final rounding to the
// result type. ARGMAX returns the first maximum; a NaN is never greater than anything, so NaNs are
// skipped unless the row starts with one (then index 0 is returned), exactly like the loop
// "best = 0; for i: if (x[i] > x[best]) best = i".
#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>

#include "core/internal.h"
#include "cpu/kernels/common.h"
#include "cpu/kernels/elementwise_simd.h"

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

size_t slots_workspace(const ggml_tensor *, int n_threads) { return kSlot * static_cast<size_t>(n_threads); }

// Every thread's part summed: the total on thread 0 (after a barrier every thread reaches),
// std::nullopt on the others.
std::optional<double> sum_over_threads(const ComputeParams & params, double part) {
    char * slots = static_cast<char *>(params.workspace);
    std::memcpy(slots + kSlot * params.ith(), &part, sizeof part);
    params.thread.barrier();
    if (params.ith() != 0) return std::nullopt;
    double total = 0.0;
    for (int t = 0; t < params.nth(); ++t) {
        double p;
        std::memcpy(&p, slots + kSlot * t, sizeof p);
        total += p;
    }
    return total;
}

bool supports_sum(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && is_float(a->type) && node->type == a->type && ggml_nelements(node) == 1;
}

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
    if (const auto total = sum_over_threads(params, s))
        store_float(node->type, node->data, static_cast<float>(*total));
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

// ---- CUMSUM: running sums in double, rounded once per element. ---------------------------------------

bool supports_cumsum(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && is_float(a->type) && node->type == a->type && ggml_are_same_shape(a, node);
}

void compute_cumsum(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    for_each_row(params, a, [&](int64_t i1, int64_t i2, int64_t i3) {
        const char * in = row_at(a, i1, i2, i3);
        char * out = row_at(node, i1, i2, i3);
        double s = 0.0;
        float buf[kChunk];
        for (int64_t j0 = 0; j0 < a->ne[0]; j0 += kChunk) {
            const int64_t n = std::min(kChunk, a->ne[0] - j0);
            load_row(a->type, in + j0 * a->nb[0], a->nb[0], n, buf);
            for (int64_t k = 0; k < n; ++k) {
                s += buf[k];
                buf[k] = static_cast<float>(s);
            }
            store_row(node->type, buf, out + j0 * node->nb[0], node->nb[0], n);
        }
    });
}

// ---- COUNT_EQUAL: an I64 count; floats compare by value (NaN equals nothing), I32 exactly. ----------

bool supports_count_equal(const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    return a && b && (is_float(a->type) || a->type == GGML_TYPE_I32) && b->type == a->type &&
           ggml_are_same_shape(a, b) && node->type == GGML_TYPE_I64 && ggml_nelements(node) == 1;
}

bool equal_at(ggml_type type, const char * p, const char * q) {
    if (type != GGML_TYPE_I32) return load_float(type, p) == load_float(type, q);
    return std::memcmp(p, q, sizeof(int32_t)) == 0;
}

void compute_count_equal(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    int64_t count = 0;
    for_each_row(params, a, [&](int64_t i1, int64_t i2, int64_t i3) {
        const char *pa = row_at(a, i1, i2, i3), *pb = row_at(b, i1, i2, i3);
        for (int64_t i0 = 0; i0 < a->ne[0]; ++i0)
            count += equal_at(a->type, pa + i0 * a->nb[0], pb + i0 * b->nb[0]) ? 1 : 0;
    });
    if (const auto total = sum_over_threads(params, static_cast<double>(count))) {
        const auto n = static_cast<int64_t>(*total);
        std::memcpy(node->data, &n, sizeof n);
    }
}

// ---- ARGSORT and TOP_K: each element of a row becomes a 64-bit key, its value's rank in the high
// half and its index in the low half, and the keys sort as integers: equal values keep index order (a
// stable sort), NaNs go last in either order. TOP_K is the first k of the descending order. ---------

// The scratch of one thread: a row of keys, then a row of floats.
size_t sort_slice(const ggml_tensor * a) {
    return core::align_up(a->ne[0] * (sizeof(uint64_t) + sizeof(float)), kSlot);
}

size_t sort_workspace(const ggml_tensor * node, int n_threads) {
    return sort_slice(node->src[0]) * static_cast<size_t>(n_threads);
}

// A rank of x that orders as x does (-0 and +0 alike), reversed when descending; NaN ranks last.
uint32_t sort_rank(float x, bool descending) {
    if (std::isnan(x)) return UINT32_MAX;
    if (x == 0.0f) x = 0.0f;
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    const uint32_t ascending = bits & 0x80000000u ? ~bits : bits | 0x80000000u;
    // No number ranks UINT32_MAX: in either direction only the bits of a NaN would.
    return descending ? ~ascending : ascending;
}

bool supports_sort(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!a || !is_float(a->type) || node->type != GGML_TYPE_I32 || node->ne[1] != a->ne[1] ||
        node->ne[2] != a->ne[2] || node->ne[3] != a->ne[3] || a->ne[0] > INT32_MAX)
        return false;
    if (node->op == GGML_OP_TOP_K) return node->ne[0] >= 1 && node->ne[0] <= a->ne[0];
    return node->ne[0] == a->ne[0];
}

void compute_sort(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const bool top_k = node->op == GGML_OP_TOP_K;
    const bool descending =
        top_k || core::params<ggml_ext_argsort_params>(node).order == GGML_SORT_ORDER_DESC;
    char * slice = static_cast<char *>(params.workspace) + sort_slice(a) * params.ith();
    auto * keys = reinterpret_cast<uint64_t *>(slice);
    auto * x = reinterpret_cast<float *>(slice + a->ne[0] * sizeof(uint64_t));
    const int64_t n = a->ne[0], k = node->ne[0];
    for_each_row(params, a, [&](int64_t i1, int64_t i2, int64_t i3) {
        if (params.should_stop()) return;
        load_row(a->type, row_at(a, i1, i2, i3), a->nb[0], n, x);
        for (int64_t i = 0; i < n; ++i)
            keys[i] = uint64_t{sort_rank(x[i], descending)} << 32 | static_cast<uint64_t>(i);
        if (top_k)
            std::partial_sort(keys, keys + k, keys + n);
        else
            std::sort(keys, keys + n);
        char * out = row_at(node, i1, i2, i3);
        for (int64_t i = 0; i < k; ++i) {
            const auto index = static_cast<int32_t>(keys[i] & UINT32_MAX);
            std::memcpy(out + i * node->nb[0], &index, sizeof index);
        }
    });
}

// ---- CROSS_ENTROPY_LOSS(logits, labels) = -sum_rows sum_i label_i log softmax(logits)_i / rows, and
// CROSS_ENTROPY_LOSS_BACK(grad, logits, labels) = (softmax(logits) - labels) grad / rows. Each row's
// logits, labels and exponentials go to the thread's workspace slice (after the threads' slots); the
// exponentials run on Highway vectors, the sums accumulate in double. -------------------------------

// Three rows of floats: the logits, the labels, the exponentials.
size_t softmax_slice(const ggml_tensor * logits) {
    return core::align_up(3 * logits->ne[0] * sizeof(float), kSlot);
}

size_t cross_entropy_workspace(const ggml_tensor * node, int n_threads) {
    const ggml_tensor * logits = node->src[node->op == GGML_OP_CROSS_ENTROPY_LOSS_BACK ? 1 : 0];
    return (kSlot + softmax_slice(logits)) * static_cast<size_t>(n_threads);
}

bool supports_cross_entropy(const ggml_tensor * node) {
    const bool back = node->op == GGML_OP_CROSS_ENTROPY_LOSS_BACK;
    const ggml_tensor *logits = node->src[back ? 1 : 0], *labels = node->src[back ? 2 : 1];
    if (!logits || !labels || !is_float(logits->type) || labels->type != logits->type ||
        !ggml_are_same_shape(logits, labels) || node->type != logits->type)
        return false;
    if (!back) return ggml_nelements(node) == 1;
    const ggml_tensor * grad = node->src[0];
    return grad && is_float(grad->type) && ggml_nelements(grad) == 1 && ggml_are_same_shape(node, logits);
}

// Row (i1, i2, i3) of logits and labels in the thread's slice, with e = exp(x - max) and its sum:
// softmax(x) = e / sum, log softmax(x) = x - (max + log sum).
struct SoftmaxRow {
    float *x, *label, *e;
    double max, sum;
};
SoftmaxRow load_softmax_row(const ComputeParams & params, const ggml_tensor * logits,
                            const ggml_tensor * labels, int64_t i1, int64_t i2, int64_t i3) {
    using elementwise_simd::MapOp;
    const int64_t n = logits->ne[0];
    char * slices = static_cast<char *>(params.workspace) + kSlot * static_cast<size_t>(params.nth());
    auto * x = reinterpret_cast<float *>(slices + softmax_slice(logits) * params.ith());
    float *label = x + n, *e = x + 2 * n;
    load_row(logits->type, row_at(logits, i1, i2, i3), logits->nb[0], n, x);
    load_row(labels->type, row_at(labels, i1, i2, i3), labels->nb[0], n, label);
    const float mx = *std::max_element(x, x + n);
    elementwise_simd::map({MapOp::scale, 1.0f, -mx}, x, e, n);
    elementwise_simd::map({MapOp::exp}, e, e, n);
    return {x, label, e, mx, sum_f32(e, n)};
}

void compute_cross_entropy_loss(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *logits = node->src[0], *labels = node->src[1];
    const int64_t n = logits->ne[0];
    double part = 0.0;
    if (n > 0) {
        for_each_row(params, logits, [&](int64_t i1, int64_t i2, int64_t i3) {
            const SoftmaxRow row = load_softmax_row(params, logits, labels, i1, i2, i3);
            const double shift = row.max + std::log(row.sum);
            for (int64_t i = 0; i < n; ++i)
                part += row.label[i] * (row.x[i] - shift);
        });
    }
    if (const auto total = sum_over_threads(params, part)) {
        const double rows = static_cast<double>(ggml_nrows(logits));
        store_float(node->type, node->data, static_cast<float>(rows > 0 ? -*total / rows : 0.0));
    }
}

// softmax(x) = e / sum, minus the labels, times grad / rows.
void compute_cross_entropy_loss_back(const ComputeParams & params, ggml_tensor * node) {
    using elementwise_simd::BinaryOp;
    using elementwise_simd::MapOp;
    const ggml_tensor *logits = node->src[1], *labels = node->src[2];
    const int64_t n = logits->ne[0];
    const float scale =
        load_float(node->src[0]->type, node->src[0]->data) / static_cast<float>(ggml_nrows(logits));
    for_each_row(params, logits, [&](int64_t i1, int64_t i2, int64_t i3) {
        const SoftmaxRow row = load_softmax_row(params, logits, labels, i1, i2, i3);
        elementwise_simd::map({MapOp::scale, static_cast<float>(1.0 / row.sum)}, row.e, row.e, n);
        elementwise_simd::binary(BinaryOp::sub, row.e, row.label, row.e, n);
        elementwise_simd::map({MapOp::scale, scale}, row.e, row.e, n);
        store_row(node->type, row.e, row_at(node, i1, i2, i3), node->nb[0], n);
    });
}

}  // namespace

const Kernel sum = cpu_kernel<supports_sum, slots_workspace, compute_sum>("cpu.sum");
const Kernel sum_rows = cpu_kernel<supports_sum_rows, nullptr, compute_sum_rows>("cpu.sum_rows");
const Kernel mean = cpu_kernel<supports_sum_rows, nullptr, compute_mean>("cpu.mean");
const Kernel argmax = cpu_kernel<supports_argmax, nullptr, compute_argmax>("cpu.argmax");
const Kernel cumsum = cpu_kernel<supports_cumsum, nullptr, compute_cumsum>("cpu.cumsum");
const Kernel count_equal =
    cpu_kernel<supports_count_equal, slots_workspace, compute_count_equal>("cpu.count_equal");
const Kernel argsort = cpu_kernel<supports_sort, sort_workspace, compute_sort>("cpu.argsort");
const Kernel cross_entropy_loss =
    cpu_kernel<supports_cross_entropy, cross_entropy_workspace, compute_cross_entropy_loss>(
        "cpu.cross_entropy_loss");
const Kernel cross_entropy_loss_back =
    cpu_kernel<supports_cross_entropy, cross_entropy_workspace, compute_cross_entropy_loss_back>(
        "cpu.cross_entropy_loss_back");

}  // namespace ggx::cpu::kernels
