// ggml's grid-based i-quants: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M. Each super-block
// of 256 values has an F16 scale d, small integer sub-block scales, and per group of 8 (IQ3: 4) values
// the index of a point of a fixed grid (iq_grids.h). IQ2/IQ3 points are magnitudes with one sign bit
// per value (XXS/XS: 7 stored bits per 8 values, the 8th making the count of minus signs even); IQ1
// points are in {-1, 0, 1}, shifted by ±1/8.
//
// The quantizer is ours: per sub-block, the scale with the best weighted fit over a few candidates
// (each value group snapped to the nearest grid point among a precomputed neighbour list); then the
// super-block scale among a few candidates, the sub-block scales rounded to it and the groups refit.
#include "core/quant/block_math.h"
#include "core/quant/format.h"
#include "core/quant/iq_grids.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <span>
#include <vector>

namespace ggx::core::quant {

namespace {

constexpr int kBlock = 256;

// ---- Grids and their neighbour lists ------------------------------------------------------------

// A grid as floats, with for each point of the lattice of its levels (each coordinate one of the
// grid's distinct values) the grid points nearest to it: snapping a vector to the lattice and then
// scanning that short list finds the nearest grid point without a scan of the whole grid.
struct Grid {
    int dim = 0;
    std::vector<float> points;    // size() / dim points
    std::vector<float> levels;    // ascending
    std::vector<uint32_t> first;  // neighbours of lattice point p: list[first[p] .. first[p + 1])
    std::vector<uint16_t> list;

