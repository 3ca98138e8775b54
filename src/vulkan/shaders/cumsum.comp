#version 450
// CUMSUM of rows of any strides: one workgroup per row, in tiles of WG * RUN elements. Invocation t
// sums the RUN consecutive elements of its part of the tile, an inclusive scan of the parts in
// shared memory gives each its prefix, and the tile's total carries to the next. The CPU sums in
// double; the sums here are float pairs (hi + lo, error-free additions), which round to the same
// float as a double sum of these lengths.
#include "common.glsl"
#include "float_pair.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;
const uint PART = 4u;  // elements per invocation and tile

layout(binding = 0) readonly buffer A { STORAGE(A_TYPE) a[]; };
layout(binding = 1) writeonly buffer D { STORAGE(A_TYPE) d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    View va, vd;
} p;

shared vec2 scan[WG];

void main() {
    uint row = group_index();
    if (row >= p.ne.y * p.ne.z * p.ne.w) return;
    uint i1 = row % p.ne.y, i2 = row / p.ne.y % p.ne.z, i3 = row / (p.ne.y * p.ne.z);
    uint t = gl_LocalInvocationID.x;
    vec2 carry = vec2(0.0);  // the sum of the tiles before
    for (uint tile = 0u; tile < p.ne.x; tile += WG * PART) {
        uint first = tile + t * PART;
        float x[PART];
        vec2 part = vec2(0.0);
        for (uint k = 0u; k < PART; ++k) {
            uint i = first + k;
            x[k] = i < p.ne.x ? LOAD(A_TYPE, a[element_index(p.va, i, i1, i2, i3)]) : 0.0;
            part = pair_add(part, vec2(x[k], 0.0));
        }
        scan[t] = part;
        barrier();
        for (uint step = 1u; step < WG; step <<= 1) {
            vec2 left = t >= step ? scan[t - step] : vec2(0.0);
            barrier();
            if (t >= step) scan[t] = pair_add(scan[t], left);
            barrier();
        }
        vec2 run = pair_add(carry, t > 0u ? scan[t - 1u] : vec2(0.0));
        for (uint k = 0u; k < PART; ++k) {
            uint i = first + k;
            run = pair_add(run, vec2(x[k], 0.0));
            if (i < p.ne.x) d[element_index(p.vd, i, i1, i2, i3)] = STORE(A_TYPE, run.x + run.y);
        }
        carry = pair_add(carry, scan[WG - 1u]);
        barrier();  // scan is read before the next tile overwrites it
    }
}
