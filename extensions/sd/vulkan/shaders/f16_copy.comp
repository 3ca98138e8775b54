#version 450
// CONCAT -> [PERMUTE] -> CPY into F16, or CONT -> SCALE -> PERMUTE -> CPY into F16, in one pass
// (vulkan/affine.cpp's rules "sd.concat_f16.vulkan" and "sd.cont_scale_f16.vulkan"): each element
// of the copy is read where the eliminated contiguous tensor's value comes from (an input of the
// Concat, or the Contiguous's input), scaled by SCALE's expression as the native map shader writes it
// (unqualified, for the driver to compile alike), and converted to F16 with the native conversion's
// rounding (to nearest even, quiet NaNs, as the CPU's).
#extension GL_EXT_shader_16bit_storage : require
layout(local_size_x = 256) in;

layout(constant_id = 0) const uint SCALED = 0u;

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) writeonly buffer D { uint16_t d[]; };

layout(push_constant) uniform Push {
    uint ne[4];      // the copy's extents
    uint a_offset;   // first float of a, then its strides along the copy's dimensions
    uint a_nb[4];
    uint b_offset;   // the same for b
    uint b_nb[4];
    uint split;      // the copy's dimension that crosses from a into b (4: none)
    uint a_extent;   // a's extent along it
    float s, bias;   // SCALE's
    uint d_offset;   // first half of the copy, then its strides in halves
    uint d_nb[4];
} p;

// value >> shift rounded to nearest, ties to even (1 <= shift < 32).
uint shift_rne(uint value, uint shift) {
    const uint kept = value >> shift, rest = value & ((1u << shift) - 1u), half_ = 1u << (shift - 1u);
    return kept + ((rest > half_ || (rest == half_ && (kept & 1u) != 0u)) ? 1u : 0u);
}

uint f16_bits(float f) {
    const uint bits = floatBitsToUint(f), sign = (bits >> 16) & 0x8000u, m = bits & 0x7fffffffu;
    if (m > 0x7f800000u) return sign | 0x7e00u | ((m >> 13) & 0x03ffu);  // NaN, quiet
    if (m >= 0x477ff000u) return sign | 0x7c00u;                         // rounds to infinity
    if (m >= 0x38800000u) return sign | shift_rne(m - 0x38000000u, 13u);  // normal
    if (m <= 0x33000000u) return sign;                                   // rounds to zero
    return sign | shift_rne((m & 0x007fffffu) | 0x00800000u, 126u - (m >> 23));  // subnormal
}

void main() {
    const uint n = p.ne[0] * p.ne[1] * p.ne[2] * p.ne[3];
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * 256u) {
        uint c[4] = uint[4](i % p.ne[0], i / p.ne[0] % p.ne[1], i / (p.ne[0] * p.ne[1]) % p.ne[2],
                            i / (p.ne[0] * p.ne[1] * p.ne[2]));
        const bool second = p.split < 4u && c[p.split] >= p.a_extent;
        if (second) c[p.split] -= p.a_extent;
        float v;
        if (second) {
            v = b[p.b_offset + c[0] * p.b_nb[0] + c[1] * p.b_nb[1] + c[2] * p.b_nb[2] + c[3] * p.b_nb[3]];
        } else {
            v = a[p.a_offset + c[0] * p.a_nb[0] + c[1] * p.a_nb[1] + c[2] * p.a_nb[2] + c[3] * p.a_nb[3]];
        }
        if (second) c[p.split] += p.a_extent;
        if (SCALED != 0u) v = v * p.s + p.bias;
        d[p.d_offset + c[0] * p.d_nb[0] + c[1] * p.d_nb[1] + c[2] * p.d_nb[2] + c[3] * p.d_nb[3]] =
            uint16_t(f16_bits(v));
    }
}
