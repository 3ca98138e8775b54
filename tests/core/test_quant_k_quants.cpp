// The K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and Q8_K) through the public row functions: blocks
// built by hand from the layouts in docs/quantization.md decode to the values the formulas give,
// Gaussian data round-trips within each format's error, importance weights lower the weighted
// error, and every scale field that can hold a NaN or infinity is checked by validation.
#include <ggml-cpu.h>
#include <ggml.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "quant_test_support.h"

namespace {

using quant_test::gaussian;

constexpr int64_t kValues = 256;
constexpr ggml_type kWeightTypes[] = {GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K,
                                      GGML_TYPE_Q6_K};
constexpr ggml_type kAllTypes[] = {GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K,
                                   GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_Q8_K};

using Bytes = std::vector<uint8_t>;

void put_f16(Bytes & block, size_t offset, float value) {
    const ggml_fp16_t h = ggml_fp32_to_fp16(value);
    std::memcpy(block.data() + offset, &h, sizeof h);
}

std::vector<float> decode(ggml_type type, const Bytes & blocks) {
    const int64_t n = static_cast<int64_t>(blocks.size() / ggml_type_size(type)) * kValues;
    std::vector<float> y(static_cast<size_t>(n));
    EXPECT_TRUE(ggml_dequantize_row(type, blocks.data(), y.data(), n));
    return y;
}

Bytes encode(ggml_type type, const std::vector<float> & x) {
    const auto n = static_cast<int64_t>(x.size());
    Bytes q(ggml_row_size(type, n));
    EXPECT_EQ(ggml_quantize_row(type, x.data(), q.data(), n), q.size());
    return q;
}

// ---- Hand-built blocks --------------------------------------------------------------------------

// Q2_K: scales[16] (scale level low nibble, minimum level high), qs[64], d, dmin. Value v's 2 bits
// are bits 2 ((v % 128) / 32) of byte 32 (v / 128) + v % 32.
TEST(KQuantLayout, Q2K) {
    Bytes b(84, 0);
    for (int j = 0; j < 16; ++j)
        b[j] = 0x23;  // scale 3, minimum 2
    b[16 + 33] = 0b11000110;
    put_f16(b, 80, 1.0f);
    put_f16(b, 82, 0.5f);
    const std::vector<float> y = decode(GGML_TYPE_Q2_K, b);
    // y = d scale q - dmin min = 3 q - 1
    EXPECT_EQ(y[129], 5.0f);
    EXPECT_EQ(y[161], 2.0f);
    EXPECT_EQ(y[193], -1.0f);
    EXPECT_EQ(y[225], 8.0f);
    EXPECT_EQ(y[0], -1.0f);
    EXPECT_EQ(y[33], -1.0f);
}

// Q3_K: hmask[32], qs[64], scales[12], d. The 6-bit scale level j has its low nibble in byte j
// (j < 8) or the high nibble of byte j - 8, its top two bits in byte 8 + j % 4 at bit 2 (j / 4);
// scale = level - 32. q = 2 low bits (as Q2_K) - 4 unless the value's hmask bit (bit v / 32 of byte
// v % 32) is set.
TEST(KQuantLayout, Q3K) {
    Bytes b(110, 0);
    for (int i = 0; i < 8; ++i)
        b[96 + i] = 0x22;  // levels 0-15: low nibble 2
    b[96 + 7] = 0x82;      // level 15: low nibble 8
    for (int i = 8; i < 12; ++i)
        b[96 + i] = 0xaa;   // top bits 2: levels 34 (scale 2) and 40 (scale 8)
    b[5] = 1 << 3;          // hmask of value 3 * 32 + 5 = 101
    b[0] = 1;               // hmask of value 0
    b[32 + 5] = 0b11 << 6;  // low bits 3 of value 101
    put_f16(b, 108, 1.0f);
    const std::vector<float> y = decode(GGML_TYPE_Q3_K, b);
    EXPECT_EQ(y[101], 6.0f);  // 2 * 3
    EXPECT_EQ(y[0], 0.0f);    // 2 * 0
    EXPECT_EQ(y[1], -8.0f);   // 2 * (0 - 4)
    EXPECT_EQ(y[239], -8.0f);
    EXPECT_EQ(y[240], -32.0f);  // 8 * (0 - 4)
    EXPECT_EQ(y[255], -32.0f);
}

// Q4_K and Q5_K: d, dmin, scales[12] (6-bit scale and minimum levels of the eight 32-value
// sub-blocks: 0-3 in the low 6 bits of bytes 0-3 and 4-7, 4-7 in the nibbles of bytes 8-11 with their
// top bits in bits 6-7 of bytes 0-7), then 4-bit levels: value v in byte 32 (v / 64) + v % 32, the
// low nibble for the first 32 of each 64. y = d scale q - dmin min.
Bytes q4k_style_block(size_t bytes) {
    Bytes b(bytes, 0);
    put_f16(b, 0, 1.0f);
    put_f16(b, 2, 0.25f);
    for (int j = 0; j < 4; ++j) {
        b[4 + j] = static_cast<uint8_t>(j + 1);  // scales 1-4
        b[8 + j] = 2;                            // minimums 2
    }
    // Sub-block 5: scale 37 = 0b100101, minimum 20 = 0b010100.
    b[4 + 9] = 0x45;
    b[4 + 1] |= 2 << 6;
    b[4 + 5] |= 1 << 6;
    return b;
}

void expect_q4k_style_values(const std::vector<float> & y, float level_67) {
    EXPECT_EQ(y[67], 3 * level_67 - 0.5f);
    EXPECT_EQ(y[99], 4 * 15 - 0.5f);
    EXPECT_EQ(y[167], 37 * 10 - 0.25f * 20);
    EXPECT_EQ(y[0], -0.5f);
    EXPECT_EQ(y[170], -5.0f);
    EXPECT_EQ(y[130], 0.0f);  // sub-blocks 4, 6, 7: scale and minimum 0
    EXPECT_EQ(y[255], 0.0f);
}

TEST(KQuantLayout, Q4K) {
    Bytes b = q4k_style_block(144);
    b[16 + 32 + 3] = 0xf9;  // values 67 (low nibble 9) and 99 (high nibble 15)
    b[16 + 64 + 7] = 0xa0;  // value 167 (high nibble 10)
    expect_q4k_style_values(decode(GGML_TYPE_Q4_K, b), 9);
}

// Q5_K: qh[32] before the nibbles; bit v / 32 of byte v % 32 adds 16 to value v's level.
TEST(KQuantLayout, Q5K) {
    Bytes b = q4k_style_block(176);
    b[16 + 3] = 1 << 2;  // value 67
    b[48 + 32 + 3] = 0xf9;
    b[48 + 64 + 7] = 0xa0;
    expect_q4k_style_values(decode(GGML_TYPE_Q5_K, b), 25);
}

// Q6_K: ql[128], qh[64], int8 scales[16], d. Value v = 128 h + 32 g + l: low 4 bits in byte
// 64 h + 32 (g % 2) + l (high nibble for g >= 2), high 2 bits in byte 32 h + l at bit 2 g;
// y = d scale (q - 32).
TEST(KQuantLayout, Q6K) {
    Bytes b(210, 0);
    for (int j = 0; j < 16; ++j)
        b[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 8));
    put_f16(b, 208, 0.5f);
    b[64 + 5] = 0xc0;        // value 197 (h 1, g 2, l 5): low bits 12
    b[128 + 32 + 5] = 0x30;  // and high bits 3: q = 60
    b[32 + 1] = 0x07;        // value 33 (h 0, g 1, l 1): low bits 7
    b[128 + 1] = 0x04;       // and high bits 1: q = 23
    const std::vector<float> y = decode(GGML_TYPE_Q6_K, b);
    EXPECT_EQ(y[197], 0.5f * 4 * 28);
    EXPECT_EQ(y[33], 0.5f * -6 * -9);
    EXPECT_EQ(y[0], 0.5f * -8 * -32);
    EXPECT_EQ(y[133], 0.0f);  // sub-block 8: scale 0
}

