// The K-quants: super-blocks of 256 values split into sub-blocks of 16 or 32, each with a small
// integer scale (and, for Q2_K, Q4_K and Q5_K, a minimum) that is itself quantized against F16
// super-scales; Q8_K is the int8 format their dot products quantize activations to.
//
// The quantizers are ggml's searches (the scale grids, refinement passes and iteration counts of
// its reference and importance-weighted K-quant quantizers), written so that every float operation
// happens in ggml's order: the file is compiled without contraction (src/CMakeLists.txt), so the
// blocks have ggml's bits. The one deliberate difference: a scale or minimum level that would not fit
// its 6-bit field (possible only when a sub-block's fitted scale is negative) is clamped to 63
// before packing, where ggml's importance-weighted Q4_K writes the overflowing bits.
#include "core/quant/format.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

namespace ggx::core::quant {

namespace {

constexpr int kValues = 256;           // values of a super-block
constexpr float kNegligible = 1e-15f;  // a sub-block whose largest magnitude is below this is zero

struct BlockQ2K {
    uint8_t scales[16];  // low nibble: scale level, high nibble: minimum level
    uint8_t qs[64];      // 2-bit levels
    ggml_fp16_t d, dmin;
};
struct BlockQ3K {
    uint8_t hmask[32];   // high bit of each 3-bit level
    uint8_t qs[64];      // low 2 bits of each level
    uint8_t scales[12];  // sixteen 6-bit scale levels
    ggml_fp16_t d;
};
struct BlockQ4K {
    ggml_fp16_t d, dmin;
    uint8_t scales[12];  // eight 6-bit scale levels and eight 6-bit minimum levels
    uint8_t qs[128];     // 4-bit levels
};
struct BlockQ5K {
    ggml_fp16_t d, dmin;
    uint8_t scales[12];  // as in Q4_K
    uint8_t qh[32];      // fifth bit of each level
    uint8_t qs[128];     // low 4 bits of each level
};
struct BlockQ6K {
    uint8_t ql[128];  // low 4 bits of each level
    uint8_t qh[64];   // high 2 bits of each level
    int8_t scales[16];
    ggml_fp16_t d;
};
struct BlockQ8K {
    float d;
    int8_t qs[256];
    int16_t bsums[16];  // sums of each 16 consecutive qs
};
static_assert(sizeof(BlockQ2K) == 84 && sizeof(BlockQ3K) == 110 && sizeof(BlockQ4K) == 144 &&
              sizeof(BlockQ5K) == 176 && sizeof(BlockQ6K) == 210 && sizeof(BlockQ8K) == 292);

float from_f16(ggml_fp16_t h) { return ggml_fp16_to_fp32(h); }
ggml_fp16_t to_f16(float f) { return ggml_fp32_to_fp16(f); }

// Nearest integer, ties to even: adding 1.5 * 2^23 makes the float addition do the rounding and
// leaves the integer in the low mantissa bits (ggml's rounding for these formats, so the same
// levels). Exact for |v| < 2^22; other inputs, NaN included, give some value in [-2^22, 2^22).
int nearest_int(float v) {
    const float shifted = v + 12582912.0f;
    return static_cast<int>(std::bit_cast<uint32_t>(shifted) & 0x007fffffu) - 0x00400000;
}

// ---- Level searches -----------------------------------------------------------------------------

// The value of largest magnitude of x[0..n) (the first on ties) and that magnitude.
struct Extreme {
    float value = 0;
    float magnitude = 0;
};
Extreme extreme(int n, const float * x) {
    Extreme e;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > e.magnitude) e = {x[i], std::fabs(x[i])};
    return e;
}

struct LevelSums {
    float sumlx = 0;  // sum of w x l
    float suml2 = 0;  // sum of w l^2
};

// Coordinate descent on levels L (in [lo, hi]) for the least-squares scale sumlx / suml2: each
// level in turn moves to the one nearest x / scale-without-it while that raises sumlx^2 / suml2;
// up to five sweeps. ggml runs it with two entry rules: strict (both partial sums positive before a
// move) or not (only sumlx, with suml2 checked after).
template <class Level>
void refine_levels(int n, const float * x, const float * w, int lo, int hi, bool strict, Level * L,
                   LevelSums & sums) {
    for (int sweep = 0; sweep < 5; ++sweep) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            const float old_l = static_cast<float>(L[i]);
            float slx = sums.sumlx - w[i] * x[i] * old_l;
            float sl2 = sums.suml2 - w[i] * old_l * old_l;
            if (!(slx > 0) || (strict && !(sl2 > 0))) continue;
            const int l = std::clamp(nearest_int(x[i] * sl2 / slx), lo, hi);
            if (l == static_cast<int>(L[i])) continue;
            const auto fl = static_cast<float>(l);
            slx += w[i] * x[i] * fl;
            sl2 += w[i] * fl * fl;
            if ((strict || sl2 > 0) && slx * slx * sums.suml2 > sums.sumlx * sums.sumlx * sl2) {
                L[i] = static_cast<Level>(l);
                sums = {slx, sl2};
                ++changed;
            }
        }
        if (changed == 0) break;
    }
}

