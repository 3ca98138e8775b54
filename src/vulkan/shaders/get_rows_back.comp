#version 450
// GET_ROWS_BACK: d [E, R] = 0, then d[:, idx[i]] += a[:, i] for i in order, F32, any strides. One
// invocation per element of d gathers the source rows that index its row, in index order (the CPU's
// order of sums); indices outside [0, R) add nothing (the CPU fails the node).
#include "common.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer Idx { int idx[]; };
layout(binding = 2) writeonly buffer D { float d[]; };

layout(push_constant) uniform Push {
    uint e, rows, n;  // d [e, rows]; a has n rows
    View va, vidx, vd;
} p;

void main() {
    uint k = global_index(256);
    if (k >= p.e * p.rows) return;
    uint c = k % p.e, r = k / p.e;
    float sum = 0.0;
    for (uint i = 0u; i < p.n; ++i) {
        if (idx[element_index(p.vidx, i, 0u, 0u, 0u)] == int(r)) sum += a[element_index(p.va, c, i, 0u, 0u)];
    }
    d[element_index(p.vd, c, r, 0u, 0u)] = sum;
}
