// A plain view of one thread's part in a node's execution, for kernels whose per-target (Highway)
// code is written against a small struct rather than the runtime's ComputeParams.
#pragma once

#include "cpu/kernel.h"

namespace ggx::cpu {

struct Exec {
    int ith = 0, nth = 1;
    char * workspace = nullptr;
    size_t workspace_size = 0;
    const ComputeParams * params = nullptr;

    static Exec of(const ComputeParams & p) {
        return {p.ith(), p.nth(), static_cast<char *>(p.workspace), p.workspace_size, &p};
    }
    // All threads of the node meet here.
    void sync() const {
        if (nth > 1) params->thread.barrier();
    }
    bool should_stop() const { return params->should_stop(); }
    void fail(const char * message) const { params->fail(message); }
};

}  // namespace ggx::cpu
