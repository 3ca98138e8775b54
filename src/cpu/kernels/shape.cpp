// Shape ops: REPEAT(_BACK), CONCAT, PAD (zeros, circular), PAD_REFLECT_1D, ROLL, UPSCALE (every
// ggml_scale_mode and flag), ARANGE, TIMESTEP_EMBEDDING, WIN_PART/UNPART, GET_REL_POS, ADD_REL_POS,
// TRI, DIAG and SOLVE_TRI.
//
// Most of them copy elements without conversion (the result has the source's type): each is an index
// map from a result element to the source element it copies, or to zero (gather). UPSCALE's
// interpolating modes are separable filters: per result element a few (source index, weight) taps
// along dims 0 and 1. The row arithmetic of SOLVE_TRI and of the filters' blend along dim 1 runs on
// Highway vectors (foreach_target + HWY_DYNAMIC_DISPATCH).
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/shape.cpp"
#include <hwy/foreach_target.h>
#include <hwy/highway.h>
// clang-format on

#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/internal.h"
#include "cpu/kernels/common.h"

HWY_BEFORE_NAMESPACE();
namespace ggx::cpu::shape_simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// y[i] += a * x[i] for i < n.
void axpy(const float * x, float a, float * y, int64_t n) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    const auto va = hn::Set(d, a);
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(hn::MulAdd(va, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, y + i);
    for (; i < n; ++i)
        y[i] += a * x[i];
}

// y[i] /= divisor for i < n.
void divide(float * y, float divisor, int64_t n) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    const auto vd = hn::Set(d, divisor);
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(hn::Div(hn::LoadU(d, y + i), vd), d, y + i);
    for (; i < n; ++i)
        y[i] /= divisor;
}

}  // namespace ggx::cpu::shape_simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ggx::cpu::shape_simd {
HWY_EXPORT(axpy);
HWY_EXPORT(divide);
}  // namespace ggx::cpu::shape_simd

