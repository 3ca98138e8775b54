// Type traits, F16/BF16 conversions and row quantization, checked against oracles written here from
// the format definitions (field decoding with std::ldexp, nearest-even search over all values); the
// vectorised row functions are checked bit for bit against the single-value functions (and scalar
// Q8_0 / Q4_0 references) on every Highway target compiled in.
#include <ggml.h>
#include <hwy/targets.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace ggx::core {
// The Highway target the row conversions dispatch to now (src/core/types.cpp; for tests only).
int64_t convert_dispatch_target();
}  // namespace ggx::core

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
float float_of(uint32_t u) { return std::bit_cast<float>(u); }

// BF16 values as their bits: ggml_bf16_t is a struct holding them.
float bf16_to_f32(uint16_t bits) { return ggml_bf16_to_fp32(ggml_bf16_t{bits}); }
uint16_t f32_to_bf16(float f) { return ggml_fp32_to_bf16(f).bits; }
void bf16_row_to_f32(const uint16_t * x, float * y, int64_t n) {
    ggml_bf16_to_fp32_row(reinterpret_cast<const ggml_bf16_t *>(x), y, n);
}
void f32_row_to_bf16(const float * x, uint16_t * y, int64_t n) {
    ggml_fp32_to_bf16_row(x, reinterpret_cast<ggml_bf16_t *>(y), n);
}
uint16_t u16(unsigned v) { return static_cast<uint16_t>(v); }

// ---- Oracles ------------------------------------------------------------------------------------

// A binary format with a sign bit, exp_bits exponent bits and man_bits mantissa bits (IEEE style).
struct Format {
    const char * name;
    int exp_bits;
    int man_bits;

    int bias() const { return (1 << (exp_bits - 1)) - 1; }
    unsigned exp_mask() const { return (1u << exp_bits) - 1u; }
    uint16_t sign_bit() const { return u16(1u << (exp_bits + man_bits)); }
    uint16_t inf_code() const { return u16(exp_mask() << man_bits); }

    bool is_nan(uint16_t h) const {
        return ((h >> man_bits) & exp_mask()) == exp_mask() && (h & ((1u << man_bits) - 1u)) != 0;
    }

    // Value of a pattern from its fields, in double (exact for both formats).
    double value(uint16_t h) const {
        const unsigned e = (h >> man_bits) & exp_mask();
        const unsigned m = h & ((1u << man_bits) - 1u);
        double magnitude = 0.0;
        if (e == exp_mask()) {
            magnitude = m == 0 ? std::numeric_limits<double>::infinity() : std::nan("");
        } else if (e == 0) {
            magnitude = std::ldexp(static_cast<double>(m), 1 - bias() - man_bits);
        } else {
            magnitude = std::ldexp(static_cast<double>((1u << man_bits) + m),
                                   static_cast<int>(e) - bias() - man_bits);
        }
        return (h & sign_bit()) != 0 ? -magnitude : magnitude;
    }

    // Where rounding above the largest finite value ends: the start of the binade past it.
    double overflow_value() const { return std::ldexp(1.0, static_cast<int>(exp_mask()) - bias()); }
};

constexpr Format kF16{"f16", 5, 10};
constexpr Format kBF16{"bf16", 8, 7};

// Round to nearest even by searching the sorted list of all non-negative finite values.
class NearestEven {
public:
    explicit NearestEven(const Format & format) : format_(format) {
        for (unsigned h = 0; h < format.inf_code(); ++h)
            values_.push_back(format.value(u16(h)));
    }

    size_t count() const { return values_.size(); }
    double value_at(size_t i) const { return i < values_.size() ? values_[i] : format_.overflow_value(); }

    uint16_t round(float f) const {
        if (std::isnan(f)) return 0;  // callers check NaN separately
        const auto sign = std::signbit(f) ? format_.sign_bit() : u16(0);
        const double x = std::fabs(static_cast<double>(f));
        if (x >= format_.overflow_value()) return u16(sign | format_.inf_code());
        const size_t lo =
            static_cast<size_t>(std::upper_bound(values_.begin(), values_.end(), x) - values_.begin()) - 1;
        const double lo_value = values_[lo];
        if (lo_value == x) return u16(sign | lo);
        const double mid = (lo_value + value_at(lo + 1)) / 2.0;  // exact in double
        size_t pick = lo;
        if (x > mid || (x == mid && (lo & 1u) != 0)) pick = lo + 1;  // lo + 1 may be the inf code
        return u16(sign | pick);
    }

private:
    Format format_;
    std::vector<double> values_;
};

const NearestEven & f16_oracle() {
    static const NearestEven oracle(kF16);
    return oracle;
}

const NearestEven & bf16_oracle() {
    static const NearestEven oracle(kBF16);
    return oracle;
}

// Floats around every midpoint between neighbours (and between the largest value and overflow),
// one ULP either side, both signs.
std::vector<float> midpoint_probes(const NearestEven & oracle) {
    std::vector<float> probes;
    for (size_t i = 0; i < oracle.count(); ++i) {
        const double mid = (oracle.value_at(i) + oracle.value_at(i + 1)) / 2.0;
        const auto f = static_cast<float>(mid);
        EXPECT_EQ(static_cast<double>(f), mid) << "midpoint not a float at index " << i;
        for (float p : {f, std::nextafter(f, 0.0f), std::nextafter(f, kInf)}) {
            probes.push_back(p);
            probes.push_back(-p);
        }
    }
    return probes;
}

// Every 9973rd float bit pattern: a sweep across all exponents and mantissas.
std::vector<float> sweep_probes() {
    std::vector<float> probes;
    for (uint64_t u = 0; u <= 0xffffffffu; u += 9973)
        probes.push_back(float_of(static_cast<uint32_t>(u)));
    return probes;
}

// ---- Traits -------------------------------------------------------------------------------------

struct ExpectedTraits {
    ggml_type type;
    const char * name;
    int64_t blck;
    size_t size;
    bool quantized;
    bool is_float;
};

// The types ggx computes with (test_abi.cpp checks the traits of every ggml type).
constexpr ExpectedTraits kExpected[] = {
    {GGML_TYPE_F32, "f32", 1, 4, false, true},     {GGML_TYPE_F16, "f16", 1, 2, false, true},
    {GGML_TYPE_BF16, "bf16", 1, 2, false, true},   {GGML_TYPE_I8, "i8", 1, 1, false, false},
    {GGML_TYPE_I16, "i16", 1, 2, false, false},    {GGML_TYPE_I32, "i32", 1, 4, false, false},
    {GGML_TYPE_Q8_0, "q8_0", 32, 34, true, false}, {GGML_TYPE_Q4_0, "q4_0", 32, 18, true, false},
};

TEST(TypeTraits, ComputedTypes) {
    for (const auto & e : kExpected) {
        SCOPED_TRACE(e.name);
        EXPECT_STREQ(ggml_type_name(e.type), e.name);
        EXPECT_EQ(ggml_blck_size(e.type), e.blck);
        EXPECT_EQ(ggml_type_size(e.type), e.size);
        EXPECT_EQ(ggml_is_quantized(e.type), e.quantized);
        EXPECT_EQ(ggml_is_float_type(e.type), e.is_float);
    }
    EXPECT_EQ(sizeof(ggml_block_q8_0), 34u);
    EXPECT_EQ(sizeof(ggml_block_q4_0), 18u);
}

// The other types have traits but no conversion: the row helpers refuse them and write nothing.
TEST(TypeTraits, TypesWithoutConversionAreRefused) {
    std::vector<float> x(256, 1.0f);
    for (const ggml_type type :
         {GGML_TYPE_Q4_K, GGML_TYPE_IQ2_XXS, GGML_TYPE_I64, GGML_TYPE_F64}) {
        SCOPED_TRACE(ggml_type_name(type));
        std::vector<uint8_t> row(ggml_row_size(type, 256), 0xab);
        EXPECT_EQ(ggml_quantize_row(type, x.data(), row.data(), 256), 0u);
        EXPECT_TRUE(std::all_of(row.begin(), row.end(), [](uint8_t b) { return b == 0xab; }));
        std::vector<float> y(256, 7.0f);
        EXPECT_FALSE(ggml_dequantize_row(type, row.data(), y.data(), 256));
        EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return v == 7.0f; }));
    }
}

