// The 32-value block formats beside Q8_0/Q4_0: Q4_1, Q5_0, Q5_1 (weights) and Q8_1 (the activations
// of Q4_1/Q5_1 dot products). Scalar code; docs/quantization.md gives the layouts and rules.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/quant/block_math.h"
#include "core/quant/format.h"

namespace ggx::core::quant {

namespace {

constexpr int kBlock = 32;
constexpr int kHalf = kBlock / 2;

void store_u16(unsigned char * p, uint16_t v) { std::memcpy(p, &v, sizeof v); }

// v truncated (ggml's integer conversion of a rounding offset added), clamped to [0, top]; a NaN
// gives nan_code.
int truncated_code(float v, int top, int nan_code) {
    if (std::isnan(v)) return nan_code;
    return static_cast<int>(std::clamp(v, 0.0f, static_cast<float>(top)));
}

// ---- Layouts ------------------------------------------------------------------------------------

// Where a block's fields lie: the F16 scale d at 0, the F16 minimum m after it (formats with one),
// the 32 fifth bits qh (5-bit formats) and the 16 bytes of nibbles (value j low, j + 16 high).
struct Layout {
    size_t bytes;
    bool has_min;
    bool has_high_bits;

    size_t qh_offset() const { return has_min ? 4 : 2; }
    size_t qs_offset() const { return qh_offset() + (has_high_bits ? 4 : 0); }
    int top() const { return has_high_bits ? 31 : 15; }
};

constexpr Layout kQ4_1{20, true, false};
constexpr Layout kQ5_0{22, false, true};
constexpr Layout kQ5_1{24, true, true};

// The 32 codes of a block.
void unpack_codes(const Layout & layout, const unsigned char * block, int * q) {
    uint32_t qh = 0;
    if (layout.has_high_bits) std::memcpy(&qh, block + layout.qh_offset(), sizeof qh);
    const unsigned char * qs = block + layout.qs_offset();
    for (int j = 0; j < kHalf; ++j) {
        q[j] = static_cast<int>((qs[j] & 0x0f) | (((qh >> j) & 1u) << 4));
        q[j + kHalf] = static_cast<int>((qs[j] >> 4) | (((qh >> (j + kHalf)) & 1u) << 4));
    }
}

void pack_codes(const Layout & layout, const int * q, unsigned char * block) {
    uint32_t qh = 0;
    unsigned char * qs = block + layout.qs_offset();
    for (int j = 0; j < kHalf; ++j) {
        qs[j] = static_cast<unsigned char>((q[j] & 0x0f) | ((q[j + kHalf] & 0x0f) << 4));
        qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
        qh |= static_cast<uint32_t>((q[j + kHalf] >> 4) & 1) << (j + kHalf);
    }
    if (layout.has_high_bits) std::memcpy(block + layout.qh_offset(), &qh, sizeof qh);
}

// x = d·q + m with a minimum, x = d·(q − 16) for Q5_0 (the only one without).
template <const Layout & L>
void dequantize_blocks(const void * x, float * y, int64_t n) {
    const auto * block = static_cast<const unsigned char *>(x);
    int q[kBlock];
    for (int64_t b = 0; b < n / kBlock; ++b, block += L.bytes, y += kBlock) {
        const float d = load_f16(block);
        unpack_codes(L, block, q);
        if constexpr (L.has_min) {
            const float m = load_f16(block + 2);
            for (int j = 0; j < kBlock; ++j)
                y[j] = static_cast<float>(q[j]) * d + m;
        } else {
            for (int j = 0; j < kBlock; ++j)
                y[j] = static_cast<float>(q[j] - 16) * d;
        }
    }
}

// ---- Reference quantization ---------------------------------------------------------------------

// Q4_1/Q5_1: d = (max − min)/top, m = min, q = trunc((x − min)/d + 0.5). NaN elements are skipped
// by the extrema and get code 0.
template <const Layout & L>
void quantize_with_min(const float * x, void * y, int64_t n) {
    auto * block = static_cast<unsigned char *>(y);
    int q[kBlock];
    for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock, block += L.bytes) {
        float min = FLT_MAX;
        float max = -FLT_MAX;
        for (int j = 0; j < kBlock; ++j) {
            if (x[j] < min) min = x[j];
            if (x[j] > max) max = x[j];
        }
        const float d = (max - min) / static_cast<float>(L.top());
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(block, d);
        store_f16(block + 2, min);
        for (int j = 0; j < kBlock; ++j)
            q[j] = truncated_code((x[j] - min) * id + 0.5f, L.top(), 0);
        pack_codes(L, q, block);
    }
}

// Q5_0: d = max/−16 (max the element of largest magnitude), q = min(31, trunc(x/d + 16.5)); NaN
// elements get 16, the code of 0 (as Q4_0's get 8).
void quantize_q5_0(const float * x, void * y, int64_t n) {
    auto * block = static_cast<unsigned char *>(y);
    int q[kBlock];
    for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock, block += kQ5_0.bytes) {
        float amax = 0.0f;
        const float d = first_max(x, kBlock, &amax) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(block, d);
        for (int j = 0; j < kBlock; ++j)
            q[j] = truncated_code(x[j] * id + 16.5f, 31, 16);
        pack_codes(kQ5_0, q, block);
    }
}

