// Element-wise kernels: ADD/SUB/MUL/DIV (b tiled over a), SCALE, SQR, SQRT, CLAMP, UNARY and GLU.
//
// Every kernel works on chunks of at most kChunk elements of one row. A chunk of a dense F32 row is
// used in place; any other chunk (F16/BF16, or strided) is converted into an F32 buffer first and
// converted back after. The F32 arithmetic itself runs on Highway vectors, compiled for every
// target Highway supports and chosen at run time (foreach_target + HWY_DYNAMIC_DISPATCH).
//
// In-place results (dst a view of src0 with src0's strides) are safe: each chunk is read completely
// before the same positions are written.

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/elementwise.cpp"
#include <hwy/foreach_target.h>
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include <ggml.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>

#include "core/internal.h"
#include "cpu/kernels/common.h"
#include "cpu/kernels/elementwise_simd.h"

HWY_BEFORE_NAMESPACE();
namespace ggx::cpu::elementwise_simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// y[i] = f(x[i]) for i < n; x and y may be the same array. The tail goes through a padded copy.
template <class F>
HWY_INLINE void transform1(const float * x, float * y, int64_t n, F f) {
    const D d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(f(hn::LoadU(d, x + i)), d, y + i);
    if (i == n) return;
    HWY_ALIGN float tx[HWY_MAX_BYTES / sizeof(float)] = {};
    std::copy(x + i, x + n, tx);
    hn::Store(f(hn::Load(d, tx)), d, tx);
    std::copy(tx, tx + (n - i), y + i);
}