TEST(TypeTraits, UnknownTypeName) {
    EXPECT_STREQ(ggml_type_name(GGML_TYPE_COUNT), "unknown");
    EXPECT_STREQ(ggml_type_name(static_cast<ggml_type>(4)), "unknown");  // a removed format's id
    EXPECT_STREQ(ggml_type_name(static_cast<ggml_type>(-1)), "unknown");
    EXPECT_STREQ(ggml_type_name(static_cast<ggml_type>(1000)), "unknown");
}

TEST(TypeTraits, RowSize) {
    EXPECT_EQ(ggml_row_size(GGML_TYPE_F32, 10), 40u);
    EXPECT_EQ(ggml_row_size(GGML_TYPE_F16, 7), 14u);
    EXPECT_EQ(ggml_row_size(GGML_TYPE_BF16, 3), 6u);
    EXPECT_EQ(ggml_row_size(GGML_TYPE_I8, 5), 5u);
    EXPECT_EQ(ggml_row_size(GGML_TYPE_I16, 5), 10u);
    EXPECT_EQ(ggml_row_size(GGML_TYPE_I32, 5), 20u);
    EXPECT_EQ(ggml_row_size(GGML_TYPE_Q8_0, 32), 34u);
    EXPECT_EQ(ggml_row_size(GGML_TYPE_Q8_0, 64), 68u);
    EXPECT_EQ(ggml_row_size(GGML_TYPE_Q4_0, 32), 18u);
    EXPECT_EQ(ggml_row_size(GGML_TYPE_Q4_0, 96), 54u);
    EXPECT_EQ(ggml_row_size(GGML_TYPE_F32, int64_t{1} << 32), size_t{1} << 34);
    for (const auto & e : kExpected)
        EXPECT_EQ(ggml_row_size(e.type, 0), 0u) << e.name;
}

// ---- F16 ----------------------------------------------------------------------------------------

TEST(Fp16, ExhaustiveToFp32MatchesFieldDecoding) {
    for (unsigned u = 0; u <= 0xffffu; ++u) {
        const uint16_t h = u16(u);
        const float f = ggml_fp16_to_fp32(h);
        if (kF16.is_nan(h)) {
            ASSERT_TRUE(std::isnan(f)) << std::hex << u;
            ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << u;
            ASSERT_NE(bits_of(f) & 0x00400000u, 0u) << "not quiet: " << std::hex << u;
        } else {
            ASSERT_EQ(bits_of(f), bits_of(static_cast<float>(kF16.value(h)))) << std::hex << u;
        }
    }
}

TEST(Fp16, ExhaustiveRoundTrip) {
    for (unsigned u = 0; u <= 0xffffu; ++u) {
        const uint16_t h = u16(u);
        const uint16_t back = ggml_fp32_to_fp16(ggml_fp16_to_fp32(h));
        if (kF16.is_nan(h)) {
            ASSERT_TRUE(kF16.is_nan(back)) << std::hex << u << " -> " << back;
            ASSERT_EQ(back & 0x8000u, h & 0x8000u) << std::hex << u;
            ASSERT_NE(back & 0x0200u, 0u) << "not quiet: " << std::hex << u;
        } else {
            ASSERT_EQ(back, h) << std::hex << u;
        }
    }
}

TEST(Fp16, RoundsMidpointsAndNeighboursLikeOracle) {
    const auto probes = midpoint_probes(f16_oracle());
    ASSERT_EQ(probes.size(), 6u * 0x7c00u);
    for (float f : probes) {
        ASSERT_EQ(ggml_fp32_to_fp16(f), f16_oracle().round(f)) << std::hexfloat << f;
    }
}

TEST(Fp16, RoundsFloatSweepLikeOracle) {
    for (float f : sweep_probes()) {
        const uint16_t h = ggml_fp32_to_fp16(f);
        if (std::isnan(f)) {
            ASSERT_TRUE(kF16.is_nan(h)) << std::hex << bits_of(f);
            ASSERT_EQ((h & 0x8000u) != 0, std::signbit(f)) << std::hex << bits_of(f);
        } else {
            ASSERT_EQ(h, f16_oracle().round(f)) << std::hex << bits_of(f);
        }
    }
}

#ifdef __FLT16_MANT_DIG__
// A second, compiler-provided oracle where _Float16 exists.
TEST(Fp16, AgreesWithCompilerFloat16) {
    std::vector<float> probes = midpoint_probes(f16_oracle());
    const auto sweep = sweep_probes();
    probes.insert(probes.end(), sweep.begin(), sweep.end());
    for (float f : probes) {
        if (std::isnan(f)) continue;
        const auto expected = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
        ASSERT_EQ(ggml_fp32_to_fp16(f), expected) << std::hexfloat << f;
    }
    for (unsigned u = 0; u <= 0xffffu; ++u) {
        if (kF16.is_nan(u16(u))) continue;
        const float expected = static_cast<float>(std::bit_cast<_Float16>(u16(u)));
        ASSERT_EQ(bits_of(ggml_fp16_to_fp32(u16(u))), bits_of(expected)) << std::hex << u;
    }
}
#endif

