// CPU kernels of the normalisation family: NORM, RMS_NORM, L2_NORM and RMS_NORM_BACK (per row) and
// GROUP_NORM (per group of channels of one sample). All are F32 in and out; inputs may be strided views and
// the in-place variants write over their input exactly.
//
// Accuracy: sums are accumulated in double (F32 lanes promoted to F64 in SIMD), the variance is
// computed around the mean in a second pass (no cancellation), and the mean is subtracted as a
// float pair (hi + lo) so large offsets do not cost precision. The scaling itself is F32.
//
// The SIMD part is compiled for every Highway target and chosen at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/norm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace ggx::cpu::norm_simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum over i of (x[i] - shift), or of its square, accumulated in double.
template <bool kSquare>
double sum_deviations(const float * x, int64_t n, double shift) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
    const auto vshift = hn::Set(dd, shift);
    auto acc0 = hn::Zero(dd), acc1 = hn::Zero(dd);
    const auto accumulate = [&](auto acc, const float * p) {
        const auto d = hn::Sub(hn::PromoteTo(dd, hn::LoadU(df, p)), vshift);
        if constexpr (kSquare)
            return hn::MulAdd(d, d, acc);
        else
            return hn::Add(acc, d);
    };
    int64_t i = 0;
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
        acc0 = accumulate(acc0, x + i);
        acc1 = accumulate(acc1, x + i + lanes);
    }
    double total = hn::GetLane(hn::SumOfLanes(dd, hn::Add(acc0, acc1)));
    for (; i < n; ++i) {
        const double d = static_cast<double>(x[i]) - shift;
        total += kSquare ? d * d : d;
    }
    return total;
}

double Sum(const float * x, int64_t n) { return sum_deviations<false>(x, n, 0.0); }
double SumSquaredDeviations(const float * x, int64_t n, double shift) {
    return sum_deviations<true>(x, n, shift);
}

// y[i] = ((x[i] - hi) - lo) * scale; y may be x.
void ShiftScale(const float * x, float * y, int64_t n, float hi, float lo, float scale) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    const auto vhi = hn::Set(d, hi), vlo = hn::Set(d, lo), vscale = hn::Set(d, scale);
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(hn::Mul(hn::Sub(hn::Sub(hn::LoadU(d, x + i), vhi), vlo), vscale), d, y + i);
    for (; i < n; ++i)
        y[i] = ((x[i] - hi) - lo) * scale;
}

// Sum over i of x[i] * y[i], accumulated in double.
double Dot(const float * x, const float * y, int64_t n) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
    auto acc = hn::Zero(dd);
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        acc =
            hn::MulAdd(hn::PromoteTo(dd, hn::LoadU(df, x + i)), hn::PromoteTo(dd, hn::LoadU(df, y + i)), acc);
    double total = hn::GetLane(hn::SumOfLanes(dd, acc));
    for (; i < n; ++i)
        total += static_cast<double>(x[i]) * y[i];
    return total;
}

// y[i] = u[i] * a + v[i] * b, in double (the two terms may nearly cancel); y may be u or v.
void Combine(const float * u, const float * v, float * y, int64_t n, double a, double b) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
    const auto va = hn::Set(dd, a), vb = hn::Set(dd, b);
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const auto uv = hn::PromoteTo(dd, hn::LoadU(df, u + i)), vv = hn::PromoteTo(dd, hn::LoadU(df, v + i));
        hn::StoreU(hn::DemoteTo(df, hn::MulAdd(uv, va, hn::Mul(vv, vb))), df, y + i);
    }
    for (; i < n; ++i)
        y[i] = static_cast<float>(u[i] * a + v[i] * b);
}

}  // namespace HWY_NAMESPACE
}  // namespace ggx::cpu::norm_simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <algorithm>
#include <cmath>

#include "core/internal.h"
#include "cpu/kernels/common.h"

