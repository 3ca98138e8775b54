// Block-quantized tensors in uint arrays (no 8-bit storage): a block is addressed by the byte
// offset of its first byte within the binding, whatever its size (MXFP4's 17 bytes, Q5_0's 22), and
// its fields are read and written byte by byte out of the 32-bit words. The arithmetic repeats the
// CPU's (src/core/types.cpp, src/core/quant/*.cpp) operation for operation, products and sums
// marked precise where the CPU does not contract them into fused multiply-adds, so results agree bit
// for bit. Define QUANT_IN (a uint array to dequantize from) and/or QUANT_OUT (a uint array to
// quantize into) before including.
//
// The i-quant formats (-DQUANT_GRIDS) read their grids from a table the host binds at
// QUANT_GRID_BINDING (defined by the including shader): kernels/table.cpp's IqGrids.
//
// Each format T has QK_T, the elements of a block, and dequant_T(b, j), element j of the block at
// byte b; a quantizable one has quantize_T(first, b), which reads its elements through
// quant_source(first, j) (defined by the including shader) and writes the block at byte b.

const uint QK_q4_0 = 32u, QK_q4_1 = 32u, QK_q5_0 = 32u, QK_q5_1 = 32u, QK_q8_0 = 32u, QK_q8_1 = 32u;
const uint QK_q2_K = 256u, QK_q3_K = 256u, QK_q4_K = 256u, QK_q5_K = 256u, QK_q6_K = 256u, QK_q8_K = 256u;
const uint QK_iq4_nl = 32u, QK_iq4_xs = 256u, QK_mxfp4 = 32u, QK_nvfp4 = 64u;
const uint QK_tq1_0 = 256u, QK_tq2_0 = 256u, QK_q1_0 = 128u, QK_q2_0 = 64u;
const uint QK_iq2_xxs = 256u, QK_iq2_xs = 256u, QK_iq2_s = 256u, QK_iq3_xxs = 256u, QK_iq3_s = 256u;
const uint QK_iq1_s = 256u, QK_iq1_m = 256u;

// IQ4_NL's table (ggml's kvalues_iq4nl), shared by IQ4_XS.
const int kIq4Values[16] = int[16](-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
// The FP4 E2M1 values doubled (ggml's kvalues_mxfp4), for scales halved to match.
const int kFp4Values[16] = int[16](0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);

// MXFP4's E8M0 scale halved: 2^(e - 128) from its bits (e 0 and 1 are the subnormals).
float e8m0_half(uint e) { return uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23); }

// NVFP4's UE4M3 scale halved (bit 7 ignored; 0x7f reads as 0).
float ue4m3_half(uint u) {
    if (u == 0x7fu) return 0.0;
    uint exponent = (u >> 3) & 15u, mantissa = u & 7u;
    if (exponent == 0u) return float(mantissa) * (1.0 / 1024.0);
    return uintBitsToFloat(((exponent + 119u) << 23) | (mantissa << 20));
}

#ifdef QUANT_IN
uint q_byte(uint b) { return bitfieldExtract(QUANT_IN[b >> 2], int((b & 3u) * 8u), 8); }

// n (1 to 4) bytes from byte b, little-endian; the next word is read only when they reach into it.
uint q_bytes(uint b, uint n) {
    uint shift = (b & 3u) * 8u;
    uint v = QUANT_IN[b >> 2] >> shift;
    if (shift + n * 8u > 32u) v |= QUANT_IN[(b >> 2) + 1u] << (32u - shift);
    return n == 4u ? v : v & ((1u << (n * 8u)) - 1u);
}

int q_i8(uint b) { return bitfieldExtract(int(q_byte(b)), 0, 8); }
float q_f16(uint b) { return unpackHalf2x16(q_bytes(b, 2u)).x; }
// Nibble j & (half - 1) of the group of half bytes at byte b: low for j < half, high after.
uint q_nibble(uint b, uint j, uint half_) { return (q_byte(b + (j & (half_ - 1u))) >> (j < half_ ? 0u : 4u)) & 15u; }
// The 2-bit field of value v in 32-byte groups of 128 values: byte v % 32, bits 2 (v % 128 / 32).
uint q_crumb(uint b, uint v) { return (q_byte(b + v / 128u * 32u + (v & 31u)) >> (2u * ((v & 127u) / 32u))) & 3u; }

// ---- 32-value legacy blocks: F16 d (and F16 m), fifth bits, nibbles (value j low, j + 16 high)

