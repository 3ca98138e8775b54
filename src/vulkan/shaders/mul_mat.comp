#version 450
// MUL_MAT, tiled: a workgroup computes a TILE x TILE block of d (rows x columns) of one batch,
// stepping over K in slices of BK staged in shared memory (k-major, padded against bank
// conflicts); each invocation accumulates a 4 x 4 register block of rows tx + 16 i and columns
// ty + 16 j (consecutive invocations on consecutive rows: coalesced stores of d).
#include "mul_mat.glsl"

// 2 x BK x PAD floats of shared memory (8.3 KB) stay within Vulkan's guaranteed 16 KB.
const uint THREADS = 256, TILE = 64, BK = 16, PAD = TILE + 1, BLOCK = 4, SPREAD = TILE / BLOCK;
layout(local_size_x = THREADS) in;

shared float as[BK * PAD];  // as[k * PAD + r]: a rows r0 + r
shared float bs[BK * PAD];  // bs[k * PAD + c]: b columns c0 + c

// Stages a[k0 .. k0 + BK, r0 .. r0 + TILE] (zeros past the matrix): each invocation loads groups of
// A_GROUP consecutive k, consecutive invocations along k.
void stage_a(uint a_base, uint r0, uint k0, uint t) {
    const uint per_row = BK / A_GROUP;
    uint k = (t % per_row) * A_GROUP;
    for (uint r = t / per_row; r < TILE; r += THREADS / per_row) {
        float v[A_GROUP];
        if (r0 + r < p.ne.x && k0 + k < p.ne.z) {
            load_a(a_base + (r0 + r) * p.va.s1, k0 + k, v);
        } else {
            for (uint e = 0; e < A_GROUP; ++e) v[e] = 0.0;
        }
        for (uint e = 0; e < A_GROUP; ++e) as[(k + e) * PAD + r] = v[e];
    }
}

void stage_b(uint b_base, uint c0, uint k0, uint t) {
    uint k = t % BK;
    for (uint c = t / BK; c < TILE; c += THREADS / BK) {
        bool inside = c0 + c < p.ne.y && k0 + k < p.ne.z;
        bs[k * PAD + c] = inside ? load_b(b_base + (c0 + c) * p.vb.s1 + (k0 + k) * p.vb.s0) : 0.0;
    }
}

void main() {
    uint row_tiles = (p.ne.x + TILE - 1) / TILE;
    uint tiles = row_tiles * ((p.ne.y + TILE - 1) / TILE);
    uint g = group_index();
    uint batch = g / tiles;
    if (batch >= p.batches) return;  // the spread of groups over x and y rounds up
    g -= batch * tiles;
    uint r0 = (g % row_tiles) * TILE, c0 = (g / row_tiles) * TILE;
    Bases base;
    bases_of(batch, base);

    uint t = gl_LocalInvocationID.x, tx = t % SPREAD, ty = t / SPREAD;
    float acc[BLOCK][BLOCK];
    for (uint i = 0; i < BLOCK; ++i)
        for (uint j = 0; j < BLOCK; ++j) acc[i][j] = 0.0;

    for (uint k0 = 0; k0 < p.ne.z; k0 += BK) {
        stage_a(base.a, r0, k0, t);
        stage_b(base.b, c0, k0, t);
        barrier();
        for (uint k = 0; k < BK; ++k) {
            float av[BLOCK], bv[BLOCK];
            for (uint i = 0; i < BLOCK; ++i) av[i] = as[k * PAD + tx + SPREAD * i];
            for (uint j = 0; j < BLOCK; ++j) bv[j] = bs[k * PAD + ty + SPREAD * j];
            for (uint i = 0; i < BLOCK; ++i)
                for (uint j = 0; j < BLOCK; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
        }
        barrier();
    }

    for (uint j = 0; j < BLOCK; ++j) {
        uint c = c0 + ty + SPREAD * j;
        if (c >= p.ne.y) break;
        for (uint i = 0; i < BLOCK; ++i) {
            uint r = r0 + tx + SPREAD * i;
            if (r < p.ne.x) d[base.d + r * p.vd.s0 + c * p.vd.s1] = acc[i][j];
        }
    }
}