TEST(Fp16, NamedBoundaries) {
    EXPECT_EQ(ggml_fp32_to_fp16(1.0f), 0x3c00);
    EXPECT_EQ(ggml_fp32_to_fp16(-2.0f), 0xc000);
    EXPECT_EQ(ggml_fp32_to_fp16(0.0f), 0x0000);
    EXPECT_EQ(ggml_fp32_to_fp16(-0.0f), 0x8000);
    // Ties to even in the normal range.
    EXPECT_EQ(ggml_fp32_to_fp16(1.0f + 0x1p-11f), 0x3c00);
    EXPECT_EQ(ggml_fp32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);
    EXPECT_EQ(ggml_fp32_to_fp16(std::nextafter(1.0f + 0x1p-11f, 2.0f)), 0x3c01);
    // Overflow.
    EXPECT_EQ(ggml_fp32_to_fp16(65504.0f), 0x7bff);
    EXPECT_EQ(ggml_fp32_to_fp16(std::nextafter(65520.0f, 0.0f)), 0x7bff);
    EXPECT_EQ(ggml_fp32_to_fp16(65520.0f), 0x7c00);
    EXPECT_EQ(ggml_fp32_to_fp16(-65520.0f), 0xfc00);
    EXPECT_EQ(ggml_fp32_to_fp16(1e10f), 0x7c00);
    EXPECT_EQ(ggml_fp32_to_fp16(std::numeric_limits<float>::max()), 0x7c00);
    EXPECT_EQ(ggml_fp32_to_fp16(kInf), 0x7c00);
    EXPECT_EQ(ggml_fp32_to_fp16(-kInf), 0xfc00);
    // Subnormals and underflow.
    EXPECT_EQ(ggml_fp32_to_fp16(0x1p-24f), 0x0001);
    EXPECT_EQ(ggml_fp32_to_fp16(-0x1p-24f), 0x8001);
    EXPECT_EQ(ggml_fp32_to_fp16(0x1p-25f), 0x0000);
    EXPECT_EQ(ggml_fp32_to_fp16(-0x1p-25f), 0x8000);
    EXPECT_EQ(ggml_fp32_to_fp16(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
    EXPECT_EQ(ggml_fp32_to_fp16(3 * 0x1p-25f), 0x0002);
    EXPECT_EQ(ggml_fp32_to_fp16(0x1p-26f), 0x0000);
    EXPECT_EQ(ggml_fp32_to_fp16(std::numeric_limits<float>::denorm_min()), 0x0000);
    EXPECT_EQ(ggml_fp32_to_fp16(-std::numeric_limits<float>::denorm_min()), 0x8000);
    EXPECT_EQ(ggml_fp32_to_fp16(1023 * 0x1p-24f), 0x03ff);
    EXPECT_EQ(ggml_fp32_to_fp16(1023.5f * 0x1p-24f), 0x0400);
    EXPECT_EQ(ggml_fp32_to_fp16(0x1p-14f), 0x0400);
    EXPECT_EQ(ggml_fp16_to_fp32(0x0001), 0x1p-24f);
    EXPECT_EQ(ggml_fp16_to_fp32(0x03ff), 1023 * 0x1p-24f);
    EXPECT_EQ(ggml_fp16_to_fp32(0x7bff), 65504.0f);
    EXPECT_EQ(ggml_fp16_to_fp32(0xfc00), -kInf);
    EXPECT_TRUE(std::signbit(ggml_fp16_to_fp32(0x8000)));
}

TEST(Fp16, NaNStaysQuietNaNWithSign) {
    for (uint32_t nan_bits : {0x7fc00000u, 0x7f800001u, 0x7fa00000u, 0x7fffffffu, 0xffc00000u, 0xff800001u}) {
        const uint16_t h = ggml_fp32_to_fp16(float_of(nan_bits));
        EXPECT_TRUE(kF16.is_nan(h)) << std::hex << nan_bits << " -> " << h;
        EXPECT_NE(h & 0x0200u, 0u) << std::hex << nan_bits;
        EXPECT_EQ((h & 0x8000u) != 0, (nan_bits & 0x80000000u) != 0) << std::hex << nan_bits;
    }
    EXPECT_TRUE(kF16.is_nan(ggml_fp32_to_fp16(kNaN)));
    // A signalling F16 NaN is read as a quiet F32 NaN.
    EXPECT_EQ(bits_of(ggml_fp16_to_fp32(0x7c01)) & 0x7fc00000u, 0x7fc00000u);
}

// ---- BF16 ---------------------------------------------------------------------------------------

TEST(Bf16, ExhaustiveToFp32MatchesFieldDecoding) {
    for (unsigned u = 0; u <= 0xffffu; ++u) {
        const uint16_t h = u16(u);
        const float f = bf16_to_f32(h);
        if (kBF16.is_nan(h)) {
            ASSERT_TRUE(std::isnan(f)) << std::hex << u;
            ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << u;
            ASSERT_NE(bits_of(f) & 0x00400000u, 0u) << "not quiet: " << std::hex << u;
        } else {
            ASSERT_EQ(bits_of(f), bits_of(static_cast<float>(kBF16.value(h)))) << std::hex << u;
            ASSERT_EQ(bits_of(f), u << 16) << std::hex << u;
        }
    }
}

TEST(Bf16, ExhaustiveRoundTrip) {
    for (unsigned u = 0; u <= 0xffffu; ++u) {
        const uint16_t h = u16(u);
        const uint16_t back = f32_to_bf16(bf16_to_f32(h));
        if (kBF16.is_nan(h)) {
            ASSERT_TRUE(kBF16.is_nan(back)) << std::hex << u << " -> " << back;
            ASSERT_EQ(back & 0x8000u, h & 0x8000u) << std::hex << u;
            ASSERT_NE(back & 0x0040u, 0u) << "not quiet: " << std::hex << u;
        } else {
            ASSERT_EQ(back, h) << std::hex << u;
        }
    }
}

TEST(Bf16, RoundsMidpointsAndNeighboursLikeOracle) {
    const auto probes = midpoint_probes(bf16_oracle());
    ASSERT_EQ(probes.size(), 6u * 0x7f80u);
    for (float f : probes) {
        ASSERT_EQ(f32_to_bf16(f), bf16_oracle().round(f)) << std::hexfloat << f;
    }
}

TEST(Bf16, RoundsFloatSweepLikeOracle) {
    for (float f : sweep_probes()) {
        const uint16_t h = f32_to_bf16(f);
        if (std::isnan(f)) {
            ASSERT_TRUE(kBF16.is_nan(h)) << std::hex << bits_of(f);
            ASSERT_EQ((h & 0x8000u) != 0, std::signbit(f)) << std::hex << bits_of(f);
        } else {
            ASSERT_EQ(h, bf16_oracle().round(f)) << std::hex << bits_of(f);
        }
    }
}

TEST(Bf16, NamedBoundaries) {
    EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(f32_to_bf16(float_of(0x3f808000u)), 0x3f80);  // tie, even stays
    EXPECT_EQ(f32_to_bf16(float_of(0x3f818000u)), 0x3f82);  // tie, odd goes up
    EXPECT_EQ(f32_to_bf16(float_of(0x3f808001u)), 0x3f81);
    EXPECT_EQ(f32_to_bf16(float_of(0x3f807fffu)), 0x3f80);
    EXPECT_EQ(f32_to_bf16(float_of(0x7f7f7fffu)), 0x7f7f);
    EXPECT_EQ(f32_to_bf16(float_of(0x7f7f8000u)), 0x7f80);  // overflow by a tie
    EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
    EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::max()), 0xff80);
    EXPECT_EQ(f32_to_bf16(kInf), 0x7f80);
    EXPECT_EQ(f32_to_bf16(-kInf), 0xff80);
    EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
    EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::denorm_min()), 0x0000);
    EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::denorm_min()), 0x8000);
    EXPECT_EQ(f32_to_bf16(float_of(0x00008000u)), 0x0000);
    EXPECT_EQ(f32_to_bf16(float_of(0x00008001u)), 0x0001);
    EXPECT_EQ(f32_to_bf16(float_of(0x00018000u)), 0x0002);
    EXPECT_EQ(f32_to_bf16(float_of(0x007fffffu)), 0x0080);  // largest subnormal -> min normal
}

TEST(Bf16, NaNStaysQuietNaNWithSign) {
    // Payload only in the low 16 bits must not truncate to infinity.
    EXPECT_EQ(f32_to_bf16(float_of(0x7f800001u)), 0x7fc0);
    EXPECT_EQ(f32_to_bf16(float_of(0xff800001u)), 0xffc0);
    EXPECT_EQ(f32_to_bf16(float_of(0x7f80ffffu)), 0x7fc0);
    EXPECT_EQ(f32_to_bf16(float_of(0x7fc00000u)), 0x7fc0);
    EXPECT_EQ(f32_to_bf16(float_of(0x7fffffffu)), 0x7fff);  // no rounding into the sign
    EXPECT_EQ(f32_to_bf16(float_of(0xffffffffu)), 0xffff);
    EXPECT_TRUE(kBF16.is_nan(f32_to_bf16(kNaN)));
    EXPECT_EQ(bits_of(bf16_to_f32(0x7f81)), 0x7fc10000u);
}

// ---- Rows ---------------------------------------------------------------------------------------

std::vector<float> assorted_floats() {
    std::vector<float> v = sweep_probes();
    for (float f : {0.0f, -0.0f, 1.0f, 65504.0f, 65520.0f, 0x1p-25f, kInf, -kInf, kNaN})
        v.push_back(f);
    return v;
}

TEST(Rows, EqualScalarConversions) {
    std::vector<uint16_t> all(0x10000);
    for (unsigned u = 0; u <= 0xffffu; ++u)
        all[u] = u16(u);
    std::vector<float> out(all.size());

    ggml_fp16_to_fp32_row(all.data(), out.data(), static_cast<int64_t>(all.size()));
    for (unsigned u = 0; u <= 0xffffu; ++u)
        ASSERT_EQ(bits_of(out[u]), bits_of(ggml_fp16_to_fp32(u16(u))));
    bf16_row_to_f32(all.data(), out.data(), static_cast<int64_t>(all.size()));
    for (unsigned u = 0; u <= 0xffffu; ++u)
        ASSERT_EQ(bits_of(out[u]), bits_of(bf16_to_f32(u16(u))));

    const auto floats = assorted_floats();
    const auto n = static_cast<int64_t>(floats.size());
    std::vector<uint16_t> halves(floats.size());
    ggml_fp32_to_fp16_row(floats.data(), halves.data(), n);
    for (size_t i = 0; i < floats.size(); ++i)
        ASSERT_EQ(halves[i], ggml_fp32_to_fp16(floats[i])) << i;
    f32_row_to_bf16(floats.data(), halves.data(), n);
    for (size_t i = 0; i < floats.size(); ++i)
        ASSERT_EQ(halves[i], f32_to_bf16(floats[i])) << i;
    std::vector<ggml_bf16_t> reference(floats.size());
    ggml_fp32_to_bf16_row_ref(floats.data(), reference.data(), n);
    for (size_t i = 0; i < floats.size(); ++i)
        ASSERT_EQ(reference[i].bits, halves[i]) << i;
}

TEST(Rows, ZeroLengthWritesNothing) {
    float f = 7.0f;
    uint16_t h = 0x1234;
    ggml_fp32_to_fp16_row(&f, &h, 0);
    ggml_fp16_to_fp32_row(&h, &f, 0);
    EXPECT_EQ(f, 7.0f);
    EXPECT_EQ(h, 0x1234);
    EXPECT_EQ(ggml_quantize_row(GGML_TYPE_Q8_0, &f, &h, 0), 0u);
}

