#version 450
// sd.quantize_i8_convrot.v1 (sd-ops.md 3.2, 3.3), G in {1, 4, 16, 64, 256} a specialisation
// constant: one workgroup per activation row of K contiguous F32 values (K a multiple of G),
// bit-identical to the CPU kernel (convrot.glsl).
#include "convrot.glsl"

layout(binding = 0) readonly buffer A { float a[]; };

layout(push_constant) uniform Push {
    uint k;         // values per row, a multiple of G
    uint rows;      // activation rows
    uint rows_pad;  // round_up(rows, 4)
    uint a_offset;  // first float of a in its binding
    uint q_offset;  // first word of the packed output in its binding
    uint q_words;   // words of the packed output
} p;

uint row_first;  // the first float of this workgroup's row

float row_value(uint column) { return a[row_first + column]; }

void main() {
    const uint row = workgroup_row();
    const Packed o = Packed(p.k, p.rows, p.rows_pad, p.q_offset, p.q_words);
    if (row > p.rows) return;
    if (row == p.rows) {
        zero_padding(o);
        return;
    }
    row_first = p.a_offset + row * p.k;
    quantize_row(o, row);
}
