// Constructors of the element-wise family: binary ops (ADD, SUB, MUL, DIV, ADD1, ADD_ID), ACC and SET,
// SCALE, SQR, SQRT, LOG, SIN, COS, CLAMP, LEAKY_RELU, FILL, SILU_BACK, UNARY, GLU and the optimizer steps.
#include <cmath>

#include "core/ops/common.h"

using namespace ggx::core;

namespace {

ggml_tensor * binary(ggml_context * ctx, const char * name, ggml_op op, ggml_tensor * a, ggml_tensor * b,
                     bool inplace) {
    Check check(ctx, name, {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require(b->type == GGML_TYPE_F32 || b->type == a->type, "b must be f32 or of a's type")
        .require(ggml_can_repeat(b, a), "b cannot be broadcast over a (a.ne[i] % b.ne[i] != 0)");
    if (!check) return nullptr;
    return make_node(ctx, name, op, a->type, shape_of(a), {a, b}, inplace ? a : nullptr);
}

// Element-wise op on a float tensor.
ggml_tensor * elementwise(ggml_context * ctx, const char * name, ggml_op op, ggml_tensor * a, bool inplace) {
    Check check(ctx, name, {{"a", a}});
    if (!check) return nullptr;
    if (!check.require(is_float(a), "a must be f32, f16 or bf16")) return nullptr;
    return make_node(ctx, name, op, a->type, shape_of(a), {a}, inplace ? a : nullptr);
}

ggml_tensor * unary(ggml_context * ctx, const char * name, ggml_tensor * a, ggml_unary_op op, bool inplace) {
    Check check(ctx, name, {{"a", a}});
    if (!check) return nullptr;
    check.require(op >= 0 && op < GGML_UNARY_OP_COUNT, "unknown unary op")
        .require(is_float(a), "a must be f32, f16 or bf16");
    if (!check) return nullptr;
    return with_params(make_node(ctx, name, GGML_OP_UNARY, a->type, shape_of(a), {a}, inplace ? a : nullptr),
                       ggml_ext_unary_params{static_cast<int32_t>(op), 0.0f, 0.0f, 0.0f, 0.0f});
}

ggml_tensor * glu(ggml_context * ctx, const char * name, ggml_tensor * a, ggml_tensor * b, ggml_glu_op op,
                  bool swapped, float alpha = 0.0f, float limit = 0.0f) {
    Check check(ctx, name, {{"a", a}, {"b", b, true}});
    if (!check) return nullptr;
    check.require(op >= 0 && op < GGML_GLU_OP_COUNT, "unknown glu op")
        .require(is_float(a), "a must be f32, f16 or bf16");
    if (b) {
        check.require(b->type == a->type, "a and b must have the same type")
            .require(ggml_are_same_shape(a, b), "a and b must have the same shape");
    } else {
        check.require(a->ne[0] % 2 == 0, "ne0 of a merged gate/up tensor must be even");
    }
    if (!check) return nullptr;
    auto ne = shape_of(a);
    if (!b) ne[0] /= 2;
    return with_params(make_node(ctx, name, GGML_OP_GLU, a->type, ne, {a, b}),
                       ggml_ext_glu_params{static_cast<int32_t>(op), swapped ? 1 : 0, alpha, limit});
}

ggml_tensor * clamp(ggml_context * ctx, const char * name, ggml_tensor * a, float min, float max,
                    bool inplace) {
    Check check(ctx, name, {{"a", a}});
    if (!check || !check.require(min <= max, "min must be <= max")) return nullptr;
    return with_params(elementwise(ctx, name, GGML_OP_CLAMP, a, inplace), ggml_ext_clamp_params{min, max});
}

// a + b for a one-element b (ADD1).
ggml_tensor * add1(ggml_context * ctx, const char * name, ggml_tensor * a, ggml_tensor * b, bool inplace) {
    Check check(ctx, name, {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require(b->type == GGML_TYPE_F32 || b->type == a->type, "b must be f32 or of a's type")
        .require(ggml_is_scalar(b), "b must have one element");
    if (!check) return nullptr;
    return make_node(ctx, name, GGML_OP_ADD1, a->type, shape_of(a), {a, b}, inplace ? a : nullptr);
}

// A node of a's shape and type from two operands of that shape (SILU_BACK: x and the gradient dy).
ggml_tensor * same_shape_pair(ggml_context * ctx, const char * name, ggml_op op, ggml_tensor * a,
                              ggml_tensor * b) {
    Check check(ctx, name, {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require(b->type == a->type, "a and b must have the same type")
        .require(ggml_are_same_shape(a, b), "a and b must have the same shape");
    if (!check) return nullptr;
    return make_node(ctx, name, op, a->type, shape_of(a), {a, b});
}

bool fits_int32(size_t value) { return value <= static_cast<size_t>(INT32_MAX); }

// ACC (a with b added over a region) and SET (a with b written over it): the region is the view of a
// with b's shape, byte strides nb1..nb3 and byte offset.
ggml_tensor * region_op(ggml_context * ctx, const char * name, ggml_op op, ggml_tensor * a, ggml_tensor * b,
                        size_t nb1, size_t nb2, size_t nb3, size_t offset, bool inplace) {
    Check check(ctx, name, {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    const size_t nb[4] = {ggml_element_size(a), nb1, nb2, nb3};
    size_t last = offset;
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        last += b->ne[i] > 0 ? static_cast<size_t>(b->ne[i] - 1) * nb[i] : 0;
    if (op == GGML_OP_ACC) {
        check.require(a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32, "a and b must be f32")
            .require(ggml_is_contiguous(a), "a must be contiguous");
    } else {
        check.require(!ggml_is_quantized(a->type), "a must not be quantized")
            .require(b->type == a->type, "a and b must have the same type");
    }
    check
        .require(fits_int32(nb1) && fits_int32(nb2) && fits_int32(nb3) && fits_int32(offset),
                 "strides and offset must fit in 32 bits")
        .require(ggml_nelements(b) <= ggml_nelements(a), "b must not have more elements than a")
        .require(ggml_is_empty(b) || last + ggml_element_size(a) <= ggml_nbytes(a),
                 "the region must lie inside a");
    if (!check) return nullptr;
    const ggml_ext_acc_params params{static_cast<int32_t>(nb1), static_cast<int32_t>(nb2),
                                     static_cast<int32_t>(nb3), static_cast<int32_t>(offset),
                                     inplace ? 1 : 0};
    return with_params(make_node(ctx, name, op, a->type, shape_of(a), {a, b}, inplace ? a : nullptr), params);
}

// An optimizer step: updates a (a trainable parameter) in place from grad and the other operands.
ggml_tensor * opt_step(ggml_context * ctx, const char * name, ggml_op op, ggml_tensor * a, ggml_tensor * grad,
                       ggml_tensor * m, ggml_tensor * v, ggml_tensor * params, int64_t n_params) {
    const bool adamw = op == GGML_OP_OPT_STEP_ADAMW;
    Check check(ctx, name,
                {{"a", a}, {"grad", grad}, {"params", params}, {"m", m, !adamw}, {"v", v, !adamw}});
    if (!check) return nullptr;
    check
        .require((a->flags & GGML_TENSOR_FLAG_PARAM) != 0,
                 "a must be a trainable parameter (GGML_TENSOR_FLAG_PARAM)")
        .require(ggml_are_same_shape(a, grad), "a and grad must have the same shape")
        .require(!adamw || (ggml_are_same_shape(a, m) && ggml_are_same_shape(a, v)),
                 "m and v must have a's shape")
        .require(params->type == GGML_TYPE_F32 && ggml_nelements(params) == n_params,
                 adamw ? "adamw_params must be 7 f32 values" : "sgd_params must be 2 f32 values");
    if (!check) return nullptr;
    if (adamw) return make_node(ctx, name, op, a->type, shape_of(a), {a, grad, m, v, params}, a);
    return make_node(ctx, name, op, a->type, shape_of(a), {a, grad, params}, a);
}

}  // namespace

// ggml_<fn> and ggml_<fn>_inplace for the element-wise op op; GGX_UNARY the same for a unary sub-op
// (GGX_UNARY_ONLY without the in-place form, which ggml lacks for some).
#define GGX_ELEMENTWISE(fn, op)                                              \
    ggml_tensor * ggml_##fn(ggml_context * ctx, ggml_tensor * a) {           \
        return elementwise(ctx, "ggml_" #fn, op, a, false);                  \
    }                                                                        \
    ggml_tensor * ggml_##fn##_inplace(ggml_context * ctx, ggml_tensor * a) { \
        return elementwise(ctx, "ggml_" #fn "_inplace", op, a, true);        \
    }
#define GGX_UNARY_ONLY(fn, op)                                     \
    ggml_tensor * ggml_##fn(ggml_context * ctx, ggml_tensor * a) { \
        return unary(ctx, "ggml_" #fn, a, op, false);              \
    }
#define GGX_UNARY(fn, op)                                                    \
    GGX_UNARY_ONLY(fn, op)                                                   \
    ggml_tensor * ggml_##fn##_inplace(ggml_context * ctx, ggml_tensor * a) { \
        return unary(ctx, "ggml_" #fn "_inplace", a, op, true);              \
    }
// ggml_<fn> (merged gate/up), ggml_<fn>_swapped and ggml_<fn>_split for a GLU sub-op.
#define GGX_GLU(fn, op)                                                                     \
    ggml_tensor * ggml_##fn(ggml_context * ctx, ggml_tensor * a) {                          \
        return glu(ctx, "ggml_" #fn, a, nullptr, op, false);                                \
    }                                                                                       \
    ggml_tensor * ggml_##fn##_swapped(ggml_context * ctx, ggml_tensor * a) {                \
        return glu(ctx, "ggml_" #fn "_swapped", a, nullptr, op, true);                      \
    }                                                                                       \
    ggml_tensor * ggml_##fn##_split(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) { \
        return b ? glu(ctx, "ggml_" #fn "_split", a, b, op, false) : nullptr;               \
    }

extern "C" {

ggml_tensor * ggml_add(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_add", GGML_OP_ADD, a, b, false);
}
ggml_tensor * ggml_sub(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_sub", GGML_OP_SUB, a, b, false);
}
ggml_tensor * ggml_mul(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_mul", GGML_OP_MUL, a, b, false);
}
ggml_tensor * ggml_div(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_div", GGML_OP_DIV, a, b, false);
}
ggml_tensor * ggml_add_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_add_inplace", GGML_OP_ADD, a, b, true);
}
ggml_tensor * ggml_sub_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_sub_inplace", GGML_OP_SUB, a, b, true);
}
ggml_tensor * ggml_mul_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_mul_inplace", GGML_OP_MUL, a, b, true);
}
ggml_tensor * ggml_div_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_div_inplace", GGML_OP_DIV, a, b, true);
}

ggml_tensor * ggml_add1(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return add1(ctx, "ggml_add1", a, b, false);
}
ggml_tensor * ggml_add1_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return add1(ctx, "ggml_add1_inplace", a, b, true);
}

ggml_tensor * ggml_add_cast(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_type type) {
    Check check(ctx, "ggml_add_cast", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_known_type(type) && !ggml_is_quantized(type), "type must be a known unquantized type")
        .require(is_float_or_quantized(a), "a must be f32, f16, bf16 or quantized")
        .require(b->type == GGML_TYPE_F32 || b->type == a->type, "b must be f32 or of a's type")
        .require(ggml_can_repeat(b, a), "b cannot be broadcast over a (a.ne[i] % b.ne[i] != 0)");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_add_cast", GGML_OP_ADD, type, shape_of(a), {a, b});
}

ggml_tensor * ggml_add_id(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * ids) {
    Check check(ctx, "ggml_add_id", {{"a", a}, {"b", b}, {"ids", ids}});
    if (!check) return nullptr;
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require(b->type == GGML_TYPE_F32 || b->type == a->type, "b must be f32 or of a's type")
        .require(ids->type == GGML_TYPE_I32, "ids must be i32")
        .require(a->ne[0] == b->ne[0], "a and b must have the same ne0")
        .require(ids->ne[0] == a->ne[1] && ids->ne[1] == a->ne[2], "ids must be [a.ne1, a.ne2]");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_add_id", GGML_OP_ADD_ID, a->type, shape_of(a), {a, b, ids});
}

ggml_tensor * ggml_acc(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, size_t nb1, size_t nb2,
                       size_t nb3, size_t offset) {
    return region_op(ctx, "ggml_acc", GGML_OP_ACC, a, b, nb1, nb2, nb3, offset, false);
}
ggml_tensor * ggml_acc_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, size_t nb1, size_t nb2,
                               size_t nb3, size_t offset) {
    return region_op(ctx, "ggml_acc_inplace", GGML_OP_ACC, a, b, nb1, nb2, nb3, offset, true);
}
ggml_tensor * ggml_set(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, size_t nb1, size_t nb2,
                       size_t nb3, size_t offset) {
    return region_op(ctx, "ggml_set", GGML_OP_SET, a, b, nb1, nb2, nb3, offset, false);
}
ggml_tensor * ggml_set_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, size_t nb1, size_t nb2,
                               size_t nb3, size_t offset) {
    return region_op(ctx, "ggml_set_inplace", GGML_OP_SET, a, b, nb1, nb2, nb3, offset, true);
}
ggml_tensor * ggml_set_1d(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, size_t offset) {
    return a ? ggml_set(ctx, a, b, a->nb[1], a->nb[2], a->nb[3], offset) : nullptr;
}
ggml_tensor * ggml_set_1d_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, size_t offset) {
    return a ? ggml_set_inplace(ctx, a, b, a->nb[1], a->nb[2], a->nb[3], offset) : nullptr;
}
ggml_tensor * ggml_set_2d(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, size_t nb1, size_t offset) {
    return a ? ggml_set(ctx, a, b, nb1, a->nb[2], a->nb[3], offset) : nullptr;
}
ggml_tensor * ggml_set_2d_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, size_t nb1,
                                  size_t offset) {
    return a ? ggml_set_inplace(ctx, a, b, nb1, a->nb[2], a->nb[3], offset) : nullptr;
}

