#version 450
// NORM, RMS_NORM, L2_NORM and GROUP_NORM of F32 tensors, any strides, possibly in place. One
// workgroup normalises one range of the logical index space: a row, or the channels of one group
// of one sample. Like the CPU kernel it takes the mean first and then the squared deviations from
// it (no cancellation), and reads the input again for the result.
#include "common.glsl"
#include "row_reduce.glsl"

layout(constant_id = 1) const uint OP = 0;  // 0 NORM or GROUP_NORM, 1 RMS_NORM, 2 L2_NORM

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer D { float d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    View vx, vd;
    uint slice;      // elements per channel: ne0 for rows, ne0 * ne1 for groups
    uint channels;   // channels per sample: 1 for rows, ne2 for groups
    uint per_group;  // channels per group
    uint groups;     // groups per sample
    float eps;
} p;

uint first, end;  // this workgroup's range of logical element indices

// Sum over this workgroup's range of (x - shift), or of its square.
float sum_deviations(float shift, bool square) {
    float acc = 0.0;
    Walker w = walker(first + gl_LocalInvocationID.x, p.ne);
    for (uint i = first + gl_LocalInvocationID.x; i < end; i += WG) {
        float v = x[walker_index(p.vx, w)] - shift;
        acc += square ? v * v : v;
        advance(w, p.ne);
    }
    return workgroup_sum(acc);
}

void main() {
    uint unit = group_index();
    uint sample_ = unit / p.groups;
    uint c0 = (unit - sample_ * p.groups) * p.per_group;
    uint c1 = min(p.channels, c0 + p.per_group);
    first = (sample_ * p.channels + c0) * p.slice;
    end = first + (c1 - c0) * p.slice;
    float count = float(end - first);

    float mean = OP == 0 ? sum_deviations(0.0, false) / count : 0.0;
    float squares = sum_deviations(mean, true);
    float scale = OP == 2 ? 1.0 / max(sqrt(squares), p.eps) : 1.0 / sqrt(squares / count + p.eps);

    Walker w = walker(first + gl_LocalInvocationID.x, p.ne);
    for (uint i = first + gl_LocalInvocationID.x; i < end; i += WG) {
        d[walker_index(p.vd, w)] = (x[walker_index(p.vx, w)] - mean) * scale;
        advance(w, p.ne);
    }
}
