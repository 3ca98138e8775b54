// The formats whose 4-bit codes index a table of values: IQ4_NL and IQ4_XS (a non-uniform table),
// MXFP4 and NVFP4 (FP4 E2M1 values with an E8M0 or UE4M3 scale). Scalar code; docs/quantization.md
// gives the layouts and rules.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/quant/block_math.h"
#include "core/quant/format.h"

namespace ggx::core::quant {

namespace {

// IQ4_NL's 16 values (ggml's kvalues_iq4nl), shared by IQ4_XS.
constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// FP4 E2M1 values doubled (ggml's kvalues_mxfp4): codes 0-7 are +0 0.5 1 1.5 2 3 4 6, 8-15 their
// negations; the scales carry the factor 1/2.

constexpr int kBlock = 32;
constexpr int kHalf = kBlock / 2;
constexpr int kSuper = 256;
constexpr float kZeroBlock = 1e-15f;  // below this largest magnitude a block is all zeros

// n values of a run of 16-byte nibble groups (value j of a group low, j + half high) through table,
// each times scale.
void decode_nibbles(const unsigned char * qs, int n, int half, const int8_t * table, float scale, float * y) {
    for (int g = 0; g < n; g += 2 * half, qs += half, y += 2 * half) {
        for (int j = 0; j < half; ++j) {
            y[j] = scale * static_cast<float>(table[qs[j] & 0x0f]);
            y[j + half] = scale * static_cast<float>(table[qs[j] >> 4]);
        }
    }
}

void encode_nibbles(const uint8_t * codes, int n, int half, unsigned char * qs) {
    for (int g = 0; g < n; g += 2 * half, codes += 2 * half, qs += half)
        for (int j = 0; j < half; ++j)
            qs[j] = static_cast<unsigned char>(codes[j] | (codes[j + half] << 4));
}

// ---- IQ4_NL / IQ4_XS ----------------------------------------------------------------------------

// The index of the IQ4 value nearest to v (ggml's best_index_int8: the upper one unless the lower is
// strictly nearer, as float differences); NaN gives 15.
uint8_t nearest_iq4(float v) {
    if (v <= kIq4Values[0]) return 0;
    if (std::isnan(v) || v >= kIq4Values[15]) return 15;
    const auto * upper = std::upper_bound(kIq4Values, kIq4Values + 16, v,
                                          [](float a, int8_t b) { return a < static_cast<float>(b); });
    const auto mu = static_cast<int>(upper - kIq4Values);
    const bool lower = v - static_cast<float>(kIq4Values[mu - 1]) < static_cast<float>(kIq4Values[mu]) - v;
    return static_cast<uint8_t>(lower ? mu - 1 : mu);
}

// sum(w·q·x) and sum(w·q²) over a block for the codes of x·id.
struct Fit {
    float qx = 0.0f;
    float q2 = 0.0f;
};
Fit fit_codes(const float * x, const float * weight, float id) {
    Fit fit;
    for (int j = 0; j < kBlock; ++j) {
        const auto q = static_cast<float>(kIq4Values[nearest_iq4(id * x[j])]);
        fit.qx += weight[j] * q * x[j];
        fit.q2 += weight[j] * q * q;
    }
    return fit;
}

// The scale of a 32-value block (ggml's quantize_row_iq4_nl_impl per block): the codes of
// x·(−127/max) (or x·(127/max) when searching) and their weighted least-squares scale, then with
// search, the steps id = (k − 127)/max for k in −7..7, keeping the scale that explains most weighted
// energy. 0 for a block of zeros (and where the weights are all zero).
float iq4_block_scale(const float * x, const float * weight, bool search) {
    float amax = 0.0f;
    const float max = first_max(x, kBlock, &amax);
    if (amax < kZeroBlock) return 0.0f;
    const float first = kIq4Values[0];
    const float d0 = search ? -max / first : max / first;
    Fit fit = fit_codes(x, weight, 1.0f / d0);
    if (!(fit.q2 > 0.0f)) return 0.0f;
    float d = fit.qx / fit.q2;
    float best = d * fit.qx;
    for (int k = -7; search && k <= 7; ++k) {
        fit = fit_codes(x, weight, (static_cast<float>(k) + first) / max);
        if (fit.q2 > 0.0f && fit.qx * fit.qx > best * fit.q2) {
            d = fit.qx / fit.q2;
            best = d * fit.qx;
        }
    }
    return d;
}

void iq4_codes(const float * x, int n, float scale, uint8_t * codes) {
    const float id = scale != 0.0f ? 1.0f / scale : 0.0f;
    for (int j = 0; j < n; ++j)
        codes[j] = nearest_iq4(id * x[j]);
}

// Weights x² without importance, importance·sqrt(sigma2 + x²) with it.
void iq4_weights(const float * x, const float * importance, float sigma2, float * weight) {
    for (int j = 0; j < kBlock; ++j)
        weight[j] = importance ? importance[j] * std::sqrt(sigma2 + x[j] * x[j]) : x[j] * x[j];
}

// 2·mean(x²) over n values.
float twice_mean_square(const float * x, int n) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j)
        sum += x[j] * x[j];
    return sum * (2.0f / static_cast<float>(n));
}

