#version 450
// SSM_CONV, Mamba's causal convolution: r[c, t, s] = sum_k sx[t + k, c, s] * w[k, c], sx (X_TYPE) and
// w (W_TYPE) of any strides, the result F32. One invocation per result element, summing its taps
// in order in float as the CPU does.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer X { STORAGE(X_TYPE) sx[]; };
layout(binding = 1) readonly buffer W { STORAGE(W_TYPE) w[]; };
layout(binding = 2) writeonly buffer D { float d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;  // the result: channels, tokens, sequences, 1
    View vx, vw, vd;
    uint d_conv;
} p;

void main() {
    uint i = global_index(256);
    if (i >= p.ne.x * p.ne.y * p.ne.z) return;
    uvec4 c = unravel(i, p.ne);  // (channel, token, sequence)
    uint x_at = element_index(p.vx, c.y, c.x, c.z, 0u);
    uint w_at = element_index(p.vw, 0u, c.x, 0u, 0u);
    float sum = 0.0;
    for (uint k = 0u; k < p.d_conv; ++k)
        sum += LOAD(X_TYPE, sx[x_at + k * p.vx.s0]) * LOAD(W_TYPE, w[w_at + k * p.vw.s0]);
    d[element_index(p.vd, c.x, c.y, c.z, 0u)] = sum;
}
