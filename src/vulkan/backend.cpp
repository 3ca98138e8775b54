#include "vulkan/backend.h"

#include <cstdlib>
#include <string_view>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

ggml_guid_t Backend::guid() const {
    static ggml_guid vulkan = {0x67, 0x67, 0x78, 0x2d, 0x76, 0x75, 0x6c, 0x6b,
                               0x61, 0x6e, 0x2d, 0x62, 0x61, 0x63, 0x6b, 0x00};  // "ggx-vulkan-back"
    return &vulkan;
}

namespace {

// Multiply-adds of the matrix ops, for the submission threshold (other ops count as commands only).
double node_flops(const ggml_tensor * node) {
    if (node->op == GGML_OP_MUL_MAT || node->op == GGML_OP_MUL_MAT_ID)
        return 2.0 * static_cast<double>(node->src[0]->ne[0]) * ggml_nelements(node);
    if (node->op == GGML_OP_FLASH_ATTN_EXT) {
        const ggml_tensor *q = node->src[0], *k = node->src[1];
        return 4.0 * static_cast<double>(q->ne[0]) * q->ne[1] * q->ne[2] * q->ne[3] * k->ne[1];
    }
    return 0.0;
}

}  // namespace

// A recorded plan execution: command buffers of a pool of its own, in submission order, and the
// descriptor sets they bind. Everything belongs to the device, so it may outlive the backend.
class PlanCommands final : public PlanRecording {
public:
    explicit PlanCommands(Device & device) : device_(device), arena_(device) {
        VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
        pool_info.queueFamilyIndex = device_.queue_family();
        check(vkCreateCommandPool(device_.handle(), &pool_info, nullptr, &pool_), "vkCreateCommandPool");
        const VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        check(vkCreateFence(device_.handle(), &fence_info, nullptr, &fence_), "vkCreateFence");
    }
    ~PlanCommands() override {
        vkDestroyFence(device_.handle(), fence_, nullptr);
        vkDestroyCommandPool(device_.handle(), pool_, nullptr);
    }
    PlanCommands(const PlanCommands &) = delete;
    PlanCommands & operator=(const PlanCommands &) = delete;

