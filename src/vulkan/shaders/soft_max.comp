#version 450
// SOFT_MAX of F32 rows, any strides, possibly in place: softmax over each row of
// a * scale + slope * mask, the mask (M_TYPE, optional) tiled over dims 2 and 3 of a and the slope
// the ALiBi slope of the row's head (1 when max_bias is 0). One workgroup per row, which it reads
// twice: once for the running maximum and sum of exponentials of each invocation (merged over the
// workgroup), once for the result.
//
// With sinks (HAS_SINKS; F32, one per dim-2 index), the row's sum has one more logit, sinks[i2].
//
// Special rows as on the CPU: a row holding a NaN or +inf yields NaN everywhere, a row that is all
// -inf (fully masked) yields zeros.
#include "common.glsl"
#include "row_reduce.glsl"

layout(constant_id = 1) const bool HAS_MASK = false;
layout(constant_id = 2) const bool HAS_SINKS = false;

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer M { STORAGE(M_TYPE) m[]; };
layout(binding = 2) writeonly buffer D { float d[]; };
layout(binding = 3) readonly buffer S { float sinks[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    View va, vm, vd, vs;
    uint mask_ne2, mask_ne3;
    float scale, max_bias;
    uint n_head_log2;  // the largest power of two <= ne2
} p;

#define INF uintBitsToFloat(0x7f800000u)
#define NAN uintBitsToFloat(0x7fc00000u)

shared float partial_max[WG];

// exp2(-max_bias * k / n), the slope of head h, computed from its exact exponent.
float alibi_slope(uint h) {
    if (p.max_bias <= 0.0) return 1.0;
    uint n = p.n_head_log2;
    return h < n ? exp2(-p.max_bias * float(h + 1u) / float(n))
                 : exp2(-p.max_bias * float(2u * (h - n) + 1u) / float(2u * n));
}

// Merges the running maximum and sum (m2, s2) into (m, s).
void merge(inout float m, inout float s, float m2, float s2) {
    float mx = max(m, m2);
    if (mx == -INF) return;  // both empty: exp(-inf - -inf) would be NaN
    s = s * exp(m - mx) + s2 * exp(m2 - mx);
    m = mx;
}

// Merges every invocation's (m, s) into the workgroup's, returned to every invocation.
void workgroup_merge(inout float m, inout float s) {
    uint t = gl_LocalInvocationID.x;
    partial_max[t] = m;
    partial[t] = s;
    barrier();
    for (uint half_ = WG / 2; half_ > 0; half_ >>= 1) {
        if (t < half_) {
            merge(m, s, partial_max[t + half_], partial[t + half_]);
            partial_max[t] = m;
            partial[t] = s;
        }
        barrier();
    }
    m = partial_max[0];
    s = partial[0];
}

void main() {
    uint row = group_index();
    uint i1 = row % p.ne.y, i2 = row / p.ne.y % p.ne.z, i3 = row / (p.ne.y * p.ne.z);
    uint a_row = element_index(p.va, 0, i1, i2, i3);
    uint m_row = element_index(p.vm, 0, i1, i2 % p.mask_ne2, i3 % p.mask_ne3);
    uint d_row = element_index(p.vd, 0, i1, i2, i3);
    float slope = alibi_slope(i2);

    // Per invocation: the running maximum mx of its values and the sum of exp(value - mx).
    float mx = -INF, sum = 0.0;
    for (uint i0 = gl_LocalInvocationID.x; i0 < p.ne.x; i0 += WG) {
        float v = a[a_row + i0 * p.va.s0] * p.scale;
        if (HAS_MASK) v += slope * LOAD(M_TYPE, m[m_row + i0 * p.vm.s0]);
        if (isnan(v)) v = INF;  // poisons the row like +inf does
        if (v > mx) {
            sum = sum * exp(mx - v) + 1.0;
            mx = v;
        } else if (v > -INF) {
            sum += exp(v - mx);
        }
    }
    workgroup_merge(mx, sum);
    if (HAS_SINKS) {
        float sink = sinks[element_index(p.vs, i2, 0, 0, 0)];
        if (isnan(sink)) mx = INF;
        else merge(mx, sum, sink, 1.0);
    }

    float inv = 1.0 / sum;
    for (uint i0 = gl_LocalInvocationID.x; i0 < p.ne.x; i0 += WG) {
        float v = a[a_row + i0 * p.va.s0] * p.scale;
        if (HAS_MASK) v += slope * LOAD(M_TYPE, m[m_row + i0 * p.vm.s0]);
        d[d_row + i0 * p.vd.s0] = mx == INF ? NAN : mx == -INF ? 0.0 : exp(v - mx) * inv;
    }
}
