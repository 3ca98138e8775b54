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
#include <utility>

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

bool is_block_type(ggml_type type) { return ggml_is_quantized(type); }

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
        case GGML_TYPE_F64:
            return v;
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
        case GGML_TYPE_I64:  // the counts of COUNT_EQUAL: integers far below 2^53, exact in double
            return round_integer(v, -9223372036854775808.0, 9223372036854775807.0);
        default:
            throw Error(std::string("ggx::ref: no scalar rounding for type ") + ggml_type_name(type));
    }
}

// Quantize then dequantize the values of one block at block[0..block size) in place.
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
        case GGML_TYPE_I64: {
            int64_t i;
            std::memcpy(&i, p, sizeof i);
            return static_cast<double>(i);
        }
        case GGML_TYPE_F64: {
            double d;
            std::memcpy(&d, p, sizeof d);
            return d;
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
        case GGML_TYPE_I64: {
            const int64_t i = static_cast<int64_t>(r);
            std::memcpy(p, &i, sizeof i);
            return;
        }
        case GGML_TYPE_F64:
            std::memcpy(p, &r, sizeof r);
            return;
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
    // Sources the op also updates in place (AdamW's moments): source index and all its new values.
    std::vector<std::pair<int, std::vector<double>>> sources = {};
    // The values are already the destination type's (a copy within one type): its blocks are stored
    // as they are, not quantized again (which not every format leaves unchanged).
    bool exact = false;
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
    return {in[0], {}, {}, a->type == d->type};
}

int64_t checked_row(const ggml_tensor * d, double index, int64_t rows) {
    if (!(index >= 0.0 && index < static_cast<double>(rows)))
        fail(d, "row index " + std::to_string(static_cast<long long>(index)) + " out of range [0, " +
                    std::to_string(rows) + ")");
    return static_cast<int64_t>(index);
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double silu_derivative(double x) {
    const double s = sigmoid(x);
    return s * (1.0 + x * (1.0 - s));
}

// ADD, SUB, MUL, DIV: b tiled over a; ADD1 (b one element); SILU_BACK (a = dy, b = x, same shape).
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
            case GGML_OP_ADD1:
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
            case GGML_OP_SILU_BACK:  // x is the gradient dy, y the input
                z = x * silu_derivative(y);
                break;
            default:
                fail(d, "not a binary op");
        }
        r[static_cast<size_t>(at(d->ne, i0, i1, i2, i3))] = z;
    });
    return {r, {}};
}

// Element-wise maps of src[0]: SCALE, SQR, SQRT, CLAMP, LOG, SIN, COS, LEAKY_RELU, FILL, UNARY.
double gelu(double x) {
    const double c = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}
double silu(double x) { return x / (1.0 + std::exp(-x)); }
double relu(double x) { return x > 0.0 ? x : 0.0; }
double gelu_quick(double x) { return x / (1.0 + std::exp(-1.702 * x)); }
double hyperbolic_tangent(double x) { return std::tanh(x); }
double absolute(double x) { return std::fabs(x); }
double sign(double x) { return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : 0.0; }  // NaN gives 0
double negate(double x) { return -x; }
double step(double x) { return x > 0.0 ? 1.0 : 0.0; }
double elu(double x) { return x > 0.0 ? x : std::expm1(x); }
double hardsigmoid(double x) { return std::fmin(1.0, std::fmax(0.0, (x + 3.0) / 6.0)); }  // NaN gives 0
double hardswish(double x) { return x * hardsigmoid(x); }
double exponential(double x) { return std::exp(x); }
double exp_minus_one(double x) { return std::expm1(x); }
double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }
double gelu_erf(double x) { return 0.5 * x * std::erfc(-x / std::numbers::sqrt2); }
double round_down(double x) { return std::floor(x); }
double round_up(double x) { return std::ceil(x); }
double round_half_away(double x) { return std::round(x); }
double round_toward_zero(double x) { return std::trunc(x); }

// XIELU with the coefficients ggml_xielu records (alpha_n already beta + softplus(alpha_n)).
double xielu(double x, const ggml_ext_unary_params & p) {
    if (x > 0.0) return p.alpha_p * x * x + p.beta * x;
    return (std::expm1(std::min(x, static_cast<double>(p.eps))) - x) * p.alpha_n + p.beta * x;
}

using Activation = double (*)(double);

// The function of a unary sub-op other than XIELU (which takes parameters), or nullptr for one the
// oracle does not know.
Activation unary_activation(int op) {
    switch (op) {
        case GGML_UNARY_OP_ABS:
            return absolute;
        case GGML_UNARY_OP_SGN:
            return sign;
        case GGML_UNARY_OP_NEG:
            return negate;
        case GGML_UNARY_OP_STEP:
            return step;
        case GGML_UNARY_OP_TANH:
            return hyperbolic_tangent;
        case GGML_UNARY_OP_ELU:
            return elu;
        case GGML_UNARY_OP_RELU:
            return relu;
        case GGML_UNARY_OP_SIGMOID:
            return sigmoid;
        case GGML_UNARY_OP_GELU:
            return gelu;
        case GGML_UNARY_OP_GELU_QUICK:
            return gelu_quick;
        case GGML_UNARY_OP_SILU:
            return silu;
        case GGML_UNARY_OP_HARDSWISH:
            return hardswish;
        case GGML_UNARY_OP_HARDSIGMOID:
            return hardsigmoid;
        case GGML_UNARY_OP_EXP:
            return exponential;
        case GGML_UNARY_OP_EXPM1:
            return exp_minus_one;
        case GGML_UNARY_OP_SOFTPLUS:
            return softplus;
        case GGML_UNARY_OP_GELU_ERF:
            return gelu_erf;
        case GGML_UNARY_OP_FLOOR:
            return round_down;
        case GGML_UNARY_OP_CEIL:
            return round_up;
        case GGML_UNARY_OP_ROUND:
            return round_half_away;
        case GGML_UNARY_OP_TRUNC:
            return round_toward_zero;
        default:
            return nullptr;
    }
}

bool knows_unary(int op) { return op == GGML_UNARY_OP_XIELU || unary_activation(op) != nullptr; }

// The activation of a GLU sub-op of the form act(x) * g, or nullptr (SWIGLU_OAI, or one the oracle
// does not know).
Activation glu_activation(int op) {
    switch (op) {
        case GGML_GLU_OP_REGLU:
            return relu;
        case GGML_GLU_OP_SWIGLU:
            return silu;
        case GGML_GLU_OP_GEGLU:
            return gelu;
        case GGML_GLU_OP_GEGLU_ERF:
            return gelu_erf;
        case GGML_GLU_OP_GEGLU_QUICK:
            return gelu_quick;
        default:
            return nullptr;
    }
}

bool knows_glu(int op) { return op == GGML_GLU_OP_SWIGLU_OAI || glu_activation(op) != nullptr; }

// SWIGLU_OAI: x' = min(x, limit), g' = clamp(g, -limit, limit); x' sigmoid(alpha x') (g' + 1).
double swiglu_oai(double x, double g, const ggml_ext_glu_params & p) {
    const double limit = p.limit;
    const double xc = std::min(x, limit), gc = std::clamp(g, -limit, limit);
    return xc / (1.0 + std::exp(-p.alpha * xc)) * (gc + 1.0);
}

double map_value(const ggml_tensor * d, double x) {
    switch (d->op) {
        case GGML_OP_SCALE: {
            const auto p = params_of<ggml_ext_scale_params>(d);
            return x * p.scale + p.bias;
        }
        case GGML_OP_SQR:
            return x * x;
        case GGML_OP_SQRT:
            return std::sqrt(x);
        case GGML_OP_CLAMP: {
            const auto p = params_of<ggml_ext_clamp_params>(d);
            return std::min(std::max(x, static_cast<double>(p.min)), static_cast<double>(p.max));
        }
        case GGML_OP_LOG:
            return std::log(x);
        case GGML_OP_SIN:
            return std::sin(x);
        case GGML_OP_COS:
            return std::cos(x);
        case GGML_OP_LEAKY_RELU:
            return x > 0.0 ? x : params_of<ggml_ext_leaky_relu_params>(d).negative_slope * x;
        case GGML_OP_FILL:
            return params_of<ggml_ext_fill_params>(d).c;
        case GGML_OP_UNARY: {
            const auto p = params_of<ggml_ext_unary_params>(d);
            if (p.op == GGML_UNARY_OP_XIELU) return xielu(x, p);
            const Activation activation = unary_activation(p.op);
            if (!activation) fail(d, "unknown unary op " + std::to_string(p.op));
            return activation(x);
        }
        default:
            fail(d, "not an element-wise op");
    }
}