// Signed levels L[i] = nmax + clamp(round(s x[i]), -nmax, nmax - 1) of a sub-block and its scale:
// s = -(nmax + k/10) / m for k = 0, -9..9 (m the value of largest magnitude), keeping the s whose
// weighted least-squares scale fits best (ggml's make_qx_quants).
float fit_signed_levels(int n, int nmax, const float * x, const float * w, int8_t * L) {
    const Extreme e = extreme(n, x);
    if (e.magnitude < kNegligible) {
        std::fill_n(L, n, int8_t{0});
        return 0;
    }
    auto level = [&](float iscale, int i) { return std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1); };
    auto sums_at = [&](float iscale) {
        LevelSums s;
        for (int i = 0; i < n; ++i) {
            const auto l = static_cast<float>(level(iscale, i));
            s.sumlx += w[i] * x[i] * l;
            s.suml2 += w[i] * l * l;
        }
        return s;
    };
    auto keep = [&](float iscale) {
        for (int i = 0; i < n; ++i)
            L[i] = static_cast<int8_t>(nmax + level(iscale, i));
    };
    auto iscale_at = [&](int k) {
        return -(static_cast<float>(nmax) + 0.1f * static_cast<float>(k)) / e.value;
    };
    const LevelSums first = sums_at(iscale_at(0));
    keep(iscale_at(0));
    float scale = first.suml2 != 0 ? first.sumlx / first.suml2 : 0.0f;
    float best = scale * first.sumlx;
    for (int k = -9; k <= 9; ++k) {
        if (k == 0) continue;
        const LevelSums s = sums_at(iscale_at(k));
        if (s.suml2 > 0 && s.sumlx * s.sumlx > best * s.suml2) {
            keep(iscale_at(k));
            scale = s.sumlx / s.suml2;
            best = scale * s.sumlx;
        }
    }
    return scale;
}

// Q3_K's sub-block search (ggml's make_q3_quants): levels at s = -nmax / m, then refine_levels with
// weights x^2; L[i] in [0, 2 nmax).
float fit_q3_levels(int n, int nmax, const float * x, int8_t * L) {
    const Extreme e = extreme(n, x);
    if (e.magnitude < kNegligible) {
        std::fill_n(L, n, int8_t{0});
        return 0;
    }
    float w[32];
    const float iscale = -static_cast<float>(nmax) / e.value;
    LevelSums sums;
    for (int i = 0; i < n; ++i) {
        const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l);
        w[i] = x[i] * x[i];
        sums.sumlx += w[i] * x[i] * static_cast<float>(l);
        sums.suml2 += w[i] * static_cast<float>(l) * static_cast<float>(l);
    }
    refine_levels(n, x, w, -nmax, nmax - 1, false, L, sums);
    for (int i = 0; i < n; ++i)
        L[i] = static_cast<int8_t>(L[i] + nmax);
    return sums.suml2 > 0 ? sums.sumlx / sums.suml2 : 0.0f;
}

// Non-negative levels L[i] = min(nmax, round(s x[i])) of the sub-block scales (or minimums) x of a
// super-block under importance weights w, and their scale (ggml's make_qp_quants): the best of
// s = (nmax + k/10) / max for k = 0, -4..4 by weighted error, then refine_levels.
float fit_scale_levels(int n, int nmax, const float * x, const float * w, uint8_t * L) {
    float max = 0;
    for (int i = 0; i < n; ++i)
        max = std::max(max, x[i]);
    if (max < kNegligible) {
        std::fill_n(L, n, uint8_t{0});
        return 0;
    }
    float iscale = static_cast<float>(nmax) / max;
    for (int i = 0; i < n; ++i)
        L[i] = static_cast<uint8_t>(nearest_int(iscale * x[i]));
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - (1 / iscale) * static_cast<float>(L[i]);
        best_mse += w[i] * diff * diff;
    }
    for (int k = -4; k <= 4; ++k) {
        if (k == 0) continue;
        const float iscale_k = (0.1f * static_cast<float>(k) + static_cast<float>(nmax)) / max;
        const float scale_k = 1 / iscale_k;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::min(nmax, nearest_int(iscale_k * x[i]));
            const float diff = x[i] - scale_k * static_cast<float>(l);
            mse += w[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_k;
        }
    }
    LevelSums sums;
    for (int i = 0; i < n; ++i) {
        const int l = std::min(nmax, nearest_int(iscale * x[i]));
        L[i] = static_cast<uint8_t>(l);
        sums.sumlx += w[i] * x[i] * static_cast<float>(l);
        sums.suml2 += w[i] * static_cast<float>(l) * static_cast<float>(l);
    }
    refine_levels(n, x, w, std::numeric_limits<int>::min(), nmax, true, L, sums);
    return sums.suml2 > 0.0f ? sums.sumlx / sums.suml2 : 0.0f;
}

