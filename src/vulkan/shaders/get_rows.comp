#version 450
// GET_ROWS: d[i0, i, j, k] = a[i0, idx[i, j, k], j, k]. A float or quantized (A_QUANT) a gives an F32
// d; an I32 a (RAW) is copied bit for bit. An index outside [0, rows) leaves its row unwritten.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(binding = 1) readonly buffer I { int idx[]; };

layout(push_constant) uniform Push {
    uvec4 ne;  // d's shape
    View va, vi, vd;
    uint rows;
} p;

#if defined(RAW)
layout(binding = 0) readonly buffer A { RAW a[]; };
layout(binding = 2) writeonly buffer D { RAW d[]; };
#define FETCH(i0, r, c) a[element_index(p.va, i0, r, c.z, c.w)]
#elif defined(A_QUANT)
layout(binding = 0) readonly buffer A { uint a[]; };
layout(binding = 2) writeonly buffer D { float d[]; };
#define QUANT_IN a
#define QUANT_GRID_BINDING 3
#include "quant.glsl"
// va addresses blocks in bytes (s0 is the block size).
const uint QK = CAT(QK_, A_QUANT);
#define FETCH(i0, r, c) CAT(dequant_, A_QUANT)(element_index(p.va, (i0) / QK, r, c.z, c.w), (i0) % QK)
#else
layout(binding = 0) readonly buffer A { STORAGE(A_TYPE) a[]; };
layout(binding = 2) writeonly buffer D { float d[]; };
#define FETCH(i0, r, c) LOAD(A_TYPE, a[element_index(p.va, i0, r, c.z, c.w)])
#endif

void main() {
    uint i = global_index(256);
    if (i >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    uvec4 c = unravel(i, p.ne);
    uint r = uint(idx[element_index(p.vi, c.y, c.z, c.w, 0u)]);  // a negative index wraps to >= rows
    if (r >= p.rows) return;
    d[element_index(p.vd, c.x, c.y, c.z, c.w)] = FETCH(c.x, r, c);
}
