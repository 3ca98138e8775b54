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

// MXFP4's E8M0 scale 2^(e - 127), halved for the doubled levels.
inline float e8m0_half(uint8_t e) { return std::ldexp(1.0f, static_cast<int>(e) - 128); }

// NVFP4's unsigned E4M3 scale (bias 7; bit 7 ignored), halved for the doubled levels; 0x7f (NaN)
// reads as 0.
inline float ue4m3_half(uint8_t u) {
    if (u == 0 || u == 0x7f) return 0.0f;
    const int exponent = (u >> 3) & 0x0f;
    const auto mantissa = static_cast<float>(u & 0x07);
    const float raw =
        exponent == 0 ? std::ldexp(mantissa, -9) : std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
    return raw * 0.5f;
}

}  // namespace ggx::core::quant
