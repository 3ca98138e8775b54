#version 450
// OPT_STEP_SGD and OPT_STEP_ADAMW, in place on F32 w (and AdamW's moments m, v), any strides, with the
// CPU's formulas: SGD (hyper = alpha, wd) w = w (1 - alpha wd) - alpha g; AdamW (hyper = alpha,
// beta1, beta2, eps, wd, beta1h, beta2h) m = beta1 m + (1 - beta1) g, v = beta2 v + (1 - beta2) g^2,
// w = w (1 - alpha wd) - alpha (m beta1h) / (sqrt(v beta2h) + eps).
#include "common.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const bool ADAMW = false;

layout(binding = 0) buffer W { float w[]; };
layout(binding = 1) readonly buffer G { float g[]; };
layout(binding = 2) buffer M { float m[]; };
layout(binding = 3) buffer V { float v[]; };
layout(binding = 4) readonly buffer H { float hyper[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    View vw, vg, vm, vv;
    uint hyper_off;
} p;

void main() {
    uint first, end;
    if (!flat_run(p.ne.x * p.ne.y * p.ne.z * p.ne.w, first, end)) return;
    float alpha = hyper[p.hyper_off];
    float wd = hyper[p.hyper_off + (ADAMW ? 4u : 1u)];
    float keep = 1.0 - alpha * wd;
    uvec4 c = unravel(first, p.ne);
    for (uint k = first; k < end; ++k, c = next_coord(c, p.ne)) {
        uint iw = element_index(p.vw, c.x, c.y, c.z, c.w);
        float gk = g[element_index(p.vg, c.x, c.y, c.z, c.w)];
        if (!ADAMW) {
            w[iw] = w[iw] * keep - alpha * gk;
            continue;
        }
        float beta1 = hyper[p.hyper_off + 1u], beta2 = hyper[p.hyper_off + 2u], eps = hyper[p.hyper_off + 3u];
        float beta1h = hyper[p.hyper_off + 5u], beta2h = hyper[p.hyper_off + 6u];
        uint im = element_index(p.vm, c.x, c.y, c.z, c.w), iv = element_index(p.vv, c.x, c.y, c.z, c.w);
        float mk = m[im] * beta1 + gk * (1.0 - beta1);
        float vk = v[iv] * beta2 + gk * gk * (1.0 - beta2);
        m[im] = mk;
        v[iv] = vk;
        w[iw] = w[iw] * keep - alpha * (mk * beta1h) / (sqrt(vk * beta2h) + eps);
    }
}
