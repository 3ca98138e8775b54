// For the Vulkan suites: whether a Vulkan device is present, failing the test when CTest requires
// one (GGX_REQUIRE_VULKAN=1, set because CI installs lavapipe) and skipping it otherwise; switching
// the Vulkan fusion rules off for a scope.
#pragma once

#include <ggml-vulkan.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace ggx::test {

inline bool vulkan_present() {
    if (ggml_backend_vk_get_device_count() > 0) return true;
    const char * required = std::getenv("GGX_REQUIRE_VULKAN");
    EXPECT_FALSE(required && std::strcmp(required, "0") != 0)
        << "no Vulkan device (is mesa-vulkan-drivers installed?)";
    return false;
}

// Sets GGML_VK_DISABLE_FUSION to value for one scope.
struct DisableVulkanFusion {
    explicit DisableVulkanFusion(const char * value) { setenv("GGML_VK_DISABLE_FUSION", value, 1); }
    ~DisableVulkanFusion() { unsetenv("GGML_VK_DISABLE_FUSION"); }
    DisableVulkanFusion(const DisableVulkanFusion &) = delete;
    DisableVulkanFusion & operator=(const DisableVulkanFusion &) = delete;
};

}  // namespace ggx::test