// IQ4_NL (18 bytes): F16 d, 16 bytes of nibbles; x = d·value[q].
constexpr size_t kIq4NlBytes = 18;

void dequantize_iq4_nl(const void * x, float * y, int64_t n) {
    const auto * block = static_cast<const unsigned char *>(x);
    for (int64_t b = 0; b < n / kBlock; ++b, block += kIq4NlBytes, y += kBlock)
        decode_nibbles(block + 2, kBlock, kHalf, kIq4Values, load_f16(block), y);
}

// The reference (ggml's quantize_row_iq4_nl_ref) fits one scale to the codes of x·(−127/max) with
// weights x²; with importance the scale is searched and the codes taken again from it.
void quantize_iq4_nl_block(const float * x, const float * importance, unsigned char * block) {
    float weight[kBlock];
    uint8_t codes[kBlock];
    iq4_weights(x, importance, importance ? twice_mean_square(x, kBlock) : 0.0f, weight);
    const float d = iq4_block_scale(x, weight, importance != nullptr);
    if (importance) {
        iq4_codes(x, kBlock, d, codes);
    } else {
        // Without search the codes are those of −127/max, the scale's starting point.
        float amax = 0.0f;
        const float max = first_max(x, kBlock, &amax);
        iq4_codes(x, kBlock, amax < kZeroBlock ? 0.0f : max / kIq4Values[0], codes);
    }
    store_f16(block, d);
    encode_nibbles(codes, kBlock, kHalf, block + 2);
}

// IQ4_XS (136 bytes per 256 values): F16 d, u16 scales_h (2 high bits per sub-block), 4 bytes
// scales_l (4 low bits per sub-block, sub-block 2i low), 128 bytes of nibbles (16 per sub-block of
// 32); sub-block i has x = d·(ls_i − 32)·value[q] with the 6-bit ls_i.
constexpr size_t kIq4XsBytes = 136;

int iq4_xs_sub_scale(const unsigned char * block, int i) {
    uint16_t high;
    std::memcpy(&high, block + 2, sizeof high);
    const int low = (block[4 + i / 2] >> (4 * (i % 2))) & 0x0f;
    return low | (((high >> (2 * i)) & 3) << 4);
}

void dequantize_iq4_xs(const void * x, float * y, int64_t n) {
    const auto * block = static_cast<const unsigned char *>(x);
    for (int64_t b = 0; b < n / kSuper; ++b, block += kIq4XsBytes) {
        const float d = load_f16(block);
        for (int i = 0; i < kSuper / kBlock; ++i, y += kBlock) {
            const float dl = d * static_cast<float>(iq4_xs_sub_scale(block, i) - 32);
            decode_nibbles(block + 8 + i * kHalf, kBlock, kHalf, kIq4Values, dl, y);
        }
    }
}