Output k_map(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    require(same_shape(a.t, d), d, "result shape differs from a " + shape_str(a.t));
    std::vector<double> r = in[0];
    for (double & x : r)
        x = map_value(d, x);
    return {r, {}};
}

// ADD_ID: r[i0, i1, i2] = a[i0, i1, i2] + b[i0, ids[i1, i2]].
Output k_add_id(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), b = src(d, in, 1), ids = src(d, in, 2);
    require(same_shape(a.t, d) && b.t->ne[0] == a.t->ne[0] && ids.t->ne[0] == a.t->ne[1] &&
                ids.t->ne[1] == a.t->ne[2],
            d, "shapes of a, b " + shape_str(b.t) + " and ids " + shape_str(ids.t) + " do not fit");
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const int64_t row = checked_row(d, ids(i1, i2), b.t->ne[1]);
        r[at(d->ne, i0, i1, i2, i3)] = a(i0, i1, i2, i3) + b(i0, row);
    });
    return {r, {}};
}

// ACC (b added) and SET (b written) over the region of a with b's shape, strides nb1..nb3 and
// byte offset, taken in a's contiguous layout.
Output k_region(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), b = src(d, in, 1);
    require(same_shape(a.t, d), d, "result shape differs from a " + shape_str(a.t));
    const auto p = params_of<ggml_ext_acc_params>(d);
    const int64_t size = static_cast<int64_t>(ggml_type_size(d->type));
    std::vector<double> r = in[0];
    for_each_index(b.t->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const int64_t byte = p.offset + i0 * size + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3;
        require(byte % size == 0 && byte / size < count(d), d, "region outside a");
        double & x = r[static_cast<size_t>(byte / size)];
        x = d->op == GGML_OP_ACC ? x + b(i0, i1, i2, i3) : b(i0, i1, i2, i3);
    });
    return {r, {}};
}

// OPT_STEP_SGD (a, grad, [alpha, wd]) and OPT_STEP_ADAMW (a, grad, m, v, [alpha, beta1, beta2, eps,
// wd, beta1h, beta2h]): the updated a; AdamW also updates m and v in place.
Output k_opt_step(const ggml_tensor * d, const Inputs & in) {
    const bool adamw = d->op == GGML_OP_OPT_STEP_ADAMW;
    const std::vector<double> & hyper = in[adamw ? 4 : 2];
    require(hyper.size() == (adamw ? 7u : 2u), d, "wrong number of optimizer parameters");
    const double alpha = hyper[0], wd = adamw ? hyper[4] : hyper[1];
    Output out{in[0], {}};
    std::vector<double> m, v;
    if (adamw) {
        m = in[2];
        v = in[3];
    }
    for (size_t i = 0; i < out.values.size(); ++i) {
        const double g = in[1][i];
        double step = g;
        if (adamw) {
            m[i] = m[i] * hyper[1] + g * (1.0 - hyper[1]);
            v[i] = v[i] * hyper[2] + g * g * (1.0 - hyper[2]);
            step = m[i] * hyper[5] / (std::sqrt(v[i] * hyper[6]) + hyper[3]);
        }
        out.values[i] = out.values[i] * (1.0 - alpha * wd) - alpha * step;
    }
    if (adamw) out.sources = {{2, std::move(m)}, {3, std::move(v)}};
    return out;
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

// CUMSUM, COUNT_EQUAL, ARGSORT, TOP_K, CROSS_ENTROPY_LOSS(_BACK).

// The rows of a source, ne0 values each.
int64_t rows_of(const ggml_tensor * t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

// CUMSUM: r[i] = x[0] + ... + x[i] along each row.
Output k_cumsum(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    require(same_shape(a.t, d), d, "result shape differs from a " + shape_str(a.t));
    std::vector<double> r = in[0];
    for (int64_t row = 0; row < rows_of(d); ++row) {
        double s = 0.0;
        for (int64_t i = 0; i < d->ne[0]; ++i) {
            double & x = r[static_cast<size_t>(row * d->ne[0] + i)];
            s += x;
            x = s;
        }
    }
    return {r, {}};
}

// COUNT_EQUAL: the number of positions where a and b are equal (NaN equals nothing).
Output k_count_equal(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), b = src(d, in, 1);
    require(same_shape(a.t, b.t), d, "a and b differ in shape");
    double n = 0.0;
    for (size_t i = 0; i < a.v.size(); ++i)
        n += a.v[i] == b.v[i] ? 1.0 : 0.0;
    return {{n}, {}};
}

// The indices of one row in sort order: ascending or descending values, equal values in index order,
// NaNs last in either order.
std::vector<double> sorted_indices(const double * x, int64_t n, bool descending) {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t i, int64_t j) {
        if (std::isnan(x[i]) || std::isnan(x[j])) return !std::isnan(x[i]) && std::isnan(x[j]);
        return descending ? x[i] > x[j] : x[i] < x[j];
    });
    return {idx.begin(), idx.end()};
}

// ARGSORT (every index of each row, in the node's order) and TOP_K (the first k of a descending sort).
Output k_argsort(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const bool top_k = d->op == GGML_OP_TOP_K;
    require(d->ne[1] == a.t->ne[1] && d->ne[2] == a.t->ne[2] && d->ne[3] == a.t->ne[3] &&
                (top_k ? d->ne[0] <= a.t->ne[0] : d->ne[0] == a.t->ne[0]),
            d, "result shape does not fit a " + shape_str(a.t));
    const bool descending = top_k || params_of<ggml_ext_argsort_params>(d).order == GGML_SORT_ORDER_DESC;
    std::vector<double> r = zeros(d);
    for (int64_t row = 0; row < rows_of(d); ++row) {
        const std::vector<double> order =
            sorted_indices(a.v.data() + row * a.t->ne[0], a.t->ne[0], descending);
        std::copy_n(order.begin(), d->ne[0], r.begin() + row * d->ne[0]);
    }
    return {r, {}};
}

