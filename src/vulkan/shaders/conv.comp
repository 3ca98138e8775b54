#version 450
// CONV_2D, CONV_3D (direct): one invocation per element of the contiguous result,
// d[ow, oh, od, o, n] = sum over (c, kd, kh, kw) of k[kw, kh, kd, c, o] *
// x[ow*s0 + kw*d0 - p0, oh*s1 + kh*d1 - p1, od*s2 + kd*d2 - p2, c, n] (positions outside x add
// nothing), accumulated in F32 in that order. CONV_2D is the 3-D case with KD = D = OD = 1; its
// views are the tensors' own, k (kw, kh, c, o) and x (w, h, c, n). CONV_3D's views are
// k (kw, kh, kd, o*C + c) and x (w, h, d, n*C + c), so that the channel and the output channel (or
// sample) share dimension 3.
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const bool IS_3D = false;

layout(binding = 0) readonly buffer K { STORAGE(K_TYPE) k[]; };
layout(binding = 1) readonly buffer X { STORAGE(X_TYPE) x[]; };
layout(binding = 2) writeonly buffer D { STORAGE(D_TYPE) d[]; };

layout(push_constant) uniform Push {
    View vk, vx;
    uint d_off;
    int s0, s1, s2, p0, p1, p2, d0, d1, d2;
    uint kw, kh, kd, channels, width, height, depth;
    uint ow, oh, od, oc, count;  // count = ow * oh * od * oc * n
} p;

void main() {
    uint i = global_index(256);
    if (i >= p.count) return;
    uint t = i;
    uint ow = t % p.ow;
    t /= p.ow;
    uint oh = t % p.oh;
    t /= p.oh;
    uint od = t % p.od;
    t /= p.od;
    uint o = t % p.oc, n = t / p.oc;

    // Strides of a channel and of a depth step, and the first element of (o, n).
    uint k_c = IS_3D ? p.vk.s3 : p.vk.s2, k_d = IS_3D ? p.vk.s2 : 0u;
    uint x_c = IS_3D ? p.vx.s3 : p.vx.s2, x_d = IS_3D ? p.vx.s2 : 0u;
    uint k_base = p.vk.off + o * (IS_3D ? p.channels * p.vk.s3 : p.vk.s3);
    uint x_base = p.vx.off + n * (IS_3D ? p.channels * p.vx.s3 : p.vx.s3);

    int iw0 = int(ow) * p.s0 - p.p0, ih0 = int(oh) * p.s1 - p.p1, id0 = int(od) * p.s2 - p.p2;
    float acc = 0.0;
    for (uint c = 0u; c < p.channels; ++c) {
        for (uint kd = 0u; kd < p.kd; ++kd) {
            int id = id0 + int(kd) * p.d2;
            if (id < 0 || id >= int(p.depth)) continue;
            for (uint kh = 0u; kh < p.kh; ++kh) {
                int ih = ih0 + int(kh) * p.d1;
                if (ih < 0 || ih >= int(p.height)) continue;
                uint k_row = k_base + c * k_c + kd * k_d + kh * p.vk.s1;
                uint x_row = x_base + c * x_c + uint(id) * x_d + uint(ih) * p.vx.s1;
                for (uint kw = 0u; kw < p.kw; ++kw) {
                    int iw = iw0 + int(kw) * p.d0;
                    if (iw < 0 || iw >= int(p.width)) continue;
                    acc += LOAD(K_TYPE, k[k_row + kw * p.vk.s0]) * LOAD(X_TYPE, x[x_row + uint(iw) * p.vx.s0]);
                }
            }
        }
    }
    d[p.d_off + i] = STORE(D_TYPE, acc);
}
