#version 450
// SSM_SCAN, Mamba-1 and Mamba-2 selective scans (docs/ops.md): one invocation per state row
// (element i of head h's head_dim, sequence q), sequential over the tokens. The row lives in the
// result from the start (copied from s[:, i, h, ids[q]]), as on the CPU. s, dt, A, B and C are
// contiguous (the constructor requires it), x has dense rows and any other strides.
//
// An id outside [0, R) makes the CPU fail the node; a shader cannot fail, so the rows of that
// sequence (its outputs and its final states) are NaN instead.
#include "common.glsl"

layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer S0 { float s0[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) readonly buffer DT { float dt[]; };
layout(binding = 3) readonly buffer AA { float A[]; };
layout(binding = 4) readonly buffer BB { float B[]; };
layout(binding = 5) readonly buffer CC { float C[]; };
layout(binding = 6) readonly buffer I { int ids[]; };
layout(binding = 7) buffer D { float d[]; };

layout(push_constant) uniform Push {
    uint s_off, dt_off, a_off, b_off, c_off, ids_off, d_off;
    View vx;
    uint n_state, head_dim, n_head, n_tokens, n_seqs, n_group, n_slots;
    uint mamba2;  // A is [1, n_head]
} p;

#define NAN uintBitsToFloat(0x7fc00000u)

// softplus as ggml computes it: the identity above 20, else log1p(exp(v)) (log1p from log of the
// rounded 1 + e, corrected by the rounding of the sum).
float softplus(float v) {
    if (v > 20.0) return v;
    float e = exp(v);
    float u = 1.0 + e;
    return u == 1.0 ? e : log(u) * (e / (u - 1.0));
}

void main() {
    uint row = global_index(64);
    if (row >= p.head_dim * p.n_head * p.n_seqs) return;
    uint i = row % p.head_dim, h = row / p.head_dim % p.n_head, q = row / (p.head_dim * p.n_head);
    uint g = h / (p.n_head / p.n_group);
    uint N = p.n_state;
    uint y_count = p.head_dim * p.n_head * p.n_tokens * p.n_seqs;
    uint st = p.d_off + y_count + row * N;  // this row's state in the result
    int slot = ids[p.ids_off + q];
    if (slot < 0 || uint(slot) >= p.n_slots) {
        for (uint t = 0u; t < p.n_tokens; ++t)
            d[p.d_off + i + p.head_dim * (h + p.n_head * (t + p.n_tokens * q))] = NAN;
        for (uint n = 0u; n < N; ++n)
            d[st + n] = NAN;
        return;
    }
    uint src = p.s_off + N * (i + p.head_dim * (h + p.n_head * uint(slot)));
    for (uint n = 0u; n < N; ++n)
        d[st + n] = s0[src + n];
    uint a_at = p.a_off + (p.mamba2 != 0u ? 1u : N) * h;
    for (uint t = 0u; t < p.n_tokens; ++t) {
        float step = softplus(dt[p.dt_off + h + p.n_head * (t + p.n_tokens * q)]);
        float decay = p.mamba2 != 0u ? exp(step * A[a_at]) : 0.0;
        uint bc = N * (g + p.n_group * (t + p.n_tokens * q));
        float x_dt = x[element_index(p.vx, i, h, t, q)] * step;
        float y = 0.0;
        for (uint n = 0u; n < N; ++n) {
            float dA = p.mamba2 != 0u ? decay : exp(step * A[a_at + n]);
            float s = d[st + n] * dA + B[p.b_off + bc + n] * x_dt;
            d[st + n] = s;
            y += s * C[p.c_off + bc + n];
        }
        d[p.d_off + i + p.head_dim * (h + p.n_head * (t + p.n_tokens * q))] = y;
    }
}
