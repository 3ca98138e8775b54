#version 450
// GLU: d = act(x) * g, x and g from two tensors (split) or the two halves of each row of a (merged;
// swapped exchanges the halves). Activations: 0 swiglu (silu), 1 geglu (gelu).
#include "common.glsl"
#include "activations.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint ACT = 0;

layout(binding = 0) readonly buffer X { STORAGE(T) x[]; };
layout(binding = 1) readonly buffer G { STORAGE(T) g[]; };
layout(binding = 2) writeonly buffer D { STORAGE(T) d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    View vx, vg, vd;
    uint x_shift, g_shift;  // added to i0 for x and g (the halves of a merged row)
} p;

void main() {
    uint first, end;
    if (!flat_run(p.ne.x * p.ne.y * p.ne.z * p.ne.w, first, end)) return;
    uvec4 c = unravel(first, p.ne);
    for (uint k = first; k < end; ++k, c = next_coord(c, p.ne)) {
        float xv = LOAD(T, x[element_index(p.vx, c.x + p.x_shift, c.y, c.z, c.w)]);
        float gv = LOAD(T, g[element_index(p.vg, c.x + p.g_shift, c.y, c.z, c.w)]);
        float act = ACT == 0 ? silu_of(xv) : ACT == 1 ? gelu_of(xv) : uintBitsToFloat(0x7fc00000u);
        d[element_index(p.vd, c.x, c.y, c.z, c.w)] = STORE(T, act * gv);
    }
}
