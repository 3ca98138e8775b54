// Decoders of the block formats into int8 codes with per-16 scales and offsets (quant_decode.h).
// Layouts are those of docs/quantization.md; each decoder reads one run of 256 values. The bit
// unpacking is vectorised (Highway, compiled once per target and dispatched at run time); the
// scales are a handful of scalar operations per run.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/quant_decode.cpp"
#include <hwy/foreach_target.h>
#include <hwy/highway.h>
// clang-format on

#include <array>
#include <bit>
#include <cstring>
#include <type_traits>

#include "core/quant/block_math.h"
#include "core/quant/iq_grids.h"
#include "cpu/quant_decode.h"

#ifndef GGX_CPU_QUANT_DECODE_ONCE
#define GGX_CPU_QUANT_DECODE_ONCE
namespace ggx::cpu::quant {

inline float f16_at(const char * p) {
    ggml_fp16_t h;
    std::memcpy(&h, p, sizeof h);
    return ggml_fp16_to_fp32(h);
}

inline const uint8_t * bytes_at(const char * p) { return reinterpret_cast<const uint8_t *>(p); }

inline constexpr int64_t kBlocksPerRun = kRun / 32;

// A 32-value block's scale d and offset m (value = d * q - m) for both of its groups.
inline void set_block_scales(DecodedRun & out, int64_t block, float d, float m) {
    for (int64_t g = 2 * block; g < 2 * block + 2; ++g) {
        out.scale[g] = d;
        out.offset[g] = m;
    }
}

// The 6-bit scales and minima of the 8 sub-blocks of Q4_K and Q5_K from their 12 packed bytes, as
// bytes: bytes 0..3 hold the scales of 0..3 and bytes 4..7 their minima (low 6 bits each); sub-blocks
// 4..7 take their low 4 bits from bytes 8..11 (scale low nibble, minimum high nibble) and their top
// 2 bits from the top bits of bytes 0..3 (scales) and 4..7 (minima). Four at a time in 32-bit words.
inline void k_scales_mins(const uint8_t * packed, uint8_t scales[8], uint8_t mins[8]) {
    uint32_t w[3];
    std::memcpy(w, packed, sizeof w);
    const uint32_t low6 = 0x3f3f3f3fu, low4 = 0x0f0f0f0fu, top2 = 0x03030303u;
    const uint32_t words[4] = {w[0] & low6, w[1] & low6, (w[2] & low4) | (((w[0] >> 6) & top2) << 4),
                               ((w[2] >> 4) & low4) | (((w[1] >> 6) & top2) << 4)};
    std::memcpy(scales, &words[0], 4);
    std::memcpy(mins, &words[1], 4);
    std::memcpy(scales + 4, &words[2], 4);
    std::memcpy(mins + 4, &words[3], 4);
}

// The IQ4_NL / IQ4_XS value table (a format fact: the 16 non-uniform levels, times the scale).
alignas(16) inline constexpr std::array<int8_t, 16> kNonLinear = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                                  1,    13,   25,  38,  53,  69,  89,  113};

using core::quant::iq_half_step_scale;
using core::quant::iq_nibble;
using core::quant::iq_odd_scale;
using core::quant::iq_split_index;
using core::quant::kIq1Delta;
using core::quant::kIq1sGrid;
using core::quant::kIq2sGrid;
using core::quant::kIq2xsGrid;
using core::quant::kIq2xxsGrid;
using core::quant::kIq3sGrid;
using core::quant::kIq3xxsGrid;
using core::quant::load_u16;
using core::quant::load_u32;

// ---- The i-quants: grid points as 8 codes in a little-endian 64-bit word ------------------------

static_assert(std::endian::native == std::endian::little, "the i-quant decoders read grid points as words");

inline constexpr uint64_t kEveryByte = 0x0101010101010101u;

// All ones in byte i where bit i of s is set.
constexpr uint64_t byte_mask(unsigned s) {
    uint64_t mask = 0;
    for (unsigned i = 0; i < 8; ++i)
        if (s >> i & 1) mask |= uint64_t{0xFF} << 8 * i;
    return mask;
}

// The masks of the 8 sign bits of IQ2_S and IQ3_S (bit i: value i negative), and of the 7 stored
// sign bits of IQ2_XXS, IQ2_XS and IQ3_XXS (the 8th from the even parity of kIqSigns).
inline constexpr auto kSignMasks = [] {
    std::array<uint64_t, 256> masks{};
    for (unsigned s = 0; s < 256; ++s)
        masks[s] = byte_mask(s);
    return masks;
}();
inline constexpr auto kParitySignMasks = [] {
    std::array<uint64_t, 128> masks{};
    for (unsigned s = 0; s < 128; ++s)
        masks[s] = byte_mask(core::quant::kIqSigns[s]);
    return masks;
}();

// Every magnitude of the IQ2 / IQ3 grids is in 1..127, so that a magnitude negated in its byte is
// (m ^ 0xFF) + 1 with no carry into the next byte, and fits an int8 code.
template <typename T, size_t N, size_t Dim>
constexpr bool magnitudes_fit(const T (&grid)[N][Dim]) {
    for (const auto & point : grid)
        for (T v : point)
            if (v < 1 || v > 127) return false;
    return true;
}
static_assert(magnitudes_fit(kIq2xxsGrid) && magnitudes_fit(kIq2xsGrid) && magnitudes_fit(kIq2sGrid) &&
              magnitudes_fit(kIq3xxsGrid) && magnitudes_fit(kIq3sGrid));

