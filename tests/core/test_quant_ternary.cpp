// TQ1_0, TQ2_0, Q1_0 and Q2_0 (src/core/quant/ternary.cpp): hand-built blocks decode to the values
// the format description gives (docs/quantization.md), quantization follows ggml's reference rules,
// and the formats take part in validation, chunked quantization and the type traits.
#include <ggml-cpu.h>
#include <ggml.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/quant/format.h"
#include "quant_test_support.h"

namespace {

using quant_test::gaussian;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

using Bytes = std::vector<uint8_t>;

struct Layout {
    ggml_type type;
    int64_t block;
    size_t bytes;
    size_t scale_offset;  // of the block's F16 scale
    ggml_type dot_type;
};

constexpr Layout kLayouts[] = {
    {GGML_TYPE_TQ1_0, 256, 54, 52, GGML_TYPE_Q8_K},
    {GGML_TYPE_TQ2_0, 256, 66, 64, GGML_TYPE_Q8_K},
    {GGML_TYPE_Q1_0, 128, 18, 0, GGML_TYPE_Q8_0},
    {GGML_TYPE_Q2_0, 64, 18, 0, GGML_TYPE_Q8_0},
};

void set_scale(Bytes & row, const Layout & l, int64_t block, float d) {
    const ggml_fp16_t h = ggml_fp32_to_fp16(d);
    std::memcpy(row.data() + static_cast<size_t>(block) * l.bytes + l.scale_offset, &h, sizeof h);
}

float scale_of(const Bytes & row, const Layout & l, int64_t block) {
    ggml_fp16_t h;
    std::memcpy(&h, row.data() + static_cast<size_t>(block) * l.bytes + l.scale_offset, sizeof h);
    return ggml_fp16_to_fp32(h);
}

std::vector<float> dequantize(ggml_type type, const Bytes & row) {
    const auto n = static_cast<int64_t>(row.size() / ggml_type_size(type)) * ggml_blck_size(type);
    std::vector<float> y(static_cast<size_t>(n));
    EXPECT_TRUE(ggml_dequantize_row(type, row.data(), y.data(), n));
    return y;
}

Bytes quantize(ggml_type type, const std::vector<float> & x) {
    Bytes row(ggml_row_size(type, static_cast<int64_t>(x.size())));
    EXPECT_EQ(ggml_quantize_row(type, x.data(), row.data(), static_cast<int64_t>(x.size())), row.size());
    return row;
}

// ---- Traits and table -----------------------------------------------------------------------------

TEST(TernaryFormats, TraitsDotTypesAndNoImportanceMatrix) {
    for (const Layout & l : kLayouts) {
        SCOPED_TRACE(ggml_type_name(l.type));
        EXPECT_EQ(ggml_blck_size(l.type), l.block);
        EXPECT_EQ(ggml_type_size(l.type), l.bytes);
        EXPECT_TRUE(ggml_is_quantized(l.type));
        const ggx::core::quant::Format * format = ggx::core::quant::format_of(l.type);
        ASSERT_NE(format, nullptr);
        EXPECT_EQ(format->dot_type, l.dot_type);
        EXPECT_EQ(format->quantize_weighted, nullptr);
        EXPECT_FALSE(ggml_quantize_requires_imatrix(l.type));
        EXPECT_EQ(ggml_get_type_traits_cpu(l.type)->vec_dot_type, l.dot_type);
        EXPECT_NE(ggml_get_type_traits(l.type)->to_float, nullptr);
    }
}

// ---- Hand-built blocks ----------------------------------------------------------------------------

TEST(Tq1_0, HandBuiltBlockDecodesTritByTrit) {
    const Layout & l = kLayouts[0];
    Bytes row(l.bytes, 0);
    set_scale(row, l, 0, 0.5f);
    // qs[0] = ceil(q * 256 / 243) for the trits (+1, -1, 0, 0, -1), digits 2 0 1 1 0: q = 174.
    row[0] = 184;
    // qs[32]: trits (0, +1, +1, -1, 0), digits 1 2 2 0 1: q = 81 + 54 + 18 + 0 + 1 = 154.
    row[32] = static_cast<uint8_t>((154 * 256 + 242) / 243);
    // qh[0]: four trits (0, +1, -1, 0), digits 1 2 0 1, then a zero fifth digit: q = 46 * 3.
    row[48] = static_cast<uint8_t>((138 * 256 + 242) / 243);
    const std::vector<float> y = dequantize(l.type, row);
    // Byte m of the first 32 holds elements m, m + 32, ..., m + 128.
    EXPECT_EQ(y[0], 0.5f);
    EXPECT_EQ(y[32], -0.5f);
    EXPECT_EQ(y[64], 0.0f);
    EXPECT_EQ(y[96], 0.0f);
    EXPECT_EQ(y[128], -0.5f);
    // Byte 32 + m holds elements 160 + m + 16 n.
    EXPECT_EQ(y[160], 0.0f);
    EXPECT_EQ(y[176], 0.5f);
    EXPECT_EQ(y[192], 0.5f);
    EXPECT_EQ(y[208], -0.5f);
    EXPECT_EQ(y[224], 0.0f);
    // qh[m] holds elements 240 + m + 4 n.
    EXPECT_EQ(y[240], 0.0f);
    EXPECT_EQ(y[244], 0.5f);
    EXPECT_EQ(y[248], -0.5f);
    EXPECT_EQ(y[252], 0.0f);
    // A zero byte is five -1 trits.
    EXPECT_EQ(y[1], -0.5f);
    EXPECT_EQ(y[255], -0.5f);
}

TEST(Tq2_0, HandBuiltBlockDecodesCodeByCode) {
    const Layout & l = kLayouts[1];
    Bytes row(l.bytes, 0x55);  // code 1 everywhere: zeros
    set_scale(row, l, 0, 0.25f);
    row[0] = 0b11100100;   // elements 0, 32, 64, 96: codes 0 1 2 3
    row[63] = 0b00011011;  // elements 159, 191, 223, 255: codes 3 2 1 0
    const std::vector<float> y = dequantize(l.type, row);
    EXPECT_EQ(y[0], -0.25f);
    EXPECT_EQ(y[32], 0.0f);
    EXPECT_EQ(y[64], 0.25f);
    EXPECT_EQ(y[96], 0.5f);  // code 3 is +2: the format holds it, the quantizer never writes it
    EXPECT_EQ(y[159], 0.5f);
    EXPECT_EQ(y[191], 0.25f);
    EXPECT_EQ(y[223], 0.0f);
    EXPECT_EQ(y[255], -0.25f);
    EXPECT_EQ(y[1], 0.0f);
}

TEST(Q1_0, HandBuiltBlockDecodesSignBits) {
    const Layout & l = kLayouts[2];
    Bytes row(l.bytes, 0);
    set_scale(row, l, 0, 0.75f);
    row[2] = 0b00000101;   // elements 0 and 2 positive
    row[17] = 0b10000000;  // element 127 positive
    const std::vector<float> y = dequantize(l.type, row);
    EXPECT_EQ(y[0], 0.75f);
    EXPECT_EQ(y[1], -0.75f);
    EXPECT_EQ(y[2], 0.75f);
    EXPECT_EQ(y[126], -0.75f);
    EXPECT_EQ(y[127], 0.75f);
}

TEST(Q2_0, HandBuiltBlockDecodesConsecutiveCodes) {
    const Layout & l = kLayouts[3];
    Bytes row(l.bytes, 0);
    set_scale(row, l, 0, 2.0f);
    row[2] = 0b11100100;   // elements 0..3: codes 0 1 2 3
    row[17] = 0b01000000;  // elements 60..63: codes 0 0 0 1
    const std::vector<float> y = dequantize(l.type, row);
    EXPECT_EQ(y[0], -2.0f);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_EQ(y[2], 2.0f);
    EXPECT_EQ(y[3], 4.0f);
    EXPECT_EQ(y[62], -2.0f);
    EXPECT_EQ(y[63], 0.0f);
}

// ---- Quantization rules ---------------------------------------------------------------------------

// Ternary: d = amax; x / d rounds half away from zero to -1, 0 or +1.
TEST(TernaryQuantization, ScaleIsAbsMaxAndHalvesRoundAway) {
    for (ggml_type type : {GGML_TYPE_TQ1_0, GGML_TYPE_TQ2_0}) {
        SCOPED_TRACE(ggml_type_name(type));
        std::vector<float> x(256, 0.0f);
        x[7] = -4.0f;  // amax
        x[0] = 2.0f;
        x[1] = -2.0f;
        x[2] = 1.9999f;
        x[3] = 3.0f;
        x[255] = 4.0f;
        const std::vector<float> y = dequantize(type, quantize(type, x));
        EXPECT_EQ(y[7], -4.0f);
        EXPECT_EQ(y[0], 4.0f);
        EXPECT_EQ(y[1], -4.0f);
        EXPECT_EQ(y[2], 0.0f);
        EXPECT_EQ(y[3], 4.0f);
        EXPECT_EQ(y[255], 4.0f);
        EXPECT_EQ(y[100], 0.0f);
    }
}

// Exact ternary inputs give back the hand-built TQ1_0 bytes, the canonical ceil encoding.
TEST(Tq1_0, QuantizesToCeilingEncodedDigits) {
    std::vector<float> x(256, 0.0f);
    const float trits[] = {1, -1, 0, 0, -1};
    for (int n = 0; n < 5; ++n)
        x[static_cast<size_t>(32 * n)] = trits[n];
    const Bytes row = quantize(GGML_TYPE_TQ1_0, x);
    EXPECT_EQ(row[0], 184);
    EXPECT_EQ(row[1], (121 * 256 + 242) / 243);   // five zero trits: digits 1 1 1 1 1
    EXPECT_EQ(row[48], (120 * 256 + 242) / 243);  // qh: digits 1 1 1 1 and a zero fifth digit
    EXPECT_EQ(scale_of(row, kLayouts[0], 0), 1.0f);
}

TEST(Q1_0, ScaleIsMeanMagnitudeAndBitsAreSigns) {
    std::vector<float> x(128);
    for (size_t j = 0; j < x.size(); ++j)
        x[j] = j % 2 ? -1.0f : 3.0f;
    x[4] = -0.0f;  // >= 0: a set bit
    const Bytes row = quantize(GGML_TYPE_Q1_0, x);
    float sum = 0.0f;
    for (float v : x)
        sum += std::fabs(v);
    EXPECT_EQ(scale_of(row, kLayouts[2], 0), ggml_fp16_to_fp32(ggml_fp32_to_fp16(sum / 128)));
    EXPECT_EQ(row[2], 0b01010101);
    EXPECT_EQ(row[3], 0b01010101);
}

// Q2_0: d = amax; code = roundf(x / d) + 1, so a half rounds away from zero.
TEST(Q2_0, ScaleIsAbsMaxAndCodesRoundHalfAway) {
    std::vector<float> x(64, 0.0f);
    x[0] = 8.0f;
    x[1] = 4.0f;
    x[2] = -4.0f;
    x[3] = 3.99f;
    x[4] = -8.0f;
    const Bytes row = quantize(GGML_TYPE_Q2_0, x);
    EXPECT_EQ(scale_of(row, kLayouts[3], 0), 8.0f);
    EXPECT_EQ(row[2], 0b01001010);  // codes 2 2 0 1 for elements 0..3
    EXPECT_EQ(row[3], 0b01010100);  // element 4: code 0; 5..7: 1
}

TEST(TernaryFormats, AllZeroBlocksDecodeToZero) {
    for (const Layout & l : kLayouts) {
        SCOPED_TRACE(ggml_type_name(l.type));
        const std::vector<float> x(static_cast<size_t>(l.block) * 2, 0.0f);
        const Bytes row = quantize(l.type, x);
        EXPECT_EQ(scale_of(row, l, 0), 0.0f);
        for (float v : dequantize(l.type, row))
            EXPECT_EQ(std::fabs(v), 0.0f);
    }
}

// Not part of the contract beyond "defined and no undefined behaviour"; the results are ggml's on
// x86 (docs/quantization.md).
TEST(TernaryFormats, NonFiniteInputsStayDefined) {
    for (const Layout & l : kLayouts) {
        SCOPED_TRACE(ggml_type_name(l.type));
        std::vector<float> x(static_cast<size_t>(l.block), 1.0f);
        x[0] = kNaN;
        const std::vector<float> y = dequantize(l.type, quantize(l.type, x));
        if (l.type == GGML_TYPE_Q1_0) {
            EXPECT_TRUE(std::isnan(y[1]));  // the mean magnitude is NaN
        } else {
            EXPECT_EQ(y[1], 1.0f);  // NaN is skipped by the scale
            EXPECT_EQ(y[0], l.type == GGML_TYPE_Q2_0 ? -1.0f : 0.0f);
        }
        x[0] = 1.0f;
        x[1] = kInf;
        x[2] = -1e38f;
        EXPECT_EQ(scale_of(quantize(l.type, x), l, 0), kInf);
        x.assign(x.size(), 1e-40f);  // a subnormal amax: 1 / d overflows
        for (float v : dequantize(l.type, quantize(l.type, x)))
            EXPECT_EQ(std::fabs(v), 0.0f);  // the scale's F16 is 0
    }
}

// ---- Round trip on Gaussian data --------------------------------------------------------------------

TEST(TernaryFormats, GaussianRoundTripError) {
    // Measured: TQ1_0 and TQ2_0 0.807 (the same ternary values), Q1_0 0.603 (sqrt(1 - 2/pi) for
    // sign times mean magnitude), Q2_0 0.723 (ternary on amax of 64: code 3 is never written).
    const struct {
        ggml_type type;
        double bound;
    } cases[] = {
        {GGML_TYPE_TQ1_0, 0.82}, {GGML_TYPE_TQ2_0, 0.82}, {GGML_TYPE_Q1_0, 0.61}, {GGML_TYPE_Q2_0, 0.74}};
    const std::vector<float> x = gaussian(256 * 64, 19);
    for (const auto & c : cases) {
        const double error = quant_test::weighted_rmse(x, dequantize(c.type, quantize(c.type, x)));
        EXPECT_LT(error, c.bound) << ggml_type_name(c.type);
        EXPECT_GT(error, c.bound - 0.05) << ggml_type_name(c.type);
    }
    EXPECT_EQ(dequantize(GGML_TYPE_TQ1_0, quantize(GGML_TYPE_TQ1_0, x)),
              dequantize(GGML_TYPE_TQ2_0, quantize(GGML_TYPE_TQ2_0, x)));
}

// ---- Validation and chunked quantization -----------------------------------------------------------

TEST(TernaryFormats, ValidationRejectsNonFiniteScales) {
    for (const Layout & l : kLayouts) {
        SCOPED_TRACE(ggml_type_name(l.type));
        Bytes row = quantize(l.type, gaussian(static_cast<size_t>(l.block) * 3, 7));
        EXPECT_TRUE(ggml_validate_row_data(l.type, row.data(), row.size()));
        for (float bad : {kNaN, kInf, -kInf}) {
            Bytes broken = row;
            set_scale(broken, l, 1, bad);
            EXPECT_FALSE(ggml_validate_row_data(l.type, broken.data(), broken.size()));
        }
        EXPECT_FALSE(ggml_validate_row_data(l.type, row.data(), row.size() - 1));
    }
}

// ggml quantizes these formats without importance weights: an imatrix changes nothing.
TEST(TernaryFormats, QuantizeChunkWithAndWithoutImatrix) {
    for (const Layout & l : kLayouts) {
        SCOPED_TRACE(ggml_type_name(l.type));
        const int64_t n_per_row = l.block * 2, rows = 3;
        const std::vector<float> x = gaussian(static_cast<size_t>(n_per_row * rows), 3);
        std::vector<float> importance(static_cast<size_t>(n_per_row));
        for (size_t j = 0; j < importance.size(); ++j)
            importance[j] = 1.0f + static_cast<float>(j % 7);
        const size_t bytes = ggml_row_size(l.type, n_per_row) * rows;
        Bytes plain(bytes), weighted(bytes);
        EXPECT_EQ(ggml_quantize_chunk(l.type, x.data(), plain.data(), 0, rows, n_per_row, nullptr), bytes);
        EXPECT_EQ(
            ggml_quantize_chunk(l.type, x.data(), weighted.data(), 0, rows, n_per_row, importance.data()),
            bytes);
        EXPECT_EQ(plain, weighted);
        EXPECT_EQ(plain, quantize(l.type, x));
        // The second row alone, at its offset.
        Bytes second(bytes, 0);
        EXPECT_EQ(ggml_quantize_chunk(l.type, x.data(), second.data(), n_per_row, 1, n_per_row, nullptr),
                  bytes / rows);
        EXPECT_TRUE(std::equal(plain.begin() + static_cast<std::ptrdiff_t>(bytes / rows),
                               plain.begin() + static_cast<std::ptrdiff_t>(2 * bytes / rows),
                               second.begin() + static_cast<std::ptrdiff_t>(bytes / rows)));
    }
}

}  // namespace
