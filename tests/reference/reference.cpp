// The oracle: a plain, scalar, double-precision evaluator of every operator in docs/ops.md.
//
// Layout of this file: small helpers (indices, parameters, rounding), host tensor I/O, the storage
// model (Evaluator::Storage), one kernel per operator family, the dispatch, and the free helpers
// (nmse, conv2d_direct). Kernels see the logical values (ne0 fastest) of their sources and return
// the logical values of their result; the storage model writes those through views and rounds them
// to the storage type.
#include "reference/reference.h"

#include <ggml-ext-params.h>
#include <ggml-ext.h>
#include <ggml-graph.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <numbers>
#include <set>
#include <string>

namespace ggx::ref {
namespace {

// ---------------------------------------------------------------------------------------------
// Shapes, indices, messages

int64_t count(const ggml_tensor * t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

// Flat logical index of (i0, i1, i2, i3) in a tensor of shape ne (ne0 fastest).
int64_t at(const int64_t * ne, int64_t i0, int64_t i1, int64_t i2 = 0, int64_t i3 = 0) {
    return i0 + ne[0] * (i1 + ne[1] * (i2 + ne[2] * i3));
}

// Calls f(i0, i1, i2, i3) for every element of shape ne in logical order.
template <class F>
void for_each_index(const int64_t * ne, F && f) {
    for (int64_t i3 = 0; i3 < ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < ne[0]; ++i0)
                    f(i0, i1, i2, i3);
}

std::string shape_str(const ggml_tensor * t) {
    return "[" + std::to_string(t->ne[0]) + ", " + std::to_string(t->ne[1]) + ", " +
           std::to_string(t->ne[2]) + ", " + std::to_string(t->ne[3]) + "]";
}

std::string describe(const ggml_tensor * t) {
    if (t == nullptr) return "(null tensor)";
    std::string name = t->name[0] != '\0' ? std::string(t->name) : std::string("<unnamed>");
    const char * op = t->op == GGML_OP_NONE ? "leaf" : ggml_op_desc(t);
    return "tensor '" + name + "' (" + (op ? op : "?") + ", " + ggml_type_name(t->type) + " " + shape_str(t) +
           ")";
}

[[noreturn]] void fail(const ggml_tensor * t, const std::string & reason) {
    throw Error("ggx::ref: " + describe(t) + ": " + reason);
}

// The parameters P of node t (include/ggml-ext-params.h), which must be of an op that records P.
template <class P>
P params_of(const ggml_tensor * t) {
    P p{};
    if (!ggml_ext_get_op_params(t, t->op, &p, sizeof p)) fail(t, "unexpected parameters for this op");
    return p;
}

void require(bool ok, const ggml_tensor * t, const std::string & reason) {
    if (!ok) fail(t, reason);
}

bool same_shape(const ggml_tensor * a, const ggml_tensor * b) {
    return std::equal(a->ne, a->ne + GGML_MAX_DIMS, b->ne);
}

// ---------------------------------------------------------------------------------------------
// Rounding to storage types

bool is_block_type(ggml_type type) { return type == GGML_TYPE_Q8_0 || type == GGML_TYPE_Q4_0; }

// IEEE double -> float, round to nearest even, overflow to infinity (a plain cast of an
// out-of-range double is undefined behaviour in C++).
float to_float(double v) {
    if (std::isnan(v) || std::isinf(v)) return static_cast<float>(v);
    // Half an ulp above FLT_MAX rounds (ties to even) to infinity.
    const double overflow = std::ldexp(1.0, 128) - std::ldexp(1.0, 103);
    if (std::fabs(v) >= overflow)
        return v > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
    if (std::fabs(v) > FLT_MAX) return static_cast<float>(std::copysign(static_cast<double>(FLT_MAX), v));
    return static_cast<float>(v);
}

// Round to nearest, ties to even, saturating to [lo, hi]; NaN -> 0.
double round_integer(double v, double lo, double hi) {
    if (std::isnan(v)) return 0.0;
    if (v <= lo) return lo;
    if (v >= hi) return hi;
    double r = std::floor(v);
    const double frac = v - r;
    if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
    return std::clamp(r, lo, hi);
}

// Value v as stored in one element of a non-block type.
double round_scalar(ggml_type type, double v) {
    switch (type) {
        case GGML_TYPE_F32:
            return static_cast<double>(to_float(v));
        case GGML_TYPE_F16:
            return ggml_fp16_to_fp32(ggml_fp32_to_fp16(to_float(v)));
        case GGML_TYPE_BF16:
            return ggml_bf16_to_fp32(ggml_fp32_to_bf16(to_float(v)));
        case GGML_TYPE_I8:
            return round_integer(v, -128.0, 127.0);
        case GGML_TYPE_I16:
            return round_integer(v, -32768.0, 32767.0);
        case GGML_TYPE_I32:
            return round_integer(v, -2147483648.0, 2147483647.0);
        default:
            throw Error(std::string("ggx::ref: no scalar rounding for type ") + ggml_type_name(type));
    }
}

// Quantize then dequantize the 32 values at block[0..32) in place.
void round_block(ggml_type type, double * block) {
    const int64_t bs = ggml_blck_size(type);
    std::vector<float> x(static_cast<size_t>(bs));
    std::vector<unsigned char> bytes(ggml_type_size(type));
    for (int64_t i = 0; i < bs; ++i)
        x[i] = to_float(block[i]);
    ggml_quantize_row(type, x.data(), bytes.data(), bs);
    ggml_dequantize_row(type, bytes.data(), x.data(), bs);
    for (int64_t i = 0; i < bs; ++i)
        block[i] = x[i];
}

// Round a whole contiguous array of type `type` (logical order; blocks row-contiguous).
void round_all(ggml_type type, std::vector<double> & v) {
    if (is_block_type(type)) {
        const size_t bs = static_cast<size_t>(ggml_blck_size(type));
        for (size_t i = 0; i + bs <= v.size(); i += bs)
            round_block(type, v.data() + i);
    } else {
        for (double & x : v)
            x = round_scalar(type, x);
    }
}

// ---------------------------------------------------------------------------------------------
// Host element access

// Byte offset of element (i0..i3) through strides (block types: i0 selects a block).
size_t byte_offset(const ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const int64_t bs = ggml_blck_size(t->type);
    return static_cast<size_t>(i0 / bs) * t->nb[0] + static_cast<size_t>(i1) * t->nb[1] +
           static_cast<size_t>(i2) * t->nb[2] + static_cast<size_t>(i3) * t->nb[3];
}

double read_scalar(ggml_type type, const unsigned char * p) {
    switch (type) {
        case GGML_TYPE_F32: {
            float f;
            std::memcpy(&f, p, sizeof f);
            return f;
        }
        case GGML_TYPE_F16: {
            ggml_fp16_t h;
            std::memcpy(&h, p, sizeof h);
            return ggml_fp16_to_fp32(h);
        }
        case GGML_TYPE_BF16: {
            ggml_bf16_t h;
            std::memcpy(&h, p, sizeof h);
            return ggml_bf16_to_fp32(h);
        }
        case GGML_TYPE_I8: {
            int8_t i;
            std::memcpy(&i, p, sizeof i);
            return i;
        }
        case GGML_TYPE_I16: {
            int16_t i;
            std::memcpy(&i, p, sizeof i);
            return i;
        }
        case GGML_TYPE_I32: {
            int32_t i;
            std::memcpy(&i, p, sizeof i);
            return i;
        }
        default:
            throw Error(std::string("ggx::ref: cannot read elements of type ") + ggml_type_name(type));
    }
}

void write_scalar(ggml_type type, unsigned char * p, double v) {
    const double r = round_scalar(type, v);
    switch (type) {
        case GGML_TYPE_F32: {
            const float f = static_cast<float>(r);
            std::memcpy(p, &f, sizeof f);
            return;
        }
        case GGML_TYPE_F16: {
            const ggml_fp16_t h = ggml_fp32_to_fp16(static_cast<float>(r));
            std::memcpy(p, &h, sizeof h);
            return;
        }
        case GGML_TYPE_BF16: {
            const ggml_bf16_t h = ggml_fp32_to_bf16(static_cast<float>(r));
            std::memcpy(p, &h, sizeof h);
            return;
        }
        case GGML_TYPE_I8: {
            const int8_t i = static_cast<int8_t>(r);
            std::memcpy(p, &i, sizeof i);
            return;
        }
        case GGML_TYPE_I16: {
            const int16_t i = static_cast<int16_t>(r);
            std::memcpy(p, &i, sizeof i);
            return;
        }
        case GGML_TYPE_I32: {
            const int32_t i = static_cast<int32_t>(r);
            std::memcpy(p, &i, sizeof i);
            return;
        }
        default:
            throw Error(std::string("ggx::ref: cannot write elements of type ") + ggml_type_name(type));
    }
}

// ---------------------------------------------------------------------------------------------
// Kernels. Each receives the node and the logical values of its sources and returns the logical
// values of the node (written: which of them to store; empty = all).

struct Inputs {
    std::array<std::vector<double>, GGML_MAX_SRC> v;
    const std::vector<double> & operator[](int i) const { return v[static_cast<size_t>(i)]; }
};

struct Output {
    std::vector<double> values;
    std::vector<char> written;  // empty: every element written
};

// Elements of a source read by index: src(i0, i1, i2, i3) with the source's own shape.
struct Src {
    const ggml_tensor * t;
    const std::vector<double> & v;
    double operator()(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const {
        return v[static_cast<size_t>(at(t->ne, i0, i1, i2, i3))];
    }
};

Src src(const ggml_tensor * d, const Inputs & in, int i) {
    require(d->src[i] != nullptr, d, "missing source " + std::to_string(i));
    return Src{d->src[i], in[i]};
}

std::vector<double> zeros(const ggml_tensor * d) {
    return std::vector<double>(static_cast<size_t>(count(d)), 0.0);
}

// DUP, CONT, CPY: flat copy (element i of the result is element i of a).
Output k_copy(const ggml_tensor * d, const Inputs & in) {
    const ggml_tensor * a = d->src[0];
    require(a != nullptr && count(a) == count(d), d, "copy needs a source with as many elements");
    return {in[0], {}};
}

// ADD, SUB, MUL, DIV: b tiled over a.
Output k_binary(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), b = src(d, in, 1);
    require(same_shape(a.t, d), d, "result shape differs from a " + shape_str(a.t));
    require(ggml_can_repeat(b.t, d), d, "b " + shape_str(b.t) + " cannot be tiled");  // empty only over empty
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const double x = a(i0, i1, i2, i3);
        const double y = b(i0 % b.t->ne[0], i1 % b.t->ne[1], i2 % b.t->ne[2], i3 % b.t->ne[3]);
        double z = 0.0;
        switch (d->op) {
            case GGML_OP_ADD:
                z = x + y;
                break;
            case GGML_OP_SUB:
                z = x - y;
                break;
            case GGML_OP_MUL:
                z = x * y;
                break;
            case GGML_OP_DIV:
                z = x / y;
                break;
            default:
                fail(d, "not a binary op");
        }
        r[static_cast<size_t>(at(d->ne, i0, i1, i2, i3))] = z;
    });
    return {r, {}};
}

// Element-wise maps of src[0]: SCALE, SQR, SQRT, CLAMP, UNARY.
double gelu(double x) {
    const double c = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}
double silu(double x) { return x / (1.0 + std::exp(-x)); }
double relu(double x) { return x > 0.0 ? x : 0.0; }
double gelu_quick(double x) { return x / (1.0 + std::exp(-1.702 * x)); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double hyperbolic_tangent(double x) { return std::tanh(x); }

using Activation = double (*)(double);

// The function of a unary sub-op, or nullptr for one the oracle does not know.
Activation unary_activation(int op) {
    switch (op) {
        case GGML_UNARY_OP_RELU:
            return relu;
        case GGML_UNARY_OP_SILU:
            return silu;
        case GGML_UNARY_OP_GELU:
            return gelu;
        case GGML_UNARY_OP_GELU_QUICK:
            return gelu_quick;
        case GGML_UNARY_OP_SIGMOID:
            return sigmoid;
        case GGML_UNARY_OP_TANH:
            return hyperbolic_tangent;
        default:
            return nullptr;
    }
}

// The activation of a GLU sub-op, or nullptr for one the oracle does not know.
Activation glu_activation(int op) {
    switch (op) {
        case GGML_GLU_OP_SWIGLU:
            return silu;
        case GGML_GLU_OP_GEGLU:
            return gelu;
        default:
            return nullptr;
    }
}

Output k_map(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    require(same_shape(a.t, d), d, "result shape differs from a " + shape_str(a.t));
    const Activation activation =
        d->op == GGML_OP_UNARY ? unary_activation(params_of<ggml_ext_unary_params>(d).op) : nullptr;
    if (d->op == GGML_OP_UNARY && !activation)
        fail(d, "unknown unary op " + std::to_string(params_of<ggml_ext_unary_params>(d).op));
    std::vector<double> r = in[0];
    for (double & x : r) {
        switch (d->op) {
            case GGML_OP_SCALE: {
                const auto p = params_of<ggml_ext_scale_params>(d);
                x = x * p.scale + p.bias;
                break;
            }
            case GGML_OP_SQR:
                x = x * x;
                break;
            case GGML_OP_SQRT:
                x = std::sqrt(x);
                break;
            case GGML_OP_CLAMP: {
                const auto p = params_of<ggml_ext_clamp_params>(d);
                x = std::min(std::max(x, static_cast<double>(p.min)), static_cast<double>(p.max));
                break;
            }
            case GGML_OP_UNARY:
                x = activation(x);
                break;
            default:
                fail(d, "not an element-wise op");
        }
    }
    return {r, {}};
}

// SUM, SUM_ROWS, MEAN, ARGMAX.
Output k_reduce(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const int64_t n0 = a.t->ne[0];
    if (d->op == GGML_OP_SUM) {
        double s = 0.0;
        for (double x : a.v)
            s += x;
        return {std::vector<double>(static_cast<size_t>(count(d)), s), {}};
    }
    const int64_t rows = a.t->ne[1] * a.t->ne[2] * a.t->ne[3];
    require(count(d) == rows, d, "expected one result per row of a " + shape_str(a.t));
    std::vector<double> r(static_cast<size_t>(rows));
    for (int64_t row = 0; row < rows; ++row) {
        const double * x = a.v.data() + row * n0;
        if (d->op == GGML_OP_ARGMAX) {
            int64_t best = 0;
            for (int64_t i = 1; i < n0; ++i)
                if (x[i] > x[best]) best = i;
            r[row] = static_cast<double>(best);
        } else {
            double s = 0.0;
            for (int64_t i = 0; i < n0; ++i)
                s += x[i];
            r[row] = d->op == GGML_OP_MEAN ? s / static_cast<double>(n0) : s;
        }
    }
    return {r, {}};
}

// REPEAT: r[i] = a[i mod a.ne].
Output k_repeat(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    require(ggml_can_repeat(a.t, d), d, "a " + shape_str(a.t) + " cannot be tiled");  // empty only to empty
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        r[at(d->ne, i0, i1, i2, i3)] = a(i0 % a.t->ne[0], i1 % a.t->ne[1], i2 % a.t->ne[2], i3 % a.t->ne[3]);
    });
    return {r, {}};
}