// A grid's points as words (little-endian), for gathers.
template <typename T, size_t N, size_t Dim>
constexpr auto point_words(const T (&grid)[N][Dim]) {
    using Word = std::conditional_t<Dim == 8, uint64_t, uint32_t>;
    std::array<Word, N> words{};
    for (size_t i = 0; i < N; ++i)
        for (size_t j = 0; j < Dim; ++j)
            words[i] |= static_cast<Word>(static_cast<uint8_t>(grid[i][j])) << 8 * j;
    return words;
}
inline constexpr auto kIq2xxsWords = point_words(kIq2xxsGrid);
inline constexpr auto kIq2xsWords = point_words(kIq2xsGrid);
inline constexpr auto kIq2sWords = point_words(kIq2sGrid);
inline constexpr auto kIq3xxsWords = point_words(kIq3xxsGrid);
inline constexpr auto kIq3sWords = point_words(kIq3sGrid);
inline constexpr auto kIq1sWords = point_words(kIq1sGrid);

// The 4 sign bytes of 32 values of IQ2_XXS, IQ2_XS or IQ3_XXS from their 7-bit fields, byte j for
// values 8j .. 8j + 7.
inline uint32_t parity_signs(unsigned s0, unsigned s1, unsigned s2, unsigned s3) {
    using core::quant::kIqSigns;
    return kIqSigns[s0] | kIqSigns[s1] << 8 | kIqSigns[s2] << 16 | static_cast<uint32_t>(kIqSigns[s3]) << 24;
}

// 8 codes of a signed group: the magnitudes, negated in the bytes of mask.
inline void put_signed_codes(int8_t * q, uint64_t magnitudes, uint64_t mask) {
    const uint64_t codes = (magnitudes ^ mask) + (mask & kEveryByte);
    std::memcpy(q, &codes, sizeof codes);
}

// 8 codes of an IQ1 group: 8 · point ± 1 (the point in {-1, 0, 1}, the shift ±1/8 times 8), for a
// scale of d_sub / 8. Bytewise: the point shifted by 3 (the bits carried into the next byte masked
// off), then a byte add of +1 or -1 whose carries stop at bit 7.
inline void put_iq1_codes(int8_t * q, uint64_t g, bool negative_shift) {
    const uint64_t eight = (g << 3) & 0xF8F8F8F8F8F8F8F8u;
    // 0x01 or 0xFF in every byte, without a branch (the shift signs are as random as the data).
    const uint64_t shift = kEveryByte | (uint64_t{0} - static_cast<uint64_t>(negative_shift));
    const uint64_t low7 = 0x7F7F7F7F7F7F7F7Fu;
    const uint64_t codes = ((eight & low7) + (shift & low7)) ^ ((eight ^ shift) & ~low7);
    std::memcpy(q, &codes, sizeof codes);
}

}  // namespace ggx::cpu::quant
#endif  // GGX_CPU_QUANT_DECODE_ONCE

HWY_BEFORE_NAMESPACE();
namespace ggx::cpu::quant::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D16 = hn::CappedTag<uint8_t, 16>;  // the 16 bytes of a 32-value block's nibbles
using D32 = hn::CappedTag<uint8_t, 32>;  // 32 bytes of a K-quant's codes
using V16 = hn::Vec<D16>;

// Stores lanes of v (bytes) as int8 codes.
template <class D>
HWY_INLINE void store_codes(D d, hn::Vec<D> v, int8_t * q) {
    hn::StoreU(v, d, reinterpret_cast<uint8_t *>(q));
}

// The nibbles of a 32-value block (byte j: value j low, value j + 16 high) through code(nibbles,
// half): half 0 the low nibbles, 1 the high ones.
template <class Code>
HWY_INLINE void unpack_nibbles(const uint8_t * qs, int8_t * q, Code code) {
    const D16 d;
    const size_t N = hn::Lanes(d);
    for (size_t j = 0; j < 16; j += N) {
        const V16 v = hn::LoadU(d, qs + j);
        store_codes(d, code(hn::And(v, hn::Set(d, uint8_t{0x0F})), j, 0), q + j);
        store_codes(d, code(hn::ShiftRight<4>(v), j, 1), q + 16 + j);
    }
}

// 0x10 in the lanes (values first + i, i < lanes) whose bit first + i of high is set: the fifth
// bits of a Q5 block.
HWY_INLINE V16 fifth_bits(uint32_t high, size_t first) {
    const D16 d;
    if (hn::Lanes(d) >= 16) {
        // Lane i takes byte i / 8 of the 16 bits and tests its bit i % 8.
        HWY_ALIGN static constexpr uint8_t kByte[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
        HWY_ALIGN static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128,
                                                       1, 2, 4, 8, 16, 32, 64, 128};
        const hn::Repartition<uint16_t, D16> d16;
        const V16 two = hn::BitCast(d, hn::Set(d16, static_cast<uint16_t>(high >> first)));  // low, high byte
        const V16 bytes = hn::TableLookupBytes(two, hn::Load(d, kByte));
        const auto set = hn::Ne(hn::And(bytes, hn::Load(d, kBit)), hn::Zero(d));
        return hn::IfThenElseZero(set, hn::Set(d, uint8_t{0x10}));
    }
    uint8_t bits[16];
    for (size_t i = 0; i < hn::Lanes(d); ++i)
        bits[i] = static_cast<uint8_t>(((high >> (first + i)) & 1) << 4);
    return hn::LoadU(d, bits);
}

constexpr auto identity = [](V16 v, size_t, int) { return v; };

// The F16 at byte `at` of each of the run's 8 blocks of `bytes` bytes, converted together.
HWY_INLINE void block_halves(const char * p, size_t bytes, size_t at, float * out) {
    const hn::CappedTag<float, kBlocksPerRun> df;
    const hn::Rebind<hwy::float16_t, decltype(df)> dh;
    HWY_ALIGN uint16_t h[kBlocksPerRun];
    for (int64_t b = 0; b < kBlocksPerRun; ++b)
        std::memcpy(&h[b], p + b * bytes + at, sizeof h[b]);
    for (size_t i = 0; i < kBlocksPerRun; i += hn::Lanes(df))
        hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t *>(h) + i)), df,
                   out + i);
}

