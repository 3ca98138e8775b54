#version 450
// RMSNorm -> Mul(1-D weight w) -> sd.rope_apply.v1 (sd-ops.md 2): one workgroup per output row. The
// normalisation repeats the native Vulkan RMS_NORM's arithmetic and order (src/vulkan/shaders/
// norm.comp, with the host's workgroup size): each invocation sums the squares of channels tid,
// tid + WG, ... in F32, a shared-memory tree adds the partial sums, scale = 1 / sqrt(sum / D + eps);
// then channel c is (x[c] * scale) * w[c], as RMS_NORM and MUL store it, before the rotation.
// Compiled with SCALE_F16, it continues with -> SCALE -> CPY into F16 (rope.glsl's store).
#include "rope.glsl"

layout(binding = 3) readonly buffer W { float w[]; };

shared float partial[WG];

uint x_base;
float scale;

float channel(uint c) {
    precise float normed = x[x_base + c * p.x_s0] * scale;
    precise float weighted = normed * w[p.w_off + c * p.w_s0];
    return weighted;
}

float row_sum_squares() {
    uint tid = gl_LocalInvocationID.x;
    float acc = 0.0;
    for (uint c = tid; c < p.dim; c += WG) {
        float v = x[x_base + c * p.x_s0];
        acc += v * v;
    }
    partial[tid] = acc;
    barrier();
    for (uint half_ = WG / 2; half_ > 0; half_ >>= 1) {
        if (tid < half_) partial[tid] += partial[tid + half_];
        barrier();
    }
    return partial[0];
}

void main() {
    uint row = row_index();
    if (row >= p.rows) return;  // uniform over the workgroup
    x_base = x_row_base(row);
    scale = 1.0 / sqrt(row_sum_squares() / float(p.dim) + p.eps);
    rotate_row(row);
}