namespace ggx::cpu::kernels {
namespace {

void axpy(const float * x, float a, float * y, int64_t n) {
    HWY_DYNAMIC_DISPATCH(shape_simd::axpy)(x, a, y, n);
}

// Fills dst row by row with elements of Size bytes. row_source(i1, i2, i3) returns a callable mapping
// i0 to the address of the source element to copy into dst[i0, i1, i2, i3], or nullptr for zero.
template <size_t Size, class RowSource>
void gather_sized(const ComputeParams & params, ggml_tensor * dst, RowSource && row_source) {
    for_each_row(params, dst, [&](int64_t i1, int64_t i2, int64_t i3) {
        if (params.should_stop()) return;
        const auto source = row_source(i1, i2, i3);
        char * out = row_at(dst, i1, i2, i3);
        for (int64_t i0 = 0; i0 < dst->ne[0]; ++i0, out += dst->nb[0]) {
            const char * in = source(i0);
            if (in)
                std::memcpy(out, in, Size);
            else
                std::memset(out, 0, Size);
        }
    });
}

// gather_sized for dst's element size (a gatherable type: 1, 2 or 4 bytes).
template <class RowSource>
void gather(const ComputeParams & params, ggml_tensor * dst, RowSource && row_source) {
    switch (ggml_type_size(dst->type)) {
        case 1:
            return gather_sized<1>(params, dst, row_source);
        case 2:
            return gather_sized<2>(params, dst, row_source);
        default:
            return gather_sized<4>(params, dst, row_source);
    }
}

// Types the copying ops take beyond the float ones: the unquantized types of 1, 2 and 4 bytes (F32,
// F16, BF16, I8, I16, I32), the ones the oracle checks.
bool gatherable(ggml_type type) {
    const size_t size = ggml_type_size(type);
    return !ggml_is_quantized(type) && ggml_blck_size(type) == 1 && (size == 1 || size == 2 || size == 4);
}

// i mod n in 0..n-1 for any sign of i (n > 0).
int64_t wrap(int64_t i, int64_t n) { return (i % n + n) % n; }

size_t per_thread(size_t bytes) { return core::align_up(bytes, kWorkspaceAlignment); }

char * thread_workspace(const ComputeParams & params, size_t per_thread_bytes) {
    return static_cast<char *>(params.workspace) + per_thread_bytes * static_cast<size_t>(params.ith());
}

bool float_or_i32(ggml_type type) { return is_float(type) || type == GGML_TYPE_I32; }

bool same_type(const ggml_tensor * node, const ggml_tensor * a) { return a && a->type == node->type; }

// ---- REPEAT: dst[i] = a[i mod a.ne] ------------------------------------------------------------------

bool supports_repeat(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return same_type(node, a) && float_or_i32(a->type) && ggml_can_repeat(a, node);
}

void compute_repeat(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    gather(params, node, [a](int64_t i1, int64_t i2, int64_t i3) {
        const char * row = row_at(a, i1 % a->ne[1], i2 % a->ne[2], i3 % a->ne[3]);
        return [a, row](int64_t i0) { return row + i0 % a->ne[0] * a->nb[0]; };
    });
}

// ---- CONCAT: a then b along dim ----------------------------------------------------------------------

bool supports_concat(const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const int dim = core::params<ggml_ext_concat_params>(node).dim;
    if (!same_type(node, a) || !same_type(node, b) || !float_or_i32(a->type) || dim < 0 ||
        dim >= GGML_MAX_DIMS)
        return false;
    for (int k = 0; k < GGML_MAX_DIMS; ++k) {
        const int64_t expected = k == dim ? a->ne[k] + b->ne[k] : a->ne[k];
        if (node->ne[k] != expected || (k != dim && b->ne[k] != a->ne[k])) return false;
    }
    return true;
}

void compute_concat(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const int dim = core::params<ggml_ext_concat_params>(node).dim;
    gather(params, node, [a, b, dim](int64_t i1, int64_t i2, int64_t i3) {
        return [a, b, dim, i1, i2, i3](int64_t i0) {
            int64_t i[GGML_MAX_DIMS] = {i0, i1, i2, i3};
            const ggml_tensor * src = a;
            if (i[dim] >= a->ne[dim]) {
                i[dim] -= a->ne[dim];
                src = b;
            }
            return static_cast<const char *>(element_at(src, i[0], i[1], i[2], i[3]));
        };
    });
}

// ---- PAD: lp_k zeros (circular: the values from the other end) before and rp_k after dimension k -----

bool supports_pad(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!same_type(node, a) || !is_float(a->type)) return false;
    const auto pad = core::params<ggml_ext_pad_params>(node);
    for (int k = 0; k < GGML_MAX_DIMS; ++k) {
        const int32_t lp = pad.pads[k][0], rp = pad.pads[k][1];
        if (lp < 0 || rp < 0 || node->ne[k] != a->ne[k] + lp + rp) return false;
        if (pad.circular && (lp > a->ne[k] || rp > a->ne[k])) return false;
    }
    return true;
}

// dst[i] = a[(i - shift) mod a.ne] per dimension: ROLL, and circular PAD with shift = lp.
void gather_wrapped(const ComputeParams & params, ggml_tensor * node, const int64_t * shift) {
    const ggml_tensor * a = node->src[0];
    if (ggml_is_empty(a)) return;  // then the result is empty too
    const auto source = [a, shift](int k, int64_t i) { return wrap(i - shift[k], a->ne[k]); };
    gather(params, node, [&](int64_t i1, int64_t i2, int64_t i3) {
        const char * row = row_at(a, source(1, i1), source(2, i2), source(3, i3));
        return [&, row](int64_t i0) { return row + source(0, i0) * a->nb[0]; };
    });
}

void compute_pad(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const auto pad = core::params<ggml_ext_pad_params>(node);
    int64_t lp[GGML_MAX_DIMS];
    for (int k = 0; k < GGML_MAX_DIMS; ++k)
        lp[k] = pad.pads[k][0];
    if (pad.circular) return gather_wrapped(params, node, lp);
    const auto inside = [a, &lp](int k, int64_t j) { return j >= lp[k] && j - lp[k] < a->ne[k]; };
    gather(params, node, [&](int64_t i1, int64_t i2, int64_t i3) {
        const bool row_inside = inside(1, i1) && inside(2, i2) && inside(3, i3);
        const char * row = row_inside ? row_at(a, i1 - lp[1], i2 - lp[2], i3 - lp[3]) : nullptr;
        return
            [&, row](int64_t i0) { return row && inside(0, i0) ? row + (i0 - lp[0]) * a->nb[0] : nullptr; };
    });
}

// ---- UPSCALE -----------------------------------------------------------------------------------------
// Dims 2 and 3 take the nearest source index floor(i * a.ne / ne). Along dims 0 and 1, NEAREST copies
// a[floor(i * a.ne / ne)] (align corners: floor(i * (a.ne - 1) / (ne - 1))); BILINEAR, BICUBIC and
// antialiased BILINEAR weigh the source elements around x = (i + o) / s - o, s = ne / a.ne, o = 0.5
// (align corners: s = (ne - 1) / (a.ne - 1), o = 0), with positions and weights in float as in ggml.

using core::scale_mode;
using core::ScaleMode;

bool supports_upscale(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return same_type(node, a) && is_float(a->type) && !ggml_is_empty(a) && core::valid_scale_mode(node);
}

int64_t nearest_index(const ggml_tensor * a, const ggml_tensor * node, int k, int64_t i) {
    return i * a->ne[k] / node->ne[k];
}

// The byte offsets of the source elements along dim 0 come from a per-thread table (one division per
// column, not per element).
size_t nearest_bytes(const ggml_tensor * node) {
    return per_thread(sizeof(size_t) * static_cast<size_t>(node->ne[0]));
}

void compute_nearest_upscale(const ComputeParams & params, ggml_tensor * node, bool align_corners) {
    const ggml_tensor * a = node->src[0];
    const auto nearest = [a, node, align_corners](int k, int64_t i) {
        const int64_t n = a->ne[k], ne = node->ne[k];
        return align_corners && k < 2 && n > 1 && ne > 1 ? i * (n - 1) / (ne - 1)
                                                         : nearest_index(a, node, k, i);
    };
    auto * offsets = reinterpret_cast<size_t *>(thread_workspace(params, nearest_bytes(node)));
    for (int64_t i0 = 0; i0 < node->ne[0]; ++i0)
        offsets[i0] = static_cast<size_t>(nearest(0, i0)) * a->nb[0];
    gather(params, node, [&](int64_t i1, int64_t i2, int64_t i3) {
        const char * row = row_at(a, nearest(1, i1), nearest(2, i2), nearest(3, i3));
        return [offsets, row](int64_t i0) { return row + offsets[i0]; };
    });
}

// The geometry of one interpolated dimension.
struct Axis {
    float scale, offset;  // s and o above
    int64_t n;            // the source extent
};

Axis axis_of(const ggml_tensor * a, const ggml_tensor * node, int k, bool align_corners) {
    return {core::upscale_axis_scale(a, node, k, align_corners), align_corners ? 0.0f : 0.5f, a->ne[k]};
}

// Half-width of the antialiasing triangle filter: one source element, more when shrinking.
float support(const Axis & axis) { return std::max(1.0f, 1.0f / axis.scale); }

// Taps per result index; antialiasing spans the open interval x ± support.
int tap_count(const ScaleMode & m, const Axis & axis) {
    if (m.antialias) return static_cast<int>(std::ceil(2.0f * support(axis))) + 1;
    return m.base == GGML_SCALE_MODE_BICUBIC ? 4 : 2;
}

// The cubic convolution kernel with a = -0.75 (PyTorch's and ggml's choice).
float cubic(float t) {
    constexpr float A = -0.75f;
    t = std::fabs(t);
    if (t <= 1.0f) return ((A + 2.0f) * t - (A + 3.0f)) * t * t + 1.0f;
    if (t < 2.0f) return ((A * t - 5.0f * A) * t + 8.0f * A) * t - 4.0f * A;
    return 0.0f;
}

// The source indices and weights of result index i (unused taps: index 0, weight 0).
void fill_taps(const ScaleMode & m, const Axis & axis, int64_t i, int taps, int32_t * index, float * weight) {
    std::fill_n(index, taps, 0);
    std::fill_n(weight, taps, 0.0f);
    const auto edge = [&axis](int64_t j) {
        return static_cast<int32_t>(std::clamp<int64_t>(j, 0, axis.n - 1));
    };
    if (m.antialias) {
        const float x = (static_cast<float>(i) + axis.offset) / axis.scale, s = support(axis);
        const int64_t lo = std::max<int64_t>(static_cast<int64_t>(x - s + axis.offset), 0);
        const int64_t hi = std::min<int64_t>(static_cast<int64_t>(x + s + axis.offset), axis.n);
        float total = 0.0f;
        int t = 0;
        for (int64_t j = lo; j < hi && t < taps; ++j) {
            const float w = std::max(0.0f, 1.0f - std::fabs(static_cast<float>(j) - x + axis.offset) / s);
            if (w <= 0.0f) continue;
            index[t] = static_cast<int32_t>(j);
            weight[t++] = w;
            total += w;
        }
        for (int k = 0; k < t; ++k)
            weight[k] /= total;
        return;
    }
    const float x = (static_cast<float>(i) + axis.offset) / axis.scale - axis.offset, x0 = std::floor(x);
    const auto j0 = static_cast<int64_t>(x0);
    if (m.base == GGML_SCALE_MODE_BICUBIC) {
        for (int k = 0; k < 4; ++k) {
            index[k] = edge(j0 - 1 + k);
            weight[k] = cubic(x - x0 + 1.0f - static_cast<float>(k));
        }
        return;
    }
    index[0] = edge(j0);
    index[1] = edge(j0 + 1);
    const float d = std::clamp(x - static_cast<float>(index[0]), 0.0f, 1.0f);
    weight[0] = 1.0f - d;
    weight[1] = d;
}

// One thread's scratch for a filtering mode: dim 0's taps, one row's dim 1 taps, a source row, the
// blend of the source rows along dim 1 and the result row, in F32.
struct FilterScratch {
    int tx, ty;
    int32_t *x_index, *y_index;
    float *x_weight, *y_weight, *row, *blend, *out;
};

size_t filter_bytes(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ScaleMode m = scale_mode(node);
    const int64_t tx = tap_count(m, axis_of(a, node, 0, m.align_corners)),
                  ty = tap_count(m, axis_of(a, node, 1, m.align_corners));
    return per_thread(sizeof(float) *
                      static_cast<size_t>(2 * node->ne[0] * tx + 2 * ty + 2 * a->ne[0] + node->ne[0]));
}

FilterScratch filter_scratch(const ComputeParams & params, const ggml_tensor * node, const ScaleMode & m) {
    const ggml_tensor * a = node->src[0];
    FilterScratch s{};
    s.tx = tap_count(m, axis_of(a, node, 0, m.align_corners));
    s.ty = tap_count(m, axis_of(a, node, 1, m.align_corners));
    char * base = thread_workspace(params, filter_bytes(node));
    s.x_index = reinterpret_cast<int32_t *>(base);
    s.x_weight = reinterpret_cast<float *>(s.x_index + node->ne[0] * s.tx);
    s.y_index = reinterpret_cast<int32_t *>(s.x_weight + node->ne[0] * s.tx);
    s.y_weight = reinterpret_cast<float *>(s.y_index + s.ty);
    s.row = s.y_weight + s.ty;
    s.blend = s.row + a->ne[0];
    s.out = s.blend + a->ne[0];
    return s;
}

// out[i] = sum_k weight[i, k] * blend[index[i, k]]; Taps > 0 fixes the tap count at compile time.
template <int Taps>
void apply_taps(const FilterScratch & s, int64_t n) {
    const int taps = Taps > 0 ? Taps : s.tx;
    for (int64_t i0 = 0; i0 < n; ++i0) {
        const int32_t * index = s.x_index + i0 * taps;
        const float * weight = s.x_weight + i0 * taps;
        float v = 0.0f;
        for (int k = 0; k < taps; ++k)
            v += weight[k] * s.blend[index[k]];
        s.out[i0] = v;
    }
}

// Each result row: the source rows blended along dim 1 (contiguous, vectorisable), then dim 0's taps.
void compute_filtered_upscale(const ComputeParams & params, ggml_tensor * node, const ScaleMode & m) {
    const ggml_tensor * a = node->src[0];
    const Axis ax = axis_of(a, node, 0, m.align_corners), ay = axis_of(a, node, 1, m.align_corners);
    const FilterScratch s = filter_scratch(params, node, m);
    const int64_t ne0 = node->ne[0], n0 = a->ne[0];
    for (int64_t i0 = 0; i0 < ne0; ++i0)
        fill_taps(m, ax, i0, s.tx, s.x_index + i0 * s.tx, s.x_weight + i0 * s.tx);
    const auto apply = s.tx == 2 ? apply_taps<2> : s.tx == 4 ? apply_taps<4> : apply_taps<0>;
    for_each_row(params, node, [&](int64_t i1, int64_t i2, int64_t i3) {
        if (params.should_stop()) return;
        fill_taps(m, ay, i1, s.ty, s.y_index, s.y_weight);
        std::fill_n(s.blend, n0, 0.0f);
        for (int t = 0; t < s.ty; ++t) {
            load_row(a->type,
                     row_at(a, s.y_index[t], nearest_index(a, node, 2, i2), nearest_index(a, node, 3, i3)),
                     a->nb[0], n0, s.row);
            axpy(s.row, s.y_weight[t], s.blend, n0);
        }
        apply(s, ne0);
        store_row(node->type, s.out, row_at(node, i1, i2, i3), node->nb[0], ne0);
    });
}

size_t upscale_workspace(const ggml_tensor * node, int n_threads) {
    const size_t bytes =
        scale_mode(node).base == GGML_SCALE_MODE_NEAREST ? nearest_bytes(node) : filter_bytes(node);
    return bytes * static_cast<size_t>(n_threads);
}

void compute_upscale(const ComputeParams & params, ggml_tensor * node) {
    const ScaleMode m = scale_mode(node);
    if (m.base == GGML_SCALE_MODE_NEAREST)
        compute_nearest_upscale(params, node, m.align_corners);
    else
        compute_filtered_upscale(params, node, m);
}

// ---- TIMESTEP_EMBEDDING -------------------------------------------------------------------------------
// Row n: cos(t_n f_j) for j < half, then sin(t_n f_j), then zeros; f_j = exp(-ln(max_period) j / half).
// Computed in double: t_n f_j can be large (t up to ~1000), where F32 arguments would lose digits.

bool supports_timestep_embedding(const ggml_tensor * node) {
    const ggml_tensor * t = node->src[0];
    const auto p = core::params<ggml_ext_timestep_embedding_params>(node);
    return t && t->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_is_vector(t) && p.dim >= 2 &&
           p.max_period >= 1 && node->ne[0] >= p.dim / 2 * 2 && node->ne[1] == t->ne[0];
}

void compute_timestep_embedding(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * t = node->src[0];
    const auto p = core::params<ggml_ext_timestep_embedding_params>(node);
    const int64_t half = p.dim / 2;
    const double log_period = std::log(static_cast<double>(p.max_period));
    const auto [begin, end] = chunk_range(node->ne[1], params.ith(), params.nth());
    for (int64_t n = begin; n < end && !params.should_stop(); ++n) {
        const double time = load_float(GGML_TYPE_F32, element_at(t, n, 0));
        char * row = row_at(node, n);
        for (int64_t j = 0; j < half; ++j) {
            const double arg =
                time * std::exp(-log_period * static_cast<double>(j) / static_cast<double>(half));
            store_float(GGML_TYPE_F32, row + j * node->nb[0], static_cast<float>(std::cos(arg)));
            store_float(GGML_TYPE_F32, row + (j + half) * node->nb[0], static_cast<float>(std::sin(arg)));
        }
        for (int64_t j = 2 * half; j < node->ne[0]; ++j)
            store_float(GGML_TYPE_F32, row + j * node->nb[0], 0.0f);
    }
}

// ---- REPEAT_BACK: dst[i] = sum of a over the repetitions of dst's shape ---------------------------------
// Each result row sums, in double, the source rows that repeat it, read whole and in order.

bool supports_repeat_back(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return same_type(node, a) && is_float(a->type) && ggml_can_repeat(node, a);
}

size_t repeat_back_bytes(const ggml_tensor * node) {
    return per_thread(sizeof(double) * static_cast<size_t>(node->ne[0]) +
                      sizeof(float) * static_cast<size_t>(node->src[0]->ne[0]));
}

size_t repeat_back_workspace(const ggml_tensor * node, int n_threads) {
    return repeat_back_bytes(node) * static_cast<size_t>(n_threads);
}

void compute_repeat_back(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (ggml_is_empty(node)) return;
    const int64_t * n = node->ne;
    const int64_t reps1 = a->ne[1] / n[1], reps2 = a->ne[2] / n[2], reps3 = a->ne[3] / n[3];
    auto * sum = reinterpret_cast<double *>(thread_workspace(params, repeat_back_bytes(node)));
    float * row = reinterpret_cast<float *>(sum + n[0]);
    for_each_row(params, node, [&](int64_t i1, int64_t i2, int64_t i3) {
        if (params.should_stop()) return;
        std::fill_n(sum, n[0], 0.0);
        for (int64_t r3 = 0; r3 < reps3; ++r3)
            for (int64_t r2 = 0; r2 < reps2; ++r2)
                for (int64_t r1 = 0; r1 < reps1; ++r1) {
                    load_row(a->type, row_at(a, i1 + r1 * n[1], i2 + r2 * n[2], i3 + r3 * n[3]), a->nb[0],
                             a->ne[0], row);
                    for (int64_t r0 = 0; r0 < a->ne[0]; r0 += n[0])
                        for (int64_t i0 = 0; i0 < n[0]; ++i0)
                            sum[i0] += row[r0 + i0];
                }
        char * out = row_at(node, i1, i2, i3);
        for (int64_t i0 = 0; i0 < n[0]; ++i0)
            store_float(node->type, out + i0 * node->nb[0], static_cast<float>(sum[i0]));
    });
}

// ---- PAD_REFLECT_1D: rows mirrored about their first and last element --------------------------------

bool supports_pad_reflect_1d(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!same_type(node, a) || a->type != GGML_TYPE_F32) return false;
    const auto p = core::params<ggml_ext_pad_reflect_1d_params>(node);
    return p.p0 >= 0 && p.p1 >= 0 && p.p0 < a->ne[0] && p.p1 < a->ne[0] &&
           node->ne[0] == a->ne[0] + p.p0 + p.p1 && node->ne[1] == a->ne[1] && node->ne[2] == a->ne[2] &&
           node->ne[3] == a->ne[3];
}

