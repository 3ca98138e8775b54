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
#include <cstdint>
#include <iterator>
#include <optional>

#include "core/internal.h"
#include "cpu/kernels/common.h"

#ifndef GGX_CPU_KERNELS_ELEMENTWISE_SHARED
#define GGX_CPU_KERNELS_ELEMENTWISE_SHARED
namespace ggx::cpu::elementwise_simd {

// Element-wise maps of one F32 operand; p0 and p1 are the op's float parameters.
enum class MapOp : int32_t { scale, sqr, sqrt, clamp, relu, silu, gelu, gelu_quick, sigmoid, tanh };
struct Map {
    MapOp op;
    float p0 = 0.0f, p1 = 0.0f;
};
enum class BinaryOp : int32_t { add, sub, mul, div };

}  // namespace ggx::cpu::elementwise_simd
#endif

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

// e^x; the argument is clamped to where the polynomial is valid (the result saturates to 0 / inf).
HWY_INLINE V exp_clamped(V x) {
    const D d;
    return hn::Exp(d, hn::Min(hn::Max(x, hn::Set(d, -105.0f)), hn::Set(d, 89.0f)));
}

// NaN inputs give NaN (the polynomial approximations would not propagate them).
HWY_INLINE V keep_nan(V x, V y) { return hn::IfThenElse(hn::IsNaN(x), x, y); }

// x / (1 + e^(-k x)): silu for k = 1, gelu_quick for k = 1.702.
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

void map_row(const Map & m, const float * x, float * y, int64_t n) {
    const D d;
    const V p0 = hn::Set(d, m.p0), p1 = hn::Set(d, m.p1), zero = hn::Zero(d), one = hn::Set(d, 1.0f);
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
        case MapOp::relu:
            return transform1(x, y, n, [&](V v) { return hn::IfThenElseZero(hn::Gt(v, zero), v); });
        case MapOp::silu:
            return transform1(x, y, n, [](V v) { return x_sigmoid(v, 1.0f); });
        case MapOp::gelu:
            return transform1(x, y, n, [](V v) { return gelu(v); });
        case MapOp::gelu_quick:
            return transform1(x, y, n, [](V v) { return x_sigmoid(v, 1.702f); });
        case MapOp::sigmoid:
            return transform1(x, y, n, [&](V v) {
                return keep_nan(v, hn::Div(one, hn::Add(one, exp_clamped(hn::Neg(v)))));
            });
        case MapOp::tanh:
            return transform1(x, y, n, [&](V v) { return keep_nan(v, hn::Tanh(d, v)); });
    }
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
    }
}

// y = act(x) * g, act silu or gelu.
void glu_row(MapOp act, const float * x, const float * g, float * y, int64_t n) {
    if (act == MapOp::gelu) return transform2(x, g, y, n, [](V u, V v) { return hn::Mul(gelu(u), v); });
    transform2(x, g, y, n, [](V u, V v) { return hn::Mul(x_sigmoid(u, 1.0f), v); });
}

}  // namespace ggx::cpu::elementwise_simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ggx::cpu::elementwise_simd {
HWY_EXPORT(map_row);
HWY_EXPORT(binary_row);
HWY_EXPORT(glu_row);
}  // namespace ggx::cpu::elementwise_simd

