// Shared by the norm family's shaders (norm.comp, soft_max.comp, sum.comp): one workgroup reduces
// one range of elements. The workgroup size WG is a power of two chosen by the host (specialisation
// constant 0), so short rows do not leave most invocations idle.
layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

shared float partial[WG];

// The sum of v over the workgroup, returned to every invocation.
float workgroup_sum(float v) {
    uint t = gl_LocalInvocationID.x;
    partial[t] = v;
    barrier();
    for (uint half_ = WG / 2; half_ > 0; half_ >>= 1) {
        if (t < half_) partial[t] += partial[t + half_];
        barrier();
    }
    float total = partial[0];
    barrier();  // partial is free for the next reduction
    return total;
}

// Logical coordinates of the elements first, first + WG, first + 2 WG, ... of a tensor of shape ne:
// the step WG is split once into digits of the mixed radix ne, so a step is additions and carries
// instead of divisions.
struct Walker {
    uvec4 at, step;
};

Walker walker(uint first, uvec4 ne) {
    uvec4 radix = max(ne, uvec4(1));  // an empty tensor has no elements to walk, but must not divide by 0
    return Walker(unravel(first, radix), unravel(WG, radix));
}

void advance(inout Walker w, uvec4 ne) {
    uvec4 c = w.at + w.step;
    if (c.x >= ne.x) {
        c.x -= ne.x;
        c.y += 1u;
    }
    if (c.y >= ne.y) {
        c.y -= ne.y;
        c.z += 1u;
    }
    if (c.z >= ne.z) {
        c.z -= ne.z;
        c.w += 1u;
    }
    w.at = c;
}

uint walker_index(View v, Walker w) { return element_index(v, w.at.x, w.at.y, w.at.z, w.at.w); }