// The search of a scale and a minimum for x ~ scale * L + min with L in [0, nmax] and min <= 0.
struct OffsetSearch {
    int nmax;
    float rmin, rdelta;  // candidate steps (max - min) / (nmax + rmin + rdelta k), k = 0..nstep
    int nstep;
    bool absolute_error;  // weigh |error| rather than error^2
};

// Levels L of a sub-block, *neg_min = -min and the returned scale under weights w: the start at
// (max - min) / nmax, then each candidate step with scale and min refitted by weighted least
// squares, keeping the least weighted error (ggml's make_qkx2_quants and make_qkx3_quants).
float fit_offset_levels(int n, const float * x, const float * w, const OffsetSearch & search, uint8_t * L,
                        float * neg_min) {
    float min = x[0];
    float max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::fill_n(L, n, uint8_t{0});
        *neg_min = -min;
        return 0;
    }
    const int nmax = search.nmax;
    auto error_of = [&](float diff) { return search.absolute_error ? std::fabs(diff) : diff * diff; };
    auto level = [&](float iscale, int i) { return std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax); };
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = static_cast<uint8_t>(level(iscale, i));
        best_error += w[i] * error_of(scale * static_cast<float>(L[i]) + min - x[i]);
    }
    // Each candidate grid starts at the best minimum found so far.
    uint8_t candidate[32];
    for (int step = 0; step <= search.nstep; ++step) {
        iscale =
            (search.rmin + search.rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = level(iscale, i);
            candidate[i] = static_cast<uint8_t>(l);
            const auto fl = static_cast<float>(l);
            sum_l += w[i] * fl;
            sum_l2 += w[i] * fl * fl;
            sum_xl += w[i] * fl * x[i];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (!(det > 0)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float error = 0;
        for (int i = 0; i < n; ++i)
            error += w[i] * error_of(this_scale * static_cast<float>(candidate[i]) + this_min - x[i]);
        if (error < best_error) {
            std::copy_n(candidate, n, L);
            best_error = error;
            scale = this_scale;
            min = this_min;
        }
    }
    *neg_min = -min;
    return scale;
}

// ---- Requantization against the stored scales ----------------------------------------------------

// L = clamp(round((x + dmin m_j) / (d s_j)), 0, nmax) for each sub-block j of sub values whose step
// d s_j is not zero (the others keep the levels of the search).
void requantize_offset(const float * x, int sub, float d, float dmin, const uint8_t * s, const uint8_t * m,
                       int nmax, uint8_t * L) {
    for (int j = 0; j < kValues / sub; ++j) {
        const float step = d * static_cast<float>(s[j]);
        if (step == 0) continue;
        const float offset = dmin * static_cast<float>(m[j]);
        for (int i = j * sub; i < (j + 1) * sub; ++i)
            L[i] = static_cast<uint8_t>(std::clamp(nearest_int((x[i] + offset) / step), 0, nmax));
    }
}

// L = half + clamp(round(x / (d s_j)), -half, half - 1) for each sub-block j of 16 values whose step
// is not zero.
void requantize_signed(const float * x, float d, const int * s, int half, int8_t * L) {
    for (int j = 0; j < kValues / 16; ++j) {
        const float step = d * static_cast<float>(s[j]);
        if (step == 0) continue;
        for (int i = j * 16; i < (j + 1) * 16; ++i)
            L[i] = static_cast<int8_t>(half + std::clamp(nearest_int(x[i] / step), -half, half - 1));
    }
}

// ---- Packing ------------------------------------------------------------------------------------

// The 2-bit fields of Q2_K and Q3_K: value v of each 128 is in byte v % 32 of its 32, bits
// 2 (v / 32).
template <class Level>
void pack_2bit(const Level * L, uint8_t * qs) {
    for (int v = 0; v < kValues; ++v) {
        const int byte = v / 128 * 32 + v % 32;
        if (v % 128 < 32) qs[byte] = 0;
        qs[byte] = static_cast<uint8_t>(qs[byte] | ((L[v] & 3) << (2 * (v % 128 / 32))));
    }
}
int unpack_2bit(const uint8_t * qs, int v) { return (qs[v / 128 * 32 + v % 32] >> (2 * (v % 128 / 32))) & 3; }

// The 4-bit fields of Q4_K and Q5_K: value v of each 64 is in byte v % 32 of its 32, the low nibble
// for the first 32.
void pack_nibbles(const uint8_t * L, uint8_t * qs) {
    for (int v = 0; v < kValues; ++v) {
        const int byte = v / 64 * 32 + v % 32;
        if (v % 64 < 32)
            qs[byte] = L[v] & 0xf;
        else
            qs[byte] = static_cast<uint8_t>(qs[byte] | ((L[v] & 0xf) << 4));
    }
}
int unpack_nibble(const uint8_t * qs, int v) {
    return (qs[v / 64 * 32 + v % 32] >> (v % 64 < 32 ? 0 : 4)) & 0xf;
}

// One bit per value (Q3_K's hmask, Q5_K's qh): value v is bit v / 32 of byte v % 32.
void pack_bit_planes(const uint8_t * bits, uint8_t * plane) {
    std::memset(plane, 0, kValues / 8);
    for (int v = 0; v < kValues; ++v)
        plane[v % 32] = static_cast<uint8_t>(plane[v % 32] | (bits[v] << (v / 32)));
}
int unpack_bit_plane(const uint8_t * plane, int v) { return (plane[v % 32] >> (v / 32)) & 1; }

// Q4_K/Q5_K's eight 6-bit scale and minimum levels in 12 bytes: sub-blocks 0-3 in the low 6 bits of
// bytes 0-3 (scales) and 4-7 (minimums); sub-blocks 4-7 in the nibbles of bytes 8-11, their top two
// bits in the top bits of bytes 0-7.
void pack_scale_min_6bit(const uint8_t * scale, const uint8_t * min, uint8_t * out) {
    for (int j = 0; j < 8; ++j) {
        const uint8_t s = std::min<uint8_t>(63, scale[j]);
        const uint8_t m = std::min<uint8_t>(63, min[j]);
        if (j < 4) {
            out[j] = s;
            out[j + 4] = m;
        } else {
            out[j + 4] = static_cast<uint8_t>((s & 0xf) | ((m & 0xf) << 4));
            out[j - 4] = static_cast<uint8_t>(out[j - 4] | ((s >> 4) << 6));
            out[j] = static_cast<uint8_t>(out[j] | ((m >> 4) << 6));
        }
    }
}
void unpack_scale_min_6bit(const uint8_t * in, uint8_t * scale, uint8_t * min) {
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            scale[j] = in[j] & 63;
            min[j] = in[j + 4] & 63;
        } else {
            scale[j] = static_cast<uint8_t>((in[j + 4] & 0xf) | ((in[j - 4] >> 6) << 4));
            min[j] = static_cast<uint8_t>((in[j + 4] >> 4) | ((in[j] >> 6) << 4));
        }
    }
}