float dequant_q4_0(uint b, uint j) { return float(int(q_nibble(b + 2u, j, 16u)) - 8) * q_f16(b); }

float dequant_q4_1(uint b, uint j) {
    precise float y = float(q_nibble(b + 4u, j, 16u)) * q_f16(b) + q_f16(b + 2u);
    return y;
}

float dequant_q5_0(uint b, uint j) {
    uint q = q_nibble(b + 6u, j, 16u) | (((q_byte(b + 2u + j / 8u) >> (j & 7u)) & 1u) << 4);
    return float(int(q) - 16) * q_f16(b);
}

float dequant_q5_1(uint b, uint j) {
    uint q = q_nibble(b + 8u, j, 16u) | (((q_byte(b + 4u + j / 8u) >> (j & 7u)) & 1u) << 4);
    precise float y = float(q) * q_f16(b) + q_f16(b + 2u);
    return y;
}

float dequant_q8_0(uint b, uint j) { return float(q_i8(b + 2u + j)) * q_f16(b); }
float dequant_q8_1(uint b, uint j) { return float(q_i8(b + 4u + j)) * q_f16(b); }

// ---- K-quants: super-blocks of 256 (k_quants.cpp's dequantize_block)

float dequant_q2_K(uint b, uint v) {
    uint sm = q_byte(b + v / 16u);
    precise float step = q_f16(b + 80u) * float(sm & 15u);
    precise float offset = q_f16(b + 82u) * float(sm >> 4);
    precise float y = step * float(q_crumb(b + 16u, v)) - offset;
    return y;
}

float dequant_q3_K(uint b, uint v) {
    uint s = v / 16u;
    uint low = (q_byte(b + 96u + (s & 7u)) >> (s < 8u ? 0u : 4u)) & 15u;
    uint high = (q_byte(b + 104u + (s & 3u)) >> (2u * (s / 4u))) & 3u;
    int q = int(q_crumb(b + 32u, v)) - (((q_byte(b + (v & 31u)) >> (v / 32u)) & 1u) != 0u ? 0 : 4);
    precise float y = q_f16(b + 108u) * float(int(low | (high << 4)) - 32) * float(q);
    return y;
}

// Q4_K/Q5_K: the 6-bit scale and minimum of sub-block s, from the 12 bytes at byte b.
uvec2 scale_min_6bit(uint b, uint s) {
    if (s < 4u) return uvec2(q_byte(b + s) & 63u, q_byte(b + s + 4u) & 63u);
    uint packed = q_byte(b + s + 4u);
    return uvec2((packed & 15u) | ((q_byte(b + s - 4u) >> 6) << 4), (packed >> 4) | ((q_byte(b + s) >> 6) << 4));
}

float scale_min_value(uint b, uint v, uint q) {
    uvec2 sm = scale_min_6bit(b + 4u, v / 32u);
    precise float y = q_f16(b) * float(sm.x) * float(q) - q_f16(b + 2u) * float(sm.y);
    return y;
}

uint k_nibble(uint b, uint v) { return (q_byte(b + v / 64u * 32u + (v & 31u)) >> ((v & 63u) < 32u ? 0u : 4u)) & 15u; }

float dequant_q4_K(uint b, uint v) { return scale_min_value(b, v, k_nibble(b + 16u, v)); }

float dequant_q5_K(uint b, uint v) {
    return scale_min_value(b, v, k_nibble(b + 48u, v) | (((q_byte(b + 16u + (v & 31u)) >> (v / 32u)) & 1u) << 4));
}

float dequant_q6_K(uint b, uint v) {
    uint half_ = v / 128u, group = (v & 127u) / 32u, lane = v & 31u;
    uint low = (q_byte(b + half_ * 64u + (group & 1u) * 32u + lane) >> (group < 2u ? 0u : 4u)) & 15u;
    uint high = (q_byte(b + 128u + half_ * 32u + lane) >> (2u * group)) & 3u;
    precise float y = q_f16(b + 208u) * float(q_i8(b + 192u + v / 16u)) * float(int(low | (high << 4)) - 32);
    return y;
}

float dequant_q8_K(uint b, uint v) { return uintBitsToFloat(q_bytes(b, 4u)) * float(q_i8(b + 4u + v)); }

// ---- Table formats (nonlinear.cpp)

float dequant_iq4_nl(uint b, uint j) { return q_f16(b) * float(kIq4Values[q_nibble(b + 2u, j, 16u)]); }

