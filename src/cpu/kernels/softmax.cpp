// CPU kernels of the softmax family. SOFT_MAX: softmax over each row of a * scale + slope * mask, a
// F32, mask F32/F16 (optional, [ne0, >= ne1, M2, M3], tiled over a's dims 2 and 3), optional sinks
// (F32 [ne2]: one more logit per head in each row's sum), result F32 (possibly a itself). Then
// SOFT_MAX_BACK and DIAG_MASK_INF/ZERO (below).
//
// Special rows: a row whose values are all -inf (fully masked) yields zeros rather than 0/0; a row
// holding a NaN, or +inf (inf - inf), yields NaN everywhere, as the exact formula does.
//
// Accuracy: the row maximum is subtracted before exp (Highway's Exp, about 1 ulp) and the sum of
// the exponentials is accumulated in double. The SIMD part is chosen at run time per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/softmax.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/contrib/math/math-inl.h>

#include <cmath>
#include <cstdint>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace ggx::cpu::softmax_simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// y[i] = x[i] * scale + slope * mask[i] (mask may be null); y may be x.
void ScaleAdd(const float * x, const float * mask, float * y, int64_t n, float scale, float slope) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    const auto vscale = hn::Set(d, scale), vslope = hn::Set(d, slope);
    int64_t i = 0;
    if (mask != nullptr) {
        for (; i + lanes <= n; i += lanes)
            hn::StoreU(hn::MulAdd(hn::LoadU(d, mask + i), vslope, hn::Mul(hn::LoadU(d, x + i), vscale)), d,
                       y + i);
        for (; i < n; ++i)
            y[i] = x[i] * scale + slope * mask[i];
    } else {
        for (; i + lanes <= n; i += lanes)
            hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vscale), d, y + i);
        for (; i < n; ++i)
            y[i] = x[i] * scale;
    }
}

// The maximum of x[0..n) (n >= 1), or NaN when any element is NaN.
float MaxOrNaN(const float * x, int64_t n) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    auto vmax = hn::Set(d, -std::numeric_limits<float>::infinity());
    auto nan = hn::Lt(vmax, vmax);  // all false
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const auto v = hn::LoadU(d, x + i);
        vmax = hn::Max(vmax, v);
        nan = hn::Or(nan, hn::IsNaN(v));
    }
    if (!hn::AllFalse(d, nan)) return std::numeric_limits<float>::quiet_NaN();
    float m = hn::GetLane(hn::MaxOfLanes(d, vmax));
    for (; i < n; ++i) {
        if (std::isnan(x[i])) return x[i];
        m = x[i] > m ? x[i] : m;
    }
    return m;
}

// y[i] = exp(y[i] - max); returns the sum of the new y, accumulated in double.
double ExpSum(float * y, int64_t n, float max) {
    const hn::ScalableTag<float> d;
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d)), half = static_cast<int64_t>(hn::Lanes(dd));
    const auto vmax = hn::Set(d, max);
    auto acc = hn::Zero(dd);
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        hn::StoreU(hn::Exp(d, hn::Sub(hn::LoadU(d, y + i), vmax)), d, y + i);
        for (int64_t j = i; j < i + lanes; j += half)
            acc = hn::Add(acc, hn::PromoteTo(dd, hn::LoadU(dh, y + j)));
    }
    double total = hn::GetLane(hn::SumOfLanes(dd, acc));
    for (; i < n; ++i) {
        y[i] = std::exp(y[i] - max);
        total += y[i];
    }
    return total;
}

void Scale(float * y, int64_t n, float s) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    const auto vs = hn::Set(d, s);
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(hn::Mul(hn::LoadU(d, y + i), vs), d, y + i);
    for (; i < n; ++i)
        y[i] *= s;
}