    const float * point(int index) const { return points.data() + static_cast<size_t>(index) * dim; }
};

template <typename T, size_t N, size_t Dim>
Grid make_grid(const T (&table)[N][Dim]) {
    Grid grid;
    grid.dim = static_cast<int>(Dim);
    for (const auto & point : table)
        for (T v : point)
            grid.points.push_back(static_cast<float>(v));
    grid.levels = grid.points;
    std::sort(grid.levels.begin(), grid.levels.end());
    grid.levels.erase(std::unique(grid.levels.begin(), grid.levels.end()), grid.levels.end());
    const size_t n_levels = grid.levels.size();
    float step = grid.levels.back() - grid.levels.front();
    for (size_t i = 1; i < n_levels; ++i)
        step = std::min(step, grid.levels[i] - grid.levels[i - 1]);
    // Keep every point within one level step of the nearest, at most kMax of them.
    constexpr size_t kMax = 24;
    size_t lattice = 1;
    for (size_t i = 0; i < Dim; ++i)
        lattice *= n_levels;
    std::vector<std::pair<float, uint16_t>> by_distance(N);
    for (size_t p = 0; p < lattice; ++p) {
        std::array<float, Dim> at{};
        for (size_t i = 0, rest = p; i < Dim; ++i, rest /= n_levels)
            at[i] = grid.levels[rest % n_levels];
        for (size_t g = 0; g < N; ++g) {
            float d2 = 0;
            for (size_t i = 0; i < Dim; ++i)
                d2 += (at[i] - table[g][i]) * (at[i] - table[g][i]);
            by_distance[g] = {d2, static_cast<uint16_t>(g)};
        }
        std::partial_sort(by_distance.begin(), by_distance.begin() + kMax, by_distance.end());
        grid.first.push_back(static_cast<uint32_t>(grid.list.size()));
        const float limit = by_distance[0].first + step * step;
        for (size_t k = 0; k < kMax && by_distance[k].first <= limit; ++k)
            grid.list.push_back(by_distance[k].second);
    }
    grid.first.push_back(static_cast<uint32_t>(grid.list.size()));
    return grid;
}

// Built on first use, once (function-local statics are initialised thread-safely).
template <const auto & Table>
const Grid & grid_of() {
    static const Grid grid = make_grid(Table);
    return grid;
}

// The grid point nearest to v (dim values) under weights w, and its weighted squared distance.
struct Nearest {
    int index;
    float error;
};

Nearest nearest(const Grid & grid, const float * v, const float * w) {
    const size_t n_levels = grid.levels.size();
    size_t lattice = 0;
    for (int i = grid.dim - 1; i >= 0; --i) {
        size_t best = 0;  // a NaN coordinate stays at level 0
        for (size_t l = 1; l < n_levels; ++l)
            if (std::fabs(v[i] - grid.levels[l]) < std::fabs(v[i] - grid.levels[best])) best = l;
        lattice = lattice * n_levels + best;
    }
    Nearest found{grid.list[grid.first[lattice]], INFINITY};
    for (uint32_t k = grid.first[lattice]; k < grid.first[lattice + 1]; ++k) {
        const float * g = grid.point(grid.list[k]);
        float error = 0;
        for (int i = 0; i < grid.dim; ++i)
            error += w[i] * (v[i] - g[i]) * (v[i] - g[i]);
        if (error < found.error) found = {grid.list[k], error};
    }
    return found;
}

// ---- The shared quantizer -----------------------------------------------------------------------

enum class Signs { kEvenParity, kFree, kShift };  // IQ2_XXS/XS, IQ3_XXS | IQ2_S, IQ3_S | IQ1

struct Scheme {
    const Grid & (*grid)();
    int sub;        // values per sub-block scale
    int scale_max;  // sub-block scales are 0 .. scale_max
    float unit;     // a sub-block's scale is d * unit * (2s + 1)
    Signs signs;
    int shift_span;  // kShift: values sharing one ±1/8 shift
};

constexpr int kMaxSub = 32;

// One sub-block fitted at one scale: grid indices, shift signs and the values q it decodes to
// (before the scale), with the sums of the least-squares scale.
struct Fit {
    std::array<uint16_t, kMaxSub / 4> index{};
    std::array<bool, kMaxSub / 8> neg_shift{};
    std::array<float, kMaxSub> q{};
    double sum_wxq = 0, sum_wqq = 0, error = 0;
};

Fit fit(const Scheme & s, const float * a, const float * w, float scale) {
    const Grid & grid = s.grid();
    const float inv = 1.0f / scale;
    const int span = s.signs == Signs::kShift ? s.shift_span : s.sub;
    Fit result;
    for (int c = 0; c < s.sub; c += span) {
        double best_error = INFINITY;
        for (bool neg : {false, true}) {
            if (neg && s.signs != Signs::kShift) break;
            const float shift = s.signs != Signs::kShift ? 0.0f : neg ? -kIq1Delta : kIq1Delta;
            double error = 0;
            std::array<uint16_t, kMaxSub / 4> index{};
            for (int g = c; g < c + span; g += grid.dim) {
                float v[8];
                for (int i = 0; i < grid.dim; ++i)
                    v[i] = a[g + i] * inv - shift;
                const Nearest n = nearest(grid, v, w + g);
                index[static_cast<size_t>(g / grid.dim)] = static_cast<uint16_t>(n.index);
                error += n.error;
            }
            if (!(error >= best_error)) {
                best_error = error;
                for (int g = c; g < c + span; g += grid.dim) {
                    const auto k = static_cast<size_t>(g / grid.dim);
                    result.index[k] = index[k];
                    for (int i = 0; i < grid.dim; ++i)
                        result.q[static_cast<size_t>(g + i)] = grid.point(index[k])[i] + shift;
                }
                if (s.signs == Signs::kShift) result.neg_shift[static_cast<size_t>(c / 8)] = neg;
            }
        }
    }
    for (int i = 0; i < s.sub; ++i) {
        const double q = result.q[static_cast<size_t>(i)];
        result.sum_wxq += w[i] * a[i] * q;
        result.sum_wqq += w[i] * q * q;
        result.error += w[i] * (a[i] - scale * q) * (a[i] - scale * q);
    }
    return result;
}

// The scale of a sub-block on its own: the best least-squares fit over candidate scales.
float best_scale(const Scheme & s, const float * a, const float * w) {
    float amax = 0;
    for (int i = 0; i < s.sub; ++i)
        amax = std::max(amax, std::fabs(a[i]));
    if (!(amax > 0) || !std::isfinite(amax)) return 0;
    const float top = s.grid().levels.back() + (s.signs == Signs::kShift ? kIq1Delta : 0.0f);
    float best = amax / top;
    double best_score = -1;
    for (int t = 0; t <= 12; ++t) {
        const Fit f = fit(s, a, w, amax / top * (0.6f + 0.05f * static_cast<float>(t)));
        if (f.sum_wqq > 0 && f.sum_wxq > 0 && f.sum_wxq * f.sum_wxq / f.sum_wqq > best_score) {
            best_score = f.sum_wxq * f.sum_wxq / f.sum_wqq;
            best = static_cast<float>(f.sum_wxq / f.sum_wqq);
        }
    }
    return best;
}

// A super-block quantized: d, sub-block scales, and per group of 8 values (IQ3: 4) its grid index;
// per 8 values the sign bits; per shift span the shift's sign.
struct Encoded {
    float d = 0;
    std::array<uint8_t, kBlock / 16> scale{};
    std::array<uint16_t, kBlock / 4> index{};
    std::array<uint8_t, kBlock / 8> sign{};
    std::array<bool, kBlock / 8> neg_shift{};
};

// Signs taken out of x: a holds the magnitudes, except that under even parity a group with an odd
// count of minus signs flips the sign of its least important value, which a then holds negated.
void split_signs(const Scheme & s, const float * x, const float * w, float * a, Encoded & e) {
    for (int g = 0; g < kBlock; g += 8) {
        uint8_t bits = 0;
        for (int i = 0; i < 8; ++i) {
            a[g + i] = s.signs == Signs::kShift ? x[g + i] : std::fabs(x[g + i]);
            if (x[g + i] < 0) bits = static_cast<uint8_t>(bits | 1u << i);
        }
        if (s.signs == Signs::kEvenParity && std::popcount(bits) % 2 != 0) {
            int least = 0;
            for (int i = 1; i < 8; ++i)
                if (w[g + i] * x[g + i] * x[g + i] < w[g + least] * x[g + least] * x[g + least]) least = i;
            bits = static_cast<uint8_t>(bits ^ 1u << least);
            a[g + least] = -a[g + least];
        }
        e.sign[static_cast<size_t>(g / 8)] = bits;
    }
}

Encoded encode(const Scheme & s, const float * x, const float * w) {
    Encoded e;
    float a[kBlock];
    split_signs(s, x, w, a, e);
    const int n_sub = kBlock / s.sub;
    float sub_scale[kBlock / 16];
    float max_scale = 0;
    for (int j = 0; j < n_sub; ++j) {
        sub_scale[j] = best_scale(s, a + j * s.sub, w + j * s.sub);
        max_scale = std::max(max_scale, sub_scale[j]);
    }
    if (!(max_scale > 0)) return e;  // all zero (or not finite): d = 0 decodes to zeros
    const Grid & grid = s.grid();
    double best_error = INFINITY;
    for (float shrink : {1.0f, 0.95f, 0.9f, 0.85f}) {
        const float d = ggml_fp16_to_fp32(
            ggml_fp32_to_fp16(shrink * max_scale / (s.unit * static_cast<float>(2 * s.scale_max + 1))));
        if (!(d > 0)) continue;
        Encoded trial = e;
        trial.d = d;
        double error = 0;
        for (int j = 0; j < n_sub; ++j) {
            const float t = std::clamp((sub_scale[j] / (d * s.unit) - 1.0f) / 2.0f, 0.0f,
                                       static_cast<float>(s.scale_max));
            const auto level = static_cast<int>(std::lround(t));
            trial.scale[static_cast<size_t>(j)] = static_cast<uint8_t>(level);
            const Fit f =
                fit(s, a + j * s.sub, w + j * s.sub, d * s.unit * static_cast<float>(2 * level + 1));
            error += f.error;
            const int groups = s.sub / grid.dim;
            for (int k = 0; k < groups; ++k)
                trial.index[static_cast<size_t>(j * groups + k)] = f.index[static_cast<size_t>(k)];
            if (s.signs == Signs::kShift)
                for (int k = 0; k < s.sub / s.shift_span; ++k)
                    trial.neg_shift[static_cast<size_t>(j * s.sub / s.shift_span + k)] =
                        f.neg_shift[static_cast<size_t>(k * s.shift_span / 8)];
        }
        if (error < best_error) {
            best_error = error;
            e = trial;
        }
    }
    return e;
}

// Rows of whole super-blocks, each encoded under weights (unit weights when none are given) and
// packed by Pack.
template <auto Pack, size_t Bytes>
void quantize_rows(const Scheme & s, const float * x, void * y, int64_t n, const float * importance) {
    auto * out = static_cast<unsigned char *>(y);
    std::array<float, kBlock> unit;
    unit.fill(1.0f);
    for (int64_t b = 0; b < n / kBlock; ++b) {
        const float * w = importance ? importance + b * kBlock : unit.data();
        Pack(encode(s, x + b * kBlock, w), out + b * static_cast<int64_t>(Bytes));
    }
}

// ---- Byte access --------------------------------------------------------------------------------

void store16(unsigned char * p, unsigned v) {
    p[0] = static_cast<unsigned char>(v);
    p[1] = static_cast<unsigned char>(v >> 8);
}
void store32(unsigned char * p, uint32_t v) {
    store16(p, v & 0xffffu);
    store16(p + 2, v >> 16);
}

// Values of one signed group: y = db · grid point · (±1 by the sign bits).
template <size_t Dim>
void put_signed(float * y, float db, const uint8_t (&point)[Dim], unsigned signs) {
    for (size_t i = 0; i < Dim; ++i)
        y[i] = db * static_cast<float>(point[i]) * (signs >> i & 1 ? -1.0f : 1.0f);
}

// Values of one IQ1 group: y = dl · (grid point + shift).
void put_shifted(float * y, float dl, unsigned index, bool neg) {
    const float shift = neg ? -kIq1Delta : kIq1Delta;
    for (size_t i = 0; i < 8; ++i)
        y[i] = dl * (static_cast<float>(kIq1sGrid[index][i]) + shift);
}

void pack_nibbles(const uint8_t * values, size_t count, unsigned char * out) {
    for (size_t j = 0; j < count / 2; ++j)
        out[j] = static_cast<unsigned char>(values[2 * j] | values[2 * j + 1] << 4);
}

// Grid indices of 8 + Bits bits packed as iq_split_index reads them.
template <unsigned Bits>
void pack_split_index(const uint16_t * index, size_t count, unsigned char * low, unsigned char * high) {
    constexpr size_t kPerByte = 8 / Bits;
    std::fill(high, high + count / kPerByte, 0);
    for (size_t k = 0; k < count; ++k) {
        low[k] = static_cast<unsigned char>(index[k]);
        high[k / kPerByte] =
            static_cast<unsigned char>(high[k / kPerByte] | (index[k] >> 8) << Bits * (k % kPerByte));
    }
}

// ---- IQ2_XXS: d, then per 32 values two words: 4 grid index bytes; 4 × 7 sign bits, scale << 28 --

constexpr size_t kIq2xxsBytes = 66;
constexpr Scheme kIq2xxs{grid_of<kIq2xxsGrid>, 32, 15, 0.125f, Signs::kEvenParity, 0};

void dequantize_iq2_xxs(const void * x, float * y, int64_t n) {
    for (const auto * b = static_cast<const unsigned char *>(x); n >= kBlock;
         n -= kBlock, b += kIq2xxsBytes) {
        const float d = load_f16(b);
        for (int ib = 0; ib < 8; ++ib, y += 32) {
            const uint32_t aux = load_u32(b + 2 + 8 * ib + 4);
            const float db = iq_half_step_scale(d, aux >> 28, 0.25f);
            for (int k = 0; k < 4; ++k)
                put_signed(y + 8 * k, db, kIq2xxsGrid[b[2 + 8 * ib + k]], kIqSigns[aux >> 7 * k & 127]);
        }
    }
}

void pack_iq2_xxs(const Encoded & e, unsigned char * b) {
    store_f16(b, e.d);
    for (size_t ib = 0; ib < 8; ++ib) {
        uint32_t aux = static_cast<uint32_t>(e.scale[ib]) << 28;
        for (size_t k = 0; k < 4; ++k) {
            b[2 + 8 * ib + k] = static_cast<unsigned char>(e.index[4 * ib + k]);
            aux |= static_cast<uint32_t>(e.sign[4 * ib + k] & 127) << 7 * k;
        }
        store32(b + 2 + 8 * ib + 4, aux);
    }
}

// ---- IQ2_XS: d, 32 words (9-bit grid index | 7 sign bits << 9), 8 bytes of 4-bit scales per 16 --

constexpr size_t kIq2xsBytes = 74;
constexpr Scheme kIq2xs{grid_of<kIq2xsGrid>, 16, 15, 0.125f, Signs::kEvenParity, 0};

void dequantize_iq2_xs(const void * x, float * y, int64_t n) {
    for (const auto * b = static_cast<const unsigned char *>(x); n >= kBlock; n -= kBlock, b += kIq2xsBytes) {
        const float d = load_f16(b);
        for (size_t k = 0; k < 32; ++k, y += 8) {
            const unsigned q = load_u16(b + 2 + 2 * k);
            put_signed(y, iq_half_step_scale(d, iq_nibble(b + 66, k / 2), 0.25f), kIq2xsGrid[q & 511],
                       kIqSigns[q >> 9]);
        }
    }
}

void pack_iq2_xs(const Encoded & e, unsigned char * b) {
    store_f16(b, e.d);
    for (size_t k = 0; k < 32; ++k)
        store16(b + 2 + 2 * k, e.index[k] | (e.sign[k] & 127u) << 9);
    pack_nibbles(e.scale.data(), 16, b + 66);
}

// ---- IQ2_S: d, 32 index low bytes, 32 sign bytes, 8 bytes of index high bits, 8 of scales per 16 --

constexpr size_t kIq2sBytes = 82;
constexpr Scheme kIq2s{grid_of<kIq2sGrid>, 16, 15, 0.125f, Signs::kFree, 0};

void dequantize_iq2_s(const void * x, float * y, int64_t n) {
    for (const auto * b = static_cast<const unsigned char *>(x); n >= kBlock; n -= kBlock, b += kIq2sBytes) {
        const float d = load_f16(b);
        for (size_t k = 0; k < 32; ++k, y += 8) {
            put_signed(y, iq_half_step_scale(d, iq_nibble(b + 74, k / 2), 0.25f),
                       kIq2sGrid[iq_split_index<2>(b + 2, b + 66, k)], b[34 + k]);
        }
    }
}

void pack_iq2_s(const Encoded & e, unsigned char * b) {
    store_f16(b, e.d);
    pack_split_index<2>(e.index.data(), 32, b + 2, b + 66);
    std::copy_n(e.sign.begin(), 32, b + 34);
    pack_nibbles(e.scale.data(), 16, b + 74);
}

// ---- IQ3_XXS: d, 64 grid index bytes (4 values each), per 32 values a word of 4 × 7 sign bits and
// the scale << 28 ---------------------------------------------------------------------------------

constexpr size_t kIq3xxsBytes = 98;
constexpr Scheme kIq3xxs{grid_of<kIq3xxsGrid>, 32, 15, 0.25f, Signs::kEvenParity, 0};

void dequantize_iq3_xxs(const void * x, float * y, int64_t n) {
    for (const auto * b = static_cast<const unsigned char *>(x); n >= kBlock;
         n -= kBlock, b += kIq3xxsBytes) {
        const float d = load_f16(b);
        for (int ib = 0; ib < 8; ++ib) {
            const uint32_t aux = load_u32(b + 66 + 4 * ib);
            const float db = iq_half_step_scale(d, aux >> 28, 0.5f);
            for (int k = 0; k < 4; ++k, y += 8) {
                const unsigned signs = kIqSigns[aux >> 7 * k & 127];
                put_signed(y, db, kIq3xxsGrid[b[2 + 8 * ib + 2 * k]], signs);
                put_signed(y + 4, db, kIq3xxsGrid[b[2 + 8 * ib + 2 * k + 1]], signs >> 4);
            }
        }
    }
}

void pack_iq3_xxs(const Encoded & e, unsigned char * b) {
    store_f16(b, e.d);
    for (size_t k = 0; k < 64; ++k)
        b[2 + k] = static_cast<unsigned char>(e.index[k]);
    for (size_t ib = 0; ib < 8; ++ib) {
        uint32_t aux = static_cast<uint32_t>(e.scale[ib]) << 28;
        for (size_t k = 0; k < 4; ++k)
            aux |= static_cast<uint32_t>(e.sign[4 * ib + k] & 127) << 7 * k;
        store32(b + 66 + 4 * ib, aux);
    }
}

// ---- IQ3_S: d, 64 index low bytes, 8 bytes of index high bits, 32 sign bytes, 4 of scales per 32 --

constexpr size_t kIq3sBytes = 110;
constexpr Scheme kIq3s{grid_of<kIq3sGrid>, 32, 15, 1.0f, Signs::kFree, 0};

void dequantize_iq3_s(const void * x, float * y, int64_t n) {
    for (const auto * b = static_cast<const unsigned char *>(x); n >= kBlock; n -= kBlock, b += kIq3sBytes) {
        const float d = load_f16(b);
        for (size_t k = 0; k < 64; ++k, y += 4) {
            const float db = iq_odd_scale(d, iq_nibble(b + 106, k / 8));
            put_signed(y, db, kIq3sGrid[iq_split_index<1>(b + 2, b + 66, k)], b[74 + k / 2] >> 4 * (k % 2));
        }
    }
}

void pack_iq3_s(const Encoded & e, unsigned char * b) {
    store_f16(b, e.d);
    pack_split_index<1>(e.index.data(), 64, b + 2, b + 66);
    std::copy_n(e.sign.begin(), 32, b + 74);
    pack_nibbles(e.scale.data(), 8, b + 106);
}

// ---- IQ1_S: d, 32 index low bytes, per 32 values a word: 4 × 3 index high bits, scale (3 bits)
// << 12, shift sign << 15 ---------------------------------------------------------------------------

constexpr size_t kIq1sBytes = 50;
constexpr Scheme kIq1s{grid_of<kIq1sGrid>, 32, 7, 1.0f, Signs::kShift, 32};

void dequantize_iq1_s(const void * x, float * y, int64_t n) {
    for (const auto * b = static_cast<const unsigned char *>(x); n >= kBlock; n -= kBlock, b += kIq1sBytes) {
        const float d = load_f16(b);
        for (size_t ib = 0; ib < 8; ++ib) {
            const unsigned qh = load_u16(b + 34 + 2 * ib);
            const float dl = iq_odd_scale(d, qh >> 12 & 7);
            for (size_t k = 0; k < 4; ++k, y += 8)
                put_shifted(y, dl, b[2 + 4 * ib + k] | (qh >> 3 * k & 7) << 8, (qh & 0x8000) != 0);
        }
    }
}

void pack_iq1_s(const Encoded & e, unsigned char * b) {
    store_f16(b, e.d);
    for (size_t ib = 0; ib < 8; ++ib) {
        unsigned qh = static_cast<unsigned>(e.scale[ib]) << 12 | (e.neg_shift[ib] ? 0x8000u : 0u);
        for (size_t k = 0; k < 4; ++k) {
            b[2 + 4 * ib + k] = static_cast<unsigned char>(e.index[4 * ib + k]);
            qh |= static_cast<unsigned>(e.index[4 * ib + k] >> 8) << 3 * k;
        }
        store16(b + 34 + 2 * ib, qh);
    }
}

// ---- IQ1_M: 32 index low bytes, per 8 values a nibble (3 index high bits, shift sign << 3), then 4
// words of 4 × 3-bit scales per 16 values whose top nibbles hold the F16 d (lowest nibble first) -----

constexpr size_t kIq1mBytes = 56;
constexpr Scheme kIq1m{grid_of<kIq1sGrid>, 16, 7, 1.0f, Signs::kShift, 8};

void dequantize_iq1_m(const void * x, float * y, int64_t n) {
    for (const auto * b = static_cast<const unsigned char *>(x); n >= kBlock; n -= kBlock, b += kIq1mBytes) {
        const float d = ggml_fp16_to_fp32(iq1_m_d_bits(b));
        for (size_t k = 0; k < 32; ++k, y += 8) {
            const size_t j = k / 2;  // the scale of 16 values
            const float dl =
                iq_odd_scale(d, static_cast<unsigned>(load_u16(b + 48 + 2 * (j / 4)) >> 3 * (j % 4) & 7));
            const unsigned h = b[32 + k / 2] >> 4 * (k % 2);
            put_shifted(y, dl, b[k] | (h & 7) << 8, (h & 8) != 0);
        }
    }
}

void pack_iq1_m(const Encoded & e, unsigned char * b) {
    const unsigned d = ggml_fp32_to_fp16(e.d);
    for (size_t k = 0; k < 32; ++k)
        b[k] = static_cast<unsigned char>(e.index[k]);
    for (size_t k = 0; k < 16; ++k) {
        const auto nib = [&](size_t g) { return (e.index[g] >> 8) | (e.neg_shift[g] ? 8u : 0u); };
        b[32 + k] = static_cast<unsigned char>(nib(2 * k) | nib(2 * k + 1) << 4);
    }
    for (size_t w = 0; w < 4; ++w) {
        unsigned word = (d >> 4 * w & 15u) << 12;
        for (size_t j = 0; j < 4; ++j)
            word |= static_cast<unsigned>(e.scale[4 * w + j]) << 3 * j;
        store16(b + 48 + 2 * w, word);
    }
}

int64_t first_bad_iq1_m(const void * x, int64_t n_blocks) {
    const auto * bytes = static_cast<const unsigned char *>(x);
    for (int64_t b = 0; b < n_blocks; ++b)
        if ((iq1_m_d_bits(bytes + b * static_cast<int64_t>(kIq1mBytes)) & 0x7c00u) == 0x7c00u) return b;
    return -1;
}

// ---- The table ----------------------------------------------------------------------------------

template <const Scheme & S, auto Pack, size_t Bytes>
void quantize(const float * x, void * y, int64_t n) {
    quantize_rows<Pack, Bytes>(S, x, y, n, nullptr);
}

template <const Scheme & S, auto Pack, size_t Bytes>
void quantize_weighted(const float * x, void * y, int64_t n, const float * importance) {
    quantize_rows<Pack, Bytes>(S, x, y, n, importance);
}

template <ggml_type Type, auto Dequantize, const Scheme & S, auto Pack, size_t Bytes, auto FirstBad,
          bool Requires>
constexpr Format format() {
    return {Type,           Dequantize, quantize<S, Pack, Bytes>, quantize_weighted<S, Pack, Bytes>, FirstBad,
            GGML_TYPE_Q8_K, Requires};
}

const Format kIQuants[] = {
    format<GGML_TYPE_IQ2_XXS, dequantize_iq2_xxs, kIq2xxs, pack_iq2_xxs, kIq2xxsBytes,
           first_bad_f16_scale<kIq2xxsBytes, 0>, true>(),
    format<GGML_TYPE_IQ2_XS, dequantize_iq2_xs, kIq2xs, pack_iq2_xs, kIq2xsBytes,
           first_bad_f16_scale<kIq2xsBytes, 0>, true>(),
    format<GGML_TYPE_IQ2_S, dequantize_iq2_s, kIq2s, pack_iq2_s, kIq2sBytes,
           first_bad_f16_scale<kIq2sBytes, 0>, false>(),
    format<GGML_TYPE_IQ3_XXS, dequantize_iq3_xxs, kIq3xxs, pack_iq3_xxs, kIq3xxsBytes,
           first_bad_f16_scale<kIq3xxsBytes, 0>, false>(),
    format<GGML_TYPE_IQ3_S, dequantize_iq3_s, kIq3s, pack_iq3_s, kIq3sBytes,
           first_bad_f16_scale<kIq3sBytes, 0>, false>(),
    format<GGML_TYPE_IQ1_S, dequantize_iq1_s, kIq1s, pack_iq1_s, kIq1sBytes,
           first_bad_f16_scale<kIq1sBytes, 0>, true>(),
    format<GGML_TYPE_IQ1_M, dequantize_iq1_m, kIq1m, pack_iq1_m, kIq1mBytes, first_bad_iq1_m, false>(),
};

}  // namespace

std::span<const Format> i_quant_formats() { return kIQuants; }

}  // namespace ggx::core::quant
