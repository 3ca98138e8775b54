// The plan executor (plan.h).
#include "runtime/plan.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "core/internal.h"

namespace ggx::backend {

namespace {

std::atomic<uint64_t> validations{0};

std::string range_text(int begin, int end) {
    std::string text = "[";
    text.append(std::to_string(begin)).append(", ").append(std::to_string(end)).append(")");
    return text;
}

// Whether every tensor node touches is in memory backend reaches; FAILED naming the first that is not.
ggml_status check_memory(const ggml_backend & backend, int index, const ggml_tensor * node) {
    for (int s = -1; s < GGML_MAX_SRC; ++s) {
        const ggml_tensor * tensor = s < 0 ? node : node->src[s];
        if (!tensor || (ggml_is_empty(tensor) && !tensor->data)) continue;
        const ggml_tensor * owner = tensor->view_src ? tensor->view_src : tensor;
        if (backend.can_access(owner->buffer ? owner->buffer->buft : nullptr)) continue;
        const std::string role = s < 0 ? "its result" : "source " + std::to_string(s);
        const std::string where = owner->buffer ? std::string("buffer type ") + owner->buffer->buft->name()
                                                : std::string("memory of no buffer");
        return fail(
            GGML_STATUS_FAILED,
            std::string(backend.name()) + ": " + describe_node(index, node) + ": " + role + " '" +
                tensor->name + "' is in " + where + ", which " + backend.name() + " cannot access" +
                (s < 0 ? " (it must be allocated on the device)" : " (a cross-device copy is missing)"));
    }
    return GGML_STATUS_SUCCESS;
}

ggml_status check_allocated(const ggml_backend & backend, int index, const ggml_tensor * node) {
    bool allocated = node->data != nullptr;
    for (const ggml_tensor * src : node->src)
        allocated = allocated && (!src || src->data || ggml_is_empty(src));
    if (allocated) return GGML_STATUS_SUCCESS;
    return fail(GGML_STATUS_FAILED, std::string(backend.name()) + ": " + describe_node(index, node) +
                                        " or a source is not allocated");
}

}  // namespace

uint64_t plan_validations() { return validations.load(); }

ExecutionPlan & ExecutionPlan::operator=(ExecutionPlan && other) noexcept {
    if (this == &other) return *this;
    release();
    backend_ = other.backend_;
    graph_ = other.graph_;
    steps_ = std::move(other.steps_);
    natives_ = std::move(other.natives_);
    workspace_bytes_ = other.workspace_bytes_;
    generation_ = other.generation_;
    epoch_ = other.epoch_;
    validated_ = other.validated_;
    replay_ = std::move(other.replay_);
    other.steps_.clear();
    other.natives_.clear();
    other.replay_ = {};
    return *this;
}

void ExecutionPlan::release() {
    retire_recording();
    replay_ = {};
    for (const Step & s : steps_)
        if (s.kernel && s.kernel->destroy) s.kernel->destroy(*s.kernel, s.state);
    for (const NativeNode & n : natives_)
        if (n.kernel->destroy) n.kernel->destroy(*n.kernel, n.state);
    steps_.clear();
    natives_.clear();
    workspace_bytes_ = 0;
    validated_ = false;
}

bool ExecutionPlan::build(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end,
                          std::span<const ext::FusedGroup> fused) {
    return build_impl(backend, graph, begin, end, Mode::kSelect, nullptr, nullptr, fused);
}

bool ExecutionPlan::build_with_kernel(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end,
                                      const ggml_tensor * node, const Kernel & kernel) {
    return build_impl(backend, graph, begin, end, Mode::kSelect, node, &kernel, {});
}

bool ExecutionPlan::build_native(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end) {
    return build_impl(backend, graph, begin, end, Mode::kNativeOnly, nullptr, nullptr, {});
}

bool ExecutionPlan::prepare(const Kernel & kernel, int begin, int end, void ** state, size_t * bytes) {
    *state = nullptr;
    *bytes = 0;
    if (!kernel.prepare) return true;
    const KernelPrepare step{backend_, ggml_graph_nodes(graph_) + begin, end - begin};
    clear_last_error();
    if (kernel.prepare(kernel, step, state, bytes) == GGML_STATUS_SUCCESS) return true;
    const std::string what =
        kernel.kind == Kernel::Kind::kFusion
            ? "fusion '" + std::string(kernel.name) + "' failed for nodes " + range_text(begin, end) +
                  " ending at "
            : "kernel '" + std::string(kernel.name) + "' failed for node " + std::to_string(begin) + " ";
    set_last_error(std::string(backend_->name()) + ": prepare of " + what +
                   ext::describe(ggml_graph_node(graph_, end - 1)) + ": " + ggml_backend_get_last_error());
    return false;
}

const Kernel * ExecutionPlan::kernel_for(int i, Mode mode, const ggml_tensor * forced_node,
                                         const Kernel * forced_kernel) const {
    ggml_tensor * node = ggml_graph_node(graph_, i);
    if (node == forced_node) return forced_kernel;
    ggml_backend_dev_t device = backend_->device();
    const Kernel * kernel = mode == Mode::kNativeOnly || !ext::has_kernels(device)
                                ? device->native_kernel(node)
                                : ext::select(device, node).kernel;
    if (!kernel) {
        set_last_error(std::string(backend_->name()) + ": node " + std::to_string(i) + " " +
                       ext::describe(node) +
                       " is not supported by the device or by an extension kernel (planning the range " +
                       range_text(begin_, end_) + ")");
    }
    return kernel;
}

void ExecutionPlan::add_native(int i, const Kernel & kernel, void * state, size_t bytes) {
    const bool extends = !steps_.empty() && !steps_.back().kernel && steps_.back().end == i;
    if (!extends) steps_.push_back({i, i, nullptr, nullptr, 0, natives_.size(), 0});
    Step & s = steps_.back();
    s.end = i + 1;
    s.workspace_bytes = std::max(s.workspace_bytes, bytes);
    ++s.n_native;
    natives_.push_back({i, ggml_graph_node(graph_, i), &kernel, state});
}

bool ExecutionPlan::build_impl(ggml_backend_t backend, ggml_cgraph * graph, int begin, int end, Mode mode,
                               const ggml_tensor * forced_node, const Kernel * forced_kernel,
                               std::span<const ext::FusedGroup> fused) {
    release();
    backend_ = backend;
    graph_ = graph;
    begin_ = begin;
    end_ = end;
    generation_ = ext::generation();
    epoch_ = backend->config_epoch();
    natives_.reserve(static_cast<size_t>(std::max(end - begin, 0)));
    auto next_group = fused.begin();
    for (int i = begin; i < end; ++i) {
        if (next_group != fused.end() && next_group->first == i) {
            const Kernel & kernel = next_group->rule->kernel;
            const int stop = i + next_group->n;
            void * state = nullptr;
            size_t bytes = 0;
            if (!prepare(kernel, i, stop, &state, &bytes)) return false;
            steps_.push_back({i, stop, &kernel, state, bytes, 0, 0});
            workspace_bytes_ = std::max(workspace_bytes_, bytes);
            i = stop - 1;
            ++next_group;
            continue;
        }
        if (!needs_compute(ggml_graph_node(graph, i))) continue;  // layout ops and empty nodes
        const Kernel * kernel = kernel_for(i, mode, forced_node, forced_kernel);
        if (!kernel) return false;
        void * state = nullptr;
        size_t bytes = 0;
        if (!prepare(*kernel, i, i + 1, &state, &bytes)) return false;
        workspace_bytes_ = std::max(workspace_bytes_, bytes);
        if (kernel->kind == Kernel::Kind::kNative)
            add_native(i, *kernel, state, bytes);
        else
            steps_.push_back({i, i + 1, kernel, state, bytes, 0, 0});
    }
    decide_replay();
    return true;
}

void ExecutionPlan::decide_replay() {
    const auto opted = [&](uint32_t flag) {
        return std::all_of(steps_.begin(), steps_.end(),
                           [&](const Step & s) { return !s.kernel || (s.kernel->replay & flag); });
    };
    replay_.eligible = backend_->can_record_plans() && !steps_.empty() &&
                       opted(Kernel::kCaptureSafe);
    replay_.reusable = replay_.eligible && opted(Kernel::kReplayReusable);
}

bool ExecutionPlan::is_current() const { return generation_ == ext::generation() && !settings_changed(); }

ggml_status ExecutionPlan::validate() {
    validations.fetch_add(1, std::memory_order_relaxed);
    validated_ = false;
    for (const NativeNode & n : natives_) {
        if (const ggml_status status = check_allocated(*backend_, n.index, n.node)) return status;
        if (const ggml_status status = check_memory(*backend_, n.index, n.node)) return status;
    }
    validated_ = true;
    return GGML_STATUS_SUCCESS;
}

ggml_status ExecutionPlan::run(int first, int last, const Workspace & workspace, Execution execution) {
    if (!is_current()) {
        return fail(GGML_STATUS_FAILED,
                    std::string(backend_->name()) +
                        ": extension registrations, selection policy or the backend's settings changed "
                        "since this graph was planned; rebuild the scheduler allocation "
                        "(ggml_backend_sched_reset, then allocate) before computing again");
    }
    if (workspace.size < workspace_bytes_) {
        return fail(GGML_STATUS_FAILED, std::string(backend_->name()) + ": the plan needs " +
                                            std::to_string(workspace_bytes_) + " bytes of workspace, " +
                                            std::to_string(workspace.size) + " given");
    }
    if (!validated_) {
        if (const ggml_status status = validate()) return status;
    }
    if (execution == Execution::kFragments) return run_steps(first, last, workspace, execution);
    if (execution == Execution::kReplayable && replay_.eligible && first <= begin_ && last >= end_)
        return run_replayable(workspace);
    return bracketed([&] { return run_steps(first, last, workspace, Execution::kBatched); });
}

std::vector<const void *> ExecutionPlan::addresses(const Workspace & workspace) const {
    std::vector<const void *> list{workspace.buffer, workspace.data, reinterpret_cast<const void *>(workspace.size)};
    for (int i = begin_; i < end_; ++i) {
        const ggml_tensor * node = ggml_graph_node(graph_, i);
        list.push_back(node->data);
        for (const ggml_tensor * src : node->src)
            list.push_back(src ? src->data : nullptr);
    }
    return list;
}

namespace {

template <class T>
void append_bytes(std::string & key, const T & value) {
    key.append(reinterpret_cast<const char *>(&value), sizeof value);
}

void append_tensor(std::string & key, const ggml_tensor * t) {
    append_bytes(key, t->type);
    append_bytes(key, t->ne);
    append_bytes(key, t->nb);
    append_bytes(key, t->data);
    append_bytes(key, t->buffer);
}

}  // namespace

// Every computed node's op, parameters, flags and tensors (its own and its sources' metadata and
// addresses), every step's kernel, range and workspace request, and every native node's kernel.
std::string ExecutionPlan::replay_key() const {
    std::string key;
    append_bytes(key, begin_);
    append_bytes(key, end_);
    append_bytes(key, workspace_bytes_);
    for (int i = begin_; i < end_; ++i) {
        const ggml_tensor * node = ggml_graph_node(graph_, i);
        append_bytes(key, node->op);
        append_bytes(key, node->op_params);
        append_bytes(key, node->flags);
        append_tensor(key, node);
        for (const ggml_tensor * src : node->src) {
            append_bytes(key, src != nullptr);
            if (src) append_tensor(key, src);
        }
    }
    for (const Step & s : steps_) {
        append_bytes(key, s.kernel);
        append_bytes(key, s.begin);
        append_bytes(key, s.end);
        append_bytes(key, s.workspace_bytes);
    }
    for (const NativeNode & n : natives_)
        append_bytes(key, n.kernel);
    return key;
}

void ExecutionPlan::retire_recording() {
    if (!replay_.recording || !replay_.reusable) return;
    backend_->retired_recordings.retire(
        {std::move(replay_.key), std::move(replay_.recording), std::move(replay_.workspace)});
}

// Warm-up, recording, replay (spec: replayable plans). The addresses of every run are compared with
// the last run's: a change drops the recording (a reusable one too: its addresses are part of its
// key) and the next run is a warm-up again.
ggml_status ExecutionPlan::run_replayable(const Workspace & workspace) {
    std::vector<const void *> now = addresses(workspace);
    if (now != replay_.addresses) {
        retire_recording();
        replay_.recording.reset();
        replay_.workspace.reset();
        replay_.warm = false;
        replay_.addresses = std::move(now);
    }
    if (replay_.recording) return replay_.recording->replay();
    if (replay_.reusable) {
        std::string key = replay_key();
        RetiredRecordings::Entry retired = backend_->retired_recordings.take(key);
        if (retired.recording) {
            replay_.recording = std::move(retired.recording);
            replay_.workspace = std::move(retired.workspace);
            replay_.key = std::move(key);
            return replay_.recording->replay();
        }
    }
    const auto steps = [&] { return run_steps(begin_, end_, workspace, Execution::kBatched); };
    if (!replay_.warm) {
        const ggml_status status = bracketed(steps);
        replay_.warm = status == GGML_STATUS_SUCCESS;
        return status;
    }
    // The recording run: a failure propagates (nothing is run again) and the next run warms up.
    backend_->begin_plan();
    backend_->record_plan();
    ggml_status status = steps();
    const ggml_status ended = backend_->end_plan();
    if (status == GGML_STATUS_SUCCESS) status = ended;
    std::unique_ptr<PlanRecording> recording = backend_->take_plan_recording();
    replay_.warm = false;
    if (status != GGML_STATUS_SUCCESS || !recording) return status;
    replay_.recording = std::move(recording);
    replay_.workspace = workspace.owner;
    if (replay_.reusable) replay_.key = replay_key();
    return status;
}

template <class F>
ggml_status ExecutionPlan::bracketed(F f) const {
    backend_->begin_plan();
    const ggml_status status = f();
    const ggml_status ended = backend_->end_plan();
    return status != GGML_STATUS_SUCCESS ? status : ended;
}

ggml_status ExecutionPlan::run_steps(int first, int last, const Workspace & workspace,
                                     Execution execution) const {
    for (const Step & s : steps_) {
        const int b = std::max(s.begin, first), e = std::min(s.end, last);
        if (b >= e) continue;
        if (s.kernel && (b != s.begin || e != s.end)) {
            return fail(GGML_STATUS_FAILED, std::string(backend_->name()) + ": nodes " +
                                                range_text(first, last) + " cut the fused range " +
                                                range_text(s.begin, s.end));
        }
        const auto part = [&] { return run_part(s, b, e, workspace); };
        const ggml_status status = execution == Execution::kFragments ? bracketed(part) : part();
        if (status != GGML_STATUS_SUCCESS) return status;
    }
    return GGML_STATUS_SUCCESS;
}

ggml_status ExecutionPlan::run_part(const Step & s, int b, int e, const Workspace & workspace) const {
    if (s.kernel) return run_step(s, workspace);
    const auto by_index = [](const NativeNode & n, int i) { return n.index < i; };
    const std::span<const NativeNode> natives =
        std::span<const NativeNode>(natives_).subspan(s.first_native, s.n_native);
    const auto from = std::lower_bound(natives.begin(), natives.end(), b, by_index);
    const auto to = std::lower_bound(from, natives.end(), e, by_index);
    if (from == to) return GGML_STATUS_SUCCESS;
    return backend_->compute_native({from, to}, workspace);
}

ggml_status ExecutionPlan::run_step(const Step & s, const Workspace & workspace) const {
    const KernelCall call{backend_,         ggml_graph_nodes(graph_) + s.begin,
                          s.end - s.begin,  s.state,
                          workspace.buffer, workspace.data,
                          workspace.size,   nullptr};
    clear_last_error();
    const ggml_status status = s.kernel->execute(*s.kernel, call);
    if (status != GGML_STATUS_SUCCESS)
        return fail(status, step_failure(s) + ": " + ggml_backend_get_last_error());
    return backend_->end_extension_step({ggml_graph_nodes(graph_) + s.begin, size_t(s.end - s.begin)});
}

std::string ExecutionPlan::step_failure(const Step & s) const {
    const std::string name = backend_->name();
    if (s.kernel->kind == Kernel::Kind::kFusion) {
        return name + ": fusion '" + s.kernel->name + "' failed on nodes " + range_text(s.begin, s.end) +
               " ending at " + ext::describe(ggml_graph_node(graph_, s.end - 1));
    }
    return name + ": kernel '" + s.kernel->name + "' failed on node " + std::to_string(s.begin) + " " +
           ext::describe(ggml_graph_node(graph_, s.begin));
}

namespace {

// Builds a temporary plan with build(plan), runs it in the backend's direct workspace and
// synchronizes before the plan is released.
template <class Build>
ggml_status run_temporary_plan(ggml_backend_t backend, int i0, int i1, Build build) {
    ExecutionPlan plan;
    if (!build(plan)) return GGML_STATUS_FAILED;
    std::unique_ptr<ggml_backend_buffer> & workspace = backend->direct_workspace;
    const size_t needed = plan.workspace_bytes();
    if (needed > 0 && (!workspace || workspace->size < needed)) {
        workspace.reset();
        workspace.reset(
            ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(backend), needed));
        if (!workspace) return GGML_STATUS_ALLOC_FAILED;
    }
    const Workspace region =
        workspace ? Workspace{workspace.get(), workspace->base(), workspace->size} : Workspace{};
    const ggml_status status = plan.run(i0, i1, region, ExecutionPlan::Execution::kFragments);
    backend->synchronize();  // before the plan and its workspace are released or reused
    return status;
}

}  // namespace

ggml_status compute_native_range(ggml_backend_t backend, ggml_cgraph * graph, int i0, int i1) {
    return run_temporary_plan(
        backend, i0, i1, [&](ExecutionPlan & plan) { return plan.build_native(backend, graph, i0, i1); });
}

ggml_status compute_with_temporary_plan(ggml_backend_t backend, ggml_cgraph * graph, int i0, int i1) {
    return run_temporary_plan(backend, i0, i1,
                              [&](ExecutionPlan & plan) { return plan.build(backend, graph, i0, i1); });
}

}  // namespace ggx::backend