// ggml's quantize_iq4_xs: each sub-block's scale searched as IQ4_NL's, d = −max_scale/32 (max_scale
// the first of largest magnitude), ls = clamp(round(scale/d), −32, 31) + 32, codes from d·(ls − 32).
void quantize_iq4_xs_super(const float * x, const float * importance, unsigned char * block) {
    constexpr int kSubs = kSuper / kBlock;
    const float sigma2 = twice_mean_square(x, kSuper);
    float scales[kSubs];
    float weight[kBlock];
    float max_scale = 0.0f;
    float amax_scale = 0.0f;
    for (int i = 0; i < kSubs; ++i) {
        iq4_weights(x + i * kBlock, importance ? importance + i * kBlock : nullptr, sigma2, weight);
        scales[i] = iq4_block_scale(x + i * kBlock, weight, true);
        if (std::fabs(scales[i]) > amax_scale) {
            amax_scale = std::fabs(scales[i]);
            max_scale = scales[i];
        }
    }
    const float d = -max_scale / 32.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(block, d);
    uint16_t high = 0;
    uint8_t codes[kBlock];
    for (int i = 0; i < kSubs; ++i) {
        const int l = std::clamp(nearest_int(id * scales[i]), -32, 31);
        iq4_codes(x + i * kBlock, kBlock, d * static_cast<float>(l), codes);
        encode_nibbles(codes, kBlock, kHalf, block + 8 + i * kHalf);
        const int ls = l + 32;
        if (i % 2 == 0)
            block[4 + i / 2] = static_cast<unsigned char>(ls & 0x0f);
        else
            block[4 + i / 2] = static_cast<unsigned char>(block[4 + i / 2] | ((ls & 0x0f) << 4));
        high = static_cast<uint16_t>(high | ((ls >> 4) << (2 * i)));
    }
    std::memcpy(block + 2, &high, sizeof high);
}

// A row of blocks of Values values and Bytes bytes, each from encode (importance null when absent).
template <int Values, size_t Bytes, void (*Encode)(const float *, const float *, unsigned char *)>
void quantize_iq4_weighted(const float * x, void * y, int64_t n, const float * importance) {
    auto * block = static_cast<unsigned char *>(y);
    for (int64_t b = 0; b < n / Values; ++b)
        Encode(x + b * Values, importance ? importance + b * Values : nullptr, block + b * Bytes);
}

template <int Values, size_t Bytes, void (*Encode)(const float *, const float *, unsigned char *)>
void quantize_iq4(const float * x, void * y, int64_t n) {
    quantize_iq4_weighted<Values, Bytes, Encode>(x, y, n, nullptr);
}

// ---- MXFP4 / NVFP4 ------------------------------------------------------------------------------

// The FP4 code whose value times scale is nearest x (the first on ties; NaN gives 0).
uint8_t nearest_fp4(float x, float scale) {
    uint8_t best = 0;
    float best_error = std::fabs(static_cast<float>(kFp4Values[0]) * scale - x);
    for (uint8_t i = 1; i < 16; ++i) {
        const float error = std::fabs(static_cast<float>(kFp4Values[i]) * scale - x);
        if (error < best_error) {
            best = i;
            best_error = error;
        }
    }
    return best;
}

void fp4_codes(const float * x, int n, float scale, unsigned char * qs) {
    uint8_t codes[kBlock];
    for (int j = 0; j < n; ++j)
        codes[j] = nearest_fp4(x[j], scale);
    encode_nibbles(codes, n, n / 2, qs);
}

// MXFP4 (17 bytes): E8M0 e, 16 bytes of nibbles; x = 2^(e − 128)·value[q] (the table is doubled).
constexpr size_t kMxfp4Bytes = 17;

void dequantize_mxfp4(const void * x, float * y, int64_t n) {
    const auto * block = static_cast<const unsigned char *>(x);
    for (int64_t b = 0; b < n / kBlock; ++b, block += kMxfp4Bytes, y += kBlock)
        decode_nibbles(block + 1, kBlock, kHalf, kFp4Values, e8m0_half(block[0]), y);
}

// e = floor(log2(amax)) + 125 (so amax lands in the top value, 6), 0 for a block of zeros; clamped
// to the finite exponents 0..254 (ggml converts an out-of-range float to the byte unchecked).
void quantize_mxfp4(const float * x, void * y, int64_t n) {
    auto * block = static_cast<unsigned char *>(y);
    for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock, block += kMxfp4Bytes) {
        float amax = 0.0f;
        first_max(x, kBlock, &amax);
        const float exponent = amax > 0.0f ? std::floor(std::log2(amax)) - 2.0f + 127.0f : 0.0f;
        const auto e = static_cast<uint8_t>(std::clamp(exponent, 0.0f, 254.0f));
        block[0] = e;
        fp4_codes(x, kBlock, e8m0_half(e), block + 1);
    }
}

