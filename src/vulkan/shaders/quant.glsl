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
uint q_nibble(uint b, uint j, uint half_) {
    return (q_byte(b + (j & (half_ - 1u))) >> (j < half_ ? 0u : 4u)) & 15u;
}
// The 2-bit field of value v in 32-byte groups of 128 values: byte v % 32, bits 2 (v % 128 / 32).
uint q_crumb(uint b, uint v) {
    return (q_byte(b + v / 128u * 32u + (v & 31u)) >> (2u * ((v & 127u) / 32u))) & 3u;
}

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
    return uvec2((packed & 15u) | ((q_byte(b + s - 4u) >> 6) << 4),
                 (packed >> 4) | ((q_byte(b + s) >> 6) << 4));
}

float scale_min_value(uint b, uint v, uint q) {
    uvec2 sm = scale_min_6bit(b + 4u, v / 32u);
    precise float y = q_f16(b) * float(sm.x) * float(q) - q_f16(b + 2u) * float(sm.y);
    return y;
}

uint k_nibble(uint b, uint v) {
    return (q_byte(b + v / 64u * 32u + (v & 31u)) >> ((v & 63u) < 32u ? 0u : 4u)) & 15u;
}

float dequant_q4_K(uint b, uint v) { return scale_min_value(b, v, k_nibble(b + 16u, v)); }

float dequant_q5_K(uint b, uint v) {
    uint fifth = (q_byte(b + 16u + (v & 31u)) >> (v / 32u)) & 1u;
    return scale_min_value(b, v, k_nibble(b + 48u, v) | (fifth << 4));
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
    uint ls = ((q_byte(b + 4u + s / 2u) >> (4u * (s & 1u))) & 15u) |
              (((q_bytes(b + 2u, 2u) >> (2u * s)) & 3u) << 4);
    precise float dl = q_f16(b) * float(int(ls) - 32);
    return dl * float(kIq4Values[q_nibble(b + 8u + s * 16u, v & 31u, 16u)]);
}

float dequant_mxfp4(uint b, uint j) {
    return e8m0_half(q_byte(b)) * float(kFp4Values[q_nibble(b + 1u, j, 16u)]);
}

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
    uint signs = q_byte(b + 74u + k / 2u) >> (4u * (k & 1u));
    return signed_value(db, grid_byte(GRID_IQ3S + point * 4u + i), signs, i);
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
    uint scale = (q_bytes(b + 48u + 2u * (j / 4u), 2u) >> (3u * (j & 3u))) & 7u;
    float dl = unpackHalf2x16(d_bits).x * float(2u * scale + 1u);
    uint h = q_byte(b + 32u + k / 2u) >> (4u * (k & 1u));
    return shifted_value(dl, q_byte(b + k) | ((h & 7u) << 8), v & 7u, (h & 8u) != 0u);
}
#endif
#endif

#ifdef QUANT_OUT
// A block is assembled in qblock (byte i of the block in byte i % 4 of word i / 4) and stored by
// store_block: words wholly inside the block are written, words it shares with a neighbour (whose
// block another invocation may be writing) have only its bytes replaced, atomically.
const uint QBLOCK_WORDS = 17u;  // the largest quantizable block (TQ2_0: 66 bytes)
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

// The largest |x| of elements [j0, j0 + n) of a block (NaN never compares greater), and (first_max)
// the first element of that magnitude with its sign.
float abs_max(uint first, uint j0, uint n) {
    float amax = 0.0;
    for (uint j = j0; j < j0 + n; ++j) {
        float x = abs(quant_source(first, j));
        if (x > amax) amax = x;
    }
    return amax;
}

float first_max(uint first, uint j0, uint n, out float amax) {
    float m = 0.0;
    amax = 0.0;
    for (uint j = j0; j < j0 + n; ++j) {
        float x = quant_source(first, j);
        if (abs(x) > amax) {
            amax = abs(x);
            m = x;
        }
    }
    return m;
}

// v rounded half away from zero (roundf, lroundf) for |v| < 2^23, computed from trunc so that the
// rounding is exact.
float round_away(float v) {
    float a = abs(v), t = trunc(a);
    float r = t + (a - t >= 0.5 ? 1.0 : 0.0);
    return v < 0.0 ? -r : r;
}

// min(top, trunc(v)) for v >= 0 (a code with its rounding offset added), 0 below; NaN gives nan_code.
uint truncated_code(float v, float top, uint nan_code) {
    return isnan(v) ? nan_code : uint(min(max(v, 0.0), top));
}