// dx[i] = scale * y[i] * (dy[i] - sum_j y[j] * dy[j]), the sum accumulated in double; dx may be dy.
void BackRow(const float * y, const float * dy, float * dx, int64_t n, float scale) {
    const hn::ScalableTag<float> d;
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d)), half = static_cast<int64_t>(hn::Lanes(dd));
    auto acc = hn::Zero(dd);
    int64_t i = 0;
    for (; i + half <= n; i += half)
        acc = hn::MulAdd(hn::PromoteTo(dd, hn::LoadU(dh, y + i)), hn::PromoteTo(dd, hn::LoadU(dh, dy + i)),
                         acc);
    double dot = hn::GetLane(hn::SumOfLanes(dd, acc));
    for (; i < n; ++i)
        dot += static_cast<double>(y[i]) * dy[i];
    // dy[i] - dot cancels when y is nearly one-hot: subtract dot as two floats, hi + lo, so that the
    // difference keeps dot's double precision (dy[i] - hi is exact when they are close).
    const float hi = static_cast<float>(dot), lo = static_cast<float>(dot - hi);
    const auto vhi = hn::Set(d, hi), vlo = hn::Set(d, lo), vscale = hn::Set(d, scale);
    for (i = 0; i + lanes <= n; i += lanes) {
        const auto g = hn::Sub(hn::Sub(hn::LoadU(d, dy + i), vhi), vlo);
        hn::StoreU(hn::Mul(hn::Mul(g, hn::LoadU(d, y + i)), vscale), d, dx + i);
    }
    for (; i < n; ++i)
        dx[i] = ((dy[i] - hi) - lo) * y[i] * scale;
}

}  // namespace HWY_NAMESPACE
}  // namespace ggx::cpu::softmax_simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/internal.h"
#include "cpu/kernels/common.h"

