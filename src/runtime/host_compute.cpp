// ggml_graph_plan / ggml_graph_compute (ggml-cpu.h): graphs of host tensors computed through the
// CPU backend's own plan executor, on a CPU backend kept per calling thread.
#include <ggml-cpu.h>

#include <memory>

#include "runtime/plan.h"

namespace {

using ggx::backend::ExecutionPlan;

struct BackendFree {
    void operator()(ggml_backend_t backend) const { ggml_backend_free(backend); }
};

ggml_backend_t thread_cpu_backend() {
    thread_local std::unique_ptr<ggml_backend, BackendFree> backend(ggml_backend_cpu_init());
    return backend.get();
}

// The thread's backend, computing on threadpool, or on its own pool with n_threads threads (<= 0: one
// per hardware thread).
ggml_backend_t configured_backend(int n_threads, ggml_threadpool * threadpool) {
    ggml_backend_t backend = thread_cpu_backend();
    ggml_backend_cpu_set_threadpool(backend, threadpool);
    if (!threadpool) ggml_backend_cpu_set_n_threads(backend, n_threads > 0 ? n_threads : GGML_DEFAULT_N_THREADS);
    return backend;
}

bool build_plan(ExecutionPlan & plan, ggml_backend_t backend, const ggml_cgraph * cgraph) {
    auto * graph = const_cast<ggml_cgraph *>(cgraph);  // planning reads the graph only
    return plan.build(backend, graph, 0, ggml_graph_n_nodes(graph));
}

}  // namespace

extern "C" {

ggml_cplan ggml_graph_plan(const ggml_cgraph * cgraph, int n_threads, ggml_threadpool * threadpool) {
    ggml_backend_t backend = configured_backend(n_threads, threadpool);
    ggml_cplan cplan{};
    cplan.n_threads = ggml_backend_cpu_get_n_threads(backend);
    cplan.threadpool = threadpool;
    // A graph that cannot be planned gets no work buffer; ggml_graph_compute reports why.
    if (ExecutionPlan plan; build_plan(plan, backend, cgraph)) cplan.work_size = plan.workspace_bytes();
    return cplan;
}

ggml_status ggml_graph_compute(ggml_cgraph * cgraph, ggml_cplan * cplan) {
    if (!ggml_graph_is_valid(cgraph)) {
        return ggx::backend::fail(GGML_STATUS_FAILED,
                                  "ggml_graph_compute: graph is invalid (it was given a NULL tensor or overflowed)");
    }
    ggml_backend_t backend = configured_backend(cplan->n_threads, cplan->threadpool);
    ggml_backend_cpu_set_abort_callback(backend, cplan->abort_callback, cplan->abort_callback_data);
    ggml_backend_cpu_set_use_ref(backend, cplan->use_ref);
    ExecutionPlan plan;
    if (!build_plan(plan, backend, cgraph)) return GGML_STATUS_FAILED;
    const std::unique_ptr<ggml_backend_buffer> work(
        cplan->work_data ? ggml_backend_cpu_buffer_from_ptr(cplan->work_data, cplan->work_size) : nullptr);
    const ggx::Workspace workspace = work ? ggx::Workspace{work.get(), work->base(), work->size} : ggx::Workspace{};
    return plan.run(0, ggml_graph_n_nodes(cgraph), workspace);
}

ggml_status ggml_graph_compute_with_ctx(ggml_context * ctx, ggml_cgraph * cgraph, int n_threads) {
    ggml_cplan cplan = ggml_graph_plan(cgraph, n_threads, nullptr);
    if (cplan.work_size > 0) {
        cplan.work_data = static_cast<uint8_t *>(ggml_new_buffer(ctx, cplan.work_size));
        if (!cplan.work_data) {
            return ggx::backend::fail(GGML_STATUS_ALLOC_FAILED, "ggml_graph_compute_with_ctx: no room for the " +
                                                                    std::to_string(cplan.work_size) +
                                                                    "-byte work buffer in the context");
        }
    }
    return ggml_graph_compute(cgraph, &cplan);
}

}  // extern "C"
