// CPU kernels of ROPE and ROPE_BACK (the transposed rotation, sin negated): rotary position
// embedding with YaRN scaling, a [D, H, T, B] F32/F16 (any strides) at positions pos (I32 [T], or
// [4T] for the multi-axis modes MROPE, IMROPE, VISION), optional F32 frequency factors, an optional
// rotation offset; the result has a's type.
//
// Pair i of a row turns by theta_i = pos[axis_i] * coef_i, where coef_i folds the frequency, the
// frequency factor and the YaRN interpolation mix together and axis_i is 0 outside the multi-axis
// modes; both are computed once per thread and node. Each thread walks its rows (head fastest,
// then token, then batch) and refills its table of mscale * (cos, sin) whenever the token changes:
// the angles are reduced to [-pi, pi] in double (positions can be large) and their sine and cosine
// evaluated in double SIMD lanes; the rotation itself is F32 SIMD.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/rope.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/contrib/math/math-inl.h>  // after highway.h

#include <cmath>
#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace ggx::cpu::rope_simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr double kTwoPiHi = 6.283185307179586;       // 2 pi rounded to double
constexpr double kTwoPiLo = 2.4492935982947064e-16;  // 2 pi - kTwoPiHi
constexpr double kInvTwoPi = 0.15915494309189535;

// cos_out[i] = mscale * cos(pos[i] * coef[i]), sin_out[i] = sin_scale * sin(pos[i] * coef[i]) for i < n.
void SinCos(const double * pos, const double * coef, int64_t n, double mscale, double sin_scale,
            float * cos_out, float * sin_out) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
    const auto vscale = hn::Set(dd, mscale), vsin_scale = hn::Set(dd, sin_scale);
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const auto theta = hn::Mul(hn::LoadU(dd, pos + i), hn::LoadU(dd, coef + i));
        const auto turns = hn::Round(hn::Mul(theta, hn::Set(dd, kInvTwoPi)));
        const auto reduced =
            hn::NegMulAdd(turns, hn::Set(dd, kTwoPiLo), hn::NegMulAdd(turns, hn::Set(dd, kTwoPiHi), theta));
        hn::StoreU(hn::DemoteTo(df, hn::Mul(hn::Cos(dd, reduced), vscale)), df, cos_out + i);
        hn::StoreU(hn::DemoteTo(df, hn::Mul(hn::Sin(dd, reduced), vsin_scale)), df, sin_out + i);
    }
    for (; i < n; ++i) {
        const double theta = pos[i] * coef[i];
        cos_out[i] = static_cast<float>(std::cos(theta) * mscale);
        sin_out[i] = static_cast<float>(std::sin(theta) * sin_scale);
    }
}

// NEOX layout: pair i is (x[i], x[i + half]). y may be x.
void RotateHalves(const float * x, float * y, int64_t half, const float * c, const float * s) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    int64_t i = 0;
    for (; i + lanes <= half; i += lanes) {
        const auto x0 = hn::LoadU(d, x + i), x1 = hn::LoadU(d, x + half + i);
        const auto vc = hn::LoadU(d, c + i), vs = hn::LoadU(d, s + i);
        hn::StoreU(hn::MulSub(x0, vc, hn::Mul(x1, vs)), d, y + i);
        hn::StoreU(hn::MulAdd(x0, vs, hn::Mul(x1, vc)), d, y + half + i);
    }
    for (; i < half; ++i) {
        const float x0 = x[i], x1 = x[i + half];
        y[i] = x0 * c[i] - x1 * s[i];
        y[i + half] = x0 * s[i] + x1 * c[i];
    }
}