void compute_pad_reflect_1d(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const int64_t p0 = core::params<ggml_ext_pad_reflect_1d_params>(node).p0, last = a->ne[0] - 1;
    gather(params, node, [&](int64_t i1, int64_t i2, int64_t i3) {
        const char * row = row_at(a, i1, i2, i3);
        return [&, row](int64_t i0) {
            const int64_t j = i0 - p0;
            return row + (j < 0 ? -j : j > last ? 2 * last - j : j) * a->nb[0];
        };
    });
}

// ---- ROLL: dst[i] = a[(i - shift) mod ne] ------------------------------------------------------------

bool supports_roll(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!same_type(node, a) || !gatherable(a->type) || !ggml_are_same_shape(a, node)) return false;
    const auto p = core::params<ggml_ext_roll_params>(node);
    for (int k = 0; k < GGML_MAX_DIMS; ++k)
        if (std::abs(int64_t{p.shifts[k]}) >= std::max<int64_t>(a->ne[k], 1)) return false;
    return true;
}

void compute_roll(const ComputeParams & params, ggml_tensor * node) {
    const auto roll = core::params<ggml_ext_roll_params>(node);
    const int64_t shifts[GGML_MAX_DIMS] = {roll.shifts[0], roll.shifts[1], roll.shifts[2], roll.shifts[3]};
    gather_wrapped(params, node, shifts);
}

