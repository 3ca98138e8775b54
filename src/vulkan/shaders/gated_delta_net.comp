#version 450
// GATED_DELTA_NET (docs/ops.md): one invocation per (sequence n, value head h, state row j),
// sequential over the tokens. Row j of M (M[j][i] = state[i, j, h, n]) lives in the result's slot 0
// from the start, as on the CPU; after token T - 1 - m it is copied to slot m for 1 <= m < K.
// q, k, v and g have dense rows (the views hold dims 1..3), beta any strides, the state dense rows.
#include "common.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const bool PER_KEY_GATE = false;  // g [S, H, T, n], else [1, H, T, n]

layout(binding = 0) readonly buffer QBuf { float q[]; };
layout(binding = 1) readonly buffer KBuf { float k[]; };
layout(binding = 2) readonly buffer VBuf { float v[]; };
layout(binding = 3) readonly buffer GBuf { float g[]; };
layout(binding = 4) readonly buffer Beta { float beta[]; };
layout(binding = 5) readonly buffer S0 { float s0[]; };
layout(binding = 6) buffer D { float d[]; };

// A tensor's first element and strides of dims 1..3.
struct Rows {
    uint off, s1, s2, s3;
};
uint row_at(Rows r, uint i1, uint i2, uint i3) { return r.off + i1 * r.s1 + i2 * r.s2 + i3 * r.s3; }

layout(push_constant) uniform Push {
    Rows vq, vk, vv, vg, vbeta, vs;
    uint d_off, S, H, T, n_seqs, Hk, seqs_per_qk, K;
} p;

void main() {
    uint id = global_index(64);
    uint S = p.S, H = p.H, T = p.T;
    if (id >= S * H * p.n_seqs) return;
    uint j = id % S, h = id / S % H, n = id / (S * H);
    uint hk = h % p.Hk, nk = n / p.seqs_per_qk;
    uint state_floats = S * S * H * p.n_seqs;
    uint head = (n * H + h) * S * S;
    uint st = p.d_off + S * H * T * p.n_seqs + head + j * S;  // row j in slot 0
    uint src = row_at(p.vs, j, h, n);
    for (uint i = 0u; i < S; ++i)
        d[st + i] = s0[src + i];
    float scale = 1.0 / sqrt(float(S));
    for (uint t = 0u; t < T; ++t) {
        uint qt = row_at(p.vq, hk, t, nk), kt = row_at(p.vk, hk, t, nk);
        uint gt = row_at(p.vg, h, t, n);
        float b = beta[row_at(p.vbeta, h, t, n)];
        float e = PER_KEY_GATE ? 1.0 : exp(g[gt]);
        // delta = beta (v_j - e sum_i M[j][i] k_i), the gate applied first when it is per key.
        float dot_k = 0.0;
        for (uint i = 0u; i < S; ++i) {
            float m = d[st + i];
            if (PER_KEY_GATE) {
                m *= exp(g[gt + i]);
                d[st + i] = m;
            }
            dot_k += m * k[kt + i];
        }
        float delta = (v[row_at(p.vv, h, t, n) + j] - e * dot_k) * b;
        float o = 0.0;
        for (uint i = 0u; i < S; ++i) {
            float m = d[st + i] * e + k[kt + i] * delta;
            d[st + i] = m;
            o += m * q[qt + i];
        }
        d[p.d_off + ((n * T + t) * H + h) * S + j] = o * scale;
        uint slot = T - 1u - t;
        if (slot >= 1u && slot < p.K) {
            for (uint i = 0u; i < S; ++i)
                d[st + slot * state_floats + i] = d[st + i];
        }
    }
}