// y[i] = f(a[i], b[i]) for i < n; y may be a or b.
template <class F>
HWY_INLINE void transform2(const float * a, const float * b, float * y, int64_t n, F f) {
    const D d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(f(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, y + i);
    if (i == n) return;
    HWY_ALIGN float ta[HWY_MAX_BYTES / sizeof(float)] = {};
    HWY_ALIGN float tb[HWY_MAX_BYTES / sizeof(float)] = {};
    std::copy(a + i, a + n, ta);
    std::copy(b + i, b + n, tb);
    hn::Store(f(hn::Load(d, ta), hn::Load(d, tb)), d, ta);
    std::copy(ta, ta + (n - i), y + i);
}

// e^x and e^x - 1; the argument is clamped to where the polynomials are valid (the results saturate
// to 0 / -1 / inf).
HWY_INLINE V exp_clamped(V x) {
    const D d;
    return hn::Exp(d, hn::Min(hn::Max(x, hn::Set(d, -105.0f)), hn::Set(d, 89.0f)));
}
HWY_INLINE V expm1_clamped(V x) {
    const D d;
    return hn::Expm1(d, hn::Min(hn::Max(x, hn::Set(d, -105.0f)), hn::Set(d, 89.0f)));
}

// NaN inputs give NaN (the polynomial approximations would not propagate them).
HWY_INLINE V keep_nan(V x, V y) { return hn::IfThenElse(hn::IsNaN(x), x, y); }

// f(x) on the lanes where lo <= x <= hi, scalar(x) (the C library) on the others: the lanes outside
// a polynomial's valid range, infinities and NaN.
template <class F, class S>
HWY_INLINE V in_range_or(V x, float lo, float hi, F f, S scalar) {
    const D d;
    const auto outside = hn::Not(hn::And(hn::Ge(x, hn::Set(d, lo)), hn::Le(x, hn::Set(d, hi))));
    const V y = f(x);
    if (hn::AllFalse(d, outside)) return y;
    HWY_ALIGN float tx[HWY_MAX_BYTES / sizeof(float)];
    HWY_ALIGN float ty[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(x, d, tx);
    hn::Store(y, d, ty);
    for (size_t i = 0; i < hn::Lanes(d); ++i)
        if (!(tx[i] >= lo && tx[i] <= hi)) ty[i] = scalar(tx[i]);
    return hn::Load(d, ty);
}

// x / (1 + e^(-k x)): silu for k = 1, gelu_quick for k = 1.702, SWIGLU_OAI's gate for k = alpha.
HWY_INLINE V x_sigmoid(V x, float k) {
    const D d;
    const V one = hn::Set(d, 1.0f);
    return keep_nan(x, hn::Div(x, hn::Add(one, exp_clamped(hn::Mul(hn::Set(d, -k), x)))));
}

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
HWY_INLINE V gelu(V x) {
    const D d;
    const V c = hn::Set(d, 0.7978845608028654f), k = hn::Set(d, 0.044715f);
    const V inner = hn::Mul(c, hn::MulAdd(hn::Mul(k, x), hn::Mul(x, x), x));
    const V t = hn::Tanh(d, inner);
    return keep_nan(x, hn::Mul(hn::Mul(hn::Set(d, 0.5f), x), hn::Add(hn::Set(d, 1.0f), t)));
}

// erfc(z) = t e^(-z^2 + P(t)) with t = 1 / (1 + |z| / 2) for z >= 0, and 2 - erfc(-z) below: the
// Chebyshev fit of Press et al., Numerical Recipes 6.2, relative error below 1.2e-7 everywhere (so
// gelu_erf stays accurate in its flat tail, where 1 + erf(x) would cancel).
HWY_INLINE V erfc(V z) {
    constexpr float kP[] = {-1.26551223f, 1.00002368f,  0.37409196f, 0.09678418f,  -0.18628806f,
                            0.27886807f,  -1.13520398f, 1.48851587f, -0.82215223f, 0.17087277f};
    const D d;
    const V a = hn::Abs(z), one = hn::Set(d, 1.0f);
    const V t = hn::Div(one, hn::MulAdd(hn::Set(d, 0.5f), a, one));
    V p = hn::Set(d, kP[std::size(kP) - 1]);
    for (size_t i = std::size(kP) - 1; i-- > 0;)
        p = hn::MulAdd(p, t, hn::Set(d, kP[i]));
    const V e = hn::Mul(t, exp_clamped(hn::NegMulAdd(a, a, p)));
    return hn::IfThenElse(hn::Lt(z, hn::Zero(d)), hn::Sub(hn::Set(d, 2.0f), e), e);
}

// 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2).
HWY_INLINE V gelu_erf(V x) {
    const D d;
    const V z = hn::Mul(x, hn::Set(d, -0.7071067811865476f));
    return keep_nan(x, hn::Mul(hn::Mul(hn::Set(d, 0.5f), x), erfc(z)));
}

// min(1, max(0, (x + 3) / 6)), NaN giving 0 as fminf/fmaxf do.
HWY_INLINE V hardsigmoid(V x) {
    const D d;
    const V t = hn::Div(hn::Add(x, hn::Set(d, 3.0f)), hn::Set(d, 6.0f)), one = hn::Set(d, 1.0f);
    const V lo = hn::IfThenElseZero(hn::Gt(t, hn::Zero(d)), t);
    return hn::IfThenElse(hn::Lt(lo, one), lo, one);
}

// Rounds half away from zero (roundf), not to even: x - trunc(x) is exact.
HWY_INLINE V round_half_away(V x) {
    const D d;
    const V r = hn::Trunc(x);
    const auto up = hn::Ge(hn::Abs(hn::Sub(x, r)), hn::Set(d, 0.5f));
    return hn::IfThenElse(up, hn::Add(r, hn::CopySign(hn::Set(d, 1.0f), x)), r);
}

// x > 0 ? alpha_p x^2 + beta x : (expm1(min(x, eps)) - x) alpha_n + beta x.
HWY_INLINE V xielu(V x, V alpha_n, V alpha_p, V beta, V eps) {
    const D d;
    const V bx = hn::Mul(beta, x);
    const V positive = hn::MulAdd(hn::Mul(alpha_p, x), x, bx);
    const V negative = hn::MulAdd(hn::Sub(expm1_clamped(hn::Min(x, eps)), x), alpha_n, bx);
    return keep_nan(x, hn::IfThenElse(hn::Gt(x, hn::Zero(d)), positive, negative));
}

void map_row(const Map & m, const float * x, float * y, int64_t n) {
    const D d;
    const V p0 = hn::Set(d, m.p0), p1 = hn::Set(d, m.p1), p2 = hn::Set(d, m.p2), p3 = hn::Set(d, m.p3);
    const V zero = hn::Zero(d), one = hn::Set(d, 1.0f);
    switch (m.op) {
        case MapOp::scale:
            return transform1(x, y, n, [&](V v) { return hn::MulAdd(v, p0, p1); });
        case MapOp::sqr:
            return transform1(x, y, n, [](V v) { return hn::Mul(v, v); });
        case MapOp::sqrt:
            return transform1(x, y, n, [](V v) { return hn::Sqrt(v); });
        case MapOp::clamp:
            // min(max(x, lo), hi) with NaN kept, as std::min(std::max(x, lo), hi) does.
            return transform1(x, y, n, [&](V v) {
                const V lo = hn::IfThenElse(hn::Lt(v, p0), p0, v);
                return hn::IfThenElse(hn::Lt(p1, lo), p1, lo);
            });
        case MapOp::log:
            return transform1(x, y, n, [&](V v) {
                return in_range_or(
                    v, FLT_MIN, FLT_MAX, [&](V u) { return hn::Log(d, u); },
                    [](float u) { return std::log(u); });
            });
        case MapOp::sin:
            return transform1(x, y, n, [&](V v) {
                return in_range_or(
                    v, -39000.0f, 39000.0f, [&](V u) { return hn::Sin(d, u); },
                    [](float u) { return std::sin(u); });
            });
        case MapOp::cos:
            return transform1(x, y, n, [&](V v) {
                return in_range_or(
                    v, -39000.0f, 39000.0f, [&](V u) { return hn::Cos(d, u); },
                    [](float u) { return std::cos(u); });
            });
        case MapOp::leaky_relu:
            return transform1(x, y, n,
                              [&](V v) { return hn::IfThenElse(hn::Gt(v, zero), v, hn::Mul(p0, v)); });
        case MapOp::fill:
            return transform1(x, y, n, [&](V) { return p0; });
        case MapOp::abs:
            return transform1(x, y, n, [](V v) { return hn::Abs(v); });
        case MapOp::sgn:
            return transform1(x, y, n, [&](V v) {
                return hn::IfThenElse(hn::Gt(v, zero), one,
                                      hn::IfThenElse(hn::Lt(v, zero), hn::Neg(one), zero));
            });
        case MapOp::neg:
            return transform1(x, y, n, [](V v) { return hn::Neg(v); });
        case MapOp::step:
            return transform1(x, y, n, [&](V v) { return hn::IfThenElseZero(hn::Gt(v, zero), one); });
        case MapOp::tanh:
            return transform1(x, y, n, [&](V v) { return keep_nan(v, hn::Tanh(d, v)); });
        case MapOp::elu:
            return transform1(x, y, n, [&](V v) {
                return keep_nan(v, hn::IfThenElse(hn::Gt(v, zero), v, expm1_clamped(v)));
            });
        case MapOp::relu:
            return transform1(x, y, n, [&](V v) { return hn::IfThenElseZero(hn::Gt(v, zero), v); });
        case MapOp::sigmoid:
            return transform1(x, y, n, [&](V v) {
                return keep_nan(v, hn::Div(one, hn::Add(one, exp_clamped(hn::Neg(v)))));
            });
        case MapOp::gelu:
            return transform1(x, y, n, [](V v) { return gelu(v); });
        case MapOp::gelu_quick:
            return transform1(x, y, n, [](V v) { return x_sigmoid(v, 1.702f); });
        case MapOp::silu:
            return transform1(x, y, n, [](V v) { return x_sigmoid(v, 1.0f); });
        case MapOp::hardswish:
            return transform1(x, y, n, [](V v) { return hn::Mul(v, hardsigmoid(v)); });
        case MapOp::hardsigmoid:
            return transform1(x, y, n, [](V v) { return hardsigmoid(v); });
        case MapOp::exp:
            return transform1(x, y, n, [](V v) { return keep_nan(v, exp_clamped(v)); });
        case MapOp::expm1:
            return transform1(x, y, n, [](V v) { return keep_nan(v, expm1_clamped(v)); });
        case MapOp::softplus:
            // x > 20 ? x : log(1 + e^x), as ggml defines it.
            return transform1(x, y, n, [&](V v) {
                const V soft = hn::Log1p(d, exp_clamped(hn::Min(v, hn::Set(d, 20.0f))));
                return keep_nan(v, hn::IfThenElse(hn::Gt(v, hn::Set(d, 20.0f)), v, soft));
            });
        case MapOp::gelu_erf:
            return transform1(x, y, n, [](V v) { return gelu_erf(v); });
        case MapOp::xielu:
            return transform1(x, y, n, [&](V v) { return xielu(v, p0, p1, p2, p3); });
        case MapOp::floor:
            return transform1(x, y, n, [](V v) { return hn::Floor(v); });
        case MapOp::ceil:
            return transform1(x, y, n, [](V v) { return hn::Ceil(v); });
        case MapOp::round:
            return transform1(x, y, n, [](V v) { return round_half_away(v); });
        case MapOp::trunc:
            return transform1(x, y, n, [](V v) { return hn::Trunc(v); });
    }
}

// dy silu'(x) = dy s (1 + x (1 - s)), s = sigmoid(x).
HWY_INLINE V silu_back(V dy, V x) {
    const D d;
    const V one = hn::Set(d, 1.0f);
    const V s = hn::Div(one, hn::Add(one, exp_clamped(hn::Neg(x))));
    return keep_nan(x, hn::Mul(hn::Mul(dy, s), hn::MulAdd(x, hn::Sub(one, s), one)));
}

void binary_row(BinaryOp op, const float * a, const float * b, float * y, int64_t n) {
    switch (op) {
        case BinaryOp::add:
            return transform2(a, b, y, n, [](V u, V v) { return hn::Add(u, v); });
        case BinaryOp::sub:
            return transform2(a, b, y, n, [](V u, V v) { return hn::Sub(u, v); });
        case BinaryOp::mul:
            return transform2(a, b, y, n, [](V u, V v) { return hn::Mul(u, v); });
        case BinaryOp::div:
            return transform2(a, b, y, n, [](V u, V v) { return hn::Div(u, v); });
        case BinaryOp::silu_back:
            return transform2(a, b, y, n, [](V u, V v) { return silu_back(u, v); });
    }
}

// y = act(x) * g; SWIGLU_OAI: x_sigmoid(min(x, limit), alpha) * (clamp(g, -limit, limit) + 1).
void glu_row(const Glu & glu, const float * x, const float * g, float * y, int64_t n) {
    const D d;
    const V zero = hn::Zero(d), one = hn::Set(d, 1.0f), limit = hn::Set(d, glu.limit);
    switch (glu.op) {
        case GluOp::reglu:
            return transform2(x, g, y, n,
                              [&](V u, V v) { return hn::Mul(hn::IfThenElseZero(hn::Gt(u, zero), u), v); });
        case GluOp::geglu:
            return transform2(x, g, y, n, [](V u, V v) { return hn::Mul(gelu(u), v); });
        case GluOp::swiglu:
            return transform2(x, g, y, n, [](V u, V v) { return hn::Mul(x_sigmoid(u, 1.0f), v); });
        case GluOp::swiglu_oai:
            return transform2(x, g, y, n, [&](V u, V v) {
                const V xc = keep_nan(u, hn::Min(u, limit));
                const V gc = hn::Min(hn::Max(v, hn::Neg(limit)), limit);
                return hn::Mul(x_sigmoid(xc, glu.alpha), hn::Add(gc, one));
            });
        case GluOp::geglu_erf:
            return transform2(x, g, y, n, [](V u, V v) { return hn::Mul(gelu_erf(u), v); });
        case GluOp::geglu_quick:
            return transform2(x, g, y, n, [](V u, V v) { return hn::Mul(x_sigmoid(u, 1.702f), v); });
    }
}
}  // namespace ggx::cpu::elementwise_simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ggx::cpu::elementwise_simd {
HWY_EXPORT(map_row);
HWY_EXPORT(binary_row);
HWY_EXPORT(glu_row);

void map(const Map & m, const float * x, float * y, int64_t n) { HWY_DYNAMIC_DISPATCH(map_row)(m, x, y, n); }
void binary(BinaryOp op, const float * a, const float * b, float * y, int64_t n) {
    HWY_DYNAMIC_DISPATCH(binary_row)(op, a, b, y, n);
}
}  // namespace ggx::cpu::elementwise_simd

