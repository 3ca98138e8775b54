#version 450
// SOFT_MAX_BACK (dy, y: dx = scale y (dy - dot(y, dy))) and RMS_NORM_BACK (dy, x: with
// ms = mean(x^2) + eps, dx = dy / sqrt(ms) - x mean(x dy) / ms^1.5) of F32 rows, any strides,
// possibly in place (dx over dy). One workgroup per row: the row's dot products as float pairs (the
// CPU sums in double), then the result. dy - dot subtracts the pair's two halves in turn, as the CPU
// does, so a nearly one-hot y keeps the dot product's precision.
#include "common.glsl"
#include "float_pair.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0;  // 0 SOFT_MAX_BACK, 1 RMS_NORM_BACK

layout(binding = 0) readonly buffer DY { float dy[]; };
layout(binding = 1) readonly buffer X { float x[]; };  // y for SOFT_MAX_BACK
layout(binding = 2) writeonly buffer D { float d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    View vdy, vx, vd;
    float param;  // SOFT_MAX_BACK: scale; RMS_NORM_BACK: eps
} p;

shared vec2 partial_dot[WG];
shared vec2 partial_squares[WG];

// Sums dot and squares over the workgroup, returned to every invocation.
void workgroup_sums(inout vec2 dot_, inout vec2 squares) {
    uint t = gl_LocalInvocationID.x;
    partial_dot[t] = dot_;
    partial_squares[t] = squares;
    barrier();
    for (uint half_ = WG / 2; half_ > 0; half_ >>= 1) {
        if (t < half_) {
            partial_dot[t] = pair_add(partial_dot[t], partial_dot[t + half_]);
            partial_squares[t] = pair_add(partial_squares[t], partial_squares[t + half_]);
        }
        barrier();
    }
    dot_ = partial_dot[0];
    squares = partial_squares[0];
}

void main() {
    uint row = group_index();
    if (row >= p.ne.y * p.ne.z * p.ne.w) return;
    uint i1 = row % p.ne.y, i2 = row / p.ne.y % p.ne.z, i3 = row / (p.ne.y * p.ne.z);
    uint dy_row = element_index(p.vdy, 0, i1, i2, i3), x_row = element_index(p.vx, 0, i1, i2, i3);
    uint d_row = element_index(p.vd, 0, i1, i2, i3);

    vec2 dot_ = vec2(0.0), squares = vec2(0.0);
    for (uint i0 = gl_LocalInvocationID.x; i0 < p.ne.x; i0 += WG) {
        float g = dy[dy_row + i0 * p.vdy.s0], v = x[x_row + i0 * p.vx.s0];
        dot_ = pair_add(dot_, pair_product(v, g));
        if (OP == 1) squares = pair_add(squares, pair_product(v, v));
    }
    workgroup_sums(dot_, squares);

    // RMS_NORM_BACK's two terms cancel for short rows (n = 1: dy eps / ms^1.5): the CPU forms them in
    // double, here in float pairs.
    vec2 n = vec2(float(p.ne.x), 0.0);
    vec2 ms = pair_add(pair_div(squares, n), vec2(p.param, 0.0));
    vec2 root = pair_sqrt(ms);
    vec2 dy_scale = pair_div(vec2(1.0, 0.0), root);
    vec2 x_scale = pair_neg(pair_div(pair_div(dot_, n), pair_mul(ms, root)));
    for (uint i0 = gl_LocalInvocationID.x; i0 < p.ne.x; i0 += WG) {
        float g = dy[dy_row + i0 * p.vdy.s0], v = x[x_row + i0 * p.vx.s0];
        float r;
        if (OP == 0) {
            r = ((g - dot_.x) - dot_.y) * v * p.param;
        } else {
            vec2 sum = pair_add(pair_mul(vec2(g, 0.0), dy_scale), pair_mul(vec2(v, 0.0), x_scale));
            r = sum.x + sum.y;
        }
        d[d_row + i0 * p.vd.s0] = r;
    }
}