// The scales of a run of 32-value blocks: the F16 scale at byte 0 of each block and, for formats with
// a minimum m (value = d * q + m), the F16 at byte 2 as the offset -m.
template <size_t kBytes, bool kMin>
HWY_INLINE void run_block_scales(const char * p, DecodedRun & out) {
    HWY_ALIGN float d[kBlocksPerRun], m[kBlocksPerRun] = {};
    block_halves(p, kBytes, 0, d);
    if (kMin) block_halves(p, kBytes, 2, m);
    for (int64_t b = 0; b < kBlocksPerRun; ++b)
        set_block_scales(out, b, d[b], -m[b]);
}

void DecodeQ8_0(const char * p, DecodedRun & out) {
    run_block_scales<sizeof(ggml_block_q8_0), false>(p, out);
    for (int64_t b = 0; b < kBlocksPerRun; ++b, p += sizeof(ggml_block_q8_0))
        std::memcpy(out.q + 32 * b, p + 2, 32);
}

void DecodeQ4_0(const char * p, DecodedRun & out) {
    run_block_scales<sizeof(ggml_block_q4_0), false>(p, out);
    for (int64_t b = 0; b < kBlocksPerRun; ++b, p += sizeof(ggml_block_q4_0)) {
        unpack_nibbles(bytes_at(p + 2), out.q + 32 * b,
                       [](V16 v, size_t, int) { return hn::Sub(v, hn::Set(D16(), uint8_t{8})); });
    }
}

// Q4_1: d, m (F16), nibbles; value = d * q + m.
void DecodeQ4_1(const char * p, DecodedRun & out) {
    run_block_scales<20, true>(p, out);
    for (int64_t b = 0; b < kBlocksPerRun; ++b, p += 20)
        unpack_nibbles(bytes_at(p + 4), out.q + 32 * b, identity);
}

// Q5_0: d (F16), the fifth bits (bit i of a little-endian u32 for value i), nibbles; d * (q - 16).
void DecodeQ5_0(const char * p, DecodedRun & out) {
    run_block_scales<22, false>(p, out);
    for (int64_t b = 0; b < kBlocksPerRun; ++b, p += 22) {
        uint32_t high;
        std::memcpy(&high, p + 2, sizeof high);
        unpack_nibbles(bytes_at(p + 6), out.q + 32 * b, [high](V16 v, size_t j, int half) {
            return hn::Sub(hn::Or(v, fifth_bits(high, 16 * half + j)), hn::Set(D16(), uint8_t{16}));
        });
    }
}

// Q5_1: d, m (F16), fifth bits, nibbles; value = d * q + m.
void DecodeQ5_1(const char * p, DecodedRun & out) {
    run_block_scales<24, true>(p, out);
    for (int64_t b = 0; b < kBlocksPerRun; ++b, p += 24) {
        uint32_t high;
        std::memcpy(&high, p + 4, sizeof high);
        unpack_nibbles(bytes_at(p + 8), out.q + 32 * b, [high](V16 v, size_t j, int half) {
            return hn::Or(v, fifth_bits(high, 16 * half + j));
        });
    }
}

// The int8 level of each nibble from a 16-entry table: a byte shuffle where a vector holds the whole
// table, lane by lane otherwise (the scalar target).
HWY_INLINE V16 levels(const int8_t * table, V16 nibbles) {
    const D16 d;
    const auto * bytes = reinterpret_cast<const uint8_t *>(table);
    if (hn::Lanes(d) >= 16) return hn::TableLookupBytes(hn::LoadU(d, bytes), nibbles);
    uint8_t lanes[16];
    hn::StoreU(nibbles, d, lanes);
    for (size_t i = 0; i < hn::Lanes(d); ++i)
        lanes[i] = bytes[lanes[i]];
    return hn::LoadU(d, lanes);
}

HWY_INLINE V16 non_linear(V16 nibbles) { return levels(kNonLinear.data(), nibbles); }

HWY_INLINE V16 fp4_levels(V16 nibbles) { return levels(core::quant::kFp4Values, nibbles); }

// MXFP4 (32 values, 17 bytes): the E8M0 exponent e, then nibbles as Q4_0's; value = 2^(e - 128) *
// (doubled E2M1 level).
void DecodeMxfp4(const char * p, DecodedRun & out) {
    for (int64_t b = 0; b < kBlocksPerRun; ++b, p += 17) {
        set_block_scales(out, b, core::quant::e8m0_half(bytes_at(p)[0]), 0.0f);
        unpack_nibbles(bytes_at(p + 1), out.q + 32 * b, [](V16 v, size_t, int) { return fp4_levels(v); });
    }
}

// NVFP4 (64 values, 36 bytes): 4 UE4M3 scales, one per group of 16, then 8 bytes of nibbles per
// group (value j low, j + 8 high); value = ue4m3(s) / 2 * (doubled E2M1 level).
void DecodeNvfp4(const char * p, DecodedRun & out) {
    for (int64_t b = 0; b < kRun / 64; ++b, p += 36) {
        for (int64_t s = 0; s < 4; ++s) {
            out.scale[4 * b + s] = core::quant::ue4m3_half(bytes_at(p)[s]);
            out.offset[4 * b + s] = 0.0f;
        }
        int8_t * q = out.q + 64 * b;
        const uint8_t * qs = bytes_at(p + 4);
#if HWY_TARGET == HWY_SCALAR
        for (int j = 0; j < 32; ++j) {  // group j / 8: value j % 8 low, j % 8 + 8 high
            q[16 * (j / 8) + j % 8] = core::quant::kFp4Values[qs[j] & 0x0F];
            q[16 * (j / 8) + j % 8 + 8] = core::quant::kFp4Values[qs[j] >> 4];
        }
#else
        // Two groups per 16 bytes: each group's low nibbles, then its high nibbles.
        const D16 d;
        const hn::Repartition<uint64_t, D16> d64;
        for (int g = 0; g < 4; g += 2) {
            const V16 v = hn::LoadU(d, qs + 8 * g);
            const auto lo = hn::BitCast(d64, fp4_levels(hn::And(v, hn::Set(d, uint8_t{0x0F}))));
            const auto hi = hn::BitCast(d64, fp4_levels(hn::ShiftRight<4>(v)));
            store_codes(d, hn::BitCast(d, hn::InterleaveLower(d64, lo, hi)), q + 16 * g);
            store_codes(d, hn::BitCast(d, hn::InterleaveUpper(d64, lo, hi)), q + 16 * g + 16);
        }
#endif
    }
}