// Q3_K's sixteen 6-bit scale levels in 12 bytes: low nibbles of 0-7 in bytes 0-7, of 8-15 in their
// high nibbles; the top two bits of level j in byte 8 + j % 4, bits 2 (j / 4).
void pack_q3_scales(const int8_t * levels, uint8_t * out) {
    std::memset(out, 0, 12);
    for (int j = 0; j < 16; ++j) {
        const int l = levels[j];
        out[j % 8] = static_cast<uint8_t>(out[j % 8] | ((l & 0xf) << (j < 8 ? 0 : 4)));
        out[8 + j % 4] = static_cast<uint8_t>(out[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
    }
}
// The signed scales (level - 32).
void unpack_q3_scales(const uint8_t * in, int * scales) {
    for (int j = 0; j < 16; ++j) {
        const int low = (in[j % 8] >> (j < 8 ? 0 : 4)) & 0xf;
        const int high = (in[8 + j % 4] >> (2 * (j / 4))) & 3;
        scales[j] = (low | (high << 4)) - 32;
    }
}

// ---- Q2_K, Q4_K, Q5_K: scale and minimum per sub-block -----------------------------------------

// Per-sub-block scales and minimums found by fit_offset_levels, the levels, and the sum of each
// sub-block's weights.
struct OffsetFits {
    float scale[16], min[16], weight_sum[16];
    uint8_t L[kValues];
};

// ggml's reference weights: |x| for Q2_K's 16-value sub-blocks, rms(sub-block) + |x| for the 32s.
void reference_offset_fits(const float * x, int sub, const OffsetSearch & search, OffsetFits & fits) {
    float w[32];
    for (int j = 0; j < kValues / sub; ++j) {
        const float * xs = x + j * sub;
        float rms = 0;
        if (sub == 32) {
            float sum_x2 = 0;
            for (int i = 0; i < sub; ++i)
                sum_x2 += xs[i] * xs[i];
            rms = std::sqrt(sum_x2 / static_cast<float>(sub));
        }
        for (int i = 0; i < sub; ++i)
            w[i] = sub == 32 ? rms + std::fabs(xs[i]) : std::fabs(xs[i]);
        fits.scale[j] = fit_offset_levels(sub, xs, w, search, fits.L + j * sub, &fits.min[j]);
    }
}

// Importance weights q_i sqrt(sigma2 + x_i^2), sigma2 = spread * mean(x^2) over the super-block.
void weight_by_importance(const float * x, const float * importance, float spread, float * w) {
    float sum_x2 = 0;
    for (int i = 0; i < kValues; ++i)
        sum_x2 += x[i] * x[i];
    const float sigma2 = spread * sum_x2 / kValues;
    for (int i = 0; i < kValues; ++i)
        w[i] = importance[i] * std::sqrt(sigma2 + x[i] * x[i]);
}

void weighted_offset_fits(const float * x, const float * importance, int sub, int nmax, float spread,
                          OffsetFits & fits) {
    float w[kValues];
    weight_by_importance(x, importance, spread, w);
    const OffsetSearch search = {nmax, -0.9f, 0.05f, 36, false};
    for (int j = 0; j < kValues / sub; ++j) {
        const float * ws = w + j * sub;
        fits.weight_sum[j] = 0;
        for (int i = 0; i < sub; ++i)
            fits.weight_sum[j] += ws[i];
        fits.scale[j] = fit_offset_levels(sub, x + j * sub, ws, search, fits.L + j * sub, &fits.min[j]);
    }
}

// The reference super-scale of n sub-block scales (or minimums): the largest over levels, each
// level rounding value / super-scale; zero and zero levels when no value is positive.
float reference_levels(const float * values, int n, int levels, uint8_t * L) {
    float max = 0;
    for (int j = 0; j < n; ++j)
        if (values[j] > max) max = values[j];
    if (!(max > 0)) {
        std::fill_n(L, n, uint8_t{0});
        return 0;
    }
    const float inverse = static_cast<float>(levels) / max;
    for (int j = 0; j < n; ++j)
        L[j] = static_cast<uint8_t>(nearest_int(inverse * values[j]));
    return max / static_cast<float>(levels);
}

void store_q2_k(const float * x, BlockQ2K & b, OffsetFits & fits, const uint8_t * ls, const uint8_t * lm) {
    uint8_t s[16], m[16];
    for (int j = 0; j < 16; ++j) {
        b.scales[j] = static_cast<uint8_t>(ls[j] | (lm[j] << 4));
        s[j] = b.scales[j] & 0xf;
        m[j] = b.scales[j] >> 4;
    }
    requantize_offset(x, 16, from_f16(b.d), from_f16(b.dmin), s, m, 3, fits.L);
    pack_2bit(fits.L, b.qs);
}

void quantize_block_q2_k(const float * x, BlockQ2K & b) {
    OffsetFits fits;
    reference_offset_fits(x, 16, {3, -0.5f, 0.1f, 15, true}, fits);
    uint8_t ls[16], lm[16];
    b.d = to_f16(reference_levels(fits.scale, 16, 15, ls));
    b.dmin = to_f16(reference_levels(fits.min, 16, 15, lm));
    store_q2_k(x, b, fits, ls, lm);
}

void quantize_weighted_block_q2_k(const float * x, const float * importance, BlockQ2K & b) {
    OffsetFits fits;
    weighted_offset_fits(x, importance, 16, 3, 1.0f, fits);
    uint8_t ls[16], lm[16];
    b.d = to_f16(fit_scale_levels(16, 15, fits.scale, fits.weight_sum, ls));
    b.dmin = to_f16(fit_scale_levels(16, 15, fits.min, fits.weight_sum, lm));
    store_q2_k(x, b, fits, ls, lm);
}

// Q4_K and Q5_K: the stored scales, the requantized levels (nmax 15 or 31).
template <class Block>
void store_scale_min_6bit(const float * x, Block & b, OffsetFits & fits, const uint8_t * ls,
                          const uint8_t * lm, int nmax) {
    pack_scale_min_6bit(ls, lm, b.scales);
    uint8_t s[8], m[8];
    unpack_scale_min_6bit(b.scales, s, m);
    requantize_offset(x, 32, from_f16(b.d), from_f16(b.dmin), s, m, nmax, fits.L);
}

template <class Block>
void reference_scale_min_6bit(const float * x, Block & b, OffsetFits & fits, const OffsetSearch & search) {
    reference_offset_fits(x, 32, search, fits);
    uint8_t ls[8], lm[8];
    b.d = to_f16(reference_levels(fits.scale, 8, 63, ls));
    b.dmin = to_f16(reference_levels(fits.min, 8, 63, lm));
    store_scale_min_6bit(x, b, fits, ls, lm, search.nmax);
}

template <class Block>
void weighted_scale_min_6bit(const float * x, const float * importance, Block & b, OffsetFits & fits,
                             int nmax) {
    weighted_offset_fits(x, importance, 32, nmax, 2.0f, fits);
    uint8_t ls[8], lm[8];
    b.d = to_f16(fit_scale_levels(8, 63, fits.scale, fits.weight_sum, ls));
    b.dmin = to_f16(fit_scale_levels(8, 63, fits.min, fits.weight_sum, lm));
    store_scale_min_6bit(x, b, fits, ls, lm, nmax);
}

void pack_q5_k(const uint8_t * L, BlockQ5K & b) {
    uint8_t high[kValues];
    for (int v = 0; v < kValues; ++v)
        high[v] = L[v] >> 4;
    pack_nibbles(L, b.qs);
    pack_bit_planes(high, b.qh);
}

void quantize_block_q4_k(const float * x, BlockQ4K & b) {
    OffsetFits fits;
    reference_scale_min_6bit(x, b, fits, {15, -1.0f, 0.1f, 20, false});
    pack_nibbles(fits.L, b.qs);
}
void quantize_weighted_block_q4_k(const float * x, const float * importance, BlockQ4K & b) {
    OffsetFits fits;
    weighted_scale_min_6bit(x, importance, b, fits, 15);
    pack_nibbles(fits.L, b.qs);
}
void quantize_block_q5_k(const float * x, BlockQ5K & b) {
    OffsetFits fits;
    reference_scale_min_6bit(x, b, fits, {31, -0.5f, 0.1f, 15, false});
    pack_q5_k(fits.L, b);
}
void quantize_weighted_block_q5_k(const float * x, const float * importance, BlockQ5K & b) {
    OffsetFits fits;
    weighted_scale_min_6bit(x, importance, b, fits, 31);
    pack_q5_k(fits.L, b);
}

// ---- Q3_K and Q6_K: signed levels, one scale per 16 values --------------------------------------

void store_q3_k(const float * x, BlockQ3K & b, const int8_t * scale_levels, int8_t * L) {
    pack_q3_scales(scale_levels, b.scales);
    int s[16];
    unpack_q3_scales(b.scales, s);
    requantize_signed(x, from_f16(b.d), s, 4, L);
    uint8_t high[kValues], low[kValues];
    for (int v = 0; v < kValues; ++v) {
        high[v] = L[v] > 3 ? 1 : 0;
        low[v] = static_cast<uint8_t>(L[v] & 3);
    }
    pack_bit_planes(high, b.hmask);
    pack_2bit(low, b.qs);
}

void quantize_block_q3_k(const float * x, BlockQ3K & b) {
    int8_t L[kValues];
    float scales[16];
    for (int j = 0; j < 16; ++j)
        scales[j] = fit_q3_levels(16, 4, x + 16 * j, L + 16 * j);
    const Extreme e = extreme(16, scales);
    int8_t levels[16] = {};
    if (e.value != 0) {
        const float iscale = -32.0f / e.value;
        for (int j = 0; j < 16; ++j) {
            // ggml keeps the rounded level in an int8 before clamping it to [-32, 31].
            const auto l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
            levels[j] = static_cast<int8_t>(std::clamp<int>(l, -32, 31) + 32);
        }
        b.d = to_f16(1 / iscale);
    } else {
        b.d = to_f16(0.0f);
    }
    store_q3_k(x, b, levels, L);
}

void quantize_weighted_block_q3_k(const float * x, const float * importance, BlockQ3K & b) {
    float w[kValues];
    weight_by_importance(x, importance, 2.0f, w);
    int8_t L[kValues];
    float scales[16], weight_sum[16];
    for (int j = 0; j < 16; ++j) {
        weight_sum[j] = 0;
        for (int i = 0; i < 16; ++i)
            weight_sum[j] += w[16 * j + i];
        scales[j] = fit_signed_levels(16, 4, x + 16 * j, w + 16 * j, L + 16 * j);
    }
    int8_t levels[16];
    b.d = to_f16(fit_signed_levels(16, 32, scales, weight_sum, levels));
    store_q3_k(x, b, levels, L);
}

// weights: the 256 weights of the sub-block fits (x^2 for the reference quantization).
void quantize_block_q6_k(const float * x, const float * weights, BlockQ6K & b) {
    int8_t L[kValues];
    float scales[16];
    for (int j = 0; j < 16; ++j)
        scales[j] = fit_signed_levels(16, 32, x + 16 * j, weights + 16 * j, L + 16 * j);
    const Extreme e = extreme(16, scales);
    if (e.magnitude < kNegligible) {
        std::memset(&b, 0, sizeof b);
        return;
    }
    const float iscale = -128.0f / e.value;
    b.d = to_f16(1 / iscale);
    int s[16];
    for (int j = 0; j < 16; ++j) {
        b.scales[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[j])));
        s[j] = b.scales[j];
    }
    requantize_signed(x, from_f16(b.d), s, 32, L);
    for (int v = 0; v < kValues; ++v) {
        const int half = v / 128, group = v % 128 / 32, lane = v % 32;
        uint8_t & low = b.ql[half * 64 + (group & 1) * 32 + lane];
        uint8_t & high = b.qh[half * 32 + lane];
        if (group < 2) low = 0;
        if (group == 0) high = 0;
        low = static_cast<uint8_t>(low | ((L[v] & 0xf) << (group < 2 ? 0 : 4)));
        high = static_cast<uint8_t>(high | ((L[v] >> 4) << (2 * group)));
    }
}