// ---- ARANGE: start + i * step, in float as ggml ------------------------------------------------------

bool supports_arange(const ggml_tensor * node) {
    const auto p = core::params<ggml_ext_arange_params>(node);
    return node->type == GGML_TYPE_F32 && p.step > 0.0f && ggml_nelements(node) == node->ne[0];
}

void compute_arange(const ComputeParams & params, ggml_tensor * node) {
    const auto p = core::params<ggml_ext_arange_params>(node);
    const auto [begin, end] = chunk_range(node->ne[0], params.ith(), params.nth());
    for (int64_t i = begin; i < end; ++i)
        store_float(GGML_TYPE_F32, element_at(node, i, 0), p.start + p.step * static_cast<float>(i));
}

// ---- WIN_PART, WIN_UNPART: w x w windows over dims 1, 2 of a [C, W, H, 1] image, zero-padded ---------

bool supports_win_part(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const auto p = core::params<ggml_ext_win_part_params>(node);
    return same_type(node, a) && a->type == GGML_TYPE_F32 && a->ne[3] == 1 && p.w >= 1 &&
           p.npx == (a->ne[1] + p.w - 1) / p.w && p.npy == (a->ne[2] + p.w - 1) / p.w &&
           node->ne[0] == a->ne[0] && node->ne[1] == p.w && node->ne[2] == p.w &&
           node->ne[3] == int64_t{p.npx} * p.npy;
}

