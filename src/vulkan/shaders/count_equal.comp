#version 450
// COUNT_EQUAL, any strides: workgroup g counts the positions among the logical elements
// [g * len, (g + 1) * len) where a and b are equal (floats by value, so NaN equals nothing; I32 by
// bits) and stores the count at d[g * d_stride], with a zero high word after it when d_stride is 2
// (the I64 result). With TOTAL defined it adds the len counts of a instead (the second pass).
#include "common.glsl"
#include "row_reduce.glsl"

#ifdef TOTAL
layout(binding = 0) readonly buffer A { uint a[]; };
layout(binding = 1) writeonly buffer D { uint d[]; };
#else
layout(binding = 0) readonly buffer A { STORAGE(A_TYPE) a[]; };
layout(binding = 1) readonly buffer B { STORAGE(A_TYPE) b[]; };
layout(binding = 2) writeonly buffer D { uint d[]; };
#endif

layout(push_constant) uniform Push {
    uvec4 ne;
    View va, vb;
    uint d_offset, d_stride, len;
} p;

shared uint counts[WG];

void main() {
    uint g = group_index();
    uint first = g * p.len;
    uint end = min(first + p.len, p.ne.x * p.ne.y * p.ne.z * p.ne.w);
    uint t = gl_LocalInvocationID.x;
    uint n = 0u;
#ifdef TOTAL
    for (uint i = first + t; i < end; i += WG)
        n += a[i];
#else
    Walker w = walker(first + t, p.ne);
    for (uint i = first + t; i < end; i += WG) {
#ifdef IS_I32
        n += a[walker_index(p.va, w)] == b[walker_index(p.vb, w)] ? 1u : 0u;
#else
        n += LOAD(A_TYPE, a[walker_index(p.va, w)]) == LOAD(A_TYPE, b[walker_index(p.vb, w)]) ? 1u : 0u;
#endif
        advance(w, p.ne);
    }
#endif
    counts[t] = n;
    barrier();
    for (uint half_ = WG / 2; half_ > 0; half_ >>= 1) {
        if (t < half_) counts[t] += counts[t + half_];
        barrier();
    }
    if (t == 0u) {
        uint at = p.d_offset + g * p.d_stride;
        d[at] = counts[0];
        if (p.d_stride == 2u) d[at + 1u] = 0u;
    }
}