void DecodeIq4Nl(const char * p, DecodedRun & out) {
    run_block_scales<18, false>(p, out);
    for (int64_t b = 0; b < kBlocksPerRun; ++b, p += 18)
        unpack_nibbles(bytes_at(p + 2), out.q + 32 * b, [](V16 v, size_t, int) { return non_linear(v); });
}

// IQ4_XS (136 bytes): d (F16), 2 bytes of high scale bits, 4 bytes of low scale nibbles, 128 bytes of
// nibbles (16 per sub-block of 32, as IQ4_NL); sub-block j's scale is d * (ls - 32), ls its 6 bits.
void DecodeIq4Xs(const char * p, DecodedRun & out) {
    const float d = f16_at(p);
    uint16_t high = 0;
    std::memcpy(&high, p + 2, sizeof high);
    const uint8_t * low = bytes_at(p + 4);
    const uint8_t * qs = bytes_at(p + 8);
    for (int j = 0; j < 8; ++j) {
        const int ls = ((low[j / 2] >> (4 * (j % 2))) & 0x0F) | (((high >> (2 * j)) & 3) << 4);
        set_block_scales(out, j, d * static_cast<float>(ls - 32), 0.0f);
        unpack_nibbles(qs + 16 * j, out.q + 32 * j, [](V16 v, size_t, int) { return non_linear(v); });
    }
}

// Codes of 32 values from 32 bytes: (src >> shift) & mask, plus ((extra >> extra_shift) & extra_mask)
// << extra_to when extra is given, minus bias.
struct Bits {
    const uint8_t * src;
    int shift;
    uint8_t mask;
    const uint8_t * extra = nullptr;
    int extra_shift = 0;
    uint8_t extra_mask = 0;
    int extra_to = 0;
    uint8_t bias = 0;
};

HWY_INLINE void unpack_bits(const Bits & b, int8_t * q) {
    const D32 d;
    const size_t N = hn::Lanes(d);
    for (size_t l = 0; l < 32; l += N) {
        auto v = hn::And(hn::ShiftRightSame(hn::LoadU(d, b.src + l), b.shift), hn::Set(d, b.mask));
        if (b.extra) {
            const auto e = hn::And(hn::ShiftRightSame(hn::LoadU(d, b.extra + l), b.extra_shift),
                                   hn::Set(d, b.extra_mask));
            v = hn::Or(v, hn::ShiftLeftSame(e, b.extra_to));
        }
        store_codes(d, hn::Sub(v, hn::Set(d, b.bias)), q + l);
    }
}

// Q4_K (144 bytes): d, dmin (F16), 12 scale bytes, 128 bytes of nibbles: each 32 bytes hold two
// sub-blocks of 32 (low nibbles the first, high nibbles the second); value = d*sc*q - dmin*m.
// Q5_K (176 bytes) has 32 bytes of fifth bits (bit j of byte l for value l of sub-block j) before the
// nibbles.
template <bool kFifthBits>
void DecodeQ45K(const char * p, DecodedRun & out) {
    const float d = f16_at(p), dmin = f16_at(p + 2);
    uint8_t scales[8], mins[8];
    k_scales_mins(bytes_at(p + 4), scales, mins);
    for (int j = 0; j < 8; ++j)
        set_block_scales(out, j, d * static_cast<float>(scales[j]), dmin * static_cast<float>(mins[j]));
    const uint8_t * qh = bytes_at(p + 16);
    const uint8_t * qs = bytes_at(p + (kFifthBits ? 48 : 16));
    for (int j = 0; j < 8; ++j) {
        Bits bits{qs + 32 * (j / 2), 4 * (j % 2), 0x0F};
        if (kFifthBits) {
            bits.extra = qh;
            bits.extra_shift = j;
            bits.extra_mask = 1;
            bits.extra_to = 4;
        }
        unpack_bits(bits, out.q + 32 * j);
    }
}

// Q6_K (210 bytes): 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 int8 scales, d (F16).
// Each half of 128 values uses 64 low bytes and 32 high bytes: value l + 32 k (k = 0..3) takes the
// nibble of low byte l + 32 (k % 2) (the high nibble for k >= 2) and bits 2k of high byte l; value =
// d * scale[i / 16] * (q - 32).
void DecodeQ6K(const char * p, DecodedRun & out) {
    const uint8_t * ql = bytes_at(p);
    const uint8_t * qh = bytes_at(p + 128);
    const auto * sc = reinterpret_cast<const int8_t *>(p + 192);
    const float d = f16_at(p + 208);
    for (int g = 0; g < kGroups; ++g) {
        out.scale[g] = d * static_cast<float>(sc[g]);
        out.offset[g] = 0.0f;
    }
    for (int half = 0; half < 2; ++half)
        for (int k = 0; k < 4; ++k)
            unpack_bits({ql + 64 * half + 32 * (k % 2), 4 * (k / 2), 0x0F, qh + 32 * half, 2 * k, 3, 4, 32},
                        out.q + 128 * half + 32 * k);
}

// Q2_K (84 bytes): 16 scale bytes (low nibble scale, high nibble minimum), 64 bytes of 2-bit codes,
// d, dmin (F16). Each half of 128 values uses 32 code bytes: value l + 32 k takes bits 2k of byte l;
// value = d * sc * q - dmin * m per 16.
void DecodeQ2K(const char * p, DecodedRun & out) {
    const uint8_t * scales = bytes_at(p);
    const uint8_t * qs = bytes_at(p + 16);
    const float d = f16_at(p + 80), dmin = f16_at(p + 82);
    for (int g = 0; g < kGroups; ++g) {
        out.scale[g] = d * static_cast<float>(scales[g] & 0x0F);
        out.offset[g] = dmin * static_cast<float>(scales[g] >> 4);
    }
    for (int half = 0; half < 2; ++half)
        for (int k = 0; k < 4; ++k)
            unpack_bits({qs + 32 * half, 2 * k, 3}, out.q + 128 * half + 32 * k);
}

