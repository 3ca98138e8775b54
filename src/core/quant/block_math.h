// Small helpers the block formats and their CPU decoders share: F16 and little-endian fields, ggml's
// rounding, the largest element, and the scale rules of the FP4 and i-quant formats.
#pragma once

#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ggx::core::quant {

inline float load_f16(const unsigned char * p) {
    ggml_fp16_t h;
    std::memcpy(&h, p, sizeof h);
    return ggml_fp16_to_fp32(h);
}

inline uint16_t load_u16(const unsigned char * p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
inline uint32_t load_u32(const unsigned char * p) {
    return load_u16(p) | static_cast<uint32_t>(load_u16(p + 2)) << 16;
}

inline void store_f16(unsigned char * p, float v) {
    const ggml_fp16_t h = ggml_fp32_to_fp16(v);
    std::memcpy(p, &h, sizeof h);
}

// Nearest integer, ties to even (ggml's nearest_int), saturated to +-2^22 with NaN giving 0, so
// every input has a defined result.
inline int nearest_int(float v) {
    if (std::isnan(v)) return 0;
    return static_cast<int>(std::nearbyint(std::clamp(v, -4194304.0f, 4194304.0f)));
}

// The first of n elements of largest magnitude (0 when all are zero or NaN; NaN never compares
// greater), and that magnitude in *amax.
inline float first_max(const float * x, int n, float * amax) {
    *amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (*amax < std::fabs(x[j])) {
            *amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

// The FP4 E2M1 levels doubled (a format fact of MXFP4 and NVFP4), for scales halved to match.
inline constexpr int8_t kFp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

inline float float_of_bits(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// MXFP4's E8M0 scale 2^(e - 127), halved for the doubled levels: 2^(e - 128) built from its bits
// (e 0 and 1 give the subnormals 2^-128 and 2^-127).
inline float e8m0_half(uint8_t e) {
    return float_of_bits(e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23);
}

// NVFP4's unsigned E4M3 scale (bias 7; bit 7 ignored), halved for the doubled levels, built from its
// bits: exponent 0 is mantissa * 2^-9 (times 1/2: exact), otherwise (1 + mantissa/8) * 2^(exponent - 8).
// 0x7f (NaN) reads as 0; with bit 7 set the rest reads as a number (0xff as 240 / 2), as in ggml.
inline float ue4m3_half(uint8_t u) {
    if (u == 0x7f) return 0.0f;
    const uint32_t exponent = (u >> 3) & 0x0f, mantissa = u & 0x07;
    if (exponent == 0) return static_cast<float>(mantissa) * 0x1p-10f;
    return float_of_bits(((exponent - 8 + 127) << 23) | (mantissa << 20));
}

// The i-quants' sub-block scales: a 4-bit s of IQ2 (d · (0.5 + s) · 1/4) and IQ3_XXS (· 1/2), and the
// odd multiple d · (2s + 1) of IQ3_S, IQ1_S and IQ1_M.
inline float iq_half_step_scale(float d, unsigned s, float factor) {
    return d * (0.5f + static_cast<float>(s)) * factor;
}
inline float iq_odd_scale(float d, unsigned s) { return d * static_cast<float>(2 * s + 1); }

// Nibble k of the bytes at p, low nibble first (the i-quants' packed 4-bit scales and IQ1_M's
// index high bits).
inline unsigned iq_nibble(const unsigned char * p, size_t k) { return p[k / 2] >> 4 * (k % 2) & 15u; }

// The grid index k of IQ2_S (Bits 2) or IQ3_S (Bits 1): 8 low bits at low[k], the high bits packed
// 8 / Bits to a byte at high.
template <unsigned Bits>
unsigned iq_split_index(const unsigned char * low, const unsigned char * high, size_t k) {
    constexpr size_t kPerByte = 8 / Bits;
    return low[k] | (high[k / kPerByte] >> Bits * (k % kPerByte) & ((1u << Bits) - 1)) << 8;
}

// The shift of IQ1 grid points (values d_sub · (point ± 1/8)).
inline constexpr float kIq1Delta = 0.125f;

// IQ1_M's F16 d: the top nibbles of the 4 little-endian scale words at bytes 48..55, lowest first.
inline uint16_t iq1_m_d_bits(const unsigned char * block) {
    unsigned bits = 0;
    for (unsigned w = 0; w < 4; ++w)
        bits |= static_cast<unsigned>(load_u16(block + 48 + 2 * w) >> 12) << 4 * w;
    return static_cast<uint16_t>(bits);
}

}  // namespace ggx::core::quant