float dequant_iq4_xs(uint b, uint v) {
    uint s = v / 32u;
    uint ls = ((q_byte(b + 4u + s / 2u) >> (4u * (s & 1u))) & 15u) | (((q_bytes(b + 2u, 2u) >> (2u * s)) & 3u) << 4);
    precise float dl = q_f16(b) * float(int(ls) - 32);
    return dl * float(kIq4Values[q_nibble(b + 8u + s * 16u, v & 31u, 16u)]);
}

float dequant_mxfp4(uint b, uint j) { return e8m0_half(q_byte(b)) * float(kFp4Values[q_nibble(b + 1u, j, 16u)]); }

float dequant_nvfp4(uint b, uint v) {
    uint s = v / 16u;
    return ue4m3_half(q_byte(b + s)) * float(kFp4Values[q_nibble(b + 4u + s * 8u, v & 15u, 8u)]);
}

// ---- Ternary and low-bit formats (ternary.cpp)

// TQ1_0: five trits a byte in groups (bytes 0-31: values 0-159, 32-47: 160-239, 48-51: 240-255,
// four trits), value first + m + bytes * n being trit n of byte m; trit n of byte q is
// (uint8(q * 3^n) * 3) >> 8.
float dequant_tq1_0(uint b, uint v) {
    uint byte_, n;
    if (v < 160u) {
        byte_ = v & 31u;
        n = v / 32u;
    } else if (v < 240u) {
        byte_ = 32u + ((v - 160u) & 15u);
        n = (v - 160u) / 16u;
    } else {
        byte_ = 48u + ((v - 240u) & 3u);
        n = (v - 240u) / 4u;
    }
    const uint pow3[5] = uint[5](1u, 3u, 9u, 27u, 81u);
    uint digit = (((q_byte(b + byte_) * pow3[n]) & 255u) * 3u) >> 8;
    return float(int(digit) - 1) * q_f16(b + 52u);
}

float dequant_tq2_0(uint b, uint v) { return float(int(q_crumb(b, v)) - 1) * q_f16(b + 64u); }

float dequant_q1_0(uint b, uint j) {
    float d = q_f16(b);
    return ((q_byte(b + 2u + j / 8u) >> (j & 7u)) & 1u) != 0u ? d : -d;
}

float dequant_q2_0(uint b, uint j) {
    return float(int((q_byte(b + 2u + j / 4u) >> (2u * (j & 3u))) & 3u) - 1) * q_f16(b);
}

#ifdef QUANT_GRIDS
// ---- I-quants: grid points of 8 (IQ3: 4) values (i_quants.cpp's dequantize_*)

layout(binding = QUANT_GRID_BINDING) readonly buffer Grids { uint grids[]; };
// Byte offsets of the tables: the even-parity signs of 7 bits, the grids (points of 8 or 4 bytes).
const uint GRID_SIGNS = 0u, GRID_IQ2XXS = 128u, GRID_IQ2XS = 2176u, GRID_IQ2S = 6272u, GRID_IQ3XXS = 14464u,
           GRID_IQ3S = 15488u, GRID_IQ1S = 17536u;

uint grid_byte(uint b) { return bitfieldExtract(grids[b >> 2], int((b & 3u) * 8u), 8); }
uint grid_signs(uint seven) { return grid_byte(GRID_SIGNS + (seven & 127u)); }

// Value i of a signed group: db * magnitude * (-1 where sign bit i is set).
float signed_value(float db, uint magnitude, uint signs, uint i) {
    return db * float(magnitude) * (((signs >> i) & 1u) != 0u ? -1.0 : 1.0);
}

// d * (0.5 + s) * factor: a 4-bit IQ2 / IQ3_XXS scale.
float half_step_scale(float d, uint s, float factor) { return d * (0.5 + float(s)) * factor; }

uint nibble_at(uint b, uint k) { return (q_byte(b + k / 2u) >> (4u * (k & 1u))) & 15u; }

float dequant_iq2_xxs(uint b, uint v) {
    uint ib = v / 32u, k = (v & 31u) / 8u, i = v & 7u;
    uint aux = q_bytes(b + 6u + 8u * ib, 4u);
    uint point = q_byte(b + 2u + 8u * ib + k);
    return signed_value(half_step_scale(q_f16(b), aux >> 28, 0.25), grid_byte(GRID_IQ2XXS + point * 8u + i),
                        grid_signs(aux >> (7u * k)), i);
}