TEST(QuantizeRow, FloatTypes) {
    const auto floats = assorted_floats();
    const auto n = static_cast<int64_t>(floats.size());

    std::vector<float> copy(floats.size());
    EXPECT_EQ(ggml_quantize_row(GGML_TYPE_F32, floats.data(), copy.data(), n), floats.size() * 4);
    EXPECT_EQ(std::memcmp(copy.data(), floats.data(), floats.size() * 4), 0);
    std::vector<float> back(floats.size());
    ggml_dequantize_row(GGML_TYPE_F32, copy.data(), back.data(), n);
    EXPECT_EQ(std::memcmp(back.data(), floats.data(), floats.size() * 4), 0);

    std::vector<uint16_t> halves(floats.size());
    EXPECT_EQ(ggml_quantize_row(GGML_TYPE_F16, floats.data(), halves.data(), n), floats.size() * 2);
    ggml_dequantize_row(GGML_TYPE_F16, halves.data(), back.data(), n);
    for (size_t i = 0; i < floats.size(); ++i) {
        ASSERT_EQ(halves[i], ggml_fp32_to_fp16(floats[i])) << i;
        ASSERT_EQ(bits_of(back[i]), bits_of(ggml_fp16_to_fp32(halves[i]))) << i;
    }
    EXPECT_EQ(ggml_quantize_row(GGML_TYPE_BF16, floats.data(), halves.data(), n), floats.size() * 2);
    ggml_dequantize_row(GGML_TYPE_BF16, halves.data(), back.data(), n);
    for (size_t i = 0; i < floats.size(); ++i) {
        ASSERT_EQ(halves[i], f32_to_bf16(floats[i])) << i;
        ASSERT_EQ(bits_of(back[i]), bits_of(bf16_to_f32(halves[i]))) << i;
    }
}

// ---- Integer types ------------------------------------------------------------------------------

template <class Int>
std::vector<Int> quantize_ints(ggml_type type, const std::vector<float> & x) {
    std::vector<Int> out(x.size());
    EXPECT_EQ(ggml_quantize_row(type, x.data(), out.data(), static_cast<int64_t>(x.size())),
              x.size() * sizeof(Int));
    return out;
}

TEST(IntegerTypes, I8RoundsToEvenAndSaturates) {
    const std::vector<float> x = {0.5f,   1.5f,   2.5f,   -0.5f,   -1.5f,   -2.5f, 0.49999997f, 126.5f,
                                  127.4f, 127.5f, 200.0f, -128.5f, -129.0f, 1e30f, -1e30f,      kInf,
                                  -kInf,  kNaN,   -kNaN,  -0.0f,   3.7f,    -3.7f};
    const std::vector<int8_t> expected = {0,    2,    2,   0,    -2,  -2,   0, 126, 127, 127, 127,
                                          -128, -128, 127, -128, 127, -128, 0, 0,   0,   4,   -4};
    EXPECT_EQ(quantize_ints<int8_t>(GGML_TYPE_I8, x), expected);
}

TEST(IntegerTypes, I16RoundsToEvenAndSaturates) {
    const std::vector<float> x = {32766.5f,  32767.4f, 32767.5f, 40000.0f, -32767.5f, -32768.5f,
                                  -40000.0f, kInf,     -kInf,    kNaN,     -1.5f};
    const std::vector<int16_t> expected = {32766,  32767, 32767,  32767, -32768, -32768,
                                           -32768, 32767, -32768, 0,     -2};
    EXPECT_EQ(quantize_ints<int16_t>(GGML_TYPE_I16, x), expected);
}

TEST(IntegerTypes, I32RoundsToEvenAndSaturates) {
    const std::vector<float> x = {4194304.5f,     4194305.5f,  -4194304.5f, 2147483520.0f, 2147483648.0f,
                                  -2147483648.0f, -3e9f,       3e9f,        kInf,          -kInf,
                                  kNaN,           16777216.0f, 2.5f};
    const std::vector<int32_t> expected = {4194304,   4194306,   -4194304,  2147483520, INT32_MAX,
                                           INT32_MIN, INT32_MIN, INT32_MAX, INT32_MAX,  INT32_MIN,
                                           0,         16777216,  2};
    EXPECT_EQ(quantize_ints<int32_t>(GGML_TYPE_I32, x), expected);
}

TEST(IntegerTypes, DequantizeToFloat) {
    const std::vector<int8_t> i8 = {-128, -1, 0, 1, 127};
    std::vector<float> y(i8.size());
    ggml_dequantize_row(GGML_TYPE_I8, i8.data(), y.data(), static_cast<int64_t>(i8.size()));
    EXPECT_EQ(y, (std::vector<float>{-128, -1, 0, 1, 127}));

    const std::vector<int16_t> i16 = {-32768, -7, 32767};
    y.resize(i16.size());
    ggml_dequantize_row(GGML_TYPE_I16, i16.data(), y.data(), static_cast<int64_t>(i16.size()));
    EXPECT_EQ(y, (std::vector<float>{-32768, -7, 32767}));

    // Exact up to 2^24; beyond that, the nearest float (ties to even).
    const std::vector<int32_t> i32 = {INT32_MIN, -16777216, 16777216, 16777217, 16777219, INT32_MAX};
    y.resize(i32.size());
    ggml_dequantize_row(GGML_TYPE_I32, i32.data(), y.data(), static_cast<int64_t>(i32.size()));
    EXPECT_EQ(y, (std::vector<float>{-2147483648.0f, -16777216.0f, 16777216.0f, 16777216.0f, 16777220.0f,
                                     2147483648.0f}));
}

// ---- Q8_0 ---------------------------------------------------------------------------------------

ggml_block_q8_0 quantize_q8(const std::vector<float> & x) {
    EXPECT_EQ(x.size(), 32u);
    ggml_block_q8_0 block{};
    EXPECT_EQ(ggml_quantize_row(GGML_TYPE_Q8_0, x.data(), &block, 32), 34u);
    return block;
}

std::vector<float> dequantize_q8(const ggml_block_q8_0 & block) {
    std::vector<float> y(32);
    ggml_dequantize_row(GGML_TYPE_Q8_0, &block, y.data(), 32);
    return y;
}

TEST(Q8_0, RampZeroTo31) {
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i)
        x[i] = static_cast<float>(i);
    const auto block = quantize_q8(x);
    EXPECT_EQ(block.d, ggml_fp32_to_fp16(31.0f / 127.0f));
    const float d = ggml_fp16_to_fp32(block.d);
    const auto y = dequantize_q8(block);
    for (int i = 0; i < 32; ++i) {
        // round(i * 127 / 31), never a tie since 31 is odd.
        const int expected = (2 * 127 * i + 31) / 62;
        EXPECT_EQ(block.qs[i], expected) << i;
        EXPECT_EQ(y[i], d * static_cast<float>(expected)) << i;
    }
    EXPECT_EQ(block.qs[31], 127);
}

TEST(Q8_0, TiesRoundHalfAwayFromZero) {
    // amax = 127 gives d = 1 and id = 1, so x * id is x itself.
    std::vector<float> x(32, 0.0f);
    const float in[] = {127.0f, -127.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 126.5f, -126.5f, 1.4999999f};
    const int q[] = {127, -127, 1, -1, 2, -2, 3, -3, 127, -127, 1};
    std::copy(std::begin(in), std::end(in), x.begin());
    const auto block = quantize_q8(x);
    EXPECT_EQ(block.d, 0x3c00);
    for (size_t i = 0; i < std::size(q); ++i)
        EXPECT_EQ(block.qs[i], q[i]) << i;
    for (size_t i = std::size(q); i < 32; ++i)
        EXPECT_EQ(block.qs[i], 0) << i;
    const auto y = dequantize_q8(block);
    for (size_t i = 0; i < std::size(q); ++i)
        EXPECT_EQ(y[i], static_cast<float>(q[i])) << i;
}

TEST(Q8_0, AllZeroBlock) {
    const auto block = quantize_q8(std::vector<float>(32, 0.0f));
    EXPECT_EQ(block.d, 0x0000);
    for (int i = 0; i < 32; ++i)
        EXPECT_EQ(block.qs[i], 0);
    for (float v : dequantize_q8(block))
        EXPECT_EQ(v, 0.0f);
}

TEST(Q8_0, NegativeExtremes) {
    std::vector<float> x(32, -1.0f);
    auto block = quantize_q8(x);
    EXPECT_EQ(block.d, ggml_fp32_to_fp16(1.0f / 127.0f));
    for (int i = 0; i < 32; ++i)
        EXPECT_EQ(block.qs[i], -127);

    x.assign(32, 0.25f);
    x[5] = -1000.0f;
    x[6] = 1000.0f;
    block = quantize_q8(x);
    EXPECT_EQ(block.qs[5], -127);
    EXPECT_EQ(block.qs[6], 127);
    const float d = ggml_fp16_to_fp32(block.d);
    EXPECT_EQ(dequantize_q8(block)[5], -127.0f * d);
    EXPECT_NEAR(dequantize_q8(block)[5], -1000.0f, 1000.0f * 0x1p-11f);
}