namespace ggx::cpu::kernels {
namespace {

using elementwise_simd::BinaryOp;
using elementwise_simd::Glu;
using elementwise_simd::GluOp;
using elementwise_simd::Map;
using elementwise_simd::MapOp;

constexpr int64_t kChunk = 1024;

// Calls f(i1, i2, i3, j0, n) for this thread's share of t's elements, in chunks [j0, j0 + n) of at
// most kChunk elements of one row; stops early when the graph is stopping.
template <class F>
void for_each_chunk(const ComputeParams & params, const ggml_tensor * t, F && f) {
    const int64_t per_row = (t->ne[0] + kChunk - 1) / kChunk;
    const auto [begin, end] = chunk_range(ggml_nrows(t) * per_row, params.ith(), params.nth());
    if (begin >= end) return;
    // Row and chunk indices advance with counters: no divisions per chunk (rows can be tiny).
    const int64_t r0 = begin / per_row;
    int64_t j = begin % per_row, i1 = r0 % t->ne[1], i2 = r0 / t->ne[1] % t->ne[2],
            i3 = r0 / (t->ne[1] * t->ne[2]);
    for (int64_t c = begin; c < end; ++c) {
        if ((c - begin) % 64 == 0 && params.should_stop()) return;
        f(i1, i2, i3, j * kChunk, std::min(kChunk, t->ne[0] - j * kChunk));
        if (++j < per_row) continue;
        j = 0;
        if (++i1 < t->ne[1]) continue;
        i1 = 0;
        if (++i2 < t->ne[2]) continue;
        i2 = 0;
        ++i3;
    }
}

bool dense_f32(const ggml_tensor * t) { return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float); }

// Elements [j, j + n) of a row of t as F32: the row itself when it is dense F32, else converted into buf.
const float * read_f32(const ggml_tensor * t, const char * row, int64_t j, int64_t n, float * buf) {
    const char * p = row + j * t->nb[0];
    if (dense_f32(t)) return reinterpret_cast<const float *>(p);
    load_row(t->type, p, t->nb[0], n, buf);
    return buf;
}

// Elements [j, j + n) of the row of b tiled without end (element j is b[j mod b.ne0]), as F32.
const float * read_tiled(const ggml_tensor * b, const char * row, int64_t j, int64_t n, float * buf) {
    const int64_t period = b->ne[0], start = j % period;
    if (start + n <= period) return read_f32(b, row, start, n, buf);
    if (period == 1) {
        std::fill_n(buf, n, load_float(b->type, row));
        return buf;
    }
    for (int64_t off = 0, k = start; off < n; k = 0) {
        const int64_t len = std::min(n - off, period - k);
        load_row(b->type, row + k * b->nb[0], b->nb[0], len, buf + off);
        off += len;
    }
    return buf;
}

// Where to compute elements [j, j + n) of a row of dst: in place when dense F32, else in buf; then
// commit() stores buf back.
struct Output {
    const ggml_tensor * t;
    char * p;
    float * buf;
    float * out;

