#version 450
// LIGHTNING_INDEXER: r[j, t, 0, b] = sum_h w[h, t, 0, b] * relu(q[:, h, t, b] . k[:, 0, j, b]) +
// mask[j, t, 0, b mod B'], q and w F32, k K_TYPE (F32/F16), mask F16, any strides, into the
// contiguous F32 result. One invocation per result element; the dots are float sums, as the CPU's.
#include "common.glsl"

layout(local_size_x = 64) in;

layout(binding = 0) readonly buffer Q { float q[]; };
layout(binding = 1) readonly buffer K { STORAGE(K_TYPE) k[]; };
layout(binding = 2) readonly buffer W { float w[]; };
layout(binding = 3) readonly buffer M { uint16_t mask[]; };
layout(binding = 4) writeonly buffer D { float d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;  // the result: n_kv, n_batch, 1, B
    View vq, vk, vw, vm;
    uint d_off, n_embd, n_head, mask_b;
} p;

void main() {
    uint id = global_index(64);
    if (id >= p.ne.x * p.ne.y * p.ne.w) return;
    uint j = id % p.ne.x, t = id / p.ne.x % p.ne.y, bb = id / (p.ne.x * p.ne.y);
    uint k_at = element_index(p.vk, 0u, 0u, j, bb);
    float r = load_f16(mask[element_index(p.vm, j, t, 0u, bb % p.mask_b)]);
    for (uint h = 0u; h < p.n_head; ++h) {
        uint q_at = element_index(p.vq, 0u, h, t, bb);
        float dot_ = 0.0;
        for (uint e = 0u; e < p.n_embd; ++e)
            dot_ += q[q_at + e * p.vq.s0] * LOAD(K_TYPE, k[k_at + e * p.vk.s0]);
        r += w[element_index(p.vw, h, t, 0u, bb)] * max(dot_, 0.0);
    }
    d[p.d_off + id] = r;
}
