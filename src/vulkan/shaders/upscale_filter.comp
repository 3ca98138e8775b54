#version 450
// UPSCALE (ggml_interpolate) of F32/F16/BF16 tensors of any strides in every mode upscale.comp does
// not take: NEAREST with align corners or 16-bit types, BILINEAR (with align corners, antialias),
// BICUBIC. Dims 2 and 3 take the nearest source index floor(i * a.ne / ne); dims 0 and 1 weigh the
// source elements around x = (i + o) / s - o with the CPU's formulas (src/cpu/kernels/shape.cpp) and
// its order of sums: the taps along dim 1 are summed first, then those along dim 0.
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MODE = 0;  // ggml_scale_mode: 0 nearest, 1 bilinear, 2 bicubic
layout(constant_id = 1) const bool ALIGN_CORNERS = false;
layout(constant_id = 2) const bool ANTIALIAS = false;  // bilinear only

// The taps' array size: 2 (bilinear), 4 (bicubic), the longer axis' triangle filter (antialias).
layout(constant_id = 3) const uint MAX_TAPS = 4;

layout(binding = 0) readonly buffer A { STORAGE(T) a[]; };
layout(binding = 1) writeonly buffer D { STORAGE(T) d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    uvec4 a_ne;
    View va, vd;
    float scale0, scale1;  // s of dims 0 and 1 (computed on the host as the CPU does)
} p;

// The cubic convolution kernel with A = -0.75.
float cubic(float t) {
    const float A = -0.75;
    t = abs(t);
    if (t <= 1.0) return ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0;
    if (t < 2.0) return ((A * t - 5.0 * A) * t + 8.0 * A) * t - 4.0 * A;
    return 0.0;
}

uint edge(int j, uint n) { return uint(clamp(j, 0, int(n) - 1)); }

uint nearest(uint i, uint n, uint ne, bool aligned) {
    return aligned && n > 1u && ne > 1u ? i * (n - 1u) / (ne - 1u) : i * n / ne;
}

// The taps of dims 0 and 1 (axis 0, 1) of this invocation's result element.
uint tap_count[2];
uint tap_index[2][MAX_TAPS];
float tap_weight[2][MAX_TAPS];

// The source indices and weights of result index i along axis, of n source elements and scale s.
void fill_taps(uint axis, uint i, uint n, float s) {
    float o = ALIGN_CORNERS ? 0.0 : 0.5;
    if (ANTIALIAS) {
        float x = (float(i) + o) / s, sup = max(1.0, 1.0 / s);
        int lo = max(int(x - sup + o), 0), hi = min(int(x + sup + o), int(n));
        uint taps = uint(ceil(2.0 * sup)) + 1u;
        float total = 0.0;
        uint t = 0u;
        for (int j = lo; j < hi && t < taps; ++j) {
            float w = max(0.0, 1.0 - abs(float(j) - x + o) / sup);
            if (w <= 0.0) continue;
            tap_index[axis][t] = uint(j);
            tap_weight[axis][t++] = w;
            total += w;
        }
        for (uint k = 0u; k < t; ++k) tap_weight[axis][k] /= total;
        tap_count[axis] = t;
        return;
    }
    float x = (float(i) + o) / s - o, x0 = floor(x);
    int j0 = int(x0);
    if (MODE == 2u) {
        tap_count[axis] = 4u;
        for (uint k = 0u; k < 4u; ++k) {
            tap_index[axis][k] = edge(j0 - 1 + int(k), n);
            tap_weight[axis][k] = cubic(x - x0 + 1.0 - float(k));
        }
        return;
    }
    tap_count[axis] = 2u;
    tap_index[axis][0] = edge(j0, n);
    tap_index[axis][1] = edge(j0 + 1, n);
    float dx = clamp(x - float(tap_index[axis][0]), 0.0, 1.0);
    tap_weight[axis][0] = 1.0 - dx;
    tap_weight[axis][1] = dx;
}

void main() {
    uint i = global_index(256);
    if (i >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    uvec4 c = unravel(i, p.ne);
    uint j2 = nearest(c.z, p.a_ne.z, p.ne.z, false), j3 = nearest(c.w, p.a_ne.w, p.ne.w, false);
    float v;
    if (MODE == 0u) {
        uint j0 = nearest(c.x, p.a_ne.x, p.ne.x, ALIGN_CORNERS), j1 = nearest(c.y, p.a_ne.y, p.ne.y, ALIGN_CORNERS);
        v = LOAD(T, a[element_index(p.va, j0, j1, j2, j3)]);
    } else {
        fill_taps(0u, c.x, p.a_ne.x, p.scale0);
        fill_taps(1u, c.y, p.a_ne.y, p.scale1);
        v = 0.0;
        for (uint kx = 0u; kx < tap_count[0]; ++kx) {
            float blend = 0.0;
            for (uint ky = 0u; ky < tap_count[1]; ++ky) {
                uint k = element_index(p.va, tap_index[0][kx], tap_index[1][ky], j2, j3);
                blend += tap_weight[1][ky] * LOAD(T, a[k]);
            }
            v += tap_weight[0][kx] * blend;
        }
    }
    d[element_index(p.vd, c.x, c.y, c.z, c.w)] = STORE(T, v);
}
