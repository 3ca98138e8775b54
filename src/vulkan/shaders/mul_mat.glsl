// Shared by mul_mat.comp and mul_mat_vec.comp: d[r, c] = sum_k a[k, r] * b[k, c] per batch, with a
// broadcast over dims 2 and 3 of b and d. The weights a are a float type (-DA_TYPE=f32|f16|bf16,
// any strides) or a 32-element block type read through 16-bit words (-DA_QUANT=q8_0|q4_0, whole
// blocks of K, strides in words); b is -DB_TYPE=f32|f16|bf16 of any strides; d is F32.
#include "common.glsl"

#ifdef A_QUANT
layout(binding = 0) readonly buffer A { uint16_t a[]; };
#else
layout(binding = 0) readonly buffer A { STORAGE(A_TYPE) a[]; };
#endif
layout(binding = 1) readonly buffer B { STORAGE(B_TYPE) b[]; };
layout(binding = 2) writeonly buffer D { float d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;  // rows of d (a's ne1), columns of d (b's ne1), K, d's ne2
    View va, vb, vd;
    uint r2, r3;  // b's ne2 / a's ne2, b's ne3 / a's ne3
    uint batches;  // d's ne2 * ne3
} p;

// A thread reads A_GROUP consecutive k of a row of a at once: one element of a float type, a quarter
// of a quantized block (a word of its scale, four of its quants).
#ifdef A_QUANT
const uint A_GROUP = 8;

// Q8_0 block (17 words): F16 scale, 32 int8 quants, two to a word (low byte first).
void dequant8_q8_0(uint block, uint first, out float v[A_GROUP]) {
    float scale = unpackHalf2x16(uint(a[block])).x;
    for (uint j = 0; j < 4; ++j) {
        int w = int(uint(a[block + 1 + first / 2 + j]));
        v[2 * j] = float(bitfieldExtract(w, 0, 8)) * scale;
        v[2 * j + 1] = float(bitfieldExtract(w, 8, 8)) * scale;
    }
}

// Q4_0 block (9 words): F16 scale, 16 bytes whose low nibbles are elements 0..15 and high nibbles
// 16..31, each stored + 8.
void dequant8_q4_0(uint block, uint first, out float v[A_GROUP]) {
    float scale = unpackHalf2x16(uint(a[block])).x;
    uint shift = first < 16 ? 0 : 4;
    for (uint j = 0; j < 4; ++j) {
        uint w = uint(a[block + 1 + (first & 15u) / 2 + j]) >> shift;
        v[2 * j] = float(int(w & 15u) - 8) * scale;
        v[2 * j + 1] = float(int((w >> 8) & 15u) - 8) * scale;
    }
}

// Elements k .. k + 7 (k a multiple of 8) of the row of a starting at word row.
void load_a(uint row, uint k, out float v[A_GROUP]) {
    CAT(dequant8_, A_QUANT)(row + (k >> 5) * p.va.s0, k & 31u, v);
}
#else
const uint A_GROUP = 1;

void load_a(uint row, uint k, out float v[A_GROUP]) { v[0] = LOAD(A_TYPE, a[row + k * p.va.s0]); }
#endif

float load_b(uint i) { return LOAD(B_TYPE, b[i]); }

// First elements of batch's matrices in a, b and d.
struct Bases {
    uint a, b, d;
};

Bases bases_of(uint batch) {
    uint i2 = batch % p.ne.w, i3 = batch / p.ne.w;
    return Bases(element_index(p.va, 0, 0, i2 / p.r2, i3 / p.r3), element_index(p.vb, 0, 0, i2, i3),
                 element_index(p.vd, 0, 0, i2, i3));
}