ggml_tensor * ggml_scale(ggml_context * ctx, ggml_tensor * a, float s) {
    return with_params(elementwise(ctx, "ggml_scale", GGML_OP_SCALE, a, false),
                       ggml_ext_scale_params{s, 0.0f});
}
ggml_tensor * ggml_scale_inplace(ggml_context * ctx, ggml_tensor * a, float s) {
    return with_params(elementwise(ctx, "ggml_scale_inplace", GGML_OP_SCALE, a, true),
                       ggml_ext_scale_params{s, 0.0f});
}
ggml_tensor * ggml_scale_bias(ggml_context * ctx, ggml_tensor * a, float s, float bias) {
    return with_params(elementwise(ctx, "ggml_scale_bias", GGML_OP_SCALE, a, false),
                       ggml_ext_scale_params{s, bias});
}
ggml_tensor * ggml_scale_bias_inplace(ggml_context * ctx, ggml_tensor * a, float s, float bias) {
    return with_params(elementwise(ctx, "ggml_scale_bias_inplace", GGML_OP_SCALE, a, true),
                       ggml_ext_scale_params{s, bias});
}

GGX_ELEMENTWISE(sqr, GGML_OP_SQR)
GGX_ELEMENTWISE(sqrt, GGML_OP_SQRT)
GGX_ELEMENTWISE(log, GGML_OP_LOG)
GGX_ELEMENTWISE(sin, GGML_OP_SIN)
GGX_ELEMENTWISE(cos, GGML_OP_COS)

