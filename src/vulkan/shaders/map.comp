#version 450
// SCALE, SQR, SQRT, CLAMP, LOG, SIN, COS, LEAKY_RELU, FILL and the UNARY ops: d = f(a) element by
// element, any strides.
#include "common.glsl"
#include "activations.glsl"

layout(local_size_x = 256) in;
// 0 scale (a * p0 + p1), 1 sqr, 2 sqrt, 3 clamp to [p0, p1], 4 relu, 5 silu, 6 gelu, 7 gelu_quick,
// 8 sigmoid, 9 tanh, 10 log, 11 sin, 12 cos, 13 leaky_relu (slope p0), 14 fill (p0), 15 abs, 16 sgn,
// 17 neg, 18 step, 19 elu, 20 hardswish, 21 hardsigmoid, 22 exp, 23 expm1, 24 softplus, 25 gelu_erf,
// 26 xielu (alpha_n p0, alpha_p p1, beta p2, eps p3), 27 floor, 28 ceil, 29 round, 30 trunc.
layout(constant_id = 0) const uint OP = 0;

layout(binding = 0) readonly buffer A { STORAGE(T) a[]; };
layout(binding = 1) writeonly buffer D { STORAGE(T) d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    View va, vd;
    float p0, p1, p2, p3;
} p;

float apply(float x) {
    switch (OP) {
        case 0: return x * p.p0 + p.p1;
        case 1: return x * x;
        case 2: return sqrt(x);
        case 3: {
            float lo = x < p.p0 ? p.p0 : x;
            return p.p1 < lo ? p.p1 : lo;
        }
        case 4: return x > 0.0 ? x : 0.0;
        case 5: return silu_of(x);
        case 6: return gelu_of(x);
        case 7: return gelu_quick_of(x);
        case 8: return isnan(x) ? x : sigmoid_of(x);
        case 9: return tanh_of(x);
        case 10: return log_of(x);
        case 11: return sin(x);
        case 12: return cos(x);
        case 13: return x > 0.0 ? x : p.p0 * x;
        case 14: return p.p0;
        case 15: return abs(x);
        case 16: return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : 0.0;
        case 17: return -x;
        case 18: return x > 0.0 ? 1.0 : 0.0;
        case 19: return isnan(x) ? x : x > 0.0 ? x : expm1_of(x);
        case 20: return x * hardsigmoid_of(x);
        case 21: return hardsigmoid_of(x);
        case 22: return isnan(x) ? x : exp_clamped(x);
        case 23: return isnan(x) ? x : expm1_of(x);
        case 24: return isnan(x) ? x : x > 20.0 ? x : log1p_of(exp_clamped(x));
        case 25: return gelu_erf_of(x);
        case 26: {
            float bx = p.p2 * x;
            float y = x > 0.0 ? p.p1 * x * x + bx : (expm1_of(min(x, p.p3)) - x) * p.p0 + bx;
            return isnan(x) ? x : y;
        }
        case 27: return floor(x);
        case 28: return ceil(x);
        case 29: return round_half_away(x);
        case 30: return trunc(x);
        default: return NAN_F32;  // the host never selects an unlisted OP
    }
}

void main() {
    uint first, end;
    if (!flat_run(p.ne.x * p.ne.y * p.ne.z * p.ne.w, first, end)) return;
    uvec4 c = unravel(first, p.ne);
    for (uint k = first; k < end; ++k, c = next_coord(c, p.ne)) {
        float x = LOAD(T, a[element_index(p.va, c.x, c.y, c.z, c.w)]);
        d[element_index(p.vd, c.x, c.y, c.z, c.w)] = STORE(T, apply(x));
    }
}
