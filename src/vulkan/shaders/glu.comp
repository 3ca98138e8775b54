#version 450
// GLU: d = act(x) * g, x and g from two tensors (split) or the two halves of each row of a (merged;
// swapped exchanges the halves). In ggml_glu_op order: 0 reglu, 1 geglu, 2 swiglu, 3 swiglu_oai
// (x_sigmoid(min(x, limit), alpha) * (clamp(g, -limit, limit) + 1)), 4 geglu_erf, 5 geglu_quick.
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
    float alpha, limit;     // SWIGLU_OAI's
} p;

float glu(float x, float g) {
    switch (ACT) {
        case 0: return (x > 0.0 ? x : 0.0) * g;
        case 1: return gelu_of(x) * g;
        case 2: return silu_of(x) * g;
        case 3: {
            float xc = isnan(x) ? x : min(x, p.limit);
            float gc = min(max(g, -p.limit), p.limit);
            return x_sigmoid_of(xc, p.alpha) * (gc + 1.0);
        }
        case 4: return gelu_erf_of(x) * g;
        case 5: return gelu_quick_of(x) * g;
        default: return NAN_F32;  // the host never selects an unlisted ACT
    }
}

void main() {
    uint first, end;
    if (!flat_run(p.ne.x * p.ne.y * p.ne.z * p.ne.w, first, end)) return;
    uvec4 c = unravel(first, p.ne);
    for (uint k = first; k < end; ++k, c = next_coord(c, p.ne)) {
        float xv = LOAD(T, x[element_index(p.vx, c.x + p.x_shift, c.y, c.z, c.w)]);
        float gv = LOAD(T, g[element_index(p.vg, c.x + p.g_shift, c.y, c.z, c.w)]);
        d[element_index(p.vd, c.x, c.y, c.z, c.w)] = STORE(T, glu(xv, gv));
    }
}
