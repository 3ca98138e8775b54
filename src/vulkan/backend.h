// The Vulkan backend: executes a graph (or a graph range of a plan) as one command buffer and one
// submission on its device's compute queue, then waits for it.
#pragma once

#include <memory>

#include "backend/backend-impl.h"
#include "vulkan/buffer.h"
#include "vulkan/recorder.h"

namespace ggx::vulkan {

class Backend final : public ggml_backend {
public:
    Backend(ggml_backend_dev_t owner, BufferType & buffer_type);
    ~Backend() override;

    const char * name() const override { return owner_->name(); }
    ggml_backend_dev_t device() const override { return owner_; }
    ggml_status graph_compute(ggml_cgraph * graph) override;

    // Dispatches and barriers recorded by the last graph_compute (for tests and explain output).
    size_t last_dispatches() const { return last_dispatches_; }
    size_t last_barriers() const { return last_barriers_; }

private:
    ggml_status check_graph(ggml_cgraph * graph, size_t * workspace_bytes) const;
    ggml_status check_memory(int index, const ggml_tensor * node) const;
    Arg reserve_workspace(size_t bytes);
    void record_and_submit(ggml_cgraph * graph, const Arg & workspace);

    ggml_backend_dev_t owner_;
    BufferType & buffer_type_;
    Device & device_;
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkCommandBuffer commands_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    DescriptorArena arena_;
    std::unique_ptr<Buffer> workspace_;
    size_t last_dispatches_ = 0, last_barriers_ = 0;
};

// "node 3 'name' (ADD f32 [4, 1, 1, 1])", for error messages.
std::string describe_node(int index, const ggml_tensor * node);

}  // namespace ggx::vulkan
