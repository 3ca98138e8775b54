// IQ4_NL, IQ4_XS, MXFP4 and NVFP4 (src/core/quant/nonlinear.cpp): hand-built blocks decode to the
// values of the format description, round trips stay within the formats' error, importance lowers
// the weighted error, and the scale fields are validated as ggml does.
#include <ggml-cpu.h>
#include <ggml.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "quant_test_support.h"

namespace {

using quant_test::f16;

// The format tables (ggml's kvalues_iq4nl; E2M1 doubled, ggml's kvalues_mxfp4).
constexpr int kIq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
constexpr float kE2M1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

// n nibble bytes whose byte j holds code j % 16 low and 15 − j % 16 high.
void fill_codes(uint8_t * qs, int n) {
    for (int j = 0; j < n; ++j)
        qs[j] = static_cast<uint8_t>((j % 16) | ((15 - j % 16) << 4));
}

TEST(QuantNonlinear, Iq4NlDecodesTableValuesTimesScale) {
    std::vector<uint8_t> block(18);
    const uint16_t d = f16(0.5f);
    std::memcpy(block.data(), &d, 2);
    fill_codes(block.data() + 2, 16);
    const std::vector<float> y = quant_test::dequantize(GGML_TYPE_IQ4_NL, block);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], 0.5f * kIq4[j]);
        EXPECT_EQ(y[j + 16], 0.5f * kIq4[15 - j]);
    }
}

TEST(QuantNonlinear, Iq4XsDecodesSixBitSubBlockScales) {
    std::vector<uint8_t> block(136);
    const uint16_t d = f16(0.25f);
    std::memcpy(block.data(), &d, 2);
    int ls[8];
    uint16_t high = 0;
    for (int i = 0; i < 8; ++i) {
        ls[i] = 8 * i + 3;  // 3 .. 59: both high bits in use
        block[4 + i / 2] = static_cast<uint8_t>(block[4 + i / 2] | ((ls[i] & 0x0f) << (4 * (i % 2))));
        high = static_cast<uint16_t>(high | ((ls[i] >> 4) << (2 * i)));
    }
    std::memcpy(block.data() + 2, &high, 2);
    fill_codes(block.data() + 8, 128);
    const std::vector<float> y = quant_test::dequantize(GGML_TYPE_IQ4_XS, block);
    for (int i = 0; i < 8; ++i) {
        const float dl = 0.25f * static_cast<float>(ls[i] - 32);
        for (int j = 0; j < 16; ++j) {
            EXPECT_EQ(y[32 * i + j], dl * kIq4[j]) << i;
            EXPECT_EQ(y[32 * i + 16 + j], dl * kIq4[15 - j]) << i;
        }
    }
}

TEST(QuantNonlinear, Mxfp4DecodesE2M1TimesPowerOfTwo) {
    for (int e : {0, 1, 120, 127, 130, 254}) {
        std::vector<uint8_t> block(17);
        block[0] = static_cast<uint8_t>(e);
        fill_codes(block.data() + 1, 16);
        const std::vector<float> y = quant_test::dequantize(GGML_TYPE_MXFP4, block);
        const float scale = std::ldexp(1.0f, e - 127);
        for (int j = 0; j < 16; ++j) {
            EXPECT_EQ(y[j], kE2M1[j] * scale) << e;
            EXPECT_EQ(y[j + 16], kE2M1[15 - j] * scale) << e;
        }
    }
}

TEST(QuantNonlinear, Nvfp4DecodesUe4m3SubBlockScales) {
    // UE4M3 (bias 7): 0x38 = 1, 0x01 = 2^-9 (subnormal), 0x7f (NaN) reads as 0, 0x76 = 1.75·2^7.
    const uint8_t codes[4] = {0x38, 0x01, 0x7f, 0x76};
    const float scales[4] = {1.0f, 0x1p-9f, 0.0f, 224.0f};
    std::vector<uint8_t> block(36);
    std::memcpy(block.data(), codes, 4);
    fill_codes(block.data() + 4, 32);
    const std::vector<float> y = quant_test::dequantize(GGML_TYPE_NVFP4, block);
    for (int s = 0; s < 4; ++s) {
        for (int j = 0; j < 8; ++j) {
            EXPECT_EQ(y[16 * s + j], kE2M1[(8 * s + j) % 16] * scales[s]) << s;
            EXPECT_EQ(y[16 * s + 8 + j], kE2M1[15 - (8 * s + j) % 16] * scales[s]) << s;
        }
    }
    EXPECT_TRUE(ggml_validate_row_data(GGML_TYPE_NVFP4, block.data(), block.size()));  // every byte is valid
}

