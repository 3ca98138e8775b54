// The sd pack's CPU ConvRot and affine fusions (extensions/sd/cpu/convrot_fusions.cpp and
// affine_fusions.cpp; ggml-extensions.md, the ConvRot and affine rules), by the checks of
// fusion_chains.h on the CPU backend.
#include <gtest/gtest.h>

#include "extensions/sd/fusion_chains.h"
#include "extensions/sd/sd_pack_env.h"

namespace {

using namespace ggx::test::sd_fusions;

TEST(SdCpuFusions, EachFiresAndEqualsItsUnfusedChainBitForBit) {
    expect_fused_equals_unfused({ggx::test::sd_cpu_backend()}, convrot_cases(), ".cpu");
    expect_fused_equals_unfused({ggx::test::sd_cpu_backend()}, affine_cases(), ".cpu");
}

TEST(SdCpuFusions, AnIntermediateWithAnotherConsumerIsNotFused) {
    expect_external_consumer_blocks({ggx::test::sd_cpu_backend()}, convrot_cases(), ".cpu");
    expect_external_consumer_blocks({ggx::test::sd_cpu_backend()}, affine_cases(), ".cpu");
}

}  // namespace
