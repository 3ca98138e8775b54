#version 450
// CONV_2D, CONV_3D as a tiled implicit GEMM (the push constants and views of conv.comp): per
// sample n, d[m, o] = sum over taps t = ((c*KD + kd)*KH + kh)*KW + kw of x_unfolded[t, m] *
// k[t, o], m = ow + OW*(oh + OH*od) the output positions (contiguous in d), o the output channels.
// A workgroup computes a TILE x TILE block (positions x output channels), stepping over the taps
// in slices of BK staged in shared memory; the unfolded input is never stored: each slice is read
// straight from x (zeros outside it). Each invocation accumulates an 8 x 8 register block of
// positions tx + 16 i and output channels ty + 16 j, in F32, taps in ascending order (8 x 8 rather
// than 4 x 4: half the shared-memory reads per multiply-add, which lavapipe's emulated shared
// memory makes the cost that counts; 8.3 KB of shared memory).
#include "common.glsl"

const uint THREADS = 256, BLOCK = 8, SPREAD = 16, TILE = SPREAD * BLOCK, BK = 8, PAD = TILE + 1;
// Staging: LANES invocations per tap of a slice, PER positions (output channels) each.
const uint LANES = THREADS / BK, PER = TILE / LANES;
layout(local_size_x = THREADS) in;
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

shared float xs[BK * PAD];  // xs[t * PAD + m]: taps t0 + t at positions m0 + m
shared float ks[BK * PAD];  // ks[t * PAD + o]: taps t0 + t of output channels o0 + o

// The offsets of tap t in k (from its output channel's first element) and in x (from the sample's
// first element, before the position), and its kernel offsets (kw*d0, kh*d1, kd*d2).
struct Tap {
    uint k_off, x_off;
    ivec3 reach;
};

Tap tap_of(uint t) {
    uint plane = p.kw * p.kh, volume = plane * p.kd;
    uint c = t / volume, r = t - c * volume;
    uint kd = r / plane;
    r -= kd * plane;
    uint kh = r / p.kw, kw = r - kh * p.kw;
    uint k_c = IS_3D ? p.vk.s3 : p.vk.s2, x_c = IS_3D ? p.vx.s3 : p.vx.s2;
    Tap tap;
    tap.k_off = c * k_c + kd * (IS_3D ? p.vk.s2 : 0u) + kh * p.vk.s1 + kw * p.vk.s0;
    tap.x_off = c * x_c;
    tap.reach = ivec3(int(kw) * p.d0, int(kh) * p.d1, int(kd) * p.d2);
    return tap;
}

void main() {
    uint positions = p.ow * p.oh * p.od, taps = p.channels * p.kw * p.kh * p.kd;
    uint m_tiles = (positions + TILE - 1) / TILE;
    uint tiles = m_tiles * ((p.oc + TILE - 1) / TILE);
    uint samples = positions * p.oc == 0u ? 0u : p.count / (positions * p.oc);
    uint g = group_index();
    uint n = g / tiles;
    if (n >= samples) return;  // the spread of groups over x and y rounds up
    g -= n * tiles;
    uint m0 = (g % m_tiles) * TILE, o0 = (g / m_tiles) * TILE;
    uint t = gl_LocalInvocationID.x, tx = t % SPREAD, ty = t / SPREAD;

    // Staging: this invocation loads tap t0 + tr of every slice, at positions m0 + tc + LANES i of
    // the input and for output channels o0 + tc + LANES i of the weights, so that it splits one tap
    // per slice into its coordinates (the first input coordinates of its positions are fixed).
    uint tr = t / LANES, tc = t % LANES;
    ivec3 origin[PER];
    bool m_inside[PER];
    for (uint i = 0; i < PER; ++i) {
        uint m = m0 + tc + LANES * i;
        m_inside[i] = m < positions;
        uint mw = m % p.ow, mh = m / p.ow % p.oh, md = m / (p.ow * p.oh);
        origin[i] = ivec3(int(mw) * p.s0 - p.p0, int(mh) * p.s1 - p.p1, int(md) * p.s2 - p.p2);
    }
    uint x_sample = p.vx.off + n * (IS_3D ? p.channels * p.vx.s3 : p.vx.s3);
    uint x_d = IS_3D ? p.vx.s2 : 0u;
    uint k_o = IS_3D ? p.channels * p.vk.s3 : p.vk.s3;
    ivec3 extent = ivec3(p.width, p.height, p.depth);

    float acc[BLOCK][BLOCK];
    for (uint i = 0; i < BLOCK; ++i)
        for (uint j = 0; j < BLOCK; ++j) acc[i][j] = 0.0;

    for (uint t0 = 0; t0 < taps; t0 += BK) {
        bool tap_inside = t0 + tr < taps;
        Tap tap = tap_of(tap_inside ? t0 + tr : 0u);
        for (uint i = 0; i < PER; ++i) {
            ivec3 at = origin[i] + tap.reach;
            float v = 0.0;
            if (tap_inside && m_inside[i] && all(greaterThanEqual(at, ivec3(0))) && all(lessThan(at, extent)))
                v = LOAD(X_TYPE, x[x_sample + tap.x_off + uint(at.z) * x_d + uint(at.y) * p.vx.s1 +
                                   uint(at.x) * p.vx.s0]);
            xs[tr * PAD + tc + LANES * i] = v;
        }
        for (uint i = 0; i < PER; ++i) {
            uint o = o0 + tc + LANES * i;
            bool inside = tap_inside && o < p.oc;
            ks[tr * PAD + tc + LANES * i] = inside ? LOAD(K_TYPE, k[p.vk.off + o * k_o + tap.k_off]) : 0.0;
        }
        barrier();
        for (uint r = 0; r < BK; ++r) {
            float xv[BLOCK], kv[BLOCK];
            for (uint i = 0; i < BLOCK; ++i) xv[i] = xs[r * PAD + tx + SPREAD * i];
            for (uint j = 0; j < BLOCK; ++j) kv[j] = ks[r * PAD + ty + SPREAD * j];
            for (uint i = 0; i < BLOCK; ++i)
                for (uint j = 0; j < BLOCK; ++j) acc[i][j] = fma(xv[i], kv[j], acc[i][j]);
        }
        barrier();
    }

    uint d_sample = p.d_off + n * positions * p.oc;
    for (uint j = 0; j < BLOCK; ++j) {
        uint o = o0 + ty + SPREAD * j;
        if (o >= p.oc) break;
        for (uint i = 0; i < BLOCK; ++i) {
            uint mi = m0 + tx + SPREAD * i;
            if (mi < positions) d[d_sample + o * positions + mi] = STORE(D_TYPE, acc[i][j]);
        }
    }
}