// log softmax of one row of n logits.
std::vector<double> log_softmax(const double * x, int64_t n) {
    const double mx = *std::max_element(x, x + n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i)
        sum += std::exp(x[i] - mx);
    std::vector<double> r(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        r[i] = x[i] - mx - std::log(sum);
    return r;
}

// CROSS_ENTROPY_LOSS(logits a, labels b): -sum_rows sum_i b_i log softmax(a)_i / rows;
// CROSS_ENTROPY_LOSS_BACK(grad, logits, labels): (softmax(logits) - labels) grad / rows.
Output k_cross_entropy(const ggml_tensor * d, const Inputs & in) {
    const bool back = d->op == GGML_OP_CROSS_ENTROPY_LOSS_BACK;
    const Src logits = src(d, in, back ? 1 : 0), labels = src(d, in, back ? 2 : 1);
    require(same_shape(logits.t, labels.t), d, "logits and labels differ in shape");
    const int64_t n = logits.t->ne[0], rows = rows_of(logits.t);
    std::vector<double> r = back ? zeros(d) : std::vector<double>{0.0};
    for (int64_t row = 0; row < rows && n > 0; ++row) {
        const std::vector<double> ls = log_softmax(logits.v.data() + row * n, n);
        for (int64_t i = 0; i < n; ++i) {
            const double label = labels.v[static_cast<size_t>(row * n + i)];
            if (back)
                r[static_cast<size_t>(row * n + i)] = (std::exp(ls[i]) - label) * in[0][0] / rows;
            else
                r[0] -= label * ls[i] / rows;
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

// PAD: zeros (circular: the values from the other end) before (lp) and after (rp) each dimension.
Output k_pad(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const auto pad = params_of<ggml_ext_pad_params>(d);
    int64_t lp[4];
    for (int k = 0; k < 4; ++k) {
        lp[k] = pad.pads[k][0];
        const int64_t rp = pad.pads[k][1];
        require(d->ne[k] == a.t->ne[k] + lp[k] + rp, d, "padding does not match the result shape");
        require(!pad.circular || (lp[k] <= a.t->ne[k] && rp <= a.t->ne[k]), d, "circular padding above ne");
    }
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        int64_t j[4] = {i0 - lp[0], i1 - lp[1], i2 - lp[2], i3 - lp[3]};
        bool inside = true;
        for (int k = 0; k < 4; ++k) {
            if (pad.circular) j[k] = ((j[k] % a.t->ne[k]) + a.t->ne[k]) % a.t->ne[k];
            inside = inside && j[k] >= 0 && j[k] < a.t->ne[k];
        }
        if (inside) r[at(d->ne, i0, i1, i2, i3)] = a(j[0], j[1], j[2], j[3]);
    });
    return {r, {}};
}

// One source index and its weight in an interpolated result element.
struct Tap {
    int64_t index;
    double weight;
};

// The cubic convolution kernel, a = -0.75.
double cubic_weight(double t) {
    constexpr double A = -0.75;
    t = std::fabs(t);
    if (t <= 1.0) return (A + 2.0) * t * t * t - (A + 3.0) * t * t + 1.0;
    if (t < 2.0) return A * t * t * t - 5.0 * A * t * t + 8.0 * A * t - 4.0 * A;
    return 0.0;
}

// The taps of result index i of extent ne from a source extent n along an interpolated dimension (0, 1).
// s = ne / n, o = 1/2 (align corners: s = (ne - 1) / (n - 1) when both exceed 1, o = 0); x = (i + o) / s - o.
std::vector<Tap> interpolation_taps(uint32_t mode, int64_t i, int64_t n, int64_t ne) {
    const uint32_t base = mode & 0xFFu;
    const bool align = (mode & GGML_SCALE_FLAG_ALIGN_CORNERS) != 0, aligned = align && n > 1 && ne > 1;
    if (base == GGML_SCALE_MODE_NEAREST) return {{aligned ? i * (n - 1) / (ne - 1) : i * n / ne, 1.0}};
    const double s = aligned ? static_cast<double>(ne - 1) / static_cast<double>(n - 1)
                             : static_cast<double>(ne) / static_cast<double>(n);
    const double o = align ? 0.0 : 0.5, x = (static_cast<double>(i) + o) / s - o;
    const auto edge = [n](int64_t j) { return std::clamp<int64_t>(j, 0, n - 1); };
    std::vector<Tap> taps;
    if (mode & GGML_SCALE_FLAG_ANTIALIAS) {
        // Triangle filter of half-width max(1, 1/s) around the centre c = x + o, normalised, over
        // ggml's window j in [trunc(c - support + o), trunc(c + support + o)) computed in float as ggml
        // does: with o = 0 its end can fall where the filter is not zero, so the window's float
        // rounding decides whether that element counts.
        const double support = std::max(1.0, 1.0 / s), centre = x + o;
        const float sf = aligned ? static_cast<float>(ne - 1) / static_cast<float>(n - 1)
                                 : static_cast<float>(ne) / static_cast<float>(n);
        const float cf = (static_cast<float>(i) + static_cast<float>(o)) / sf,
                    supf = std::max(1.0f, 1.0f / sf);
        const auto lo = std::max<int64_t>(static_cast<int64_t>(cf - supf + static_cast<float>(o)), 0);
        const auto hi = std::min<int64_t>(static_cast<int64_t>(cf + supf + static_cast<float>(o)), n);
        double total = 0.0;
        for (int64_t j = lo; j < hi; ++j) {
            const double w = std::max(0.0, 1.0 - std::fabs(static_cast<double>(j) + o - centre) / support);
            if (w > 0.0) taps.push_back({j, w});
            total += w;
        }
        for (Tap & t : taps)
            t.weight /= total;
    } else if (base == GGML_SCALE_MODE_BICUBIC) {
        const double x0 = std::floor(x);
        for (int64_t k = -1; k <= 2; ++k)
            taps.push_back(
                {edge(static_cast<int64_t>(x0) + k), cubic_weight(x - x0 - static_cast<double>(k))});
    } else {  // bilinear, clamped to the edge
        const double xc = std::clamp(x, 0.0, static_cast<double>(n - 1)), x0 = std::floor(xc);
        taps.push_back({static_cast<int64_t>(x0), 1.0 - (xc - x0)});
        taps.push_back({edge(static_cast<int64_t>(x0) + 1), xc - x0});
    }
    return taps;
}

// UPSCALE: dims 2, 3 nearest (floor(i * a.ne / ne)); dims 0, 1 by the mode's separable taps.
Output k_upscale(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const auto mode = static_cast<uint32_t>(params_of<ggml_ext_upscale_params>(d).mode);
    require((mode & 0xFFu) < GGML_SCALE_MODE_COUNT, d, "unknown upscale mode " + std::to_string(mode));
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const int64_t j2 = i2 * a.t->ne[2] / d->ne[2], j3 = i3 * a.t->ne[3] / d->ne[3];
        double v = 0.0;
        for (const Tap & y : interpolation_taps(mode, i1, a.t->ne[1], d->ne[1]))
            for (const Tap & x : interpolation_taps(mode, i0, a.t->ne[0], d->ne[0]))
                v += y.weight * x.weight * a(x.index, y.index, j2, j3);
        r[at(d->ne, i0, i1, i2, i3)] = v;
    });
    return {r, {}};
}

// REPEAT_BACK: r[i] = sum of a over the repetitions of r's shape.
Output k_repeat_back(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    require(ggml_can_repeat(d, a.t), d, "result " + shape_str(d) + " does not tile a");
    std::vector<double> r = zeros(d);
    for_each_index(a.t->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        r[at(d->ne, i0 % d->ne[0], i1 % d->ne[1], i2 % d->ne[2], i3 % d->ne[3])] += a(i0, i1, i2, i3);
    });
    return {r, {}};
}

// PAD_REFLECT_1D: each row mirrored about its ends, p0 before and p1 after.
Output k_pad_reflect_1d(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const auto p = params_of<ggml_ext_pad_reflect_1d_params>(d);
    const int64_t n = a.t->ne[0];
    require(p.p0 < n && p.p1 < n && d->ne[0] == n + p.p0 + p.p1, d, "reflection does not fit");
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const int64_t j = std::abs(i0 - p.p0), reflected = j < n ? j : 2 * (n - 1) - j;
        r[at(d->ne, i0, i1, i2, i3)] = a(reflected, i1, i2, i3);
    });
    return {r, {}};
}

// ROLL: r[i] = a[(i - shift) mod ne] per dimension.
Output k_roll(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const auto roll = params_of<ggml_ext_roll_params>(d);
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const int64_t i[4] = {i0, i1, i2, i3};
        int64_t j[4];
        for (int k = 0; k < 4; ++k)
            j[k] = ((i[k] - roll.shifts[k]) % d->ne[k] + d->ne[k]) % d->ne[k];
        r[at(d->ne, i0, i1, i2, i3)] = a(j[0], j[1], j[2], j[3]);
    });
    return {r, {}};
}

// ARANGE: start + i * step.
Output k_arange(const ggml_tensor * d, const Inputs &) {
    const auto p = params_of<ggml_ext_arange_params>(d);
    std::vector<double> r = zeros(d);
    for (size_t i = 0; i < r.size(); ++i)
        r[i] = static_cast<double>(p.start) + static_cast<double>(i) * static_cast<double>(p.step);
    return {r, {}};
}

// WIN_PART: window (px, py) = i3 mod npx, i3 div npx holds a[c, px w + i1, py w + i2] (0 outside a).
Output k_win_part(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const auto p = params_of<ggml_ext_win_part_params>(d);
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const int64_t x = i3 % p.npx * p.w + i1, y = i3 / p.npx * p.w + i2;
        if (x < a.t->ne[1] && y < a.t->ne[2]) r[at(d->ne, i0, i1, i2, i3)] = a(i0, x, y);
    });
    return {r, {}};
}

// WIN_UNPART: r[c, x, y] = a[c, x mod w, y mod w, (y div w) npx + x div w], npx = ceil(W / w).
Output k_win_unpart(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const int64_t w = params_of<ggml_ext_win_unpart_params>(d).w, npx = (d->ne[1] + w - 1) / w;
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        r[at(d->ne, i0, i1, i2, i3)] = a(i0, i1 % w, i2 % w, i2 / w * npx + i1 / w);
    });
    return {r, {}};
}

// GET_REL_POS: r[c, k, q] = a[c, kh - 1 - k + q].
Output k_get_rel_pos(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const int64_t kh = d->ne[1];
    require(a.t->ne[1] == 2 * kh - 1, d, "a.ne1 must be 2 kh - 1");
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        r[at(d->ne, i0, i1, i2, i3)] = a(i0, kh - 1 - i1 + i2);
    });
    return {r, {}};
}

// ADD_REL_POS: r[x + W y, j, b] = a[x + W y, j, b] + pw[x, j mod H, j div H, b] + ph[y, j mod H, j div H, b].
Output k_add_rel_pos(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), pw = src(d, in, 1), ph = src(d, in, 2);
    const int64_t w = pw.t->ne[0], h = pw.t->ne[1];
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        r[at(d->ne, i0, i1, i2, i3)] =
            a(i0, i1, i2) + pw(i0 % w, i1 % h, i1 / h, i2) + ph(i0 / w, i1 % h, i1 / h, i2);
    });
    return {r, {}};
}