// CONCAT along dim.
Output k_concat(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), b = src(d, in, 1);
    const int dim = params_of<ggml_ext_concat_params>(d).dim;
    require(dim >= 0 && dim < GGML_MAX_DIMS, d, "concat dim out of range");
    require(d->ne[dim] == a.t->ne[dim] + b.t->ne[dim], d, "concat size mismatch");
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        int64_t i[4] = {i0, i1, i2, i3};
        double v;
        if (i[dim] < a.t->ne[dim]) {
            v = a(i[0], i[1], i[2], i[3]);
        } else {
            i[dim] -= a.t->ne[dim];
            v = b(i[0], i[1], i[2], i[3]);
        }
        r[at(d->ne, i0, i1, i2, i3)] = v;
    });
    return {r, {}};
}

// PAD: zeros before (lp) and after (rp) each dimension.
Output k_pad(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const auto pad = params_of<ggml_ext_pad_params>(d);
    int64_t lp[4];
    for (int k = 0; k < 4; ++k) {
        lp[k] = pad.pads[k][0];
        const int64_t rp = pad.pads[k][1];
        require(d->ne[k] == a.t->ne[k] + lp[k] + rp, d, "padding does not match the result shape");
    }
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const int64_t j[4] = {i0 - lp[0], i1 - lp[1], i2 - lp[2], i3 - lp[3]};
        bool inside = true;
        for (int k = 0; k < 4; ++k)
            inside = inside && j[k] >= 0 && j[k] < a.t->ne[k];
        if (inside) r[at(d->ne, i0, i1, i2, i3)] = a(j[0], j[1], j[2], j[3]);
    });
    return {r, {}};
}

// UPSCALE (nearest): source index floor(i * a.ne / ne) per dimension.
Output k_upscale(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const int32_t mode = params_of<ggml_ext_upscale_params>(d).mode;
    require(mode == GGML_SCALE_MODE_NEAREST, d, "unknown upscale mode " + std::to_string(mode));
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const int64_t i[4] = {i0, i1, i2, i3};
        int64_t j[4];
        for (int k = 0; k < 4; ++k)
            j[k] = i[k] * a.t->ne[k] / d->ne[k];
        r[at(d->ne, i0, i1, i2, i3)] = a(j[0], j[1], j[2], j[3]);
    });
    return {r, {}};
}

// NORM, RMS_NORM, L2_NORM: per row.
Output k_norm(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    require(same_shape(a.t, d), d, "result shape differs from a");
    const double eps = params_of<ggml_ext_norm_params>(d).eps;
    const int64_t n = a.t->ne[0];
    std::vector<double> r = in[0];
    for (int64_t row = 0; row * n < static_cast<int64_t>(r.size()); ++row) {
        double * x = r.data() + row * n;
        double sum = 0.0, sum2 = 0.0;
        for (int64_t i = 0; i < n; ++i)
            sum += x[i];
        const double mean = sum / static_cast<double>(n);
        if (d->op == GGML_OP_NORM) {
            for (int64_t i = 0; i < n; ++i)
                sum2 += (x[i] - mean) * (x[i] - mean);
            const double inv = 1.0 / std::sqrt(sum2 / static_cast<double>(n) + eps);
            for (int64_t i = 0; i < n; ++i)
                x[i] = (x[i] - mean) * inv;
        } else if (d->op == GGML_OP_RMS_NORM) {
            for (int64_t i = 0; i < n; ++i)
                sum2 += x[i] * x[i];
            const double inv = 1.0 / std::sqrt(sum2 / static_cast<double>(n) + eps);
            for (int64_t i = 0; i < n; ++i)
                x[i] *= inv;
        } else {
            for (int64_t i = 0; i < n; ++i)
                sum2 += x[i] * x[i];
            const double inv = 1.0 / std::max(std::sqrt(sum2), eps);
            for (int64_t i = 0; i < n; ++i)
                x[i] *= inv;
        }
    }
    return {r, {}};
}

