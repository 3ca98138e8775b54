#version 450
// SOLVE_TRI: x with a x = b by forward substitution in float, a lower triangular (a[j, i] the
// coefficient of row i, column j; only the lower triangle and the diagonal are read), F32 of any
// strides. One invocation per (right-hand-side column c, matrix), sequential over the rows: row i
// of x is b's, less the earlier rows' multiples, divided by the diagonal, as on the CPU.
#include "common.glsl"

layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) buffer D { float d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;  // the result: k, n, B2, B3
    View va, vb, vd;
} p;

void main() {
    uint id = global_index(64);
    if (id >= p.ne.x * p.ne.z * p.ne.w) return;
    uint c = id % p.ne.x, i2 = id / p.ne.x % p.ne.z, i3 = id / (p.ne.x * p.ne.z);
    for (uint i = 0u; i < p.ne.y; ++i) {
        float x = b[element_index(p.vb, c, i, i2, i3)];
        for (uint j = 0u; j < i; ++j)
            x -= a[element_index(p.va, j, i, i2, i3)] * d[element_index(p.vd, c, j, i2, i3)];
        d[element_index(p.vd, c, i, i2, i3)] = x / a[element_index(p.va, i, i, i2, i3)];
    }
}
