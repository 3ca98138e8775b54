// ConvRot quantization of one activation row per workgroup (sd-ops.md 3.2, 3.3), shared by
// convrot.comp (rows read from memory) and modulate_convrot.comp (rows computed by a fused chain),
// bit-identical to the CPU kernel. The includer defines
//     float row_value(uint column);
// the row's value at a column (it may be asked for a column more than once, and must give the same
// value each time), then calls quantize_row or zero_padding.
//
// The row is rotated in chunks of 1024 values (whole groups) in shared memory. A row of at most
// RESIDENT values stays there between the pass taking amax over the whole row and the pass
// quantizing it; a longer one is rotated again for the second pass (the rotation is deterministic,
// so both passes see the same values). Every rounding step is the spec's (`precise`: no reassociation or contraction); the two
// divisions are correctly rounded in integer arithmetic, since Vulkan only bounds OpFDiv to 2.5 ulp.
// Codes are written as 32-bit words (no 8-bit storage needed). One extra workgroup (row == rows)
// zeroes the padding rows and the tail of the last scale row, as the CPU kernel does.
layout(local_size_x = 256) in;

layout(constant_id = 0) const uint G = 256u;  // the rotation's group size; 1: none

layout(binding = 1) writeonly buffer Q { uint q[]; };

const uint CHUNK = 1024u;     // values rotated at once: each invocation owns one quadruple per stage
const uint RESIDENT = 2048u;  // the longest row kept rotated in shared memory

shared float v[RESIDENT];
shared float partial[256];

float row_value(uint column);

// 1/sqrt(G), exact (a power of two).
float group_scale() { return G == 256u ? 0.0625 : G == 64u ? 0.125 : G == 16u ? 0.25 : G == 4u ? 0.5 : 1.0; }

// The row's n values (a multiple of G, at most CHUNK) from column `first`, rotated into v from
// index `base` (base + n <= RESIDENT).
void rotate_chunk(uint first, uint n, uint base) {
    const uint t = gl_LocalInvocationID.x;
    barrier();  // the previous chunk is consumed
    for (uint i = 0u; i < 4u; ++i) {
        const uint e = i * 256u + t;
        if (e < n) {
            precise float scaled = row_value(first + e) * group_scale();  // before the butterflies
            v[base + e] = scaled;
        }
    }
    barrier();
    // Stage s combines the quadruple base + j, + s, + 2s, + 3s (base stepping by 4s within a group):
    // invocation t owns the t-th quadruple of the chunk, which never crosses a group for s < G.
    for (uint s = 1u; s < G; s *= 4u) {
        const uint i0 = base + t / s * 4u * s + t % s;
        if (i0 < base + n) {
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

// The largest of every invocation's m (partial must be free: a reduction before it ends with a
// barrier).
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

// The packed output of `rows` rows of k values from word q_offset: round_up(rows, 4) code rows of
// k / 4 words, then the F32 row scales, rounded up to whole code rows.
struct Packed {
    uint k, rows, rows_pad, q_offset, q_words;
};

// The padding code rows and the bytes after the scales, zeroed.
void zero_padding(Packed o) {
    const uint t = gl_LocalInvocationID.x, row_words = o.k / 4u;
    for (uint i = row_words * o.rows + t; i < row_words * o.rows_pad; i += 256u)
        q[o.q_offset + i] = 0u;
    for (uint i = row_words * o.rows_pad + o.rows + t; i < o.q_words; i += 256u)
        q[o.q_offset + i] = 0u;
}

// Quantizes row `row` of o (its values from row_value) into its codes and scale.
void quantize_row(Packed o, uint row) {
    const uint t = gl_LocalInvocationID.x;
    const bool resident = o.k <= RESIDENT;
    float m = 0.0;
    for (uint c = 0u; c < o.k; c += CHUNK) {
        const uint n = min(CHUNK, o.k - c), base = resident ? c : 0u;
        rotate_chunk(c, n, base);
        for (uint i = 0u; i < 4u; ++i)
            if (i * 256u + t < n) m = max(m, abs(v[base + i * 256u + t]));
    }
    const float amax = workgroup_max(m);
    const float scale = div_rn(amax, 127.0);
    const float inv = scale == 0.0 ? 0.0 : div_rn(1.0, scale);
    const uint row_words = o.k / 4u;
    if (t == 0u) q[o.q_offset + row_words * o.rows_pad + row] = floatBitsToUint(scale);
    for (uint c = 0u; c < o.k; c += CHUNK) {
        const uint n = min(CHUNK, o.k - c), base = resident ? c : 0u;
        if (!resident) rotate_chunk(c, n, base);
        if (4u * t < n) {
            const uint i = base + 4u * t;
            const uint word = code(v[i], inv) | code(v[i + 1u], inv) << 8u | code(v[i + 2u], inv) << 16u |
                              code(v[i + 3u], inv) << 24u;
            q[o.q_offset + row * row_words + (c + 4u * t) / 4u] = word;
        }
    }
}

// The workgroup's row: one per workgroup over a 2-D grid of rows + 1 workgroups.
uint workgroup_row() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
