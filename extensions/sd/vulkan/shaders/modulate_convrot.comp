#version 450
// [NORM | RMS_NORM](x) -> 1..4 modulation steps -> sd.quantize_i8_convrot.v1, one workgroup per row
// (vulkan/convrot.cpp's fusion rule "sd.modulate_convrot.vulkan"). The normalisation repeats the
// native Vulkan norm shader (src/vulkan/shaders/norm.comp) in its arithmetic, its expressions and its
// order, with the host's workgroup size WG <= 256 emulated by the first WG invocations: invocation
// t < WG sums channels t, t + WG, ... in F32, a shared-memory tree over WG partial sums adds them;
// NORM takes the mean first, then the squared deviations from it. Each row value is then
// (x - mean) * scale, and each step rounds once in the nodes' order (`precise`), as the native MUL and
// ADD store their results, before convrot.glsl rotates and quantizes the row. Every chunk pass
// recomputes the row's values from x (deterministic, so both passes see the same values).
#include "convrot.glsl"

layout(constant_id = 1) const uint WG = 256u;   // the native norm's workgroup size
layout(constant_id = 2) const uint RMS = 0u;    // 0 NORM, 1 RMS_NORM
layout(constant_id = 3) const uint STEPS = 1u;  // 1 .. 4
// Step i's kind: 0 MUL by operand i, 1 ADD of operand i, 2 ADD of the value before the previous step
// (a MUL) and that MUL's result.
layout(constant_id = 4) const uint KIND0 = 0u;
layout(constant_id = 5) const uint KIND1 = 0u;
layout(constant_id = 6) const uint KIND2 = 0u;
layout(constant_id = 7) const uint KIND3 = 0u;
// The extent of operand i in dimension d where it tiles the output partially (1 < extent < the
// output's), else 0: no modulo (the same extent, or broadcast through a zero stride).
layout(constant_id = 8) const uint E00 = 0u;
layout(constant_id = 9) const uint E01 = 0u;
layout(constant_id = 10) const uint E02 = 0u;
layout(constant_id = 11) const uint E03 = 0u;
layout(constant_id = 12) const uint E10 = 0u;
layout(constant_id = 13) const uint E11 = 0u;
layout(constant_id = 14) const uint E12 = 0u;
layout(constant_id = 15) const uint E13 = 0u;
layout(constant_id = 16) const uint E20 = 0u;
layout(constant_id = 17) const uint E21 = 0u;
layout(constant_id = 18) const uint E22 = 0u;
layout(constant_id = 19) const uint E23 = 0u;
layout(constant_id = 20) const uint E30 = 0u;
layout(constant_id = 21) const uint E31 = 0u;
layout(constant_id = 22) const uint E32 = 0u;
layout(constant_id = 23) const uint E33 = 0u;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 2) readonly buffer O0 { float o0[]; };
layout(binding = 3) readonly buffer O1 { float o1[]; };
layout(binding = 4) readonly buffer O2 { float o2[]; };
layout(binding = 5) readonly buffer O3 { float o3[]; };

layout(push_constant) uniform Push {
    uint k;         // values per row
    uint rows;      // rows of the chain's shape [k, ne1, ne2, ne3]
    uint ne1, ne2;  // (ne3 = rows / (ne1 * ne2))
    uint q_offset;  // first word of the packed output in its binding
    float eps;      // the norm's
    uint x_offset;  // first float of x in its binding, then its strides in floats
    uint x_nb[4];
    uint o_offset[4];  // each operand's first float and strides in floats (0: broadcast)
    uint o_nb[16];
} p;

uint x_row;         // the first float of this workgroup's row of x
uint o_row[4];      // each operand's first float for this row
float mean, scale;  // the row's normalisation

uint kind(uint i) { return i == 0u ? KIND0 : i == 1u ? KIND1 : i == 2u ? KIND2 : KIND3; }

uint extent(uint i, uint d) {
    const uint e[16] = uint[16](E00, E01, E02, E03, E10, E11, E12, E13, E20, E21, E22, E23, E30, E31, E32, E33);
    return e[i * 4u + d];
}

// The operand's position along dimension d for the output's coordinate c.
uint wrap(uint i, uint d, uint c) {
    const uint e = extent(i, d);
    return e == 0u ? c : c % e;
}

float operand(uint i, uint column) {
    const uint at = o_row[i] + wrap(i, 0u, column) * p.o_nb[i * 4u];
    return i == 0u ? o0[at] : i == 1u ? o1[at] : i == 2u ? o2[at] : o3[at];
}

// The native norm's per-invocation sum of (x - shift), or of its square, and the tree over WG.
float sum_deviations(float shift, bool square) {
    const uint t = gl_LocalInvocationID.x;
    float acc = 0.0;
    if (t < WG) {
        for (uint c = t; c < p.k; c += WG) {
            float v = x[x_row + c * p.x_nb[0]] - shift;
            acc += square ? v * v : v;
        }
    }
    partial[t] = acc;
    barrier();
    for (uint half_ = WG / 2u; half_ > 0u; half_ >>= 1u) {
        if (t < half_) partial[t] += partial[t + half_];
        barrier();
    }
    float total = partial[0];
    barrier();  // partial is free for the next reduction
    return total;
}

float row_value(uint column) {
    precise float value = (x[x_row + column * p.x_nb[0]] - mean) * scale;
    float before = value;  // the value before the last step
    for (uint i = 0u; i < STEPS; ++i) {
        const float input_value = value;
        if (kind(i) == 0u) {
            value = value * operand(i, column);
        } else if (kind(i) == 1u) {
            value = value + operand(i, column);
        } else {
            value = before + value;
        }
        before = input_value;
    }
    return value;
}

// The row's coordinates, and its first float in x and in each operand.
void locate_row(uint row) {
    const uint i1 = row % p.ne1, i2 = row / p.ne1 % p.ne2, i3 = row / p.ne1 / p.ne2;
    x_row = p.x_offset + i1 * p.x_nb[1] + i2 * p.x_nb[2] + i3 * p.x_nb[3];
    for (uint i = 0u; i < 4u; ++i)
        o_row[i] = p.o_offset[i] + wrap(i, 1u, i1) * p.o_nb[i * 4u + 1u] + wrap(i, 2u, i2) * p.o_nb[i * 4u + 2u] +
                   wrap(i, 3u, i3) * p.o_nb[i * 4u + 3u];
}

void main() {
    const uint row = workgroup_row();
    const uint rows_pad = (p.rows + 3u) / 4u * 4u, scale_rows = (p.rows * 4u + p.k - 1u) / p.k;
    const Packed o = Packed(p.k, p.rows, rows_pad, p.q_offset, p.k / 4u * (rows_pad + scale_rows));
    if (row > p.rows) return;
    if (row == p.rows) {
        zero_padding(o);
        return;
    }
    locate_row(row);
    // As norm.comp writes them (count, mean, the squares and the scale, unqualified expressions for
    // the driver to compile alike).
    float count = float(p.k);
    mean = RMS == 0u ? sum_deviations(0.0, false) / count : 0.0;
    float squares = sum_deviations(mean, true);
    scale = 1.0 / sqrt(squares / count + p.eps);
    quantize_row(o, row);
}