// TRI: element (column i0, row i1) kept when in the ggml_tri_type triangle, else 0.
Output k_tri(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    const int32_t type = params_of<ggml_ext_tri_params>(d).type;
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const bool keep = type == GGML_TRI_TYPE_UPPER_DIAG   ? i0 >= i1
                          : type == GGML_TRI_TYPE_UPPER      ? i0 > i1
                          : type == GGML_TRI_TYPE_LOWER_DIAG ? i0 <= i1
                                                             : i0 < i1;
        if (keep) r[at(d->ne, i0, i1, i2, i3)] = a(i0, i1, i2, i3);
    });
    return {r, {}};
}

// DIAG: r[i, j, ·] = a[i, 0, ·] on the diagonal i = j, else 0.
Output k_diag(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        if (i0 == i1) r[at(d->ne, i0, i1, i2, i3)] = a(i0, 0, i2, i3);
    });
    return {r, {}};
}

// SOLVE_TRI: x with a x = b, a lower triangular with a[j, i] the coefficient of row i, column j.
Output k_solve_tri(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), b = src(d, in, 1);
    const int64_t n = a.t->ne[0];
    std::vector<double> r = zeros(d);
    for (int64_t i3 = 0; i3 < d->ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < d->ne[2]; ++i2)
            for (int64_t c = 0; c < d->ne[0]; ++c)
                for (int64_t i = 0; i < n; ++i) {
                    double v = b(c, i, i2, i3);
                    for (int64_t j = 0; j < i; ++j)
                        v -= a(j, i, i2, i3) * r[at(d->ne, c, j, i2, i3)];
                    r[at(d->ne, c, i, i2, i3)] = v / a(i, i, i2, i3);
                }
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

// RMS_NORM_BACK(dy, x): with r = 1/sqrt(mean(x^2) + eps), dx = r * (dy - x * r^2 * mean(x * dy)).
Output k_rms_norm_back(const ggml_tensor * d, const Inputs & in) {
    const Src dy = src(d, in, 0), x = src(d, in, 1);
    require(same_shape(dy.t, d) && same_shape(x.t, d), d, "dy and x must have the result's shape");
    const double eps = params_of<ggml_ext_norm_params>(d).eps;
    const int64_t n = d->ne[0];
    std::vector<double> r = zeros(d);
    for (int64_t row = 0; row * n < static_cast<int64_t>(r.size()); ++row) {
        const double * xv = in[1].data() + row * n;
        const double * g = in[0].data() + row * n;
        double sum2 = 0.0, dot = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            sum2 += xv[i] * xv[i];
            dot += xv[i] * g[i];
        }
        const double ms = sum2 / static_cast<double>(n) + eps;
        const double inv = 1.0 / std::sqrt(ms);
        for (int64_t i = 0; i < n; ++i)
            r[static_cast<size_t>(row * n + i)] = inv * (g[i] - xv[i] * dot / (static_cast<double>(n) * ms));
    }
    return {r, {}};
}

// r[i0, i1, i2, i3] = sum_k x(k, i0, i2 / r2, i3 / r3) * y(k, i1, i2, i3), a (read by x) broadcast
// over b (read by y) in dims 2 and 3: MUL_MAT reads rows of both, OUT_PROD columns.
template <class X, class Y>
Output broadcast_product(const ggml_tensor * d, const Src & a, const Src & b, int64_t K, X && x, Y && y) {
    require(a.t->ne[2] > 0 && a.t->ne[3] > 0 && b.t->ne[2] % a.t->ne[2] == 0 && b.t->ne[3] % a.t->ne[3] == 0,
            d, "a cannot be broadcast over b");
    require(d->ne[2] == b.t->ne[2] && d->ne[3] == b.t->ne[3], d, "result dims 2, 3 are not b's");
    const int64_t r2 = b.t->ne[2] / a.t->ne[2], r3 = b.t->ne[3] / a.t->ne[3];
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        double s = 0.0;
        for (int64_t k = 0; k < K; ++k)
            s += x(k, i0, i2 / r2, i3 / r3) * y(k, i1, i2, i3);
        r[at(d->ne, i0, i1, i2, i3)] = s;
    });
    return {r, {}};
}

// MUL_MAT: r[m, n, i2, i3] = sum_k a[k, m, i2 / (B2/A2), i3 / (B3/A3)] * b[k, n, i2, i3].
Output k_mul_mat(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), b = src(d, in, 1);
    const int64_t K = a.t->ne[0];
    require(b.t->ne[0] == K, d, "inner dimensions differ");
    require(d->ne[0] == a.t->ne[1] && d->ne[1] == b.t->ne[1], d, "result shape is not [a.ne1, b.ne1, ...]");
    return broadcast_product(d, a, b, K, a, b);
}

// MUL_MAT_ID: r[m, e, t] = sum_k as[k, m, ids[e, t]] * b[k, e mod n_b, t].
Output k_mul_mat_id(const ggml_tensor * d, const Inputs & in) {
    const Src as = src(d, in, 0), b = src(d, in, 1), ids = src(d, in, 2);
    const int64_t K = as.t->ne[0], n_as = as.t->ne[2], n_b = b.t->ne[1];
    require(b.t->ne[0] == K && n_b > 0 && ids.t->ne[0] % n_b == 0 && ids.t->ne[1] == b.t->ne[2], d,
            "as, b and ids do not fit");
    require(d->ne[0] == as.t->ne[1] && d->ne[1] == ids.t->ne[0] && d->ne[2] == ids.t->ne[1], d,
            "result shape is not [as.ne1, ids.ne0, ids.ne1]");
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t m, int64_t e, int64_t t, int64_t) {
        const double id = ids(e, t);
        require(id >= 0 && id < static_cast<double>(n_as), d,
                "expert id " + std::to_string(id) + " out of range");
        double s = 0.0;
        for (int64_t k = 0; k < K; ++k)
            s += as(k, m, static_cast<int64_t>(id)) * b(k, e % n_b, t);
        r[at(d->ne, m, e, t)] = s;
    });
    return {r, {}};
}

// OUT_PROD: r[m, p, i2, i3] = sum_n a[m, n, i2 / (B2/A2), i3 / (B3/A3)] * b[p, n, i2, i3].
Output k_out_prod(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), b = src(d, in, 1);
    require(b.t->ne[1] == a.t->ne[1], d, "a.ne1 and b.ne1 differ");
    require(d->ne[0] == a.t->ne[0] && d->ne[1] == b.t->ne[0], d, "result shape is not [a.ne0, b.ne0, ...]");
    const auto column = [](const Src & t) {
        return [&t](int64_t n, int64_t i, int64_t i2, int64_t i3) { return t(i, n, i2, i3); };
    };
    return broadcast_product(d, a, b, a.t->ne[1], column(a), column(b));
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

// SOFT_MAX: softmax of each row of a * scale + slope * mask (sinks: an extra logit per head in the
// sum); a row that is all -inf gives zeros.
Output k_soft_max(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    require(same_shape(a.t, d), d, "result shape differs from a");
    const ggml_tensor * mask = d->src[1];
    if (mask != nullptr) {
        require(mask->ne[0] == a.t->ne[0] && mask->ne[1] >= a.t->ne[1] && mask->ne[2] > 0 &&
                    mask->ne[3] > 0 && a.t->ne[2] % mask->ne[2] == 0 && a.t->ne[3] % mask->ne[3] == 0,
                d, "mask " + shape_str(mask) + " does not fit a");
    }
    const ggml_tensor * sinks = d->src[2];  // one extra logit per head (dim 2) in each row's sum
    if (sinks != nullptr) require(count(sinks) == a.t->ne[2], d, "sinks need one value per head");
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
                if (sinks != nullptr) mx = std::max(mx, in[2][static_cast<size_t>(i2)]);
                if (mx == -std::numeric_limits<double>::infinity()) continue;  // fully masked row: zeros
                double sum = sinks != nullptr ? std::exp(in[2][static_cast<size_t>(i2)] - mx) : 0.0;
                for (int64_t i0 = 0; i0 < n; ++i0)
                    sum += (x[i0] = std::exp(x[i0] - mx));
                for (int64_t i0 = 0; i0 < n; ++i0)
                    r[at(d->ne, i0, i1, i2, i3)] = x[i0] / sum;
            }
        }
    return {r, {}};
}

// SOFT_MAX_BACK(dy, y): dx = scale * y * (dy - sum(y * dy)) per row (max_bias scales only a mask,
// which the forward op's gradient with respect to its input does not involve).
Output k_soft_max_back(const ggml_tensor * d, const Inputs & in) {
    const Src dy = src(d, in, 0), y = src(d, in, 1);
    require(same_shape(dy.t, d) && same_shape(y.t, d), d, "dy and y must have the result's shape");
    const double scale = params_of<ggml_ext_soft_max_params>(d).scale;
    const int64_t n = d->ne[0];
    std::vector<double> r = zeros(d);
    for (int64_t row = 0; row * n < static_cast<int64_t>(r.size()); ++row) {
        const double * g = in[0].data() + row * n;
        const double * yv = in[1].data() + row * n;
        double dot = 0.0;
        for (int64_t i = 0; i < n; ++i)
            dot += yv[i] * g[i];
        for (int64_t i = 0; i < n; ++i)
            r[static_cast<size_t>(row * n + i)] = scale * yv[i] * (g[i] - dot);
    }
    return {r, {}};
}

