// The int8 decoders of the block formats (src/cpu/quant_decode.h) against each format's own
// dequantization: value = scale * q - offset must equal the dequantized value up to the rounding of
// that expression, for every type that has both a decoder and a conversion.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/types.h"
#include "cpu/quant_decode.h"

namespace {

using ggx::cpu::quant::DecodedRun;
using ggx::cpu::quant::kGroup;
using ggx::cpu::quant::kRun;

std::vector<ggml_type> decoded_types() {
    std::vector<ggml_type> types;
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const auto type = static_cast<ggml_type>(t);
        if (ggx::cpu::quant::decoder_of(type) && ggx::core::has_conversion(type)) types.push_back(type);
    }
    return types;
}

// Rows of kRun values: Gaussian, Gaussian with an offset (the formats with minima use them), tiny and
// huge magnitudes, and zeros.
std::vector<std::vector<float>> sample_rows() {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    std::vector<std::vector<float>> rows;
    for (float shift : {0.0f, 2.5f})
        for (float scale : {1.0f, 1e-3f, 3e3f}) {
            std::vector<float> row(kRun);
            for (float & v : row)
                v = scale * (normal(rng) + shift);
            rows.push_back(row);
        }
    rows.emplace_back(kRun, 0.0f);
    return rows;
}

void expect_decoded_values(ggml_type type) {
    for (const std::vector<float> & row : sample_rows()) {
        std::vector<char> blocks(ggml_row_size(type, kRun));
        ASSERT_EQ(ggml_quantize_row(type, row.data(), blocks.data(), kRun), blocks.size());
        std::vector<float> expected(kRun);
        ASSERT_TRUE(ggml_dequantize_row(type, blocks.data(), expected.data(), kRun));
        DecodedRun run;
        ggx::cpu::quant::decoder_of(type)(blocks.data(), blocks.size(), 1, &run);
        double amax = 0;
        for (float v : expected)
            amax = std::max(amax, std::fabs(static_cast<double>(v)));
        for (int64_t i = 0; i < kRun; ++i) {
            const int64_t g = i / kGroup;
            const double decoded = static_cast<double>(run.scale[g]) * run.q[i] - run.offset[g];
            ASSERT_NEAR(decoded, expected[i], 1e-6 * amax) << "value " << i;
        }
    }
}

TEST(QuantDecode, DecodedValuesEqualTheFormatsDequantizationOnEveryTarget) {
    const std::vector<ggml_type> types = decoded_types();
    ASSERT_FALSE(types.empty());
    for (int64_t target : hwy::SupportedAndGeneratedTargets())
        for (ggml_type type : types) {
            SCOPED_TRACE(std::string(ggml_type_name(type)) + " " + hwy::TargetName(target));
            hwy::SetSupportedTargetsForTest(target);
            expect_decoded_values(type);
        }
    hwy::SetSupportedTargetsForTest(0);
}

}  // namespace