// Normal layout: pair i is (x[2i], x[2i + 1]); c2 holds each cosine twice, s2 each sine as
// (-s, s), so y = x * c2 + (x with the members of each pair swapped) * s2. y may be x.
void RotatePairs(const float * x, float * y, int64_t n, const float * c2, const float * s2) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    int64_t j = 0;
    if (lanes % 2 == 0) {
        for (; j + lanes <= n; j += lanes) {
            const auto v = hn::LoadU(d, x + j);
            hn::StoreU(hn::MulAdd(v, hn::LoadU(d, c2 + j), hn::Mul(hn::Reverse2(d, v), hn::LoadU(d, s2 + j))),
                       d, y + j);
        }
    }
    for (; j < n; j += 2) {
        const float x0 = x[j], x1 = x[j + 1];
        y[j] = x0 * c2[j] - x1 * s2[j + 1];
        y[j + 1] = x0 * s2[j + 1] + x1 * c2[j];
    }
}

}  // namespace HWY_NAMESPACE
}  // namespace ggx::cpu::rope_simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <algorithm>
#include <numbers>
#include <utility>

#include "core/internal.h"
#include "cpu/kernels/common.h"

namespace ggx::cpu {

namespace rope_simd {
HWY_EXPORT(SinCos);
HWY_EXPORT(RotateHalves);
HWY_EXPORT(RotatePairs);
}  // namespace rope_simd

namespace {

constexpr size_t kAlign = 64;

constexpr bool is_multi(int mode) {
    return mode == GGML_ROPE_TYPE_MROPE || mode == GGML_ROPE_TYPE_IMROPE || mode == GGML_ROPE_TYPE_VISION;
}

// The node's rotation parameters, widened for the coefficient computation.
struct RopeParams {
    explicit RopeParams(const ggml_tensor * node)
        : RopeParams(core::params<ggml_ext_rope_params>(node), node->op == GGML_OP_ROPE_BACK) {}
    RopeParams(const ggml_ext_rope_params & p, bool back)
        : n_dims(p.n_dims),
          pairs(p.mode == GGML_ROPE_TYPE_VISION ? p.n_dims : p.n_dims / 2),
          offs(p.n_offs),
          mode(p.mode),
          base(p.freq_base),
          freq_scale(p.freq_scale),
          ext_factor(p.ext_factor),
          attn_factor(p.attn_factor),
          n_ctx_orig(p.n_ctx_orig),
          beta_fast(p.beta_fast),
          beta_slow(p.beta_slow),
          sin_sign(back ? -1.0 : 1.0) {
        std::copy(p.sections, p.sections + GGML_MROPE_SECTIONS, sections);
    }

    // The position axis of pair i and the exponent of its base frequency (docs/ops.md): multi modes
    // split each run of sections[0] + .. + sections[3] pairs between the axes t, h, w, e.
    std::pair<int32_t, int64_t> axis_of(int64_t i) const {
        if (!is_multi(mode)) return {0, i};
        const int64_t run = sections[0] + sections[1] + sections[2] + sections[3];
        const int64_t j = i % run;
        if (mode == GGML_ROPE_TYPE_IMROPE) {
            const int32_t lane = static_cast<int32_t>(j % 3);  // t, h, w take turns while they last
            return {lane < 3 && j < 3 * int64_t{sections[lane]} ? lane : 3, i};
        }
        int32_t axis = 0;
        int64_t first = 0;  // first pair of the axis' section in the run
        while (axis < 3 && j >= first + sections[axis])
            first += sections[axis++];
        return {axis, mode == GGML_ROPE_TYPE_VISION ? j - first : i};
    }