// GROUP_NORM: a [W, H, C, N]; groups of ceil(C / G) channels, normalised over W*H*channels.
Output k_group_norm(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    require(same_shape(a.t, d), d, "result shape differs from a");
    const auto group_norm = params_of<ggml_ext_group_norm_params>(d);
    const int64_t groups = group_norm.n_groups;
    const double eps = group_norm.eps;
    const int64_t C = a.t->ne[2];
    require(groups >= 1, d, "n_groups must be >= 1");
    const int64_t per_group = (C + groups - 1) / groups;
    const int64_t plane = a.t->ne[0] * a.t->ne[1];
    std::vector<double> r = in[0];
    for (int64_t n = 0; n < a.t->ne[3]; ++n) {
        for (int64_t c0 = 0; c0 < C; c0 += per_group) {
            const int64_t c1 = std::min(C, c0 + per_group);
            double * x = r.data() + (n * C + c0) * plane;
            const int64_t m = (c1 - c0) * plane;
            double sum = 0.0, sum2 = 0.0;
            for (int64_t i = 0; i < m; ++i)
                sum += x[i];
            const double mean = sum / static_cast<double>(m);
            for (int64_t i = 0; i < m; ++i)
                sum2 += (x[i] - mean) * (x[i] - mean);
            const double inv = 1.0 / std::sqrt(sum2 / static_cast<double>(m) + eps);
            for (int64_t i = 0; i < m; ++i)
                x[i] = (x[i] - mean) * inv;
        }
    }
    return {r, {}};
}

// MUL_MAT: r[m, n, i2, i3] = sum_k a[k, m, i2 / (B2/A2), i3 / (B3/A3)] * b[k, n, i2, i3].
Output k_mul_mat(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), b = src(d, in, 1);
    const int64_t K = a.t->ne[0];
    require(b.t->ne[0] == K, d, "inner dimensions differ");
    require(
        d->ne[0] == a.t->ne[1] && d->ne[1] == b.t->ne[1] && d->ne[2] == b.t->ne[2] && d->ne[3] == b.t->ne[3],
        d, "result shape is not [a.ne1, b.ne1, b.ne2, b.ne3]");
    require(a.t->ne[2] > 0 && a.t->ne[3] > 0 && b.t->ne[2] % a.t->ne[2] == 0 && b.t->ne[3] % a.t->ne[3] == 0,
            d, "a cannot be broadcast over b");
    const int64_t r2 = b.t->ne[2] / a.t->ne[2], r3 = b.t->ne[3] / a.t->ne[3];
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t m, int64_t n, int64_t i2, int64_t i3) {
        double s = 0.0;
        for (int64_t k = 0; k < K; ++k)
            s += a(k, m, i2 / r2, i3 / r3) * b(k, n, i2, i3);
        r[at(d->ne, m, n, i2, i3)] = s;
    });
    return {r, {}};
}

// ALiBi slope of head h of H heads (1 when max_bias <= 0).
double alibi_slope(double max_bias, int64_t h, int64_t H) {
    if (!(max_bias > 0.0)) return 1.0;
    int64_t n = 1;
    while (n * 2 <= H)
        n *= 2;  // 2^floor(log2 H)
    const double m0 = std::pow(2.0, -max_bias / static_cast<double>(n));
    const double m1 = std::pow(2.0, -max_bias / static_cast<double>(2 * n));
    return h < n ? std::pow(m0, static_cast<double>(h + 1))
                 : std::pow(m1, static_cast<double>(2 * (h - n) + 1));
}

// SOFT_MAX: softmax of each row of a * scale + slope * mask; a row that is all -inf gives zeros.
Output k_soft_max(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    require(same_shape(a.t, d), d, "result shape differs from a");
    const ggml_tensor * mask = d->src[1];
    if (mask != nullptr) {
        require(mask->ne[0] == a.t->ne[0] && mask->ne[1] >= a.t->ne[1] && mask->ne[2] > 0 &&
                    mask->ne[3] > 0 && a.t->ne[2] % mask->ne[2] == 0 && a.t->ne[3] % mask->ne[3] == 0,
                d, "mask " + shape_str(mask) + " does not fit a");
    }
    const auto soft_max = params_of<ggml_ext_soft_max_params>(d);
    const double scale = soft_max.scale, max_bias = soft_max.max_bias;
    const int64_t n = a.t->ne[0];
    std::vector<double> r = zeros(d);
    std::vector<double> x(static_cast<size_t>(n));
    for (int64_t i3 = 0; i3 < a.t->ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < a.t->ne[2]; ++i2) {
            const double slope = alibi_slope(max_bias, i2, a.t->ne[2]);
            for (int64_t i1 = 0; i1 < a.t->ne[1]; ++i1) {
                double mx = -std::numeric_limits<double>::infinity();
                for (int64_t i0 = 0; i0 < n; ++i0) {
                    x[i0] = a(i0, i1, i2, i3) * scale;
                    if (mask != nullptr)
                        x[i0] += slope * in[1][at(mask->ne, i0, i1, i2 % mask->ne[2], i3 % mask->ne[3])];
                    mx = std::max(mx, x[i0]);
                }
                if (mx == -std::numeric_limits<double>::infinity()) continue;  // fully masked row: zeros
                double sum = 0.0;
                for (int64_t i0 = 0; i0 < n; ++i0)
                    sum += (x[i0] = std::exp(x[i0] - mx));
                for (int64_t i0 = 0; i0 < n; ++i0)
                    r[at(d->ne, i0, i1, i2, i3)] = x[i0] / sum;
            }
        }
    return {r, {}};
}

// ROPE (with YaRN), see docs/ops.md.
Output k_rope(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), pos = src(d, in, 1);
    require(same_shape(a.t, d), d, "result shape differs from a");
    const ggml_tensor * ff_t = d->src[2];
    const auto rope = params_of<ggml_ext_rope_params>(d);
    const int64_t n_dims = rope.n_dims;
    const int mode = rope.mode;
    const double n_ctx_orig = rope.n_ctx_orig;
    const double base = rope.freq_base, freq_scale = rope.freq_scale, ext_factor = rope.ext_factor;
    const double attn_factor = rope.attn_factor, beta_fast = rope.beta_fast, beta_slow = rope.beta_slow;
    require(mode == GGML_ROPE_TYPE_NORMAL || mode == GGML_ROPE_TYPE_NEOX, d,
            "unknown rope mode " + std::to_string(mode));
    require(n_dims > 0 && n_dims % 2 == 0 && n_dims <= a.t->ne[0], d, "n_dims must be even and <= ne0");
    require(rope.n_offs == 0, d, "rotation offsets (ggml_rope_set_offset) are not evaluated");
    require(pos.t->ne[0] >= a.t->ne[2], d, "fewer positions than tokens");
    if (ff_t != nullptr) require(count(ff_t) >= n_dims / 2, d, "too few frequency factors");

    const double theta_scale = std::pow(base, -2.0 / static_cast<double>(n_dims));
    const auto corr_dim = [&](double n_rot) {
        return static_cast<double>(n_dims) * std::log(n_ctx_orig / (n_rot * 2.0 * std::numbers::pi)) /
               (2.0 * std::log(base));
    };
    const double low = std::max(0.0, std::floor(corr_dim(beta_fast)));
    const double high = std::min(static_cast<double>(n_dims - 1), std::ceil(corr_dim(beta_slow)));
    const auto ramp = [&](double i) {
        const double y = (i - low) / std::max(0.001, high - low);
        return 1.0 - std::min(1.0, std::max(0.0, y));
    };

    std::vector<double> r = in[0];  // channels >= n_dims are copied
    for (int64_t b = 0; b < a.t->ne[3]; ++b)
        for (int64_t t = 0; t < a.t->ne[2]; ++t) {
            const double p = pos(t);
            for (int64_t h = 0; h < a.t->ne[1]; ++h)
                for (int64_t i = 0; i < n_dims / 2; ++i) {
                    const double ff = ff_t != nullptr ? in[2][static_cast<size_t>(i)] : 1.0;
                    const double theta_extrap = p * std::pow(theta_scale, static_cast<double>(i)) / ff;
                    const double theta_interp = freq_scale * theta_extrap;
                    double theta = theta_interp, mscale = attn_factor;
                    if (ext_factor != 0.0) {
                        const double mix = ramp(static_cast<double>(i)) * ext_factor;
                        theta = theta_interp * (1.0 - mix) + theta_extrap * mix;
                        mscale = attn_factor * (1.0 + 0.1 * std::log(1.0 / freq_scale));
                    }
                    const double c = std::cos(theta) * mscale, s = std::sin(theta) * mscale;
                    const int64_t j0 = mode == GGML_ROPE_TYPE_NORMAL ? 2 * i : i;
                    const int64_t j1 = mode == GGML_ROPE_TYPE_NORMAL ? 2 * i + 1 : i + n_dims / 2;
                    const double x0 = a(j0, h, t, b), x1 = a(j1, h, t, b);
                    r[at(d->ne, j0, h, t, b)] = x0 * c - x1 * s;
                    r[at(d->ne, j1, h, t, b)] = x0 * s + x1 * c;
                }
        }
    return {r, {}};
}