void quantize_reference_block_q6_k(const float * x, BlockQ6K & b) {
    float squares[kValues];
    for (int i = 0; i < kValues; ++i)
        squares[i] = x[i] * x[i];
    quantize_block_q6_k(x, squares, b);
}

// ---- Q8_K ---------------------------------------------------------------------------------------

void quantize_block_q8_k(const float * x, BlockQ8K & b) {
    const Extreme e = extreme(kValues, x);
    std::memset(&b, 0, sizeof b);
    if (e.magnitude == 0) return;
    const float iscale = -127.0f / e.value;
    for (int i = 0; i < kValues; ++i)
        b.qs[i] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[i])));
    for (int j = 0; j < 16; ++j)
        for (int i = 0; i < 16; ++i)
            b.bsums[j] = static_cast<int16_t>(b.bsums[j] + b.qs[16 * j + i]);
    b.d = 1 / iscale;
}

// ---- Dequantization -----------------------------------------------------------------------------

void dequantize_block(const BlockQ2K & b, float * y) {
    const float d = from_f16(b.d), dmin = from_f16(b.dmin);
    for (int v = 0; v < kValues; ++v) {
        const uint8_t sm = b.scales[v / 16];
        const float step = d * static_cast<float>(sm & 0xf);
        const float offset = dmin * static_cast<float>(sm >> 4);
        y[v] = step * static_cast<float>(unpack_2bit(b.qs, v)) - offset;
    }
}

