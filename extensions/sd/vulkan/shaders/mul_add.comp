#version 450
// F32 MUL(x, gate) -> ADD(residual) in one pass (vulkan/affine.cpp's rule "sd.mul_add.vulkan"):
// d = (x * gate) + residual (or residual + (x * gate), MUL_FIRST 0), the product and the sum each
// rounded once (`precise`), as the native binary shader stores the MUL's result and then adds. The
// output is contiguous; x, gate and residual are read at their strides, gate and residual repeated
// over the output (ggml_can_repeat: a coordinate modulo their extents). One invocation reads an
// element's inputs before writing it, so an output exactly over x or the residual is safe.
layout(local_size_x = 256) in;

layout(constant_id = 0) const uint MUL_FIRST = 1u;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer G { float g[]; };
layout(binding = 2) readonly buffer R { float r[]; };
layout(binding = 3) writeonly buffer D { float d[]; };

// A tensor's first float, extents and strides in floats.
struct View {
    uint offset;
    uint ne[4];
    uint nb[4];
};

layout(push_constant) uniform Push {
    View vx, vg, vr;  // vx.ne: the output's extents
    uint d_offset;
} p;

uint at(View v, uvec4 c) {
    return v.offset + c.x % v.ne[0] * v.nb[0] + c.y % v.ne[1] * v.nb[1] + c.z % v.ne[2] * v.nb[2] +
           c.w % v.ne[3] * v.nb[3];
}

void main() {
    const uint n0 = p.vx.ne[0], n1 = p.vx.ne[1], n2 = p.vx.ne[2];
    const uint n = n0 * n1 * n2 * p.vx.ne[3];
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * 256u) {
        const uvec4 c = uvec4(i % n0, i / n0 % n1, i / (n0 * n1) % n2, i / (n0 * n1 * n2));
        const float xv = x[at(p.vx, c)], gv = g[at(p.vg, c)], rv = r[at(p.vr, c)];
        precise float t = xv * gv;
        precise float y = MUL_FIRST != 0u ? t + rv : rv + t;
        d[p.d_offset + i] = y;
    }
}