    Output(const ggml_tensor * dst, char * row, int64_t j, float * buffer)
        : t(dst),
          p(row + j * dst->nb[0]),
          buf(buffer),
          out(dense_f32(dst) ? reinterpret_cast<float *>(p) : buffer) {}
    void commit(int64_t n) const {
        if (out == buf) store_row(t->type, buf, p, t->nb[0], n);
    }
};

bool same_type_and_shape(const ggml_tensor * a, const ggml_tensor * b) {
    return a && b && a->type == b->type && ggml_are_same_shape(a, b);
}

// ---- maps of src0: SCALE, SQR, SQRT, CLAMP, UNARY ---------------------------------------------------

bool supports_map(const ggml_tensor * node) {
    return is_float(node->type) && same_type_and_shape(node, node->src[0]);
}

void compute_map(const ComputeParams & params, ggml_tensor * node, const Map & m) {
    const ggml_tensor * a = node->src[0];
    for_each_chunk(params, node, [&](int64_t i1, int64_t i2, int64_t i3, int64_t j0, int64_t n) {
        float in[kChunk], res[kChunk];
        const Output y(node, row_at(node, i1, i2, i3), j0, res);
        HWY_DYNAMIC_DISPATCH(elementwise_simd::map_row)
        (m, read_f32(a, row_at(a, i1, i2, i3), j0, n, in), y.out, n);
        y.commit(n);
    });
}

void compute_scale(const ComputeParams & params, ggml_tensor * node) {
    const auto scale = core::params<ggml_ext_scale_params>(node);
    compute_map(params, node, {MapOp::scale, scale.scale, scale.bias});
}
void compute_sqr(const ComputeParams & params, ggml_tensor * node) {
    compute_map(params, node, {MapOp::sqr});
}
void compute_sqrt(const ComputeParams & params, ggml_tensor * node) {
    compute_map(params, node, {MapOp::sqrt});
}
void compute_clamp(const ComputeParams & params, ggml_tensor * node) {
    const auto clamp = core::params<ggml_ext_clamp_params>(node);
    compute_map(params, node, {MapOp::clamp, clamp.min, clamp.max});
}

void compute_log(const ComputeParams & params, ggml_tensor * node) {
    compute_map(params, node, {MapOp::log});
}
void compute_sin(const ComputeParams & params, ggml_tensor * node) {
    compute_map(params, node, {MapOp::sin});
}
void compute_cos(const ComputeParams & params, ggml_tensor * node) {
    compute_map(params, node, {MapOp::cos});
}
void compute_leaky_relu(const ComputeParams & params, ggml_tensor * node) {
    compute_map(params, node,
                {MapOp::leaky_relu, core::params<ggml_ext_leaky_relu_params>(node).negative_slope});
}
void compute_fill(const ComputeParams & params, ggml_tensor * node) {
    compute_map(params, node, {MapOp::fill, core::params<ggml_ext_fill_params>(node).c});
}

// The map of every ggml_unary_op and the operation of every ggml_glu_op, listed in enum order so
// that the static_asserts prove each value has one entry: a new sub-op fails to compile until it
// is listed.
template <class Op>
struct SubOp {
    int32_t op;
    Op map;
};
constexpr SubOp<MapOp> kUnaryMaps[] = {
    {GGML_UNARY_OP_ABS, MapOp::abs},
    {GGML_UNARY_OP_SGN, MapOp::sgn},
    {GGML_UNARY_OP_NEG, MapOp::neg},
    {GGML_UNARY_OP_STEP, MapOp::step},
    {GGML_UNARY_OP_TANH, MapOp::tanh},
    {GGML_UNARY_OP_ELU, MapOp::elu},
    {GGML_UNARY_OP_RELU, MapOp::relu},
    {GGML_UNARY_OP_SIGMOID, MapOp::sigmoid},
    {GGML_UNARY_OP_GELU, MapOp::gelu},
    {GGML_UNARY_OP_GELU_QUICK, MapOp::gelu_quick},
    {GGML_UNARY_OP_SILU, MapOp::silu},
    {GGML_UNARY_OP_HARDSWISH, MapOp::hardswish},
    {GGML_UNARY_OP_HARDSIGMOID, MapOp::hardsigmoid},
    {GGML_UNARY_OP_EXP, MapOp::exp},
    {GGML_UNARY_OP_EXPM1, MapOp::expm1},
    {GGML_UNARY_OP_SOFTPLUS, MapOp::softplus},
    {GGML_UNARY_OP_GELU_ERF, MapOp::gelu_erf},
    {GGML_UNARY_OP_XIELU, MapOp::xielu},
    {GGML_UNARY_OP_FLOOR, MapOp::floor},
    {GGML_UNARY_OP_CEIL, MapOp::ceil},
    {GGML_UNARY_OP_ROUND, MapOp::round},
    {GGML_UNARY_OP_TRUNC, MapOp::trunc},
};
static_assert(lists_every_value_in_order(kUnaryMaps, GGML_UNARY_OP_COUNT),
              "the CPU unary table must list every ggml_unary_op once, in order");
constexpr SubOp<GluOp> kGluOps[] = {
    {GGML_GLU_OP_REGLU, GluOp::reglu},         {GGML_GLU_OP_GEGLU, GluOp::geglu},
    {GGML_GLU_OP_SWIGLU, GluOp::swiglu},       {GGML_GLU_OP_SWIGLU_OAI, GluOp::swiglu_oai},
    {GGML_GLU_OP_GEGLU_ERF, GluOp::geglu_erf}, {GGML_GLU_OP_GEGLU_QUICK, GluOp::geglu_quick},
};
static_assert(lists_every_value_in_order(kGluOps, GGML_GLU_OP_COUNT),
              "the CPU GLU table must list every ggml_glu_op once, in order");

// The entry of sub-op value op in table; std::nullopt when op is out of range.
template <class Op, size_t N>
std::optional<Op> sub_op_of(const SubOp<Op> (&table)[N], int32_t op) {
    return op >= 0 && static_cast<size_t>(op) < N ? std::optional<Op>(table[op].map) : std::nullopt;
}

std::optional<MapOp> unary_map(const ggml_tensor * node) {
    return sub_op_of(kUnaryMaps, core::params<ggml_ext_unary_params>(node).op);
}

std::optional<GluOp> glu_op(const ggml_tensor * node) {
    return sub_op_of(kGluOps, core::params<ggml_ext_glu_params>(node).op);
}

bool supports_unary(const ggml_tensor * node) { return supports_map(node) && unary_map(node); }

// XIELU's coefficients are zero for the other sub-ops, which ignore them.
void compute_unary(const ComputeParams & params, ggml_tensor * node) {
    const auto unary = core::params<ggml_ext_unary_params>(node);
    compute_map(params, node, {*unary_map(node), unary.alpha_n, unary.alpha_p, unary.beta, unary.eps});
}

// ---- ADD, SUB, MUL, DIV -------------------------------------------------------------------------

bool supports_binary(const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    return supports_map(node) && b && (b->type == GGML_TYPE_F32 || b->type == a->type) &&
           ggml_can_repeat(b, node);
}

// dst and a dense contiguous F32, b contiguous F32 equal to dst in its leading dimensions and 1 in
// the rest: element p of the flattened dst pairs with element p mod nelements(b) of b.
bool flat_broadcast(const ggml_tensor * dst, const ggml_tensor * a, const ggml_tensor * b) {
    const auto dense = [](const ggml_tensor * t) {
        return t->type == GGML_TYPE_F32 && ggml_is_contiguous(t);
    };
    if (!dense(dst) || !dense(a) || !dense(b)) return false;
    int k = 0;
    while (k < GGML_MAX_DIMS && b->ne[k] == dst->ne[k])
        ++k;
    for (int i = k; i < GGML_MAX_DIMS; ++i)
        if (b->ne[i] != 1) return false;
    return true;
}

// The flat path: chunks of kChunk elements regardless of rows, so tiny rows cost no per-row work.
void compute_binary_flat(const ComputeParams & params, ggml_tensor * node, BinaryOp op) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const int64_t total = ggml_nelements(node), period = ggml_nelements(b);
    const auto * av = static_cast<const float *>(a->data);
    const auto * bv = static_cast<const float *>(b->data);
    auto * yv = static_cast<float *>(node->data);
    const auto [begin, end] = chunk_range((total + kChunk - 1) / kChunk, params.ith(), params.nth());
    for (int64_t c = begin; c < end && !params.should_stop(); ++c) {
        const int64_t p0 = c * kChunk, n = std::min(kChunk, total - p0), start = p0 % period;
        float tiled[kChunk];
        const float * bp = bv + start;
        if (start + n > period) {  // b wraps inside the chunk
            for (int64_t off = 0, k = start; off < n; k = 0) {
                const int64_t len = std::min(n - off, period - k);
                std::copy_n(bv + k, len, tiled + off);
                off += len;
            }
            bp = tiled;
        }
        HWY_DYNAMIC_DISPATCH(elementwise_simd::binary_row)(op, av + p0, bp, yv + p0, n);
    }
}

