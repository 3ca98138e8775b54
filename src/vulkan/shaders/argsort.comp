#version 450
// ARGSORT and TOP_K (kernels/reduce.cpp): a bitonic sort of each row's 64-bit keys, held as
// uvec2(rank, index). The rank orders the values as the CPU's sort_rank does (-0 as +0, reversed
// when descending, NaN last), the index breaks ties, so the sort is stable; a row is padded to P, a
// power of two, with keys above every real one. Workgroup g sorts block g % (P / L) of row
// g / (P / L), L keys in shared memory, over the bitonic stages k in [k_first, k_last], each from
// distance min(k, L) / 2 down to 1 (argsort_step.comp runs the distances of L and above). The keys
// come from the source a or the workspace w, and go to w or, as the first k indices, to d.
#include "common.glsl"

layout(constant_id = 0) const uint WG = 32;
layout(constant_id = 1) const uint L = 64;  // keys per block, a power of two
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer A { STORAGE(A_TYPE) a[]; };
layout(binding = 1) writeonly buffer D { int d[]; };
layout(binding = 2) buffer W { uvec2 w[]; };

layout(push_constant) uniform Push {
    uvec4 ne;  // of the source
    View va, vd;
    uint n_keys;  // P
    uint top;     // indices written per row
    uint k_first, k_last;
    uint descending;
    uint from_source, to_output;
} p;

shared uvec2 keys[L];

// The order of x's bits as an unsigned integer (reversed when descending); NaN ranks last.
uint sort_rank(float x) {
    uint bits = floatBitsToUint(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;
    if ((bits & 0x7fffffffu) == 0u) bits = 0u;
    uint ascending = (bits & 0x80000000u) != 0u ? ~bits : bits | 0x80000000u;
    return p.descending != 0u ? ~ascending : ascending;
}

bool greater(uvec2 x, uvec2 y) { return x.x > y.x || (x.x == y.x && x.y > y.y); }

void main() {
    uint blocks = p.n_keys / L;
    uint g = group_index();
    uint row = g / blocks;
    uint first = (g % blocks) * L;  // of the block within its row
    if (row >= p.ne.y * p.ne.z * p.ne.w) return;
    uint i1 = row % p.ne.y, i2 = row / p.ne.y % p.ne.z, i3 = row / (p.ne.y * p.ne.z);
    uint t = gl_LocalInvocationID.x;

    for (uint i = t; i < L; i += WG) {
        uint at = first + i;
        if (p.from_source == 0u) {
            keys[i] = w[row * p.n_keys + at];
        } else if (at < p.ne.x) {
            keys[i] = uvec2(sort_rank(LOAD(A_TYPE, a[element_index(p.va, at, i1, i2, i3)])), at);
        } else {
            keys[i] = uvec2(0xffffffffu);
        }
    }
    barrier();
    for (uint k = p.k_first; k <= p.k_last; k <<= 1) {
        for (uint j = min(k, L) >> 1; j > 0u; j >>= 1) {
            for (uint q = t; q < L / 2u; q += WG) {
                uint i = (q / j) * 2u * j + q % j;
                bool ascending = ((first + i) & k) == 0u;
                uvec2 x = keys[i], y = keys[i + j];
                if (greater(x, y) == ascending) {
                    keys[i] = y;
                    keys[i + j] = x;
                }
            }
            barrier();
        }
    }
    for (uint i = t; i < L; i += WG) {
        uint at = first + i;
        if (p.to_output == 0u) {
            w[row * p.n_keys + at] = keys[i];
        } else if (at < p.top) {
            d[element_index(p.vd, at, i1, i2, i3)] = int(keys[i].y);
        }
    }
}