// FLASH_ATTN_EXT: q [D, NQ, H, B], k [D, NKV, HK, BK], v [DV, NKV, HK, BV] -> [DV, H, NQ, B].
Output k_flash_attn(const ggml_tensor * d, const Inputs & in) {
    const Src q = src(d, in, 0), k = src(d, in, 1), v = src(d, in, 2);
    const ggml_tensor * mask = d->src[3];
    const int64_t D = q.t->ne[0], NQ = q.t->ne[1], H = q.t->ne[2], B = q.t->ne[3];
    const int64_t NKV = k.t->ne[1], HK = k.t->ne[2], DV = v.t->ne[0];
    require(k.t->ne[0] == D && v.t->ne[1] == NKV && v.t->ne[2] == HK, d, "k/v shapes do not fit q");
    require(HK > 0 && H % HK == 0, d, "H must be a multiple of the kv heads");
    require(k.t->ne[3] > 0 && v.t->ne[3] > 0 && B % k.t->ne[3] == 0 && B % v.t->ne[3] == 0, d,
            "k/v batch does not fit q");
    require(d->ne[0] == DV && d->ne[1] == H && d->ne[2] == NQ && d->ne[3] == B, d,
            "result is not [Dv, H, n_q, B]");
    if (mask != nullptr)
        require(mask->ne[0] == NKV && mask->ne[1] >= NQ && mask->ne[2] > 0 && mask->ne[3] > 0, d,
                "mask " + shape_str(mask) + " does not fit");
    const auto attn = params_of<ggml_ext_flash_attn_ext_params>(d);
    const double scale = attn.scale, max_bias = attn.max_bias, softcap = attn.logit_softcap;
    const int64_t group = H / HK, rk = B / k.t->ne[3], rv = B / v.t->ne[3];
    std::vector<double> r = zeros(d);
    std::vector<double> s(static_cast<size_t>(NKV));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            const double slope = alibi_slope(max_bias, h, H);
            const int64_t hk = h / group;
            for (int64_t t = 0; t < NQ; ++t) {
                double mx = -std::numeric_limits<double>::infinity();
                for (int64_t j = 0; j < NKV; ++j) {
                    double dot = 0.0;
                    for (int64_t c = 0; c < D; ++c)
                        dot += q(c, t, h, b) * k(c, j, hk, b / rk);
                    double score = softcap != 0.0 ? softcap * std::tanh(scale * dot / softcap) : scale * dot;
                    if (mask != nullptr)
                        score += slope * in[3][at(mask->ne, j, t, h % mask->ne[2], b % mask->ne[3])];
                    s[j] = score;
                    mx = std::max(mx, score);
                }
                if (mx == -std::numeric_limits<double>::infinity()) continue;  // every key masked: 0
                double sum = 0.0;
                for (int64_t j = 0; j < NKV; ++j)
                    sum += (s[j] = std::exp(s[j] - mx));
                for (int64_t c = 0; c < DV; ++c) {
                    double acc = 0.0;
                    for (int64_t j = 0; j < NKV; ++j)
                        acc += s[j] * v(c, j, hk, b / rv);
                    r[at(d->ne, c, h, t, b)] = acc / sum;
                }
            }
        }
    return {r, {}};
}

int64_t checked_row(const ggml_tensor * d, double index, int64_t rows) {
    if (!(index >= 0.0 && index < static_cast<double>(rows)))
        fail(d, "row index " + std::to_string(static_cast<long long>(index)) + " out of range [0, " +
                    std::to_string(rows) + ")");
    return static_cast<int64_t>(index);
}

// GET_ROWS: r[:, i, j, k] = a[:, idx[i, j, k], j, k].
Output k_get_rows(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), idx = src(d, in, 1);
    require(d->ne[0] == a.t->ne[0] && d->ne[1] == idx.t->ne[0] && d->ne[2] == idx.t->ne[1] &&
                d->ne[3] == idx.t->ne[2] && d->ne[2] == a.t->ne[2] && d->ne[3] == a.t->ne[3],
            d, "shapes of a " + shape_str(a.t) + " and indices " + shape_str(idx.t) + " do not fit");
    std::vector<double> r = zeros(d);
    for (int64_t k = 0; k < d->ne[3]; ++k)
        for (int64_t j = 0; j < d->ne[2]; ++j)
            for (int64_t i = 0; i < d->ne[1]; ++i) {
                const int64_t row = checked_row(d, idx(i, j, k), a.t->ne[1]);
                for (int64_t e = 0; e < d->ne[0]; ++e)
                    r[at(d->ne, e, i, j, k)] = a(e, row, j, k);
            }
    return {r, {}};
}

// SET_ROWS: a[:, idx[i, j mod C2, k mod C3], j, k] = b[:, i, j, k]; the result views a.
Output k_set_rows(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), b = src(d, in, 1), idx = src(d, in, 2);
    require(same_shape(a.t, d), d, "result shape differs from a");
    require(b.t->ne[0] == a.t->ne[0] && b.t->ne[2] == a.t->ne[2] && b.t->ne[3] == a.t->ne[3] &&
                idx.t->ne[0] == b.t->ne[1] && idx.t->ne[1] > 0 && idx.t->ne[2] > 0,
            d, "shapes of b " + shape_str(b.t) + " and indices " + shape_str(idx.t) + " do not fit");
    Output out{in[0], std::vector<char>(static_cast<size_t>(count(d)), 0)};
    for (int64_t k = 0; k < b.t->ne[3]; ++k)
        for (int64_t j = 0; j < b.t->ne[2]; ++j)
            for (int64_t i = 0; i < b.t->ne[1]; ++i) {
                const int64_t row = checked_row(d, idx(i, j % idx.t->ne[1], k % idx.t->ne[2]), a.t->ne[1]);
                for (int64_t e = 0; e < b.t->ne[0]; ++e) {
                    const size_t o = static_cast<size_t>(at(d->ne, e, row, j, k));
                    out.values[o] = b(e, i, j, k);
                    out.written[o] = 1;
                }
            }
    return out;
}

// GLU: act(x) * g; merged (src[1] NULL) halves of each row, or split act(a) * b.
Output k_glu(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const auto glu = params_of<ggml_ext_glu_params>(d);
    const int op = glu.op;
    const bool swapped = glu.swapped != 0;
    const Activation act = glu_activation(op);
    if (!act) fail(d, "unknown glu op " + std::to_string(op));
    std::vector<double> r = zeros(d);
    if (d->src[1] == nullptr) {
        const int64_t n = d->ne[0];
        require(
            a.t->ne[0] == 2 * n && a.t->ne[1] == d->ne[1] && a.t->ne[2] == d->ne[2] && a.t->ne[3] == d->ne[3],
            d, "merged glu needs a [2 * ne0, ...]");
        for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            const double first = a(i0, i1, i2, i3), second = a(i0 + n, i1, i2, i3);
            const double x = swapped ? second : first, g = swapped ? first : second;
            r[at(d->ne, i0, i1, i2, i3)] = act(x) * g;
        });
    } else {
        const Src b = src(d, in, 1);
        require(same_shape(a.t, d) && same_shape(b.t, d), d, "split glu needs equal shapes");
        for (size_t i = 0; i < r.size(); ++i)
            r[i] = act(a.v[i]) * b.v[i];
    }
    return {r, {}};
}

// IM2COL's index map (1-D: KH = H = OH = 1): calls f(column element, image element), as flat logical
// indices of cols and image, for every element of the columns whose input position lies inside the
// image (2-D: image [W, H, C, N], cols [C*KH*KW, OW, OH, N]; 1-D: [W, C, N], [C*KW, OW, N]).
template <class F>
void for_each_unfolded(const ggml_tensor * d, const ggml_tensor * kernel, const ggml_tensor * image,
                       const ggml_tensor * cols, F && f) {
    require(kernel != nullptr, d, "missing kernel");
    const auto p = params_of<ggml_ext_im2col_params>(d);
    const bool is_2d = p.is_2d != 0;
    const int64_t KW = kernel->ne[0], KH = is_2d ? kernel->ne[1] : 1;
    const int64_t W = image->ne[0], H = is_2d ? image->ne[1] : 1;
    const int64_t C = is_2d ? image->ne[2] : image->ne[1], N = is_2d ? image->ne[3] : image->ne[2];
    const int64_t OW = cols->ne[1], OH = is_2d ? cols->ne[2] : 1;
    require(cols->ne[0] == C * KH * KW && (is_2d ? cols->ne[3] : cols->ne[2]) == N, d,
            "image " + shape_str(image) + " and columns " + shape_str(cols) + " do not fit");
    for (int64_t n = 0; n < N; ++n)
        for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow)
                for (int64_t c = 0; c < C; ++c)
                    for (int64_t kh = 0; kh < KH; ++kh)
                        for (int64_t kw = 0; kw < KW; ++kw) {
                            const int64_t iw = ow * p.s0 + kw * p.d0 - p.p0;
                            const int64_t ih = is_2d ? oh * p.s1 + kh * p.d1 - p.p1 : 0;
                            if (iw < 0 || iw >= W || ih < 0 || ih >= H) continue;
                            const int64_t row = (c * KH + kh) * KW + kw;
                            f(is_2d ? at(cols->ne, row, ow, oh, n) : at(cols->ne, row, ow, n),
                              is_2d ? at(image->ne, iw, ih, c, n) : at(image->ne, iw, c, n));
                        }
}