namespace ggx::cpu {

namespace norm_simd {
HWY_EXPORT(Sum);
HWY_EXPORT(SumSquaredDeviations);
HWY_EXPORT(ShiftScale);
HWY_EXPORT(Dot);
HWY_EXPORT(Combine);

double sum(const float * x, int64_t n) { return HWY_DYNAMIC_DISPATCH(Sum)(x, n); }
double sum_squared_deviations(const float * x, int64_t n, double shift) {
    return HWY_DYNAMIC_DISPATCH(SumSquaredDeviations)(x, n, shift);
}
void shift_scale(const float * x, float * y, int64_t n, float hi, float lo, float scale) {
    HWY_DYNAMIC_DISPATCH(ShiftScale)(x, y, n, hi, lo, scale);
}
double dot(const float * x, const float * y, int64_t n) { return HWY_DYNAMIC_DISPATCH(Dot)(x, y, n); }
void combine(const float * u, const float * v, float * y, int64_t n, double a, double b) {
    HWY_DYNAMIC_DISPATCH(Combine)(u, v, y, n, a, b);
}
}  // namespace norm_simd

namespace {

constexpr size_t kAlign = 64;

bool dense(const ggml_tensor * t) { return t->nb[0] == sizeof(float); }

// Per-thread scratch row of the node's ne0 floats (only used when a row is not dense).
size_t row_bytes(const ggml_tensor * node) { return core::align_up(node->ne[0] * sizeof(float), kAlign); }

size_t workspace(const ggml_tensor * node, int n_threads) {
    return dense(node) && dense(node->src[0]) ? 0 : row_bytes(node) * n_threads;
}

float * scratch(const ComputeParams & params, const ggml_tensor * node) {
    if (params.workspace == nullptr) return nullptr;
    return reinterpret_cast<float *>(static_cast<char *>(params.workspace) + row_bytes(node) * params.ith());
}

// Row (i1, i2, i3) of t as dense floats: in place, or gathered into buf.
const float * read_row(const ggml_tensor * t, int64_t i1, int64_t i2, int64_t i3, float * buf) {
    const char * p = row_at(t, i1, i2, i3);
    if (dense(t)) return reinterpret_cast<const float *>(p);
    load_row(GGML_TYPE_F32, p, t->nb[0], t->ne[0], buf);
    return buf;
}

// y = ((x - hi) - lo) * scale: the mean as a float pair, so that x - mean keeps double precision.
struct Affine {
    float hi = 0.0f, lo = 0.0f, scale = 0.0f;
};

// Normalisation of the count elements that visit(f) passes to f as dense pieces f(x, n).
template <class Visit>
Affine statistics(ggml_op op, double eps, double count, Visit && visit) {
    double mean = 0.0;
    if (op == GGML_OP_NORM || op == GGML_OP_GROUP_NORM) {
        double total = 0.0;
        visit([&](const float * x, int64_t n) { total += norm_simd::sum(x, n); });
        mean = total / count;
    }
    double squares = 0.0;
    visit([&](const float * x, int64_t n) { squares += norm_simd::sum_squared_deviations(x, n, mean); });
    const double scale = op == GGML_OP_L2_NORM ? 1.0 / std::max(std::sqrt(squares), eps)
                                               : 1.0 / std::sqrt(squares / count + eps);
    const float hi = static_cast<float>(mean);
    return {hi, static_cast<float>(mean - hi), static_cast<float>(scale)};
}

// Writes row (i1, i2, i3) of dst as f(x); x (ne0 dense floats) may be buf.
void write_row(ggml_tensor * dst, int64_t i1, int64_t i2, int64_t i3, const float * x, const Affine & f,
               float * buf) {
    const int64_t n = dst->ne[0];
    char * out = row_at(dst, i1, i2, i3);
    float * y = dense(dst) ? reinterpret_cast<float *>(out) : buf;
    norm_simd::shift_scale(x, y, n, f.hi, f.lo, f.scale);
    if (y == buf) store_row(GGML_TYPE_F32, buf, out, dst->nb[0], n);
}

bool supports_row_norm(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a != nullptr && a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 &&
           ggml_are_same_shape(a, node);
}

bool supports_group_norm(const ggml_tensor * node) {
    const int32_t groups = core::params<ggml_ext_group_norm_params>(node).n_groups;
    return supports_row_norm(node) && groups >= 1 && groups <= node->src[0]->ne[2];
}

// NORM, RMS_NORM, L2_NORM: one row at a time.
void compute_row_norm(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * src = node->src[0];
    const double eps = core::params<ggml_ext_norm_params>(node).eps;
    const int64_t n = node->ne[0];
    if (n == 0) return;
    float * buf = scratch(params, node);
    const auto [begin, end] = chunk_range(ggml_nrows(node), params.ith(), params.nth());
    for (int64_t r = begin; r < end && !params.should_stop(); ++r) {
        const int64_t i1 = r % node->ne[1], i2 = r / node->ne[1] % node->ne[2],
                      i3 = r / (node->ne[1] * node->ne[2]);
        const float * x = read_row(src, i1, i2, i3, buf);
        const Affine f = statistics(node->op, eps, static_cast<double>(n), [&](auto && g) { g(x, n); });
        write_row(node, i1, i2, i3, x, f, buf);
    }
}

// GROUP_NORM: a [W, H, C, N]; each (sample, group of ceil(C / G) channels) is one unit of work.
void compute_group_norm(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * src = node->src[0];
    const auto group_norm = core::params<ggml_ext_group_norm_params>(node);
    const int64_t groups = group_norm.n_groups;
    const double eps = group_norm.eps;
    const int64_t channels = node->ne[2], per_group = (channels + groups - 1) / groups;
    const int64_t n_groups = (channels + per_group - 1) / per_group;  // ceil(C / per_group) <= groups
    if (node->ne[0] == 0 || node->ne[1] == 0) return;
    float * buf = scratch(params, node);
    const auto [begin, end] = chunk_range(n_groups * node->ne[3], params.ith(), params.nth());
    for (int64_t u = begin; u < end && !params.should_stop(); ++u) {
        const int64_t sample = u / n_groups, c0 = u % n_groups * per_group;
        const int64_t c1 = std::min(channels, c0 + per_group);
        const auto for_rows = [&](auto && f) {
            for (int64_t c = c0; c < c1; ++c)
                for (int64_t i1 = 0; i1 < node->ne[1]; ++i1)
                    f(i1, c);
        };
        const double count = static_cast<double>((c1 - c0) * node->ne[1] * node->ne[0]);
        const Affine f = statistics(node->op, eps, count, [&](auto && g) {
            for_rows([&](int64_t i1, int64_t c) { g(read_row(src, i1, c, sample, buf), node->ne[0]); });
        });
        for_rows([&](int64_t i1, int64_t c) {
            write_row(node, i1, c, sample, read_row(src, i1, c, sample, buf), f, buf);
        });
    }
}

// RMS_NORM_BACK(dy, x): with ms = mean(x^2) + eps, dx = dy / sqrt(ms) - x * mean(x * dy) / ms^1.5;
// three scratch rows per thread (dy, x, dx) for rows that are not dense.
bool supports_rms_norm_back(const ggml_tensor * node) {
    const ggml_tensor * x = node->src[1];
    return supports_row_norm(node) && x != nullptr && x->type == GGML_TYPE_F32 &&
           ggml_are_same_shape(x, node);
}

size_t workspace_rms_norm_back(const ggml_tensor * node, int n_threads) {
    return 3 * row_bytes(node) * n_threads;
}

void compute_rms_norm_back(const ComputeParams & params, ggml_tensor * node) {
    const double eps = core::params<ggml_ext_norm_params>(node).eps;
    const int64_t n = node->ne[0];
    if (n == 0) return;
    float * buf =
        reinterpret_cast<float *>(static_cast<char *>(params.workspace) + 3 * row_bytes(node) * params.ith());
    const size_t stride = row_bytes(node) / sizeof(float);
    const auto [begin, end] = chunk_range(ggml_nrows(node), params.ith(), params.nth());
    for (int64_t r = begin; r < end && !params.should_stop(); ++r) {
        const int64_t i1 = r % node->ne[1], i2 = r / node->ne[1] % node->ne[2],
                      i3 = r / (node->ne[1] * node->ne[2]);
        const float * dy = read_row(node->src[0], i1, i2, i3, buf);
        const float * x = read_row(node->src[1], i1, i2, i3, buf + stride);
        const double ms = norm_simd::sum_squared_deviations(x, n, 0.0) / static_cast<double>(n) + eps;
        const double mean_xdy = norm_simd::dot(x, dy, n) / static_cast<double>(n);
        char * out = row_at(node, i1, i2, i3);
        float * y = dense(node) ? reinterpret_cast<float *>(out) : buf + 2 * stride;
        norm_simd::combine(dy, x, y, n, 1.0 / std::sqrt(ms), -mean_xdy / (ms * std::sqrt(ms)));
        if (y == buf + 2 * stride) store_row(GGML_TYPE_F32, y, out, node->nb[0], n);
    }
}

}  // namespace

namespace kernels {
const Kernel norm = cpu_kernel<supports_row_norm, workspace, compute_row_norm>("cpu.norm");
const Kernel rms_norm = cpu_kernel<supports_row_norm, workspace, compute_row_norm>("cpu.rms_norm");
const Kernel l2_norm = cpu_kernel<supports_row_norm, workspace, compute_row_norm>("cpu.l2_norm");
const Kernel group_norm = cpu_kernel<supports_group_norm, workspace, compute_group_norm>("cpu.group_norm");
const Kernel rms_norm_back =
    cpu_kernel<supports_rms_norm_back, workspace_rms_norm_back, compute_rms_norm_back>("cpu.rms_norm_back");
}  // namespace kernels

}  // namespace ggx::cpu

#endif  // HWY_ONCE
