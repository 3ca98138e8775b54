#version 450
// The shape ops that combine source elements into each result element, one invocation per result
// element of d (any strides):
//   0 REPEAT_BACK:  d[i] = the sum over the repetitions r of a[i + r * d.ne], in float pairs (the CPU
//                   sums in double), in the CPU's order (dims 3, 2, 1, then 0 outermost first);
//   1 GET_REL_POS:  d[c, k, q] = a[c, kh - 1 - k + q] (kh = d.ne1), d F16;
//   2 ADD_REL_POS:  d[i0, j, b] = a[i0, j, b] + ph[i0 / W, j % H, j / H, b] + pw[i0 % W, j % H, j / H, b]
//                   (W = pw.ne0, H = pw.ne1; b = pw, c = ph), F32.
#include "common.glsl"
#include "float_pair.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 0;

layout(binding = 0) readonly buffer A { STORAGE(T) a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) readonly buffer C { float c[]; };
layout(binding = 3) writeonly buffer D { STORAGE(D_TYPE) d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    uvec4 a_ne;  // REPEAT_BACK: a's shape; ADD_REL_POS: x = W, y = H
    View va, vb, vc, vd;
} p;

float repeat_back(uvec4 i) {
    uvec4 reps = p.a_ne / p.ne;
    vec2 sum = vec2(0.0);
    for (uint r3 = 0u; r3 < reps.w; ++r3)
        for (uint r2 = 0u; r2 < reps.z; ++r2)
            for (uint r1 = 0u; r1 < reps.y; ++r1)
                for (uint r0 = 0u; r0 < reps.x; ++r0) {
                    uvec4 s = i + uvec4(r0, r1, r2, r3) * p.ne;
                    sum = pair_add(sum, vec2(LOAD(T, a[element_index(p.va, s.x, s.y, s.z, s.w)]), 0.0));
                }
    return sum.x + sum.y;
}

void main() {
    uint k = global_index(256);
    if (k >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    uvec4 i = unravel(k, p.ne);
    float v;
    if (OP == 0u) {
        v = repeat_back(i);
    } else if (OP == 1u) {
        v = LOAD(T, a[element_index(p.va, i.x, p.ne.y - 1u - i.y + i.z, 0u, 0u)]);
    } else {
        uint w = p.a_ne.x, h = p.a_ne.y;
        float ph = c[element_index(p.vc, i.x / w, i.y % h, i.y / h, i.z)];
        float pw = b[element_index(p.vb, i.x % w, i.y % h, i.y / h, i.z)];
        v = LOAD(T, a[element_index(p.va, i.x, i.y, i.z, i.w)]) + ph + pw;
    }
    d[element_index(p.vd, i.x, i.y, i.z, i.w)] = STORE(D_TYPE, v);
}