// Packs the low nibbles of 2 half codes (code j low, j + half high) into the block at byte i.
void put_nibbles(uint i, uint codes[32], uint half_) {
    for (uint j = 0u; j < half_; ++j)
        put_bytes(i + j, (codes[j] & 15u) | ((codes[j + half_] & 15u) << 4), 1u);
}

// ---- Q8_0, Q8_1 (types.cpp, legacy.cpp)

// roundf(clamp(x * id, -127, 127)); NaN gives 0.
int q8_code(float x, float id) {
    precise float v = x * id;
    return int(round_away(isnan(v) ? 0.0 : min(max(v, -127.0), 127.0)));
}

// Q8_0's d and quants at byte 2 + quants; returns the sum of the quants.
int quantize_q8(uint first, uint quants, out float amax) {
    amax = abs_max(first, 0u, 32u);
    float d = divide_exactly(amax, 127.0);
    float id = inverse_scale(d);
    clear_block();
    put_f16(0u, d);
    int sum = 0;
    for (uint j = 0u; j < 32u; ++j) {
        int q = q8_code(quant_source(first, j), id);
        put_bytes(quants + j, uint(q) & 255u, 1u);
        sum += q;
    }
    return sum;
}

void quantize_q8_0(uint first, uint b) {
    float amax;
    quantize_q8(first, 2u, amax);
    store_block(b, 34u);
}

// s = sum(q) * (amax / 127), with the unrounded scale.
void quantize_q8_1(uint first, uint b) {
    float amax;
    int sum = quantize_q8(first, 4u, amax);
    put_f16(2u, float(sum) * divide_exactly(amax, 127.0));
    store_block(b, 36u);
}

// ---- Q4_0, Q4_1, Q5_0, Q5_1 (types.cpp, legacy.cpp)

// The low nibbles of 32 codes at byte qs (value j low, j + 16 high), their fifth bits at byte qh.
void put_legacy_codes(uint codes[32], uint qs, bool high_bits, uint qh) {
    put_nibbles(qs, codes, 16u);
    if (!high_bits) return;
    uint bits = 0u;
    for (uint j = 0u; j < 32u; ++j) bits |= (codes[j] >> 4) << j;
    put_bytes(qh, bits, 4u);
}

// Q4_0 / Q5_0: d = max / -half (max the first element of largest magnitude; exact), codes
// min(top, trunc(x / d + half + 0.5)); NaN elements get half, the code of 0.
void quantize_symmetric(uint first, uint b, float half_, uint qs, bool high_bits, uint bytes) {
    float amax;
    float d = first_max(first, 0u, 32u, amax) * (-1.0 / half_);
    float id = inverse_scale(d);
    uint codes[32];
    for (uint j = 0u; j < 32u; ++j) {
        precise float v = quant_source(first, j) * id + (half_ + 0.5);
        codes[j] = truncated_code(v, 2.0 * half_ - 1.0, uint(half_));
    }
    clear_block();
    put_f16(0u, d);
    put_legacy_codes(codes, qs, high_bits, 2u);
    store_block(b, bytes);
}

void quantize_q4_0(uint first, uint b) { quantize_symmetric(first, b, 8.0, 2u, false, 18u); }
void quantize_q5_0(uint first, uint b) { quantize_symmetric(first, b, 16.0, 6u, true, 22u); }

// Q4_1 / Q5_1: d = (max - min) / top, m = min, codes trunc((x - min) / d + 0.5) clamped to
// [0, top]; NaN elements are skipped by the extrema and get 0.
void quantize_with_min(uint first, uint b, float top, uint qs, bool high_bits, uint bytes) {
    float lo = 3.402823466e38, hi = -3.402823466e38;
    for (uint j = 0u; j < 32u; ++j) {
        float x = quant_source(first, j);
        if (x < lo) lo = x;
        if (x > hi) hi = x;
    }
    precise float range = hi - lo;
    float d = divide_exactly(range, top);
    float id = inverse_scale(d);
    uint codes[32];
    for (uint j = 0u; j < 32u; ++j) {
        precise float v = (quant_source(first, j) - lo) * id + 0.5;
        codes[j] = truncated_code(v, top, 0u);
    }
    clear_block();
    put_f16(0u, d);
    put_f16(2u, lo);
    put_legacy_codes(codes, qs, high_bits, 4u);
    store_block(b, bytes);
}

void quantize_q4_1(uint first, uint b) { quantize_with_min(first, b, 15.0, 4u, false, 20u); }
void quantize_q5_1(uint first, uint b) { quantize_with_min(first, b, 31.0, 8u, true, 24u); }

