#version 450
// SCALE, SWIGLU or SILU / SIGMOID -> MUL, then sd.quantize_i8_convrot.v1, one workgroup per row
// (vulkan/convrot.cpp's fusion rule "sd.activation_convrot.vulkan"). Each row value is the native
// Vulkan map, GLU and binary shaders' expression (src/vulkan/shaders/map.comp, glu.comp, binary.comp
// with activations.glsl's formulas), unqualified so the driver compiles it alike, before
// convrot.glsl rotates and quantizes the row. Every chunk pass recomputes the values from the inputs
// (deterministic, so both passes see the same values).
#include "convrot.glsl"

// 0 SCALE (x * s + b); 1 SILU(x) * o, 2 o * SILU(x), 3 SIGMOID(x) * o, 4 o * SIGMOID(x) (the MUL's
// operand order); 5 SWIGLU: SILU(x) * o.
layout(constant_id = 1) const uint OP = 0u;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 2) readonly buffer O { float o[]; };

layout(push_constant) uniform Push {
    uint k;         // values per row
    uint rows;      // rows of the quantize input [k, ne1, ne2, ne3]
    uint ne1, ne2;  // (ne3 = rows / (ne1 * ne2))
    uint q_offset;  // first word of the packed output in its binding
    float s, b;     // SCALE's factor and bias
    uint x_offset;  // first float of x's row 0 (merged SWIGLU: of its activation half), strides in floats
    uint x_nb[3];   // dimensions 1..3 (elements are contiguous)
    uint o_offset;  // the same for o (merged SWIGLU: x's other half); a row-broadcast stride is 0
    uint o_nb[3];
} p;

uint x_row, o_row;

float sigmoid_of(float a) { return 1.0 / (1.0 + exp(clamp(-a, -105.0, 89.0))); }
float silu_of(float a) { return isnan(a) ? a : a * sigmoid_of(a); }

float row_value(uint column) {
    const float xv = x[x_row + column];
    if (OP == 0u) return xv * p.s + p.b;
    const float w = o[o_row + column];
    if (OP == 1u || OP == 5u) return silu_of(xv) * w;
    if (OP == 2u) return w * silu_of(xv);
    const float sig = isnan(xv) ? xv : sigmoid_of(xv);
    return OP == 3u ? sig * w : w * sig;
}

void main() {
    const uint row = workgroup_row();
    const uint rows_pad = (p.rows + 3u) / 4u * 4u, scale_rows = (p.rows * 4u + p.k - 1u) / p.k;
    const Packed q = Packed(p.k, p.rows, rows_pad, p.q_offset, p.k / 4u * (rows_pad + scale_rows));
    if (row > p.rows) return;
    if (row == p.rows) {
        zero_padding(q);
        return;
    }
    const uint i1 = row % p.ne1, i2 = row / p.ne1 % p.ne2, i3 = row / p.ne1 / p.ne2;
    x_row = p.x_offset + i1 * p.x_nb[0] + i2 * p.x_nb[1] + i3 * p.x_nb[2];
    o_row = p.o_offset + i1 * p.o_nb[0] + i2 * p.o_nb[1] + i3 * p.o_nb[2];
    quantize_row(q, row);
}