void compute_win_part(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const auto p = core::params<ggml_ext_win_part_params>(node);
    gather(params, node, [&](int64_t i1, int64_t i2, int64_t i3) {
        const int64_t x = i3 % p.npx * p.w + i1, y = i3 / p.npx * p.w + i2;
        const char * row = x < a->ne[1] && y < a->ne[2] ? row_at(a, x, y) : nullptr;
        return [a, row](int64_t i0) { return row ? row + i0 * a->nb[0] : nullptr; };
    });
}

bool supports_win_unpart(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const int64_t w = core::params<ggml_ext_win_unpart_params>(node).w;
    return same_type(node, a) && a->type == GGML_TYPE_F32 && w >= 1 && node->ne[0] == a->ne[0] &&
           a->ne[1] == w && a->ne[2] == w && node->ne[3] == 1 &&
           a->ne[3] == (node->ne[1] + w - 1) / w * ((node->ne[2] + w - 1) / w);
}

void compute_win_unpart(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const int64_t w = core::params<ggml_ext_win_unpart_params>(node).w, npx = (node->ne[1] + w - 1) / w;
    gather(params, node, [&](int64_t i1, int64_t i2, int64_t) {
        const char * row = row_at(a, i1 % w, i2 % w, i2 / w * npx + i1 / w);
        return [a, row](int64_t i0) { return row + i0 * a->nb[0]; };
    });
}

