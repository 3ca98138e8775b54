#version 450
// COL2IM_1D as a gather: one invocation per element of the result,
// d[i, o] = sum over the taps k, ascending, with i = t*s0 + k - p0 for a column t of a, of
// a[o*K + k, t], accumulated in F32; any strides.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer A { STORAGE(T) a[]; };
layout(binding = 1) writeonly buffer D { STORAGE(T) d[]; };

layout(push_constant) uniform Push {
    View va;  // strides of o*K + k, t
    View vd;  // strides of i, o
    int s0, p0;
    uint taps, columns, width, count;  // count = width * oc
} p;

void main() {
    uint i = global_index(256);
    if (i >= p.count) return;
    uint x = i % p.width, o = i / p.width;
    uint row = p.va.off + o * p.taps * p.va.s0;
    float acc = 0.0;
    for (uint k = 0u; k < p.taps; ++k) {
        int tq = int(x) + p.p0 - int(k);  // t * s0
        if (tq < 0) break;
        if (tq % p.s0 != 0 || tq / p.s0 >= int(p.columns)) continue;
        acc += LOAD(T, a[row + k * p.va.s0 + uint(tq / p.s0) * p.va.s1]);
    }
    d[element_index(p.vd, x, o, 0u, 0u)] = STORE(T, acc);
}
