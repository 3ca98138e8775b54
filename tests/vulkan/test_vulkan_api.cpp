// ggml-vulkan.h's device queries and pinned host buffer type: descriptions and memory as the
// devices report them, and host buffers that the host, the CPU backend and transfers to Vulkan
// tensors use directly.
#include <ggml-cpp.h>
#include <ggml-cpu.h>
#include <ggml-vulkan.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "vulkan/vulkan_fixture.h"

namespace {

using ggx::test::VulkanTest;

TEST_F(VulkanTest, DescriptionAndMemoryOfEachDevice) {
    ggml_backend_dev_t device = ggml_backend_get_device(vk());
    char description[256];
    ggml_backend_vk_get_device_description(0, description, sizeof description);
    EXPECT_STREQ(description, ggml_backend_dev_description(device));
    char short_text[4];
    ggml_backend_vk_get_device_description(0, short_text, sizeof short_text);
    EXPECT_EQ(std::string(short_text), std::string(description).substr(0, 3));
    size_t free = 0, total = 0, dev_free = 0, dev_total = 0;
    ggml_backend_vk_get_device_memory(0, &free, &total);
    ggml_backend_dev_memory(device, &dev_free, &dev_total);
    EXPECT_EQ(free, dev_free);
    EXPECT_EQ(total, dev_total);
    EXPECT_GT(total, 0u);

    const int missing = ggml_backend_vk_get_device_count();
    ggml_backend_vk_get_device_description(missing, description, sizeof description);
    EXPECT_STREQ(description, "");
    ggml_backend_vk_get_device_memory(missing, &free, &total);
    EXPECT_EQ(free + total, 0u);
}

TEST_F(VulkanTest, PinnedHostBuffersServeTheHostTheCpuAndTransfers) {
    ggml_backend_buffer_type_t host = ggml_backend_vk_host_buffer_type();
    ASSERT_NE(host, nullptr);
    EXPECT_TRUE(ggml_backend_buft_is_host(host));
    EXPECT_STREQ(ggml_backend_buft_name(host), "Vulkan0_Host");
    ggml_backend_dev_t device = ggml_backend_get_device(vk());
    EXPECT_EQ(ggml_backend_dev_host_buffer_type(device), host);
    ggml_backend_dev_props props;
    ggml_backend_dev_get_props(device, &props);
    EXPECT_TRUE(props.caps.host_buffer);
    EXPECT_FALSE(ggml_guid_matches(ggml_backend_guid(vk()), ggml_backend_guid(ggml_backend_ptr(ggml_backend_cpu_init()).get())));

    // x and y in pinned memory, computed on the CPU backend; then x copied into a Vulkan tensor.
    ggml_context_ptr pinned_ctx(ggml_init({1 << 20, nullptr, true}));
    ggml_tensor * x = ggml_new_tensor_1d(pinned_ctx.get(), GGML_TYPE_F32, 64);
    ggml_tensor * y = ggml_sqr(pinned_ctx.get(), x);
    ggml_backend_buffer_ptr pinned(ggml_backend_alloc_ctx_tensors_from_buft(pinned_ctx.get(), host));
    ASSERT_NE(pinned, nullptr) << ggml_backend_get_last_error();
    auto * values = static_cast<float *>(x->data);  // host memory: written directly
    for (int i = 0; i < 64; ++i)
        values[i] = static_cast<float>(i) - 10.0f;
    ggml_backend_ptr cpu(ggml_backend_cpu_init());
    ggml_cgraph * graph = ggml_new_graph(pinned_ctx.get());
    ggml_build_forward_expand(graph, y);
    ASSERT_EQ(ggml_backend_graph_compute(cpu.get(), graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(static_cast<float *>(y->data)[3], 49.0f);

    ggml_tensor * on_device = input(64);
    alloc();
    ASSERT_EQ(ggml_ext_backend_tensor_copy(x, on_device), GGML_STATUS_SUCCESS);
    std::vector<float> back(64);
    ggml_backend_tensor_get(on_device, back.data(), 0, 64 * sizeof(float));
    EXPECT_EQ(std::memcmp(back.data(), values, 64 * sizeof(float)), 0);
}

}  // namespace
