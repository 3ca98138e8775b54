// Constructors of the element-wise family: binary ops, SCALE, SQR, SQRT, CLAMP, UNARY and GLU.
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

ggml_tensor * unary(ggml_context * ctx, ggml_tensor * a, ggml_unary_op op, bool inplace) {
    const char * name = inplace ? "ggml_unary_inplace" : "ggml_unary";
    Check check(ctx, name, {{"a", a}});
    if (!check) return nullptr;
    check.require(op >= 0 && op < GGML_UNARY_OP_COUNT, "unknown unary op")
        .require(is_float(a), "a must be f32, f16 or bf16");
    if (!check) return nullptr;
    return with_params(make_node(ctx, name, GGML_OP_UNARY, a->type, shape_of(a), {a}, inplace ? a : nullptr),
                       ggml_ext_unary_params{static_cast<int32_t>(op)});
}

ggml_tensor * glu(ggml_context * ctx, const char * name, ggml_tensor * a, ggml_tensor * b, ggml_glu_op op,
                  bool swapped) {
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
                       ggml_ext_glu_params{static_cast<int32_t>(op), swapped ? 1 : 0});
}

ggml_tensor * clamp(ggml_context * ctx, const char * name, ggml_tensor * a, float min, float max,
                           bool inplace) {
    Check check(ctx, name, {{"a", a}});
    if (!check || !check.require(min <= max, "min must be <= max")) return nullptr;
    return with_params(elementwise(ctx, name, GGML_OP_CLAMP, a, inplace), ggml_ext_clamp_params{min, max});
}

}  // namespace

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
ggml_tensor * ggml_sqr(ggml_context * ctx, ggml_tensor * a) {
    return elementwise(ctx, "ggml_sqr", GGML_OP_SQR, a, false);
}
ggml_tensor * ggml_sqr_inplace(ggml_context * ctx, ggml_tensor * a) {
    return elementwise(ctx, "ggml_sqr_inplace", GGML_OP_SQR, a, true);
}
ggml_tensor * ggml_sqrt(ggml_context * ctx, ggml_tensor * a) {
    return elementwise(ctx, "ggml_sqrt", GGML_OP_SQRT, a, false);
}
ggml_tensor * ggml_sqrt_inplace(ggml_context * ctx, ggml_tensor * a) {
    return elementwise(ctx, "ggml_sqrt_inplace", GGML_OP_SQRT, a, true);
}

ggml_tensor * ggml_clamp(ggml_context * ctx, ggml_tensor * a, float min, float max) {
    return clamp(ctx, "ggml_clamp", a, min, max, false);
}
ggml_tensor * ggml_clamp_inplace(ggml_context * ctx, ggml_tensor * a, float min, float max) {
    return clamp(ctx, "ggml_clamp_inplace", a, min, max, true);
}

ggml_tensor * ggml_unary(ggml_context * ctx, ggml_tensor * a, ggml_unary_op op) {
    return unary(ctx, a, op, false);
}
ggml_tensor * ggml_unary_inplace(ggml_context * ctx, ggml_tensor * a, ggml_unary_op op) {
    return unary(ctx, a, op, true);
}
ggml_tensor * ggml_relu(ggml_context * ctx, ggml_tensor * a) {
    return unary(ctx, a, GGML_UNARY_OP_RELU, false);
}
ggml_tensor * ggml_silu(ggml_context * ctx, ggml_tensor * a) {
    return unary(ctx, a, GGML_UNARY_OP_SILU, false);
}
ggml_tensor * ggml_gelu(ggml_context * ctx, ggml_tensor * a) {
    return unary(ctx, a, GGML_UNARY_OP_GELU, false);
}
ggml_tensor * ggml_gelu_quick(ggml_context * ctx, ggml_tensor * a) {
    return unary(ctx, a, GGML_UNARY_OP_GELU_QUICK, false);
}
ggml_tensor * ggml_sigmoid(ggml_context * ctx, ggml_tensor * a) {
    return unary(ctx, a, GGML_UNARY_OP_SIGMOID, false);
}
ggml_tensor * ggml_tanh(ggml_context * ctx, ggml_tensor * a) {
    return unary(ctx, a, GGML_UNARY_OP_TANH, false);
}

ggml_tensor * ggml_glu(ggml_context * ctx, ggml_tensor * a, ggml_glu_op op, bool swapped) {
    return glu(ctx, "ggml_glu", a, nullptr, op, swapped);
}
ggml_tensor * ggml_glu_split(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_glu_op op) {
    if (!b) return nullptr;
    return glu(ctx, "ggml_glu_split", a, b, op, false);
}
ggml_tensor * ggml_swiglu(ggml_context * ctx, ggml_tensor * a) {
    return ggml_glu(ctx, a, GGML_GLU_OP_SWIGLU, false);
}
ggml_tensor * ggml_swiglu_swapped(ggml_context * ctx, ggml_tensor * a) {
    return ggml_glu(ctx, a, GGML_GLU_OP_SWIGLU, true);
}
ggml_tensor * ggml_swiglu_split(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return ggml_glu_split(ctx, a, b, GGML_GLU_OP_SWIGLU);
}
ggml_tensor * ggml_geglu(ggml_context * ctx, ggml_tensor * a) {
    return ggml_glu(ctx, a, GGML_GLU_OP_GEGLU, false);
}
ggml_tensor * ggml_geglu_swapped(ggml_context * ctx, ggml_tensor * a) {
    return ggml_glu(ctx, a, GGML_GLU_OP_GEGLU, true);
}
ggml_tensor * ggml_geglu_split(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return ggml_glu_split(ctx, a, b, GGML_GLU_OP_GEGLU);
}

}  // extern "C"
