#version 450
// ROPE and ROPE_BACK (NORMAL, NEOX and the multi-axis MROPE, IMROPE, VISION; YaRN, optional frequency
// factors, a rotated range from element offs) of an F32/F16 [D, H, T, B] tensor of any strides at
// I32 positions [T] ([4T], one run per axis, in the multi modes). A workgroup takes one token of one
// batch and a block of its heads: it first fills a table of mscale * (cos, sin) per rotated pair in
// shared memory, then its invocations rotate the block's rows, lanes (a power of two) invocations
// per row. ROPE_BACK rotates the other way (sin_sign -1).
#include "common.glsl"

#define LOCAL_SIZE 256
#define MAX_PAIRS 512

layout(local_size_x = LOCAL_SIZE) in;
layout(constant_id = 0) const bool HALVES = false;  // pairs (i, i + pairs): NEOX and the multi modes
layout(constant_id = 1) const bool HAS_FACTORS = false;
layout(constant_id = 2) const uint MULTI = 0;  // 0 none, 1 MROPE, 2 IMROPE, 3 VISION

layout(binding = 0) readonly buffer A { STORAGE(T) a[]; };
layout(binding = 1) readonly buffer Pos { int pos[]; };
layout(binding = 2) readonly buffer Factors { float factors[]; };
layout(binding = 3) writeonly buffer D { STORAGE(T) d[]; };

layout(push_constant) uniform Push {
    uvec4 ne;
    View va, vd;
    uint pos_off, pos_s0, factors_off, factors_s0;
    uint pairs;            // rotated pairs: n_dims / 2 (VISION: n_dims)
    uint offs;             // the first rotated element
    uint lane_shift;       // log2 of the invocations per row
    uint heads_per_group;  // rows (heads) of one workgroup
    float log2_theta_scale, freq_scale, ext_factor;
    float ramp_low, ramp_inv_range;  // YaRN ramp over the pair index: (i - low) * inv_range
    float mscale, sin_sign;
    uint sections01, sections23;  // pairs per position axis in each run of the multi modes, 16 bits each
} p;

uint section(uint axis) {
    uint word = axis < 2u ? p.sections01 : p.sections23;
    return bitfieldExtract(word, int((axis & 1u) * 16u), 16);
}

shared float cos_table[MAX_PAIRS];
shared float sin_table[MAX_PAIRS];

// (sin x, cos x) for |x| <= pi/4 (Taylor polynomials, error below 2e-9).
vec2 sincos_reduced(float x) {
    float x2 = x * x;
    float s = x + x * x2 * (-1.0 / 6.0 + x2 * (1.0 / 120.0 + x2 * (-1.0 / 5040.0 + x2 * (1.0 / 362880.0))));
    float c = 1.0 + x2 * (-0.5 + x2 * (1.0 / 24.0 + x2 * (-1.0 / 720.0 + x2 * (1.0 / 40320.0 + x2 * (-1.0 / 3628800.0)))));
    return vec2(s, c);
}

// (sin, cos) of hi + lo: reduced by multiples of pi/2 with a three-part constant (the first part
// has 8 significant bits, so k * part exactly for |k| < 2^16), then the quadrant selects.
vec2 sincos_of(float hi, float lo) {
    const float PI_2_A = 1.5703125;
    const float PI_2_B = 4.837512969970703125e-4;
    const float PI_2_C = 7.549789954891882e-8;
    float k = round(hi * 0.6366197723675814);
    float r = ((hi - k * PI_2_A) - k * PI_2_B) - k * PI_2_C + lo;
    vec2 sc = sincos_reduced(r);
    int q = int(k) & 3;
    if ((q & 1) != 0) sc = vec2(sc.y, -sc.x);  // (sin, cos)(r + pi/2) = (cos r, -sin r)
    return q >= 2 ? -sc : sc;
}

// The position axis of pair i and the exponent of its base frequency: the multi modes split each run
// of section(0) + .. + section(3) pairs between the axes t, h, w, e (IMROPE: t, h, w take turns).
uvec2 axis_of(uint i) {
    if (MULTI == 0u) return uvec2(0u, i);
    uint run = section(0u) + section(1u) + section(2u) + section(3u);
    uint j = i % run;
    if (MULTI == 2u) {
        uint lane = j % 3u;
        return uvec2(j < 3u * section(lane) ? lane : 3u, i);
    }
    uint axis = 0u, first = 0u;  // first pair of the axis' section in the run
    while (axis < 3u && j >= first + section(axis)) first += section(axis++);
    return uvec2(axis, MULTI == 3u ? j - first : i);
}

// The rotation coefficient of pair i with exponent e (theta_i = position * coef), as the CPU kernel
// defines it.
float coefficient(uint i, uint e) {
    float extrap = exp2(float(e) * p.log2_theta_scale);
    if (HAS_FACTORS) extrap /= factors[p.factors_off + i * p.factors_s0];
    float mix_ = 0.0;  // interpolated (freq_scale) at 0, extrapolated at 1
    if (p.ext_factor != 0.0) mix_ = p.ext_factor * (1.0 - clamp((float(i) - p.ramp_low) * p.ramp_inv_range, 0.0, 1.0));
    return extrap * (p.freq_scale * (1.0 - mix_) + mix_);
}

void fill_table(uint t) {
    for (uint i = gl_LocalInvocationID.x; i < p.pairs; i += LOCAL_SIZE) {
        uvec2 ae = axis_of(i);
        float position = float(pos[p.pos_off + (t + ae.x * p.ne.z) * p.pos_s0]);
        float coef = coefficient(i, ae.y);
        float hi = position * coef;
        float lo = fma(position, coef, -hi);  // the product's rounding error where fma is fused, else 0
        vec2 sc = sincos_of(hi, lo) * p.mscale;
        sin_table[i] = sc.x * p.sin_sign;
        cos_table[i] = sc.y;
    }
}

void main() {
    uint head_blocks = (p.ne.y + p.heads_per_group - 1) / p.heads_per_group;
    uint g = group_index();
    uint block = g % head_blocks;
    uint t = (g / head_blocks) % p.ne.z;
    uint b = g / (head_blocks * p.ne.z);
    if (b >= p.ne.w) return;
    fill_table(t);
    barrier();

    uint items = p.ne.x - p.pairs;  // pairs, then the copied channels
    uint lanes = 1u << p.lane_shift;
    uint head_end = min(p.ne.y, (block + 1) * p.heads_per_group);
    for (uint h = block * p.heads_per_group + (gl_LocalInvocationID.x >> p.lane_shift); h < head_end;
         h += LOCAL_SIZE >> p.lane_shift) {
        uint src = element_index(p.va, 0, h, t, b), dst = element_index(p.vd, 0, h, t, b);
        for (uint w = gl_LocalInvocationID.x & (lanes - 1); w < items; w += lanes) {
            if (w >= p.pairs) {
                uint k = w - p.pairs;
                uint i = k < p.offs ? k : k + 2u * p.pairs;
                d[dst + i * p.vd.s0] = a[src + i * p.va.s0];
                continue;
            }
            uint i0 = p.offs + (HALVES ? w : 2 * w);
            uint i1 = p.offs + (HALVES ? w + p.pairs : 2 * w + 1);
            float x0 = LOAD(T, a[src + i0 * p.va.s0]), x1 = LOAD(T, a[src + i1 * p.va.s0]);
            float c = cos_table[w], s = sin_table[w];
            d[dst + i0 * p.vd.s0] = STORE(T, x0 * c - x1 * s);
            d[dst + i1 * p.vd.s0] = STORE(T, x0 * s + x1 * c);
        }
    }
}