TEST(Q8_0, DivisionUsesUnroundedScale) {
    // d = 100 / 127 is not an F16 value; the quantized values must come from the exact d.
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i)
        x[i] = 100.0f * static_cast<float>(i - 16) / 16.0f;
    const auto block = quantize_q8(x);
    const float id = 1.0f / (100.0f / 127.0f);
    for (int i = 0; i < 32; ++i)
        EXPECT_EQ(block.qs[i], static_cast<int>(std::roundf(x[i] * id))) << i;
}

// ---- Q4_0 ---------------------------------------------------------------------------------------

ggml_block_q4_0 quantize_q4(const std::vector<float> & x) {
    EXPECT_EQ(x.size(), 32u);
    ggml_block_q4_0 block{};
    EXPECT_EQ(ggml_quantize_row(GGML_TYPE_Q4_0, x.data(), &block, 32), 18u);
    return block;
}

std::vector<float> dequantize_q4(const ggml_block_q4_0 & block) {
    std::vector<float> y(32);
    ggml_dequantize_row(GGML_TYPE_Q4_0, &block, y.data(), 32);
    return y;
}

int nibble(const ggml_block_q4_0 & block, int i) {
    return i < 16 ? block.qs[i] & 0x0f : block.qs[i - 16] >> 4;
}

TEST(Q4_0, RampZeroTo31) {
    std::vector<float> x(32);
    for (int i = 0; i < 32; ++i)
        x[i] = static_cast<float>(i);
    const auto block = quantize_q4(x);
    // m = 31, d = -31/8 = -3.875 (exact in F16); q = trunc(8.5 - 8i/31), never near an integer.
    EXPECT_EQ(block.d, ggml_fp32_to_fp16(-3.875f));
    EXPECT_EQ(ggml_fp16_to_fp32(block.d), -3.875f);
    const auto y = dequantize_q4(block);
    for (int i = 0; i < 32; ++i) {
        const int expected = (527 - 16 * i) / 62;
        EXPECT_EQ(nibble(block, i), expected) << i;
        EXPECT_EQ(y[i], -3.875f * static_cast<float>(expected - 8)) << i;
    }
    EXPECT_EQ(nibble(block, 31), 0);
    EXPECT_EQ(nibble(block, 0), 8);
}

TEST(Q4_0, TiesAndClamp) {
    // m = -8 (first of the two largest magnitudes) gives d = 1 and id = 1: q = trunc(x + 8.5).
    std::vector<float> x(32, 0.0f);
    const float in[] = {-8.0f, 8.0f, -7.5f, 0.5f, -0.5f, 7.5f, 7.49f, 6.5f, 6.49f, -1.5f, 1.5f};
    const int q[] = {0, 15, 1, 9, 8, 15, 15, 15, 14, 7, 10};
    std::copy(std::begin(in), std::end(in), x.begin());
    const auto block = quantize_q4(x);
    EXPECT_EQ(block.d, 0x3c00);
    for (size_t i = 0; i < std::size(q); ++i)
        EXPECT_EQ(nibble(block, static_cast<int>(i)), q[i]) << i;
    for (int i = static_cast<int>(std::size(q)); i < 32; ++i)
        EXPECT_EQ(nibble(block, i), 8) << i;
    const auto y = dequantize_q4(block);
    for (size_t i = 0; i < std::size(q); ++i)
        EXPECT_EQ(y[i], static_cast<float>(q[i] - 8)) << i;
}

TEST(Q4_0, FirstLargestMagnitudeWins) {
    std::vector<float> x(32, 0.0f);
    x[3] = 4.0f;
    x[20] = -4.0f;
    auto block = quantize_q4(x);
    EXPECT_EQ(ggml_fp16_to_fp32(block.d), -0.5f);
    EXPECT_EQ(nibble(block, 3), 0);
    EXPECT_EQ(nibble(block, 20), 15);  // 16.5 clamps to 15
    EXPECT_EQ(dequantize_q4(block)[3], 4.0f);
    EXPECT_EQ(dequantize_q4(block)[20], -3.5f);

    std::swap(x[3], x[20]);
    block = quantize_q4(x);
    EXPECT_EQ(ggml_fp16_to_fp32(block.d), 0.5f);
    EXPECT_EQ(nibble(block, 3), 0);
    EXPECT_EQ(nibble(block, 20), 15);
    EXPECT_EQ(dequantize_q4(block)[3], -4.0f);
    EXPECT_EQ(dequantize_q4(block)[20], 3.5f);
}

TEST(Q4_0, AllZeroBlock) {
    const auto block = quantize_q4(std::vector<float>(32, 0.0f));
    // d = +0 / -8 = -0: a zero scale, so every element is quantized to the zero point 8.
    EXPECT_EQ(block.d, 0x8000);
    for (int j = 0; j < 16; ++j)
        EXPECT_EQ(block.qs[j], 0x88) << j;
    for (float v : dequantize_q4(block))
        EXPECT_EQ(v, 0.0f);
}

TEST(Q4_0, NibbleLayout) {
    // d = 1: element j < 16 gets nibble j, element j + 16 gets nibble 15 - j.
    std::vector<float> x(32);
    for (int j = 0; j < 16; ++j) {
        x[j] = static_cast<float>(j - 8);
        x[j + 16] = static_cast<float>(7 - j);
    }
    const auto block = quantize_q4(x);
    EXPECT_EQ(block.d, 0x3c00);
    for (int j = 0; j < 16; ++j)
        EXPECT_EQ(block.qs[j], j | ((15 - j) << 4)) << j;
    EXPECT_EQ(dequantize_q4(block), x);

    ggml_block_q4_0 raw{};
    raw.d = ggml_fp32_to_fp16(2.0f);
    raw.qs[0] = 0xf0;  // element 0 -> nibble 0 (-16), element 16 -> nibble 15 (14)
    raw.qs[15] = 0x19;
    const auto y = dequantize_q4(raw);
    EXPECT_EQ(y[0], -16.0f);
    EXPECT_EQ(y[16], 14.0f);
    EXPECT_EQ(y[15], 2.0f);
    EXPECT_EQ(y[31], -14.0f);
    EXPECT_EQ(y[1], -16.0f);
}

// ---- Random round trips and multi-block rows ----------------------------------------------------

constexpr uint32_t kSeed = 0x5eed2024u;

// Blocks of random values with magnitudes from 1e-3 to 1e3, one scale per block.
std::vector<float> random_row(std::mt19937 & rng, int blocks) {
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::uniform_int_distribution<int> decade(-3, 3);
    std::vector<float> x(static_cast<size_t>(blocks) * 32);
    for (int b = 0; b < blocks; ++b) {
        const auto scale = static_cast<float>(std::pow(10.0, decade(rng)));
        for (int i = 0; i < 32; ++i)
            x[static_cast<size_t>(b) * 32 + i] = scale * unit(rng);
    }
    return x;
}

TEST(Q8_0, RandomRoundTripWithinHalfStep) {
    SCOPED_TRACE(testing::Message() << "seed " << kSeed);
    std::printf("Q8_0 round-trip seed: %u\n", kSeed);
    std::mt19937 rng(kSeed);
    constexpr int kBlocks = 256;
    const auto x = random_row(rng, kBlocks);
    std::vector<ggml_block_q8_0> q(kBlocks);
    ASSERT_EQ(ggml_quantize_row(GGML_TYPE_Q8_0, x.data(), q.data(), kBlocks * 32), kBlocks * 34u);
    std::vector<float> y(x.size());
    ggml_dequantize_row(GGML_TYPE_Q8_0, q.data(), y.data(), kBlocks * 32);
    for (int b = 0; b < kBlocks; ++b) {
        float amax = 0.0f;
        for (int i = 0; i < 32; ++i)
            amax = std::max(amax, std::fabs(x[b * 32 + i]));
        const double d = amax / 127.0;
        const double d16 = ggml_fp16_to_fp32(q[b].d);
        const double bound = d * (0.5 + 1e-4) + 127.0 * std::fabs(d - d16) + amax * 1e-6;
        for (int i = 0; i < 32; ++i) {
            const size_t k = static_cast<size_t>(b) * 32 + i;
            ASSERT_LE(std::fabs(static_cast<double>(x[k]) - y[k]), bound) << "block " << b << " i " << i;
        }
    }
}

