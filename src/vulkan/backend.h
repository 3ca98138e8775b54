// The Vulkan backend: records a graph into one command buffer and submits it once on its device's
// compute queue, then waits for it. Within a plan (begin_plan .. end_plan) the native ranges and the
// extensions' dispatches and copies (ggml_ext_vulkan_v1) go into the same command buffer, which
// end_plan submits.
#pragma once

#include <memory>
#include <optional>
#include <vector>

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
    void begin_plan() override;
    ggml_status end_plan() override;

    // The recording of the executing plan, for extension work; nullptr (with an error set) outside
    // a plan or when recording cannot start.
    Recorder * plan_recorder();
    Device & vulkan() const { return device_; }

    // Dispatches and barriers of the last submission (for tests).
    size_t last_dispatches() const { return last_dispatches_; }
    size_t last_barriers() const { return last_barriers_; }

private:
    ggml_status check_graph(ggml_cgraph * graph, size_t * workspace_bytes) const;
    Arg reserve_workspace(size_t bytes);
    // The open recording, begun on first use.
    Recorder & recording();
    void record(ggml_cgraph * graph, const Arg & workspace);
    // Ends, submits and waits for the open recording (nothing to do without one).
    void submit_recording();
    void discard_recording();
    // Runs f; an Error discards the recording and becomes a FAILED status with the message.
    template <class F>
    ggml_status guarded(F f);

    ggml_backend_dev_t owner_;
    BufferType & buffer_type_;
    Device & device_;
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkCommandBuffer commands_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    DescriptorArena arena_;
    std::unique_ptr<Buffer> workspace_;
    std::vector<std::unique_ptr<Buffer>> retired_;  // replaced workspaces the recording may still use
    std::optional<Recorder> recorder_;
    bool in_plan_ = false;
    size_t last_dispatches_ = 0, last_barriers_ = 0;
};

}  // namespace ggx::vulkan
