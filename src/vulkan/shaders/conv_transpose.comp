#version 450
// CONV_TRANSPOSE_1D, CONV_TRANSPOSE_2D as a gather: one invocation per element of the contiguous
// result d[ox, oy, o, n] = sum over c, then the taps (ky, kx) with oy = iy*s + ky, ox = ix*s + kx
// inside x, of k[kx, ky, o, c] * x[ix, iy, c, n], accumulated in F32 in that order (ix, iy
// descending). The 1-D op arrives as the 2-D one with KH = H = OH = 1 and one sample.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer K { STORAGE(K_TYPE) k[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) writeonly buffer D { float d[]; };

layout(push_constant) uniform Push {
    View vk;  // strides of kx, ky, o, c
    View vx;  // strides of w, h, c, n
    uint d_off;
    uint stride, width, height, channels, kw, kh;
    uint ow, oh, oc, count;  // count = ow * oh * oc * n
} p;

void main() {
    uint i = global_index(256);
    if (i >= p.count) return;
    uint t = i;
    uint ox = t % p.ow;
    t /= p.ow;
    uint oy = t % p.oh;
    t /= p.oh;
    uint o = t % p.oc, n = t / p.oc;
    // The last input position whose taps reach ox (oy): min(ox / s, W - 1).
    int ix_last = min(int(ox / p.stride), int(p.width) - 1), iy_last = min(int(oy / p.stride), int(p.height) - 1);
    float acc = 0.0;
    for (uint c = 0u; c < p.channels; ++c) {
        uint k_plane = p.vk.off + o * p.vk.s2 + c * p.vk.s3;
        uint x_plane = p.vx.off + c * p.vx.s2 + n * p.vx.s3;
        for (int iy = iy_last; iy >= 0; --iy) {
            uint ky = oy - uint(iy) * p.stride;
            if (ky >= p.kh) break;
            for (int ix = ix_last; ix >= 0; --ix) {
                uint kx = ox - uint(ix) * p.stride;
                if (kx >= p.kw) break;
                acc += LOAD(K_TYPE, k[k_plane + ky * p.vk.s1 + kx * p.vk.s0]) *
                       x[x_plane + uint(iy) * p.vx.s1 + uint(ix) * p.vx.s0];
            }
        }
    }
    d[p.d_off + i] = acc;
}
