// The plan executor: one backend's execution of a node range of a graph as contiguous native ranges
// (run by the backend's own graph_compute) and extension steps (a selected kernel's execute), with
// the extension steps prepared once and their workspace sized as the largest request.
#pragma once

#include <ggml-backend.h>

#include <cstdint>
#include <span>
#include <vector>

#include "ext/registry.h"

namespace ggx::backend {

class ExecutionPlan {
public:
    ExecutionPlan() = default;
    ~ExecutionPlan() { release(); }
    ExecutionPlan(const ExecutionPlan &) = delete;
    ExecutionPlan & operator=(const ExecutionPlan &) = delete;
    ExecutionPlan(ExecutionPlan && other) noexcept { *this = std::move(other); }
    ExecutionPlan & operator=(ExecutionPlan && other) noexcept;

    // Selects an implementation for every node of [begin, end) on backend's device and prepares the
    // extension steps (metadata only: it may run before tensors have addresses). false (error set,
    // naming the node) when neither the device nor an extension supports a node, or prepare fails.
    // fused: legal matches inside [begin, end), in order (ext::match_fusions); each runs as one step.
    bool build(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end,
               std::span<const ext::FusedGroup> fused = {});
    // As build, but node runs kernel whatever selection would say (the kernel need not be registered;
    // it must outlive the plan), and the other nodes are selected as usual. For
    // ggml_ext_check_kernel, which runs one kernel alone.
    bool build_with_kernel(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end,
                           const ggml_tensor * node, const ext::Kernel & kernel);
    // Workspace the plan needs: the largest request of its steps, not the sum.
    size_t workspace_bytes() const { return workspace_bytes_; }
    bool has_extension_steps() const { return n_extension_steps_ > 0; }
    // Runs the plan's nodes that lie in [first, last) of graph (the graph it was built for), in
    // order, queued on the backend. Fails without running anything when registrations changed since
    // build (a stale selection), or when workspace is smaller than workspace_bytes().
    ggml_status run(ggml_cgraph * graph, int first, int last, ggml_backend_buffer_t workspace) const;
    // As run, with the workspace given as a region [workspace_data, + workspace_size) inside the
    // buffer workspace (the checker surrounds it with guard bytes).
    ggml_status run(ggml_cgraph * graph, int first, int last, ggml_backend_buffer_t workspace,
                    void * workspace_data, size_t workspace_size) const;

private:
    // The steps of run, between the backend's begin_plan and end_plan.
    ggml_status run_steps(ggml_cgraph * graph, int first, int last, ggml_backend_buffer_t workspace,
                          void * workspace_data, size_t workspace_size) const;
    struct Step {
        int begin, end;                            // graph nodes
        const ext::Kernel * kernel;                // a single-node extension step, or
        const ext::FusionRule * fusion = nullptr;  // a fused range; neither: a native range
        void * state = nullptr;                    // prepare's
    };
    bool prepare_fusion(ggml_cgraph * graph, const ext::FusedGroup & group);
    ggml_status run_fusion(ggml_cgraph * graph, const Step & s, ggml_backend_buffer_t workspace,
                           void * workspace_data, size_t workspace_size) const;
    void release();
    bool build_impl(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end,
                    const ggml_tensor * forced_node, const ext::Kernel * forced_kernel,
                    std::span<const ext::FusedGroup> fused);

    ggml_backend_t backend_ = nullptr;
    std::vector<Step> steps_;
    size_t workspace_bytes_ = 0;
    int n_extension_steps_ = 0;
    uint64_t generation_ = 0;
};

// Computes nodes [i0, i1) of graph with the backend's own graph_compute (no extension dispatch).
ggml_status compute_native_range(ggml_backend_t backend, ggml_cgraph * graph, int i0, int i1);

// A backend graph computation through a temporary plan (spec: direct calls use temporary plans and
// synchronize before releasing them): nodes [i0, i1).
ggml_status compute_with_temporary_plan(ggml_backend_t backend, ggml_cgraph * graph, int i0, int i1);

}  // namespace ggx::backend