// Q3_K (110 bytes): 32 bytes of high-bit masks, 64 bytes of 2-bit codes, 12 bytes of 6-bit scales,
// d (F16). Codes are laid out as Q2_K's; value l + 32 k of half h subtracts 4 unless bit (4h + k) of
// mask byte l is set; the scale of group g is its 6-bit value minus 32: the low 4 bits from byte
// g % 8 (low nibble for g < 8), the top 2 from byte 8 + g % 4, bits 2 (g / 4).
void DecodeQ3K(const char * p, DecodedRun & out) {
    const uint8_t * hmask = bytes_at(p);
    const uint8_t * qs = bytes_at(p + 32);
    const uint8_t * s = bytes_at(p + 96);
    const float d = f16_at(p + 108);
    for (int g = 0; g < kGroups; ++g) {
        const int low = (s[g % 8] >> (4 * (g / 8))) & 0x0F;
        const int high = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
        out.scale[g] = d * static_cast<float>((low | (high << 4)) - 32);
        out.offset[g] = 0.0f;
    }
    // code + 4 * mask bit - 4: the mask bit lands on bit 2 of the code.
    for (int half = 0; half < 2; ++half)
        for (int k = 0; k < 4; ++k)
            unpack_bits({qs + 32 * half, 2 * k, 3, hmask, 4 * half + k, 1, 2, 4},
                        out.q + 128 * half + 32 * k);
}

// The ternary and low-bit formats (docs/quantization.md): one F16 scale d a block, x = d * (code - 1)
// (Q1_0: x = d * (2 bit - 1)), so every group of a block takes d.
void set_run_scale(DecodedRun & out, int64_t first_group, int64_t groups, float d) {
    for (int64_t g = first_group; g < first_group + groups; ++g) {
        out.scale[g] = d;
        out.offset[g] = 0.0f;
    }
}

// TQ2_0 (66 bytes): element 128 g + 32 l + m is the 2-bit code in bits 2l of byte 32 g + m.
void DecodeTq2(const char * p, DecodedRun & out) {
    set_run_scale(out, 0, kGroups, f16_at(p + 64));
    for (int g = 0; g < 2; ++g)
        for (int l = 0; l < 4; ++l)
            unpack_bits({bytes_at(p) + 32 * g, 2 * l, 3, nullptr, 0, 0, 0, 1}, out.q + 128 * g + 32 * l);
}

// The five codes (digit - 1) of every TQ1_0 byte (the digits as below).
inline constexpr auto kTq1Codes = [] {
    std::array<std::array<int8_t, 5>, 256> codes{};
    constexpr unsigned kPow3[5] = {1, 3, 9, 27, 81};
    for (unsigned byte = 0; byte < 256; ++byte)
        for (unsigned n = 0; n < 5; ++n)
            codes[byte][n] = static_cast<int8_t>(((((byte * kPow3[n]) & 0xFF) * 3) >> 8) - 1);
    return codes;
}();

// TQ1_0 (54 bytes): five base-3 digits a byte (digit n of byte b is ((b * 3^n mod 256) * 3) >> 8);
// bytes 0..31 hold elements m + 32 n, bytes 32..47 elements 160 + m + 16 n, qh[m] (bytes 48..51)
// four digits of elements 240 + m + 4 n.
void DecodeTq1(const char * p, DecodedRun & out) {
    set_run_scale(out, 0, kGroups, f16_at(p + 52));
    const uint8_t * qs = bytes_at(p);
    const auto spread = [&](const uint8_t * bytes, int count, int digits, int stride, int8_t * q) {
        for (int m = 0; m < count; ++m) {
            const auto & codes = kTq1Codes[bytes[m]];
            for (int n = 0; n < digits; ++n)
                q[m + stride * n] = codes[n];
        }
    };
    spread(qs, 32, 5, 32, out.q);
    spread(qs + 32, 16, 5, 16, out.q + 160);
    spread(qs + 48, 4, 4, 4, out.q + 240);
}

// The four codes (code - 1, element i in bits 2 i) of every Q2_0 byte, as one little-endian word.
inline constexpr auto kQ2_0Codes = [] {
    std::array<uint32_t, 256> words{};
    for (unsigned byte = 0; byte < 256; ++byte)
        for (unsigned i = 0; i < 4; ++i)
            words[byte] |= static_cast<uint32_t>(static_cast<uint8_t>(((byte >> (2 * i)) & 3) - 1))
                           << (8 * i);
    return words;
}();

// Q2_0 (64 values, 18 bytes): F16 d, element j in bits 2 (j % 4) of byte j / 4.
void DecodeQ2_0(const char * p, DecodedRun & out) {
    for (int b = 0; b < 4; ++b, p += 18) {
        set_run_scale(out, 4 * b, 4, f16_at(p));
        const uint8_t * qs = bytes_at(p + 2);
        for (int j = 0; j < 16; ++j)
            std::memcpy(out.q + 64 * b + 4 * j, &kQ2_0Codes[qs[j]], 4);
    }
}

// Q1_0 (128 values, 18 bytes): F16 d, bit j % 8 of byte j / 8 set: +d, clear: -d. A sign byte's
// eight codes are all -1 bytes (0xFF) with the set bits' bytes turned into +1 (0x01) by its mask.
void DecodeQ1_0(const char * p, DecodedRun & out) {
    for (int b = 0; b < 2; ++b, p += 18) {
        set_run_scale(out, 8 * b, 8, f16_at(p));
        const uint8_t * bits = bytes_at(p + 2);
        for (int j = 0; j < 16; ++j) {
            const uint64_t codes = ~uint64_t{0} ^ (kSignMasks[bits[j]] & 0xFEFEFEFEFEFEFEFEull);
            std::memcpy(out.q + 128 * b + 8 * j, &codes, 8);
        }
    }
}

