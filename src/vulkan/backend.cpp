#include "vulkan/backend.h"

#include "vulkan/kernels.h"

namespace ggx::vulkan {

Backend::Backend(ggml_backend_dev_t owner, BufferType & buffer_type)
    : owner_(owner), buffer_type_(buffer_type), device_(buffer_type.vulkan()), arena_(device_) {
    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = device_.queue_family();
    check(vkCreateCommandPool(device_.handle(), &pool_info, nullptr, &pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    const VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkResult result = vkAllocateCommandBuffers(device_.handle(), &alloc, &commands_);
    if (result == VK_SUCCESS) result = vkCreateFence(device_.handle(), &fence_info, nullptr, &fence_);
    if (result != VK_SUCCESS) {
        vkDestroyCommandPool(device_.handle(), pool_, nullptr);
        check(result, "creating the backend's command buffer");
    }
}

Backend::~Backend() {
    vkDestroyFence(device_.handle(), fence_, nullptr);
    vkDestroyCommandPool(device_.handle(), pool_, nullptr);
}

ggml_status Backend::check_graph(ggml_cgraph * graph, size_t * workspace_bytes) const {
    *workspace_bytes = 0;
    const KernelTable & table = kernel_table();
    return backend::check_graph(
        *this, graph, [this](ggml_backend_buffer_type_t buft) { return buft == &buffer_type_; },
        [&](int, ggml_tensor * node) {
            if (const Kernel & kernel = table[node->op]; kernel.workspace)
                *workspace_bytes = std::max(*workspace_bytes, kernel.workspace(node));
            return GGML_STATUS_SUCCESS;
        });
}

Arg Backend::reserve_workspace(size_t bytes) {
    if (bytes == 0) return {};
    if (!workspace_ || workspace_->size < bytes) {
        // Commands recorded but not yet submitted may still use the old workspace.
        if (workspace_) retired_.push_back(std::move(workspace_));
        workspace_ = std::make_unique<Buffer>(&buffer_type_, bytes);
    }
    return {workspace_->handle(), 0, bytes, true};
}

Recorder & Backend::recording() {
    if (recorder_) return *recorder_;
    check(vkResetCommandBuffer(commands_, 0), "vkResetCommandBuffer");
    arena_.reset();
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(commands_, &begin), "vkBeginCommandBuffer");
    return recorder_.emplace(device_, commands_, arena_);
}

void Backend::discard_recording() {
    if (!recorder_) return;
    vkEndCommandBuffer(commands_);
    recorder_.reset();
    retired_.clear();
}

void Backend::submit_recording() {
    if (!recorder_) return;
    const Recorder recorded = *recorder_;
    recorder_.reset();
    last_dispatches_ = recorded.n_dispatches();
    last_barriers_ = recorded.n_barriers();
    check(vkEndCommandBuffer(commands_), "vkEndCommandBuffer");
    if (recorded.n_commands() > 0) {
        check(vkResetFences(device_.handle(), 1, &fence_), "vkResetFences");
        VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        submit.commandBufferCount = 1;
        submit.pCommandBuffers = &commands_;
        device_.submit(submit, fence_);
        check(vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    }
    retired_.clear();
}

void Backend::record(ggml_cgraph * graph, const Arg & workspace) {
    Recorder & recorder = recording();
    recorder.set_workspace(workspace);
    const KernelTable & table = kernel_table();
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        const ggml_tensor * node = ggml_graph_node(graph, i);
        if (!backend::needs_compute(node)) continue;
        try {
            table[node->op].record(recorder, node);
        } catch (const Error & e) {
            throw Error(backend::describe_node(i, node) + ": " + e.what());
        }
    }
}

ggml_status Backend::graph_compute(ggml_cgraph * graph) {
    size_t workspace_bytes = 0;
    if (const ggml_status status = check_graph(graph, &workspace_bytes)) return status;
    return guarded([&] {
        record(graph, reserve_workspace(workspace_bytes));
        if (!in_plan_) submit_recording();
    });
}

void Backend::begin_plan() { in_plan_ = true; }

ggml_status Backend::end_plan() {
    in_plan_ = false;
    return guarded([&] { submit_recording(); });
}

Recorder * Backend::plan_recorder() {
    if (!in_plan_) {
        backend::set_last_error(std::string(name()) +
                                ": extension work can only be recorded while a plan executes");
        return nullptr;
    }
    try {
        return &recording();
    } catch (const Error & e) {
        backend::set_last_error(std::string(name()) + ": " + e.what());
        return nullptr;
    }
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
