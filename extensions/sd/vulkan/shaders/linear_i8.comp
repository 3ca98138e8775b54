#version 450
// sd.linear_i8.v1 with int8 activations (sd-ops.md 3.4): y[r, o] = float(sum_k W[o, k] * X[r, k]),
// then * s_x[r], * s_w[o], + b[o], each an F32 operation in that order (`precise`: never fused), so
// the result is bit-identical to the CPU kernel. The int32 sums are exact (|sum| <= 127^2 K < 2^31).
// Tiled GEMM: a workgroup of 16 x 16 invocations computes 64 outputs x 64 activation rows, each
// invocation a 4 x 4 register block; K advances 32 codes (8 words) at a time through shared memory.
// Codes are read as 32-bit words and unpacked with bitfieldExtract (no 8-bit storage or arithmetic
// needed); rows that do not start on a word (K % 4 != 0, or an unaligned tensor) are read byte by byte.
//
// GATED_RESIDUAL = 1 (the fusion sd.linear_i8 -> [SCALE] -> MUL(gate) -> ADD(residual)): the epilogue
// goes on with * scale, * gate, + residual, again each rounded once, in the order of the native
// SCALE, MUL and ADD nodes it replaces. Gate and residual are read through their strides, repeated
// over the output as ggml_can_repeat allows; the output may be the residual exactly (each element
// is read before the same invocation writes it).
//
// SWIGLU = 1 (the fusion sd.linear_i8 -> SWIGLU of its merged output [2F, M]): p.n is F, and a
// workgroup computes 32 outputs: its weight tile holds their 32 gate rows o and then their 32 up rows
// F + o, so each invocation's register block holds both halves of 2 x 4 outputs. Both get the
// epilogue above; then silu(x) * g (x the gate half, or with SWAPPED the up half) with the native
// GLU shader's formula, written as it writes it (not `precise`, like the native shader), so that the
// driver compiles the same expression: the result is the unfused chain's.
//
// SWIGLU = 1 and SPLIT = 1 (the fusion [sd.linear_i8 a, sd.linear_i8 b] -> SWIGLU(a, b), two linears
// over the same activations): the up rows o come from the second weights (binding 3) and get the second
// linear's weight scale and bias. Bindings hold only 8 buffers, so the optional F32 vectors (the shared
// input scales, each linear's weight scale and bias) sit in four slots (bindings 4 .. 7) that
// constants assign; the host refuses pairs with five.
//
// Every variant writes the rows of its output [n, ne1, ne2, ...] at Y's strides: row r at
// (r % ne1) n + (r / ne1 % ne2) y_nb2 + (r / (ne1 ne2)) y_nb3, so a fusion can place them in a slice of
// a row concatenation (dims 1 .. 3); a plain output has y_nb2 = n ne1, y_nb3 = n ne1 ne2.
#ifndef GATED_RESIDUAL
#define GATED_RESIDUAL 0
#endif
#ifndef SWIGLU
#define SWIGLU 0
#endif
#ifndef SPLIT
#define SPLIT 0
#endif
layout(local_size_x = 16, local_size_y = 16) in;

const uint NO_SLOT = 4u;
layout(constant_id = 0) const uint ALIGNED = 0;   // every row of W (and W_UP) and X starts on a word
#if SPLIT
// The slot (binding 4 + slot) of each optional F32 vector, NO_SLOT when absent.
layout(constant_id = 1) const uint XS_SLOT = NO_SLOT;       // one scale per activation row
layout(constant_id = 2) const uint WS_SLOT = NO_SLOT;       // the gate linear's weight scales
layout(constant_id = 3) const uint BIAS_SLOT = NO_SLOT;     // the gate linear's bias
layout(constant_id = 4) const uint UP_WS_SLOT = NO_SLOT;    // the up linear's weight scales
layout(constant_id = 5) const uint UP_BIAS_SLOT = NO_SLOT;  // the up linear's bias
const uint SWAPPED = 0u;                                     // (the native split GLU never swaps)
#else
layout(constant_id = 1) const uint HAS_XS = 0;    // binding 3 holds one scale per activation row
layout(constant_id = 2) const uint HAS_WS = 0;    // binding 4 holds one scale per output
layout(constant_id = 3) const uint HAS_BIAS = 0;  // binding 5 holds one bias per output
#if SWIGLU
layout(constant_id = 4) const uint SWAPPED = 0;   // the up half is activated, the gate half multiplies
#else
layout(constant_id = 4) const uint HAS_SCALE = 0; // GATED_RESIDUAL: a SCALE precedes the gate
#endif
#endif