void dequantize_block(const BlockQ3K & b, float * y) {
    const float d = from_f16(b.d);
    int s[16];
    unpack_q3_scales(b.scales, s);
    for (int v = 0; v < kValues; ++v) {
        const int q = unpack_2bit(b.qs, v) - (unpack_bit_plane(b.hmask, v) ? 0 : 4);
        y[v] = d * static_cast<float>(s[v / 16]) * static_cast<float>(q);
    }
}

void dequantize_scale_min_6bit(const uint8_t * packed, float d, float dmin, const int * q, float * y) {
    uint8_t s[8], m[8];
    unpack_scale_min_6bit(packed, s, m);
    for (int v = 0; v < kValues; ++v)
        y[v] = d * static_cast<float>(s[v / 32]) * static_cast<float>(q[v]) -
               dmin * static_cast<float>(m[v / 32]);
}

void dequantize_block(const BlockQ4K & b, float * y) {
    int q[kValues];
    for (int v = 0; v < kValues; ++v)
        q[v] = unpack_nibble(b.qs, v);
    dequantize_scale_min_6bit(b.scales, from_f16(b.d), from_f16(b.dmin), q, y);
}

void dequantize_block(const BlockQ5K & b, float * y) {
    int q[kValues];
    for (int v = 0; v < kValues; ++v)
        q[v] = unpack_nibble(b.qs, v) | (unpack_bit_plane(b.qh, v) << 4);
    dequantize_scale_min_6bit(b.scales, from_f16(b.d), from_f16(b.dmin), q, y);
}