// DIAG_MASK_INF, DIAG_MASK_ZERO: element (i0, i1) with i0 > n_past + i1 becomes -inf / 0.
Output k_diag_mask(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0);
    require(same_shape(a.t, d), d, "result shape differs from a");
    const int64_t n_past = params_of<ggml_ext_diag_mask_params>(d).n_past;
    const double masked = d->op == GGML_OP_DIAG_MASK_INF ? -std::numeric_limits<double>::infinity() : 0.0;
    std::vector<double> r = in[0];
    for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        if (i0 > n_past + i1) r[at(d->ne, i0, i1, i2, i3)] = masked;
    });
    return {r, {}};
}

// Which position axis (0 t, 1 h, 2 w, 3 e) drives rotation pair i of a multi-axis mode, and the
// exponent of base^(-2/n_dims) in its frequency: MROPE and VISION give consecutive runs of
// sections[0..3] pairs (repeating) to t, h, w, e; IMROPE interleaves t, h, w (pair i of a run goes
// to axis i mod 3 while that axis' section lasts, then to e). VISION counts the exponent from
// the start of the pair's section, the others from pair 0.
std::pair<int, int64_t> rope_axis(int mode, const int32_t * sections, int64_t i) {
    const int64_t s0 = sections[0], s1 = sections[1], s2 = sections[2];
    const int64_t total = s0 + s1 + s2 + sections[3];
    const int64_t sector = i % total;
    if (mode == GGML_ROPE_TYPE_IMROPE) {
        const int64_t lane = sector % 3;
        const int axis = lane == 0 && sector < 3 * s0   ? 0
                         : lane == 1 && sector < 3 * s1 ? 1
                         : lane == 2 && sector < 3 * s2 ? 2
                                                        : 3;
        return {axis, i};
    }
    const int64_t starts[4] = {0, s0, s0 + s1, s0 + s1 + s2};
    int axis = 3;
    while (axis > 0 && sector < starts[axis])
        --axis;
    return {axis, mode == GGML_ROPE_TYPE_VISION ? sector - starts[axis] : i};
}

// ROPE and ROPE_BACK (with YaRN, rotation offset and multi-axis modes), see docs/ops.md.
Output k_rope(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), pos = src(d, in, 1);
    require(same_shape(a.t, d), d, "result shape differs from a");
    const ggml_tensor * ff_t = d->src[2];
    const auto rope = params_of<ggml_ext_rope_params>(d);
    const int64_t n_dims = rope.n_dims, offs = rope.n_offs;
    const int mode = rope.mode;
    const double n_ctx_orig = rope.n_ctx_orig;
    const double base = rope.freq_base, freq_scale = rope.freq_scale, ext_factor = rope.ext_factor;
    const double attn_factor = rope.attn_factor, beta_fast = rope.beta_fast, beta_slow = rope.beta_slow;
    const bool multi =
        mode == GGML_ROPE_TYPE_MROPE || mode == GGML_ROPE_TYPE_IMROPE || mode == GGML_ROPE_TYPE_VISION;
    require(mode == GGML_ROPE_TYPE_NORMAL || mode == GGML_ROPE_TYPE_NEOX || multi, d,
            "unknown rope mode " + std::to_string(mode));
    // VISION rotates pairs (i, i + n_dims) over the whole row; the others n_dims elements.
    const int64_t pairs = mode == GGML_ROPE_TYPE_VISION ? n_dims : n_dims / 2;
    require(n_dims > 0 && n_dims % 2 == 0 && offs >= 0 && offs + 2 * pairs <= a.t->ne[0], d,
            "n_dims must be even and the rotated elements inside a row");
    require(pos.t->ne[0] >= (multi ? 4 : 1) * a.t->ne[2], d, "fewer positions than tokens");
    if (multi) {
        const int32_t * sec = rope.sections;
        require(
            sec[0] >= 0 && sec[1] >= 0 && sec[2] >= 0 && sec[3] >= 0 && sec[0] + sec[1] + sec[2] + sec[3] > 0,
            d, "sections must be >= 0 and not all 0");
    }
    if (ff_t != nullptr) require(count(ff_t) >= pairs, d, "too few frequency factors");
    const double sign = d->op == GGML_OP_ROPE_BACK ? -1.0 : 1.0;  // the gradient turns back

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
    const int64_t T = a.t->ne[2];

    std::vector<double> r = in[0];  // channels outside the rotated ones are copied
    for (int64_t b = 0; b < a.t->ne[3]; ++b)
        for (int64_t t = 0; t < T; ++t) {
            for (int64_t h = 0; h < a.t->ne[1]; ++h)
                for (int64_t i = 0; i < pairs; ++i) {
                    const auto [axis, expo] =
                        multi ? rope_axis(mode, rope.sections, i) : std::pair<int, int64_t>{0, i};
                    const double p = pos(t + axis * T);
                    const double ff = ff_t != nullptr ? in[2][static_cast<size_t>(i)] : 1.0;
                    const double theta_extrap = p * std::pow(theta_scale, static_cast<double>(expo)) / ff;
                    const double theta_interp = freq_scale * theta_extrap;
                    double theta = theta_interp, mscale = attn_factor;
                    if (ext_factor != 0.0) {
                        const double mix = ramp(static_cast<double>(i)) * ext_factor;
                        theta = theta_interp * (1.0 - mix) + theta_extrap * mix;
                        mscale = attn_factor * (1.0 + 0.1 * std::log(1.0 / freq_scale));
                    }
                    const double c = std::cos(theta) * mscale, s = sign * std::sin(theta) * mscale;
                    const int64_t j0 = offs + (mode == GGML_ROPE_TYPE_NORMAL ? 2 * i : i);
                    const int64_t j1 = mode == GGML_ROPE_TYPE_NORMAL ? j0 + 1 : j0 + pairs;
                    const double x0 = a(j0, h, t, b), x1 = a(j1, h, t, b);
                    r[at(d->ne, j0, h, t, b)] = x0 * c - x1 * s;
                    r[at(d->ne, j1, h, t, b)] = x0 * s + x1 * c;
                }
        }
    return {r, {}};
}

// FLASH_ATTN_EXT: q [D, NQ, H, B], k [D, NKV, HK, BK], v [DV, NKV, HK, BV] -> [DV, H, NQ, B]; sinks [H].
Output k_flash_attn(const ggml_tensor * d, const Inputs & in) {
    const Src q = src(d, in, 0), k = src(d, in, 1), v = src(d, in, 2);
    const ggml_tensor *mask = d->src[3], *sinks = d->src[4];
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
    if (sinks != nullptr) require(count(sinks) == H, d, "sinks must hold one value per q head");
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
                // A sink is one more score of the softmax, without a value.
                const double sink = sinks != nullptr ? in[4][static_cast<size_t>(h)] : mx;
                mx = std::max(mx, sink);
                double sum = sinks != nullptr ? std::exp(sink - mx) : 0.0;
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

// LIGHTNING_INDEXER: r[j, t, 0, b] = sum_h w[h, t, 0, b] relu(q[:, h, t, b] . k[:, 0, j, b]) + mask[j, t, 0,
// b mod B'].
Output k_lightning_indexer(const ggml_tensor * d, const Inputs & in) {
    const Src q = src(d, in, 0), k = src(d, in, 1), w = src(d, in, 2), mask = src(d, in, 3);
    const int64_t E = q.t->ne[0], H = q.t->ne[1];
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t j, int64_t t, int64_t, int64_t b) {
        double score = mask(j, t, 0, b % mask.t->ne[3]);
        for (int64_t h = 0; h < H; ++h) {
            double dot = 0.0;
            for (int64_t e = 0; e < E; ++e)
                dot += q(e, h, t, b) * k(e, 0, j, b);
            score += w(h, t, 0, b) * std::max(dot, 0.0);
        }
        r[at(d->ne, j, t, 0, b)] = score;
    });
    return {r, {}};
}