ggml_tensor * ggml_clamp(ggml_context * ctx, ggml_tensor * a, float min, float max) {
    return clamp(ctx, "ggml_clamp", a, min, max, false);
}
ggml_tensor * ggml_clamp_inplace(ggml_context * ctx, ggml_tensor * a, float min, float max) {
    return clamp(ctx, "ggml_clamp_inplace", a, min, max, true);
}

ggml_tensor * ggml_leaky_relu(ggml_context * ctx, ggml_tensor * a, float negative_slope, bool inplace) {
    return with_params(elementwise(ctx, "ggml_leaky_relu", GGML_OP_LEAKY_RELU, a, inplace),
                       ggml_ext_leaky_relu_params{negative_slope});
}

ggml_tensor * ggml_fill(ggml_context * ctx, ggml_tensor * a, float c) {
    return with_params(elementwise(ctx, "ggml_fill", GGML_OP_FILL, a, false), ggml_ext_fill_params{c});
}
ggml_tensor * ggml_fill_inplace(ggml_context * ctx, ggml_tensor * a, float c) {
    return with_params(elementwise(ctx, "ggml_fill_inplace", GGML_OP_FILL, a, true), ggml_ext_fill_params{c});
}

ggml_tensor * ggml_silu_back(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return same_shape_pair(ctx, "ggml_silu_back", GGML_OP_SILU_BACK, a, b);
}