float dequant_iq2_xs(uint b, uint v) {
    uint k = v / 8u, i = v & 7u;
    uint q = q_bytes(b + 2u + 2u * k, 2u);
    return signed_value(half_step_scale(q_f16(b), nibble_at(b + 66u, k / 2u), 0.25),
                        grid_byte(GRID_IQ2XS + (q & 511u) * 8u + i), grid_signs(q >> 9), i);
}

float dequant_iq2_s(uint b, uint v) {
    uint k = v / 8u, i = v & 7u;
    uint point = q_byte(b + 2u + k) | (((q_byte(b + 66u + k / 4u) >> (2u * (k & 3u))) & 3u) << 8);
    return signed_value(half_step_scale(q_f16(b), nibble_at(b + 74u, k / 2u), 0.25),
                        grid_byte(GRID_IQ2S + point * 8u + i), q_byte(b + 34u + k), i);
}

float dequant_iq3_xxs(uint b, uint v) {
    uint ib = v / 32u, k = (v & 31u) / 8u, h = (v & 7u) / 4u, i = v & 3u;
    uint aux = q_bytes(b + 66u + 4u * ib, 4u);
    uint point = q_byte(b + 2u + 8u * ib + 2u * k + h);
    return signed_value(half_step_scale(q_f16(b), aux >> 28, 0.5), grid_byte(GRID_IQ3XXS + point * 4u + i),
                        grid_signs(aux >> (7u * k)) >> (4u * h), i);
}

float dequant_iq3_s(uint b, uint v) {
    uint k = v / 4u, i = v & 3u;
    float db = q_f16(b) * float(1u + 2u * nibble_at(b + 106u, k / 8u));
    uint point = q_byte(b + 2u + k) | (((q_byte(b + 66u + k / 8u) >> (k & 7u)) & 1u) << 8);
    return signed_value(db, grid_byte(GRID_IQ3S + point * 4u + i), q_byte(b + 74u + k / 2u) >> (4u * (k & 1u)), i);
}

// Value i of an IQ1 group: dl * (grid value + the shift of +-1/8).
float shifted_value(float dl, uint point, uint i, bool negative) {
    int g = bitfieldExtract(int(grids[(GRID_IQ1S + point * 8u + i) >> 2]), int((i & 3u) * 8u), 8);
    return dl * (float(g) + (negative ? -0.125 : 0.125));
}

float dequant_iq1_s(uint b, uint v) {
    uint ib = v / 32u, k = (v & 31u) / 8u;
    uint qh = q_bytes(b + 34u + 2u * ib, 2u);
    float dl = q_f16(b) * float(2u * ((qh >> 12) & 7u) + 1u);
    return shifted_value(dl, q_byte(b + 2u + 4u * ib + k) | (((qh >> (3u * k)) & 7u) << 8), v & 7u,
                         (qh & 0x8000u) != 0u);
}

float dequant_iq1_m(uint b, uint v) {
    uint d_bits = 0u;
    for (uint w = 0u; w < 4u; ++w) d_bits |= (q_bytes(b + 48u + 2u * w, 2u) >> 12) << (4u * w);
    uint k = v / 8u, j = k / 2u;
    float dl = unpackHalf2x16(d_bits).x * float(2u * ((q_bytes(b + 48u + 2u * (j / 4u), 2u) >> (3u * (j & 3u))) & 7u) + 1u);
    uint h = q_byte(b + 32u + k / 2u) >> (4u * (k & 1u));
    return shifted_value(dl, q_byte(b + k) | ((h & 7u) << 8), v & 7u, (h & 8u) != 0u);
}
#endif
#endif

#ifdef QUANT_OUT
// A block is assembled in qblock (byte i of the block in byte i % 4 of word i / 4) and stored by
// store_block: words wholly inside the block are written, words it shares with a neighbour (whose
// block another invocation may be writing) have only its bytes replaced, atomically.
const uint QBLOCK_WORDS = 18u;  // the largest quantizable block (TQ2_0: 66 bytes)
uint qblock[QBLOCK_WORDS];

void clear_block() {
    for (uint w = 0u; w < QBLOCK_WORDS; ++w) qblock[w] = 0u;
}

// ORs the low n bytes of v into the block at byte i.
void put_bytes(uint i, uint v, uint n) {
    for (uint k = 0u; k < n; ++k, ++i) qblock[i >> 2] |= ((v >> (8u * k)) & 255u) << ((i & 3u) * 8u);
}

void put_f16(uint i, float v) { put_bytes(i, f32_to_f16_bits(v), 2u); }