// E8M0 0xff is NaN.
int64_t first_bad_e8m0(const void * x, int64_t n_blocks) {
    const auto * block = static_cast<const unsigned char *>(x);
    for (int64_t b = 0; b < n_blocks; ++b)
        if (block[static_cast<size_t>(b) * kMxfp4Bytes] == 0xff) return b;
    return -1;
}

// NVFP4 (36 bytes per 64 values): 4 UE4M3 scales, then 8 bytes of nibbles per sub-block of 16
// (value j low, j + 8 high); x = ue4m3(s)/2·value[q].
constexpr int kNvfp4Block = 64;
constexpr int kNvfp4Sub = 16;
constexpr size_t kNvfp4Bytes = 36;

// ggml's rounding to UE4M3: 0 for x <= 0 or NaN; x clamped to 448; subnormals round half up to
// m·2^-9 (m <= 7); normals keep 3 mantissa bits, rounding half up on the next bit; 0x7e (448) at the top.
uint8_t to_ue4m3(float x) {
    if (!(x > 0.0f)) return 0;
    x = std::min(x, 448.0f);
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 7;
    if (exponent <= 0) return static_cast<uint8_t>(std::min(static_cast<int>(x * 512.0f + 0.5f), 7));
    int mantissa = static_cast<int>((bits >> 20) & 0x07) + static_cast<int>((bits >> 19) & 1);
    if (mantissa > 7) {
        mantissa = 0;
        ++exponent;
    }
    return exponent >= 15 ? uint8_t{0x7e} : static_cast<uint8_t>((exponent << 3) | mantissa);
}

void dequantize_nvfp4(const void * x, float * y, int64_t n) {
    const auto * block = static_cast<const unsigned char *>(x);
    for (int64_t b = 0; b < n / kNvfp4Block; ++b, block += kNvfp4Bytes)
        for (int s = 0; s < 4; ++s, y += kNvfp4Sub)
            decode_nibbles(block + 4 + s * kNvfp4Sub / 2, kNvfp4Sub, kNvfp4Sub / 2, kFp4Values,
                           ue4m3_half(block[s]), y);
}

// Each sub-block's scale is ue4m3(amax/6), so amax lands in the top value, 6.
void quantize_nvfp4(const float * x, void * y, int64_t n) {
    auto * block = static_cast<unsigned char *>(y);
    for (int64_t b = 0; b < n / kNvfp4Block; ++b, block += kNvfp4Bytes) {
        for (int s = 0; s < 4; ++s, x += kNvfp4Sub) {
            float amax = 0.0f;
            first_max(x, kNvfp4Sub, &amax);
            block[s] = to_ue4m3(amax / 6.0f);
            fp4_codes(x, kNvfp4Sub, ue4m3_half(block[s]), block + 4 + s * kNvfp4Sub / 2);
        }
    }
}

// ggml has importance-weighted quantization for IQ4_NL and IQ4_XS only. NVFP4 has no invalid block:
// its UE4M3 NaN code reads as 0, and ggml accepts every byte.
constexpr Format kNonlinear[] = {
    {GGML_TYPE_IQ4_NL, dequantize_iq4_nl, quantize_iq4<kBlock, kIq4NlBytes, quantize_iq4_nl_block>,
     quantize_iq4_weighted<kBlock, kIq4NlBytes, quantize_iq4_nl_block>, first_bad_f16_scale<kIq4NlBytes, 0>,
     GGML_TYPE_Q8_0, false},
    {GGML_TYPE_IQ4_XS, dequantize_iq4_xs, quantize_iq4<kSuper, kIq4XsBytes, quantize_iq4_xs_super>,
     quantize_iq4_weighted<kSuper, kIq4XsBytes, quantize_iq4_xs_super>, first_bad_f16_scale<kIq4XsBytes, 0>,
     GGML_TYPE_Q8_K, false},
    {GGML_TYPE_MXFP4, dequantize_mxfp4, quantize_mxfp4, nullptr, first_bad_e8m0, GGML_TYPE_Q8_0, false},
    {GGML_TYPE_NVFP4, dequantize_nvfp4, quantize_nvfp4, nullptr, nullptr, GGML_TYPE_Q8_0, false},
};

}  // namespace

std::span<const Format> nonlinear_formats() { return kNonlinear; }

}  // namespace ggx::core::quant