ggml_tensor * ggml_unary(ggml_context * ctx, ggml_tensor * a, ggml_unary_op op) {
    return unary(ctx, "ggml_unary", a, op, false);
}
ggml_tensor * ggml_unary_inplace(ggml_context * ctx, ggml_tensor * a, ggml_unary_op op) {
    return unary(ctx, "ggml_unary_inplace", a, op, true);
}
GGX_UNARY(abs, GGML_UNARY_OP_ABS)
GGX_UNARY(sgn, GGML_UNARY_OP_SGN)
GGX_UNARY(neg, GGML_UNARY_OP_NEG)
GGX_UNARY(step, GGML_UNARY_OP_STEP)
GGX_UNARY(tanh, GGML_UNARY_OP_TANH)
GGX_UNARY(elu, GGML_UNARY_OP_ELU)
GGX_UNARY(relu, GGML_UNARY_OP_RELU)
GGX_UNARY(sigmoid, GGML_UNARY_OP_SIGMOID)
GGX_UNARY(gelu, GGML_UNARY_OP_GELU)
GGX_UNARY(gelu_erf, GGML_UNARY_OP_GELU_ERF)
GGX_UNARY(gelu_quick, GGML_UNARY_OP_GELU_QUICK)
GGX_UNARY(silu, GGML_UNARY_OP_SILU)
GGX_UNARY_ONLY(hardswish, GGML_UNARY_OP_HARDSWISH)
GGX_UNARY_ONLY(hardsigmoid, GGML_UNARY_OP_HARDSIGMOID)
GGX_UNARY(exp, GGML_UNARY_OP_EXP)
GGX_UNARY(expm1, GGML_UNARY_OP_EXPM1)
GGX_UNARY(softplus, GGML_UNARY_OP_SOFTPLUS)
GGX_UNARY(floor, GGML_UNARY_OP_FLOOR)
GGX_UNARY(ceil, GGML_UNARY_OP_CEIL)
GGX_UNARY(round, GGML_UNARY_OP_ROUND)
GGX_UNARY(trunc, GGML_UNARY_OP_TRUNC)