// Q8_K: F32 d, int8 qs[256], int16 bsums[16]; y = d q.
TEST(KQuantLayout, Q8K) {
    Bytes b(292, 0);
    const float d = 0.25f;
    std::memcpy(b.data(), &d, sizeof d);
    for (int i = 0; i < 256; ++i)
        b[4 + i] = static_cast<uint8_t>(i - 128);
    const std::vector<float> y = decode(GGML_TYPE_Q8_K, b);
    for (int i = 0; i < 256; ++i)
        EXPECT_EQ(y[i], 0.25f * static_cast<float>(static_cast<int8_t>(i - 128))) << i;
}

// ggml_quantize_row_q8_K_ref: d = m / -127 for m the value of largest magnitude, q = round(x / d)
// (at most 127), bsums the sums of each 16 q.
TEST(KQuantQuantize, Q8KLevelsAndSums) {
    std::vector<float> x(256);
    for (int i = 0; i < 256; ++i)
        x[i] = static_cast<float>(i % 64) - 20.0f;
    x[77] = -127.0f;
    const Bytes q = encode(GGML_TYPE_Q8_K, x);
    float d;
    std::memcpy(&d, q.data(), sizeof d);
    EXPECT_EQ(d, 1.0f);
    for (int i = 0; i < 256; ++i)
        EXPECT_EQ(static_cast<int8_t>(q[4 + i]), static_cast<int>(x[i])) << i;
    for (int j = 0; j < 16; ++j) {
        int16_t sum;
        std::memcpy(&sum, q.data() + 260 + 2 * j, sizeof sum);
        float expected = 0;
        for (int i = 0; i < 16; ++i)
            expected += x[16 * j + i];
        EXPECT_EQ(sum, static_cast<int>(expected)) << j;
    }
}