// SILU_BACK pairs dy and x of one shape and type.
bool supports_silu_back(const ggml_tensor * node) {
    return supports_map(node) && same_type_and_shape(node->src[0], node->src[1]);
}

BinaryOp binary_op_of(ggml_op op) {
    switch (op) {
        case GGML_OP_SUB:
            return BinaryOp::sub;
        case GGML_OP_MUL:
            return BinaryOp::mul;
        case GGML_OP_DIV:
            return BinaryOp::div;
        case GGML_OP_SILU_BACK:
            return BinaryOp::silu_back;
        default:  // ADD, and ADD1 (its one-element b tiles over a)
            return BinaryOp::add;
    }
}

void compute_binary(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const BinaryOp op = binary_op_of(node->op);
    if (flat_broadcast(node, a, b)) return compute_binary_flat(params, node, op);
    for_each_chunk(params, node, [&](int64_t i1, int64_t i2, int64_t i3, int64_t j0, int64_t n) {
        float in_a[kChunk], in_b[kChunk], res[kChunk];
        const Output y(node, row_at(node, i1, i2, i3), j0, res);
        const char * b_row = row_at(b, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
        HWY_DYNAMIC_DISPATCH(elementwise_simd::binary_row)
        (op, read_f32(a, row_at(a, i1, i2, i3), j0, n, in_a), read_tiled(b, b_row, j0, n, in_b), y.out, n);
        y.commit(n);
    });
}

// ---- GLU ------------------------------------------------------------------------------------------

bool supports_glu(const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!a || a->type != node->type || !is_float(a->type) || !glu_op(node)) return false;
    if (b) return same_type_and_shape(a, b) && ggml_are_same_shape(a, node);
    return a->ne[0] == 2 * node->ne[0] && a->ne[1] == node->ne[1] && a->ne[2] == node->ne[2] &&
           a->ne[3] == node->ne[3];
}

