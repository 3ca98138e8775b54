// The one kernel descriptor: every implementation a plan step can run — a device's own kernel, a
// registered extension kernel or a fusion rule's execution — is a Kernel. The plan executor prepares
// each one once (host state and workspace bytes) and runs it; only how execute is called differs:
//
// - kNative kernels come from a device's table (one per device, checked against the op enum at
//   compile time). The backend runs consecutive native nodes as one batch (one thread-pool wake-up,
//   one command-buffer recording) and calls execute with its own execution context.
// - kExtension and kFusion kernels are called once per step on the host, in backend order, with no
//   context; they reach backend services through ggml-ext.h.
#pragma once

#include <ggml-backend.h>

#include <cstddef>

#include "core/enum_table.h"

namespace ggx {

struct Kernel;

// The nodes of one step, as prepare sees them (metadata only: data pointers may not be valid yet).
struct KernelPrepare {
    ggml_backend_t backend;  // the backend the plan is built for
    ggml_tensor * const * nodes;
    int n_nodes;  // 1, or a fused range whose last node is the output
};

// One execution: current tensor addresses and the plan's workspace.
struct KernelCall {
    ggml_backend_t backend;
    ggml_tensor * const * nodes;
    int n_nodes;
    void * state;                     // what prepare returned (nullptr without prepare)
    ggml_backend_buffer_t workspace;  // nullptr when the plan needs none
    void * workspace_data;            // the workspace's base in the backend's representation
    size_t workspace_size;            // >= this step's request; contents not preserved
    void * context;                   // kNative: the backend's execution context; else nullptr
};

struct Kernel {
    enum class Kind { kNative, kExtension, kFusion };

    const char * name;
    Kind kind;
    // Whether the kernel runs node on device (types, shapes, layouts; metadata only). Fusion
    // kernels, chosen by their rule's match, have none.
    bool (*supports)(const Kernel & self, ggml_backend_dev_t device, const ggml_tensor * node);
    // Optional: host plan state and the workspace bytes of the step (both zero by default).
    ggml_status (*prepare)(const Kernel & self, const KernelPrepare & step, void ** state,
                           size_t * workspace_bytes);
    // Runs the step. A failure sets the error (ggml_backend_get_last_error) and returns its status.
    ggml_status (*execute)(const Kernel & self, const KernelCall & call);
    // Optional: releases prepare's state.
    void (*destroy)(const Kernel & self, void * state);
    // What the callbacks adapt: a registration of ggml-ext.h, or nullptr for a device's own kernel.
    const void * impl = nullptr;
    // Device replay opt-in of an extension or fusion kernel (spec: replayable plans); native kernels
    // leave it 0, whether their backend can record them is the backend's answer (can_capture).
    enum Replay : uint32_t { kCaptureSafe = 1u << 0, kReplayReusable = 1u << 1 };
    uint32_t replay = 0;
};

}  // namespace ggx