// IM2COL: r[(c*KH + kh)*KW + kw, ow, oh, n] = x[ow*s0 + kw*d0 - p0, oh*s1 + kh*d1 - p1, c, n] (0 outside).
Output k_im2col(const ggml_tensor * d, const Inputs & in) {
    const Src x = src(d, in, 1);
    std::vector<double> r = zeros(d);
    for_each_unfolded(d, d->src[0], x.t, d, [&](int64_t col, int64_t image) { r[col] = x.v[image]; });
    return {r, {}};
}

// ---------------------------------------------------------------------------------------------
// Convolution family beyond IM2COL: direct and transposed convolutions, the 3-D unfold, the
// scatters (IM2COL_BACK, COL2IM_1D) and pooling. Index conventions are ggml's (docs/ops.md).

// Input position of output position o and tap k along one axis, or -1 outside [0, size).
int64_t tap_at(int64_t o, int64_t k, int64_t stride, int64_t pad, int64_t dilation, int64_t size) {
    const int64_t i = o * stride + k * dilation - pad;
    return i >= 0 && i < size ? i : -1;
}

// CONV_2D: r[ow, oh, o, n] = sum_{c, kh, kw} k[kw, kh, c, o] * x[ow*s0 + kw*d0 - p0, oh*s1 + kh*d1 - p1, c,
// n]; CONV_2D_DW: the same sum over the one channel c = o, with k[kw, kh, 0, o].
Output k_conv_2d(const ggml_tensor * d, const Inputs & in) {
    const Src k = src(d, in, 0), x = src(d, in, 1);
    const auto p = params_of<ggml_ext_conv_2d_params>(d);
    const bool depthwise = d->op == GGML_OP_CONV_2D_DW;
    const bool fits = depthwise ? k.t->ne[2] == 1 && k.t->ne[3] == x.t->ne[2] && d->ne[2] == x.t->ne[2]
                                : k.t->ne[2] == x.t->ne[2] && d->ne[2] == k.t->ne[3];
    require(fits && d->ne[3] == x.t->ne[3], d,
            "shapes of kernel " + shape_str(k.t) + " and input " + shape_str(x.t) + " do not fit");
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t ow, int64_t oh, int64_t o, int64_t n) {
        double acc = 0.0;
        for (int64_t c = depthwise ? o : 0; c < (depthwise ? o + 1 : x.t->ne[2]); ++c)
            for (int64_t kh = 0; kh < k.t->ne[1]; ++kh) {
                const int64_t ih = tap_at(oh, kh, p.s1, p.p1, p.d1, x.t->ne[1]);
                for (int64_t kw = 0; ih >= 0 && kw < k.t->ne[0]; ++kw) {
                    const int64_t iw = tap_at(ow, kw, p.s0, p.p0, p.d0, x.t->ne[0]);
                    if (iw >= 0) acc += k(kw, kh, depthwise ? 0 : c, o) * x(iw, ih, c, n);
                }
            }
        r[at(d->ne, ow, oh, o, n)] = acc;
    });
    return {r, {}};
}

// The 3-D geometry shared by IM2COL_3D and CONV_3D: k [KW, KH, KD, OC*IC], x [W, H, D, N*IC].
struct Conv3d {
    std::array<int64_t, 3> s, p, dil, k, in;
    // Input element (iw, ih, id) of output (ow, oh, od) and tap (kw, kh, kd); false when padding.
    bool tap(const std::array<int64_t, 3> & o, const std::array<int64_t, 3> & t,
             std::array<int64_t, 3> & i) const {
        for (int a = 0; a < 3; ++a) {
            i[a] = tap_at(o[a], t[a], s[a], p[a], dil[a], in[a]);
            if (i[a] < 0) return false;
        }
        return true;
    }
};

Conv3d conv_3d_geometry(const ggml_tensor * k, const ggml_tensor * x, const int32_t * s, const int32_t * p,
                        const int32_t * dil) {
    Conv3d g{};
    for (int a = 0; a < 3; ++a) {
        g.s[a] = s[a], g.p[a] = p[a], g.dil[a] = dil[a];
        g.k[a] = k->ne[a], g.in[a] = x->ne[a];
    }
    return g;
}

// IM2COL_3D: r[((ic*KD + kd)*KH + kh)*KW + kw, ow, oh, n*OD + od] = x[iw, ih, id, n*IC + ic] (0 outside).
Output k_im2col_3d(const ggml_tensor * d, const Inputs & in) {
    const ggml_tensor * kernel = d->src[0];
    const Src x = src(d, in, 1);
    require(kernel != nullptr, d, "missing kernel");
    const auto p = params_of<ggml_ext_im2col_3d_params>(d);
    const int32_t s[3] = {p.s0, p.s1, p.s2}, pad[3] = {p.p0, p.p1, p.p2}, dil[3] = {p.d0, p.d1, p.d2};
    const Conv3d g = conv_3d_geometry(kernel, x.t, s, pad, dil);
    const int64_t IC = p.ic, N = x.t->ne[3] / IC, OD = N > 0 ? d->ne[3] / N : 0;
    const int64_t taps = g.k[0] * g.k[1] * g.k[2];
    require(d->ne[0] == IC * taps && d->ne[3] == OD * N, d, "result shape does not fit");
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t row, int64_t ow, int64_t oh, int64_t nd) {
        const int64_t ic = row / taps, t = row % taps, n = nd / OD, od = nd % OD;
        std::array<int64_t, 3> i{};
        if (g.tap({ow, oh, od}, {t % g.k[0], t / g.k[0] % g.k[1], t / (g.k[0] * g.k[1])}, i))
            r[at(d->ne, row, ow, oh, nd)] = x(i[0], i[1], i[2], n * IC + ic);
    });
    return {r, {}};
}

// CONV_3D: r[ow, oh, od, n*OC + oc] = sum_{ic, kd, kh, kw} k[kw, kh, kd, oc*IC + ic] * x[iw, ih, id, n*IC +
// ic].
Output k_conv_3d(const ggml_tensor * d, const Inputs & in) {
    const Src k = src(d, in, 0), x = src(d, in, 1);
    const auto p = params_of<ggml_ext_conv_3d_params>(d);
    const int32_t s[3] = {p.s0, p.s1, p.s2}, pad[3] = {p.p0, p.p1, p.p2}, dil[3] = {p.d0, p.d1, p.d2};
    const Conv3d g = conv_3d_geometry(k.t, x.t, s, pad, dil);
    const int64_t IC = p.c, OC = p.oc;
    require(k.t->ne[3] == IC * OC && x.t->ne[3] == IC * p.n && d->ne[3] == OC * p.n, d, "shapes do not fit");
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t ow, int64_t oh, int64_t od, int64_t no) {
        const int64_t n = no / OC, oc = no % OC;
        double acc = 0.0;
        for (int64_t ic = 0; ic < IC; ++ic)
            for (int64_t kd = 0; kd < g.k[2]; ++kd)
                for (int64_t kh = 0; kh < g.k[1]; ++kh)
                    for (int64_t kw = 0; kw < g.k[0]; ++kw) {
                        std::array<int64_t, 3> i{};
                        if (g.tap({ow, oh, od}, {kw, kh, kd}, i))
                            acc += k(kw, kh, kd, oc * IC + ic) * x(i[0], i[1], i[2], n * IC + ic);
                    }
        r[at(d->ne, ow, oh, od, no)] = acc;
    });
    return {r, {}};
}

// IM2COL_BACK: the transpose of IM2COL; every column element of the gradient b is added to the
// input position it was read from (2-D: b [C*KH*KW, OW, OH, N] -> [W, H, C, N]; 1-D: b [C*KW, OW, N]
// -> [W, C, N]).
Output k_im2col_back(const ggml_tensor * d, const Inputs & in) {
    const Src b = src(d, in, 1);
    std::vector<double> r = zeros(d);
    for_each_unfolded(d, d->src[0], d, b.t, [&](int64_t col, int64_t image) { r[image] += b.v[col]; });
    return {r, {}};
}

// COL2IM_1D: r[t*s0 + k - p0, oc] += a[oc*K + k, t] for the positions inside the result.
Output k_col2im_1d(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const auto p = params_of<ggml_ext_col2im_1d_params>(d);
    const int64_t K = a.t->ne[0] / p.oc;
    require(d->ne[1] == p.oc && K * p.oc == a.t->ne[0], d, "columns " + shape_str(a.t) + " do not fit");
    std::vector<double> r = zeros(d);
    for (int64_t t = 0; t < a.t->ne[1]; ++t)
        for (int64_t oc = 0; oc < p.oc; ++oc)
            for (int64_t k = 0; k < K; ++k) {
                const int64_t o = tap_at(t, k, p.s0, p.p0, 1, d->ne[0]);
                if (o >= 0) r[at(d->ne, o, oc)] += a(oc * K + k, t);
            }
    return {r, {}};
}

