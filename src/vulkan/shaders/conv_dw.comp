#version 450
// CONV_2D_DW: d[ow, oh, c, n] = sum over (kh, kw) of k[kw, kh, 0, c] *
// x[ow*s0 + kw*d0 - p0, oh*s1 + kh*d1 - p1, c, n] (positions outside x add nothing), accumulated in
// F32 in that order; any strides. One invocation per result element; with CHANNELS_FIRST
// (x and d stored channels innermost) neighbouring invocations take neighbouring channels.
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const bool CHANNELS_FIRST = false;

layout(binding = 0) readonly buffer K { STORAGE(K_TYPE) k[]; };
layout(binding = 1) readonly buffer X { STORAGE(X_TYPE) x[]; };
layout(binding = 2) writeonly buffer D { STORAGE(X_TYPE) d[]; };

layout(push_constant) uniform Push {
    View vk, vx, vd;
    int s0, s1, p0, p1, d0, d1;
    uint kw, kh, width, height;
    uint ow, oh, channels, count;  // count = ow * oh * channels * n
} p;

void main() {
    uint i = global_index(256);
    if (i >= p.count) return;
    uint ow, oh, c, n;
    if (CHANNELS_FIRST) {
        c = i % p.channels;
        uint t = i / p.channels;
        ow = t % p.ow;
        t /= p.ow;
        oh = t % p.oh;
        n = t / p.oh;
    } else {
        ow = i % p.ow;
        uint t = i / p.ow;
        oh = t % p.oh;
        t /= p.oh;
        c = t % p.channels;
        n = t / p.channels;
    }
    uint k_base = p.vk.off + c * p.vk.s3;
    uint x_base = p.vx.off + c * p.vx.s2 + n * p.vx.s3;
    int iw0 = int(ow) * p.s0 - p.p0, ih0 = int(oh) * p.s1 - p.p1;
    float acc = 0.0;
    for (uint kh = 0u; kh < p.kh; ++kh) {
        int ih = ih0 + int(kh) * p.d1;
        if (ih < 0 || ih >= int(p.height)) continue;
        for (uint kw = 0u; kw < p.kw; ++kw) {
            int iw = iw0 + int(kw) * p.d0;
            if (iw < 0 || iw >= int(p.width)) continue;
            acc += LOAD(K_TYPE, k[k_base + kh * p.vk.s1 + kw * p.vk.s0]) *
                   LOAD(X_TYPE, x[x_base + uint(ih) * p.vx.s1 + uint(iw) * p.vx.s0]);
        }
    }
    d[element_index(p.vd, ow, oh, c, n)] = STORE(X_TYPE, acc);
}