void dequantize_block(const BlockQ6K & b, float * y) {
    const float d = from_f16(b.d);
    for (int v = 0; v < kValues; ++v) {
        const int half = v / 128, group = v % 128 / 32, lane = v % 32;
        const int low = (b.ql[half * 64 + (group & 1) * 32 + lane] >> (group < 2 ? 0 : 4)) & 0xf;
        const int high = (b.qh[half * 32 + lane] >> (2 * group)) & 3;
        y[v] = d * static_cast<float>(b.scales[v / 16]) * static_cast<float>((low | (high << 4)) - 32);
    }
}

void dequantize_block(const BlockQ8K & b, float * y) {
    for (int v = 0; v < kValues; ++v)
        y[v] = b.d * static_cast<float>(b.qs[v]);
}

// ---- Row functions ------------------------------------------------------------------------------

template <class Block>
void dequantize_row(const void * x, float * y, int64_t n) {
    const auto * blocks = static_cast<const Block *>(x);
    for (int64_t i = 0; i < n / kValues; ++i)
        dequantize_block(blocks[i], y + i * kValues);
}

template <class Block, void (*QuantizeBlock)(const float *, Block &)>
void quantize_row(const float * x, void * y, int64_t n) {
    auto * blocks = static_cast<Block *>(y);
    for (int64_t i = 0; i < n / kValues; ++i)
        QuantizeBlock(x + i * kValues, blocks[i]);
}

