#version 450
// UPSCALE (nearest) of F32 tensors of any strides: d[i] = a[floor(i * a.ne / d.ne)] per dimension.
// One workgroup per row of d; along the row each invocation steps the source index as a quotient
// and remainder, so its loop has no division.
#include "common.glsl"

layout(local_size_x = 128) in;

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) writeonly buffer D { float d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    uvec4 a_ne;
    View va, vd;
    uint step_q, step_r;  // 128 * a_ne.x = step_q * ne.x + step_r
} p;

uint nearest(uint i, uint from, uint to) { return i * from / to; }

void main() {
    uint row = group_index();
    if (row >= p.ne.y * p.ne.z * p.ne.w) return;
    uint i1 = row % p.ne.y, i2 = row / p.ne.y % p.ne.z, i3 = row / (p.ne.y * p.ne.z);
    uint src = element_index(p.va, 0, nearest(i1, p.a_ne.y, p.ne.y), nearest(i2, p.a_ne.z, p.ne.z),
                             nearest(i3, p.a_ne.w, p.ne.w));
    uint dst = element_index(p.vd, 0, i1, i2, i3);

    uint i0 = gl_LocalInvocationID.x;
    uint q = nearest(i0, p.a_ne.x, p.ne.x);
    uint rem = i0 * p.a_ne.x - q * p.ne.x;
    for (; i0 < p.ne.x; i0 += 128) {
        d[dst + i0 * p.vd.s0] = a[src + q * p.va.s0];
        q += p.step_q;
        rem += p.step_r;
        if (rem >= p.ne.x) {
            ++q;
            rem -= p.ne.x;
        }
    }
}
