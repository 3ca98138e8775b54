// Small helpers the scalar block formats share: F16 fields, ggml's rounding and the largest element.
#pragma once

#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ggx::core::quant {

inline float load_f16(const unsigned char * p) {
    ggml_fp16_t h;
    std::memcpy(&h, p, sizeof h);
    return ggml_fp16_to_fp32(h);
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

}  // namespace ggx::core::quant
