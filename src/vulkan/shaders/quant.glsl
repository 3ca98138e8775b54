// Q8_0 and Q4_0 blocks in uint16_t arrays (no 8-bit storage): a block is its F16 scale word followed
// by its quants (Q8_0: 16 words of two int8; Q4_0: 8 words of four nibbles), addressed by the index
// of its scale word. The arithmetic repeats the CPU's (src/core/types.cpp) operation for operation,
// so results agree bit for bit. Define QUANT_IN (an array to dequantize from) and/or QUANT_OUT (an
// array to quantize into) before including.

#ifdef QUANT_IN
float block_scale(uint block) { return unpackHalf2x16(uint(QUANT_IN[block])).x; }

float dequant_q8_0(uint block, uint j) {
    int word = int(uint(QUANT_IN[block + 1u + (j >> 1)]));
    return float(bitfieldExtract(word, int((j & 1u) * 8u), 8)) * block_scale(block);
}

// Byte b of the quants holds element b (low nibble) and element b + 16 (high nibble).
float dequant_q4_0(uint block, uint j) {
    uint b = j & 15u;
    uint word = uint(QUANT_IN[block + 1u + (b >> 1)]);
    int nibble = int(bitfieldExtract(word, int((b & 1u) * 8u + (j >> 4) * 4u), 4));
    return float(nibble - 8) * block_scale(block);
}
#endif

#ifdef QUANT_OUT
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

void quantize_q8_0(float x[32], uint block) {
    float amax = 0.0;
    for (uint j = 0u; j < 32u; ++j) {
        if (abs(x[j]) > amax) amax = abs(x[j]);  // NaN never compares greater
    }
    float d = divide_exactly(amax, 127.0);
    float id = inverse_scale(d);
    QUANT_OUT[block] = uint16_t(f32_to_f16_bits(d));
    for (uint j = 0u; j < 32u; j += 2u) {
        QUANT_OUT[block + 1u + j / 2u] = uint16_t(q8_byte(x[j], id) | (q8_byte(x[j + 1u], id) << 8));
    }
}

// min(15, trunc(x * id + 8.5)) with both roundings; NaN gives 8.
uint q4_nibble(float x, float id) {
    precise float v = x * id + 8.5;
    return isnan(v) ? 8u : uint(min(max(v, 0.0), 15.0));
}

void quantize_q4_0(float x[32], uint block) {
    float amax = 0.0, m = 0.0;  // the first element of largest magnitude
    for (uint j = 0u; j < 32u; ++j) {
        if (abs(x[j]) > amax) {
            amax = abs(x[j]);
            m = x[j];
        }
    }
    float d = m * -0.125;  // exact, as m / -8 is
    float id = inverse_scale(d);
    QUANT_OUT[block] = uint16_t(f32_to_f16_bits(d));
    for (uint b = 0u; b < 16u; b += 2u) {
        uint lo = q4_nibble(x[b], id) | (q4_nibble(x[b + 16u], id) << 4);
        uint hi = q4_nibble(x[b + 1u], id) | (q4_nibble(x[b + 17u], id) << 4);
        QUANT_OUT[block + 1u + b / 2u] = uint16_t(lo | (hi << 8));
    }
}
#endif
