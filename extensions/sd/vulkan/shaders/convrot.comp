#version 450
// sd.quantize_i8_convrot.v1 (sd-ops.md 3.2, 3.3), G in {1, 4, 16, 64, 256} a specialisation
// constant: one workgroup per activation row of K F32 values (K a multiple of G), bit-identical to
// the CPU kernel. The row is rotated in chunks of 1024 values (whole groups) in shared memory, twice: once for amax over the whole row, once to quantize (the
// rotation is deterministic, so both passes see the same values). Every rounding step is the spec's
// (`precise`: no reassociation or contraction); the two divisions are correctly rounded in integer
// arithmetic, since Vulkan only bounds OpFDiv to 2.5 ulp. Codes are written as 32-bit words (no 8-bit
// storage needed). One extra workgroup (row == rows) zeroes the padding rows and the tail of the last
// scale row, as the CPU kernel does.
layout(local_size_x = 256) in;

layout(constant_id = 0) const uint G = 256u;  // the rotation's group size; 1: none

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) writeonly buffer Q { uint q[]; };

layout(push_constant) uniform Push {
    uint k;         // values per row, a multiple of G
    uint rows;      // activation rows
    uint rows_pad;  // round_up(rows, 4)
    uint groups_x;  // workgroups per grid row (rows + 1 workgroups over a 2-D grid)
    uint a_offset;  // first float of a in its binding
    uint q_offset;  // first word of the packed output in its binding
    uint q_words;   // words of the packed output
} p;

const uint CHUNK = 1024u;  // values rotated at once: each invocation owns one quadruple per stage

shared float v[CHUNK];
shared float partial[256];

// 1/sqrt(G), exact (a power of two).
float group_scale() { return G == 256u ? 0.0625 : G == 64u ? 0.125 : G == 16u ? 0.25 : G == 4u ? 0.5 : 1.0; }

// The chunk of n values (a multiple of G, at most CHUNK) at float `first` of a, rotated into v.
void rotate_chunk(uint first, uint n) {
    const uint t = gl_LocalInvocationID.x;
    barrier();  // the previous chunk is consumed
    for (uint i = 0u; i < 4u; ++i) {
        const uint e = i * 256u + t;
        if (e < n) {
            precise float scaled = a[first + e] * group_scale();  // before the butterflies
            v[e] = scaled;
        }
    }
    barrier();
    // Stage s combines the quadruple base + j, + s, + 2s, + 3s (base stepping by 4s within a group):
    // invocation t owns the t-th quadruple of the chunk, which never crosses a group for s < G.
    for (uint s = 1u; s < G; s *= 4u) {
        const uint i0 = t / s * 4u * s + t % s;
        if (i0 < n) {
            const float x0 = v[i0], x1 = v[i0 + s], x2 = v[i0 + 2u * s], x3 = v[i0 + 3u * s];
            precise float ab = x0 + x1;
            precise float y0 = ab + x2 - x3;
            precise float y1 = ab - x2 + x3;
            precise float y2 = x0 - x1 + x2 + x3;
            precise float y3 = x1 - x0 + x2 + x3;  // -x0 + x1 rounds exactly as x1 - x0
            v[i0] = y0;
            v[i0 + s] = y1;
            v[i0 + 2u * s] = y2;
            v[i0 + 3u * s] = y3;
        }
        barrier();
    }
}

// a / b rounded to nearest even, for a >= 0 and b > 0 normal with a normal quotient (long division
// of the 24-bit significands); other operands (never met by real activations) use OpFDiv.
float div_rn(float a, float b) {
    if (a == 0.0) return 0.0;
    const uint ua = floatBitsToUint(a), ub = floatBitsToUint(b);
    const int ea = int(ua >> 23u), eb = int(ub >> 23u);
    if (ea == 0 || eb == 0 || ea == 255 || eb == 255) return a / b;
    uint ma = (ua & 0x7FFFFFu) | 0x800000u, mb = (ub & 0x7FFFFFu) | 0x800000u;
    int e = ea - eb + 127;
    if (ma < mb) {
        ma <<= 1u;
        --e;
    }
    uint quotient = 0u;  // 24 significand bits, then the rounding bit
    for (int i = 0; i < 25; ++i) {
        quotient <<= 1u;
        if (ma >= mb) {
            ma -= mb;
            quotient |= 1u;
        }
        ma <<= 1u;
    }
    const bool round_bit = (quotient & 1u) != 0u;
    quotient >>= 1u;
    if (round_bit && (ma != 0u || (quotient & 1u) != 0u)) ++quotient;
    if (quotient == 0x1000000u) {
        quotient >>= 1u;
        ++e;
    }
    if (e <= 0 || e >= 255) return a / b;
    return uintBitsToFloat(uint(e) << 23u | (quotient & 0x7FFFFFu));
}

// The largest of every invocation's m.
float workgroup_max(float m) {
    const uint t = gl_LocalInvocationID.x;
    partial[t] = m;
    barrier();
    for (uint half_size = 128u; half_size > 0u; half_size /= 2u) {
        if (t < half_size) partial[t] = max(partial[t], partial[t + half_size]);
        barrier();
    }
    return partial[0];
}

uint code(float x, float inv) {
    precise float scaled = x * inv;
    return uint(int(roundEven(clamp(scaled, -127.0, 127.0)))) & 0xFFu;
}

// The padding code rows and the bytes after the scales, zeroed.
void zero_padding() {
    const uint t = gl_LocalInvocationID.x, row_words = p.k / 4u;
    for (uint i = row_words * p.rows + t; i < row_words * p.rows_pad; i += 256u)
        q[p.q_offset + i] = 0u;
    for (uint i = row_words * p.rows_pad + p.rows + t; i < p.q_words; i += 256u)
        q[p.q_offset + i] = 0u;
}

void main() {
    const uint row = gl_WorkGroupID.y * p.groups_x + gl_WorkGroupID.x;
    if (row > p.rows) return;
    if (row == p.rows) {
        zero_padding();
        return;
    }
    const uint t = gl_LocalInvocationID.x, first = p.a_offset + row * p.k;
    float m = 0.0;
    for (uint c = 0u; c < p.k; c += CHUNK) {
        const uint n = min(CHUNK, p.k - c);
        rotate_chunk(first + c, n);
        for (uint i = 0u; i < 4u; ++i)
            if (i * 256u + t < n) m = max(m, abs(v[i * 256u + t]));
    }
    const float amax = workgroup_max(m);
    const float scale = div_rn(amax, 127.0);
    const float inv = scale == 0.0 ? 0.0 : div_rn(1.0, scale);
    const uint row_words = p.k / 4u;
    if (t == 0u) q[p.q_offset + row_words * p.rows_pad + row] = floatBitsToUint(scale);
    for (uint c = 0u; c < p.k; c += CHUNK) {
        const uint n = min(CHUNK, p.k - c);
        rotate_chunk(first + c, n);
        if (4u * t < n) {
            const uint i = 4u * t;
            const uint word = code(v[i], inv) | code(v[i + 1u], inv) << 8u | code(v[i + 2u], inv) << 16u |
                              code(v[i + 3u], inv) << 24u;
            q[p.q_offset + row * row_words + (c + i) / 4u] = word;
        }
    }
}
