#version 450
// CROSS_ENTROPY_LOSS and CROSS_ENTROPY_LOSS_BACK of F32/F16/BF16 logits and labels of any strides,
// one workgroup per row: the row's maximum, then s = sum exp(x - max), then
//   LOSS: the row's part sum label (x - (max + log s)) into the F32 partials (a sum.comp pass then
//         forms -sum / rows);
//   BACK: dx = (exp(x - max) / s - label) * grad / rows.
#include "common.glsl"
#include "row_reduce.glsl"

layout(constant_id = 1) const bool BACK = false;

layout(binding = 0) readonly buffer X { STORAGE(T) x[]; };
layout(binding = 1) readonly buffer L { STORAGE(T) label[]; };
layout(binding = 2) readonly buffer G { STORAGE(T) grad[]; };  // BACK: one element
layout(binding = 3) writeonly buffer PD { float parts[]; };     // LOSS: one per row
layout(binding = 4) writeonly buffer D { STORAGE(T) d[]; };     // BACK: logits' shape

layout(push_constant) uniform Push {
    uvec4 ne;
    View vx, vl, vd;
    uint grad_off;
    float rows;
} p;

shared float partial_max[WG];

float workgroup_max(float v) {
    uint t = gl_LocalInvocationID.x;
    partial_max[t] = v;
    barrier();
    for (uint half_ = WG / 2; half_ > 0; half_ >>= 1) {
        if (t < half_) partial_max[t] = max(partial_max[t], partial_max[t + half_]);
        barrier();
    }
    return partial_max[0];
}

void main() {
    uint row = group_index();
    if (row >= p.ne.y * p.ne.z * p.ne.w) return;
    uint i1 = row % p.ne.y, i2 = row / p.ne.y % p.ne.z, i3 = row / (p.ne.y * p.ne.z);
    uint x_row = element_index(p.vx, 0, i1, i2, i3), l_row = element_index(p.vl, 0, i1, i2, i3);
    uint t = gl_LocalInvocationID.x;

    float mx = uintBitsToFloat(0xff800000u);
    for (uint i0 = t; i0 < p.ne.x; i0 += WG) mx = max(mx, LOAD(T, x[x_row + i0 * p.vx.s0]));
    mx = workgroup_max(mx);
    float s = 0.0;
    for (uint i0 = t; i0 < p.ne.x; i0 += WG) s += exp(LOAD(T, x[x_row + i0 * p.vx.s0]) - mx);
    s = workgroup_sum(s);

    if (!BACK) {
        float shift = mx + log(s), part = 0.0;
        for (uint i0 = t; i0 < p.ne.x; i0 += WG)
            part += LOAD(T, label[l_row + i0 * p.vl.s0]) * (LOAD(T, x[x_row + i0 * p.vx.s0]) - shift);
        part = workgroup_sum(part);
        if (t == 0u) parts[row] = part;
        return;
    }
    float inv = 1.0 / s, scale = LOAD(T, grad[p.grad_off]) / p.rows;
    uint d_row = element_index(p.vd, 0, i1, i2, i3);
    for (uint i0 = t; i0 < p.ne.x; i0 += WG) {
        float e = exp(LOAD(T, x[x_row + i0 * p.vx.s0]) - mx) * inv;
        d[d_row + i0 * p.vd.s0] = STORE(T, (e - LOAD(T, label[l_row + i0 * p.vl.s0])) * scale);
    }
}
