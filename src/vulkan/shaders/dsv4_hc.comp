#version 450
// DeepSeek-V4's hyper-connection ops (docs/ops.md), F32 of any strides into contiguous F32 results:
// OP 0 DSV4_HC_COMB, one invocation per token (its hc x hc matrix softmaxed and Sinkhorn-normalised
// in the result, in the CPU's order); OP 1 DSV4_HC_PRE, r[e, t] = sum_s x[e, s, t] w[s, t]; OP 2
// DSV4_HC_POST, r[e, d, t] = x[e, t] post[d, t] + sum_s res[e, s, t] comb[d, s, t], one
// invocation per result element.
#include "common.glsl"

layout(local_size_x = 64) in;

// COMB: mixes, scale, base; PRE: x, w; POST: x, res, post, comb. Unused bindings repeat one.
layout(binding = 0) readonly buffer In0 { float in0[]; };
layout(binding = 1) readonly buffer In1 { float in1[]; };
layout(binding = 2) readonly buffer In2 { float in2[]; };
layout(binding = 3) readonly buffer In3 { float in3[]; };
layout(binding = 4) buffer D { float d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;  // the result
    View v0, v1, v2, v3;
    uint d_off;
    float eps;     // COMB
    uint n_iter;   // COMB
} p;

#if OP == 0
// Divides each of the hc lines of m (elements along apart, lines across apart) by its sum + eps.
void normalise_lines(uint m, uint hc, uint along, uint across) {
    for (uint line = 0u; line < hc; ++line) {
        float sum = p.eps;
        for (uint i = 0u; i < hc; ++i)
            sum += d[m + line * across + i * along];
        for (uint i = 0u; i < hc; ++i)
            d[m + line * across + i * along] /= sum;
    }
}
#endif

void main() {
    uint id = global_index(64);
#if OP == 0
    uint hc = p.ne.x;
    if (id >= p.ne.z) return;
    uint m = p.d_off + id * hc * hc;  // m[a + hc c]
    float comb_scale = in1[element_index(p.v1, 2u, 0u, 0u, 0u)];
    for (uint i = 0u; i < hc * hc; ++i)
        d[m + i] = in0[element_index(p.v0, 2u * hc + i, id, 0u, 0u)] * comb_scale +
                   in2[element_index(p.v2, 2u * hc + i, 0u, 0u, 0u)];
    for (uint c = 0u; c < hc; ++c) {
        uint col = m + c * hc;
        float top = d[col];
        for (uint a = 1u; a < hc; ++a)
            top = max(top, d[col + a]);
        float sum = 0.0;
        for (uint a = 0u; a < hc; ++a) {
            float e = exp(d[col + a] - top);
            d[col + a] = e;
            sum += e;
        }
        for (uint a = 0u; a < hc; ++a)
            d[col + a] = d[col + a] / sum + p.eps;
    }
    for (uint it = 0u; it < p.n_iter; ++it) {
        if (it > 0u) normalise_lines(m, hc, 1u, hc);
        normalise_lines(m, hc, hc, 1u);
    }
#elif OP == 1
    if (id >= p.ne.x * p.ne.y) return;
    uint e = id % p.ne.x, t = id / p.ne.x;
    uint hc = p.ne.z;  // the host passes x's hc here
    float r = 0.0;
    for (uint s = 0u; s < hc; ++s)
        r += in0[element_index(p.v0, e, s, t, 0u)] * in1[element_index(p.v1, s, t, 0u, 0u)];
    d[p.d_off + id] = r;
#else
    if (id >= p.ne.x * p.ne.y * p.ne.z) return;
    uint e = id % p.ne.x, dd = id / p.ne.x % p.ne.y, t = id / (p.ne.x * p.ne.y);
    uint hc = p.ne.y;
    float r = in0[element_index(p.v0, e, t, 0u, 0u)] * in2[element_index(p.v2, dd, t, 0u, 0u)];
    for (uint s = 0u; s < hc; ++s)
        r += in1[element_index(p.v1, e, s, t, 0u)] * in3[element_index(p.v3, dd, s, t, 0u)];
    d[p.d_off + id] = r;
#endif
}
