#version 450
// CPY from a float type to Q8_0 / Q4_0 (D_QUANT): one invocation per destination block, whose 32
// source elements lie along dimension 0 of a at the same coordinates (the host describes a in d's
// shape).
#include "common.glsl"

layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer A { STORAGE(A_TYPE) a[]; };
layout(binding = 1) writeonly buffer D { uint16_t dq[]; };
#define QUANT_OUT dq
#include "quant.glsl"

layout(push_constant) uniform Push {
    uvec4 ne;  // d's shape in blocks
    View va;   // elements
    View vd;   // words; s0 is the block stride
} p;

void main() {
    uint i = global_index(64);
    if (i >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    uvec4 c = unravel(i, p.ne);
    float x[32];
    uint first = element_index(p.va, c.x * 32u, c.y, c.z, c.w);
    for (uint j = 0u; j < 32u; ++j) x[j] = LOAD(A_TYPE, a[first + j * p.va.s0]);
    CAT(quantize_, D_QUANT)(x, element_index(p.vd, c.x, c.y, c.z, c.w));
}