void store_block(uint b, uint bytes) {
    for (uint w = b >> 2; w <= (b + bytes - 1u) >> 2; ++w) {
        uint value = 0u, mask = 0u;
        for (uint k = 0u; k < 4u; ++k) {
            uint at = w * 4u + k;
            if (at < b || at >= b + bytes) continue;
            uint i = at - b;
            value |= ((qblock[i >> 2] >> ((i & 3u) * 8u)) & 255u) << (8u * k);
            mask |= 255u << (8u * k);
        }
        if (mask == 0xffffffffu) {
            QUANT_OUT[w] = value;
        } else {
            atomicAnd(QUANT_OUT[w], ~mask);
            atomicOr(QUANT_OUT[w], value);
        }
    }
}

// a - q * b, exactly (Dekker's product: Veltkamp halves of q and b; precise forbids contraction).
// Assumes a - q * b is small against a, as it is for q near a / b.
float division_residual(float a, float q, float b) {
    precise float p = q * b;
    precise float cq = 4097.0 * q, cb = 4097.0 * b;
    precise float qh = cq - (cq - q), bh = cb - (cb - b);
    precise float ql = q - qh, bl = b - bh;
    precise float e = ((qh * bh - p) + qh * bl + ql * bh) + ql * bl;
    precise float r = (a - p) - e;
    return r;
}

// a / b rounded to nearest, as the CPU divides: Vulkan lets a division be 2.5 ulp off (lavapipe's
// is), and one ulp moves a quant across a rounding boundary. Steps to a neighbour while that leaves
// a smaller residual.
float divide_exactly(float a, float b) {
    float q = a / b;
    if (q == 0.0 || !(abs(q) < 1e30)) return q;  // zero, huge (the split would overflow), inf or NaN
    float r = division_residual(a, q, b);
    for (int k = 0; k < 2; ++k) {
        bool up = (r > 0.0) == (b > 0.0);  // the exact quotient lies above q
        float next = uintBitsToFloat(floatBitsToUint(q) + (up == (q > 0.0) ? 1u : 0xffffffffu));
        float rn = division_residual(a, next, b);
        if (r == 0.0 || abs(rn) >= abs(r)) break;
        q = next;
        r = rn;
    }
    return q;
}

// 1 / d, or 0 for a zero scale.
float inverse_scale(float d) { return d != 0.0 ? divide_exactly(1.0, d) : 0.0; }

// roundf(clamp(x * id, -127, 127)) as a byte; NaN gives 0.
uint q8_byte(float x, float id) {
    precise float v = x * id;
    v = isnan(v) ? 0.0 : min(max(v, -127.0), 127.0);
    float a = abs(v);
    float t = trunc(a);  // a - t is exact for |a| <= 127: half away from zero without round()'s latitude
    int q = int(t) + (a - t >= 0.5 ? 1 : 0);
    return uint(v < 0.0 ? -q : q) & 0xffu;
}

void quantize_q8_0(uint first, uint b) {
    float amax = 0.0;
    for (uint j = 0u; j < 32u; ++j) {
        float x = abs(quant_source(first, j));
        if (x > amax) amax = x;  // NaN never compares greater
    }
    float d = divide_exactly(amax, 127.0);
    float id = inverse_scale(d);
    clear_block();
    put_f16(0u, d);
    for (uint j = 0u; j < 32u; ++j) put_bytes(2u + j, q8_byte(quant_source(first, j), id), 1u);
    store_block(b, 34u);
}

// min(15, trunc(x * id + 8.5)) with both roundings; NaN gives 8.
uint q4_nibble(float x, float id) {
    precise float v = x * id + 8.5;
    return isnan(v) ? 8u : uint(min(max(v, 0.0), 15.0));
}

void quantize_q4_0(uint first, uint b) {
    float amax = 0.0, m = 0.0;  // the first element of largest magnitude
    for (uint j = 0u; j < 32u; ++j) {
        float x = quant_source(first, j);
        if (abs(x) > amax) {
            amax = abs(x);
            m = x;
        }
    }
    float d = m * -0.125;  // exact, as m / -8 is
    float id = inverse_scale(d);
    clear_block();
    put_f16(0u, d);
    for (uint j = 0u; j < 16u; ++j)
        put_bytes(2u + j, q4_nibble(quant_source(first, j), id) | (q4_nibble(quant_source(first, j + 16u), id) << 4), 1u);
    store_block(b, 18u);
}
#endif