// ---- GET_REL_POS: dst[c, k, q] = a[c, kh - 1 - k + q], converted to F16 ------------------------------

bool supports_get_rel_pos(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && is_float(a->type) && node->type == GGML_TYPE_F16 && node->ne[0] == a->ne[0] &&
           node->ne[1] == node->ne[2] && a->ne[1] == 2 * node->ne[1] - 1 && node->ne[3] == 1;
}

void compute_get_rel_pos(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const int64_t kh = node->ne[1];
    for_each_row(params, node, [&](int64_t i1, int64_t i2, int64_t) {
        const char * in = row_at(a, kh - 1 - i1 + i2);
        char * out = row_at(node, i1, i2);
        for (int64_t i0 = 0; i0 < node->ne[0]; ++i0)
            store_float(GGML_TYPE_F16, out + i0 * node->nb[0], load_float(a->type, in + i0 * a->nb[0]));
    });
}

// ---- ADD_REL_POS: a[x + W y, r, b] + pw[x, r mod H, r div H, b] + ph[y, r mod H, r div H, b] ---------

bool supports_add_rel_pos(const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *pw = node->src[1], *ph = node->src[2];
    return same_type(node, a) && a->type == GGML_TYPE_F32 && pw && ph && pw->type == GGML_TYPE_F32 &&
           ph->type == GGML_TYPE_F32 && ggml_are_same_shape(a, node) && ggml_are_same_shape(pw, ph) &&
           pw->ne[3] == a->ne[2] && pw->ne[0] * pw->ne[0] == a->ne[0] && pw->ne[1] * pw->ne[2] == a->ne[1] &&
           a->ne[3] == 1;
}

