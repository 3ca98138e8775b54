#version 450
// REPEAT, CONCAT and PAD: each element of d is a copy of one element of a or b (or zero), moved as raw
// bits (RAW=uint or uint16_t, the element size).
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 0;  // 0 repeat, 1 concat, 2 pad

layout(binding = 0) readonly buffer A { RAW a[]; };
layout(binding = 1) readonly buffer B { RAW b[]; };
layout(binding = 2) writeonly buffer D { RAW d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;     // d's shape
    uvec4 a_ne;   // a's shape
    uvec4 extra;  // concat: x is the dimension; pad: the leading pads
    View va, vb, vd;
} p;

uint at(View v, uvec4 c) { return element_index(v, c.x, c.y, c.z, c.w); }

uint element(uvec4 c) {
    if (OP == 0) return uint(a[at(p.va, c % p.a_ne)]);
    if (OP == 1) {
        uint dim = p.extra.x;
        if (c[dim] < p.a_ne[dim]) return uint(a[at(p.va, c)]);
        c[dim] -= p.a_ne[dim];
        return uint(b[at(p.vb, c)]);
    }
    uvec4 s = c - p.extra;  // below a leading pad it wraps to >= a_ne
    return all(lessThan(s, p.a_ne)) ? uint(a[at(p.va, s)]) : 0u;
}

void main() {
    uint i = global_index(256);
    if (i >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    uvec4 c = unravel(i, p.ne);
    d[at(p.vd, c)] = RAW(element(c));
}
