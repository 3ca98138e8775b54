#version 450
// ARGMAX of each row of an F32 matrix (any strides) into I32: the first maximum, as the loop
// "best = 0; for i: if (x[i] > x[best]) best = i" finds it. NaNs never win (a NaN first element
// makes the answer 0). One workgroup per row: a strided scan per invocation, then a tree reduction
// in shared memory that keeps the smaller index on ties.
#include "common.glsl"

layout(local_size_x = 128) in;
const uint NONE = 0xffffffffu;  // an invocation that has seen no number

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) writeonly buffer D { int d[]; };

layout(push_constant) uniform Push {
    View va, vd;
    uint ne0, rows;
} p;

shared float best_value[128];
shared uint best_index[128];

// Whether candidate (v, i) beats the current best (w, j).
bool beats(float v, uint i, float w, uint j) { return i != NONE && (j == NONE || v > w || (v == w && i < j)); }

void main() {
    uint row = group_index();
    if (row >= p.rows) return;
    uint lane = gl_LocalInvocationID.x;
    uint base = p.va.off + row * p.va.s1;

    float value = 0.0;
    uint index = NONE;
    for (uint i = lane; i < p.ne0; i += 128) {
        float v = a[base + i * p.va.s0];
        if (!isnan(v) && (index == NONE || v > value)) {
            value = v;
            index = i;
        }
    }
    best_value[lane] = value;
    best_index[lane] = index;
    barrier();
    for (uint half_ = 64; half_ > 0; half_ >>= 1) {
        if (lane < half_) {
            float v = best_value[lane + half_];
            uint i = best_index[lane + half_];
            if (beats(v, i, best_value[lane], best_index[lane])) {
                best_value[lane] = v;
                best_index[lane] = i;
            }
        }
        barrier();
    }
    if (lane == 0) d[p.vd.off + row * p.vd.s0] = isnan(a[base]) ? 0 : int(best_index[0]);
}