// Merged form: x and g are the two halves of each row of src0 (swapped: exchanged); split form:
// x from src0, g from src1.
void compute_glu(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const auto p = core::params<ggml_ext_glu_params>(node);
    const Glu glu{*glu_op(node), p.alpha, p.limit};
    const bool swapped = p.swapped != 0;
    const int64_t half = node->ne[0];
    for_each_chunk(params, node, [&](int64_t i1, int64_t i2, int64_t i3, int64_t j0, int64_t n) {
        float in_x[kChunk], in_g[kChunk], res[kChunk];
        const Output y(node, row_at(node, i1, i2, i3), j0, res);
        const char * a_row = row_at(a, i1, i2, i3);
        const float *x = nullptr, *g = nullptr;
        if (b) {
            x = read_f32(a, a_row, j0, n, in_x);
            g = read_f32(b, row_at(b, i1, i2, i3), j0, n, in_g);
        } else {
            x = read_f32(a, a_row, j0 + (swapped ? half : 0), n, in_x);
            g = read_f32(a, a_row, j0 + (swapped ? 0 : half), n, in_g);
        }
        HWY_DYNAMIC_DISPATCH(elementwise_simd::glu_row)(glu, x, g, y.out, n);
        y.commit(n);
    });
}

// ---- ADD_ID: dst[:, i1, i2] = a[:, i1, i2] + b[:, ids[i1, i2]] ----------------------------------------