// CONV_TRANSPOSE_1D: r[i*s0 + k, oc] += k[k, oc, ic] * x[i, ic].
Output k_conv_transpose_1d(const ggml_tensor * d, const Inputs & in) {
    const Src k = src(d, in, 0), x = src(d, in, 1);
    const int64_t s0 = params_of<ggml_ext_conv_transpose_1d_params>(d).s0;
    require(
        k.t->ne[2] == x.t->ne[1] && d->ne[1] == k.t->ne[1] && d->ne[0] == (x.t->ne[0] - 1) * s0 + k.t->ne[0],
        d, "shapes do not fit");
    std::vector<double> r = zeros(d);
    for (int64_t ic = 0; ic < x.t->ne[1]; ++ic)
        for (int64_t i = 0; i < x.t->ne[0]; ++i)
            for (int64_t oc = 0; oc < k.t->ne[1]; ++oc)
                for (int64_t t = 0; t < k.t->ne[0]; ++t)
                    r[at(d->ne, i * s0 + t, oc)] += k(t, oc, ic) * x(i, ic);
    return {r, {}};
}

// CONV_TRANSPOSE_2D: r[ix*s + kx, iy*s + ky, oc, n] += k[kx, ky, oc, ic] * x[ix, iy, ic, n].
Output k_conv_transpose_2d(const ggml_tensor * d, const Inputs & in) {
    const Src k = src(d, in, 0), x = src(d, in, 1);
    const int64_t s = params_of<ggml_ext_conv_transpose_2d_params>(d).stride;
    require(k.t->ne[3] == x.t->ne[2] && d->ne[2] == k.t->ne[2] && d->ne[3] == x.t->ne[3], d,
            "shapes do not fit");
    std::vector<double> r = zeros(d);
    for_each_index(x.t->ne, [&](int64_t ix, int64_t iy, int64_t ic, int64_t n) {
        const double v = x(ix, iy, ic, n);
        for (int64_t oc = 0; oc < k.t->ne[2]; ++oc)
            for (int64_t ky = 0; ky < k.t->ne[1]; ++ky)
                for (int64_t kx = 0; kx < k.t->ne[0]; ++kx)
                    r[at(d->ne, ix * s + kx, iy * s + ky, oc, n)] += k(kx, ky, oc, ic) * v;
    });
    return {r, {}};
}

// A pooling window: size, stride and padding (truncated to an integer offset, as ggml) per axis.
struct PoolWindow {
    int64_t k0, k1, s0, s1, p0, p1;
    int op;
};

PoolWindow pool_window(const ggml_tensor * d) {
    if (d->op == GGML_OP_POOL_1D) {
        const auto p = params_of<ggml_ext_pool_1d_params>(d);
        return {p.k0, 1, p.s0, 1, p.p0, 0, p.op};
    }
    const auto p = params_of<ggml_ext_pool_2d_params>(d);
    return {p.k0, p.k1, p.s0, p.s1, static_cast<int64_t>(p.p0), static_cast<int64_t>(p.p1), p.op};
}

// POOL_1D, POOL_2D: max or mean of each window over dims 0 (and 1); positions in the padding are
// skipped by max (an all-padding window gives -FLT_MAX) and count as 0 for the mean (divided by k0*k1).
Output k_pool(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const PoolWindow w = pool_window(d);
    require(d->ne[2] == a.t->ne[2] && d->ne[3] == a.t->ne[3] &&
                (d->op == GGML_OP_POOL_2D || d->ne[1] == a.t->ne[1]),
            d, "result shape does not fit");
    const bool is_max = w.op == GGML_OP_POOL_MAX;
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t ox, int64_t oy, int64_t i2, int64_t i3) {
        double acc = is_max ? -FLT_MAX : 0.0;
        for (int64_t ky = 0; ky < w.k1; ++ky) {
            const int64_t iy = d->op == GGML_OP_POOL_2D ? tap_at(oy, ky, w.s1, w.p1, 1, a.t->ne[1]) : oy;
            for (int64_t kx = 0; iy >= 0 && kx < w.k0; ++kx) {
                const int64_t ix = tap_at(ox, kx, w.s0, w.p0, 1, a.t->ne[0]);
                if (ix < 0) continue;
                const double v = a(ix, iy, i2, i3);
                acc = is_max ? std::max(acc, v) : acc + v;
            }
        }
        r[at(d->ne, ox, oy, i2, i3)] = is_max ? acc : acc / static_cast<double>(w.k0 * w.k1);
    });
    return {r, {}};
}

// POOL_2D_BACK: each gradient element of a goes to the first maximum of its window of af (max) or is
// spread as a / (k0*k1) over the window's positions inside af (avg).
Output k_pool_2d_back(const ggml_tensor * d, const Inputs & in) {
    const Src g = src(d, in, 0), af = src(d, in, 1);
    const PoolWindow w = pool_window(d);
    require(same_shape(af.t, d), d, "result shape differs from af");
    std::vector<double> r = zeros(d);
    for_each_index(g.t->ne, [&](int64_t ox, int64_t oy, int64_t i2, int64_t i3) {
        const double grad = g(ox, oy, i2, i3);
        int64_t best = -1;
        double best_value = -FLT_MAX;
        for (int64_t ky = 0; ky < w.k1; ++ky) {
            const int64_t iy = tap_at(oy, ky, w.s1, w.p1, 1, d->ne[1]);
            for (int64_t kx = 0; iy >= 0 && kx < w.k0; ++kx) {
                const int64_t ix = tap_at(ox, kx, w.s0, w.p0, 1, d->ne[0]);
                if (ix < 0) continue;
                const int64_t o = at(d->ne, ix, iy, i2, i3);
                if (w.op != GGML_OP_POOL_MAX)
                    r[o] += grad / static_cast<double>(w.k0 * w.k1);
                else if (af(ix, iy, i2, i3) > best_value || best < 0)
                    best = o, best_value = af(ix, iy, i2, i3);
            }
        }
        if (best >= 0) r[best] += grad;
    });
    return {r, {}};
}

// TIMESTEP_EMBEDDING: [cos(t f_j) j < half, sin(t f_j) j < half, 0 ...].
Output k_timestep(const ggml_tensor * d, const Inputs & in) {
    const Src t = src(d, in, 0);
    const auto embedding = params_of<ggml_ext_timestep_embedding_params>(d);
    const int64_t dim = embedding.dim;
    const double max_period = embedding.max_period;
    const int64_t half = dim / 2;
    require(d->ne[0] >= 2 * half && d->ne[1] == t.t->ne[0], d, "result shape does not fit");
    std::vector<double> r = zeros(d);
    for (int64_t n = 0; n < d->ne[1]; ++n)
        for (int64_t j = 0; j < half; ++j) {
            const double f =
                std::exp(-std::log(max_period) * static_cast<double>(j) / static_cast<double>(half));
            r[at(d->ne, j, n)] = std::cos(t(n) * f);
            r[at(d->ne, j + half, n)] = std::sin(t(n) * f);
        }
    return {r, {}};
}

// Kernels of extension operators by operator name (register_extension).
struct ExtensionKernels {
    std::mutex mutex;
    std::unordered_map<std::string, ExtensionKernel> by_name;
};
ExtensionKernels & extension_kernels() {
    static ExtensionKernels kernels;
    return kernels;
}

// CUSTOM of an extension operator: the kernel registered under its name.
Output k_extension(const ggml_tensor * d, const Inputs & in) {
    const char * name = ggml_ext_op_name(ggml_ext_node_op(d));
    if (name == nullptr) fail(d, "extension node of an unknown operator");
    ExtensionKernel kernel = nullptr;
    {
        ExtensionKernels & k = extension_kernels();
        std::lock_guard lock(k.mutex);
        if (const auto it = k.by_name.find(name); it != k.by_name.end()) kernel = it->second;
    }
    if (kernel == nullptr) fail(d, std::string("extension operator ") + name + " is not known to the oracle");
    return {kernel(d, std::span<const std::vector<double>>(in.v.data(), in.v.size())), {}};
}

// CUSTOM (CPU callback): run the callback on host copies of the sources.
Output k_custom(const ggml_tensor * d, const Inputs & in) {
    const ggml_custom_kind kind = ggml_get_custom_kind(d);
    if (kind == GGML_CUSTOM_KIND_EXTENSION) return k_extension(d, in);
    ggml_custom_op_t fun = nullptr;
    int n_tasks = 0;
    void * userdata = nullptr;
    if (kind != GGML_CUSTOM_KIND_CPU_CALLBACK || !ggml_get_custom_callback(d, &fun, &n_tasks, &userdata) ||
        fun == nullptr)
        fail(d, "not a CPU-callback custom node");

    size_t mem = 1 << 16;
    for (int i = 0; i < GGML_MAX_SRC; ++i)
        if (d->src[i] != nullptr)
            mem +=
                ggml_tensor_overhead() + 2 * GGML_MEM_ALIGN +
                ggml_row_size(d->src[i]->type, d->src[i]->ne[0]) * static_cast<size_t>(ggml_nrows(d->src[i]));
    mem += ggml_tensor_overhead() + 2 * GGML_MEM_ALIGN +
           ggml_row_size(d->type, d->ne[0]) * static_cast<size_t>(ggml_nrows(d));
    std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx(ggml_init({mem, nullptr, false}), &ggml_free);
    require(ctx != nullptr, d, "cannot create a host context for the callback");

    std::array<ggml_tensor *, GGML_MAX_SRC> copies{};
    for (int i = 0; i < GGML_MAX_SRC; ++i) {
        const ggml_tensor * s = d->src[i];
        if (s == nullptr) continue;
        copies[i] = ggml_new_tensor(ctx.get(), s->type, GGML_MAX_DIMS, s->ne);
        require(copies[i] != nullptr, d, "cannot materialise source " + std::to_string(i));
        ggml_set_name(copies[i], s->name);
        write_tensor(copies[i], in[i]);
    }
    ggml_tensor * dst = ggml_new_tensor(ctx.get(), d->type, GGML_MAX_DIMS, d->ne);
    require(dst != nullptr, d, "cannot materialise the result");
    std::memset(dst->data, 0, ggml_nbytes(dst));
    ggml_set_name(dst, d->name);
    dst->op = d->op;
    std::memcpy(dst->op_params, d->op_params, sizeof dst->op_params);
    for (int i = 0; i < GGML_MAX_SRC; ++i)
        dst->src[i] = copies[i];
    fun(dst, 0, 1, userdata);
    return {read_tensor(dst), {}};
}