TEST(Q4_0, RandomRoundTripWithinHalfStep) {
    SCOPED_TRACE(testing::Message() << "seed " << kSeed);
    std::printf("Q4_0 round-trip seed: %u\n", kSeed);
    std::mt19937 rng(kSeed);
    constexpr int kBlocks = 256;
    const auto x = random_row(rng, kBlocks);
    std::vector<ggml_block_q4_0> q(kBlocks);
    ASSERT_EQ(ggml_quantize_row(GGML_TYPE_Q4_0, x.data(), q.data(), kBlocks * 32), kBlocks * 18u);
    std::vector<float> y(x.size());
    ggml_dequantize_row(GGML_TYPE_Q4_0, q.data(), y.data(), kBlocks * 32);
    for (int b = 0; b < kBlocks; ++b) {
        float m = 0.0f;
        int m_index = 0;
        for (int i = 0; i < 32; ++i) {
            if (std::fabs(x[b * 32 + i]) > std::fabs(m)) {
                m = x[b * 32 + i];
                m_index = i;
            }
        }
        const double d = std::fabs(m / 8.0);
        const double d16 = std::fabs(ggml_fp16_to_fp32(q[b].d));
        for (int i = 0; i < 32; ++i) {
            const size_t k = static_cast<size_t>(b) * 32 + i;
            // Values within a half step of 8d (the side opposite m) clamp to nibble 15: a full step.
            const double steps = x[k] / (-m / 8.0);
            const double slack = steps > 7.4 ? 1.0 : 0.5 + 1e-4;
            const double bound = d * slack + 8.0 * std::fabs(d - d16) + std::fabs(m) * 1e-6;
            ASSERT_LE(std::fabs(static_cast<double>(x[k]) - y[k]), bound) << "block " << b << " i " << i;
        }
        EXPECT_EQ(nibble(q[b], m_index), 0) << "block " << b;  // m itself maps to -8 steps
    }
}

template <class Block>
void expect_row_equals_blockwise(ggml_type type) {
    SCOPED_TRACE(testing::Message() << ggml_type_name(type) << " seed " << kSeed);
    std::mt19937 rng(kSeed);
    constexpr int kBlocks = 5;
    const auto x = random_row(rng, kBlocks);
    std::vector<Block> row(kBlocks);
    ASSERT_EQ(ggml_quantize_row(type, x.data(), row.data(), kBlocks * 32), kBlocks * sizeof(Block));
    std::vector<float> y(x.size());
    ggml_dequantize_row(type, row.data(), y.data(), kBlocks * 32);
    for (int b = 0; b < kBlocks; ++b) {
        Block single{};
        ASSERT_EQ(ggml_quantize_row(type, &x[b * 32], &single, 32), sizeof(Block));
        EXPECT_EQ(std::memcmp(&single, &row[b], sizeof(Block)), 0) << "block " << b;
        std::vector<float> ys(32);
        ggml_dequantize_row(type, &single, ys.data(), 32);
        for (int i = 0; i < 32; ++i)
            EXPECT_EQ(bits_of(ys[i]), bits_of(y[b * 32 + i])) << b << " " << i;
    }
}

TEST(Q8_0, RowSpansBlocks) { expect_row_equals_blockwise<ggml_block_q8_0>(GGML_TYPE_Q8_0); }

TEST(Q4_0, RowSpansBlocks) { expect_row_equals_blockwise<ggml_block_q4_0>(GGML_TYPE_Q4_0); }

TEST(Quantized, NonFiniteInputsStayDefined) {
    // Not part of the contract beyond "no undefined behaviour": NaN elements quantize to zero.
    std::vector<float> x(32, 1.0f);
    x[0] = kNaN;
    const auto q8 = quantize_q8(x);
    EXPECT_EQ(q8.qs[0], 0);
    EXPECT_EQ(q8.qs[1], 127);
    const auto q4 = quantize_q4(x);
    EXPECT_EQ(nibble(q4, 0), 8);
    EXPECT_EQ(nibble(q4, 1), 0);
    x[1] = kInf;
    EXPECT_EQ(quantize_q8(x).d, 0x7c00);
    (void)quantize_q4(x);
}

// ---- Vectorised rows on every Highway target ----------------------------------------------------
//
// The row functions run Highway code chosen at run time; hwy::SetSupportedTargetsForTest restricts
// the choice to one target at a time, so each target compiled in (and supported by this CPU) is
// checked against the single-value functions, which are the definition.

// Restores the normal target choice when a check returns early.
struct TargetReset {
    ~TargetReset() { hwy::SetSupportedTargetsForTest(0); }
};

// Runs check() once per target, best first; requires the best target and a scalar one among them.
template <class Check>
void on_every_target(bool verbose, Check check) {
    TargetReset reset;
    hwy::SetSupportedTargetsForTest(0);
    const int64_t best = ggx::core::convert_dispatch_target();
    const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
    ASSERT_FALSE(targets.empty());
    EXPECT_EQ(targets.front(), best) << hwy::TargetName(best);
    // Without -march flags the scalar fallback (HWY_SCALAR or HWY_EMU128) is compiled in too.
    if constexpr ((HWY_TARGETS & (HWY_SCALAR | HWY_EMU128)) != 0) {
        EXPECT_TRUE(std::find(targets.begin(), targets.end(), HWY_SCALAR) != targets.end() ||
                    std::find(targets.begin(), targets.end(), HWY_EMU128) != targets.end());
    }
    std::string names;
    for (int64_t target : targets) {
        names += std::string(" ") + hwy::TargetName(target);
        SCOPED_TRACE(hwy::TargetName(target));
        hwy::SetSupportedTargetsForTest(target);
        ASSERT_EQ(ggx::core::convert_dispatch_target(), target) << hwy::TargetName(target);
        check();
        if (testing::Test::HasFatalFailure()) return;
    }
    if (verbose) std::printf("checked on targets:%s\n", names.c_str());
}

template <class Check>
void on_every_target(Check check) {
    on_every_target(true, check);
}

// Splits [0, n) into consecutive pieces of assorted lengths (so the pieces start at every alignment
// and end with every tail length) and calls convert(offset, length) on each.
template <class Convert>
void in_pieces(int64_t n, Convert convert) {
    static constexpr int64_t kLengths[] = {1,   2,   3,    4,    5,    6,  7,  8,  9,   11,  15,   16,  17,
                                           23,  31,  32,   33,   47,   63, 64, 65, 100, 127, 128,  129, 255,
                                           256, 257, 1000, 1023, 4099, 13, 10, 14, 12,  29,  4096, 36,  18};
    size_t k = 0;
    for (int64_t i = 0; i < n; ++k) {
        const int64_t length = std::min(kLengths[k % std::size(kLengths)], n - i);
        convert(i, length);
        i += length;
    }
}

// A buffer of n elements starting one element past an aligned allocation (so no row begins on a
// vector boundary by accident), with one sentinel element after the end.
template <class T>
class Shifted {
public:
    explicit Shifted(size_t n, T fill = T{}) : storage_(n + 2, fill), n_(n) {}
    explicit Shifted(const std::vector<T> & contents) : storage_(1), n_(contents.size()) {
        storage_.insert(storage_.end(), contents.begin(), contents.end());
        storage_.emplace_back();
    }
    T * data() { return storage_.data() + 1; }
    const T * data() const { return storage_.data() + 1; }
    T & operator[](size_t i) { return storage_[i + 1]; }
    const T & operator[](size_t i) const { return storage_[i + 1]; }
    size_t size() const { return n_; }

private:
    std::vector<T> storage_;
    size_t n_;
};

constexpr uint16_t kSentinel16 = 0x5a5a;
constexpr uint32_t kSentinel32 = 0x5a5a5a5au;

