// The plan executor (plan.h).
#include "runtime/plan.h"

#include <ggml-alloc.h>

#include <memory>
#include <string>
#include <utility>

#include "interface/backend-impl.h"
#include "core/internal.h"

namespace ggx::backend {

ExecutionPlan & ExecutionPlan::operator=(ExecutionPlan && other) noexcept {
    if (this == &other) return *this;
    release();
    backend_ = other.backend_;
    steps_ = std::move(other.steps_);
    workspace_bytes_ = other.workspace_bytes_;
    n_extension_steps_ = other.n_extension_steps_;
    generation_ = other.generation_;
    other.steps_.clear();
    other.n_extension_steps_ = 0;
    return *this;
}

void ExecutionPlan::release() {
    for (Step & s : steps_) {
        if (s.kernel && s.kernel->desc.destroy) s.kernel->desc.destroy(s.state, s.kernel->desc.user_data);
        if (s.fusion && s.fusion->desc.destroy) s.fusion->desc.destroy(s.state, s.fusion->desc.user_data);
        s.state = nullptr;
    }
    steps_.clear();
    workspace_bytes_ = 0;
    n_extension_steps_ = 0;
}

bool ExecutionPlan::build(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end,
                          std::span<const ext::FusedGroup> fused) {
    return build_impl(backend, graph, begin, end, nullptr, nullptr, fused);
}

bool ExecutionPlan::build_with_kernel(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end,
                                      const ggml_tensor * node, const ext::Kernel & kernel) {
    return build_impl(backend, graph, begin, end, node, &kernel, {});
}

bool ExecutionPlan::prepare_fusion(ggml_cgraph * graph, const ext::FusedGroup & group) {
    Step step{group.first, group.first + group.n, nullptr, group.rule};
    const ggml_ext_fusion_desc & d = group.rule->desc;
    size_t bytes = 0;
    if (d.prepare) {
        const ggml_ext_fusion_prepare_params params{
            sizeof params, backend_->device(), ggml_graph_nodes(graph) + group.first, group.n, d.user_data};
        set_last_error("");
        if (d.prepare(&params, &step.state, &bytes) != GGML_STATUS_SUCCESS) {
            set_last_error(std::string(backend_->name()) + ": prepare of fusion '" + group.rule->name +
                           "' failed for nodes [" + std::to_string(step.begin) + ", " +
                           std::to_string(step.end) + ") ending at " +
                           ext::describe(ggml_graph_node(graph, step.end - 1)) + ": " +
                           ggml_backend_get_last_error());
            return false;
        }
    }
    steps_.push_back(step);
    workspace_bytes_ = std::max(workspace_bytes_, bytes);
    ++n_extension_steps_;
    return true;
}

bool ExecutionPlan::build_impl(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end,
                               const ggml_tensor * forced_node, const ext::Kernel * forced_kernel,
                               std::span<const ext::FusedGroup> fused) {
    release();
    backend_ = backend;
    generation_ = ext::generation();
    ggml_backend_dev_t device = backend->device();
    if (!forced_kernel && fused.empty() &&
        !ext::has_kernels(device)) {  // nothing to select: one native range
        if (begin < end) steps_.push_back({begin, end, nullptr});
        return true;
    }
    auto next_group = fused.begin();
    for (int i = begin; i < end; ++i) {
        if (next_group != fused.end() && next_group->first == i) {
            if (!prepare_fusion(graph, *next_group)) return false;
            i += next_group->n - 1;
            ++next_group;
            continue;
        }
        ggml_tensor * node = ggml_graph_node(graph, i);
        const ext::Selection selection =
            node == forced_node            ? ext::Selection{ext::Selection::Kind::kExtension, forced_kernel}
            : core::is_layout_op(node->op) ? ext::Selection{ext::Selection::Kind::kNative}
                                           : ext::select(device, node);
        switch (selection.kind) {
            case ext::Selection::Kind::kNone:
                set_last_error(std::string(backend->name()) + ": node " + std::to_string(i) + " " +
                               ext::describe(node) +
                               " is supported neither by the device nor by an extension kernel");
                return false;
            case ext::Selection::Kind::kNative:
                if (steps_.empty() || steps_.back().kernel || steps_.back().fusion || steps_.back().end != i)
                    steps_.push_back({i, i + 1, nullptr});
                else
                    steps_.back().end = i + 1;
                break;
            case ext::Selection::Kind::kExtension: {
                Step step{i, i + 1, selection.kernel};
                const ggml_ext_kernel_desc & d = selection.kernel->desc;
                size_t bytes = 0;
                if (d.prepare) {
                    const ggml_ext_prepare_params params{sizeof params, device, node, d.user_data};
                    set_last_error("");
                    if (d.prepare(&params, &step.state, &bytes) != GGML_STATUS_SUCCESS) {
                        set_last_error(std::string(backend->name()) + ": prepare of kernel '" +
                                       selection.kernel->name + "' failed for node " + std::to_string(i) +
                                       " " + ext::describe(node) + ": " + ggml_backend_get_last_error());
                        return false;
                    }
                }
                steps_.push_back(step);
                workspace_bytes_ = std::max(workspace_bytes_, bytes);
                ++n_extension_steps_;
                break;
            }
        }
    }
    return true;
}

ggml_status ExecutionPlan::run(ggml_cgraph * graph, int first, int last,
                               ggml_backend_buffer_t workspace) const {
    return run(graph, first, last, workspace, workspace ? ggml_backend_buffer_get_base(workspace) : nullptr,
               workspace ? ggml_backend_buffer_get_size(workspace) : 0);
}

ggml_status ExecutionPlan::run(ggml_cgraph * graph, int first, int last, ggml_backend_buffer_t workspace,
                               void * workspace_data, size_t workspace_size) const {
    backend_->begin_plan();
    const ggml_status status = run_steps(graph, first, last, workspace, workspace_data, workspace_size);
    const ggml_status ended = backend_->end_plan();
    return status != GGML_STATUS_SUCCESS ? status : ended;
}

ggml_status ExecutionPlan::run_steps(ggml_cgraph * graph, int first, int last,
                                     ggml_backend_buffer_t workspace, void * workspace_data,
                                     size_t workspace_size) const {
    if (generation_ != ext::generation()) {
        return fail(GGML_STATUS_FAILED,
                    std::string(backend_->name()) +
                        ": extension registrations or selection policy changed since this "
                        "graph was planned; rebuild the scheduler allocation "
                        "(ggml_backend_sched_reset, then allocate) before computing again");
    }
    if (workspace_size < workspace_bytes_) {
        return fail(GGML_STATUS_FAILED, std::string(backend_->name()) + ": the plan needs " +
                                            std::to_string(workspace_bytes_) + " bytes of workspace, " +
                                            std::to_string(workspace_size) + " given");
    }
    for (const Step & s : steps_) {
        const int b = std::max(s.begin, first), e = std::min(s.end, last);
        if (b >= e) continue;
        if (s.fusion) {
            if (b != s.begin || e != s.end) {
                return fail(GGML_STATUS_FAILED, std::string(backend_->name()) + ": nodes [" +
                                                    std::to_string(first) + ", " + std::to_string(last) +
                                                    ") cut the fused range [" + std::to_string(s.begin) +
                                                    ", " + std::to_string(s.end) + ")");
            }
            if (const ggml_status status = run_fusion(graph, s, workspace, workspace_data, workspace_size))
                return status;
            continue;
        }
        if (!s.kernel) {
            if (const ggml_status status = compute_native_range(backend_, graph, b, e)) return status;
            continue;
        }
        ggml_tensor * node = ggml_graph_node(graph, b);
        const ggml_ext_kernel_desc & d = s.kernel->desc;
        const ggml_ext_execute_params params{sizeof params, backend_,       node,           s.state,
                                             workspace,     workspace_data, workspace_size, d.user_data};
        set_last_error("");
        if (const ggml_status status = d.execute(&params)) {
            return fail(status, std::string(backend_->name()) + ": kernel '" + s.kernel->name +
                                    "' failed on node " + std::to_string(b) + " " + ext::describe(node) +
                                    ": " + ggml_backend_get_last_error());
        }
    }
    return GGML_STATUS_SUCCESS;
}

ggml_status ExecutionPlan::run_fusion(ggml_cgraph * graph, const Step & s, ggml_backend_buffer_t workspace,
                                      void * workspace_data, size_t workspace_size) const {
    const ggml_ext_fusion_desc & d = s.fusion->desc;
    const ggml_ext_fusion_execute_params params{
        sizeof params,   backend_,       ggml_graph_nodes(graph) + s.begin,
        s.end - s.begin, s.state,        workspace,
        workspace_data,  workspace_size, d.user_data};
    set_last_error("");
    if (const ggml_status status = d.execute(&params)) {
        return fail(status, std::string(backend_->name()) + ": fusion '" + s.fusion->name +
                                "' failed on nodes [" + std::to_string(s.begin) + ", " +
                                std::to_string(s.end) + ") ending at " +
                                ext::describe(ggml_graph_node(graph, s.end - 1)) + ": " +
                                ggml_backend_get_last_error());
    }
    return GGML_STATUS_SUCCESS;
}

ggml_status compute_native_range(ggml_backend_t backend, ggml_cgraph * graph, int i0, int i1) {
    if (i0 == 0 && i1 == ggml_graph_n_nodes(graph)) return backend->graph_compute(graph);
    // The view lives in a context on the stack whose arena is a stack buffer: no heap traffic per
    // call. It shares the graph's nodes and hash set, so it reports the whole graph's use counts.
    alignas(GGML_MEM_ALIGN) unsigned char arena[512];
    ggml_context ctx;
    ctx.mem = arena;
    ctx.mem_size = sizeof arena;
    ctx.no_alloc = true;
    ggml_cgraph * view = ggml_graph_view(&ctx, graph, i0, i1);
    if (!view) {
        return fail(GGML_STATUS_FAILED, std::string(backend->name()) + ": no view of nodes [" +
                                            std::to_string(i0) + ", " + std::to_string(i1) + "): " +
                                            (ggml_get_error(&ctx) ? ggml_get_error(&ctx) : "unknown reason"));
    }
    const ggml_status status = backend->graph_compute(view);
    if (status == GGML_STATUS_FAILED && i0 > 0) {
        // Node indices in the backend's message count from the start of the range.
        set_last_error(std::string(ggml_backend_get_last_error()) + " (node indices count from node " +
                       std::to_string(i0) + ", the start of the range [" + std::to_string(i0) + ", " +
                       std::to_string(i1) + "))");
    }
    return status;
}

ggml_status compute_with_temporary_plan(ggml_backend_t backend, ggml_cgraph * graph, int i0, int i1) {
    if (!ext::has_kernels(backend->device())) return compute_native_range(backend, graph, i0, i1);
    ExecutionPlan plan;
    if (!plan.build(backend, graph, i0, i1)) return GGML_STATUS_FAILED;
    std::unique_ptr<ggml_backend_buffer, decltype(&ggml_backend_buffer_free)> workspace(
        nullptr, &ggml_backend_buffer_free);
    if (plan.workspace_bytes() > 0) {
        workspace.reset(ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(backend),
                                                       plan.workspace_bytes()));
        if (!workspace) return GGML_STATUS_ALLOC_FAILED;
    }
    const ggml_status status = plan.run(graph, i0, i1, workspace.get());
    backend->synchronize();  // before the plan and its workspace are released
    return status;
}

}  // namespace ggx::backend