// ---- The i-quants (docs/quantization.md): codes are the signed grid values, the sub-block scales
// the per-16 scales (repeated for both groups of a 32-value sub-block). Each sub-block of 32 values
// is one step: the vector targets gather its grid points (by indices computed in lanes) and negate
// the bytes whose sign bit is set; the scalar target does the same a group of 8 at a time in a word.

#if HWY_TARGET != HWY_SCALAR
using DW = hn::Repartition<uint32_t, D32>;  // grid points of 4 values (IQ3)
using DWI = hn::RebindToSigned<DW>;
using DQ = hn::Repartition<uint64_t, D32>;  // grid points of 8 values (IQ2, IQ1)
using DQI = hn::RebindToSigned<DQ>;
using DH = hn::Rebind<int32_t, DQI>;  // their indices, computed in 32 bits

// Byte l of 32 values belongs to group l / 8 and takes bit l % 8 of that group's sign byte.
HWY_ALIGN constexpr uint8_t kGroupOfByte[32] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                                2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
HWY_ALIGN constexpr uint8_t kBitOfByte[32] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128,
                                              1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
// Multiples of 0..7, for the per-lane shifts that pick a point's index high bits.
HWY_ALIGN constexpr int32_t kTimes1[8] = {0, 1, 2, 3, 4, 5, 6, 7};
HWY_ALIGN constexpr int32_t kTimes2[4] = {0, 2, 4, 6};
HWY_ALIGN constexpr int32_t kTimes3[4] = {0, 3, 6, 9};
HWY_ALIGN constexpr int32_t kTimes4[4] = {0, 4, 8, 12};

// Bytes first .. first + lanes of 32 values: byte l takes byte l / 8 of word.
HWY_INLINE hn::Vec<D32> group_bytes(uint32_t word, size_t first) {
    const D32 d;
    return hn::TableLookupBytes(hn::BitCast(d, hn::Set(DW(), word)), hn::Load(d, kGroupOfByte + first));
}

// 32 codes at q: the grid point bytes points(first) of lanes first .., negated where the bits of
// signs (byte g for group g) are set.
template <class Points>
HWY_INLINE void put_signed_points(Points points, uint32_t signs, int8_t * q) {
    const D32 d;
    for (size_t j = 0; j < 32; j += hn::Lanes(d)) {
        const auto bits = hn::And(group_bytes(signs, j), hn::Load(d, kBitOfByte + j));
        const auto negative = hn::VecFromMask(d, hn::Ne(bits, hn::Zero(d)));
        store_codes(d, hn::Sub(hn::Xor(points(j), negative), negative), q + j);
    }
}

// 32 IQ1 codes at q: 8 · point + the shift byte of each group (byte g of shifts: +1 or -1).
template <class Points>
HWY_INLINE void put_shifted_points(Points points, uint32_t shifts, int8_t * q) {
    const D32 d;
    for (size_t j = 0; j < 32; j += hn::Lanes(d))
        store_codes(d, hn::Add(hn::ShiftLeft<3>(points(j)), group_bytes(shifts, j)), q + j);
}

// The grid points at indices (one a lane), as bytes: points of 8 values (64-bit words, indices
// computed in 32 bits) or of 4 (32-bit words).
template <size_t N>
HWY_INLINE hn::Vec<D32> gather(const std::array<uint64_t, N> & words, hn::Vec<DH> index) {
    return hn::BitCast(D32(), hn::GatherIndex(DQ(), words.data(), hn::PromoteTo(DQI(), index)));
}
template <size_t N>
HWY_INLINE hn::Vec<D32> gather(const std::array<uint32_t, N> & words, hn::Vec<DWI> index) {
    return hn::BitCast(D32(), hn::GatherIndex(DW(), words.data(), index));
}
template <typename Word>
using IndexTag = std::conditional_t<sizeof(Word) == 8, DH, DWI>;

// Lanes of indices from bytes (or 16-bit words) at p.
template <class DI, typename T>
HWY_INLINE hn::Vec<DI> widen(DI di, const T * p) {
    return hn::PromoteTo(di, hn::LoadU(hn::Rebind<T, DI>(), p));
}

// Grid indices of the lanes: the low bytes at low, and above them the high bits (word >> shift[lane])
// & mask.
template <class DI>
HWY_INLINE hn::Vec<DI> split_indices(DI di, const uint8_t * low, unsigned word, const int32_t * shift,
                                     int32_t mask) {
    const auto high =
        hn::And(hn::Set(di, static_cast<int32_t>(word)) >> hn::LoadU(di, shift), hn::Set(di, mask));
    return hn::Or(widen(di, low), hn::ShiftLeft<8>(high));
}

// The 32 codes of an IQ2_S or IQ3_S sub-block: points at split indices (low bytes at low, high bits
// from high), negated by the 4 sign bytes signs.
template <typename Word, size_t N>
HWY_INLINE void put_split_points(const std::array<Word, N> & words, const uint8_t * low, unsigned high,
                                 const int32_t * shift, int32_t mask, uint32_t signs, int8_t * q) {
    put_signed_points(
        [&](size_t j) {
            const size_t first = j / sizeof(Word);  // the lanes' first point
            return gather(words, split_indices(IndexTag<Word>(), low + first, high, shift + first, mask));
        },
        signs, q);
}
#endif

// IQ2_XXS (66 bytes): d (F16), then per 32 values 4 grid index bytes and a word of 4 × 7 sign bits
// with the 4-bit scale s on top; value = d · (0.5 + s) / 4 · ±grid.
void DecodeIq2Xxs(const char * p, DecodedRun & out) {
    const float d = f16_at(p);
    const uint8_t * b = bytes_at(p + 2);
    for (int ib = 0; ib < 8; ++ib, b += 8) {
        const uint32_t aux = load_u32(b + 4);
        set_block_scales(out, ib, iq_half_step_scale(d, aux >> 28, 0.25f), 0.0f);
#if HWY_TARGET == HWY_SCALAR
        for (int k = 0; k < 4; ++k)
            put_signed_codes(out.q + 32 * ib + 8 * k, kIq2xxsWords[b[k]],
                             kParitySignMasks[aux >> 7 * k & 127]);
#else
        put_signed_points([b](size_t j) { return gather(kIq2xxsWords, widen(DH(), b + j / 8)); },
                          parity_signs(aux & 127, aux >> 7 & 127, aux >> 14 & 127, aux >> 21 & 127),
                          out.q + 32 * ib);
#endif
    }
}

