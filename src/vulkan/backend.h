// The Vulkan backend: records a graph into command buffers on its device's compute queue and waits
// for them at the end. Within a plan (begin_plan .. end_plan) the native ranges and the extensions'
// dispatches and copies (ggml_ext_vulkan_v1) are recorded together: one counter of commands and of
// matrix FLOPs (of native nodes and extension steps' nodes alike) decides when a command buffer is
// submitted early (so the device starts while the rest is recorded), and end_plan submits the rest
// and waits. Fragment execution brackets every step on its own, so each is submitted and waited for.
// A plan execution can also be recorded (record_plan): its command buffers and descriptor sets are
// then kept, and the recording resubmits them (spec: replayable plans).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "interface/backend-impl.h"
#include "vulkan/buffer.h"
#include "vulkan/recorder.h"

namespace ggx::vulkan {

class PlanCommands;  // a recorded plan execution (backend.cpp)

class Backend final : public ggml_backend {
public:
    Backend(ggml_backend_dev_t owner, BufferType & buffer_type);
    ~Backend() override;

    const char * name() const override { return owner_->name(); }
    ggml_guid_t guid() const override;
    ggml_backend_dev_t device() const override { return owner_; }
    ggml_status compute_native(std::span<const NativeNode> nodes, const Workspace & workspace) override;
    bool can_access(ggml_backend_buffer_type_t buft) const override { return buft == &buffer_type_; }
    void begin_plan() override;
    ggml_status end_plan() override;
    // Counts the matrix FLOPs of an extension step's nodes (MUL_MAT, FLASH_ATTN_EXT, as native ones
    // count) toward the submission threshold, and submits when it is reached.
    ggml_status end_extension_step(std::span<ggml_tensor * const> nodes) override;
    // Every native kernel only records commands from metadata and addresses, so plans could always be
    // recorded; the spec keeps Vulkan's batched plans unrecorded ("this batching neither captures
    // device replay nor retains plan state across scheduler rebuilds"), so recording is opt-in:
    // GGX_VULKAN_PLAN_REPLAY=1 in the environment when the plan is built.
    bool can_record_plans() const override;
    void record_plan() override;
    std::unique_ptr<PlanRecording> take_plan_recording() override;

    // Records extension work (record(recorder)) into the executing plan, counting toward the
    // submission thresholds. FAILED with an error outside a plan or when record throws.
    ggml_status record_extension(const std::function<void(Recorder &)> & record);
    bool in_plan() const { return in_plan_; }
    Device & vulkan() const { return device_; }

    // Of the last completed graph or plan (for tests): dispatches, barriers and queue submissions.
    size_t last_dispatches() const { return last_dispatches_; }
    size_t last_barriers() const { return last_barriers_; }
    size_t last_submissions() const { return last_submissions_; }
    // Queue submissions since the backend was created (for tests of fragment execution).
    size_t total_submissions() const { return total_submissions_; }

    // A command buffer is submitted early once it holds this many commands or matrix FLOPs.
    static constexpr size_t kSubmitCommands = 100;
    static constexpr double kSubmitFlops = 4e9;

private:
    // The binding of the plan's workspace, from its first offset-aligned byte.
    Arg workspace_arg(const Workspace & workspace) const;
    // The open recording, begun on first use.
    Recorder & recording();
    void record(std::span<const NativeNode> nodes, const Arg & workspace);
    // A command buffer from the free list (or a new one), begun; while recording a plan, a new one
    // of the recording's.
    VkCommandBuffer begin_commands();
    // Ends and submits the open command buffer without waiting.
    void submit_commands();
    // Submits early when the thresholds are reached (the recording continues in a new buffer).
    void submit_if_due();
    // Submits the open recording and waits for every submission (nothing to do without one).
    void submit_recording();
    void discard_recording();
    void wait_in_flight();
    // Runs f; an Error discards the recording and becomes a FAILED status with the message.
    template <class F>
    ggml_status guarded(F f);

    ggml_backend_dev_t owner_;
    BufferType & buffer_type_;
    Device & device_;
    struct Commands {
        VkCommandBuffer buffer = VK_NULL_HANDLE;
        VkFence fence = VK_NULL_HANDLE;
        bool recorded = false;  // belongs to plan_recording_
    };
    // Returns a completed (or never submitted) command buffer: to the free list, or, when it belongs
    // to the plan recording, its fence is released and the buffer kept there if it was submitted.
    void release_commands(const Commands & c, bool submitted);
    VkCommandPool pool_ = VK_NULL_HANDLE;
    std::vector<Commands> free_, in_flight_;
    Commands open_;                  // being recorded (valid while recorder_ is)
    size_t commands_at_submit_ = 0;  // recorder_->n_commands() when the last buffer was submitted
    double pending_flops_ = 0.0;
    DescriptorArena arena_;
    std::optional<Recorder> recorder_;
    std::unique_ptr<PlanCommands> plan_recording_;  // while record_plan's execution runs
    bool in_plan_ = false;
    size_t last_dispatches_ = 0, last_barriers_ = 0, last_submissions_ = 0, total_submissions_ = 0;
};

}  // namespace ggx::vulkan