template <class Block, void (*QuantizeBlock)(const float *, const float *, Block &)>
void quantize_row_weighted(const float * x, void * y, int64_t n, const float * importance) {
    auto * blocks = static_cast<Block *>(y);
    for (int64_t i = 0; i < n / kValues; ++i)
        QuantizeBlock(x + i * kValues, importance + i * kValues, blocks[i]);
}

int64_t first_bad_q8_k_scale(const void * x, int64_t n_blocks) {
    const auto * blocks = static_cast<const BlockQ8K *>(x);
    for (int64_t i = 0; i < n_blocks; ++i)
        if (!std::isfinite(blocks[i].d)) return i;
    return -1;
}

constexpr Format kKQuants[] = {
    {GGML_TYPE_Q2_K, dequantize_row<BlockQ2K>, quantize_row<BlockQ2K, quantize_block_q2_k>,
     quantize_row_weighted<BlockQ2K, quantize_weighted_block_q2_k>,
     first_bad_f16_scale<sizeof(BlockQ2K), offsetof(BlockQ2K, d), offsetof(BlockQ2K, dmin)>, GGML_TYPE_Q8_K,
     false},
    {GGML_TYPE_Q3_K, dequantize_row<BlockQ3K>, quantize_row<BlockQ3K, quantize_block_q3_k>,
     quantize_row_weighted<BlockQ3K, quantize_weighted_block_q3_k>,
     first_bad_f16_scale<sizeof(BlockQ3K), offsetof(BlockQ3K, d)>, GGML_TYPE_Q8_K, false},
    {GGML_TYPE_Q4_K, dequantize_row<BlockQ4K>, quantize_row<BlockQ4K, quantize_block_q4_k>,
     quantize_row_weighted<BlockQ4K, quantize_weighted_block_q4_k>,
     first_bad_f16_scale<sizeof(BlockQ4K), offsetof(BlockQ4K, d), offsetof(BlockQ4K, dmin)>, GGML_TYPE_Q8_K,
     false},
    {GGML_TYPE_Q5_K, dequantize_row<BlockQ5K>, quantize_row<BlockQ5K, quantize_block_q5_k>,
     quantize_row_weighted<BlockQ5K, quantize_weighted_block_q5_k>,
     first_bad_f16_scale<sizeof(BlockQ5K), offsetof(BlockQ5K, d), offsetof(BlockQ5K, dmin)>, GGML_TYPE_Q8_K,
     false},
    {GGML_TYPE_Q6_K, dequantize_row<BlockQ6K>, quantize_row<BlockQ6K, quantize_reference_block_q6_k>,
     quantize_row_weighted<BlockQ6K, quantize_block_q6_k>,
     first_bad_f16_scale<sizeof(BlockQ6K), offsetof(BlockQ6K, d)>, GGML_TYPE_Q8_K, false},
    // ggml gives Q8_K no dot product of its own: its vec_dot_type is F32 (type 0).
    {GGML_TYPE_Q8_K, dequantize_row<BlockQ8K>, quantize_row<BlockQ8K, quantize_block_q8_k>, nullptr,
     first_bad_q8_k_scale, GGML_TYPE_F32, false},
};

}  // namespace

std::span<const Format> k_quant_formats() { return kKQuants; }

}  // namespace ggx::core::quant