namespace ggx::cpu {

namespace softmax_simd {
HWY_EXPORT(ScaleAdd);
HWY_EXPORT(MaxOrNaN);
HWY_EXPORT(ExpSum);
HWY_EXPORT(Scale);
HWY_EXPORT(BackRow);

void scale_add(const float * x, const float * mask, float * y, int64_t n, float scale, float slope) {
    HWY_DYNAMIC_DISPATCH(ScaleAdd)(x, mask, y, n, scale, slope);
}
float max_or_nan(const float * x, int64_t n) { return HWY_DYNAMIC_DISPATCH(MaxOrNaN)(x, n); }
double exp_sum(float * y, int64_t n, float max) { return HWY_DYNAMIC_DISPATCH(ExpSum)(y, n, max); }
void scale(float * y, int64_t n, float s) { HWY_DYNAMIC_DISPATCH(Scale)(y, n, s); }
void back_row(const float * y, const float * dy, float * dx, int64_t n, float scale) {
    HWY_DYNAMIC_DISPATCH(BackRow)(y, dy, dx, n, scale);
}
}  // namespace softmax_simd

namespace {

constexpr size_t kAlign = 64;
constexpr float kInf = std::numeric_limits<float>::infinity();

bool dense_f32(const ggml_tensor * t) { return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float); }

// Per thread: a row buffer for the input/result and one for the mask, ne0 floats each.
size_t row_bytes(const ggml_tensor * node) { return core::align_up(node->ne[0] * sizeof(float), kAlign); }
size_t workspace(const ggml_tensor * node, int n_threads) { return 2 * row_bytes(node) * n_threads; }

// Row (i1, i2, i3) of t (F32/F16, any stride) as dense floats: in place, or converted into buf.
const float * read_row(const ggml_tensor * t, int64_t i1, int64_t i2, int64_t i3, float * buf) {
    const char * p = row_at(t, i1, i2, i3);
    if (dense_f32(t)) return reinterpret_cast<const float *>(p);
    load_row(t->type, p, t->nb[0], t->ne[0], buf);
    return buf;
}

// ALiBi slope of head h of n_heads (1 when max_bias == 0), in double, then rounded once.
float alibi_slope(float max_bias, int64_t h, int64_t n_heads) {
    if (max_bias <= 0.0f) return 1.0f;
    int64_t n = 1;
    while (n * 2 <= n_heads)
        n *= 2;  // 2^floor(log2 n_heads)
    const double m0 = std::exp2(-static_cast<double>(max_bias) / static_cast<double>(n));
    const double m1 = std::exp2(-static_cast<double>(max_bias) / static_cast<double>(2 * n));
    return static_cast<float>(h < n ? std::pow(m0, static_cast<double>(h + 1))
                                    : std::pow(m1, static_cast<double>(2 * (h - n) + 1)));
}

// Softmax of the n values of y in place, with sink an extra logit in the sum (-inf: none); see the
// file comment for special rows.
void softmax_row(float * y, int64_t n, float sink) {
    const float row_max = softmax_simd::max_or_nan(y, n);
    const float max = std::isnan(sink) ? sink : std::max(row_max, sink);
    if (std::isnan(max) || max == std::numeric_limits<float>::infinity()) {
        std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
    } else if (max == -std::numeric_limits<float>::infinity()) {
        std::fill(y, y + n, 0.0f);  // fully masked row
    } else {
        // >= 1: the maximum contributes exp(0)
        const double sum = softmax_simd::exp_sum(y, n, max) + std::exp(static_cast<double>(sink) - max);
        softmax_simd::scale(y, n, static_cast<float>(1.0 / sum));
    }
}

bool supports(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * mask = node->src[1];
    const ggml_tensor * sinks = node->src[2];
    if (a == nullptr || a->type != GGML_TYPE_F32 || node->type != GGML_TYPE_F32 ||
        !ggml_are_same_shape(a, node))
        return false;
    if (sinks != nullptr &&
        (sinks->type != GGML_TYPE_F32 || !ggml_is_vector(sinks) || sinks->ne[0] != a->ne[2]))
        return false;
    if (mask == nullptr) return true;
    return (mask->type == GGML_TYPE_F32 || mask->type == GGML_TYPE_F16) && mask->ne[0] == a->ne[0] &&
           mask->ne[1] >= a->ne[1] && mask->ne[2] > 0 && mask->ne[3] > 0 && a->ne[2] % mask->ne[2] == 0 &&
           a->ne[3] % mask->ne[3] == 0;
}

void compute(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * mask = node->src[1];
    const auto [scale, max_bias] = core::params<ggml_ext_soft_max_params>(node);
    const int64_t n = node->ne[0];
    if (n == 0) return;
    float * buf =
        reinterpret_cast<float *>(static_cast<char *>(params.workspace) + 2 * row_bytes(node) * params.ith());
    float * mask_buf = buf + row_bytes(node) / sizeof(float);
    const ggml_tensor * sinks = node->src[2];
    int64_t slope_head = -1;
    float slope = 1.0f, sink = -kInf;
    const auto [begin, end] = chunk_range(ggml_nrows(node), params.ith(), params.nth());
    for (int64_t r = begin; r < end && !params.should_stop(); ++r) {
        const int64_t i1 = r % node->ne[1], i2 = r / node->ne[1] % node->ne[2],
                      i3 = r / (node->ne[1] * node->ne[2]);
        if (i2 != slope_head) {
            slope = alibi_slope(max_bias, slope_head = i2, node->ne[2]);
            sink = sinks ? load_float(GGML_TYPE_F32, element_at(sinks, i2, 0)) : -kInf;
        }
        const float * x = read_row(a, i1, i2, i3, buf);
        const float * m = mask ? read_row(mask, i1, i2 % mask->ne[2], i3 % mask->ne[3], mask_buf) : nullptr;
        char * out = row_at(node, i1, i2, i3);
        float * y = dense_f32(node) ? reinterpret_cast<float *>(out) : buf;
        softmax_simd::scale_add(x, m, y, n, scale, slope);
        softmax_row(y, n, sink);
        if (y == buf) store_row(GGML_TYPE_F32, buf, out, node->nb[0], n);
    }
}

// SOFT_MAX_BACK(dy, y): dx = scale * y * (dy - dot(y, dy)) per row. max_bias only scales the
// forward op's mask, which its gradient with respect to the input does not involve.
bool supports_back(const ggml_tensor * node) {
    const ggml_tensor * dy = node->src[0];
    const ggml_tensor * y = node->src[1];
    return dy != nullptr && y != nullptr && dy->type == GGML_TYPE_F32 && y->type == GGML_TYPE_F32 &&
           node->type == GGML_TYPE_F32 && ggml_are_same_shape(dy, node) && ggml_are_same_shape(y, node);
}

void compute_back(const ComputeParams & params, ggml_tensor * node) {
    const float scale = core::params<ggml_ext_soft_max_params>(node).scale;
    const int64_t n = node->ne[0];
    if (n == 0) return;
    float * buf =
        reinterpret_cast<float *>(static_cast<char *>(params.workspace) + 2 * row_bytes(node) * params.ith());
    float * y_buf = buf + row_bytes(node) / sizeof(float);
    const auto [begin, end] = chunk_range(ggml_nrows(node), params.ith(), params.nth());
    for (int64_t r = begin; r < end && !params.should_stop(); ++r) {
        const int64_t i1 = r % node->ne[1], i2 = r / node->ne[1] % node->ne[2],
                      i3 = r / (node->ne[1] * node->ne[2]);
        const float * dy = read_row(node->src[0], i1, i2, i3, buf);
        const float * y = read_row(node->src[1], i1, i2, i3, y_buf);
        char * out = row_at(node, i1, i2, i3);
        // dy's row is read in full before dx is written, so dx may overwrite dy (the in-place form).
        float * dx = dense_f32(node) ? reinterpret_cast<float *>(out) : buf;
        softmax_simd::back_row(y, dy, dx, n, scale);
        if (dx == buf) store_row(GGML_TYPE_F32, buf, out, node->nb[0], n);
    }
}

// DIAG_MASK_INF, DIAG_MASK_ZERO: elements i0 > n_past + i1 of each row become -inf / 0, the others
// are copied (float types, any strides; in place when the result is a's view).
bool supports_diag_mask(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a != nullptr && is_float(a->type) && node->type == a->type && ggml_are_same_shape(a, node);
}

size_t workspace_diag_mask(const ggml_tensor * node, int n_threads) { return row_bytes(node) * n_threads; }

void compute_diag_mask(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const int64_t n_past = core::params<ggml_ext_diag_mask_params>(node).n_past;
    const float masked = node->op == GGML_OP_DIAG_MASK_INF ? -kInf : 0.0f;
    const int64_t n = node->ne[0];
    if (n == 0) return;
    float * buf =
        reinterpret_cast<float *>(static_cast<char *>(params.workspace) + row_bytes(node) * params.ith());
    const auto [begin, end] = chunk_range(ggml_nrows(node), params.ith(), params.nth());
    for (int64_t r = begin; r < end && !params.should_stop(); ++r) {
        const int64_t i1 = r % node->ne[1], i2 = r / node->ne[1] % node->ne[2],
                      i3 = r / (node->ne[1] * node->ne[2]);
        load_row(a->type, row_at(a, i1, i2, i3), a->nb[0], n, buf);
        const int64_t keep = std::clamp<int64_t>(n_past + i1 + 1, 0, n);
        std::fill(buf + keep, buf + n, masked);
        store_row(node->type, buf, row_at(node, i1, i2, i3), node->nb[0], n);
    }
}

}  // namespace

namespace kernels {
const Kernel soft_max = cpu_kernel<supports, workspace, compute>("cpu.soft_max");
const Kernel soft_max_back = cpu_kernel<supports_back, workspace, compute_back>("cpu.soft_max_back");
const Kernel diag_mask =
    cpu_kernel<supports_diag_mask, workspace_diag_mask, compute_diag_mask>("cpu.diag_mask");
}  // namespace kernels

}  // namespace ggx::cpu

#endif  // HWY_ONCE
