#version 450
// The other operand of a row concatenation (vulkan/int8.cpp) copied into its slice of the output:
// dst[c] = src[c] for every coordinate c of src, both at their own strides (in 32-bit words), as raw
// bits, so that the bytes are the native CONCAT's. A grid-stride loop covers any element count.
layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer S { uint src[]; };
layout(binding = 1) writeonly buffer D { uint dst[]; };

// A tensor's first word, extents and strides in words.
struct View {
    uint offset;
    uint ne[4];
    uint nb[4];
};

layout(push_constant) uniform Push {
    View s, d;  // d.ne is unused: src's extents
} p;

uint at(View v, uvec4 c) { return v.offset + c.x * v.nb[0] + c.y * v.nb[1] + c.z * v.nb[2] + c.w * v.nb[3]; }

void main() {
    const uint n = p.s.ne[0] * p.s.ne[1] * p.s.ne[2] * p.s.ne[3];
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * 256u) {
        const uvec4 c = uvec4(i % p.s.ne[0], i / p.s.ne[0] % p.s.ne[1], i / (p.s.ne[0] * p.s.ne[1]) % p.s.ne[2],
                              i / (p.s.ne[0] * p.s.ne[1] * p.s.ne[2]));
        dst[at(p.d, c)] = src[at(p.s, c)];
    }
}