bool supports_add_id(const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1], *ids = node->src[2];
    return supports_map(node) && b && ids && (b->type == GGML_TYPE_F32 || b->type == a->type) &&
           ids->type == GGML_TYPE_I32 && b->ne[0] == a->ne[0] && ids->ne[0] == a->ne[1] &&
           ids->ne[1] == a->ne[2];
}

void compute_add_id(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1], *ids = node->src[2];
    for_each_chunk(params, node, [&](int64_t i1, int64_t i2, int64_t i3, int64_t j0, int64_t n) {
        int32_t id;
        std::memcpy(&id, element_at(ids, i1, i2), sizeof id);
        if (id < 0 || id >= b->ne[1]) {
            params.fail("add_id: id " + std::to_string(id) + " out of range [0, " + std::to_string(b->ne[1]) +
                        ") at [" + std::to_string(i1) + ", " + std::to_string(i2) + "]");
            return;
        }
        float in_a[kChunk], in_b[kChunk], res[kChunk];
        const Output y(node, row_at(node, i1, i2, i3), j0, res);
        HWY_DYNAMIC_DISPATCH(elementwise_simd::binary_row)
        (BinaryOp::add, read_f32(a, row_at(a, i1, i2, i3), j0, n, in_a),
         read_f32(b, row_at(b, id), j0, n, in_b), y.out, n);
        y.commit(n);
    });
}

// ---- ACC and SET: dst is a (copied first unless in place), then b is added to (ACC) or written over
// (SET) the view of dst with b's shape, strides nb1..nb3 and byte offset. -------------------------------

bool supports_region(const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!a || !b || !ggml_are_same_shape(a, node) || a->type != node->type || b->type != a->type)
        return false;
    if (!ggml_is_contiguous(a) || !ggml_is_contiguous(node)) return false;
    if (node->op == GGML_OP_ACC) return a->type == GGML_TYPE_F32;
    return !ggml_is_quantized(a->type);
}

// The first element of row (i1, i2, i3) of the region of dst.
char * region_row(const ggml_tensor * dst, const ggml_ext_acc_params & p, int64_t i1, int64_t i2,
                  int64_t i3) {
    return static_cast<char *>(dst->data) + p.offset + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3;
}

void compute_region(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    if (node->data != a->data) {
        const auto [begin, end] =
            chunk_range(static_cast<int64_t>(ggml_nbytes(node)), params.ith(), params.nth());
        std::memcpy(static_cast<char *>(node->data) + begin, static_cast<const char *>(a->data) + begin,
                    static_cast<size_t>(end - begin));
        params.thread.barrier();
    }
    const auto p = core::params<ggml_ext_acc_params>(node);
    const size_t size = ggml_type_size(b->type);
    for_each_row(params, b, [&](int64_t i1, int64_t i2, int64_t i3) {
        char * out = region_row(node, p, i1, i2, i3);
        const char * in = row_at(b, i1, i2, i3);
        if (node->op == GGML_OP_SET) {
            for (int64_t i0 = 0; i0 < b->ne[0]; ++i0)
                std::memcpy(out + i0 * size, in + i0 * b->nb[0], size);
            return;
        }
        float buf[kChunk];
        for (int64_t j0 = 0; j0 < b->ne[0]; j0 += kChunk) {
            const int64_t n = std::min(kChunk, b->ne[0] - j0);
            float * y = reinterpret_cast<float *>(out) + j0;
            HWY_DYNAMIC_DISPATCH(elementwise_simd::binary_row)
            (BinaryOp::add, y, read_f32(b, in, j0, n, buf), y, n);
        }
    });
}

// ---- OPT_STEP_ADAMW and OPT_STEP_SGD: in-place updates of F32 a (and AdamW's moments m and v). ------

