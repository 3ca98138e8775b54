#version 450
// POOL_1D, POOL_2D: one invocation per element of the F32 result, the max or average of the window
// of a starting at (ox*s0 - p0, oy*s1 - p1), over the positions inside a, rows then columns as the
// CPU visits them: max keeps e > v ? e : v from -FLT_MAX (NaNs are skipped), avg sums them and
// scales by 1/(k0*k1). POOL_1D arrives as POOL_2D with k1 = s1 = 1, p1 = 0.
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const bool IS_MAX = true;

layout(binding = 0) readonly buffer A { STORAGE(A_TYPE) a[]; };
layout(binding = 1) writeonly buffer D { float d[]; };

layout(push_constant) uniform Push {
    View va, vd;
    int k0, k1, s0, s1, p0, p1;
    uint width, height, ow, oh, ne2, count;  // count = ow * oh * ne2 * ne3
    float scale;                             // 1/(k0*k1)
} p;

void main() {
    uint i = global_index(256);
    if (i >= p.count) return;
    uvec4 e = unravel(i, uvec4(p.ow, p.oh, p.ne2, 0u));
    int ix0 = int(e.x) * p.s0 - p.p0, iy0 = int(e.y) * p.s1 - p.p1;
    int x_lo = max(ix0, 0), x_hi = min(ix0 + p.k0, int(p.width));
    int y_lo = max(iy0, 0), y_hi = min(iy0 + p.k1, int(p.height));
    uint plane = p.va.off + e.z * p.va.s2 + e.w * p.va.s3;
    float v = IS_MAX ? -uintBitsToFloat(0x7f7fffffu) : 0.0;  // -FLT_MAX
    for (int iy = y_lo; iy < y_hi; ++iy)
        for (int ix = x_lo; ix < x_hi; ++ix) {
            float x = LOAD(A_TYPE, a[plane + uint(iy) * p.va.s1 + uint(ix) * p.va.s0]);
            v = IS_MAX ? (x > v ? x : v) : v + x;
        }
    d[element_index(p.vd, e.x, e.y, e.z, e.w)] = IS_MAX ? v : v * p.scale;
}
