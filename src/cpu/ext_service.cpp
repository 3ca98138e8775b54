// The ggml_ext_cpu_parallel_v1 service: extensions run callbacks on a CPU-kernel backend's own thread
// pool (the CPU backend's or a virtual device's), through the same dispatch, abort polling and
// failure recording as the CPU kernels (ComputeParams).
//
// Decisions beyond the header's contract:
//  - A call from inside a task of any CPU pool (a nested run) is refused with FAILED and a message:
//    the pool's run() is not reentrant, and a worker waiting for a second pool could deadlock.
//  - Thread 0 asks the abort callback once more after fn returns (as graph_compute does after each
//    node), so a callback that asks to stop is honoured even by tasks that never poll should_stop.
//  - A failure wins over an abort; ABORTED also leaves a message in ggml_backend_get_last_error.
//  - Like graph_compute, run() is for one thread at a time per backend: two threads using one
//    backend at once is a caller bug that the pool reports by aborting the process.
#include <ggml-ext.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "cpu/backend.h"
#include "cpu/kernel.h"
#include "interface/backend-impl.h"

namespace ggx::cpu {
namespace {

using backend::fail;

constexpr const char * kRunName = "ggml_ext_cpu_parallel_v1.run";

// The backend's CpuBackend (the CPU device's and the virtual devices' backends), or nullptr.
CpuBackend * kernel_backend(ggml_backend_t backend) {
    return backend ? dynamic_cast<CpuBackend *>(backend) : nullptr;
}

// A task's runtime is its thread's ComputeParams, the object kernels poll and fail through.
const ComputeParams * params_of(const ggml_ext_cpu_task * task) {
    return task ? static_cast<const ComputeParams *>(task->runtime) : nullptr;
}

int service_n_threads(ggml_backend_t backend) {
    const CpuBackend * cpu = kernel_backend(backend);
    return cpu ? cpu->n_threads() : 0;
}

ggml_status service_run(ggml_backend_t backend, ggml_ext_cpu_task_fn fn, void * user_data, int n_tasks) {
    const std::string who = backend ? std::string(backend->name()) + ": " + kRunName : kRunName;
    const auto refuse = [&who](const char * why) { return fail(GGML_STATUS_FAILED, who + ": " + why); };
    if (!backend) return refuse("the backend is NULL");
    if (!fn) return refuse("fn is NULL");
    CpuBackend * cpu = kernel_backend(backend);
    if (!cpu) {
        return refuse(
            "the backend has no CPU thread pool (it is neither a CPU nor a virtual-device backend)");
    }
    if (ThreadPool::in_task()) {
        return refuse(
            "called from inside a task of a CPU thread pool; nested runs are refused (call it from the "
            "thread that computes graphs, or from an extension kernel's execute)");
    }

    const int nth = n_tasks <= 0 ? cpu->n_threads() : std::min(n_tasks, cpu->n_threads());
    std::atomic<bool> failed{false};
    std::string error;
    const bool aborted = cpu->run_on_pool([&](const ThreadContext & thread) {
        if (thread.ith < nth) {
            const ComputeParams params(thread, nullptr, 0, failed, error);
            const ggml_ext_cpu_task task{thread.ith, nth, user_data, const_cast<ComputeParams *>(&params)};
            fn(&task);
        }
        if (thread.ith == 0) thread.poll_abort();
    });
    if (failed.load()) return fail(GGML_STATUS_FAILED, who + ": " + error);
    if (aborted) return fail(GGML_STATUS_ABORTED, who + ": stopped by the abort callback");
    return GGML_STATUS_SUCCESS;
}

bool service_should_stop(const ggml_ext_cpu_task * task) {
    const ComputeParams * params = params_of(task);
    return params && params->should_stop();
}

void service_fail(const ggml_ext_cpu_task * task, const char * message) {
    const ComputeParams * params = params_of(task);
    if (!params) return;
    params->fail("task " + std::to_string(task->ith) + " of " + std::to_string(task->nth) +
                 " failed: " + (message ? message : "(no message)"));
}

constexpr ggml_ext_cpu_parallel_v1 kParallelService = {
    .struct_size = sizeof(ggml_ext_cpu_parallel_v1),
    .version = GGML_EXT_CPU_PARALLEL_V1_VERSION,
    .n_threads = &service_n_threads,
    .run = &service_run,
    .should_stop = &service_should_stop,
    .fail = &service_fail,
};

}  // namespace

const ggml_ext_cpu_parallel_v1 * parallel_service() { return &kParallelService; }

}  // namespace ggx::cpu