TEST(QuantNonlinear, Fp4FormatsHitTheLargestMagnitudeExactly) {
    // A power-of-two maximum lands on E2M1's 4 (MXFP4) or 6 (NVFP4, with scale max/6 exact).
    std::vector<float> x = quant_test::gaussian(64, 21u);
    for (float & v : x)
        v = std::fmax(std::fmin(v, 1.9f), -1.9f);
    x[5] = -8.0f;
    x[40] = 6.0f;
    const std::vector<float> mx =
        quant_test::dequantize(GGML_TYPE_MXFP4, quant_test::quantize(GGML_TYPE_MXFP4, x));
    EXPECT_EQ(mx[5], -8.0f);
    const std::vector<float> nv =
        quant_test::dequantize(GGML_TYPE_NVFP4, quant_test::quantize(GGML_TYPE_NVFP4, x));
    EXPECT_EQ(nv[40], 6.0f);
}

TEST(QuantNonlinear, RoundTripErrorOnGaussianData) {
    EXPECT_LT(quant_test::gaussian_rmse(GGML_TYPE_IQ4_NL), 0.081);
    EXPECT_LT(quant_test::gaussian_rmse(GGML_TYPE_IQ4_XS), 0.079);
    EXPECT_LT(quant_test::gaussian_rmse(GGML_TYPE_MXFP4), 0.118);
    EXPECT_LT(quant_test::gaussian_rmse(GGML_TYPE_NVFP4), 0.098);
}

TEST(QuantNonlinear, ImportanceLowersTheWeightedError) {
    quant_test::expect_importance_helps(GGML_TYPE_IQ4_NL);
    quant_test::expect_importance_helps(GGML_TYPE_IQ4_XS);
    EXPECT_FALSE(ggml_quantize_requires_imatrix(GGML_TYPE_MXFP4));
    EXPECT_FALSE(ggml_quantize_requires_imatrix(GGML_TYPE_NVFP4));
}

TEST(QuantNonlinear, ScaleFieldsAreValidated) {
    quant_test::expect_f16_field_checked(GGML_TYPE_IQ4_NL, 0);
    quant_test::expect_f16_field_checked(GGML_TYPE_IQ4_XS, 0);
    std::vector<uint8_t> row = quant_test::quantize(GGML_TYPE_MXFP4, quant_test::gaussian(64, 4u));
    ASSERT_TRUE(ggml_validate_row_data(GGML_TYPE_MXFP4, row.data(), row.size()));
    row[17] = 0xff;  // E8M0 NaN in the second block
    EXPECT_FALSE(ggml_validate_row_data(GGML_TYPE_MXFP4, row.data(), row.size()));
}

TEST(QuantNonlinear, ExtremeInputs) {
    for (ggml_type type : {GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS, GGML_TYPE_MXFP4, GGML_TYPE_NVFP4})
        quant_test::expect_extreme_inputs_handled(type);
}

TEST(QuantNonlinear, DotTypes) {
    EXPECT_EQ(ggml_get_type_traits_cpu(GGML_TYPE_IQ4_NL)->vec_dot_type, GGML_TYPE_Q8_0);
    EXPECT_EQ(ggml_get_type_traits_cpu(GGML_TYPE_IQ4_XS)->vec_dot_type, GGML_TYPE_Q8_K);
    EXPECT_EQ(ggml_get_type_traits_cpu(GGML_TYPE_MXFP4)->vec_dot_type, GGML_TYPE_Q8_0);
    EXPECT_EQ(ggml_get_type_traits_cpu(GGML_TYPE_NVFP4)->vec_dot_type, GGML_TYPE_Q8_0);
}

}  // namespace
