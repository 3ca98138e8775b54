// The CPU device's kernels: what each computes on a thread of the pool, as the one Kernel
// descriptor, and their table indexed by ggml_op.
#pragma once

#include <ggml.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <string>

#include "cpu/threadpool.h"
#include "interface/kernel.h"

namespace ggx::cpu {

using ggx::Kernel;

// Alignment of the workspace kernels receive.
inline constexpr size_t kWorkspaceAlignment = 64;

// What every thread of a node's computation receives.
class ComputeParams {
public:
    ComputeParams(const ThreadContext & thread_context, void * scratch, size_t scratch_size,
                  std::atomic<bool> & failed, std::string & error)
        : thread(thread_context),
          workspace(scratch),
          workspace_size(scratch_size),
          failed_(failed),
          error_(error) {}

    const ThreadContext & thread;
    void * const workspace;  // shared by all threads of the node, kWorkspaceAlignment-aligned
    const size_t workspace_size;

    int ith() const { return thread.ith; }
    int nth() const { return thread.nth; }
    // Records why the node failed (the first message wins); the graph stops after this node.
    void fail(const std::string & message) const;
    bool failed() const { return failed_.load(std::memory_order_relaxed); }
    // True when the graph should stop (the abort callback, polled here, asked to, or a kernel
    // failed): call in long outer loops and return early.
    bool should_stop() const { return thread.poll_abort() || failed(); }

private:
    std::atomic<bool> & failed_;
    std::string & error_;
};

// Threads a backend's kernels are prepared for (its pool's size).
int prepared_threads(ggml_backend_t backend);

// A CPU kernel family's functions as the one Kernel descriptor (kNative). compute runs on every
// thread of the pool with the same node (call.context is the thread's ComputeParams); it splits the
// work by ith/nth and may call params.thread.barrier() (every thread must reach each barrier).
// workspace gives the scratch bytes a node needs with n threads (nullptr: none); the request is
// padded so that the backend can align the workspace to kWorkspaceAlignment.
template <bool (*supports)(const ggml_tensor * node),
          size_t (*workspace)(const ggml_tensor * node, int n_threads),
          void (*compute)(const ComputeParams & params, ggml_tensor * node)>
constexpr Kernel cpu_kernel(const char * name) {
    Kernel k{name,
             Kernel::Kind::kNative,
             [](const Kernel &, ggml_backend_dev_t, const ggml_tensor * node) { return supports(node); },
             nullptr,
             [](const Kernel &, const KernelCall & call) {
                 compute(*static_cast<const ComputeParams *>(call.context), call.nodes[0]);
                 return GGML_STATUS_SUCCESS;
             },
             nullptr};
    if constexpr (workspace != nullptr) {
        k.prepare = [](const Kernel &, const KernelPrepare & step, void **, size_t * bytes) {
            const size_t needed = workspace(step.nodes[0], prepared_threads(step.backend));
            *bytes = needed ? needed + kWorkspaceAlignment - 1 : 0;
            return GGML_STATUS_SUCCESS;
        };
    }
    return k;
}

// The kernel of every op (ops without computation, such as VIEW, have a no-op kernel).
const std::array<Kernel, GGML_OP_COUNT> & kernel_table();

}  // namespace ggx::cpu
