#version 450
// SCALE, SQR, SQRT, CLAMP and the UNARY ops: d = f(a) element by element, any strides.
#include "common.glsl"
#include "activations.glsl"

layout(local_size_x = 256) in;
// 0 scale (a * p0 + p1), 1 sqr, 2 sqrt, 3 clamp to [p0, p1], then the unary ops: 4 relu, 5 silu,
// 6 gelu, 7 gelu_quick, 8 sigmoid, 9 tanh.
layout(constant_id = 0) const uint OP = 0;

layout(binding = 0) readonly buffer A { STORAGE(T) a[]; };
layout(binding = 1) writeonly buffer D { STORAGE(T) d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    View va, vd;
    float p0, p1;
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
        default: return uintBitsToFloat(0x7fc00000u);  // the host never selects an unlisted OP
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
