#version 450
// The RWKV-style linear attentions (OP 0: RWKV_WKV6, 1: GATED_LINEAR_ATTN, 2: RWKV_WKV7), every
// input contiguous F32 (the constructors require it): per-token inputs [S, H, T] with T = n_seqs *
// tokens per sequence, a state of S * S values per head and sequence (row i, column j at i * S + j).
// The result holds the T output rows of S * H floats, then the final states laid out as the input
// state; the state lives there from the start, as on the CPU.
//
// One invocation per (sequence, head, state line), sequential over the sequence's tokens: the line
// is the column j that output j reads for RWKV_WKV6 and GATED_LINEAR_ATTN (S_ij, key i, value j),
// the row i for RWKV_WKV7 (S_ij, value i, key j), so no invocation reads another's state.
#include "common.glsl"

layout(local_size_x = 64) in;

// WKV6: k, v, r, tf, td; GLA: k, v, q, g; WKV7: r, w, k, v, a, b. Unused bindings repeat one.
layout(binding = 0) readonly buffer In0 { float in0[]; };
layout(binding = 1) readonly buffer In1 { float in1[]; };
layout(binding = 2) readonly buffer In2 { float in2[]; };
layout(binding = 3) readonly buffer In3 { float in3[]; };
layout(binding = 4) readonly buffer In4 { float in4[]; };
layout(binding = 5) readonly buffer In5 { float in5[]; };
layout(binding = 6) readonly buffer S0 { float s0[]; };
layout(binding = 7) buffer D { float d[]; };

layout(push_constant) uniform Push {
    uint off[6];
    uint s_off, d_off;
    uint S, H, T, n_seqs;
    float scale;  // GATED_LINEAR_ATTN
} p;

void main() {
    uint id = global_index(64);
    uint S = p.S, H = p.H;
    if (id >= S * H * p.n_seqs) return;
    uint line = id % S, h = id / S % H, q = id / (S * H);
    uint C = S * H;
    uint state = (q * H + h) * S * S;  // this (sequence, head)'s state, in the input and the result
    uint st = p.d_off + p.T * C + state;
#if OP == 2
    uint stride = 1u;  // row i: S_i0, S_i1, ...
    st += line * S;
    uint src = p.s_off + state + line * S;
#else
    uint stride = S;  // column j: S_0j, S_1j, ...
    st += line;
    uint src = p.s_off + state + line;
#endif
    for (uint e = 0u; e < S; ++e)
        d[st + e * stride] = s0[src + e * stride];
    uint per_seq = p.T / p.n_seqs;
    for (uint t = q * per_seq; t < (q + 1u) * per_seq; ++t) {
        uint at = t * C + h * S;
        float y = 0.0;
#if OP == 0
        // y_j = sum_i r_i (tf_i k_i v_j + S_ij); S_ij = S_ij td_i + k_i v_j.
        float v = in1[p.off[1] + at + line];
        for (uint i = 0u; i < S; ++i) {
            float k = in0[p.off[0] + at + i], r = in2[p.off[2] + at + i];
            float u = in3[p.off[3] + h * S + i], w = in4[p.off[4] + at + i];
            float s = d[st + i * S];
            y += v * (r * u * k);
            y += s * r;
            d[st + i * S] = s * w + v * k;
        }
#elif OP == 1
        // S_ij = S_ij exp(g_i) + k_i v_j; y_j = scale sum_i q_i S_ij.
        float v = in1[p.off[1] + at + line];
        for (uint i = 0u; i < S; ++i) {
            float k = in0[p.off[0] + at + i], qi = in2[p.off[2] + at + i];
            float s = d[st + i * S] * exp(in3[p.off[3] + at + i]) + v * k;
            d[st + i * S] = s;
            y += s * (qi * p.scale);
        }
#else
        // sa = sum_j a_j S_ij; S_ij = S_ij w_j + v_i k_j + sa b_j; y_i = sum_j r_j S_ij.
        float v = in3[p.off[3] + at + line];
        float sa = 0.0;
        for (uint j = 0u; j < S; ++j)
            sa += in4[p.off[4] + at + j] * d[st + j];
        for (uint j = 0u; j < S; ++j) {
            float s = d[st + j] * in1[p.off[1] + at + j] + in2[p.off[2] + at + j] * v;
            s += in5[p.off[5] + at + j] * sa;
            d[st + j] = s;
            y += s * in0[p.off[0] + at + j];
        }
#endif
        d[p.d_off + at + line] = y;
    }
}
