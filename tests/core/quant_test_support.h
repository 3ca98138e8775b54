// Shared checks of the block-format tests: round trips through ggml's row API, errors on Gaussian
// data, validity of rows and quantization of extreme inputs.
#pragma once

#include <ggml.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace quant_test {

inline std::vector<float> gaussian(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (float & v : x)
        v = normal(rng);
    return x;
}

inline std::vector<uint8_t> quantize(ggml_type type, const std::vector<float> & x) {
    std::vector<uint8_t> q(ggml_row_size(type, static_cast<int64_t>(x.size())));
    ggml_quantize_row(type, x.data(), q.data(), static_cast<int64_t>(x.size()));
    return q;
}

inline std::vector<float> dequantize(ggml_type type, const std::vector<uint8_t> & q) {
    const auto n = static_cast<int64_t>(q.size() / ggml_type_size(type)) * ggml_blck_size(type);
    std::vector<float> y(static_cast<size_t>(n));
    EXPECT_TRUE(ggml_dequantize_row(type, q.data(), y.data(), n));
    return y;
}

// sqrt(sum w·(x − y)² / sum w), w = 1 when weights is empty.
inline double weighted_rmse(const std::vector<float> & x, const std::vector<float> & y,
                            const std::vector<float> & weights = {}) {
    double sum = 0.0;
    double total = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double w = weights.empty() ? 1.0 : weights[i % weights.size()];
        const double diff = static_cast<double>(x[i]) - static_cast<double>(y[i]);
        sum += w * diff * diff;
        total += w;
    }
    return std::sqrt(sum / total);
}

// The round-trip RMSE of 64 rows of N(0, 1) values (printed for the docs).
inline double gaussian_rmse(ggml_type type) {
    const std::vector<float> x = gaussian(64 * 4096, 1234u);
    const double rmse = weighted_rmse(x, dequantize(type, quantize(type, x)));
    std::printf("%s round-trip RMSE on N(0,1): %.5f\n", ggml_type_name(type), rmse);
    return rmse;
}

// ggml_quantize_chunk without importance equals ggml_quantize_row; with a non-uniform importance
// (rows of 1024) it is a valid row whose importance-weighted error is below the unweighted
// quantization's.
inline void expect_importance_helps(ggml_type type) {
    constexpr int64_t kRow = 1024;
    constexpr int64_t kRows = 16;
    const std::vector<float> x = gaussian(kRow * kRows, 99u);
    std::vector<float> importance(kRow);
    std::mt19937 rng(7u);
    std::exponential_distribution<float> spread(1.0f);
    for (float & w : importance)
        w = spread(rng) * spread(rng);
    const size_t bytes = ggml_row_size(type, kRow) * kRows;
    std::vector<uint8_t> plain(bytes);
    std::vector<uint8_t> weighted(bytes);
    ASSERT_EQ(ggml_quantize_chunk(type, x.data(), plain.data(), 0, kRows, kRow, nullptr), bytes);
    ASSERT_EQ(ggml_quantize_chunk(type, x.data(), weighted.data(), 0, kRows, kRow, importance.data()), bytes);
    EXPECT_EQ(plain, quantize(type, x));
    EXPECT_TRUE(ggml_validate_row_data(type, weighted.data(), bytes));
    const double plain_error = weighted_rmse(x, dequantize(type, plain), importance);
    const double weighted_error = weighted_rmse(x, dequantize(type, weighted), importance);
    EXPECT_LT(weighted_error, 0.97 * plain_error) << ggml_type_name(type);
    EXPECT_FALSE(ggml_quantize_requires_imatrix(type));
}

// A valid row of two blocks becomes invalid when the F16 field at byte offset of its second block
// holds an infinity or a NaN.
inline void expect_f16_field_checked(ggml_type type, size_t offset) {
    std::vector<uint8_t> row = quantize(type, gaussian(2 * ggml_blck_size(type), 5u));
    ASSERT_TRUE(ggml_validate_row_data(type, row.data(), row.size()));
    for (uint16_t bad : {uint16_t{0x7c00}, uint16_t{0xfc00}, uint16_t{0x7e00}}) {
        std::vector<uint8_t> broken = row;
        std::memcpy(broken.data() + ggml_type_size(type) + offset, &bad, sizeof bad);
        EXPECT_FALSE(ggml_validate_row_data(type, broken.data(), broken.size())) << offset;
    }
}

// Blocks of zeros decode to zeros; blocks of NaN, infinities and extreme magnitudes quantize
// without fault (sanitizers see any UB) and the finite ones to a valid row.
inline void expect_extreme_inputs_handled(ggml_type type) {
    const int64_t block = ggml_blck_size(type);
    const std::vector<float> zeros(static_cast<size_t>(block), 0.0f);
    for (float v : dequantize(type, quantize(type, zeros)))
        EXPECT_EQ(v, 0.0f);
    constexpr float kInf = std::numeric_limits<float>::infinity();
    for (float fill : {std::numeric_limits<float>::quiet_NaN(), kInf, -kInf, 3e38f, -1e-40f, 1e-30f}) {
        std::vector<float> x = gaussian(block, 3u);
        for (int64_t i = 0; i < block; i += 3)
            x[static_cast<size_t>(i)] = fill;
        const std::vector<uint8_t> q = quantize(type, x);
        dequantize(type, q);
        if (std::isfinite(fill) && std::fabs(fill) < 1e4f) {
            EXPECT_TRUE(ggml_validate_row_data(type, q.data(), q.size()));
        }
    }
}

inline uint16_t f16(float v) { return ggml_fp32_to_fp16(v); }

}  // namespace quant_test