ggml_tensor * ggml_xielu(ggml_context * ctx, ggml_tensor * a, float alpha_n, float alpha_p, float beta,
                         float eps) {
    // ggml records the constrained coefficients: beta + softplus(alpha_n) and softplus(alpha_p).
    const auto softplus = [](float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); };
    return with_params(
        unary(ctx, "ggml_xielu", a, GGML_UNARY_OP_XIELU, false),
        ggml_ext_unary_params{GGML_UNARY_OP_XIELU, beta + softplus(alpha_n), softplus(alpha_p), beta, eps});
}

ggml_tensor * ggml_glu(ggml_context * ctx, ggml_tensor * a, ggml_glu_op op, bool swapped) {
    return glu(ctx, "ggml_glu", a, nullptr, op, swapped);
}
ggml_tensor * ggml_glu_split(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_glu_op op) {
    return b ? glu(ctx, "ggml_glu_split", a, b, op, false) : nullptr;
}
GGX_GLU(reglu, GGML_GLU_OP_REGLU)
GGX_GLU(geglu, GGML_GLU_OP_GEGLU)
GGX_GLU(swiglu, GGML_GLU_OP_SWIGLU)
GGX_GLU(geglu_erf, GGML_GLU_OP_GEGLU_ERF)
GGX_GLU(geglu_quick, GGML_GLU_OP_GEGLU_QUICK)

ggml_tensor * ggml_swiglu_oai(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, float alpha,
                              float limit) {
    return glu(ctx, "ggml_swiglu_oai", a, b, GGML_GLU_OP_SWIGLU_OAI, false, alpha, limit);
}

ggml_tensor * ggml_opt_step_adamw(ggml_context * ctx, ggml_tensor * a, ggml_tensor * grad, ggml_tensor * m,
                                  ggml_tensor * v, ggml_tensor * adamw_params) {
    return opt_step(ctx, "ggml_opt_step_adamw", GGML_OP_OPT_STEP_ADAMW, a, grad, m, v, adamw_params, 7);
}
ggml_tensor * ggml_opt_step_sgd(ggml_context * ctx, ggml_tensor * a, ggml_tensor * grad,
                                ggml_tensor * sgd_params) {
    return opt_step(ctx, "ggml_opt_step_sgd", GGML_OP_OPT_STEP_SGD, a, grad, nullptr, nullptr, sgd_params, 2);
}

}  // extern "C"
