#version 450
// ADD (ADD1), SUB, MUL, DIV: d = a op b, with b repeated over d (ggml_can_repeat); SILU_BACK:
// d = dy silu'(x) with dy = a, x = b of one shape.
#include "common.glsl"
#include "activations.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint OP = 0;  // 0 add, 1 sub, 2 mul, 3 div, 4 silu_back

layout(binding = 0) readonly buffer A { STORAGE(A_TYPE) a[]; };
layout(binding = 1) readonly buffer B { STORAGE(B_TYPE) b[]; };
layout(binding = 2) writeonly buffer D { STORAGE(D_TYPE) d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    uvec4 b_ne;
    View va, vb, vd;
} p;

// dy s (1 + x (1 - s)), s = sigmoid(x).
float silu_back(float dy, float x) {
    float s = sigmoid_of(x);
    return isnan(x) ? x : dy * s * (x * (1.0 - s) + 1.0);
}

void main() {
    uint first, end;
    if (!flat_run(p.ne.x * p.ne.y * p.ne.z * p.ne.w, first, end)) return;
    uvec4 c = unravel(first, p.ne);
    for (uint k = first; k < end; ++k, c = next_coord(c, p.ne)) {
        uvec4 cb = wrap(c, p.b_ne);
        float x = LOAD(A_TYPE, a[element_index(p.va, c.x, c.y, c.z, c.w)]);
        float y = LOAD(B_TYPE, b[element_index(p.vb, cb.x, cb.y, cb.z, cb.w)]);
        float r = OP == 0 ? x + y : OP == 1 ? x - y : OP == 2 ? x * y : OP == 3 ? x / y : silu_back(x, y);
        d[element_index(p.vd, c.x, c.y, c.z, c.w)] = STORE(D_TYPE, r);
    }
}