// DSV4_HC_COMB: per token M[a][c] = mixes[2 hc + a + hc c] scale[2] + base[2 hc + a + hc c], softmax over a,
// + eps, then n_iter times: (from the second on) M[a][c] /= sum_a M[a][c] + eps; M[a][c] /= sum_c M[a][c] +
// eps.
Output k_dsv4_hc_comb(const ggml_tensor * d, const Inputs & in) {
    const Src mixes = src(d, in, 0), scale = src(d, in, 1), base = src(d, in, 2);
    const auto p = params_of<ggml_ext_dsv4_hc_comb_params>(d);
    const int64_t hc = d->ne[0];
    const double eps = p.eps;
    std::vector<double> r = zeros(d);
    for (int64_t t = 0; t < d->ne[2]; ++t) {
        auto m = [&](int64_t a, int64_t c) -> double & { return r[at(d->ne, a, c, t)]; };
        for (int64_t c = 0; c < hc; ++c) {
            double top = -std::numeric_limits<double>::infinity();
            for (int64_t a = 0; a < hc; ++a) {
                m(a, c) = mixes(2 * hc + a + hc * c, t) * scale(2) + base(2 * hc + a + hc * c);
                top = std::max(top, m(a, c));
            }
            double sum = 0.0;
            for (int64_t a = 0; a < hc; ++a)
                sum += std::exp(m(a, c) - top);
            for (int64_t a = 0; a < hc; ++a)
                m(a, c) = std::exp(m(a, c) - top) / sum + eps;
        }
        for (int32_t it = 0; it < p.n_iter; ++it) {
            for (int64_t c = 0; c < hc && it > 0; ++c) {
                double sum = eps;
                for (int64_t a = 0; a < hc; ++a)
                    sum += m(a, c);
                for (int64_t a = 0; a < hc; ++a)
                    m(a, c) /= sum;
            }
            for (int64_t a = 0; a < hc; ++a) {
                double sum = eps;
                for (int64_t c = 0; c < hc; ++c)
                    sum += m(a, c);
                for (int64_t c = 0; c < hc; ++c)
                    m(a, c) /= sum;
            }
        }
    }
    return {r, {}};
}

// DSV4_HC_PRE: r[e, t] = sum_s x[e, s, t] w[s, t].
Output k_dsv4_hc_pre(const ggml_tensor * d, const Inputs & in) {
    const Src x = src(d, in, 0), w = src(d, in, 1);
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t e, int64_t t, int64_t, int64_t) {
        double acc = 0.0;
        for (int64_t s = 0; s < x.t->ne[1]; ++s)
            acc += x(e, s, t) * w(s, t);
        r[at(d->ne, e, t)] = acc;
    });
    return {r, {}};
}

// DSV4_HC_POST: r[e, dst, t] = x[e, t] post[dst, t] + sum_s residual[e, s, t] comb[dst, s, t].
Output k_dsv4_hc_post(const ggml_tensor * d, const Inputs & in) {
    const Src x = src(d, in, 0), residual = src(d, in, 1), post = src(d, in, 2), comb = src(d, in, 3);
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t e, int64_t dst, int64_t t, int64_t) {
        double acc = x(e, t) * post(dst, t);
        for (int64_t s = 0; s < residual.t->ne[1]; ++s)
            acc += residual(e, s, t) * comb(dst, s, t);
        r[at(d->ne, e, dst, t)] = acc;
    });
    return {r, {}};
}

// ---------------------------------------------------------------------------------------------
// Recurrent family: SSM_CONV, SSM_SCAN, RWKV_WKV6, GATED_LINEAR_ATTN, RWKV_WKV7, GATED_DELTA_NET.

// SSM_CONV: r[c, t, s] = sum_k sx[t + k, c, s] * w[k, c].
Output k_ssm_conv(const ggml_tensor * d, const Inputs & in) {
    const Src sx = src(d, in, 0), w = src(d, in, 1);
    std::vector<double> r = zeros(d);
    for_each_index(d->ne, [&](int64_t c, int64_t t, int64_t s, int64_t) {
        double acc = 0.0;
        for (int64_t k = 0; k < w.t->ne[0]; ++k)
            acc += sx(t + k, c, s) * w(k, c);
        r[at(d->ne, c, t, s)] = acc;
    });
    return {r, {}};
}

// SSM_SCAN: y [head_dim, H, T, n] then the final states [N, head_dim, H, n].
Output k_ssm_scan(const ggml_tensor * d, const Inputs & in) {
    const Src s0 = src(d, in, 0), x = src(d, in, 1), dt = src(d, in, 2), A = src(d, in, 3);
    const Src B = src(d, in, 4), C = src(d, in, 5), ids = src(d, in, 6);
    const int64_t N = s0.t->ne[0], head_dim = x.t->ne[0], H = x.t->ne[1], T = x.t->ne[2], n = x.t->ne[3];
    const int64_t groups = B.t->ne[1];
    require(groups > 0 && H % groups == 0, d, "n_head must be a multiple of n_group");
    std::vector<double> r = zeros(d);
    const int64_t y_count = count(x.t);
    std::vector<double> h(static_cast<size_t>(N));
    for (int64_t q = 0; q < n; ++q) {
        const int64_t slot = checked_row(d, ids(q), s0.t->ne[3]);
        for (int64_t head = 0; head < H; ++head) {
            const int64_t g = head / (H / groups);
            for (int64_t i = 0; i < head_dim; ++i) {
                for (int64_t e = 0; e < N; ++e)
                    h[e] = s0(e, i, head, slot);
                for (int64_t t = 0; t < T; ++t) {
                    const double raw = dt(head, t, q);
                    const double step = raw > 20.0 ? raw : std::log1p(std::exp(raw));
                    double y = 0.0;
                    for (int64_t e = 0; e < N; ++e) {
                        const double a = A(A.t->ne[0] == 1 ? 0 : e, head);
                        h[e] = h[e] * std::exp(step * a) + B(e, g, t, q) * x(i, head, t, q) * step;
                        y += h[e] * C(e, g, t, q);
                    }
                    r[at(x.t->ne, i, head, t, q)] = y;
                }
                for (int64_t e = 0; e < N; ++e)
                    r[y_count + e + N * (i + head_dim * (head + H * q))] = h[e];
            }
        }
    }
    return {r, {}};
}

// The matrix-state linear attentions: per (sequence, head) a state S[i][j] evolved token by token by
// step(state, token, head, y) which writes the head's S outputs y. Inputs are [S, H, T]; the
// state input holds S * S * H values per sequence (element i * S + j of head h); the result is
// the T outputs of S * H values, then the final states in the input's layout.
template <class Step>
Output linear_attention(const ggml_tensor * d, const Inputs & in, const ggml_tensor * key, int state_src,
                        Step && step) {
    const int64_t S = key->ne[0], H = key->ne[1], T = key->ne[2], n = d->src[state_src]->ne[1];
    require(n > 0 && T % n == 0, d, "the tokens must split evenly over the sequences");
    const std::vector<double> & s0 = in[state_src];
    std::vector<double> r = zeros(d);
    std::vector<double> state(static_cast<size_t>(S * S)), y(static_cast<size_t>(S));
    for (int64_t q = 0; q < n; ++q)
        for (int64_t h = 0; h < H; ++h) {
            const size_t base = static_cast<size_t>((q * H + h) * S * S);
            std::copy_n(s0.begin() + static_cast<std::ptrdiff_t>(base), S * S, state.begin());
            for (int64_t t = q * (T / n); t < (q + 1) * (T / n); ++t) {
                step(state, t, h, y);
                std::copy(y.begin(), y.end(), r.begin() + (t * H + h) * S);
            }
            std::copy(state.begin(), state.end(), r.begin() + static_cast<std::ptrdiff_t>(T * H * S + base));
        }
    return {r, {}};
}

// RWKV_WKV6 (k, v, r, u, w, state): y_j = sum_i r_i (u_i k_i v_j + S_ij); S_ij = w_i S_ij + k_i v_j.
Output k_rwkv_wkv6(const ggml_tensor * d, const Inputs & in) {
    const Src k = src(d, in, 0), v = src(d, in, 1), rr = src(d, in, 2), w = src(d, in, 4);
    const std::vector<double> & u = in[3];
    const int64_t S = k.t->ne[0];
    require(static_cast<int64_t>(u.size()) == S * k.t->ne[1], d, "tf must hold S * H values");
    return linear_attention(d, in, k.t, 5, [&](std::vector<double> & st, int64_t t, int64_t h, auto & y) {
        for (int64_t j = 0; j < S; ++j) {
            double acc = 0.0;
            for (int64_t i = 0; i < S; ++i) {
                const double kv = k(i, h, t) * v(j, h, t);
                acc += rr(i, h, t) * (u[static_cast<size_t>(h * S + i)] * kv + st[i * S + j]);
                st[i * S + j] = w(i, h, t) * st[i * S + j] + kv;
            }
            y[j] = acc;
        }
    });
}

