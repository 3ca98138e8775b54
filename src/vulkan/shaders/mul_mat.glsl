// Shared by mul_mat.comp and mul_mat_vec.comp: d[r, c] = sum_k a[k, r] * b[k, c] per batch, with a
// broadcast over dims 2 and 3 of b and d. The weights a are a float type (-DA_TYPE=f32|f16|bf16,
// any strides) or a block type (-DA_QUANT=q4_0|..., quant.glsl: whole blocks of K, strides in
// bytes); b is -DB_TYPE=f32|f16|bf16 of any strides; d is F32.
//
// ROUTED (MUL_MAT_ID, mat-vec only): batch s = e + n_used t is the product of expert ids[e, t]'s
// matrix (a's dim 2) and column e % n_b of b's matrix t into column e of d's matrix t.
#include "common.glsl"

#ifdef A_QUANT
layout(binding = 0) readonly buffer A { uint a[]; };
#define QUANT_IN a
#ifdef ROUTED
#define QUANT_GRID_BINDING 4
#else
#define QUANT_GRID_BINDING 3
#endif
#include "quant.glsl"
#else
layout(binding = 0) readonly buffer A { STORAGE(A_TYPE) a[]; };
#endif
layout(binding = 1) readonly buffer B { STORAGE(B_TYPE) b[]; };
layout(binding = 2) writeonly buffer D { float d[]; };

#ifdef ROUTED
layout(binding = 3) readonly buffer I { int ids[]; };

layout(push_constant) uniform Push {
    uvec4 ne;  // rows of d (a's ne1), 1, K, n_used
    View va, vb, vd, vi;
    uint n_b, n_as;
    uint batches;  // n_used * T
} p;
#else
layout(push_constant) uniform Push {
    uvec4 ne;  // rows of d (a's ne1), columns of d (b's ne1), K, d's ne2
    View va, vb, vd;
    uint r2, r3;  // b's ne2 / a's ne2, b's ne3 / a's ne3
    uint batches;  // d's ne2 * ne3
} p;
#endif

// A thread reads A_GROUP consecutive k of a row of a at once: one element of a float type, eight of
// a block type (every block holds a multiple of eight).
#ifdef A_QUANT
const uint A_GROUP = 8;
const uint QK = CAT(QK_, A_QUANT);

// Elements k .. k + 7 (k a multiple of 8) of the row of a starting at byte row.
void load_a(uint row, uint k, out float v[A_GROUP]) {
    uint block = row + (k / QK) * p.va.s0, j = k % QK;
    for (uint e = 0; e < A_GROUP; ++e) v[e] = CAT(dequant_, A_QUANT)(block, j + e);
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

#ifdef ROUTED
// False for an expert id outside [0, n_as): its column of d is left unwritten.
bool bases_of(uint batch, out Bases base) {
    uint e = batch % p.ne.w, t = batch / p.ne.w;
    uint id = uint(ids[element_index(p.vi, e, t, 0, 0)]);  // a negative id wraps to >= n_as
    base = Bases(element_index(p.va, 0, 0, id, 0), element_index(p.vb, 0, e % p.n_b, t, 0),
                 element_index(p.vd, 0, e, t, 0));
    return id < p.n_as;
}
#else
bool bases_of(uint batch, out Bases base) {
    uint i2 = batch % p.ne.w, i3 = batch / p.ne.w;
    base = Bases(element_index(p.va, 0, 0, i2 / p.r2, i3 / p.r3), element_index(p.vb, 0, 0, i2, i3),
                 element_index(p.vd, 0, 0, i2, i3));
    return true;
}
#endif
