#version 450
// MUL_MAT for few columns of b (COLS): a workgroup computes one row of d in every column, its
// invocations striding over K (each row of a is read once, coalesced) and summing their partial
// products in shared memory.
#include "mul_mat.glsl"

const uint THREADS = 128;
layout(local_size_x = THREADS) in;
layout(constant_id = 0) const uint COLS = 1;

shared float partial[COLS * THREADS];  // partial[c * THREADS + t]

void main() {
    uint g = group_index();
    uint batch = g / p.ne.x, row = g - batch * p.ne.x;
    Bases base;
    // The spread of groups over x and y rounds up; a routed product may have a bad id.
    if (batch >= p.batches || !bases_of(batch, base)) return;
    uint a_row = base.a + row * p.va.s1;
    uint t = gl_LocalInvocationID.x;

    float acc[COLS];
    for (uint c = 0; c < COLS; ++c) acc[c] = 0.0;
    for (uint k = t * A_GROUP; k < p.ne.z; k += THREADS * A_GROUP) {
        float v[A_GROUP];
        load_a(a_row, k, v);
        for (uint c = 0; c < COLS; ++c) {
            uint i = base.b + c * p.vb.s1 + k * p.vb.s0;
            for (uint e = 0; e < A_GROUP; ++e) acc[c] = fma(v[e], load_b(i + e * p.vb.s0), acc[c]);
        }
    }

    for (uint c = 0; c < COLS; ++c) partial[c * THREADS + t] = acc[c];
    for (uint s = THREADS / 2; s > 0; s /= 2) {
        barrier();
        if (t < s) {
            for (uint c = 0; c < COLS; ++c) partial[c * THREADS + t] += partial[c * THREADS + t + s];
        }
    }
    barrier();
    if (t < COLS) d[base.d + row * p.vd.s0 + t * p.vd.s1] = partial[t * THREADS];
}