TEST(RowsOnEveryTarget, AllHalfPatternsToFp32) {
    constexpr size_t kCount = 0x10000;
    Shifted<uint16_t> halves(kCount);
    for (size_t u = 0; u < kCount; ++u)
        halves[u] = u16(static_cast<unsigned>(u));
    std::vector<uint32_t> f16_expected(kCount), bf16_expected(kCount);
    for (size_t u = 0; u < kCount; ++u) {
        f16_expected[u] = bits_of(ggml_fp16_to_fp32(halves[u]));
        bf16_expected[u] = bits_of(bf16_to_f32(halves[u]));
    }
    // Through the row functions and through ggml_dequantize_row, alternating by piece.
    for (const bool bf16 : {false, true}) {
        SCOPED_TRACE(bf16 ? "bf16" : "f16");
        const std::vector<uint32_t> & expected = bf16 ? bf16_expected : f16_expected;
        on_every_target([&] {
            Shifted<float> out(kCount + 1);
            for (size_t i = 0; i <= kCount; ++i)
                out[i] = float_of(kSentinel32);
            size_t piece = 0;
            in_pieces(static_cast<int64_t>(kCount), [&](int64_t i, int64_t n) {
                const auto at = static_cast<size_t>(i);
                if (piece++ % 2 == 0) {
                    if (bf16)
                        bf16_row_to_f32(halves.data() + at, out.data() + at, n);
                    else
                        ggml_fp16_to_fp32_row(halves.data() + at, out.data() + at, n);
                } else {
                    ggml_dequantize_row(bf16 ? GGML_TYPE_BF16 : GGML_TYPE_F16, halves.data() + at,
                                        out.data() + at, n);
                }
                ASSERT_EQ(bits_of(out[at + static_cast<size_t>(n)]), kSentinel32) << "overrun at " << i;
            });
            for (size_t u = 0; u < kCount; ++u)
                ASSERT_EQ(bits_of(out[u]), expected[u]) << std::hex << "half " << u;
        });
    }
}

// Floats that probe every rounding decision of F32 -> F16 and F32 -> BF16: both formats' midpoints
// and their neighbours, every F16 and BF16 value, a sweep over all patterns, NaNs with payloads in
// every bit (and only in the low 16 bits), infinities, zeros, subnormals, the overflow and underflow
// boundaries, random patterns and random floats in the F16-subnormal range.
std::vector<float> f32_probes() {
    std::vector<float> v = midpoint_probes(f16_oracle());
    const auto bf16_mid = midpoint_probes(bf16_oracle());
    v.insert(v.end(), bf16_mid.begin(), bf16_mid.end());
    for (unsigned u = 0; u <= 0xffffu; ++u) {
        v.push_back(ggml_fp16_to_fp32(u16(u)));
        v.push_back(float_of(u << 16));
        v.push_back(float_of((u << 16) | 0x8000u));  // BF16 ties
    }
    const auto sweep = sweep_probes();
    v.insert(v.end(), sweep.begin(), sweep.end());
    for (uint32_t sign : {0u, 0x80000000u}) {
        for (int bit = 0; bit < 23; ++bit) {
            v.push_back(float_of(sign | 0x7f800000u | (1u << bit)));                  // signalling
            v.push_back(float_of(sign | 0x7fc00000u | (1u << bit)));                  // quiet
            v.push_back(float_of(sign | 0x7f800000u | ((0x7fffffu >> bit) << bit)));  // high bits
            v.push_back(float_of(sign | 0x7f800000u | (0x7fffffu >> bit)));           // low bits
        }
        for (uint32_t u : {0x00000000u, 0x7f800000u, 0x7f7fffffu, 0x00000001u, 0x007fffffu, 0x00800000u,
                           0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u, 0x33000000u, 0x33000001u,
                           0x32ffffffu, 0x387fffffu, 0x38800000u, 0x387fe000u, 0x387ff000u, 0x7f7f8000u})
            v.push_back(float_of(sign | u));
    }
    std::mt19937 rng(kSeed);
    std::uniform_int_distribution<uint32_t> any;
    for (int i = 0; i < (1 << 20); ++i)
        v.push_back(float_of(any(rng)));
    std::uniform_int_distribution<uint32_t> tiny(0x32800000u, 0x38800000u), subnormal(0u, 0x007fffffu);
    for (int i = 0; i < (1 << 18); ++i) {
        v.push_back(float_of(tiny(rng) | (any(rng) & 0x80000000u)));
        if (i % 4 == 0) v.push_back(float_of(subnormal(rng) | (any(rng) & 0x80000000u)));
    }
    return v;
}

TEST(RowsOnEveryTarget, Fp32ProbesToHalves) {
    const std::vector<float> probes = f32_probes();
    const size_t count = probes.size();
    const Shifted<float> in(probes);
    std::vector<uint16_t> f16_expected(count), bf16_expected(count);
    for (size_t i = 0; i < count; ++i) {
        f16_expected[i] = ggml_fp32_to_fp16(probes[i]);
        bf16_expected[i] = f32_to_bf16(probes[i]);
    }
    for (const bool bf16 : {false, true}) {
        SCOPED_TRACE(bf16 ? "bf16" : "f16");
        const std::vector<uint16_t> & expected = bf16 ? bf16_expected : f16_expected;
        on_every_target([&] {
            Shifted<uint16_t> out(count + 1, kSentinel16);
            size_t piece = 0;
            in_pieces(static_cast<int64_t>(count), [&](int64_t i, int64_t n) {
                const auto at = static_cast<size_t>(i);
                if (piece++ % 2 == 0) {
                    if (bf16)
                        f32_row_to_bf16(in.data() + at, out.data() + at, n);
                    else
                        ggml_fp32_to_fp16_row(in.data() + at, out.data() + at, n);
                } else {
                    const size_t bytes = ggml_quantize_row(bf16 ? GGML_TYPE_BF16 : GGML_TYPE_F16,
                                                           in.data() + at, out.data() + at, n);
                    ASSERT_EQ(bytes, static_cast<size_t>(n) * 2);
                }
                ASSERT_EQ(out[at + static_cast<size_t>(n)], kSentinel16) << "overrun at " << i;
            });
            for (size_t i = 0; i < count; ++i)
                ASSERT_EQ(out[i], expected[i]) << std::hex << "input " << bits_of(probes[i]);
        });
    }
}

// Every one of the 2^32 float patterns through both F32 -> F16 and F32 -> BF16 rows on every target:
// about two minutes, so only with GGX_EXHAUSTIVE_CONVERT=1 in the environment.
TEST(RowsOnEveryTarget, ExhaustiveFp32ToHalves) {
    if (std::getenv("GGX_EXHAUSTIVE_CONVERT") == nullptr) GTEST_SKIP() << "set GGX_EXHAUSTIVE_CONVERT=1";
    constexpr size_t kChunk = size_t{1} << 22;
    std::vector<float> in(kChunk);
    std::vector<uint16_t> f16_expected(kChunk), bf16_expected(kChunk), out(kChunk);
    for (uint64_t base = 0; base <= 0xffffffffull; base += kChunk) {
        for (size_t i = 0; i < kChunk; ++i) {
            in[i] = float_of(static_cast<uint32_t>(base + i));
            f16_expected[i] = ggml_fp32_to_fp16(in[i]);
            bf16_expected[i] = f32_to_bf16(in[i]);
        }
        on_every_target(/*verbose=*/base == 0, [&] {
            ggml_fp32_to_fp16_row(in.data(), out.data(), static_cast<int64_t>(kChunk));
            for (size_t i = 0; i < kChunk; ++i)
                ASSERT_EQ(out[i], f16_expected[i]) << std::hex << "f16 input " << bits_of(in[i]);
            f32_row_to_bf16(in.data(), out.data(), static_cast<int64_t>(kChunk));
            for (size_t i = 0; i < kChunk; ++i)
                ASSERT_EQ(out[i], bf16_expected[i]) << std::hex << "bf16 input " << bits_of(in[i]);
        });
        if (testing::Test::HasFatalFailure()) return;
    }
}

// Scalar references of the block formats, written from their definitions.
ggml_block_q8_0 reference_q8(const float * x) {
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i)
        amax = std::max(amax, std::fabs(x[i]));  // a NaN compares false and is skipped
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ggml_block_q8_0 block{};
    block.d = ggml_fp32_to_fp16(d);
    for (int i = 0; i < 32; ++i) {
        const float v = x[i] * id;
        block.qs[i] =
            std::isnan(v) ? int8_t{0} : static_cast<int8_t>(std::roundf(std::clamp(v, -127.0f, 127.0f)));
    }
    return block;
}

ggml_block_q4_0 reference_q4(const float * x) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < 32; ++i) {
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ggml_block_q4_0 block{};
    block.d = ggml_fp32_to_fp16(d);
    const auto q = [id](float x_i) {
        const volatile float scaled = x_i * id;  // two roundings: never contracted into an FMA
        const float v = scaled + 8.5f;
        return std::isnan(v) ? 8 : static_cast<int>(std::clamp(v, 0.0f, 15.0f));
    };
    for (int j = 0; j < 16; ++j)
        block.qs[j] = static_cast<uint8_t>(q(x[j]) | (q(x[j + 16]) << 4));
    return block;
}

