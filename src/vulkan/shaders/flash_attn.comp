#version 450
// FLASH_ATTN_EXT: out[:, h, t, b] = softmax_j(s_j) V with s_j = scale * q.k_j (or softcap *
// tanh(scale * q.k_j / softcap)) + slope(h) * mask[j, t], q F32 [D, n_q, H, B], K/V F16 or F32
// [D|DV, n_kv, HK, BK] (heads and batches broadcast), optional F16/F32 mask, any strides.
//
// A workgroup takes BR query rows that share one K/V head: rows are (query t, head g of the GQA
// group) pairs, t * group + g, so a decoding step fills its rows with the group's heads. It walks
// the keys in tiles of BC: K tile to shared memory, scores (LANES invocations per row, each
// KEYS_PER_LANE keys), online softmax (running max shared by the row's lanes, partial sums per
// lane), V tile into the same shared memory, then each lane accumulates its output columns; a
// tile masked for every row skips the V half. With SPLIT, grid z is batch * n_splits + split and the
// workgroup covers keys_per_split keys, writing unnormalised rows (DV values, max, sum) for
// flash_attn_combine.comp instead of the output. The tile (BR rows, BC keys) is chosen by the host
// so that its shared memory fits the device (wide heads take smaller tiles). With SINKS (one F32
// logit per head, ggml_flash_attn_ext_add_sinks) the row's softmax has one more term, added after
// the keys (by flash_attn_combine.comp when the keys are split).
#include "common.glsl"
#include "activations.glsl"

#define LANES 8  // invocations per query row

layout(constant_id = 5) const uint LOCAL_SIZE = 128;  // BR * LANES
layout(constant_id = 6) const uint BC = 32;           // keys per tile, a multiple of LANES
layout(constant_id = 7) const bool SINKS = false;
layout(local_size_x_id = 5) in;
const uint BR = LOCAL_SIZE / LANES;  // query rows per workgroup
layout(constant_id = 0) const uint D = 64;
layout(constant_id = 1) const uint DV = 64;
layout(constant_id = 2) const bool HAS_MASK = false;
layout(constant_id = 3) const bool SOFTCAP = false;
layout(constant_id = 4) const bool SPLIT = false;

const uint KEYS_PER_LANE = BC / LANES;
const uint COLS_PER_LANE = (DV + LANES - 1) / LANES;
// Rows padded by one float: the lanes of a row read different rows of the K tile at once.
const uint Q_STRIDE = D + 1;
const uint KV_STRIDE = (D > DV ? D : DV) + 1;
const uint P_STRIDE = BC + 1;

layout(binding = 0) readonly buffer Q { float q[]; };
layout(binding = 1) readonly buffer K { STORAGE(K_TYPE) k[]; };
layout(binding = 2) readonly buffer V { STORAGE(V_TYPE) v[]; };
layout(binding = 3) readonly buffer Mask { STORAGE(M_TYPE) mask[]; };
layout(binding = 4) writeonly buffer O { float o[]; };
layout(binding = 5) readonly buffer Sinks { float sinks[]; };

layout(push_constant) uniform Push {
    View vq, vk, vv, vm;
    uint o_off;  // the output is contiguous [DV, H, n_q, B]
    uint n_q, n_kv, group;
    uint kv_ratio;     // B / BK: q batches per K/V batch
    uint mask_repeat;  // the mask's ne2 (low 16 bits) and ne3 (high 16 bits)
    uint n_head_log2;  // ALiBi: the largest power of two <= H
    float scale, softcap;
    float log2_m0;     // ALiBi: -max_bias / n_head_log2 (0 without ALiBi)
    uint keys_per_split;
    uint sinks_off;
} p;

shared float q_tile[BR * Q_STRIDE];
shared float kv_tile[BC * KV_STRIDE];
shared float p_tile[BR * P_STRIDE];
shared float row_part[BR * LANES];  // per-lane partial maxima, then sums
shared bool tile_live;              // whether any score of the current tile is finite

#define NEG_INF uintBitsToFloat(0xff800000u)

float alibi_slope(uint h) {
    if (h < p.n_head_log2) return exp2(p.log2_m0 * float(h + 1));
    return exp2(0.5 * p.log2_m0 * float(2 * (h - p.n_head_log2) + 1));
}

