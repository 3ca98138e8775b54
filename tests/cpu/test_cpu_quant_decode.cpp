// The int8 decoders of the block formats (src/cpu/quant_decode.h) against each format's own
// dequantization: value = scale * q - offset must equal the dequantized value up to the rounding of
// that expression, for every type that has both a decoder and a conversion.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstring>
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

// One run of blocks decoded against its dequantization.
void expect_decodes_as_dequantized(ggml_type type, const std::vector<char> & blocks) {
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

void expect_decoded_values(ggml_type type) {
    for (const std::vector<float> & row : sample_rows()) {
        std::vector<char> blocks(ggml_row_size(type, kRun));
        ASSERT_EQ(ggml_quantize_row(type, row.data(), blocks.data(), kRun), blocks.size());
        expect_decodes_as_dequantized(type, blocks);
    }
}

// The grid-based i-quants: one block a run, and every byte pattern a valid block once its F16 d is
// finite.
constexpr ggml_type kGridQuants[] = {GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S, GGML_TYPE_IQ3_XXS,
                                     GGML_TYPE_IQ3_S,   GGML_TYPE_IQ1_S,  GGML_TYPE_IQ1_M};

// Sets the F16 d of an i-quant block: bytes 0..1, or for IQ1_M the top nibbles of the 4 words at
// bytes 48..55 (lowest first).
void set_d(ggml_type type, std::vector<char> & block, uint16_t bits) {
    if (type != GGML_TYPE_IQ1_M) {
        std::memcpy(block.data(), &bits, sizeof bits);
        return;
    }
    for (int w = 0; w < 4; ++w) {
        uint16_t word;
        std::memcpy(&word, block.data() + 48 + 2 * w, sizeof word);
        word = static_cast<uint16_t>((word & 0x0FFF) | ((bits >> 4 * w) & 15) << 12);
        std::memcpy(block.data() + 48 + 2 * w, &word, sizeof word);
    }
}

// Raw blocks: random bytes with a random finite d, every byte 0xFF (all sign bits and shift signs
// set, the largest scales and grid indices) and every byte 0 with d = 1 and d = -2.5.
std::vector<std::vector<char>> raw_blocks(ggml_type type) {
    std::mt19937 rng(11);
    const size_t bytes = ggml_row_size(type, kRun);
    std::vector<std::vector<char>> blocks;
    for (int i = 0; i < 32; ++i) {
        std::vector<char> block(bytes);
        for (char & c : block)
            c = static_cast<char>(rng());
        auto d = static_cast<uint16_t>(rng());
        if ((d & 0x7C00) == 0x7C00) d = static_cast<uint16_t>(d & ~0x4000);  // not Inf or NaN
        set_d(type, block, d);
        blocks.push_back(block);
    }
    for (int fill : {0xFF, 0})
        for (uint16_t d : {uint16_t{0x3C00}, uint16_t{0xC100}}) {
            std::vector<char> block(bytes, static_cast<char>(fill));
            set_d(type, block, d);
            blocks.push_back(block);
        }
    return blocks;
}

void expect_raw_blocks_decoded(ggml_type type) {
    for (const std::vector<char> & block : raw_blocks(type)) {
        ASSERT_TRUE(ggml_validate_row_data(type, block.data(), block.size()));
        expect_decodes_as_dequantized(type, block);
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

TEST(QuantDecode, GridQuantsDecodeEveryBytePatternOnEveryTarget) {
    for (int64_t target : hwy::SupportedAndGeneratedTargets())
        for (ggml_type type : kGridQuants) {
            SCOPED_TRACE(std::string(ggml_type_name(type)) + " " + hwy::TargetName(target));
            ASSERT_NE(ggx::cpu::quant::decoder_of(type), nullptr);
            ASSERT_EQ(ggml_row_size(type, kRun), ggml_type_size(type));
            hwy::SetSupportedTargetsForTest(target);
            expect_raw_blocks_decoded(type);
        }
    hwy::SetSupportedTargetsForTest(0);
}

}  // namespace