void compute_add_rel_pos(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *pw = node->src[1], *ph = node->src[2];
    const int64_t w = pw->ne[0], h = pw->ne[1];
    const auto value = [](const ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3 = 0) {
        return load_float(GGML_TYPE_F32, element_at(t, i0, i1, i2, i3));
    };
    for_each_row(params, node, [&](int64_t i1, int64_t i2, int64_t) {
        char * out = row_at(node, i1, i2);
        for (int64_t i0 = 0; i0 < node->ne[0]; ++i0) {
            const float sum = value(a, i0, i1, i2) + value(ph, i0 / w, i1 % h, i1 / h, i2) +
                              value(pw, i0 % w, i1 % h, i1 / h, i2);
            store_float(GGML_TYPE_F32, out + i0 * node->nb[0], sum);
        }
    });
}

// ---- TRI: the ggml_tri_type triangle of each matrix (column i0, row i1), zeros elsewhere -------------

bool supports_tri(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const int32_t type = core::params<ggml_ext_tri_params>(node).type;
    return same_type(node, a) && a->type == GGML_TYPE_F32 && ggml_are_same_shape(a, node) &&
           a->ne[0] == a->ne[1] && type >= GGML_TRI_TYPE_UPPER_DIAG && type <= GGML_TRI_TYPE_LOWER;
}

bool in_triangle(int32_t type, int64_t column, int64_t row) {
    switch (type) {
        case GGML_TRI_TYPE_UPPER_DIAG:
            return column >= row;
        case GGML_TRI_TYPE_UPPER:
            return column > row;
        case GGML_TRI_TYPE_LOWER_DIAG:
            return column <= row;
        default:
            return column < row;
    }
}

void compute_tri(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const int32_t type = core::params<ggml_ext_tri_params>(node).type;
    gather(params, node, [&](int64_t i1, int64_t i2, int64_t i3) {
        const char * row = row_at(a, i1, i2, i3);
        return [a, row, type, i1](int64_t i0) {
            return in_triangle(type, i0, i1) ? row + i0 * a->nb[0] : nullptr;
        };
    });
}

// ---- DIAG: dst[i, j, k] = i == j ? a[i, 0, k] : 0 ----------------------------------------------------

bool supports_diag(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return same_type(node, a) && gatherable(a->type) && a->ne[1] == 1 && node->ne[0] == a->ne[0] &&
           node->ne[1] == a->ne[0] && node->ne[2] == a->ne[2] && node->ne[3] == a->ne[3];
}

