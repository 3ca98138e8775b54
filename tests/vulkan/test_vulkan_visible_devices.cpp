// GGML_VK_VISIBLE_DEVICES, and ggx's earlier name for it GGX_VULKAN_DEVICES, choose and order the
// Vulkan devices (docs/vulkan.md). The registry reads them once, when it is created, so each case
// creates it in a child process (a death test) that exits with its device count.
#include <ggml-backend.h>
#include <ggml-vulkan.h>
#include <gtest/gtest.h>
#include <vulkan/vulkan.h>

#include <cstdlib>
#include <cstring>

namespace {

// The physical devices the loader lists, asked without creating ggx's registry. The instance lives
// as long as the process, as the registry's does: destroying it unloads the driver, and LeakSanitizer
// could then no longer name the bytes the driver keeps (tests/sanitize/lsan.supp matches them by its
// library's name), in this process and in every death-test child forked from it.
uint32_t physical_device_count() {
    static const VkInstance instance = [] {
        VkInstanceCreateInfo info{};
        info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
        VkInstance created = VK_NULL_HANDLE;
        return vkCreateInstance(&info, nullptr, &created) == VK_SUCCESS ? created : VK_NULL_HANDLE;
    }();
    if (instance == VK_NULL_HANDLE) return 0;
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance, &count, nullptr);
    return count;
}

void set_or_unset(const char * name, const char * value) {
    if (value) {
        setenv(name, value, 1);
    } else {
        unsetenv(name);
    }
}

[[noreturn]] void exit_with_device_count(const char * visible, const char * alias) {
    set_or_unset("GGML_VK_VISIBLE_DEVICES", visible);
    set_or_unset("GGX_VULKAN_DEVICES", alias);
    std::exit(static_cast<int>(ggml_backend_reg_dev_count(ggml_backend_vk_reg())));
}

class VisibleDevices : public ::testing::Test {
protected:
    void SetUp() override {
        if (physical_device_count() > 0) return;
        const char * required = std::getenv("GGX_REQUIRE_VULKAN");
        if (required && std::strcmp(required, "0") != 0)
            FAIL() << "no Vulkan device (is mesa-vulkan-drivers installed?)";
        GTEST_SKIP() << "no Vulkan device";
    }
};

TEST_F(VisibleDevices, ListedIndicesAreOpened) {
    EXPECT_EXIT(exit_with_device_count("0", nullptr), testing::ExitedWithCode(1), "");
    EXPECT_EXIT(exit_with_device_count("0,0", nullptr), testing::ExitedWithCode(2), "");
}

TEST_F(VisibleDevices, BadEntriesAreReportedAndIgnored) {
    EXPECT_EXIT(exit_with_device_count("99", nullptr), testing::ExitedWithCode(0),
                "GGML_VK_VISIBLE_DEVICES: ignoring '99'");
    EXPECT_EXIT(exit_with_device_count("x,0", nullptr), testing::ExitedWithCode(1),
                "GGML_VK_VISIBLE_DEVICES: ignoring 'x'");
}

TEST_F(VisibleDevices, GgxNameIsAnAliasThatGgmlsNameOverrides) {
    EXPECT_EXIT(exit_with_device_count(nullptr, "0"), testing::ExitedWithCode(1), "");
    EXPECT_EXIT(exit_with_device_count(nullptr, "99"), testing::ExitedWithCode(0),
                "GGX_VULKAN_DEVICES: ignoring '99'");
    EXPECT_EXIT(exit_with_device_count("0", "99"), testing::ExitedWithCode(1), "");
}

}  // namespace
