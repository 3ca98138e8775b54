// For the Vulkan suites: whether a Vulkan device is present, failing the test when CTest requires
// one (GGX_REQUIRE_VULKAN=1, set because CI installs lavapipe) and skipping it otherwise.
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

}  // namespace ggx::test
