#version 450
// POOL_2D_BACK as a gather: one invocation per element (ix, iy) of the F32 result, the sum over the
// windows (oy, ox) that contain it, in ascending order as the CPU's scatter adds them, of
// g[ox, oy] (max: only where (ix, iy) is the window's first maximum of af, rows then columns, the
// first position inside taken even if it is NaN) or g[ox, oy] * share (avg, share = 1/(k0*k1)).
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const bool IS_MAX = true;

layout(binding = 0) readonly buffer G { STORAGE(G_TYPE) g[]; };
layout(binding = 1) readonly buffer A { STORAGE(A_TYPE) af[]; };
layout(binding = 2) writeonly buffer D { float d[]; };

layout(push_constant) uniform Push {
    View vg, va, vd;
    int k0, k1, s0, s1, p0, p1;
    uint width, height, gw, gh, ne2, count;  // count = width * height * ne2 * ne3
    float share;
} p;

// The window range [lo, hi] of outputs along one axis whose windows contain position i.
ivec2 windows(int i, int k, int s, int pad, uint n) {
    int t = i + pad;  // o*s <= t <= o*s + k - 1
    int lo = t - k + 1 <= 0 ? 0 : (t - k + s) / s;
    return ivec2(lo, min(t / s, int(n) - 1));
}

void main() {
    uint i = global_index(256);
    if (i >= p.count) return;
    uvec4 e = unravel(i, uvec4(p.width, p.height, p.ne2, 0u));
    ivec2 wy = windows(int(e.y), p.k1, p.s1, p.p1, p.gh), wx = windows(int(e.x), p.k0, p.s0, p.p0, p.gw);
    uint g_plane = p.vg.off + e.z * p.vg.s2 + e.w * p.vg.s3;
    uint a_plane = p.va.off + e.z * p.va.s2 + e.w * p.va.s3;
    float acc = 0.0;
    for (int oy = wy.x; oy <= wy.y; ++oy)
        for (int ox = wx.x; ox <= wx.y; ++ox) {
            float grad = LOAD(G_TYPE, g[g_plane + uint(oy) * p.vg.s1 + uint(ox) * p.vg.s0]);
            if (!IS_MAX) {
                acc += grad * p.share;
                continue;
            }
            int iy0 = oy * p.s1 - p.p1, ix0 = ox * p.s0 - p.p0;
            int y_lo = max(iy0, 0), y_hi = min(iy0 + p.k1, int(p.height));
            int x_lo = max(ix0, 0), x_hi = min(ix0 + p.k0, int(p.width));
            int best_x = -1, best_y = -1;
            float best = -uintBitsToFloat(0x7f7fffffu);  // -FLT_MAX
            for (int iy = y_lo; iy < y_hi; ++iy)
                for (int ix = x_lo; ix < x_hi; ++ix) {
                    float v = LOAD(A_TYPE, af[a_plane + uint(iy) * p.va.s1 + uint(ix) * p.va.s0]);
                    if (v > best || best_x < 0) best = v, best_x = ix, best_y = iy;
                }
            if (best_x == int(e.x) && best_y == int(e.y)) acc += grad;
        }
    d[element_index(p.vd, e.x, e.y, e.z, e.w)] = acc;
}