void compute_diag(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    gather(params, node, [&](int64_t i1, int64_t i2, int64_t i3) {
        const char * element = element_at(a, i1, 0, i2, i3);
        return [element, i1](int64_t i0) { return i0 == i1 ? element : nullptr; };
    });
}

// ---- SOLVE_TRI: x with a x = b by forward substitution, a lower triangular (column i0, row i1) -------
// Work units are (matrix, block of right-hand-side columns); row i of x is an axpy over the block.

constexpr int64_t kSolveColumns = 64;

bool supports_solve_tri(const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    return a && b && a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 &&
           a->ne[0] == a->ne[1] && b->ne[1] == a->ne[1] && b->ne[2] == a->ne[2] && b->ne[3] == a->ne[3] &&
           ggml_are_same_shape(node, b) && b->nb[0] == sizeof(float) && node->nb[0] == sizeof(float);
}

void compute_solve_tri(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const int64_t n = a->ne[0], k = b->ne[0], blocks = (k + kSolveColumns - 1) / kSolveColumns;
    const auto coefficient = [a](int64_t column, int64_t row, int64_t i2, int64_t i3) {
        return load_float(GGML_TYPE_F32, element_at(a, column, row, i2, i3));
    };
    const auto [begin, end] = chunk_range(blocks * a->ne[2] * a->ne[3], params.ith(), params.nth());
    for (int64_t unit = begin; unit < end && !params.should_stop(); ++unit) {
        const int64_t matrix = unit / blocks, i2 = matrix % a->ne[2], i3 = matrix / a->ne[2];
        const int64_t c0 = unit % blocks * kSolveColumns, width = std::min(kSolveColumns, k - c0);
        for (int64_t i = 0; i < n; ++i) {
            float * x = reinterpret_cast<float *>(element_at(node, c0, i, i2, i3));
            const auto * rhs = reinterpret_cast<const float *>(element_at(b, c0, i, i2, i3));
            std::copy_n(rhs, width, x);
            for (int64_t j = 0; j < i; ++j)
                axpy(reinterpret_cast<const float *>(element_at(node, c0, j, i2, i3)),
                     -coefficient(j, i, i2, i3), x, width);
            HWY_DYNAMIC_DISPATCH(shape_simd::divide)(x, coefficient(i, i, i2, i3), width);
        }
    }
}

}  // namespace

const Kernel repeat = cpu_kernel<supports_repeat, nullptr, compute_repeat>("cpu.repeat");
const Kernel concat = cpu_kernel<supports_concat, nullptr, compute_concat>("cpu.concat");
const Kernel pad = cpu_kernel<supports_pad, nullptr, compute_pad>("cpu.pad");
const Kernel upscale = cpu_kernel<supports_upscale, upscale_workspace, compute_upscale>("cpu.upscale");
const Kernel timestep_embedding =
    cpu_kernel<supports_timestep_embedding, nullptr, compute_timestep_embedding>("cpu.timestep_embedding");
const Kernel repeat_back =
    cpu_kernel<supports_repeat_back, repeat_back_workspace, compute_repeat_back>("cpu.repeat_back");
const Kernel pad_reflect_1d =
    cpu_kernel<supports_pad_reflect_1d, nullptr, compute_pad_reflect_1d>("cpu.pad_reflect_1d");
const Kernel roll = cpu_kernel<supports_roll, nullptr, compute_roll>("cpu.roll");
const Kernel arange = cpu_kernel<supports_arange, nullptr, compute_arange>("cpu.arange");
const Kernel win_part = cpu_kernel<supports_win_part, nullptr, compute_win_part>("cpu.win_part");
const Kernel win_unpart = cpu_kernel<supports_win_unpart, nullptr, compute_win_unpart>("cpu.win_unpart");
const Kernel get_rel_pos = cpu_kernel<supports_get_rel_pos, nullptr, compute_get_rel_pos>("cpu.get_rel_pos");
const Kernel add_rel_pos = cpu_kernel<supports_add_rel_pos, nullptr, compute_add_rel_pos>("cpu.add_rel_pos");
const Kernel tri = cpu_kernel<supports_tri, nullptr, compute_tri>("cpu.tri");
const Kernel diag = cpu_kernel<supports_diag, nullptr, compute_diag>("cpu.diag");
const Kernel solve_tri = cpu_kernel<supports_solve_tri, nullptr, compute_solve_tri>("cpu.solve_tri");

}  // namespace ggx::cpu::kernels
#endif  // HWY_ONCE