// Whether node is a view of all of a's storage, starting where a starts (an in-place result).
bool views(const ggml_tensor * node, const ggml_tensor * a) {
    const ggml_tensor * owner = a->view_src ? a->view_src : a;
    return node->view_src == owner && node->view_offs == (a->view_src ? a->view_offs : 0);
}

bool supports_opt_step(const ggml_tensor * node) {
    const bool adamw = node->op == GGML_OP_OPT_STEP_ADAMW;
    const int n_src = adamw ? 5 : 3;
    const ggml_tensor * hyper = node->src[n_src - 1];
    for (int i = 0; i + 1 < n_src; ++i) {
        const ggml_tensor * t = node->src[i];
        if (!t || t->type != GGML_TYPE_F32 || t->nb[0] % sizeof(float) != 0 || !ggml_are_same_shape(t, node))
            return false;
    }
    return node->type == GGML_TYPE_F32 && views(node, node->src[0]) && hyper &&
           hyper->type == GGML_TYPE_F32 && ggml_is_contiguous(hyper) &&
           ggml_nelements(hyper) == (adamw ? 7 : 2);
}

// One row of an F32 operand of any element stride (transposed and permuted views too).
struct F32Row {
    char * data;
    size_t stride;
    float & operator[](int64_t i) const { return *reinterpret_cast<float *>(data + i * stride); }
};

F32Row f32_row(const ggml_tensor * t, int64_t i1, int64_t i2, int64_t i3) {
    return {row_at(t, i1, i2, i3), t->nb[0]};
}

// w = w (1 - alpha wd) - alpha g (SGD; hyper = alpha, wd); AdamW (hyper = alpha, beta1, beta2, eps, wd,
// beta1h, beta2h): m = beta1 m + (1 - beta1) g, v = beta2 v + (1 - beta2) g^2, then
// w = w (1 - alpha wd) - alpha (m beta1h) / (sqrt(v beta2h) + eps).
void compute_opt_step(const ComputeParams & params, ggml_tensor * node) {
    const bool adamw = node->op == GGML_OP_OPT_STEP_ADAMW;
    const float * hyper = static_cast<const float *>(node->src[adamw ? 4 : 2]->data);
    const float alpha = hyper[0], wd = adamw ? hyper[4] : hyper[1], keep = 1.0f - alpha * wd;
    for_each_row(params, node, [&](int64_t i1, int64_t i2, int64_t i3) {
        const F32Row w = f32_row(node->src[0], i1, i2, i3), g = f32_row(node->src[1], i1, i2, i3);
        if (!adamw) {
            for (int64_t i = 0; i < node->ne[0]; ++i)
                w[i] = w[i] * keep - alpha * g[i];
            return;
        }
        const F32Row m = f32_row(node->src[2], i1, i2, i3), v = f32_row(node->src[3], i1, i2, i3);
        const float beta1 = hyper[1], beta2 = hyper[2], eps = hyper[3], beta1h = hyper[5], beta2h = hyper[6];
        for (int64_t i = 0; i < node->ne[0]; ++i) {
            m[i] = m[i] * beta1 + g[i] * (1.0f - beta1);
            v[i] = v[i] * beta2 + g[i] * g[i] * (1.0f - beta2);
            w[i] = w[i] * keep - alpha * (m[i] * beta1h) / (std::sqrt(v[i] * beta2h) + eps);
        }
    });
}

}  // namespace

const Kernel binary = cpu_kernel<supports_binary, nullptr, compute_binary>("cpu.binary");
const Kernel silu_back = cpu_kernel<supports_silu_back, nullptr, compute_binary>("cpu.silu_back");
const Kernel add_id = cpu_kernel<supports_add_id, nullptr, compute_add_id>("cpu.add_id");
const Kernel acc_set = cpu_kernel<supports_region, nullptr, compute_region>("cpu.acc_set");
const Kernel opt_step = cpu_kernel<supports_opt_step, nullptr, compute_opt_step>("cpu.opt_step");
const Kernel log = cpu_kernel<supports_map, nullptr, compute_log>("cpu.log");
const Kernel sin = cpu_kernel<supports_map, nullptr, compute_sin>("cpu.sin");
const Kernel cos = cpu_kernel<supports_map, nullptr, compute_cos>("cpu.cos");
const Kernel leaky_relu = cpu_kernel<supports_map, nullptr, compute_leaky_relu>("cpu.leaky_relu");
const Kernel fill = cpu_kernel<supports_map, nullptr, compute_fill>("cpu.fill");
const Kernel scale = cpu_kernel<supports_map, nullptr, compute_scale>("cpu.scale");
const Kernel sqr = cpu_kernel<supports_map, nullptr, compute_sqr>("cpu.sqr");
const Kernel sqrt = cpu_kernel<supports_map, nullptr, compute_sqrt>("cpu.sqrt");
const Kernel clamp = cpu_kernel<supports_map, nullptr, compute_clamp>("cpu.clamp");
const Kernel unary = cpu_kernel<supports_unary, nullptr, compute_unary>("cpu.unary");
const Kernel glu = cpu_kernel<supports_glu, nullptr, compute_glu>("cpu.glu");

}  // namespace ggx::cpu::kernels
#endif  // HWY_ONCE
