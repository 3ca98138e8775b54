// The F32 element-wise operations of the element-wise kernels (cpu/kernels/elementwise.cpp), on
// Highway vectors of the best target this CPU has, for the kernels of other families that apply
// them to rows of their own (the cross-entropy ops).
#pragma once

#include <cstdint>

namespace ggx::cpu::elementwise_simd {

// Element-wise maps of one F32 operand; p0..p3 are the op's float parameters.
enum class MapOp : int32_t {
    scale,
    sqr,
    sqrt,
    clamp,
    log,
    sin,
    cos,
    leaky_relu,
    fill,
    // UNARY sub-ops
    abs,
    sgn,
    neg,
    step,
    tanh,
    elu,
    relu,
    sigmoid,
    gelu,
    gelu_quick,
    silu,
    hardswish,
    hardsigmoid,
    exp,
    expm1,
    softplus,
    gelu_erf,
    xielu,
    floor,
    ceil,
    round,
    trunc
};
struct Map {
    MapOp op;
    float p0 = 0.0f, p1 = 0.0f, p2 = 0.0f, p3 = 0.0f;
};
// silu_back: a is the gradient dy, b the input x.
enum class BinaryOp : int32_t { add, sub, mul, div, silu_back };
// The GLU sub-ops, in ggml_glu_op order; alpha and limit are SWIGLU_OAI's.
enum class GluOp : int32_t { reglu, geglu, swiglu, swiglu_oai, geglu_erf, geglu_quick };
struct Glu {
    GluOp op;
    float alpha = 0.0f, limit = 0.0f;
};

// y[i] = m(x[i]) and y[i] = op(a[i], b[i]) for i < n; y may be x, a or b.
void map(const Map & m, const float * x, float * y, int64_t n);
void binary(BinaryOp op, const float * a, const float * b, float * y, int64_t n);

}  // namespace ggx::cpu::elementwise_simd
