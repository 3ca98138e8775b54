// For the Vulkan backend's suites: a fixture with a Vulkan0 backend and a context of tensors
// allocated on it (skipped, or failed under GGX_REQUIRE_VULKAN=1, without a device).
#pragma once

#include <ggml-vulkan.h>
#include <gtest/gtest.h>

#include "support/test_util.h"
#include "vulkan/vulkan_util.h"
#include "vulkan/backend.h"

namespace ggx::test {

class VulkanTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!vulkan_present()) GTEST_SKIP() << "no Vulkan device";
        backend_.reset(ggml_backend_vk_init(0));
        ctx_.reset(ggml_init({size_t{1} << 20, nullptr, true}));
    }

    ggml_backend_t vk() { return backend_.get(); }
    vulkan::Backend & vk_impl() { return *static_cast<vulkan::Backend *>(vk()); }
    ggml_backend_buffer_type_t buft() { return ggml_backend_vk_buffer_type(0); }
    ggml_context * ctx() { return ctx_.get(); }
    ggml_tensor * input(int64_t n0, int64_t n1 = 1) {
        return ggml_new_tensor_2d(ctx(), GGML_TYPE_F32, n0, n1);
    }
    // Allocates every tensor of ctx() in one Vulkan buffer.
    void alloc() {
        buffer_.reset(ggml_backend_alloc_ctx_tensors_from_buft(ctx(), buft()));
        ASSERT_NE(buffer_, nullptr) << ggml_backend_get_last_error();
    }
    ggml_status compute(ggml_tensor * out) {
        ggml_cgraph * graph = ggml_new_graph(ctx());
        ggml_build_forward_expand(graph, out);
        return ggml_backend_graph_compute(vk(), graph);
    }

    Backend backend_;
    Context ctx_;
    Buffer buffer_;
};

}  // namespace ggx::test