// ---- IQ4_NL (nonlinear.cpp's reference: one scale fitted to the codes of x * (-127 / max))

// The index of the IQ4 value nearest v: the upper one unless the lower is strictly nearer; NaN
// gives 15.
uint nearest_iq4(float v) {
    if (v <= -127.0) return 0u;
    if (isnan(v) || v >= 113.0) return 15u;
    uint mu = 1u;
    while (!(v < float(kIq4Values[mu]))) ++mu;
    precise float below = v - float(kIq4Values[mu - 1u]);
    precise float above = float(kIq4Values[mu]) - v;
    return below < above ? mu - 1u : mu;
}

void quantize_iq4_nl(uint first, uint b) {
    float amax;
    float m = first_max(first, 0u, 32u, amax);
    float d = 0.0;
    uint codes[32];
    if (amax >= 1e-15) {
        float id = inverse_scale(divide_exactly(m, -127.0));
        precise float qx = 0.0, q2 = 0.0;
        for (uint j = 0u; j < 32u; ++j) {
            float x = quant_source(first, j);
            precise float v = id * x;
            codes[j] = nearest_iq4(v);
            precise float w = x * x;
            precise float wq = w * float(kIq4Values[codes[j]]);
            qx = qx + wq * x;
            q2 = q2 + wq * float(kIq4Values[codes[j]]);
        }
        d = q2 > 0.0 ? divide_exactly(qx, q2) : 0.0;
    } else {
        // The codes of x * 0: that of 0, or of NaN for a non-finite element (written out, since a
        // compiler may fold the product to 0).
        for (uint j = 0u; j < 32u; ++j) {
            float x = quant_source(first, j);
            codes[j] = isnan(x) || isinf(x) ? 15u : nearest_iq4(0.0);
        }
    }
    clear_block();
    put_f16(0u, d);
    put_nibbles(2u, codes, 16u);
    store_block(b, 18u);
}

// ---- MXFP4, NVFP4: FP4 codes under a power-of-two (E8M0) or UE4M3 scale

// The FP4 code whose value times scale is nearest x (the first on ties; NaN gives 0).
uint nearest_fp4(float x, float scale) {
    uint best = 0u;
    precise float best_error = abs(float(kFp4Values[0]) * scale - x);
    for (uint i = 1u; i < 16u; ++i) {
        precise float error = abs(float(kFp4Values[i]) * scale - x);
        if (error < best_error) {
            best = i;
            best_error = error;
        }
    }
    return best;
}

// floor(log2f(a)) for a > 0 as the CPU's log2f rounds it: the exponent e of a, or e + 1 where
// e + log2(mantissa) rounds up to that integer (a mantissa within a few ulp of 2).
float floor_log2(float a) {
    uint bits = floatBitsToUint(a);
    int e = int(bits >> 23) - 127;
    if (e == -127) return -127.0;  // subnormal: far below any exponent the callers keep
    if (e == 128) return a;        // infinity
    float m = uintBitsToFloat((bits & 0x007fffffu) | 0x3f800000u);
    float delta = (2.0 - m) * 0.5;                                        // exact
    float eps = (delta + delta * delta * 0.5) * 1.44269504088896341;      // -log2(1 - delta)
    int n = e + 1;
    // Half the spacing of floats next to n on the side of e + log2(m) (below n > 0, above |n| for n < 0).
    float h = n > 0 ? 0.5 * (float(n) - uintBitsToFloat(floatBitsToUint(float(n)) - 1u))
                    : 0.5 * (uintBitsToFloat(floatBitsToUint(float(-n)) + 1u) - float(-n));
    return n != 0 && eps < h ? float(n) : float(e);
}

// e = floor(log2(amax)) + 125, 0 for a block of zeros, clamped to 0..254.
void quantize_mxfp4(uint first, uint b) {
    float amax = abs_max(first, 0u, 32u);
    float exponent = amax > 0.0 ? floor_log2(amax) - 2.0 + 127.0 : 0.0;
    uint e = uint(min(max(exponent, 0.0), 254.0));
    float scale = e8m0_half(e);
    uint codes[32];
    for (uint j = 0u; j < 32u; ++j) codes[j] = nearest_fp4(quant_source(first, j), scale);
    clear_block();
    put_bytes(0u, e, 1u);
    put_nibbles(1u, codes, 16u);
    store_block(b, 17u);
}