using Kernel = Output (*)(const ggml_tensor *, const Inputs &);

Kernel kernel_for(ggml_op op) {
    switch (op) {
        case GGML_OP_DUP:
        case GGML_OP_CONT:
        case GGML_OP_CPY:
            return k_copy;
        case GGML_OP_ADD:
        case GGML_OP_SUB:
        case GGML_OP_MUL:
        case GGML_OP_DIV:
            return k_binary;
        case GGML_OP_SCALE:
        case GGML_OP_SQR:
        case GGML_OP_SQRT:
        case GGML_OP_CLAMP:
        case GGML_OP_UNARY:
            return k_map;
        case GGML_OP_SUM:
        case GGML_OP_SUM_ROWS:
        case GGML_OP_MEAN:
        case GGML_OP_ARGMAX:
            return k_reduce;
        case GGML_OP_REPEAT:
            return k_repeat;
        case GGML_OP_CONCAT:
            return k_concat;
        case GGML_OP_NORM:
        case GGML_OP_RMS_NORM:
        case GGML_OP_L2_NORM:
            return k_norm;
        case GGML_OP_GROUP_NORM:
            return k_group_norm;
        case GGML_OP_MUL_MAT:
            return k_mul_mat;
        case GGML_OP_SOFT_MAX:
            return k_soft_max;
        case GGML_OP_ROPE:
            return k_rope;
        case GGML_OP_FLASH_ATTN_EXT:
            return k_flash_attn;
        case GGML_OP_GET_ROWS:
            return k_get_rows;
        case GGML_OP_SET_ROWS:
            return k_set_rows;
        case GGML_OP_GLU:
            return k_glu;
        case GGML_OP_IM2COL:
            return k_im2col;
        case GGML_OP_IM2COL_BACK:
            return k_im2col_back;
        case GGML_OP_IM2COL_3D:
            return k_im2col_3d;
        case GGML_OP_COL2IM_1D:
            return k_col2im_1d;
        case GGML_OP_CONV_2D:
        case GGML_OP_CONV_2D_DW:
            return k_conv_2d;
        case GGML_OP_CONV_3D:
            return k_conv_3d;
        case GGML_OP_CONV_TRANSPOSE_1D:
            return k_conv_transpose_1d;
        case GGML_OP_CONV_TRANSPOSE_2D:
            return k_conv_transpose_2d;
        case GGML_OP_POOL_1D:
        case GGML_OP_POOL_2D:
            return k_pool;
        case GGML_OP_POOL_2D_BACK:
            return k_pool_2d_back;
        case GGML_OP_PAD:
            return k_pad;
        case GGML_OP_UPSCALE:
            return k_upscale;
        case GGML_OP_TIMESTEP_EMBEDDING:
            return k_timestep;
        case GGML_OP_CUSTOM:
            return k_custom;
        default:
            return nullptr;
    }
}

bool is_view_op(ggml_op op) {
    return op == GGML_OP_RESHAPE || op == GGML_OP_VIEW || op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE;
}

}  // namespace

// -------------------------------------------------------------------------------------------------
// Storage model

struct Evaluator::Storage {
    static const ggml_tensor * owner_of(const ggml_tensor * t) {
        return t->view_src != nullptr ? t->view_src : t;
    }

    // Whether each element of the owner sits at its dense byte offset.
    static bool dense(const ggml_tensor * owner) {
        const int64_t bs = ggml_blck_size(owner->type);
        size_t expect = ggml_type_size(owner->type);
        for (int k = 0; k < GGML_MAX_DIMS; ++k) {
            if (owner->ne[k] != 1 && owner->nb[k] != expect) return false;
            expect *= static_cast<size_t>(k == 0 ? owner->ne[0] / bs : owner->ne[k]);
        }
        return true;
    }

    // Owners are dense, or (results that keep an operand's layout, such as a channels-first
    // CONV_2D_DW) a permutation of dense dims of an unquantized type; storage holds the values in
    // byte order.
    static void check_owner(const ggml_tensor * owner) {
        if (dense(owner)) return;
        std::array<int, GGML_MAX_DIMS> order{0, 1, 2, 3};
        std::sort(order.begin(), order.end(), [&](int a, int b) { return owner->nb[a] < owner->nb[b]; });
        size_t expect = ggml_type_size(owner->type);
        bool permuted = !is_block_type(owner->type);
        for (int k : order) {
            permuted = permuted && (owner->ne[k] == 1 || owner->nb[k] == expect);
            expect *= static_cast<size_t>(owner->ne[k]);
        }
        if (!permuted)
            fail(owner, "storage owner is neither contiguous nor a permutation of a contiguous layout");
    }

    // Owner element index of every logical element of t.
    static std::vector<size_t> map(const ggml_tensor * t) {
        const ggml_tensor * owner = owner_of(t);
        check_owner(owner);
        std::vector<size_t> idx(static_cast<size_t>(count(t)));
        if (t == owner && dense(owner)) {
            for (size_t i = 0; i < idx.size(); ++i)
                idx[i] = i;
            return idx;
        }
        if (t->type != owner->type)
            fail(t, std::string("view type differs from its owner's (") + ggml_type_name(owner->type) + ")");
        const int64_t bs = ggml_blck_size(t->type);
        const size_t ts = ggml_type_size(t->type);
        const size_t n_owner = static_cast<size_t>(count(owner));
        for_each_index(t->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            const size_t byte = (t == owner ? 0 : t->view_offs) + byte_offset(t, i0, i1, i2, i3);
            if (byte % ts != 0) fail(t, "view element not aligned to an owner element");
            const size_t o = (byte / ts) * static_cast<size_t>(bs) + static_cast<size_t>(i0 % bs);
            if (o >= n_owner) fail(t, "view element outside its owner " + describe(owner));
            idx[static_cast<size_t>(at(t->ne, i0, i1, i2, i3))] = o;
        });
        return idx;
    }

    static void load_leaf(Evaluator & ev, const ggml_tensor * owner) {
        if (auto it = ev.inputs_.find(owner); it != ev.inputs_.end()) {
            ev.owners_[owner] = it->second;
        } else if (owner->data != nullptr) {
            if (!dense(owner)) fail(owner, "leaf storage is not contiguous");
            ev.owners_[owner] = read_tensor(owner);
        } else {
            fail(owner, "leaf has neither set_input values nor host data");
        }
    }

    // Storage of an owner, loading a leaf owner on first use.
    static std::vector<double> & ensure(Evaluator & ev, const ggml_tensor * owner) {
        if (auto it = ev.owners_.find(owner); it != ev.owners_.end()) return it->second;
        if (owner->op != GGML_OP_NONE) fail(owner, "used before it was computed");
        load_leaf(ev, owner);
        return ev.owners_.at(owner);
    }

    static std::vector<double> get(Evaluator & ev, const ggml_tensor * t) {
        const ggml_tensor * owner = owner_of(t);
        const std::vector<double> & s = ensure(ev, owner);
        if (t == owner && dense(owner)) return s;
        const std::vector<size_t> idx = map(t);
        std::vector<double> out(idx.size());
        for (size_t i = 0; i < idx.size(); ++i)
            out[i] = s[idx[i]];
        return out;
    }

    // Write the logical values of t (those marked in written, or all) into its owner, rounded to
    // the owner's type; quantized owners re-quantize every block that was touched.
    static void store(Evaluator & ev, const ggml_tensor * t, const Output & out) {
        const ggml_tensor * owner = owner_of(t);
        if (out.values.size() != static_cast<size_t>(count(t)))
            fail(t, "kernel produced a wrong number of values");
        if (t == owner) {
            check_owner(owner);
            ev.owners_[owner].assign(out.values.size(), 0.0);
        }
        std::vector<double> & s = ensure(ev, owner);
        const std::vector<size_t> idx = map(t);
        const bool blocks = is_block_type(owner->type);
        const size_t bs = static_cast<size_t>(ggml_blck_size(owner->type));
        std::set<size_t> touched;
        for (size_t i = 0; i < idx.size(); ++i) {
            if (!out.written.empty() && !out.written[i]) continue;
            if (blocks) {
                s[idx[i]] = out.values[i];
                touched.insert(idx[i] / bs);
            } else {
                s[idx[i]] = round_scalar(owner->type, out.values[i]);
            }
        }
        for (size_t blk : touched)
            round_block(owner->type, s.data() + blk * bs);
        if (t != owner && owner->op == GGML_OP_NONE) ev.written_.insert(owner);
    }

    static void eval(Evaluator & ev, const ggml_tensor * node) {
        if (is_view_op(node->op)) {
            if (node->view_src == nullptr) fail(node, "view node without a storage owner");
            ensure(ev, node->view_src);
            map(node);  // validates the view against its owner
            return;
        }
        const Kernel kernel = kernel_for(node->op);
        if (kernel == nullptr) fail(node, "operator not supported by the oracle");
        Inputs in;
        for (int i = 0; i < GGML_MAX_SRC; ++i)
            if (node->src[i] != nullptr) in.v[static_cast<size_t>(i)] = get(ev, node->src[i]);
        store(ev, node, kernel(node, in));
    }
};