// IQ2_XS (74 bytes): d, 32 words (9-bit grid index | 7 sign bits << 9) of 8 values, 8 bytes of 4-bit
// scales per 16.
void DecodeIq2Xs(const char * p, DecodedRun & out) {
    const float d = f16_at(p);
    const uint8_t * b = bytes_at(p);
    for (int g = 0; g < kGroups; ++g) {
        out.scale[g] = iq_half_step_scale(d, iq_nibble(b + 66, g), 0.25f);
        out.offset[g] = 0.0f;
    }
#if HWY_TARGET == HWY_SCALAR
    for (int k = 0; k < 32; ++k) {
        const unsigned w = load_u16(b + 2 + 2 * k);
        put_signed_codes(out.q + 8 * k, kIq2xsWords[w & 511], kParitySignMasks[w >> 9]);
    }
#else
    for (int ib = 0; ib < 8; ++ib) {
        HWY_ALIGN uint16_t words[4];  // the sub-block's 4 words, aligned
        std::memcpy(words, b + 2 + 8 * ib, sizeof words);
        const uint32_t signs = parity_signs(words[0] >> 9, words[1] >> 9, words[2] >> 9, words[3] >> 9);
        put_signed_points(
            [&words](size_t j) {
                return gather(kIq2xsWords, hn::And(widen(DH(), words + j / 8), hn::Set(DH(), 511)));
            },
            signs, out.q + 32 * ib);
    }
#endif
}

// IQ2_S (82 bytes): d, 32 index low bytes, 32 sign bytes, 8 bytes of index high bits (2 each), 8 bytes
// of 4-bit scales per 16.
void DecodeIq2S(const char * p, DecodedRun & out) {
    const float d = f16_at(p);
    const uint8_t * b = bytes_at(p);
    for (int g = 0; g < kGroups; ++g) {
        out.scale[g] = iq_half_step_scale(d, iq_nibble(b + 74, g), 0.25f);
        out.offset[g] = 0.0f;
    }
#if HWY_TARGET == HWY_SCALAR
    for (int k = 0; k < 32; ++k)
        put_signed_codes(out.q + 8 * k, kIq2sWords[iq_split_index<2>(b + 2, b + 66, k)],
                         kSignMasks[b[34 + k]]);
#else
    for (int ib = 0; ib < 8; ++ib)
        put_split_points(kIq2sWords, b + 2 + 4 * ib, b[66 + ib], kTimes2, 3, load_u32(b + 34 + 4 * ib),
                         out.q + 32 * ib);
#endif
}

// IQ3_XXS (98 bytes): d, 64 grid index bytes (4 values each), per 32 values a word of 4 × 7 sign bits
// (one 7-bit field per 8 values) with the 4-bit scale s on top; value = d · (0.5 + s) / 2 · ±grid.
void DecodeIq3Xxs(const char * p, DecodedRun & out) {
    const float d = f16_at(p);
    const uint8_t * index = bytes_at(p + 2);
    const uint8_t * words = bytes_at(p + 66);
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t aux = load_u32(words + 4 * ib);
        set_block_scales(out, ib, iq_half_step_scale(d, aux >> 28, 0.5f), 0.0f);
        const uint8_t * points = index + 8 * ib;
#if HWY_TARGET == HWY_SCALAR
        for (int k = 0; k < 4; ++k)
            put_signed_codes(out.q + 32 * ib + 8 * k,
                             kIq3xxsWords[points[2 * k]] | uint64_t{kIq3xxsWords[points[2 * k + 1]]} << 32,
                             kParitySignMasks[aux >> 7 * k & 127]);
#else
        put_signed_points([points](size_t j) { return gather(kIq3xxsWords, widen(DWI(), points + j / 4)); },
                          parity_signs(aux & 127, aux >> 7 & 127, aux >> 14 & 127, aux >> 21 & 127),
                          out.q + 32 * ib);
#endif
    }
}

// IQ3_S (110 bytes): d, 64 index low bytes, 8 bytes of index high bits (1 each), 32 sign bytes (one
// per 8 values), 4 bytes of 4-bit scales s per 32; value = d · (2s + 1) · ±grid.
void DecodeIq3S(const char * p, DecodedRun & out) {
    const float d = f16_at(p);
    const uint8_t * b = bytes_at(p);
    for (int ib = 0; ib < 8; ++ib) {
        set_block_scales(out, ib, iq_odd_scale(d, iq_nibble(b + 106, ib)), 0.0f);
#if HWY_TARGET == HWY_SCALAR
        for (int k = 4 * ib; k < 4 * ib + 4; ++k)
            put_signed_codes(out.q + 8 * k,
                             kIq3sWords[iq_split_index<1>(b + 2, b + 66, 2 * k)] |
                                 uint64_t{kIq3sWords[iq_split_index<1>(b + 2, b + 66, 2 * k + 1)]} << 32,
                             kSignMasks[b[74 + k]]);
#else
        put_split_points(kIq3sWords, b + 2 + 8 * ib, b[66 + ib], kTimes1, 1, load_u32(b + 74 + 4 * ib),
                         out.q + 32 * ib);
#endif
    }
}