    // Every submission waits for its fence: no replay is pending when it returns or fails.
    ggml_status replay() override {
        try {
            check(vkResetFences(device_.handle(), 1, &fence_), "vkResetFences");
            VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
            submit.commandBufferCount = static_cast<uint32_t>(buffers_.size());
            submit.pCommandBuffers = buffers_.data();
            device_.submit(submit, fence_);
            check(vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
            return GGML_STATUS_SUCCESS;
        } catch (const Error & e) {
            return backend::fail(GGML_STATUS_FAILED, std::string(device_.name()) + ": replaying a plan: " + e.what());
        }
    }

    VkCommandBuffer allocate() {
        VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        alloc.commandPool = pool_;
        alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        alloc.commandBufferCount = 1;
        VkCommandBuffer buffer = VK_NULL_HANDLE;
        check(vkAllocateCommandBuffers(device_.handle(), &alloc, &buffer), "vkAllocateCommandBuffers");
        return buffer;
    }
    void keep(VkCommandBuffer submitted) { buffers_.push_back(submitted); }
    bool empty() const { return buffers_.empty(); }
    DescriptorArena & arena() { return arena_; }

private:
    Device & device_;
    DescriptorArena arena_;  // never reset: the recorded commands bind its sets
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    std::vector<VkCommandBuffer> buffers_;
};

Backend::Backend(ggml_backend_dev_t owner, BufferType & buffer_type)
    : owner_(owner), buffer_type_(buffer_type), device_(buffer_type.vulkan()), arena_(device_) {
    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = device_.queue_family();
    check(vkCreateCommandPool(device_.handle(), &pool_info, nullptr, &pool_), "vkCreateCommandPool");
}

Backend::~Backend() {
    wait_in_flight();
    for (const Commands & c : free_)
        vkDestroyFence(device_.handle(), c.fence, nullptr);
    if (open_.fence) vkDestroyFence(device_.handle(), open_.fence, nullptr);
    vkDestroyCommandPool(device_.handle(), pool_, nullptr);
}

Arg Backend::workspace_arg(const Workspace & workspace) const {
    const auto * buffer = dynamic_cast<const Buffer *>(workspace.buffer);
    if (!buffer || workspace.size == 0) return {};
    if (&buffer->vulkan() != &device_) throw Error("the plan's workspace is not in this device's memory");
    // Requests are padded by workspace_padding: align the region's start for binding.
    const VkDeviceSize alignment = device_.limits().storage_offset_alignment;
    const auto offset = static_cast<VkDeviceSize>(static_cast<const char *>(workspace.data) -
                                                  static_cast<const char *>(workspace.buffer->base()));
    const VkDeviceSize start = (offset + alignment - 1) / alignment * alignment;
    const VkDeviceSize end = offset + workspace.size;
    if (start >= end) return {};
    return {buffer->handle(), start, end - start, true};
}

size_t workspace_padding(ggml_backend_t backend) {
    return static_cast<const Backend *>(backend)->vulkan().limits().storage_offset_alignment;
}

VkCommandBuffer Backend::begin_commands() {
    if (plan_recording_) {
        const VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        open_ = {plan_recording_->allocate(), VK_NULL_HANDLE, true};
        check(vkCreateFence(device_.handle(), &fence_info, nullptr, &open_.fence), "vkCreateFence");
        VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        check(vkBeginCommandBuffer(open_.buffer, &begin), "vkBeginCommandBuffer");
        return open_.buffer;
    }
    if (free_.empty()) {
        Commands c;
        VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        alloc.commandPool = pool_;
        alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        alloc.commandBufferCount = 1;
        check(vkAllocateCommandBuffers(device_.handle(), &alloc, &c.buffer), "vkAllocateCommandBuffers");
        const VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        check(vkCreateFence(device_.handle(), &fence_info, nullptr, &c.fence), "vkCreateFence");
        free_.push_back(c);
    }
    open_ = free_.back();
    free_.pop_back();
    check(vkResetCommandBuffer(open_.buffer, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(open_.buffer, &begin), "vkBeginCommandBuffer");
    return open_.buffer;
}

Recorder & Backend::recording() {
    if (recorder_) return *recorder_;
    arena_.reset();  // every earlier submission has completed
    commands_at_submit_ = 0;
    pending_flops_ = 0.0;
    last_submissions_ = 0;
    return recorder_.emplace(device_, begin_commands(), plan_recording_ ? plan_recording_->arena() : arena_);
}

void Backend::release_commands(const Commands & c, bool submitted) {
    if (!c.recorded) {
        free_.push_back(c);
        return;
    }
    vkDestroyFence(device_.handle(), c.fence, nullptr);
    if (submitted) plan_recording_->keep(c.buffer);  // the pool frees the others
}

void Backend::submit_commands() {
    const Commands c = open_;
    open_ = {};
    check(vkEndCommandBuffer(c.buffer), "vkEndCommandBuffer");
    check(vkResetFences(device_.handle(), 1, &c.fence), "vkResetFences");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &c.buffer;
    in_flight_.push_back(c);  // its fence is waited for even if the submission fails
    device_.submit(submit, c.fence);
    ++last_submissions_;
    ++total_submissions_;
}

// Barriers in later buffers order their commands after every earlier submission to the queue, so
// the recorder's hazard tracking carries on across buffers.
void Backend::submit_if_due() {
    const size_t pending = recorder_->n_commands() - commands_at_submit_;
    if (pending < kSubmitCommands && pending_flops_ < kSubmitFlops) return;
    submit_commands();
    recorder_->set_commands(begin_commands());
    commands_at_submit_ = recorder_->n_commands();
    pending_flops_ = 0.0;
}

void Backend::wait_in_flight() {
    for (const Commands & c : in_flight_) {
        vkWaitForFences(device_.handle(), 1, &c.fence, VK_TRUE, UINT64_MAX);
        release_commands(c, true);
    }
    in_flight_.clear();
}

void Backend::discard_recording() {
    if (!recorder_) return;
    vkEndCommandBuffer(open_.buffer);
    release_commands(open_, false);
    open_ = {};
    recorder_.reset();
    wait_in_flight();
    plan_recording_.reset();  // a failed execution leaves no recording
}

void Backend::submit_recording() {
    if (!recorder_) return;
    last_dispatches_ = recorder_->n_dispatches();
    last_barriers_ = recorder_->n_barriers();
    if (recorder_->n_commands() > commands_at_submit_) {
        submit_commands();
    } else {
        vkEndCommandBuffer(open_.buffer);
        release_commands(open_, false);
        open_ = {};
    }
    recorder_.reset();
    for (const Commands & c : in_flight_)
        check(vkWaitForFences(device_.handle(), 1, &c.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    wait_in_flight();
}

void Backend::record(std::span<const NativeNode> nodes, const Arg & workspace) {
    Recorder & recorder = recording();
    recorder.set_workspace(workspace);
    for (const NativeNode & n : nodes) {
        const KernelCall call{this, &n.node, 1, n.state, nullptr, nullptr, 0, &recorder};
        try {
            n.kernel->execute(*n.kernel, call);
        } catch (const Error & e) {
            throw Error(backend::describe_node(n.index, n.node) + ": " + e.what());
        }
        pending_flops_ += node_flops(n.node);
        submit_if_due();
    }
}

ggml_status Backend::compute_native(std::span<const NativeNode> nodes, const Workspace & workspace) {
    return guarded([&] {
        record(nodes, workspace_arg(workspace));
        if (!in_plan_) submit_recording();
    });
}

void Backend::begin_plan() { in_plan_ = true; }

bool Backend::can_record_plans() const {
    const char * enabled = std::getenv("GGX_VULKAN_PLAN_REPLAY");
    return enabled && std::string_view(enabled) == "1";
}

void Backend::record_plan() {
    // Work queued before the plan (outside any) was submitted and waited for when it was computed.
    if (in_plan_ && !recorder_) plan_recording_ = std::make_unique<PlanCommands>(device_);
}

std::unique_ptr<PlanRecording> Backend::take_plan_recording() {
    if (plan_recording_ && plan_recording_->empty()) plan_recording_.reset();
    return std::move(plan_recording_);
}

ggml_status Backend::end_plan() {
    in_plan_ = false;
    return guarded([&] { submit_recording(); });
}

ggml_status Backend::record_extension(const std::function<void(Recorder &)> & record) {
    if (!in_plan_) {
        return backend::fail(
            GGML_STATUS_FAILED,
            std::string(name()) + ": extension work can only be recorded while a plan executes");
    }
    return guarded([&] {
        record(recording());
        submit_if_due();
    });
}

ggml_status Backend::end_extension_step(std::span<ggml_tensor * const> nodes) {
    if (!recorder_) return GGML_STATUS_SUCCESS;  // the step recorded nothing here
    return guarded([&] {
        for (const ggml_tensor * node : nodes)
            pending_flops_ += node_flops(node);
        submit_if_due();
    });
}

template <class F>
ggml_status Backend::guarded(F f) {
    try {
        f();
        return GGML_STATUS_SUCCESS;
    } catch (const Error & e) {
        discard_recording();
        return backend::fail(GGML_STATUS_FAILED, std::string(name()) + ": " + e.what());
    }
}

}  // namespace ggx::vulkan