// GATED_LINEAR_ATTN (k, v, q, g, state): S_ij = exp(g_i) S_ij + k_i v_j; y_j = scale sum_i q_i S_ij.
Output k_gated_linear_attn(const ggml_tensor * d, const Inputs & in) {
    const Src k = src(d, in, 0), v = src(d, in, 1), q = src(d, in, 2), g = src(d, in, 3);
    const double scale = params_of<ggml_ext_gated_linear_attn_params>(d).scale;
    const int64_t S = k.t->ne[0];
    return linear_attention(d, in, k.t, 4, [&](std::vector<double> & st, int64_t t, int64_t h, auto & y) {
        for (int64_t j = 0; j < S; ++j) {
            double acc = 0.0;
            for (int64_t i = 0; i < S; ++i) {
                st[i * S + j] = std::exp(g(i, h, t)) * st[i * S + j] + k(i, h, t) * v(j, h, t);
                acc += q(i, h, t) * st[i * S + j];
            }
            y[j] = scale * acc;
        }
    });
}

// RWKV_WKV7 (r, w, k, v, a, b, state), i a value index: S_ij = w_j S_ij + v_i k_j + b_j sum_l a_l S_il;
// y_i = sum_j r_j S_ij.
Output k_rwkv_wkv7(const ggml_tensor * d, const Inputs & in) {
    const Src rr = src(d, in, 0), w = src(d, in, 1), k = src(d, in, 2), v = src(d, in, 3);
    const Src a = src(d, in, 4), b = src(d, in, 5);
    const int64_t S = k.t->ne[0];
    return linear_attention(d, in, k.t, 6, [&](std::vector<double> & st, int64_t t, int64_t h, auto & y) {
        for (int64_t i = 0; i < S; ++i) {
            double sa = 0.0;
            for (int64_t j = 0; j < S; ++j)
                sa += a(j, h, t) * st[i * S + j];
            double acc = 0.0;
            for (int64_t j = 0; j < S; ++j) {
                st[i * S + j] = w(j, h, t) * st[i * S + j] + v(i, h, t) * k(j, h, t) + b(j, h, t) * sa;
                acc += rr(j, h, t) * st[i * S + j];
            }
            y[i] = acc;
        }
    });
}