// ggml's rounding to UE4M3 (nonlinear.cpp's to_ue4m3).
uint to_ue4m3(float x) {
    if (!(x > 0.0)) return 0u;
    x = min(x, 448.0);
    uint bits = floatBitsToUint(x);
    int exponent = int((bits >> 23) & 255u) - 120;
    if (exponent <= 0) {
        precise float v = x * 512.0 + 0.5;
        return min(uint(v), 7u);
    }
    uint mantissa = ((bits >> 20) & 7u) + ((bits >> 19) & 1u);
    if (mantissa > 7u) {
        mantissa = 0u;
        ++exponent;
    }
    return exponent >= 15 ? 0x7eu : (uint(exponent) << 3) | mantissa;
}

void quantize_nvfp4(uint first, uint b) {
    clear_block();
    for (uint s = 0u; s < 4u; ++s) {
        uint u = to_ue4m3(divide_exactly(abs_max(first, s * 16u, 16u), 6.0));
        float scale = ue4m3_half(u);
        put_bytes(s, u, 1u);
        uint codes[32];
        for (uint j = 0u; j < 16u; ++j) codes[j] = nearest_fp4(quant_source(first, s * 16u + j), scale);
        put_nibbles(4u + s * 8u, codes, 8u);
    }
    store_block(b, 36u);
}

// ---- TQ1_0, TQ2_0, Q1_0, Q2_0 (ternary.cpp)

// The ternary digit (0, 1, 2) of x * id rounded half away from zero; non-finite gives 1.
uint ternary_digit(float x, float id) {
    precise float v = x * id;
    return isnan(v) || isinf(v) ? 1u : uint(int(round_away(v)) + 1);
}

void quantize_tq2_0(uint first, uint b) {
    float d = abs_max(first, 0u, 256u);
    float id = inverse_scale(d);
    clear_block();
    for (uint v = 0u; v < 256u; ++v) {
        uint digit = ternary_digit(quant_source(first, v), id);
        put_bytes(v / 128u * 32u + (v & 31u), digit << (2u * ((v & 127u) / 32u)), 1u);
    }
    put_f16(64u, d);
    store_block(b, 66u);
}

// TQ1_0: byte m of a group of bytes holds the trits of values first + m + bytes * n, n < trits, as
// ceil(q * 256 / 243) of their base-3 number q (most significant first; a fifth trit of 0 for
// four-trit groups).
void quantize_tq1_0(uint first, uint b) {
    float d = abs_max(first, 0u, 256u);
    float id = inverse_scale(d);
    clear_block();
    const uvec3 groups[3] = uvec3[3](uvec3(0u, 32u, 5u), uvec3(32u, 16u, 5u), uvec3(48u, 4u, 4u));
    uint v0 = 0u;
    for (uint g = 0u; g < 3u; ++g) {
        for (uint m = 0u; m < groups[g].y; ++m) {
            uint q = 0u;
            for (uint n = 0u; n < 5u; ++n) {
                uint v = v0 + m + n * groups[g].y;
                q = q * 3u + (n < groups[g].z ? ternary_digit(quant_source(first, v), id) : 0u);
            }
            put_bytes(groups[g].x + m, (q * 256u + 242u) / 243u, 1u);
        }
        v0 += groups[g].y * groups[g].z;
    }
    put_f16(52u, d);
    store_block(b, 54u);
}

// d = the mean of |x| (summed in order; a NaN makes it NaN); bit j set where x[j] >= 0.
void quantize_q1_0(uint first, uint b) {
    precise float sum = 0.0;
    for (uint j = 0u; j < 128u; ++j) sum = sum + abs(quant_source(first, j));
    clear_block();
    put_f16(0u, sum * (1.0 / 128.0));
    for (uint j = 0u; j < 128u; ++j)
        put_bytes(2u + j / 8u, quant_source(first, j) >= 0.0 ? 1u << (j & 7u) : 0u, 1u);
    store_block(b, 18u);
}

// Q2_0: codes clamp(roundf(x / amax), -1, 2) + 1; non-finite gives 0.
void quantize_q2_0(uint first, uint b) {
    float d = abs_max(first, 0u, 64u);
    float id = d > 0.0 ? divide_exactly(1.0, d) : 0.0;
    clear_block();
    put_f16(0u, d);
    for (uint j = 0u; j < 64u; ++j) {
        precise float v = quant_source(first, j) * id;
        uint code = isnan(v) || isinf(v) ? 0u : uint(min(max(round_away(v), -1.0), 2.0) + 1.0);
        put_bytes(2u + j / 4u, code << (2u * (j & 3u)), 1u);
    }
    store_block(b, 18u);
}
#endif