bool evaluates(ggml_op op) { return op == GGML_OP_NONE || is_view_op(op) || kernel_for(op) != nullptr; }
bool evaluates(ggml_unary_op op) { return unary_activation(op) != nullptr; }
bool evaluates(ggml_glu_op op) { return glu_activation(op) != nullptr; }

bool register_extension(const char * op_name, ExtensionKernel kernel) {
    if (op_name == nullptr || kernel == nullptr) return false;
    ExtensionKernels & k = extension_kernels();
    std::lock_guard lock(k.mutex);
    return k.by_name.emplace(op_name, kernel).second;
}

void Evaluator::set_input(const ggml_tensor * tensor, std::vector<double> values) {
    if (tensor == nullptr) throw Error("ggx::ref: set_input on a null tensor");
    if (tensor->view_src != nullptr) fail(tensor, "set_input needs a storage owner, not a view");
    if (values.size() != static_cast<size_t>(count(tensor)))
        fail(tensor, "set_input got " + std::to_string(values.size()) + " values for " +
                         std::to_string(count(tensor)) + " elements");
    round_all(tensor->type, values);
    inputs_[tensor] = values;
    owners_[tensor] = std::move(values);
    written_.erase(tensor);
}

void Evaluator::compute(const ggml_cgraph * graph) {
    if (graph == nullptr) throw Error("ggx::ref: compute on a null graph");
    for (int i = 0; i < ggml_graph_n_leafs(graph); ++i) {
        const ggml_tensor * leaf = ggml_graph_leaf(graph, i);
        if (leaf == nullptr) continue;
        const ggml_tensor * owner = Storage::owner_of(leaf);
        if (owner->op != GGML_OP_NONE || written_.count(owner) != 0) continue;
        Storage::load_leaf(*this, owner);
    }
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        const ggml_tensor * node = ggml_graph_node(graph, i);
        if (node != nullptr) Storage::eval(*this, node);
    }
}

std::vector<double> Evaluator::values(const ggml_tensor * tensor) const {
    if (tensor == nullptr) throw Error("ggx::ref: values of a null tensor");
    const ggml_tensor * owner = Storage::owner_of(tensor);
    const auto it = owners_.find(owner);
    if (it == owners_.end()) fail(tensor, "no values known (not computed, no input)");
    if (tensor == owner && Storage::dense(owner)) return it->second;
    const std::vector<size_t> idx = Storage::map(tensor);
    std::vector<double> out(idx.size());
    for (size_t i = 0; i < idx.size(); ++i)
        out[i] = it->second[idx[i]];
    return out;
}

// -------------------------------------------------------------------------------------------------
// Host tensor I/O

std::vector<double> read_tensor(const ggml_tensor * tensor) {
    if (tensor == nullptr) throw Error("ggx::ref: read_tensor of a null tensor");
    if (tensor->data == nullptr) fail(tensor, "read_tensor needs host data");
    const auto * base = static_cast<const unsigned char *>(tensor->data);
    std::vector<double> out(static_cast<size_t>(count(tensor)));
    if (is_block_type(tensor->type)) {
        const int64_t bs = ggml_blck_size(tensor->type);
        std::vector<float> buf(static_cast<size_t>(bs));
        for_each_index(tensor->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            if (i0 % bs != 0) return;
            ggml_dequantize_row(tensor->type, base + byte_offset(tensor, i0, i1, i2, i3), buf.data(), bs);
            for (int64_t j = 0; j < bs; ++j)
                out[static_cast<size_t>(at(tensor->ne, i0 + j, i1, i2, i3))] = buf[j];
        });
    } else {
        for_each_index(tensor->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            out[static_cast<size_t>(at(tensor->ne, i0, i1, i2, i3))] =
                read_scalar(tensor->type, base + byte_offset(tensor, i0, i1, i2, i3));
        });
    }
    return out;
}

void write_tensor(ggml_tensor * tensor, std::span<const double> values) {
    if (tensor == nullptr) throw Error("ggx::ref: write_tensor of a null tensor");
    if (tensor->data == nullptr) fail(tensor, "write_tensor needs host data");
    if (values.size() != static_cast<size_t>(count(tensor)))
        fail(tensor, "write_tensor got " + std::to_string(values.size()) + " values for " +
                         std::to_string(count(tensor)) + " elements");
    auto * base = static_cast<unsigned char *>(tensor->data);
    if (is_block_type(tensor->type)) {
        const int64_t bs = ggml_blck_size(tensor->type);
        if (tensor->ne[0] % bs != 0) fail(tensor, "ne0 is not a multiple of the block size");
        std::vector<float> buf(static_cast<size_t>(bs));
        for_each_index(tensor->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            if (i0 % bs != 0) return;
            for (int64_t j = 0; j < bs; ++j)
                buf[j] = to_float(values[static_cast<size_t>(at(tensor->ne, i0 + j, i1, i2, i3))]);
            ggml_quantize_row(tensor->type, buf.data(), base + byte_offset(tensor, i0, i1, i2, i3), bs);
        });
    } else {
        for_each_index(tensor->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            write_scalar(tensor->type, base + byte_offset(tensor, i0, i1, i2, i3),
                         values[static_cast<size_t>(at(tensor->ne, i0, i1, i2, i3))]);
        });
    }
}

// -------------------------------------------------------------------------------------------------
// Comparison and the direct convolution

double nmse(std::span<const double> actual, std::span<const double> expected) {
    if (actual.size() != expected.size())
        throw Error("ggx::ref: nmse of " + std::to_string(actual.size()) + " against " +
                    std::to_string(expected.size()) + " values");
    const double inf = std::numeric_limits<double>::infinity();
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < actual.size(); ++i) {
        const double a = actual[i], e = expected[i];
        if (!std::isfinite(a) || !std::isfinite(e)) {
            const bool agree =
                (std::isnan(a) && std::isnan(e)) || (std::isinf(a) && std::isinf(e) && (a > 0) == (e > 0));
            if (!agree) return inf;
            continue;
        }
        num += (a - e) * (a - e);
        den += e * e;
    }
    if (den == 0.0) return num == 0.0 ? 0.0 : inf;
    return num / den;
}

std::vector<double> conv2d_direct(std::span<const double> kernel, const int64_t kernel_ne[4],
                                  std::span<const double> input, const int64_t input_ne[4], int s0, int s1,
                                  int p0, int p1, int d0, int d1) {
    const int64_t KW = kernel_ne[0], KH = kernel_ne[1], C = kernel_ne[2], O = kernel_ne[3];
    const int64_t W = input_ne[0], H = input_ne[1], N = input_ne[3];
    if (input_ne[2] != C) throw Error("ggx::ref: conv2d_direct: kernel and input channels differ");
    if (kernel.size() != static_cast<size_t>(KW * KH * C * O) ||
        input.size() != static_cast<size_t>(W * H * C * N))
        throw Error("ggx::ref: conv2d_direct: value counts do not match the shapes");
    if (s0 < 1 || s1 < 1 || d0 < 1 || d1 < 1 || p0 < 0 || p1 < 0)
        throw Error("ggx::ref: conv2d_direct: invalid stride, dilation or padding");
    const int64_t OW = (W + 2 * p0 - d0 * (KW - 1) - 1) / s0 + 1;
    const int64_t OH = (H + 2 * p1 - d1 * (KH - 1) - 1) / s1 + 1;
    if (OW < 1 || OH < 1) throw Error("ggx::ref: conv2d_direct: empty output");
    const int64_t out_ne[4] = {OW, OH, O, N};
    std::vector<double> out(static_cast<size_t>(OW * OH * O * N), 0.0);
    for_each_index(out_ne, [&](int64_t ow, int64_t oh, int64_t o, int64_t n) {
        double acc = 0.0;
        for (int64_t c = 0; c < C; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
                for (int64_t kw = 0; kw < KW; ++kw) {
                    const int64_t iw = ow * s0 + kw * d0 - p0, ih = oh * s1 + kh * d1 - p1;
                    if (iw < 0 || iw >= W || ih < 0 || ih >= H) continue;
                    acc += kernel[static_cast<size_t>(at(kernel_ne, kw, kh, c, o))] *
                           input[static_cast<size_t>(at(input_ne, iw, ih, c, n))];
                }
        out[static_cast<size_t>(at(out_ne, ow, oh, o, n))] = acc;
    });
    return out;
}

}  // namespace ggx::ref
