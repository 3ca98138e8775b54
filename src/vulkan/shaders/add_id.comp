#version 450
// ADD_ID: d[i0, i1, i2, i3] = a[i0, i1, i2, i3] + b[i0, ids[i1, i2]], any strides. An id outside
// b's rows gives NaN (the device cannot fail the node as the CPU does).
#include "common.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer A { STORAGE(A_TYPE) a[]; };
layout(binding = 1) readonly buffer B { STORAGE(B_TYPE) b[]; };
layout(binding = 2) readonly buffer Ids { int ids[]; };
layout(binding = 3) writeonly buffer D { STORAGE(A_TYPE) d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    View va, vb, vids, vd;
    uint b_rows;
} p;

void main() {
    uint first, end;
    if (!flat_run(p.ne.x * p.ne.y * p.ne.z * p.ne.w, first, end)) return;
    uvec4 c = unravel(first, p.ne);
    for (uint k = first; k < end; ++k, c = next_coord(c, p.ne)) {
        int id = ids[element_index(p.vids, c.y, c.z, 0u, 0u)];
        float x = LOAD(A_TYPE, a[element_index(p.va, c.x, c.y, c.z, c.w)]);
        float y = id >= 0 && uint(id) < p.b_rows ? LOAD(B_TYPE, b[element_index(p.vb, c.x, uint(id), 0u, 0u)])
                                                 : uintBitsToFloat(0x7fc00000u);
        d[element_index(p.vd, c.x, c.y, c.z, c.w)] = STORE(A_TYPE, x + y);
    }
}
