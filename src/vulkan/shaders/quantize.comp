#version 450
// CPY from a float type to a block type (D_QUANT, quant.glsl): one invocation per destination
// block, whose source elements lie along dimension 0 of a at the same coordinates (the host
// describes a in d's shape).
#include "common.glsl"

layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer A { STORAGE(A_TYPE) a[]; };
layout(binding = 1) buffer D { uint dq[]; };

layout(push_constant) uniform Push {
    uvec4 ne;  // d's shape in blocks
    View va;   // elements
    View vd;   // bytes; s0 is the block size
} p;

float quant_source(uint first, uint j) { return LOAD(A_TYPE, a[first + j * p.va.s0]); }
#define QUANT_OUT dq
#include "quant.glsl"

void main() {
    uint i = global_index(64);
    if (i >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    uvec4 c = unravel(i, p.ne);
    uint first = element_index(p.va, c.x * CAT(QK_, D_QUANT), c.y, c.z, c.w);
    CAT(quantize_, D_QUANT)(first, element_index(p.vd, c.x, c.y, c.z, c.w));
}
