// The Vulkan backend's block formats (shaders/quant.glsl, docs/vulkan.md): every format it
// dequantizes gives the CPU's ggml_dequantize_row bit for bit on random blocks (NaN, infinite and
// subnormal scales included), and every format it quantizes gives ggml_quantize_row's blocks on
// adversarial inputs (zeros, NaN, infinities, subnormals, ties, magnitudes just below a power of two).
#include <ggml-backend.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "vulkan/vulkan_fixture.h"

namespace ggx::test {
namespace {

constexpr int64_t kValues = 256 * 64;  // a whole number of blocks of every format

class VulkanQuant : public VulkanTest {
protected:
    // Runs CPY of kValues values of type from (bytes) into a new tensor of type to on Vulkan; false
    // when the backend does not support it. The result's bytes in out.
    bool copy_on_vulkan(ggml_type from, ggml_type to, const void * bytes, std::vector<uint8_t> & out) {
        Context ctx(ggml_init({size_t{1} << 20, nullptr, true}));
        ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), from, kValues);
        ggml_tensor * d = ggml_cast(ctx.get(), a, to);
        if (!ggml_backend_supports_op(vk(), d)) return false;
        Buffer buffer(ggml_backend_alloc_ctx_tensors_from_buft(ctx.get(), buft()));
        EXPECT_NE(buffer, nullptr);
        ggml_backend_tensor_set(a, bytes, 0, ggml_nbytes(a));
        ggml_cgraph * graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, d);
        EXPECT_EQ(ggml_backend_graph_compute(vk(), graph), GGML_STATUS_SUCCESS);
        out.resize(ggml_nbytes(d));
        ggml_backend_tensor_get(d, out.data(), 0, out.size());
        return true;
    }
};

TEST_F(VulkanQuant, DequantizesEveryFormatLikeTheCpu) {
    std::mt19937 rng(7);
    int formats = 0;
    for (int i = 0; i < GGML_TYPE_COUNT; ++i) {
        const auto type = static_cast<ggml_type>(i);
        if (!ggml_is_quantized(type) || ggml_blck_size(type) <= 1 || kValues % ggml_blck_size(type) != 0)
            continue;
        std::vector<uint8_t> blocks(ggml_row_size(type, kValues)), got;
        for (uint8_t & b : blocks)
            b = static_cast<uint8_t>(rng());
        if (!copy_on_vulkan(type, GGML_TYPE_F32, blocks.data(), got)) continue;
        ++formats;
        std::vector<float> want(kValues);
        ggml_dequantize_row(type, blocks.data(), want.data(), kValues);
        int64_t differ = 0;
        for (int64_t j = 0; j < kValues; ++j) {
            float g;
            std::memcpy(&g, got.data() + 4 * j, 4);
            if (std::memcmp(&g, &want[j], 4) != 0 && !(std::isnan(g) && std::isnan(want[j]))) ++differ;
        }
        EXPECT_EQ(differ, 0) << ggml_type_name(type);
    }
    EXPECT_EQ(formats, 27);  // every block format ggx converts
}

TEST_F(VulkanQuant, QuantizesLikeTheCpuReference) {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> x(kValues);
    for (int64_t i = 0; i < kValues; ++i) {
        const int64_t j = i % 256;
        const float v = uniform(rng);
        switch (i / 256 % 12) {
            case 0:
                x[i] = 0.0f;
                break;
            case 1:
                x[i] = j % 7 == 0 ? nan : v;
                break;
            case 2:
                x[i] = j == 5 ? inf : v;
                break;
            case 3:
                x[i] = v * 1e-39f;
                break;  // subnormal
            case 4:
                x[i] = std::round(v * 16.0f) / 16.0f;
                break;  // rounding ties
            case 5:
                x[i] = nan;
                break;
            case 6:
                x[i] = j == 3 ? -inf : v * 1e20f;
                break;
            case 7:
                x[i] = j % 2 ? 0.25f - 1e-8f : v * 0.2f;
                break;  // largest magnitude just below 2^-2
            case 8:
                x[i] = std::nextafter(4.0f, 0.0f) * (j % 3 ? 0.5f : -1.0f);
                break;
            case 9:
                x[i] = v * 1e-16f;
                break;
            default:
                x[i] = v;
                break;
        }
    }
    int formats = 0;
    for (int i = 0; i < GGML_TYPE_COUNT; ++i) {
        const auto type = static_cast<ggml_type>(i);
        if (!ggml_is_quantized(type) || ggml_blck_size(type) <= 1 || kValues % ggml_blck_size(type) != 0)
            continue;
        std::vector<uint8_t> got;
        if (!copy_on_vulkan(GGML_TYPE_F32, type, x.data(), got)) continue;
        ++formats;
        std::vector<uint8_t> want(got.size());
        ggml_quantize_row(type, x.data(), want.data(), kValues);
        const size_t bytes = ggml_type_size(type);
        int64_t differ = 0;
        for (size_t b = 0; b < want.size(); b += bytes)
            differ += std::memcmp(got.data() + b, want.data() + b, bytes) != 0;
        EXPECT_EQ(differ, 0) << ggml_type_name(type) << " blocks";
    }
    EXPECT_EQ(formats, 13);  // docs/vulkan.md's quantized block types
}

}  // namespace
}  // namespace ggx::test
