// Shared by rope_apply.comp and rms_norm_mul_rope.comp: one workgroup of WG invocations per output
// row of sd.rope_apply.v1 (sd-ops.md 1.3). The row's input channels come from channel(c), which the
// including shader defines; pe is read through its strides, the output y [D, L, H*B] is contiguous.
//
// Every rotated value is p*m0 + q*m1 (split-half: p*c - q*s, p*s + q*c) with each product rounded
// to F32 and one F32 add or subtract: the results are `precise`, so the driver cannot contract
// them into FMAs, and they equal the CPU kernel's bit for bit.
layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint INTERLEAVED = 1;
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer PE { float pe[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

// Strides in floats; offsets are the buffer_info shader offsets in floats. w_* and eps are read by
// the fused shader only.
layout(push_constant) uniform Push {
    uint dim, heads, tokens, rows;  // rows = L * H * B
    uint pairs;                     // P: channels [0, 2P) are rotated, the rest copied
    uint x_off, x_s0, x_s1, x_s2, x_s3;
    uint pe_off, pe_s0, pe_s1, pe_s2, pe_s3;
    uint y_off;
    uint w_off, w_s0;
    float eps;
} p;

float channel(uint c);  // the row's input channel c (after the fused shader's normalisation)

uint row_index() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// Input row (h, t, b) of output row index row = t + L * (h + H * b): the first element's index in x.
uint x_row_base(uint row) {
    uint t = row % p.tokens, hb = row / p.tokens;
    uint h = hb % p.heads, b = hb / p.heads;
    return p.x_off + h * p.x_s1 + t * p.x_s2 + b * p.x_s3;
}

// pe[col, r, j, t] = M[r][col] of pair j of token t.
float matrix(uint t, uint j, uint r, uint col) {
    return pe[p.pe_off + col * p.pe_s0 + r * p.pe_s1 + j * p.pe_s2 + t * p.pe_s3];
}

// Writes output row `row`, pair by pair (pair i holds channels 2i and 2i + 1 of the copied tail).
void rotate_row(uint row) {
    uint t = row % p.tokens;
    uint out_base = p.y_off + row * p.dim;
    for (uint i = gl_LocalInvocationID.x; i < p.dim / 2; i += WG) {
        if (i >= p.pairs) {
            y[out_base + 2 * i] = channel(2 * i);
            y[out_base + 2 * i + 1] = channel(2 * i + 1);
        } else if (INTERLEAVED != 0) {
            float a = channel(2 * i), b = channel(2 * i + 1);
            precise float r0 = a * matrix(t, i, 0, 0) + b * matrix(t, i, 0, 1);
            precise float r1 = a * matrix(t, i, 1, 0) + b * matrix(t, i, 1, 1);
            y[out_base + 2 * i] = r0;
            y[out_base + 2 * i + 1] = r1;
        } else {
            float a = channel(i), b = channel(i + p.pairs);
            float c = matrix(t, i, 0, 0), s = matrix(t, i, 1, 0);
            precise float r0 = a * c - b * s;
            precise float r1 = a * s + b * c;
            y[out_base + i] = r0;
            y[out_base + i + p.pairs] = r1;
        }
    }
}
