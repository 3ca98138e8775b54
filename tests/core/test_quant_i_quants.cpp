// The i-quants (src/core/quant/i_quants.cpp) through ggml's API: hand-built blocks decode to the
// values of the format description; Gaussian round trips stay below an error bound; importance
// weights lower the weighted error; every F16 scale is validated; ggml_quantize_chunk honours the
// formats that need an importance matrix.
#include <ggml-cpu.h>
#include <ggml.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "quant_test_support.h"

namespace {

using quant_test::gaussian;

constexpr int64_t kBlock = 256;

struct Case {
    ggml_type type;
    double max_rmse;  // on N(0, 1) data
    bool requires_imatrix;
};

// Bounds a little above the measured error (docs/quantization.md).
const Case kCases[] = {
    {GGML_TYPE_IQ2_XXS, 0.34, true},  {GGML_TYPE_IQ2_XS, 0.30, true}, {GGML_TYPE_IQ2_S, 0.25, false},
    {GGML_TYPE_IQ3_XXS, 0.19, false}, {GGML_TYPE_IQ3_S, 0.14, false}, {GGML_TYPE_IQ1_S, 0.46, true},
    {GGML_TYPE_IQ1_M, 0.43, false},
};

// Rows of one block each, with kBlock importance weights or none.
std::vector<float> round_trip(ggml_type type, const std::vector<float> & x, const float * imatrix) {
    const auto n = static_cast<int64_t>(x.size());
    std::vector<unsigned char> q(ggml_row_size(type, n));
    EXPECT_EQ(ggml_quantize_chunk(type, x.data(), q.data(), 0, n / kBlock, kBlock, imatrix), q.size());
    std::vector<float> y(x.size());
    EXPECT_TRUE(ggml_dequantize_row(type, q.data(), y.data(), n));
    return y;
}

double weighted_mse(const std::vector<float> & x, const std::vector<float> & y,
                    const std::vector<float> & w) {
    double sum = 0;
    for (size_t i = 0; i < x.size(); ++i)
        sum += w[i % w.size()] * (x[i] - y[i]) * (x[i] - y[i]);
    return sum / static_cast<double>(x.size());
}

std::vector<float> decode(ggml_type type, const std::vector<unsigned char> & block) {
    EXPECT_EQ(block.size(), ggml_type_size(type));
    std::vector<float> y(kBlock);
    EXPECT_TRUE(ggml_dequantize_row(type, block.data(), y.data(), kBlock));
    return y;
}

void put16(std::vector<unsigned char> & b, size_t at, unsigned v) {
    b[at] = static_cast<unsigned char>(v);
    b[at + 1] = static_cast<unsigned char>(v >> 8);
}

constexpr unsigned kOne = 0x3c00;  // F16 1.0

void expect_prefix(const std::vector<float> & y, const std::vector<float> & expected) {
    for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(y[i], expected[i]) << "value " << i;
}

// ---- Hand-built blocks: d = 1, the first group grid point 1, sign/shift bits set, scale 3 (IQ1: 2) --

// IQ2 point 1 is (43, 8, 8, 8, 8, 8, 8, 8); scale 3 gives db = (0.5 + 3) · 0.25; sign bits 0x81.
const std::vector<float> kIq2First = {-37.625f, 7, 7, 7, 7, 7, 7, -7};

TEST(IQuants, Iq2xxsBlockDecodes) {
    std::vector<unsigned char> b(66, 0);
    put16(b, 0, kOne);
    b[2] = 1;               // grid index of values 0..7
    put16(b, 6, 1);         // sign index 1: ksigns 0x81
    put16(b, 8, 3u << 12);  // scale 3 in bits 28..31 of the word
    const std::vector<float> y = decode(GGML_TYPE_IQ2_XXS, b);
    expect_prefix(y, kIq2First);
    EXPECT_EQ(y[8], 7.0f);  // grid point 0: eight 8s, no signs
}

TEST(IQuants, Iq2xsBlockDecodes) {
    std::vector<unsigned char> b(74, 0);
    put16(b, 0, kOne);
    put16(b, 2, 1u | 1u << 9);  // index 1, sign index 1
    b[66] = 3 | 5 << 4;         // scales of values 0..15 and 16..31
    const std::vector<float> y = decode(GGML_TYPE_IQ2_XS, b);
    expect_prefix(y, kIq2First);
    EXPECT_EQ(y[16], 8 * (0.5f + 5) * 0.25f);
}

TEST(IQuants, Iq2sBlockDecodes) {
    std::vector<unsigned char> b(82, 0);
    put16(b, 0, kOne);
    b[2] = 1;
    b[34] = 0x81;  // free sign bits
    b[74] = 3;
    b[66] = 1 << 2;  // group 1: index 256 + 0
    const std::vector<float> y = decode(GGML_TYPE_IQ2_S, b);
    expect_prefix(y, kIq2First);
    EXPECT_NE(y[8], 7.0f);  // point 256 is not point 0
}

TEST(IQuants, Iq3xxsBlockDecodes) {
    std::vector<unsigned char> b(98, 0);
    put16(b, 0, kOne);
    b[2] = 1;  // point 1: (20, 4, 4, 4); point 0: four 4s
    put16(b, 66, 1);
    put16(b, 68, 3u << 12);  // db = (0.5 + 3) · 0.5
    expect_prefix(decode(GGML_TYPE_IQ3_XXS, b), {-35, 7, 7, 7, 7, 7, 7, -7});
}

TEST(IQuants, Iq3sBlockDecodes) {
    std::vector<unsigned char> b(110, 0);
    put16(b, 0, kOne);
    b[2] = 1;  // point 1: (3, 1, 1, 1); point 0: four 1s
    b[74] = 0x81;
    b[106] = 3;  // db = 1 + 2 · 3
    expect_prefix(decode(GGML_TYPE_IQ3_S, b), {-21, 7, 7, 7, 7, 7, 7, -7});
}

// IQ1 point 1 is (1, -1, -1, -1, -1, -1, -1, -1); scale 2 gives dl = 5; the shift is -1/8.
const std::vector<float> kIq1First = {4.375f, -5.625f, -5.625f, -5.625f, -5.625f, -5.625f, -5.625f, -5.625f};

TEST(IQuants, Iq1sBlockDecodes) {
    std::vector<unsigned char> b(50, 0);
    put16(b, 0, kOne);
    b[2] = 1;
    put16(b, 34, 2u << 12 | 0x8000u);
    const std::vector<float> y = decode(GGML_TYPE_IQ1_S, b);
    expect_prefix(y, kIq1First);
    EXPECT_EQ(y[8], 5 * (-1 - 0.125f));  // point 0: eight -1s, same shift
}

TEST(IQuants, Iq1mBlockDecodes) {
    std::vector<unsigned char> b(56, 0);
    b[0] = 1;
    b[32] = 8;  // group 0: shift sign set, index high bits 0
    for (unsigned w = 0; w < 4; ++w)
        put16(b, 48 + 2 * w, (kOne >> 4 * w & 15u) << 12 | (w == 0 ? 2u : 0u));
    const std::vector<float> y = decode(GGML_TYPE_IQ1_M, b);
    expect_prefix(y, kIq1First);
    EXPECT_EQ(y[8], 5 * (-1 + 0.125f));  // group 1: the same scale of 16 values, positive shift
    EXPECT_EQ(y[16], -1 + 0.125f);       // group 2: scale 0 (dl = 1)
}

// ---- Every format ------------------------------------------------------------------------------

class IQuantFormat : public ::testing::TestWithParam<Case> {};

TEST_P(IQuantFormat, GaussianRoundTripError) {
    const Case c = GetParam();
    const std::vector<float> x = gaussian(16 * kBlock, 7);
    const std::vector<float> unit(kBlock, 1.0f);
    const double rmse = std::sqrt(weighted_mse(x, round_trip(c.type, x, unit.data()), unit));
    EXPECT_LT(rmse, c.max_rmse) << ggml_type_name(c.type);
    std::vector<unsigned char> q(ggml_row_size(c.type, static_cast<int64_t>(x.size())));
    ggml_quantize_row(c.type, x.data(), q.data(), static_cast<int64_t>(x.size()));  // unit weights
    std::vector<float> y(x.size());
    ggml_dequantize_row(c.type, q.data(), y.data(), static_cast<int64_t>(x.size()));
    EXPECT_DOUBLE_EQ(weighted_mse(x, y, unit), rmse * rmse);
}

TEST_P(IQuantFormat, ImportanceLowersWeightedError) {
    const Case c = GetParam();
    const std::vector<float> x = gaussian(8 * kBlock, 11);
    std::vector<float> importance = gaussian(kBlock, 12);
    for (float & w : importance)
        w = w * w * w * w + 0.01f;  // a few columns matter much more
    const std::vector<float> unit(kBlock, 1.0f);
    EXPECT_LT(weighted_mse(x, round_trip(c.type, x, importance.data()), importance),
              weighted_mse(x, round_trip(c.type, x, unit.data()), importance));
}

TEST_P(IQuantFormat, ZerosAndNonFiniteInput) {
    const Case c = GetParam();
    const std::vector<float> unit(kBlock, 1.0f);
    std::vector<float> x(2 * kBlock, 0.0f);
    for (float v : round_trip(c.type, x, unit.data()))
        EXPECT_EQ(v, 0.0f);
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[kBlock + 5] = std::numeric_limits<float>::infinity();
    x[kBlock + 6] = 3e38f;
    // Blocks holding a value that is not finite, or too large for an F16 scale, are written as zeros.
    for (float v : round_trip(c.type, x, unit.data()))
        EXPECT_EQ(v, 0.0f);
}

TEST_P(IQuantFormat, ValidationRejectsNonFiniteScale) {
    const Case c = GetParam();
    const std::vector<float> x = gaussian(2 * kBlock, 3);
    std::vector<unsigned char> q(ggml_row_size(c.type, 2 * kBlock));
    ggml_quantize_row(c.type, x.data(), q.data(), 2 * kBlock);
    EXPECT_TRUE(ggml_validate_row_data(c.type, q.data(), q.size()));
    unsigned char * second = q.data() + ggml_type_size(c.type);
    if (c.type == GGML_TYPE_IQ1_M) {
        second[48 + 5] = static_cast<unsigned char>(second[48 + 5] | 0xc0);  // exponent bits 10..14 all set
        second[48 + 7] = static_cast<unsigned char>(second[48 + 7] | 0x70);
    } else {
        put16(q, ggml_type_size(c.type), 0x7e00);  // NaN
    }
    EXPECT_FALSE(ggml_validate_row_data(c.type, q.data(), q.size()));
}

TEST_P(IQuantFormat, ChunkAndImportanceRequirement) {
    const Case c = GetParam();
    EXPECT_EQ(ggml_quantize_requires_imatrix(c.type), c.requires_imatrix);
    const std::vector<float> x = gaussian(2 * kBlock, 5);
    std::vector<unsigned char> q(ggml_row_size(c.type, 2 * kBlock));
    EXPECT_EQ(ggml_quantize_chunk(c.type, x.data(), q.data(), 0, 2, kBlock, nullptr),
              c.requires_imatrix ? 0 : q.size());
    const std::vector<float> importance(kBlock, 2.0f);
    EXPECT_EQ(ggml_quantize_chunk(c.type, x.data(), q.data(), 0, 2, kBlock, importance.data()), q.size());
    std::vector<unsigned char> row(ggml_row_size(c.type, kBlock));
    ggml_quantize_row(c.type, x.data() + kBlock, row.data(), kBlock);  // constant weights: the same fit
    EXPECT_EQ(std::memcmp(row.data(), q.data() + row.size(), row.size()), 0);
    EXPECT_EQ(ggml_get_type_traits_cpu(c.type)->vec_dot_type, GGML_TYPE_Q8_K);
}

// Element access reads the dequantized row and writes by requantizing the element's block.
TEST_P(IQuantFormat, ElementAccessGoesThroughTheBlock) {
    const Case c = GetParam();
    ggml_init_params params{1 << 20, nullptr, false};
    ggml_context * ctx = ggml_init(params);
    ggml_tensor * t = ggml_new_tensor_2d(ctx, c.type, kBlock, 2);
    const std::vector<float> x = gaussian(2 * kBlock, 9);
    ggml_quantize_row(c.type, x.data(), t->data, 2 * kBlock);
    std::vector<float> row(kBlock);
    ggml_dequantize_row(c.type, static_cast<char *>(t->data) + t->nb[1], row.data(), kBlock);
    EXPECT_EQ(ggml_get_f32_nd(t, 5, 1, 0, 0), row[5]);
    ggml_set_f32_1d(t, kBlock + 5, 3.0f);
    std::vector<float> edited(row);
    edited[5] = 3.0f;
    std::vector<unsigned char> block(ggml_type_size(c.type));
    ggml_quantize_row(c.type, edited.data(), block.data(), kBlock);
    EXPECT_EQ(std::memcmp(block.data(), static_cast<char *>(t->data) + t->nb[1], block.size()), 0);
    ggml_free(ctx);
}

INSTANTIATE_TEST_SUITE_P(All, IQuantFormat, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> & param) {
                             return std::string(ggml_type_name(param.param.type));
                         });

}  // namespace
