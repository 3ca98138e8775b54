#version 450
// CPY, DUP, CONT: element k of a in flat order (i0 fastest) becomes element k of d. One invocation
// per RUN consecutive elements (unravelled once); the variant decides how an element moves:
//   RAW=uint / RAW=uint16_t    same type, bits copied;
//   BYTES                      same 1-byte type, packed four to a word (no 8-bit storage);
//   A_QUANT=<block type>       dequantized to F32 (quant.glsl);
//   otherwise                  converted from A_TYPE to D_TYPE.
#include "common.glsl"

layout(local_size_x = 256) in;
// Whether a's shape differs from d's (k is then unravelled in each shape); otherwise the host has
// described both in one shape and the coordinates serve both.
layout(constant_id = 0) const bool RESHAPE = false;

layout(push_constant) uniform Push {
    uvec4 ne;    // d's shape (the iteration shape)
    uvec4 a_ne;  // a's shape, read when RESHAPE
    View va, vd;
} p;

uint at(View v, uvec4 c) { return element_index(v, c.x, c.y, c.z, c.w); }

#if defined(BYTES)
layout(binding = 0) readonly buffer A { uint a[]; };
layout(binding = 1) buffer D { uint d[]; };

// Neighbouring bytes of a word may belong to other invocations: replace ours atomically.
void copy_element(uvec4 ca, uvec4 cd) {
    uint i = at(p.va, ca), j = at(p.vd, cd);
    uint byte = bitfieldExtract(a[i >> 2], int((i & 3u) * 8u), 8);
    uint shift = (j & 3u) * 8u;
    atomicAnd(d[j >> 2], ~(0xffu << shift));
    atomicOr(d[j >> 2], byte << shift);
}
#elif defined(RAW)
layout(binding = 0) readonly buffer A { RAW a[]; };
layout(binding = 1) writeonly buffer D { RAW d[]; };

void copy_element(uvec4 ca, uvec4 cd) { d[at(p.vd, cd)] = a[at(p.va, ca)]; }
#elif defined(A_QUANT)
layout(binding = 0) readonly buffer A { uint a[]; };
layout(binding = 1) writeonly buffer D { float d[]; };
#define QUANT_IN a
#define QUANT_GRID_BINDING 2
#include "quant.glsl"
const uint QK = CAT(QK_, A_QUANT);

// va addresses blocks in bytes (s0 is the block size).
void copy_element(uvec4 ca, uvec4 cd) {
    uint block = element_index(p.va, ca.x / QK, ca.y, ca.z, ca.w);
    d[at(p.vd, cd)] = CAT(dequant_, A_QUANT)(block, ca.x % QK);
}
#else
layout(binding = 0) readonly buffer A { STORAGE(A_TYPE) a[]; };
layout(binding = 1) writeonly buffer D { STORAGE(D_TYPE) d[]; };

void copy_element(uvec4 ca, uvec4 cd) { d[at(p.vd, cd)] = STORE(D_TYPE, LOAD(A_TYPE, a[at(p.va, ca)])); }
#endif

void main() {
    uint first, end;
    if (!flat_run(p.ne.x * p.ne.y * p.ne.z * p.ne.w, first, end)) return;
    uvec4 cd = unravel(first, p.ne);
    uvec4 ca = RESHAPE ? unravel(first, p.a_ne) : cd;
    for (uint k = first; k < end; ++k) {
        copy_element(ca, cd);
        cd = next_coord(cd, p.ne);
        ca = RESHAPE ? next_coord(ca, p.a_ne) : cd;
    }
}
