#version 450
// SUM_ROWS, MEAN and the two stages of SUM, any strides: workgroup g sums the logical elements
// [g * len, (g + 1) * len) of a (clipped to its size) and stores the sum / divisor at output
// element g, whose coordinates in dims 1 and up are g split over [d_ne1, d_ne2, *].
#include "common.glsl"
#include "row_reduce.glsl"

layout(binding = 0) readonly buffer A { STORAGE(A_TYPE) a[]; };
layout(binding = 1) writeonly buffer D { STORAGE(D_TYPE) d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    View va, vd;
    uint d_ne1, d_ne2;
    uint len;
    float divisor;
} p;

void main() {
    uint g = group_index();
    uint first = g * p.len;
    uint end = min(first + p.len, p.ne.x * p.ne.y * p.ne.z * p.ne.w);
    float acc = 0.0;
    Walker w = walker(first + gl_LocalInvocationID.x, p.ne);
    for (uint i = first + gl_LocalInvocationID.x; i < end; i += WG) {
        acc += LOAD(A_TYPE, a[walker_index(p.va, w)]);
        advance(w, p.ne);
    }
    float total = workgroup_sum(acc);
    if (gl_LocalInvocationID.x == 0) {
        uint i1 = g % p.d_ne1, i2 = g / p.d_ne1 % p.d_ne2, i3 = g / (p.d_ne1 * p.d_ne2);
        d[element_index(p.vd, 0, i1, i2, i3)] = STORE(D_TYPE, total / p.divisor);
    }
}