namespace ggx::cpu::kernels {
namespace {

using elementwise_simd::BinaryOp;
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

// The map of every ggml_unary_op and the activation of every ggml_glu_op (std::nullopt: no CPU
// kernel yet), listed in enum order so that the static_asserts prove each value has one entry: a new
// sub-op fails to compile until it is listed.
struct SubOpMap {
    int32_t op;
    std::optional<MapOp> map;
};
constexpr SubOpMap kUnaryMaps[] = {
    {GGML_UNARY_OP_ABS, std::nullopt},         {GGML_UNARY_OP_SGN, std::nullopt},
    {GGML_UNARY_OP_NEG, std::nullopt},         {GGML_UNARY_OP_STEP, std::nullopt},
    {GGML_UNARY_OP_TANH, MapOp::tanh},         {GGML_UNARY_OP_ELU, std::nullopt},
    {GGML_UNARY_OP_RELU, MapOp::relu},         {GGML_UNARY_OP_SIGMOID, MapOp::sigmoid},
    {GGML_UNARY_OP_GELU, MapOp::gelu},         {GGML_UNARY_OP_GELU_QUICK, MapOp::gelu_quick},
    {GGML_UNARY_OP_SILU, MapOp::silu},         {GGML_UNARY_OP_HARDSWISH, std::nullopt},
    {GGML_UNARY_OP_HARDSIGMOID, std::nullopt}, {GGML_UNARY_OP_EXP, std::nullopt},
    {GGML_UNARY_OP_EXPM1, std::nullopt},       {GGML_UNARY_OP_SOFTPLUS, std::nullopt},
    {GGML_UNARY_OP_GELU_ERF, std::nullopt},    {GGML_UNARY_OP_XIELU, std::nullopt},
    {GGML_UNARY_OP_FLOOR, std::nullopt},       {GGML_UNARY_OP_CEIL, std::nullopt},
    {GGML_UNARY_OP_ROUND, std::nullopt},       {GGML_UNARY_OP_TRUNC, std::nullopt},
};
static_assert(lists_every_value_in_order(kUnaryMaps, GGML_UNARY_OP_COUNT),
              "the CPU unary table must list every ggml_unary_op once, in order");
constexpr SubOpMap kGluActivations[] = {
    {GGML_GLU_OP_REGLU, std::nullopt},     {GGML_GLU_OP_GEGLU, MapOp::gelu},
    {GGML_GLU_OP_SWIGLU, MapOp::silu},     {GGML_GLU_OP_SWIGLU_OAI, std::nullopt},
    {GGML_GLU_OP_GEGLU_ERF, std::nullopt}, {GGML_GLU_OP_GEGLU_QUICK, std::nullopt},
};
static_assert(lists_every_value_in_order(kGluActivations, GGML_GLU_OP_COUNT),
              "the CPU GLU table must list every ggml_glu_op once, in order");

// The map of sub-op value op in table; std::nullopt when op is out of range or has no kernel.
template <size_t N>
std::optional<MapOp> map_of(const SubOpMap (&table)[N], int32_t op) {
    return op >= 0 && static_cast<size_t>(op) < N ? table[op].map : std::nullopt;
}

std::optional<MapOp> unary_map(const ggml_tensor * node) {
    return map_of(kUnaryMaps, core::params<ggml_ext_unary_params>(node).op);
}

std::optional<MapOp> glu_activation(const ggml_tensor * node) {
    return map_of(kGluActivations, core::params<ggml_ext_glu_params>(node).op);
}

bool supports_unary(const ggml_tensor * node) { return supports_map(node) && unary_map(node); }

void compute_unary(const ComputeParams & params, ggml_tensor * node) {
    compute_map(params, node, {*unary_map(node)});
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

void compute_binary(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const BinaryOp op = node->op == GGML_OP_ADD   ? BinaryOp::add
                        : node->op == GGML_OP_SUB ? BinaryOp::sub
                        : node->op == GGML_OP_MUL ? BinaryOp::mul
                                                  : BinaryOp::div;
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
    if (!a || a->type != node->type || !is_float(a->type) || !glu_activation(node)) return false;
    if (b) return same_type_and_shape(a, b) && ggml_are_same_shape(a, node);
    return a->ne[0] == 2 * node->ne[0] && a->ne[1] == node->ne[1] && a->ne[2] == node->ne[2] &&
           a->ne[3] == node->ne[3];
}

// Merged form: x and g are the two halves of each row of src0 (swapped: exchanged); split form:
// x from src0, g from src1.
void compute_glu(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const MapOp act = *glu_activation(node);
    const bool swapped = core::params<ggml_ext_glu_params>(node).swapped != 0;
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
        HWY_DYNAMIC_DISPATCH(elementwise_simd::glu_row)(act, x, g, y.out, n);
        y.commit(n);
    });
}

}  // namespace

const Kernel binary = cpu_kernel<supports_binary, nullptr, compute_binary>("cpu.binary");
const Kernel scale = cpu_kernel<supports_map, nullptr, compute_scale>("cpu.scale");
const Kernel sqr = cpu_kernel<supports_map, nullptr, compute_sqr>("cpu.sqr");
const Kernel sqrt = cpu_kernel<supports_map, nullptr, compute_sqrt>("cpu.sqrt");
const Kernel clamp = cpu_kernel<supports_map, nullptr, compute_clamp>("cpu.clamp");
const Kernel unary = cpu_kernel<supports_unary, nullptr, compute_unary>("cpu.unary");
const Kernel glu = cpu_kernel<supports_glu, nullptr, compute_glu>("cpu.glu");

}  // namespace ggx::cpu::kernels
#endif  // HWY_ONCE
