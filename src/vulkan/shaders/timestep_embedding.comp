#version 450
// TIMESTEP_EMBEDDING: row n of d is cos(t_n f_j) for j < half, then sin(t_n f_j), then zeros, with
// f_j = max_period^(-j / half). One workgroup per row.
#include "common.glsl"

layout(local_size_x = 128) in;

layout(binding = 0) readonly buffer T { float t[]; };
layout(binding = 1) writeonly buffer D { float d[]; };

layout(push_constant) uniform Push {
    View vt, vd;
    uint ne0, rows, half_;
    float log2_period_per_j;  // log2(max_period) / half
} p;

// x reduced to [-pi, pi], where alone sin and cos have a specified precision (t f_j reaches ~1000):
// x - k 2pi with 2pi split in three floats (Cody-Waite), the first two short enough that their
// products with k (|k| < 2^12) are exact. precise keeps the compiler from refactoring the sums.
float reduced(float x) {
    const float two_pi_hi = 6.28125;                 // 8 significant bits
    const float two_pi_mid = 0.0019350051879882812;  // 12 significant bits
    const float two_pi_lo = 3.019916050561733e-7;    // 2pi - hi - mid
    precise float k = round(x * 0.15915494309189535);
    precise float r = (x - k * two_pi_hi) - k * two_pi_mid;
    return r - k * two_pi_lo;
}

void main() {
    uint row = group_index();
    if (row >= p.rows) return;
    float time = t[p.vt.off + row * p.vt.s0];
    uint out_ = p.vd.off + row * p.vd.s1;
    for (uint j = gl_LocalInvocationID.x; j < p.ne0; j += 128) {
        float v = 0.0;
        if (j < 2 * p.half_) {
            bool is_cos = j < p.half_;
            float arg = reduced(time * exp2(-p.log2_period_per_j * float(is_cos ? j : j - p.half_)));
            v = is_cos ? cos(arg) : sin(arg);
        }
        d[out_ + j * p.vd.s0] = v;
    }
}