// IQ1_S (50 bytes): d, 32 index low bytes, per 32 values a word: 4 × 3 index high bits, the 3-bit
// scale s << 12, the shift's sign << 15; value = d · (2s + 1) · (grid ± 1/8) = d · (2s + 1) / 8 · code.
void DecodeIq1S(const char * p, DecodedRun & out) {
    const float d = f16_at(p);
    const uint8_t * b = bytes_at(p);
    for (int ib = 0; ib < 8; ++ib) {
        const unsigned qh = load_u16(b + 34 + 2 * ib);
        set_block_scales(out, ib, iq_odd_scale(d, qh >> 12 & 7) * kIq1Delta, 0.0f);
        const uint8_t * low = b + 2 + 4 * ib;
#if HWY_TARGET == HWY_SCALAR
        for (int k = 0; k < 4; ++k)
            put_iq1_codes(out.q + 32 * ib + 8 * k, kIq1sWords[low[k] | (qh >> 3 * k & 7) << 8],
                          (qh & 0x8000) != 0);
#else
        put_shifted_points(
            [low, qh](size_t j) {
                return gather(kIq1sWords, split_indices(DH(), low + j / 8, qh, kTimes3 + j / 8, 7));
            },
            qh & 0x8000 ? 0xFFFFFFFFu : 0x01010101u, out.q + 32 * ib);
#endif
    }
}

// IQ1_M (56 bytes): 32 index low bytes, per 8 values a nibble (3 index high bits, the shift's sign
// << 3), 4 words of 4 × 3-bit scales s per 16 whose top nibbles hold d. The shift's sign changes
// within a group of 16, so it lives in the codes: value = d · (2s + 1) / 8 · (8 · grid ± 1).
void DecodeIq1M(const char * p, DecodedRun & out) {
    const uint8_t * b = bytes_at(p);
    const float d = ggml_fp16_to_fp32(core::quant::iq1_m_d_bits(b));
    for (int g = 0; g < kGroups; ++g) {
        const unsigned s = load_u16(b + 48 + 2 * (g / 4)) >> 3 * (g % 4) & 7u;
        out.scale[g] = iq_odd_scale(d, s) * kIq1Delta;
        out.offset[g] = 0.0f;
    }
#if HWY_TARGET == HWY_SCALAR
    for (int k = 0; k < 32; ++k) {
        const unsigned h = iq_nibble(b + 32, k);
        put_iq1_codes(out.q + 8 * k, kIq1sWords[b[k] | (h & 7) << 8], (h & 8) != 0);
    }
#else
    for (int ib = 0; ib < 8; ++ib) {
        const uint8_t * low = b + 4 * ib;
        const unsigned high = load_u16(b + 32 + 2 * ib);  // the nibbles of the sub-block's 4 groups
        // Byte g: 0xFF (-1) where group g's shift is negative, else 0x01.
        const uint32_t negative =
            (high >> 3 & 1) | (high >> 7 & 1) << 8 | (high >> 11 & 1) << 16 | (high >> 15 & 1) << 24;
        put_shifted_points(
            [low, high](size_t j) {
                return gather(kIq1sWords, split_indices(DH(), low + j / 8, high, kTimes4 + j / 8, 7));
            },
            0x01010101u | negative * 0xFE, out.q + 32 * ib);
    }
#endif
}

template <void (*kDecode)(const char *, DecodedRun &)>
void Runs(const char * p, size_t run_bytes, int64_t runs, DecodedRun * out) {
    for (int64_t r = 0; r < runs; ++r)
        kDecode(p + static_cast<size_t>(r) * run_bytes, out[r]);
}

DecodeRun DecoderOf(ggml_type type) {
    switch (type) {
        case GGML_TYPE_Q8_0:
            return Runs<DecodeQ8_0>;
        case GGML_TYPE_Q4_0:
            return Runs<DecodeQ4_0>;
        case GGML_TYPE_Q4_1:
            return Runs<DecodeQ4_1>;
        case GGML_TYPE_Q5_0:
            return Runs<DecodeQ5_0>;
        case GGML_TYPE_Q5_1:
            return Runs<DecodeQ5_1>;
        case GGML_TYPE_IQ4_NL:
            return Runs<DecodeIq4Nl>;
        case GGML_TYPE_IQ4_XS:
            return Runs<DecodeIq4Xs>;
        case GGML_TYPE_MXFP4:
            return Runs<DecodeMxfp4>;
        case GGML_TYPE_NVFP4:
            return Runs<DecodeNvfp4>;
        case GGML_TYPE_Q2_K:
            return Runs<DecodeQ2K>;
        case GGML_TYPE_Q3_K:
            return Runs<DecodeQ3K>;
        case GGML_TYPE_Q4_K:
            return Runs<DecodeQ45K<false>>;
        case GGML_TYPE_Q5_K:
            return Runs<DecodeQ45K<true>>;
        case GGML_TYPE_Q6_K:
            return Runs<DecodeQ6K>;
        case GGML_TYPE_TQ1_0:
            return Runs<DecodeTq1>;
        case GGML_TYPE_TQ2_0:
            return Runs<DecodeTq2>;
        case GGML_TYPE_Q1_0:
            return Runs<DecodeQ1_0>;
        case GGML_TYPE_Q2_0:
            return Runs<DecodeQ2_0>;
        case GGML_TYPE_IQ2_XXS:
            return Runs<DecodeIq2Xxs>;
        case GGML_TYPE_IQ2_XS:
            return Runs<DecodeIq2Xs>;
        case GGML_TYPE_IQ2_S:
            return Runs<DecodeIq2S>;
        case GGML_TYPE_IQ3_XXS:
            return Runs<DecodeIq3Xxs>;
        case GGML_TYPE_IQ3_S:
            return Runs<DecodeIq3S>;
        case GGML_TYPE_IQ1_S:
            return Runs<DecodeIq1S>;
        case GGML_TYPE_IQ1_M:
            return Runs<DecodeIq1M>;
        default:
            return nullptr;
    }
}

}  // namespace ggx::cpu::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ggx::cpu::quant {
HWY_EXPORT(DecoderOf);

DecodeRun decoder_of(ggml_type type) { return HWY_DYNAMIC_DISPATCH(DecoderOf)(type); }
}  // namespace ggx::cpu::quant
#endif