    // coef[i] and axis[i] for the pairs: theta_i = pos[axis[i]] * coef[i].
    void coefficients(const ggml_tensor * freq_factors, double * coef, int32_t * axis) const {
        const double theta_scale = std::pow(base, -2.0 / n_dims);
        const auto corr_dim = [&](double n_rot) {
            return n_dims * std::log(n_ctx_orig / (n_rot * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
        };
        const double low = std::max(0.0, std::floor(corr_dim(beta_fast)));
        const double high = std::min(static_cast<double>(n_dims - 1), std::ceil(corr_dim(beta_slow)));
        for (int64_t i = 0; i < pairs; ++i) {
            const auto [ax, expo] = axis_of(i);
            axis[i] = ax;
            const double factor =
                freq_factors ? load_float(GGML_TYPE_F32, element_at(freq_factors, i, 0)) : 1.0;
            const double extrap = std::pow(theta_scale, static_cast<double>(expo)) / factor;
            double mix = 0.0;  // interpolated (freq_scale) at 0, extrapolated at 1
            if (ext_factor != 0.0)
                mix = ext_factor * (1.0 - std::clamp((i - low) / std::max(0.001, high - low), 0.0, 1.0));
            coef[i] = extrap * (freq_scale * (1.0 - mix) + mix);
        }
    }

    double mscale() const {
        return ext_factor != 0.0 ? attn_factor * (1.0 + 0.1 * std::log(1.0 / freq_scale)) : attn_factor;
    }

    int64_t n_dims, pairs, offs;
    int32_t mode;
    int32_t sections[GGML_MROPE_SECTIONS];
    double base, freq_scale, ext_factor, attn_factor, n_ctx_orig, beta_fast, beta_slow;
    double sin_sign;  // -1 for ROPE_BACK: the transposed rotation
};

// Per-thread scratch, each part 64-byte aligned: coef and the positions of the pairs (doubles), the
// axis of each pair, the cos and sin tables (n_dims floats each: NORMAL mode stores every entry
// twice, VISION has n_dims pairs), and an input and an output row.
struct Scratch {
    double *coef, *pos;
    int32_t * axis;
    float *cos, *sin, *in, *out;
};

size_t part_bytes(size_t n, size_t size) { return core::align_up(n * size, kAlign); }

size_t thread_bytes(const ggml_tensor * node) {
    const size_t n_dims = core::params<ggml_ext_rope_params>(node).n_dims, d = node->ne[0];
    return 2 * part_bytes(n_dims, sizeof(double)) + part_bytes(n_dims, sizeof(int32_t)) +
           2 * part_bytes(n_dims, sizeof(float)) + 2 * part_bytes(d, sizeof(float));
}

size_t workspace(const ggml_tensor * node, int n_threads) { return thread_bytes(node) * n_threads; }

Scratch scratch(const ComputeParams & params, const ggml_tensor * node) {
    const size_t n_dims = core::params<ggml_ext_rope_params>(node).n_dims, d = node->ne[0];
    char * p = static_cast<char *>(params.workspace) + thread_bytes(node) * params.ith();
    const auto take = [&p](size_t bytes) { return std::exchange(p, p + bytes); };
    Scratch s;
    s.coef = reinterpret_cast<double *>(take(part_bytes(n_dims, sizeof(double))));
    s.pos = reinterpret_cast<double *>(take(part_bytes(n_dims, sizeof(double))));
    s.axis = reinterpret_cast<int32_t *>(take(part_bytes(n_dims, sizeof(int32_t))));
    s.cos = reinterpret_cast<float *>(take(part_bytes(n_dims, sizeof(float))));
    s.sin = reinterpret_cast<float *>(take(part_bytes(n_dims, sizeof(float))));
    s.in = reinterpret_cast<float *>(take(part_bytes(d, sizeof(float))));
    s.out = reinterpret_cast<float *>(take(part_bytes(d, sizeof(float))));
    return s;
}

// Fills the tables for a token at positions p (one per axis); NORMAL mode spreads them to (c, c)
// and (-s, s) per pair.
void fill_tables(const RopeParams & rope, const Scratch & s, const int32_t * p) {
    for (int64_t i = 0; i < rope.pairs; ++i)
        s.pos[i] = p[s.axis[i]];
    const double mscale = rope.mscale();
    HWY_DYNAMIC_DISPATCH(rope_simd::SinCos)
    (s.pos, s.coef, rope.pairs, mscale, rope.sin_sign * mscale, s.cos, s.sin);
    if (rope.mode != GGML_ROPE_TYPE_NORMAL) return;
    for (int64_t i = rope.pairs - 1; i >= 0; --i) {
        s.cos[2 * i] = s.cos[2 * i + 1] = s.cos[i];
        const float sin_i = s.sin[i];
        s.sin[2 * i] = -sin_i;
        s.sin[2 * i + 1] = sin_i;
    }
}

// y = x with elements [offs, offs + 2 * pairs) rotated by the tables, the others copied; x and y
// hold d floats.
void rotate(const RopeParams & rope, const Scratch & s, const float * x, float * y, int64_t d) {
    const int64_t end = rope.offs + 2 * rope.pairs;
    if (rope.mode == GGML_ROPE_TYPE_NORMAL)
        HWY_DYNAMIC_DISPATCH(rope_simd::RotatePairs)(x + rope.offs, y + rope.offs, rope.n_dims, s.cos, s.sin);
    else
        HWY_DYNAMIC_DISPATCH(rope_simd::RotateHalves)(x + rope.offs, y + rope.offs, rope.pairs, s.cos, s.sin);
    if (x == y) return;
    std::copy(x, x + rope.offs, y);
    std::copy(x + end, x + d, y + end);
}

bool dense_f32(const ggml_tensor * t) { return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float); }

bool mode_ok(const ggml_ext_rope_params & rope) {
    if (rope.mode == GGML_ROPE_TYPE_NORMAL || rope.mode == GGML_ROPE_TYPE_NEOX) return true;
    const int32_t * sec = rope.sections;
    return is_multi(rope.mode) &&
           std::all_of(sec, sec + GGML_MROPE_SECTIONS, [](int32_t v) { return v >= 0; }) &&
           int64_t{sec[0]} + sec[1] + sec[2] + sec[3] > 0;
}

bool supports(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * pos = node->src[1];
    const ggml_tensor * ff = node->src[2];
    if (a == nullptr || pos == nullptr) return false;
    const auto p = core::params<ggml_ext_rope_params>(node);
    const RopeParams rope(p, false);
    const int64_t axes = is_multi(p.mode) ? 4 : 1;
    return (a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16) && node->type == a->type &&
           ggml_are_same_shape(a, node) && pos->type == GGML_TYPE_I32 && ggml_is_vector(pos) &&
           pos->ne[0] >= axes * a->ne[2] && mode_ok(p) && p.n_dims > 0 && p.n_dims % 2 == 0 &&
           p.n_offs >= 0 && p.n_offs % 2 == 0 && p.n_offs + 2 * rope.pairs <= a->ne[0] &&
           (ff == nullptr || (ff->type == GGML_TYPE_F32 && ggml_is_vector(ff) && ff->ne[0] >= rope.pairs));
}

void compute(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * pos = node->src[1];
    const RopeParams rope(node);
    const Scratch s = scratch(params, node);
    rope.coefficients(node->src[2], s.coef, s.axis);
    const int64_t d = node->ne[0], T = node->ne[2];
    const int64_t axes = is_multi(rope.mode) ? 4 : 1;
    const auto [begin, end] = chunk_range(ggml_nrows(node), params.ith(), params.nth());
    // Row r = i1 + ne1 * (i2 + ne2 * i3), walked with counters (no divisions per row).
    int64_t i1 = begin % node->ne[1], i2 = begin / node->ne[1] % node->ne[2],
            i3 = begin / (node->ne[1] * node->ne[2]);
    for (int64_t r = begin; r < end; ++r) {
        if (r == begin || i1 == 0) {
            if (params.should_stop()) return;
            int32_t p[4];
            for (int64_t k = 0; k < axes; ++k)
                std::memcpy(&p[k], element_at(pos, i2 + k * T, 0), sizeof(int32_t));
            fill_tables(rope, s, p);
        }
        const char * src_row = row_at(a, i1, i2, i3);
        char * dst_row = row_at(node, i1, i2, i3);
        if (!dense_f32(a)) load_row(a->type, src_row, a->nb[0], d, s.in);
        const float * x = dense_f32(a) ? reinterpret_cast<const float *>(src_row) : s.in;
        float * y = dense_f32(node) ? reinterpret_cast<float *>(dst_row) : s.out;
        rotate(rope, s, x, y, d);
        if (y == s.out) store_row(node->type, s.out, dst_row, node->nb[0], d);
        if (++i1 == node->ne[1]) {
            i1 = 0;
            if (++i2 == node->ne[2]) i2 = 0, ++i3;
        }
    }
}

}  // namespace

namespace kernels {
const Kernel rope = cpu_kernel<supports, workspace, compute>("cpu.rope");
const Kernel rope_back = cpu_kernel<supports, workspace, compute>("cpu.rope_back");
}  // namespace kernels

}  // namespace ggx::cpu

#endif  // HWY_ONCE
