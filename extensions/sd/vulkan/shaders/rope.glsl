// Shared by rope_apply.comp and rms_norm_mul_rope.comp: one workgroup of WG invocations per output
// row of sd.rope_apply.v1 (sd-ops.md 1.3). The row's input channels come from channel(c), which the
// including shader defines; pe is read through its strides. The output y is the rope node's F32
// [D, L, H*B] (contiguous) or, with SCALE_F16, the terminal CPY's F16 destination (below).
//
// Every rotated value is p*m0 + q*m1 (split-half: p*c - q*s, p*s + q*c) with each product rounded
// to F32 and one F32 add or subtract: the results are `precise`, so the driver cannot contract
// them into FMAs, and they equal the CPU kernel's bit for bit.
#ifdef SCALE_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint INTERLEAVED = 1;
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer PE { float pe[]; };

// Strides in floats; offsets are the buffer_info shader offsets in floats (y_off and d_* in halves
// with SCALE_F16). w_* and eps are read by the fused shaders only, scale to d_s3 with SCALE_F16.
layout(push_constant) uniform Push {
    uint dim, heads, tokens, rows;  // rows = L * H * B
    uint pairs;                     // P: channels [0, 2P) are rotated, the rest copied
    uint x_off, x_s0, x_s1, x_s2, x_s3;
    uint pe_off, pe_s0, pe_s1, pe_s2, pe_s3;
    uint y_off;
    uint w_off, w_s0;
    float eps;
    float scale, bias;         // ggml_scale's op_params: y = x * scale + bias
    uint d_ne0, d_ne1, d_ne2;  // the CPY destination's shape (ne3 follows from the element count)
    uint d_s0, d_s1, d_s2, d_s3;
} p;

#ifdef SCALE_F16
layout(binding = 2) writeonly buffer Y { uint16_t y[]; };

// value >> shift (1 <= shift < 32) rounded to nearest, ties to even.
uint shift_rne(uint value, uint shift) {
    uint dropped = value & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    uint kept = value >> shift;
    return kept + uint(dropped > halfway || (dropped == halfway && (kept & 1u) == 1u));
}

// The F16 bits of f, rounded to nearest even: overflow to infinity, F16 subnormals rounded at
// 2^-24, a NaN stays a quiet NaN with its top payload bits.
uint f16_bits(float f) {
    uint bits = floatBitsToUint(f);
    uint sign = (bits >> 16) & 0x8000u, magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu);
    int exponent = int(magnitude >> 23) - 127;
    if (exponent >= 16) return sign | 0x7c00u;  // infinity, or a finite value >= 2^16
    if (exponent < -25) return sign;            // below half the smallest subnormal
    uint significand = (magnitude & 0x7fffffu) | 0x800000u;
    // A normal result adds the rounded 11-bit significand (its leading bit adds the last 1 of the
    // bias) to the exponent field; a rounding carry moves into the exponent, up to infinity. A
    // subnormal result counts units of 2^-24.
    if (exponent >= -14) return sign | ((uint(exponent + 14) << 10) + shift_rne(significand, 13u));
    return sign | shift_rne(significand, uint(-1 - exponent));
}

// Element c of output row `row` is element row * D + c of the SCALE, in the CPY's row-major order:
// scaled (product and sum rounded separately, as the native SCALE) and stored as F16 at the
// destination's element of that order.
void store(uint row, uint c, float v) {
    precise float product = v * p.scale;
    precise float shifted = product + p.bias;
    uint i = row * p.dim + c;
    uint i0 = i % p.d_ne0, i1 = (i / p.d_ne0) % p.d_ne1;
    uint i2 = (i / (p.d_ne0 * p.d_ne1)) % p.d_ne2, i3 = i / (p.d_ne0 * p.d_ne1 * p.d_ne2);
    y[p.y_off + i0 * p.d_s0 + i1 * p.d_s1 + i2 * p.d_s2 + i3 * p.d_s3] = uint16_t(f16_bits(shifted));
}
#else
layout(binding = 2) writeonly buffer Y { float y[]; };

void store(uint row, uint c, float v) { y[p.y_off + row * p.dim + c] = v; }
#endif

float channel(uint c);  // the row's input channel c (after the fused shader's normalisation)

uint row_index() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// Input row (h, t, b) of output row index row = t + L * (h + H * b): the first element's index in x.
uint x_row_base(uint row) {
    uint t = row % p.tokens, hb = row / p.tokens;
    uint h = hb % p.heads, b = hb / p.heads;
    return p.x_off + h * p.x_s1 + t * p.x_s2 + b * p.x_s3;
}

// pe[col, r, j, t] = M[r][col] of pair j of token t.
float matrix(uint t, uint j, uint r, uint col) {
    return pe[p.pe_off + col * p.pe_s0 + r * p.pe_s1 + j * p.pe_s2 + t * p.pe_s3];
}

// Writes output row `row`, pair by pair (pair i holds channels 2i and 2i + 1 of the copied tail).
void rotate_row(uint row) {
    uint t = row % p.tokens;
    for (uint i = gl_LocalInvocationID.x; i < p.dim / 2; i += WG) {
        if (i >= p.pairs) {
            store(row, 2 * i, channel(2 * i));
            store(row, 2 * i + 1, channel(2 * i + 1));
        } else if (INTERLEAVED != 0) {
            float a = channel(2 * i), b = channel(2 * i + 1);
            precise float r0 = a * matrix(t, i, 0, 0) + b * matrix(t, i, 0, 1);
            precise float r1 = a * matrix(t, i, 1, 0) + b * matrix(t, i, 1, 1);
            store(row, 2 * i, r0);
            store(row, 2 * i + 1, r1);
        } else {
            float a = channel(i), b = channel(i + p.pairs);
            float c = matrix(t, i, 0, 0), s = matrix(t, i, 1, 0);
            precise float r0 = a * c - b * s;
            precise float r1 = a * s + b * c;
            store(row, i, r0);
            store(row, i + p.pairs, r1);
        }
    }
}