// ---- Round trips --------------------------------------------------------------------------------

// RMSE on N(0,1) data (512 super-blocks), bounds just above the measured values (see
// docs/quantization.md).
TEST(KQuantRoundTrip, GaussianWithinFormatError) {
    const struct {
        ggml_type type;
        double bound;
    } cases[] = {{GGML_TYPE_Q2_K, 0.305}, {GGML_TYPE_Q3_K, 0.155},  {GGML_TYPE_Q4_K, 0.073},
                 {GGML_TYPE_Q5_K, 0.037}, {GGML_TYPE_Q6_K, 0.0182}, {GGML_TYPE_Q8_K, 0.0075}};
    const std::vector<float> x = gaussian(512 * kValues, 1);
    for (const auto & c : cases) {
        SCOPED_TRACE(ggml_type_name(c.type));
        const double error = quant_test::weighted_rmse(decode(c.type, encode(c.type, x)), x);
        EXPECT_LT(error, c.bound);
        EXPECT_GT(error, c.bound / 2);  // a bound far above the error would check nothing
    }
}

// The quantizers keep the scale of the data: the same data times 2^k round-trips to the same levels
// times 2^k (as long as the F16 scales stay normal).
TEST(KQuantRoundTrip, PowerOfTwoScaling) {
    const std::vector<float> x = gaussian(4 * kValues, 2);
    std::vector<float> x8(x.size());
    for (size_t i = 0; i < x.size(); ++i)
        x8[i] = 8 * x[i];
    for (const ggml_type type : kAllTypes) {
        SCOPED_TRACE(ggml_type_name(type));
        const std::vector<float> y = decode(type, encode(type, x));
        const std::vector<float> y8 = decode(type, encode(type, x8));
        for (size_t i = 0; i < y.size(); ++i)
            ASSERT_EQ(y8[i], 8 * y[i]) << i;
    }
}

TEST(KQuantRoundTrip, AllZeroBlocksDecodeToZero) {
    const std::vector<float> x(2 * kValues, 0.0f);
    for (const ggml_type type : kAllTypes) {
        SCOPED_TRACE(ggml_type_name(type));
        for (const float v : decode(type, encode(type, x)))
            ASSERT_EQ(v, 0.0f);
    }
}

// NaN, infinities and huge values: defined results (no crash, no undefined behaviour); blocks of
// finite values beside them are unaffected.
TEST(KQuantRoundTrip, NonFiniteAndHugeInputsStayInTheirBlock) {
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max(),
                              1e30f};
    const std::vector<float> clean = gaussian(2 * kValues, 3);
    for (const ggml_type type : kAllTypes) {
        SCOPED_TRACE(ggml_type_name(type));
        const std::vector<float> expected = decode(type, encode(type, clean));
        for (const float special : specials) {
            std::vector<float> x = clean;
            x[5] = special;
            x[kValues - 1] = -special;
            const std::vector<float> y = decode(type, encode(type, x));
            for (int64_t i = kValues; i < 2 * kValues; ++i)
                ASSERT_EQ(y[i], expected[i]) << special;
        }
    }
}

// ---- Importance weights -------------------------------------------------------------------------

double weighted_error(const std::vector<float> & x, const std::vector<float> & y,
                      const std::vector<float> & w, int64_t n_per_row) {
    double sum = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double diff = static_cast<double>(y[i]) - x[i];
        sum += w[i % static_cast<size_t>(n_per_row)] * diff * diff;
    }
    return sum;
}

Bytes chunk(ggml_type type, const std::vector<float> & x, int64_t n_per_row, const float * imatrix) {
    const int64_t rows = static_cast<int64_t>(x.size()) / n_per_row;
    Bytes q(ggml_row_size(type, n_per_row) * static_cast<size_t>(rows));
    EXPECT_EQ(ggml_quantize_chunk(type, x.data(), q.data(), 0, rows, n_per_row, imatrix), q.size());
    return q;
}

