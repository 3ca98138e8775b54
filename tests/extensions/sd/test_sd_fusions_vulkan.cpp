// The sd pack's Vulkan ConvRot and affine fusions (extensions/sd/vulkan/convrot.cpp and affine.cpp,
// shaders/activation_convrot.comp, mul_add.comp, f16_copy.comp) by the checks of fusion_chains.h on
// Vulkan0 beside the CPU: Scale, SwiGLU (packed, swapped, split) and SiLU/Sigmoid -> Mul, each then
// ConvRot; Mul(gate) -> Add(residual); Concat -> [Permute] -> F16 copy and Contiguous -> Scale ->
// Permute -> F16 copy; each bit-identical to the native Vulkan operators.
#include <ggml-vulkan.h>
#include <gtest/gtest.h>

#include "extensions/sd/fusion_chains.h"
#include "extensions/sd/sd_pack_env.h"
#include "vulkan/vulkan_util.h"

namespace {

using namespace ggx::test::sd_fusions;

class SdVulkanFusions : public ::testing::Test {
protected:
    void SetUp() override {
        if (!ggx::test::vulkan_present()) GTEST_SKIP() << "no Vulkan device";
        vk_.reset(ggml_backend_vk_init(0));
    }
    std::vector<ggml_backend_t> backends() { return {vk_.get(), ggx::test::sd_cpu_backend()}; }

    ggx::test::Backend vk_;
};

TEST_F(SdVulkanFusions, EachRuleFiresAndEqualsItsUnfusedChainBitForBit) {
    expect_fused_equals_unfused(backends(), convrot_cases(), ".vulkan");
    expect_fused_equals_unfused(backends(), affine_cases(), ".vulkan");
}

TEST_F(SdVulkanFusions, AnIntermediateWithAnotherConsumerIsNotFused) {
    expect_external_consumer_blocks(backends(), convrot_cases(), ".vulkan");
    expect_external_consumer_blocks(backends(), affine_cases(), ".vulkan");
}

}  // namespace