// ---- Importance-weighted quantization -----------------------------------------------------------

// The per-element weights of ggml's weighted legacy quantization: importance·sqrt(sigma2 + x²), with
// sigma2 the mean square of the row.
float row_mean_square(const float * x, int64_t n) {
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j)
        sum += x[j] * x[j];
    return sum / static_cast<float>(n);
}

void block_weights(const float * x, const float * importance, float sigma2, float * weight) {
    for (int j = 0; j < kBlock; ++j)
        weight[j] = importance[j] * std::sqrt(sigma2 + x[j] * x[j]);
}

// The symmetric scale search (ggml's make_qx_quants with weights): d = −max/(nmax + 0.1·k) for
// k in −9..9, codes l = clamp(round(x/d), −nmax, nmax − 1), keeping the d whose least-squares refit
// explains most weighted energy. Codes are returned offset by nmax; the refitted scale is returned.
float symmetric_scale_search(const float * x, const float * weight, int nmax, int * q) {
    float amax = 0.0f;
    const float max = first_max(x, kBlock, &amax);
    if (amax < 1e-15f) {
        std::fill(q, q + kBlock, 0);
        return 0.0f;
    }
    auto code = [&](float iscale, int j) { return std::clamp(nearest_int(iscale * x[j]), -nmax, nmax - 1); };
    auto fit = [&](float iscale, float & sumlx, float & suml2) {
        sumlx = suml2 = 0.0f;
        for (int j = 0; j < kBlock; ++j) {
            const auto l = static_cast<float>(code(iscale, j));
            sumlx += weight[j] * x[j] * l;
            suml2 += weight[j] * l * l;
        }
    };
    float iscale = static_cast<float>(-nmax) / max;
    float sumlx = 0.0f;
    float suml2 = 0.0f;
    fit(iscale, sumlx, suml2);
    float best_iscale = iscale;
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int step = -9; step <= 9; ++step) {
        if (step == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
        fit(iscale, sumlx, suml2);
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            best_iscale = iscale;
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    for (int j = 0; j < kBlock; ++j)
        q[j] = code(best_iscale, j) + nmax;
    return scale;
}

// The asymmetric scale-and-minimum search (ggml's make_qkx3_quants with weights, rmin −0.9,
// rdelta 0.05, 36 steps, squared error): for iscale = (nmax − 0.9 + 0.05·k)/(max − min), codes
// l = clamp(round(iscale·(x − min)), 0, nmax), then the weighted least-squares d and m (m clamped to
// <= 0), keeping the lowest weighted error. As in ggml, each step measures from the best m so far.
// Returns d; *min_out is m.
float asymmetric_scale_search(const float * x, const float * weight, int nmax, int * q, float * min_out) {
    float min = x[0];
    float max = x[0];
    float sum_w = weight[0];
    float sum_x = sum_w * x[0];
    for (int j = 1; j < kBlock; ++j) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
        sum_w += weight[j];
        sum_x += weight[j] * x[j];
    }
    if (min > 0.0f) min = 0.0f;
    if (!(max > min)) {
        std::fill(q, q + kBlock, 0);
        *min_out = min;
        return 0.0f;
    }
    const auto top = static_cast<float>(nmax);
    auto code = [&](float iscale, float offset, int j) {
        return std::clamp(nearest_int(iscale * (x[j] - offset)), 0, nmax);
    };
    auto error = [&](const int * l, float scale, float offset) {
        float sum = 0.0f;
        for (int j = 0; j < kBlock; ++j) {
            const float diff = scale * static_cast<float>(l[j]) + offset - x[j];
            sum += weight[j] * diff * diff;
        }
        return sum;
    };
    float iscale = top / (max - min);
    float scale = 1.0f / iscale;
    for (int j = 0; j < kBlock; ++j)
        q[j] = code(iscale, min, j);
    float best_error = error(q, scale, min);
    int trial[kBlock];
    for (int step = 0; step <= 36; ++step) {
        iscale = (-0.9f + 0.05f * static_cast<float>(step) + top) / (max - min);
        float sum_l = 0.0f;
        float sum_l2 = 0.0f;
        float sum_xl = 0.0f;
        for (int j = 0; j < kBlock; ++j) {
            trial[j] = code(iscale, min, j);
            const auto l = static_cast<float>(trial[j]);
            sum_l += weight[j] * l;
            sum_l2 += weight[j] * l * l;
            sum_xl += weight[j] * l * x[j];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (!(det > 0.0f)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
        if (this_min > 0.0f) {
            this_min = 0.0f;
            this_scale = sum_xl / sum_l2;
        }
        const float this_error = error(trial, this_scale, this_min);
        if (this_error < best_error) {
            std::copy(trial, trial + kBlock, q);
            best_error = this_error;
            scale = this_scale;
            min = this_min;
        }
    }
    *min_out = min;
    return scale;
}

// One block by the importance-weighted search of its format: asymmetric with a minimum, symmetric
// (Q5_0) without.
template <const Layout & L>
void quantize_block_weighted(const float * x, const float * weight, unsigned char * block) {
    int q[kBlock];
    if constexpr (L.has_min) {
        float min = 0.0f;
        store_f16(block, asymmetric_scale_search(x, weight, L.top(), q, &min));
        store_f16(block + 2, min);
    } else {
        store_f16(block, symmetric_scale_search(x, weight, 16, q));
    }
    pack_codes(L, q, block);
}

template <const Layout & L>
void quantize_weighted(const float * x, void * y, int64_t n, const float * importance) {
    auto * block = static_cast<unsigned char *>(y);
    const float sigma2 = row_mean_square(x, n);
    float weight[kBlock];
    for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock, importance += kBlock, block += L.bytes) {
        block_weights(x, importance, sigma2, weight);
        quantize_block_weighted<L>(x, weight, block);
    }
}

// ---- Q8_1 ---------------------------------------------------------------------------------------

// Q8_1 (36 bytes): F16 d, F16 s = d·sum(q), int8 q[32]. Its d and q are Q8_0's, so the vectorised
// Q8_0 quantization writes them, a group of blocks at a time; s uses the unrounded d = amax/127.
constexpr size_t kQ8_1Bytes = 36;
constexpr int64_t kQ8Group = 64;

void quantize_q8_1(const float * x, void * y, int64_t n) {
    auto * block = static_cast<unsigned char *>(y);
    ggml_block_q8_0 q8_0[kQ8Group];
    for (int64_t b0 = 0; b0 < n / kBlock; b0 += kQ8Group) {
        const int64_t group = std::min(kQ8Group, n / kBlock - b0);
        ggml_quantize_row(GGML_TYPE_Q8_0, x + b0 * kBlock, q8_0, group * kBlock);
        for (int64_t k = 0; k < group; ++k, block += kQ8_1Bytes) {
            const float * xb = x + (b0 + k) * kBlock;
            float amax = 0.0f;
            for (int j = 0; j < kBlock; ++j)
                amax = std::max(amax, std::fabs(xb[j]));
            int sum = 0;
            for (int8_t q : q8_0[k].qs)
                sum += q;
            store_u16(block, q8_0[k].d);
            store_f16(block + 2, static_cast<float>(sum) * (amax / 127.0f));
            std::memcpy(block + 4, q8_0[k].qs, kBlock);
        }
    }
}

void dequantize_q8_1(const void * x, float * y, int64_t n) {
    const auto * block = static_cast<const unsigned char *>(x);
    for (int64_t b = 0; b < n / kBlock; ++b, block += kQ8_1Bytes, y += kBlock) {
        const float d = load_f16(block);
        for (int j = 0; j < kBlock; ++j)
            y[j] = static_cast<float>(static_cast<int8_t>(block[4 + j])) * d;
    }
}

// Every F16 field of these blocks is a scale (d, and m or s), so each must be finite.
constexpr Format kLegacy[] = {
    {GGML_TYPE_Q4_1, dequantize_blocks<kQ4_1>, quantize_with_min<kQ4_1>, quantize_weighted<kQ4_1>,
     first_bad_f16_scale<kQ4_1.bytes, 0, 2>, GGML_TYPE_Q8_1, false},
    {GGML_TYPE_Q5_0, dequantize_blocks<kQ5_0>, quantize_q5_0, quantize_weighted<kQ5_0>,
     first_bad_f16_scale<kQ5_0.bytes, 0>, GGML_TYPE_Q8_0, false},
    {GGML_TYPE_Q5_1, dequantize_blocks<kQ5_1>, quantize_with_min<kQ5_1>, quantize_weighted<kQ5_1>,
     first_bad_f16_scale<kQ5_1.bytes, 0, 2>, GGML_TYPE_Q8_1, false},
    {GGML_TYPE_Q8_1, dequantize_q8_1, quantize_q8_1, nullptr, first_bad_f16_scale<kQ8_1Bytes, 0, 2>,
     GGML_TYPE_Q8_1, false},
};

}  // namespace

std::span<const Format> legacy_formats() { return kLegacy; }

}  // namespace ggx::core::quant
