#version 450
// FLASH_ATTN_EXT over key splits, second pass: row r of the output is
// sum_s w_s acc_s / sum_s w_s l_s with w_s = exp(m_s - max_s m_s), from flash_attn.comp's rows
// (acc_s [dv], m_s, l_s) of split s at index s * n_rows + r; with SINKS the head's sink logit joins
// the maximum and the sum. One workgroup per output row.
#include "common.glsl"

#define LOCAL_SIZE 64  // also the most splits

layout(local_size_x = LOCAL_SIZE) in;

layout(binding = 0) readonly buffer Parts { float parts[]; };
layout(binding = 1) writeonly buffer O { float o[]; };
layout(binding = 2) readonly buffer Sinks { float sinks[]; };
layout(constant_id = 0) const bool SINKS = false;

layout(push_constant) uniform Push {
    uint o_off, n_rows, n_splits, dv;
    uint heads, sinks_off;  // rows are (batch, query, head), head fastest
} p;

shared float weights[LOCAL_SIZE];

#define NEG_INF uintBitsToFloat(0xff800000u)

uint part(uint s, uint row) { return (s * p.n_rows + row) * (p.dv + 2); }

void main() {
    uint row = group_index(), tid = gl_LocalInvocationID.x;
    if (row >= p.n_rows) return;
    float m = NEG_INF;
    for (uint s = 0; s < p.n_splits; ++s) m = max(m, parts[part(s, row) + p.dv]);
    float sink = SINKS ? sinks[p.sinks_off + row % p.heads] : NEG_INF;
    m = max(m, sink);
    float m_safe = m == NEG_INF ? 0.0 : m;
    if (tid < p.n_splits) {
        float ms = parts[part(tid, row) + p.dv];
        weights[tid] = ms == NEG_INF ? 0.0 : exp(ms - m_safe);
    }
    barrier();
    float sum = 0.0;
    for (uint s = 0; s < p.n_splits; ++s) sum += weights[s] * parts[part(s, row) + p.dv + 1];
    if (SINKS) sum += exp(sink - m_safe);
    float inv = sum > 0.0 ? 1.0 / sum : 0.0;
    for (uint c = tid; c < p.dv; c += LOCAL_SIZE) {
        float acc = 0.0;
        for (uint s = 0; s < p.n_splits; ++s) acc += weights[s] * parts[part(s, row) + c];
        o[p.o_off + row * p.dv + c] = acc * inv;
    }
}
