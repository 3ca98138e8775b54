#version 450
// SET_ROWS: d[:, idx[i, j % ni.y, k % ni.z], j, k] = b[:, i, j, k], b F32, d a float type (one
// invocation per element) or a block type (D_QUANT, quant.glsl: one per block). An index outside [0, rows) leaves
// its row unwritten; a repeated index races (the CPU keeps the last row).
#include "common.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer B { float b[]; };
layout(binding = 1) readonly buffer I { int idx[]; };

layout(push_constant) uniform Push {
    uvec4 ne;    // b's shape (in blocks along dimension 0 for D_QUANT)
    uvec4 i_ne;  // idx's shape
    View vb, vi, vd;
    uint rows;
} p;

#ifdef D_QUANT
layout(binding = 2) buffer D { uint dq[]; };
float quant_source(uint first, uint j) { return b[first + j * p.vb.s0]; }
#define QUANT_OUT dq
#include "quant.glsl"

// vd addresses blocks in bytes (s0 is the block size).
void set_element(uvec4 c, uint r) {
    uint first = element_index(p.vb, c.x * CAT(QK_, D_QUANT), c.y, c.z, c.w);
    CAT(quantize_, D_QUANT)(first, element_index(p.vd, c.x, r, c.z, c.w));
}
#else
layout(binding = 2) writeonly buffer D { STORAGE(D_TYPE) d[]; };

void set_element(uvec4 c, uint r) {
    d[element_index(p.vd, c.x, r, c.z, c.w)] = STORE(D_TYPE, b[element_index(p.vb, c.x, c.y, c.z, c.w)]);
}
#endif

void main() {
    uint i = global_index(256);
    if (i >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    uvec4 c = unravel(i, p.ne);
    uint r = uint(idx[element_index(p.vi, c.y, c.z % p.i_ne.y, c.w % p.i_ne.z, 0u)]);
    if (r < p.rows) set_element(c, r);  // a negative index wraps to >= rows
}