TEST(KQuantImportance, WeightedQuantizationLowersWeightedError) {
    constexpr int64_t n_per_row = 2 * kValues;
    const std::vector<float> x = gaussian(64 * n_per_row, 4);
    std::vector<float> importance(n_per_row);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> spread(0.01f, 4.0f);
    for (float & w : importance)
        w = spread(rng);
    for (const ggml_type type : kWeightTypes) {
        SCOPED_TRACE(ggml_type_name(type));
        const double plain =
            weighted_error(x, decode(type, chunk(type, x, n_per_row, nullptr)), importance, n_per_row);
        const double weighted = weighted_error(x, decode(type, chunk(type, x, n_per_row, importance.data())),
                                               importance, n_per_row);
        EXPECT_LT(weighted, 0.97 * plain);
    }
}

// Without an imatrix a chunk is ggml_quantize_row per row; with one, rows are quantized one at a time
// with the same importance per column, and a chunk may start at any row.
TEST(KQuantImportance, QuantizeChunk) {
    constexpr int64_t n_per_row = 2 * kValues;
    constexpr int64_t rows = 3;
    const std::vector<float> x = gaussian(rows * n_per_row, 6);
    const std::vector<float> importance(n_per_row, 1.0f);
    for (const ggml_type type : kWeightTypes) {
        SCOPED_TRACE(ggml_type_name(type));
        EXPECT_FALSE(ggml_quantize_requires_imatrix(type));
        EXPECT_EQ(chunk(type, x, n_per_row, nullptr), encode(type, x));
        const Bytes all = chunk(type, x, n_per_row, importance.data());
        EXPECT_NE(all, encode(type, x));  // the weighted search is another search
        const size_t row_bytes = ggml_row_size(type, n_per_row);
        Bytes last(all.size(), 0);
        EXPECT_EQ(
            ggml_quantize_chunk(type, x.data(), last.data(), 2 * n_per_row, 1, n_per_row, importance.data()),
            row_bytes);
        EXPECT_TRUE(std::equal(all.end() - static_cast<std::ptrdiff_t>(row_bytes), all.end(),
                               last.end() - static_cast<std::ptrdiff_t>(row_bytes)));
    }
    EXPECT_FALSE(ggml_quantize_requires_imatrix(GGML_TYPE_Q8_K));
}

// ---- Validation ---------------------------------------------------------------------------------

TEST(KQuantValidate, EveryF16ScaleField) {
    const struct {
        ggml_type type;
        std::vector<size_t> offsets;
    } cases[] = {{GGML_TYPE_Q2_K, {80, 82}},
                 {GGML_TYPE_Q3_K, {108}},
                 {GGML_TYPE_Q4_K, {0, 2}},
                 {GGML_TYPE_Q5_K, {0, 2}},
                 {GGML_TYPE_Q6_K, {208}}};
    for (const auto & c : cases) {
        SCOPED_TRACE(ggml_type_name(c.type));
        const Bytes good = encode(c.type, gaussian(3 * kValues, 7));
        EXPECT_TRUE(ggml_validate_row_data(c.type, good.data(), good.size()));
        for (const size_t offset : c.offsets)
            for (const ggml_fp16_t bad : {ggml_fp16_t{0x7c00}, ggml_fp16_t{0xfc00}, ggml_fp16_t{0x7e00}}) {
                Bytes b = good;
                std::memcpy(b.data() + 2 * ggml_type_size(c.type) + offset, &bad, sizeof bad);
                EXPECT_FALSE(ggml_validate_row_data(c.type, b.data(), b.size())) << offset << " " << bad;
            }
    }
}

TEST(KQuantValidate, Q8KScale) {
    const Bytes good = encode(GGML_TYPE_Q8_K, gaussian(2 * kValues, 8));
    EXPECT_TRUE(ggml_validate_row_data(GGML_TYPE_Q8_K, good.data(), good.size()));
    for (const float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        Bytes b = good;
        std::memcpy(b.data() + 292, &bad, sizeof bad);
        EXPECT_FALSE(ggml_validate_row_data(GGML_TYPE_Q8_K, b.data(), b.size()));
    }
}

TEST(KQuantTraits, DotTypes) {
    for (const ggml_type type : kWeightTypes)
        EXPECT_EQ(ggml_get_type_traits_cpu(type)->vec_dot_type, GGML_TYPE_Q8_K) << ggml_type_name(type);
}

}  // namespace