float row_reduce_max(uint r) {
    float m = row_part[r * LANES];
    for (uint i = 1; i < LANES; ++i) m = max(m, row_part[r * LANES + i]);
    return m;
}

float row_reduce_sum(uint r) {
    float s = 0.0;
    for (uint i = 0; i < LANES; ++i) s += row_part[r * LANES + i];
    return s;
}

// kv_tile[j][c] = K[c, j0 + j] (zero past the last key).
void load_k_tile(uint base, uint j0, uint key_end) {
    for (uint i = gl_LocalInvocationID.x; i < BC * D; i += LOCAL_SIZE) {
        uint j = i / D, c = i % D;
        kv_tile[j * KV_STRIDE + c] = j0 + j < key_end ? LOAD(K_TYPE, k[base + (j0 + j) * p.vk.s1 + c * p.vk.s0]) : 0.0;
    }
}

// kv_tile[j][c] = V[c, j0 + j] (zero past the last key).
void load_v_tile(uint base, uint j0, uint key_end) {
    for (uint i = gl_LocalInvocationID.x; i < BC * DV; i += LOCAL_SIZE) {
        uint j = i / DV, c = i % DV;
        kv_tile[j * KV_STRIDE + c] = j0 + j < key_end ? LOAD(V_TYPE, v[base + (j0 + j) * p.vv.s1 + c * p.vv.s0]) : 0.0;
    }
}

// The invocation's query row: its state through the key loop.
struct Row {
    bool valid;
    uint t, h;
    uint mask_base;
    float slope;
};

float m_run = NEG_INF;  // the row's running max (the same in each of its lanes)
float l_run = 0.0;      // this lane's part of the row's running sum
float acc[COLS_PER_LANE];

void load_q_tile(uint row0, uint rows, uint hk, uint b) {
    float qscale = SOFTCAP ? p.scale / p.softcap : p.scale;
    for (uint i = gl_LocalInvocationID.x; i < BR * D; i += LOCAL_SIZE) {
        uint ri = i / D, c = i % D, row = row0 + ri;
        float x = 0.0;
        if (row < rows) x = q[element_index(p.vq, c, row / p.group, hk * p.group + row % p.group, b)] * qscale;
        q_tile[ri * Q_STRIDE + c] = x;
    }
}

// The scores of this lane's keys j0 + lane + LANES * kk of the K tile (-inf past key_end).
void score_tile(Row row, uint r, uint lane, uint j0, uint key_end, out float s[KEYS_PER_LANE]) {
    for (uint kk = 0; kk < KEYS_PER_LANE; ++kk) s[kk] = 0.0;
    for (uint c = 0; c < D; ++c) {
        float qc = q_tile[r * Q_STRIDE + c];
        for (uint kk = 0; kk < KEYS_PER_LANE; ++kk) s[kk] += qc * kv_tile[(lane + LANES * kk) * KV_STRIDE + c];
    }
    for (uint kk = 0; kk < KEYS_PER_LANE; ++kk) {
        uint key = j0 + lane + LANES * kk;
        if (SOFTCAP) s[kk] = p.softcap * tanh_of(s[kk]);
        if (HAS_MASK && row.valid && key < key_end) s[kk] += row.slope * LOAD(M_TYPE, mask[row.mask_base + key * p.vm.s0]);
        if (!row.valid || key >= key_end) s[kk] = NEG_INF;
    }
}

// Online softmax step with the tile's row max: rescales the state and writes the tile's weights.
void update_softmax(uint r, uint lane, float s[KEYS_PER_LANE]) {
    float m_new = max(m_run, row_reduce_max(r));
    float m_safe = m_new == NEG_INF ? 0.0 : m_new;  // a row with every key so far masked
    float alpha = m_run == NEG_INF ? 0.0 : exp(m_run - m_safe);
    l_run *= alpha;
    for (uint kk = 0; kk < KEYS_PER_LANE; ++kk) {
        float e = s[kk] == NEG_INF ? 0.0 : exp(s[kk] - m_safe);
        l_run += e;
        p_tile[r * P_STRIDE + lane + LANES * kk] = e;
    }
    m_run = m_new;
    for (uint c = 0; c < COLS_PER_LANE; ++c) acc[c] *= alpha;
}