// Blocks of 32 floats of many kinds: random values at scales from 1e-40 to 1e38, exact rounding
// ties, zeros of both signs, NaN / infinity elements, all-NaN blocks, largest magnitudes repeated
// with both signs, F16 overflow of the scale, tiny scales whose inverse overflows, random patterns.
std::vector<float> quant_probe_blocks() {
    std::mt19937 rng(kSeed);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::uniform_int_distribution<int> decade(-40, 38), position(0, 31), kind_of(0, 13), small(-8, 8);
    std::uniform_int_distribution<uint32_t> any;
    std::vector<float> x;
    for (int b = 0; b < 6000; ++b) {
        float block[32];
        const int kind = b < 12 ? b : kind_of(rng);
        const auto scale = static_cast<float>(std::pow(10.0, decade(rng)));
        for (float & v : block)
            v = scale * unit(rng);
        switch (kind) {
            case 0:  // Q8_0 ties: amax 127 gives id 1, so k + 0.5 is an exact tie
                for (int i = 0; i < 32; ++i)
                    block[i] = static_cast<float>(small(rng) * 15) + (i % 2 ? 0.5f : -0.5f);
                block[position(rng)] = any(rng) % 2 ? 127.0f : -127.0f;
                break;
            case 1:  // Q4_0 ties: max -8 gives id 1, so x + 8.5 lands on integers and just beside them
                for (int i = 0; i < 32; ++i) {
                    const float t = static_cast<float>(small(rng)) - 0.5f;
                    block[i] = i % 3 == 0 ? t : std::nextafter(t, i % 3 == 1 ? 100.0f : -100.0f);
                }
                block[position(rng)] = -8.0f;
                break;
            case 2:  // zeros of both signs, maybe one NaN
                for (float & v : block)
                    v = any(rng) % 2 ? 0.0f : -0.0f;
                if (any(rng) % 2) block[position(rng)] = kNaN;
                break;
            case 3:  // NaN and infinities mixed in
                block[position(rng)] = kNaN;
                block[position(rng)] = float_of(0xff800001u);
                if (any(rng) % 2) block[position(rng)] = any(rng) % 2 ? kInf : -kInf;
                break;
            case 4:  // all NaN
                for (float & v : block)
                    v = float_of(0x7f800001u | (any(rng) & 0x807fffffu));
                break;
            case 5:  // the largest magnitude repeated with both signs
                block[position(rng)] = 2.0f * scale;
                block[position(rng)] = -2.0f * scale;
                block[position(rng)] = 2.0f * scale;
                break;
            case 6:  // scale past the F16 range
                block[position(rng)] = 65504.0f * 127.0f * (1.0f + unit(rng) * unit(rng));
                break;
            case 7:  // subnormal magnitudes: the scale underflows or its inverse overflows
                for (float & v : block)
                    v = float_of((any(rng) & 0x801fffffu));
                break;
            case 8:  // random bit patterns
                for (float & v : block)
                    v = float_of(any(rng));
                break;
            case 9:  // the largest finite floats
                block[position(rng)] = std::numeric_limits<float>::max();
                block[position(rng)] = -std::numeric_limits<float>::max();
                break;
            case 10:    // Q4_0: x * id + 8.5 within ulps of integers with an inexact id (two roundings)
            case 11: {  // Q8_0: x * id within ulps of ties with an inexact id
                const float d = (1.0f + std::fabs(unit(rng))) * scale;
                for (int i = 0; i < 32; ++i) {
                    const float t = kind == 10 ? static_cast<float>(small(rng)) - 0.5f
                                               : static_cast<float>(small(rng) * 15) + 0.5f;
                    float v = t * d;
                    for (int step = static_cast<int>(any(rng) % 5) - 2; step != 0; step += step > 0 ? -1 : 1)
                        v = std::nextafter(v, step > 0 ? kInf : -kInf);
                    block[i] = v;
                }
                block[position(rng)] = kind == 10 ? -8.0f * d : 127.0f * d;
                break;
            }
            default:
                break;
        }
        x.insert(x.end(), std::begin(block), std::end(block));
    }
    return x;
}

template <class Block>
void expect_quantize_rows_match(ggml_type type, Block (*reference)(const float *)) {
    SCOPED_TRACE(testing::Message() << ggml_type_name(type) << " seed " << kSeed);
    const std::vector<float> probes = quant_probe_blocks();
    const size_t blocks = probes.size() / 32;
    const Shifted<float> in(probes);
    std::vector<Block> expected(blocks);
    for (size_t b = 0; b < blocks; ++b)
        expected[b] = reference(&probes[b * 32]);
    on_every_target([&] {
        std::vector<Block> out(blocks + 1);
        std::memset(static_cast<void *>(out.data()), 0x5a, out.size() * sizeof(Block));
        const Block sentinel = out.back();
        in_pieces(static_cast<int64_t>(blocks), [&](int64_t b, int64_t n) {
            const auto at = static_cast<size_t>(b);
            // A trailing partial block is not written.
            const int64_t extra = n % 7;
            ASSERT_EQ(ggml_quantize_row(type, in.data() + at * 32, out.data() + at, n * 32 + extra),
                      static_cast<size_t>(n) * sizeof(Block));
            ASSERT_EQ(std::memcmp(&out[at + static_cast<size_t>(n)], &sentinel, sizeof(Block)), 0)
                << "overrun at block " << b;
        });
        for (size_t b = 0; b < blocks; ++b)
            ASSERT_EQ(std::memcmp(&out[b], &expected[b], sizeof(Block)), 0) << "block " << b;
    });
}

template <class Block>
void expect_dequantize_rows_match(ggml_type type) {
    SCOPED_TRACE(testing::Message() << ggml_type_name(type) << " seed " << kSeed);
    // One block per F16 scale pattern (NaN, infinities and subnormals included), random quants.
    constexpr size_t kBlocks = 0x10000;
    std::mt19937 rng(kSeed);
    std::uniform_int_distribution<int> byte(0, 255);
    std::vector<Block> blocks(kBlocks);
    for (size_t b = 0; b < kBlocks; ++b) {
        blocks[b].d = u16(static_cast<unsigned>(b));
        for (auto & q : blocks[b].qs)
            q = static_cast<std::remove_reference_t<decltype(q)>>(byte(rng));
    }
    std::vector<uint32_t> expected(kBlocks * 32);
    for (size_t b = 0; b < kBlocks; ++b) {
        const float d = ggml_fp16_to_fp32(blocks[b].d);
        for (int i = 0; i < 32; ++i) {
            int q = 0;
            if constexpr (sizeof(Block) == sizeof(ggml_block_q8_0))
                q = blocks[b].qs[i];
            else
                q = (i < 16 ? blocks[b].qs[i] & 0x0f : blocks[b].qs[i - 16] >> 4) - 8;
            expected[b * 32 + static_cast<size_t>(i)] = bits_of(d * static_cast<float>(q));
        }
    }
    on_every_target([&] {
        Shifted<float> out(kBlocks * 32 + 1);
        in_pieces(static_cast<int64_t>(kBlocks), [&](int64_t b, int64_t n) {
            const auto at = static_cast<size_t>(b) * 32;
            out[at + static_cast<size_t>(n) * 32] = float_of(kSentinel32);
            ggml_dequantize_row(type, &blocks[static_cast<size_t>(b)], out.data() + at, n * 32);
            ASSERT_EQ(bits_of(out[at + static_cast<size_t>(n) * 32]), kSentinel32)
                << "overrun at block " << b;
        });
        for (size_t i = 0; i < kBlocks * 32; ++i)
            ASSERT_EQ(bits_of(out[i]), expected[i]) << "block " << i / 32 << " element " << i % 32;
    });
}

TEST(RowsOnEveryTarget, Q8_0QuantizeMatchesScalarReference) {
    expect_quantize_rows_match<ggml_block_q8_0>(GGML_TYPE_Q8_0, reference_q8);
}

TEST(RowsOnEveryTarget, Q4_0QuantizeMatchesScalarReference) {
    expect_quantize_rows_match<ggml_block_q4_0>(GGML_TYPE_Q4_0, reference_q4);
}

TEST(RowsOnEveryTarget, Q8_0DequantizeMatchesScalarReference) {
    expect_dequantize_rows_match<ggml_block_q8_0>(GGML_TYPE_Q8_0);
}

TEST(RowsOnEveryTarget, Q4_0DequantizeMatchesScalarReference) {
    expect_dequantize_rows_match<ggml_block_q4_0>(GGML_TYPE_Q4_0);
}

}  // namespace
