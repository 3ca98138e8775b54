// Small helpers the scalar block formats share: F16 fields, ggml's rounding and the largest element.
#pragma once

#include <ggml.h>

#include <algorithm>
#include <cmath>
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

}  // namespace ggx::core::quant