// GATED_DELTA_NET (q, k, v, g, beta, state, K): per value head h and sequence n (q/k head h mod H_k,
// sequence n / (n_seqs / q.ne3)), with M[j][i] = state[i, j, h, n] (j a value index, i a key index):
// M[j][i] *= exp(g) or exp(g_i); d_j = beta (v_j - sum_i M[j][i] k_i); M[j][i] += k_i d_j;
// o_j = sum_i M[j][i] q_i / sqrt(S). The outputs [S, H, T, n], then K slots [S, S, H, n], slot m the
// state after token T - 1 - m.
Output k_gated_delta_net(const ggml_tensor * d, const Inputs & in) {
    const Src q = src(d, in, 0), k = src(d, in, 1), v = src(d, in, 2), g = src(d, in, 3);
    const Src beta = src(d, in, 4), s0 = src(d, in, 5);
    const int64_t S = v.t->ne[0], H = v.t->ne[1], T = v.t->ne[2], n = v.t->ne[3];
    const int64_t Hk = q.t->ne[1], K = params_of<ggml_ext_gated_delta_net_params>(d).n_states;
    require(K <= std::max<int64_t>(T, 1), d, "more state slots than tokens");
    const bool per_key = g.t->ne[0] == S;
    const double scale = 1.0 / std::sqrt(static_cast<double>(S));
    std::vector<double> r = zeros(d);
    const int64_t outputs = S * H * T * n, slot_size = S * S * H * n;
    std::vector<double> m(static_cast<size_t>(S * S));
    for (int64_t seq = 0; seq < n; ++seq)
        for (int64_t h = 0; h < H; ++h) {
            const int64_t hk = h % Hk, sk = seq / (n / q.t->ne[3]);
            for (int64_t j = 0; j < S; ++j)
                for (int64_t i = 0; i < S; ++i)
                    m[j * S + i] = s0(i, j, h, seq);
            const int64_t head = (seq * H + h) * S * S;
            for (int64_t t = 0; t < T; ++t) {
                for (int64_t j = 0; j < S; ++j) {
                    double u = 0.0;
                    for (int64_t i = 0; i < S; ++i) {
                        m[j * S + i] *= std::exp(g(per_key ? i : 0, h, t, seq));
                        u += m[j * S + i] * k(i, hk, t, sk);
                    }
                    const double delta = beta(0, h, t, seq) * (v(j, h, t, seq) - u);
                    double o = 0.0;
                    for (int64_t i = 0; i < S; ++i) {
                        m[j * S + i] += k(i, hk, t, sk) * delta;
                        o += m[j * S + i] * q(i, hk, t, sk);
                    }
                    r[at(v.t->ne, j, h, t, seq)] = o * scale;
                }
                const int64_t slot = T - 1 - t;
                if (slot < K) std::copy(m.begin(), m.end(), r.begin() + outputs + slot * slot_size + head);
            }
            if (T == 0) std::copy(m.begin(), m.end(), r.begin() + outputs + head);
        }
    return {r, {}};
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

// GET_ROWS_BACK: r [E, R] = 0, then r[:, idx[i]] += a[:, i] for each row i of a.
Output k_get_rows_back(const ggml_tensor * d, const Inputs & in) {
    const Src a = src(d, in, 0), idx = src(d, in, 1);
    require(d->ne[0] == a.t->ne[0] && idx.t->ne[0] == a.t->ne[1], d,
            "shapes of a " + shape_str(a.t) + " and indices " + shape_str(idx.t) + " do not fit");
    std::vector<double> r = zeros(d);
    for (int64_t i = 0; i < a.t->ne[1]; ++i) {
        const int64_t row = checked_row(d, idx(i), d->ne[1]);
        for (int64_t e = 0; e < d->ne[0]; ++e)
            r[at(d->ne, e, row)] += a(e, i);
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
    if (!knows_glu(op)) fail(d, "unknown glu op " + std::to_string(op));
    const Activation act = glu_activation(op);
    const auto value = [&](double x, double g) { return act ? act(x) * g : swiglu_oai(x, g, glu); };
    std::vector<double> r = zeros(d);
    if (d->src[1] == nullptr) {
        const int64_t n = d->ne[0];
        require(
            a.t->ne[0] == 2 * n && a.t->ne[1] == d->ne[1] && a.t->ne[2] == d->ne[2] && a.t->ne[3] == d->ne[3],
            d, "merged glu needs a [2 * ne0, ...]");
        for_each_index(d->ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            const double first = a(i0, i1, i2, i3), second = a(i0 + n, i1, i2, i3);
            const double x = swapped ? second : first, g = swapped ? first : second;
            r[at(d->ne, i0, i1, i2, i3)] = value(x, g);
        });
    } else {
        const Src b = src(d, in, 1);
        require(same_shape(a.t, d) && same_shape(b.t, d), d, "split glu needs equal shapes");
        for (size_t i = 0; i < r.size(); ++i)
            r[i] = value(a.v[i], b.v[i]);
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

// A node rebuilt in host memory: copies of d's sources holding their logical values and a zeroed
// result with d's op and parameters, for running an application's CPU callback on.
struct HostNode {
    std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx{nullptr, &ggml_free};
    std::array<ggml_tensor *, GGML_MAX_SRC> src{};
    ggml_tensor * dst = nullptr;
};

HostNode host_node(const ggml_tensor * d, const Inputs & in) {
    size_t mem = 1 << 16;
    for (int i = 0; i < GGML_MAX_SRC; ++i)
        if (d->src[i] != nullptr)
            mem +=
                ggml_tensor_overhead() + 2 * GGML_MEM_ALIGN +
                ggml_row_size(d->src[i]->type, d->src[i]->ne[0]) * static_cast<size_t>(ggml_nrows(d->src[i]));
    mem += ggml_tensor_overhead() + 2 * GGML_MEM_ALIGN +
           ggml_row_size(d->type, d->ne[0]) * static_cast<size_t>(ggml_nrows(d));
    HostNode h;
    h.ctx.reset(ggml_init({mem, nullptr, false}));
    require(h.ctx != nullptr, d, "cannot create a host context for the callback");
    for (int i = 0; i < GGML_MAX_SRC; ++i) {
        const ggml_tensor * s = d->src[i];
        if (s == nullptr) continue;
        h.src[i] = ggml_new_tensor(h.ctx.get(), s->type, GGML_MAX_DIMS, s->ne);
        require(h.src[i] != nullptr, d, "cannot materialise source " + std::to_string(i));
        ggml_set_name(h.src[i], s->name);
        write_tensor(h.src[i], in[i]);
    }
    h.dst = ggml_new_tensor(h.ctx.get(), d->type, GGML_MAX_DIMS, d->ne);
    require(h.dst != nullptr, d, "cannot materialise the result");
    std::memset(h.dst->data, 0, ggml_nbytes(h.dst));
    ggml_set_name(h.dst, d->name);
    h.dst->op = d->op;
    std::memcpy(h.dst->op_params, d->op_params, sizeof h.dst->op_params);
    for (int i = 0; i < GGML_MAX_SRC; ++i)
        h.dst->src[i] = h.src[i];
    return h;
}

// CUSTOM (CPU callback): run the callback on host copies of the sources, as one task.
Output k_custom(const ggml_tensor * d, const Inputs & in) {
    const ggml_custom_kind kind = ggml_get_custom_kind(d);
    if (kind == GGML_CUSTOM_KIND_EXTENSION) return k_extension(d, in);
    ggml_custom_op_t fun = nullptr;
    int n_tasks = 0;
    void * userdata = nullptr;
    if (kind != GGML_CUSTOM_KIND_CPU_CALLBACK || !ggml_get_custom_callback(d, &fun, &n_tasks, &userdata) ||
        fun == nullptr)
        fail(d, "not a CPU-callback custom node");
    const HostNode h = host_node(d, in);
    fun(h.dst, 0, 1, userdata);
    return {read_tensor(h.dst), {}};
}

// MAP_CUSTOM1..3: the callback on host copies of a (, b, c), as one task.
Output k_map_custom(const ggml_tensor * d, const Inputs & in) {
    const HostNode h = host_node(d, in);
    if (d->op == GGML_OP_MAP_CUSTOM1) {
        const auto p = params_of<ggml_ext_map_custom1_params>(d);
        p.fun(h.dst, h.src[0], 0, 1, p.userdata);
    } else if (d->op == GGML_OP_MAP_CUSTOM2) {
        const auto p = params_of<ggml_ext_map_custom2_params>(d);
        p.fun(h.dst, h.src[0], h.src[1], 0, 1, p.userdata);
    } else {
        const auto p = params_of<ggml_ext_map_custom3_params>(d);
        p.fun(h.dst, h.src[0], h.src[1], h.src[2], 0, 1, p.userdata);
    }
    return {read_tensor(h.dst), {}};
}

using Kernel = Output (*)(const ggml_tensor *, const Inputs &);

Kernel kernel_for(ggml_op op) {
    switch (op) {
        case GGML_OP_DUP:
        case GGML_OP_CONT:
        case GGML_OP_CPY:
            return k_copy;
        case GGML_OP_ADD:
        case GGML_OP_ADD1:
        case GGML_OP_SUB:
        case GGML_OP_MUL:
        case GGML_OP_DIV:
        case GGML_OP_SILU_BACK:
            return k_binary;
        case GGML_OP_SCALE:
        case GGML_OP_SQR:
        case GGML_OP_SQRT:
        case GGML_OP_CLAMP:
        case GGML_OP_LOG:
        case GGML_OP_SIN:
        case GGML_OP_COS:
        case GGML_OP_LEAKY_RELU:
        case GGML_OP_FILL:
        case GGML_OP_UNARY:
            return k_map;
        case GGML_OP_ADD_ID:
            return k_add_id;
        case GGML_OP_ACC:
        case GGML_OP_SET:
            return k_region;
        case GGML_OP_OPT_STEP_ADAMW:
        case GGML_OP_OPT_STEP_SGD:
            return k_opt_step;
        case GGML_OP_SUM:
        case GGML_OP_SUM_ROWS:
        case GGML_OP_MEAN:
        case GGML_OP_ARGMAX:
            return k_reduce;
        case GGML_OP_CUMSUM:
            return k_cumsum;
        case GGML_OP_COUNT_EQUAL:
            return k_count_equal;
        case GGML_OP_ARGSORT:
        case GGML_OP_TOP_K:
            return k_argsort;
        case GGML_OP_CROSS_ENTROPY_LOSS:
        case GGML_OP_CROSS_ENTROPY_LOSS_BACK:
            return k_cross_entropy;
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
        case GGML_OP_MUL_MAT_ID:
            return k_mul_mat_id;
        case GGML_OP_OUT_PROD:
            return k_out_prod;
        case GGML_OP_RMS_NORM_BACK:
            return k_rms_norm_back;
        case GGML_OP_SOFT_MAX_BACK:
            return k_soft_max_back;
        case GGML_OP_DIAG_MASK_INF:
        case GGML_OP_DIAG_MASK_ZERO:
            return k_diag_mask;
        case GGML_OP_ROPE_BACK:
            return k_rope;
        case GGML_OP_SOFT_MAX:
            return k_soft_max;
        case GGML_OP_ROPE:
            return k_rope;
        case GGML_OP_FLASH_ATTN_EXT:
            return k_flash_attn;
        case GGML_OP_LIGHTNING_INDEXER:
            return k_lightning_indexer;
        case GGML_OP_DSV4_HC_COMB:
            return k_dsv4_hc_comb;
        case GGML_OP_DSV4_HC_PRE:
            return k_dsv4_hc_pre;
        case GGML_OP_DSV4_HC_POST:
            return k_dsv4_hc_post;
        case GGML_OP_SSM_CONV:
            return k_ssm_conv;
        case GGML_OP_SSM_SCAN:
            return k_ssm_scan;
        case GGML_OP_RWKV_WKV6:
            return k_rwkv_wkv6;
        case GGML_OP_GATED_LINEAR_ATTN:
            return k_gated_linear_attn;
        case GGML_OP_RWKV_WKV7:
            return k_rwkv_wkv7;
        case GGML_OP_GATED_DELTA_NET:
            return k_gated_delta_net;
        case GGML_OP_GET_ROWS:
            return k_get_rows;
        case GGML_OP_SET_ROWS:
            return k_set_rows;
        case GGML_OP_GET_ROWS_BACK:
            return k_get_rows_back;
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
        case GGML_OP_REPEAT_BACK:
            return k_repeat_back;
        case GGML_OP_PAD_REFLECT_1D:
            return k_pad_reflect_1d;
        case GGML_OP_ROLL:
            return k_roll;
        case GGML_OP_ARANGE:
            return k_arange;
        case GGML_OP_WIN_PART:
            return k_win_part;
        case GGML_OP_WIN_UNPART:
            return k_win_unpart;
        case GGML_OP_GET_REL_POS:
            return k_get_rel_pos;
        case GGML_OP_ADD_REL_POS:
            return k_add_rel_pos;
        case GGML_OP_TRI:
            return k_tri;
        case GGML_OP_DIAG:
            return k_diag;
        case GGML_OP_SOLVE_TRI:
            return k_solve_tri;
        case GGML_OP_CUSTOM:
            return k_custom;
        case GGML_OP_MAP_CUSTOM1:
        case GGML_OP_MAP_CUSTOM2:
        case GGML_OP_MAP_CUSTOM3:
            return k_map_custom;
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
        if (!out.exact) {
            for (size_t blk : touched)
                round_block(owner->type, s.data() + blk * bs);
        }
        if (t != owner && owner->op == GGML_OP_NONE) ev.written_.insert(owner);
    }

    static void eval(Evaluator & ev, const ggml_tensor * node) {
        if (node->op == GGML_OP_NONE) {  // a parameter (ggml_set_param): an input listed among the nodes
            if (ev.written_.count(node) == 0) load_leaf(ev, node);
            return;
        }
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
        const Output out = kernel(node, in);
        store(ev, node, out);
        for (const auto & [i, values] : out.sources) {
            const ggml_tensor * updated = node->src[i];
            store(ev, updated, Output{values, {}});
            if (owner_of(updated)->op == GGML_OP_NONE) ev.written_.insert(owner_of(updated));
        }
    }
};

bool evaluates(ggml_op op) { return op == GGML_OP_NONE || is_view_op(op) || kernel_for(op) != nullptr; }
bool evaluates(ggml_unary_op op) { return knows_unary(op); }
bool evaluates(ggml_glu_op op) { return knows_glu(op); }

bool register_extension(const char * op_name, ExtensionKernel kernel) {
    if (op_name == nullptr || kernel == nullptr) return false;
    ExtensionKernels & k = extension_kernels();
    std::lock_guard lock(k.mutex);
    return k.by_name.emplace(op_name, kernel).second;
}

void Evaluator::set_input(const ggml_tensor * tensor, std::vector<double> values, bool stored) {
    if (tensor == nullptr) throw Error("ggx::ref: set_input on a null tensor");
    if (tensor->view_src != nullptr) fail(tensor, "set_input needs a storage owner, not a view");
    if (values.size() != static_cast<size_t>(count(tensor)))
        fail(tensor, "set_input got " + std::to_string(values.size()) + " values for " +
                         std::to_string(count(tensor)) + " elements");
    if (!stored || !is_block_type(tensor->type)) round_all(tensor->type, values);
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
