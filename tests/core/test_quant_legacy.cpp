// Q4_1, Q5_0, Q5_1 and Q8_1 (src/core/quant/legacy.cpp): hand-built blocks decode to the values of
// the format description, round trips stay within the formats' error, importance lowers the
// weighted error, and every F16 field is validated.
#include <ggml-cpu.h>
#include <ggml.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "quant_test_support.h"

namespace {

using quant_test::f16;

void put_u16(std::vector<uint8_t> & block, size_t offset, uint16_t v) {
    std::memcpy(block.data() + offset, &v, 2);
}

TEST(QuantLegacy, Q4_1DecodesScaleTimesCodePlusMin) {
    std::vector<uint8_t> block(20);
    put_u16(block, 0, f16(0.5f));
    put_u16(block, 2, f16(-2.0f));
    for (int j = 0; j < 16; ++j)
        block[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    const std::vector<float> y = quant_test::dequantize(GGML_TYPE_Q4_1, block);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], 0.5f * j - 2.0f);
        EXPECT_EQ(y[j + 16], 0.5f * (15 - j) - 2.0f);
    }
}

// Value j's fifth bit is bit j of qh; Q5_0 is centred on 16, Q5_1 adds its minimum.
std::vector<uint8_t> five_bit_block(size_t qh_offset, uint32_t qh) {
    std::vector<uint8_t> block(qh_offset + 4 + 16);
    std::memcpy(block.data() + qh_offset, &qh, 4);
    for (int j = 0; j < 16; ++j)
        block[qh_offset + 4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    return block;
}

int five_bit_code(int j, uint32_t qh) {
    const int low = j < 16 ? j : 15 - (j - 16);
    return low | static_cast<int>(((qh >> j) & 1u) << 4);
}

TEST(QuantLegacy, Q5_0DecodesCentredFiveBitCodes) {
    constexpr uint32_t kQh = 0xa5c3'0f91u;
    std::vector<uint8_t> block = five_bit_block(2, kQh);
    put_u16(block, 0, f16(0.25f));
    const std::vector<float> y = quant_test::dequantize(GGML_TYPE_Q5_0, block);
    for (int j = 0; j < 32; ++j)
        EXPECT_EQ(y[j], 0.25f * static_cast<float>(five_bit_code(j, kQh) - 16)) << j;
}

TEST(QuantLegacy, Q5_1DecodesFiveBitCodesPlusMin) {
    constexpr uint32_t kQh = 0x1234'fedcu;
    std::vector<uint8_t> block = five_bit_block(4, kQh);
    put_u16(block, 0, f16(0.125f));
    put_u16(block, 2, f16(-1.5f));
    const std::vector<float> y = quant_test::dequantize(GGML_TYPE_Q5_1, block);
    for (int j = 0; j < 32; ++j)
        EXPECT_EQ(y[j], 0.125f * static_cast<float>(five_bit_code(j, kQh)) - 1.5f) << j;
}

TEST(QuantLegacy, Q8_1DecodesAndStoresTheScaledSum) {
    std::vector<uint8_t> block(36);
    put_u16(block, 0, f16(0.5f));
    for (int j = 0; j < 32; ++j)
        block[4 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
    const std::vector<float> y = quant_test::dequantize(GGML_TYPE_Q8_1, block);
    for (int j = 0; j < 32; ++j)
        EXPECT_EQ(y[j], 0.5f * static_cast<float>(j - 16));

    // 127 at the largest magnitude, s = d·sum(q) with the unrounded d = amax/127.
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j)
        x[j] = 0.1f * static_cast<float>(j) - 2.1f;  // the largest magnitude first
    const std::vector<uint8_t> q = quant_test::quantize(GGML_TYPE_Q8_1, x);
    int sum = 0;
    for (int j = 0; j < 32; ++j)
        sum += static_cast<int8_t>(q[4 + j]);
    EXPECT_EQ(static_cast<int8_t>(q[4]), -127);
    uint16_t d = 0;
    uint16_t s = 0;
    std::memcpy(&d, q.data(), 2);
    std::memcpy(&s, q.data() + 2, 2);
    EXPECT_EQ(d, f16(2.1f / 127.0f));
    EXPECT_EQ(s, f16(static_cast<float>(sum) * (2.1f / 127.0f)));
}

TEST(QuantLegacy, Q4_1AndQ5_1MapTheExtremaToTheEndCodes) {
    std::vector<float> x = quant_test::gaussian(32, 11u);
    x[3] = -3.0f;
    x[20] = 4.5f;
    for (ggml_type type : {GGML_TYPE_Q4_1, GGML_TYPE_Q5_1}) {
        const std::vector<float> y = quant_test::dequantize(type, quant_test::quantize(type, x));
        EXPECT_EQ(y[3], -3.0f);  // the minimum is stored as m, code 0
        EXPECT_NEAR(y[20], 4.5f, 4e-3f) << ggml_type_name(type);
    }
}

TEST(QuantLegacy, RoundTripErrorOnGaussianData) {
    EXPECT_LT(quant_test::gaussian_rmse(GGML_TYPE_Q4_1), 0.081);
    EXPECT_LT(quant_test::gaussian_rmse(GGML_TYPE_Q5_0), 0.044);
    EXPECT_LT(quant_test::gaussian_rmse(GGML_TYPE_Q5_1), 0.039);
    EXPECT_LT(quant_test::gaussian_rmse(GGML_TYPE_Q8_1), 0.0056);
}

TEST(QuantLegacy, ImportanceLowersTheWeightedError) {
    for (ggml_type type : {GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1})
        quant_test::expect_importance_helps(type);
    EXPECT_FALSE(ggml_quantize_requires_imatrix(GGML_TYPE_Q8_1));
}

TEST(QuantLegacy, EveryScaleFieldIsValidated) {
    quant_test::expect_f16_field_checked(GGML_TYPE_Q4_1, 0);
    quant_test::expect_f16_field_checked(GGML_TYPE_Q4_1, 2);
    quant_test::expect_f16_field_checked(GGML_TYPE_Q5_0, 0);
    quant_test::expect_f16_field_checked(GGML_TYPE_Q5_1, 0);
    quant_test::expect_f16_field_checked(GGML_TYPE_Q5_1, 2);
    quant_test::expect_f16_field_checked(GGML_TYPE_Q8_1, 0);
    quant_test::expect_f16_field_checked(GGML_TYPE_Q8_1, 2);
}

TEST(QuantLegacy, ExtremeInputs) {
    for (ggml_type type : {GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_1})
        quant_test::expect_extreme_inputs_handled(type);
}

TEST(QuantLegacy, DotTypes) {
    EXPECT_EQ(ggml_get_type_traits_cpu(GGML_TYPE_Q4_1)->vec_dot_type, GGML_TYPE_Q8_1);
    EXPECT_EQ(ggml_get_type_traits_cpu(GGML_TYPE_Q5_0)->vec_dot_type, GGML_TYPE_Q8_0);
    EXPECT_EQ(ggml_get_type_traits_cpu(GGML_TYPE_Q5_1)->vec_dot_type, GGML_TYPE_Q8_1);
    EXPECT_EQ(ggml_get_type_traits_cpu(GGML_TYPE_Q8_1)->vec_dot_type, GGML_TYPE_Q8_1);
}

}  // namespace
