#version 450
// IM2COL_BACK as a gather: one invocation per element of the result,
// d[iw, ih, c, n] = sum over the taps (kh, kw), ascending, with ih = oh*s1 + kh*d1 - p1 and
// iw = ow*s0 + kw*d0 - p0 for an output position (ow, oh) of g, of g[(c*KH + kh)*KW + kw, ow, oh, n]
// (F32). The 1-D op arrives as the 2-D one with KH = H = OH = 1.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer G { float g[]; };
layout(binding = 1) writeonly buffer D { float d[]; };

layout(push_constant) uniform Push {
    View vg;  // strides of r, ow, oh, n
    View vd;  // strides of w, h, c, n
    int s0, s1, p0, p1, d0, d1;
    uint kw, kh, width, height, channels, ow, oh, count;  // count = width * height * channels * n
} p;

void main() {
    uint i = global_index(256);
    if (i >= p.count) return;
    uvec4 e = unravel(i, uvec4(p.width, p.height, p.channels, 0u));
    float acc = 0.0;
    for (uint kh = 0u; kh < p.kh; ++kh) {
        int th = int(e.y) + p.p1 - int(kh) * p.d1;  // oh * s1
        if (th < 0) break;
        if (th % p.s1 != 0 || th / p.s1 >= int(p.oh)) continue;
        uint g_row = p.vg.off + uint(th / p.s1) * p.vg.s2 + e.w * p.vg.s3 + (e.z * p.kh + kh) * p.kw * p.vg.s0;
        for (uint kw = 0u; kw < p.kw; ++kw) {
            int tw = int(e.x) + p.p0 - int(kw) * p.d0;  // ow * s0
            if (tw < 0) break;
            if (tw % p.s0 != 0 || tw / p.s0 >= int(p.ow)) continue;
            acc += g[g_row + kw * p.vg.s0 + uint(tw / p.s0) * p.vg.s1];
        }
    }
    d[element_index(p.vd, e.x, e.y, e.z, e.w)] = acc;
}
