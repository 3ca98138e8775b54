// The CPU device's kernel descriptor and its one table, indexed by ggml_op.
#pragma once

#include <ggml.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <string>

#include "cpu/threadpool.h"

namespace ggx::cpu {

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
    void * const workspace;  // shared by all threads of the node, Kernel::workspace bytes (64-aligned)
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

// A CPU kernel. compute runs on every thread of the pool with the same node; it splits the work by
// ith/nth and may call params.thread.barrier() (every thread must reach each barrier).
struct Kernel {
    // Whether the node's types, shapes and layouts are supported (metadata only).
    bool (*supports)(const ggml_tensor * node) = nullptr;
    // Scratch bytes the node needs with n_threads threads; nullptr means none.
    size_t (*workspace)(const ggml_tensor * node, int n_threads) = nullptr;
    void (*compute)(const ComputeParams & params, ggml_tensor * node) = nullptr;
};

// The kernel of every op (ops without computation, such as VIEW, have a no-op kernel).
const std::array<Kernel, GGML_OP_COUNT> & kernel_table();

}  // namespace ggx::cpu
