// The plan executor: one backend's execution of a node range of a graph as steps, each run by one
// Kernel (interface/kernel.h): native ranges (consecutive nodes the device's own kernels run as one
// batch), single-node extension kernels and fused ranges. Every step is prepared once when the plan
// is built and its workspace is part of the plan's, the largest request of all steps; placement,
// allocation and reachable memory are checked once, before the first execution.
#pragma once

#include <ggml-backend.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ext/registry.h"
#include "interface/backend-impl.h"

namespace ggx::backend {

class ExecutionPlan {
public:
    // One step: graph nodes [begin, end) run by kernel, or a native range (kernel nullptr) whose
    // computed nodes are natives()[first_native, first_native + n_native).
    struct Step {
        int begin, end;
        const Kernel * kernel;
        void * state;
        size_t workspace_bytes;
        size_t first_native, n_native;
    };

    ExecutionPlan() = default;
    ~ExecutionPlan() { release(); }
    ExecutionPlan(const ExecutionPlan &) = delete;
    ExecutionPlan & operator=(const ExecutionPlan &) = delete;
    ExecutionPlan(ExecutionPlan && other) noexcept { *this = std::move(other); }
    ExecutionPlan & operator=(ExecutionPlan && other) noexcept;

    // Selects a kernel for every node of [begin, end) on backend's device and prepares every step
    // (metadata only: it may run before tensors have addresses). false (error set, naming the node)
    // when neither the device nor an extension supports a node, or a prepare fails.
    // fused: legal matches inside [begin, end), in order (ext::match_fusions); each runs as one step.
    bool build(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end,
               std::span<const ext::FusedGroup> fused = {});
    // As build, but node runs kernel whatever selection would say (the kernel need not be registered;
    // it must outlive the plan), and the other nodes are selected as usual. For
    // ggml_ext_check_kernel, which runs one kernel alone.
    bool build_with_kernel(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end,
                           const ggml_tensor * node, const Kernel & kernel);
    // As build, with the device's own kernels only (no extension is selected).
    bool build_native(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end);

    // Workspace the plan needs: the largest request of its steps, not the sum.
    size_t workspace_bytes() const { return workspace_bytes_; }
    std::span<const Step> steps() const { return steps_; }
    std::span<const NativeNode> natives() const { return natives_; }
    // Whether the plan still runs what selection and preparation would now give: no registration or
    // selection policy changed, nor the backend's configuration (config_epoch), since build.
    bool is_current() const;
    // Whether the backend's configuration changed since build (its plans must be built again).
    bool settings_changed() const { return backend_ && epoch_ != backend_->config_epoch(); }
    // Checks every computed node of the plan once: allocated, with its sources, in memory the
    // backend reaches. A later run skips the check; validate again after the tensors move.
    ggml_status validate();

    // How a run brackets its steps with the backend's begin_plan .. end_plan. kBatched: the whole
    // run is one bracket, so a backend may queue native ranges and extension steps together and
    // complete them at the end (scheduled plans). kFragments: every step is a bracket of its own,
    // completed before the next begins (spec: evaluation callbacks and direct backend calls retain
    // fragment execution).
    // kReplayable: batched, and the backend may record the whole plan and replay it (spec:
    // replayable plans), when every extension step opts in (CAPTURE_SAFE) and the backend can record
    // plans (can_record_plans): the first execution runs ordinarily, the next records while it runs,
    // later ones replay the recording without calling a kernel. A changed tensor address or workspace
    // drops the recording and warms up again. The scheduler asks for it with one pipeline copy and
    // no evaluation callback; each backend has its own switch (Vulkan: GGX_VULKAN_PLAN_REPLAY=1).
    enum class Execution { kBatched, kFragments, kReplayable };

    // Runs the plan's nodes that lie in [first, last), in order, queued on the backend (validating
    // first when validate has not succeeded). Fails without running anything when the plan is not
    // current, or when the workspace is smaller than workspace_bytes().
    ggml_status run(int first, int last, const Workspace & workspace,
                    Execution execution = Execution::kBatched);

    // Device replay, for tests: whether the plan qualifies (kReplayable may record it), whether it
    // is reusable across rebuilds (every extension step REPLAY_REUSABLE), and whether it holds a
    // recording now.
    bool replay_eligible() const { return replay_.eligible; }
    bool replay_reusable() const { return replay_.reusable; }
    bool has_recording() const { return replay_.recording != nullptr; }

private:
    enum class Mode { kSelect, kNativeOnly };
    bool build_impl(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end, Mode mode,
                    const ggml_tensor * forced_node, const Kernel * forced_kernel,
                    std::span<const ext::FusedGroup> fused);
    // The kernel of node i, or nullptr (error set) when nothing supports it.
    const Kernel * kernel_for(int i, Mode mode, const ggml_tensor * forced_node,
                              const Kernel * forced_kernel) const;
    bool prepare(const Kernel & kernel, int begin, int end, void ** state, size_t * bytes);
    void add_native(int i, const Kernel & kernel, void * state, size_t bytes);
    ggml_status run_steps(int first, int last, const Workspace & workspace, Execution execution) const;
    // Runs step s's nodes in [b, e): its native nodes there, or the whole extension step.
    ggml_status run_part(const Step & s, int b, int e, const Workspace & workspace) const;
    ggml_status run_step(const Step & s, const Workspace & workspace) const;
    // f() between the backend's begin_plan and end_plan: f's status, else end_plan's.
    template <class F>
    ggml_status bracketed(F f) const;
    std::string step_failure(const Step & s) const;
    void release();

    // Device replay state (kReplayable runs of the whole plan).
    struct Replay {
        bool eligible = false, reusable = false;  // decided by build
        bool warm = false;                        // an ordinary execution ran at these addresses
        std::vector<const void *> addresses;      // the tensors' and workspace's, of the last run
        std::unique_ptr<PlanRecording> recording;
        std::shared_ptr<ggml_backend_buffer> workspace;  // what the recording uses
        std::string key;                                 // the recording's, for the retired cache
    };
    void decide_replay();
    ggml_status run_replayable(const Workspace & workspace);
    // The data addresses of every node of the plan and its sources, and the workspace.
    std::vector<const void *> addresses(const Workspace & workspace) const;
    // An exact description of what the plan computes at its current addresses (the retired key).
    std::string replay_key() const;
    // Hands a reusable plan's recording to the backend's retired cache.
    void retire_recording();

    ggml_backend_t backend_ = nullptr;
    ggml_cgraph * graph_ = nullptr;
    int begin_ = 0, end_ = 0;  // the planned range
    std::vector<Step> steps_;
    std::vector<NativeNode> natives_;  // the native ranges' nodes, in order
    size_t workspace_bytes_ = 0;
    uint64_t generation_ = 0, epoch_ = 0;
    bool validated_ = false;
    Replay replay_;
};

// Plan validations (ExecutionPlan::validate) since the process started, for tests.
uint64_t plan_validations();

// Computes nodes [i0, i1) of graph with the device's own kernels only, through a temporary plan
// (fragment execution, as every direct call).
ggml_status compute_native_range(ggml_backend_t backend, ggml_cgraph * graph, int i0, int i1);

// A backend graph computation through a temporary plan (spec: direct calls use temporary plans and
// synchronize before releasing them; they retain fragment execution): nodes [i0, i1). Its workspace
// is the backend's direct_workspace, grown to the plan's request.
ggml_status compute_with_temporary_plan(ggml_backend_t backend, ggml_cgraph * graph, int i0, int i1);

}  // namespace ggx::backend