// acc += the row's weights times the V tile, for this lane's columns lane + LANES * c.
void accumulate_v(uint r, uint lane) {
    for (uint j = 0; j < BC; ++j) {
        float e = p_tile[r * P_STRIDE + j];
        for (uint c = 0; c < COLS_PER_LANE; ++c) {
            uint col = lane + LANES * c;
            if (col < DV) acc[c] += e * kv_tile[j * KV_STRIDE + col];
        }
    }
}

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint r = tid / LANES, lane = tid % LANES;
    uint rows = p.n_q * p.group;
    uint row0 = gl_WorkGroupID.x * BR;
    uint hk = gl_WorkGroupID.y, n_heads = gl_NumWorkGroups.y * p.group;
    uint n_splits = SPLIT ? (p.n_kv + p.keys_per_split - 1) / p.keys_per_split : 1;
    uint b = gl_WorkGroupID.z / n_splits, split = gl_WorkGroupID.z % n_splits;
    uint key_begin = split * p.keys_per_split;
    uint key_end = SPLIT ? min(p.n_kv, key_begin + p.keys_per_split) : p.n_kv;

    load_q_tile(row0, rows, hk, b);
    Row row;
    row.valid = row0 + r < rows;
    row.t = (row0 + r) / p.group;
    row.h = hk * p.group + (row0 + r) % p.group;
    row.mask_base = 0;
    row.slope = 1.0;
    if (HAS_MASK && row.valid) {
        row.mask_base = element_index(p.vm, 0, row.t, row.h % (p.mask_repeat & 0xffffu), b % (p.mask_repeat >> 16));
        row.slope = alibi_slope(row.h);
    }
    uint k_base = p.vk.off + hk * p.vk.s2 + b / p.kv_ratio * p.vk.s3;
    uint v_base = p.vv.off + hk * p.vv.s2 + b / p.kv_ratio * p.vv.s3;
    for (uint c = 0; c < COLS_PER_LANE; ++c) acc[c] = 0.0;

    for (uint j0 = key_begin; j0 < key_end; j0 += BC) {
        if (tid == 0) tile_live = false;
        load_k_tile(k_base, j0, key_end);
        barrier();
        float s[KEYS_PER_LANE];
        score_tile(row, r, lane, j0, key_end, s);
        float tile_max = NEG_INF;
        for (uint kk = 0; kk < KEYS_PER_LANE; ++kk) tile_max = max(tile_max, s[kk]);
        row_part[tid] = tile_max;
        if (tile_max != NEG_INF) tile_live = true;
        barrier();
        // A tile masked for every row (most of a causal mask's upper triangle) changes nothing.
        if (tile_live) {
            load_v_tile(v_base, j0, key_end);
            update_softmax(r, lane, s);
            barrier();
            accumulate_v(r, lane);
        }
        barrier();
    }

    row_part[tid] = l_run;
    barrier();
    if (!row.valid) return;
    float sum = row_reduce_sum(r);
    uint out_row = (b * p.n_q + row.t) * n_heads + row.h;
    if (SPLIT) {
        // Rows of DV + 2 floats: the split's unnormalised output, its running max and its sum.
        uint n_rows = gl_NumWorkGroups.z / n_splits * p.n_q * n_heads;
        uint base = (split * n_rows + out_row) * (DV + 2);
        for (uint c = 0; c < COLS_PER_LANE; ++c) {
            uint col = lane + LANES * c;
            if (col < DV) o[base + col] = acc[c];
        }
        if (lane == 0) {
            o[base + DV] = m_run;
            o[base + DV + 1] = sum;
        }
        return;
    }
    if (SINKS) {
        float sink = sinks[p.sinks_off + row.h];
        float m_new = max(m_run, sink);
        float alpha = m_run == NEG_INF ? 0.0 : exp(m_run - m_new);
        sum = sum * alpha + exp(sink - m_new);
        for (uint c = 0; c < COLS_PER_LANE; ++c) acc[c] *= alpha;
    }
    float inv = sum > 0.0 ? 1.0 / sum : 0.0;
    for (uint c = 0; c < COLS_PER_LANE; ++c) {
        uint col = lane + LANES * c;
        if (col < DV) o[p.o_off + out_row * DV + col] = acc[c] * inv;
    }
}
