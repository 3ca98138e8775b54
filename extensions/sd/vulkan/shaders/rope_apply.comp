#version 450
// sd.rope_apply.v1: one workgroup per output row (rope.glsl).
#include "rope.glsl"

uint x_base;

float channel(uint c) { return x[x_base + c * p.x_s0]; }

void main() {
    uint row = row_index();
    if (row >= p.rows) return;
    x_base = x_row_base(row);
    rotate_row(row);
}