layout(binding = 0) readonly buffer W { uint w[]; };
layout(binding = 1) readonly buffer X { uint x[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };
#if SPLIT
layout(binding = 3) readonly buffer WU { uint w_up[]; };
layout(binding = 4) readonly buffer V0 { float v0[]; };
layout(binding = 5) readonly buffer V1 { float v1[]; };
layout(binding = 6) readonly buffer V2 { float v2[]; };
layout(binding = 7) readonly buffer V3 { float v3[]; };
#else
layout(binding = 3) readonly buffer SX { float sx[]; };
layout(binding = 4) readonly buffer SW { float sw[]; };
layout(binding = 5) readonly buffer B { float bias[]; };
#endif
#if GATED_RESIDUAL
layout(binding = 6) readonly buffer G { float gate[]; };
layout(binding = 7) readonly buffer R { float residual[]; };

// A tensor repeated over the output: its first float, extents and strides in floats.
struct View {
    uint offset;
    uint ne[4];
    uint nb[4];
};
#endif

layout(push_constant) uniform Push {
    uint k, n, m;            // codes per row, outputs (weight rows), activation rows
    uint w_byte, x_byte;     // first byte of W and X in their bindings
    uint y_offset, sx_offset, sw_offset, b_offset;  // first float of each in its binding
    uint ne1, ne2;           // the output's extents 1 and 2 (row r is (r % ne1, r / ne1 % ne2, ...))
    uint y_nb2, y_nb3;       // Y's strides of dims 2 and 3 in floats
#if SPLIT
    uint w_up_byte, up_sw_offset, up_b_offset;  // the up linear's weights, weight scales and bias
#endif
#if GATED_RESIDUAL
    float scale;
    View g, res;
#endif
} p;

const uint TILE = 64u;     // outputs and activation rows per workgroup
const uint KW = 8u;        // words of K per step
const uint STRIDE = KW + 1u;  // shared row stride in words (padded against bank conflicts)
const uint HALF = TILE / 2u;  // SWIGLU: outputs per workgroup

shared uint w_tile[TILE * STRIDE];
shared uint x_tile[TILE * STRIDE];

const uint FROM_W = 0u, FROM_X = 1u, FROM_W_UP = 2u;  // the code buffers

uint word_of(uint source, uint i) {
#if SPLIT
    if (source == FROM_W_UP) return w_up[i];
#endif
    return source == FROM_W ? w[i] : x[i];
}

// The four codes at k0 .. k0 + 3 of the row starting at byte `start`; codes at or beyond K read as 0.
uint row_codes(uint source, uint start, uint k0) {
    if (ALIGNED != 0u) return k0 < p.k ? word_of(source, (start + k0) / 4u) : 0u;
    uint codes = 0u;
    for (uint i = 0u; i < 4u && k0 + i < p.k; ++i) {
        const uint b = start + k0 + i;
        codes |= bitfieldExtract(word_of(source, b / 4u), int(b % 4u) * 8, 8) << (8u * i);
    }
    return codes;
}

// The four codes at k0 of the weight row that tile row r of the workgroup holds (0 past the outputs).
uint weight_codes(uint r, uint k0) {
#if SWIGLU
    const uint o = gl_WorkGroupID.x * HALF + r % HALF;
    if (o >= p.n) return 0u;
#if SPLIT
    if (r >= HALF) return row_codes(FROM_W_UP, p.w_up_byte + o * p.k, k0);
    return row_codes(FROM_W, p.w_byte + o * p.k, k0);
#else
    return row_codes(FROM_W, p.w_byte + (o + r / HALF * p.n) * p.k, k0);
#endif
#else
    const uint o = gl_WorkGroupID.x * TILE + r;
    return o < p.n ? row_codes(FROM_W, p.w_byte + o * p.k, k0) : 0u;
#endif
}

// The four codes at k0 of the activation row that tile row r holds (0 past the rows).
uint activation_codes(uint r, uint k0) {
    const uint row = gl_WorkGroupID.y * TILE + r;
    return row < p.m ? row_codes(FROM_X, p.x_byte + row * p.k, k0) : 0u;
}

// The workgroup's rows of W and X, codes [k0, k0 + 4 KW), into the tiles.
void load_tiles(uint k0) {
    for (uint i = gl_LocalInvocationIndex; i < TILE * KW; i += 256u) {
        const uint r = i / KW, kw = i % KW;
        w_tile[r * STRIDE + kw] = weight_codes(r, k0 + 4u * kw);
        x_tile[r * STRIDE + kw] = activation_codes(r, k0 + 4u * kw);
    }
}

ivec4 unpack_codes(uint codes) {
    const int c = int(codes);
    return ivec4(bitfieldExtract(c, 0, 8), bitfieldExtract(c, 8, 8), bitfieldExtract(c, 16, 8),
                 bitfieldExtract(c, 24, 8));
}

#if SPLIT
// Element i of the vector in `slot` (a constant).
float slot_value(uint slot, uint i) {
    if (slot == 0u) return v0[i];
    if (slot == 1u) return v1[i];
    if (slot == 2u) return v2[i];
    return v3[i];
}

// The value of the gate (up false) or up linear for activation row r and output o from their exact
// sum: the spec's epilogue.
float half_value(int sum, uint r, uint o, bool up) {
    const uint ws_slot = up ? UP_WS_SLOT : WS_SLOT, b_slot = up ? UP_BIAS_SLOT : BIAS_SLOT;
    precise float v = float(sum);
    if (XS_SLOT != NO_SLOT) v = v * slot_value(XS_SLOT, p.sx_offset + r);
    if (ws_slot != NO_SLOT) v = v * slot_value(ws_slot, (up ? p.up_sw_offset : p.sw_offset) + o);
    if (b_slot != NO_SLOT) v = v + slot_value(b_slot, (up ? p.up_b_offset : p.b_offset) + o);
    return v;
}
#else
// The linear's value for activation row r and weight row o from their exact sum: the spec's epilogue.
float linear_value(int sum, uint r, uint o) {
    precise float v = float(sum);
    if (HAS_XS != 0u) v = v * sx[p.sx_offset + r];
    if (HAS_WS != 0u) v = v * sw[p.sw_offset + o];
    if (HAS_BIAS != 0u) v = v + bias[p.b_offset + o];
    return v;
}

// SWIGLU: the gate (up false) or up half's value for output o: weight rows o and n + o.
float half_value(int sum, uint r, uint o, bool up) { return linear_value(sum, r, up ? p.n + o : o); }
#endif

// Activation row r as output coordinates 1 .. 3.
uvec3 row_coords(uint r) { return uvec3(r % p.ne1, r / p.ne1 % p.ne2, r / (p.ne1 * p.ne2)); }

// The first float of activation row r's outputs in Y.
uint output_row(uint r) {
    const uvec3 c = row_coords(r);
    return p.y_offset + c.x * p.n + c.y * p.y_nb2 + c.z * p.y_nb3;
}

#if SWIGLU
// The native activations' formulas, as the native shaders write them.
float sigmoid_of(float x) { return 1.0 / (1.0 + exp(clamp(-x, -105.0, 89.0))); }
float silu_of(float x) { return isnan(x) ? x : x * sigmoid_of(x); }
#endif

#if GATED_RESIDUAL
// The float of v at output coordinates c, repeated.
uint at(View v, uvec4 c) {
    return v.offset + c.x % v.ne[0] * v.nb[0] + c.y % v.ne[1] * v.nb[1] + c.z % v.ne[2] * v.nb[2] +
           c.w % v.ne[3] * v.nb[3];
}
#endif

void main() {
    const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    const uint r0 = gl_WorkGroupID.y * TILE;
    int acc[4][4];
    for (uint i = 0u; i < 4u; ++i)
        for (uint j = 0u; j < 4u; ++j)
            acc[i][j] = 0;
    for (uint k0 = 0u; k0 < p.k; k0 += 4u * KW) {
        load_tiles(k0);
        barrier();
        for (uint kw = 0u; kw < KW; ++kw) {
            ivec4 wv[4], xv[4];
            for (uint i = 0u; i < 4u; ++i) {
                wv[i] = unpack_codes(w_tile[(tx + 16u * i) * STRIDE + kw]);
                xv[i] = unpack_codes(x_tile[(ty + 16u * i) * STRIDE + kw]);
            }
            for (uint i = 0u; i < 4u; ++i)
                for (uint j = 0u; j < 4u; ++j) {
                    const ivec4 prod = wv[i] * xv[j];
                    acc[i][j] += prod.x + prod.y + prod.z + prod.w;
                }
        }
        barrier();
    }
    for (uint j = 0u; j < 4u; ++j) {
        const uint r = r0 + ty + 16u * j;
        if (r >= p.m) continue;
        const uint row = output_row(r);
#if SWIGLU
        for (uint i = 0u; i < 2u; ++i) {  // acc[i]: gate rows o, acc[i + 2]: up rows F + o
            const uint o = gl_WorkGroupID.x * HALF + tx + 16u * i;
            if (o >= p.n) continue;
            const float gate_half = half_value(acc[i][j], r, o, false);
            const float up_half = half_value(acc[i + 2u][j], r, o, true);
            const float xv = SWAPPED != 0u ? up_half : gate_half;
            const float gv = SWAPPED != 0u ? gate_half : up_half;
            const float act = silu_of(xv);
            y[row + o] = act * gv;
        }
#else
        for (uint i = 0u; i < 4u; ++i) {
            const uint o = gl_WorkGroupID.x * TILE + tx + 16u * i;
            if (o >= p.n) continue;
            precise float v = linear_value(acc[i][j], r, o);
#if GATED_RESIDUAL
            if (HAS_SCALE != 0u) v = v * p.scale;
            const uvec4 c = uvec4(o, row_coords(r));
            v = v * gate[at(p.g, c)];
            v = v + residual[at(p.res, c)];
#endif
            y[row + o] = v;
        }
#endif
    }
}
