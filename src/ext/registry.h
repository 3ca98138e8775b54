// The extension registry behind ggml-ext.h: registered operators, kernels per device, kernel
// selection and the capability query that counts single-node extension kernels.
//
// Registrations live until the process ends and never change once made, so callers may keep
// pointers to them. A generation counter changes with every registration or policy change: plans
// record it and refuse to run when it has moved (they would run a stale selection).
#pragma once

#include <ggml-ext.h>

#include <cstdint>
#include <string>
#include <vector>

#include "interface/kernel.h"

struct ggml_ext_op {
    ggml_ext_op_desc desc;  // name points at `name`
    std::string name;
    int32_t id;  // 1-based, stored in the nodes' op_params
};

namespace ggx::ext {

// A kernel registration: the application's descriptor (its name owned here) and the runtime's
// Kernel that runs it (kExtension). Not copyable: the Kernel points back at it.
struct KernelRegistration {
    KernelRegistration(const ggml_ext_kernel_desc & d, uint32_t flags);
    KernelRegistration(const KernelRegistration &) = delete;
    KernelRegistration & operator=(const KernelRegistration &) = delete;

    ggml_ext_kernel_desc desc;
    std::string name;
    uint32_t flags;  // GGML_EXT_KERNEL_*
    ggx::Kernel kernel;
};

// A registered fusion rule and the Kernel (kFusion) that runs the ranges it matches.
struct FusionRule {
    explicit FusionRule(const ggml_ext_fusion_desc & d);
    FusionRule(const FusionRule &) = delete;
    FusionRule & operator=(const FusionRule &) = delete;

    ggml_ext_fusion_desc desc;
    std::string name;
    ggx::Kernel kernel;
};

// A legal match: nodes [first, first + n) of a graph replaced by rule.
struct FusedGroup {
    int first, n;
    const FusionRule * rule;
};

// Where a node runs on a device: the kernel (nullptr when nothing supports the node) and whether
// it is an extension's.
struct Selection {
    enum class Kind { kNone, kNative, kExtension } kind = Kind::kNone;
    const ggx::Kernel * kernel = nullptr;
};

// While alive, kernel selection and fusion matching on this thread append why they decided what
// they did to *text, a line each (explain mode).
class ExplainScope {
public:
    explicit ExplainScope(std::string * text);
    ~ExplainScope();
    ExplainScope(const ExplainScope &) = delete;
    ExplainScope & operator=(const ExplainScope &) = delete;

private:
    std::string * previous_;
};

// Increases with every registration and policy change.
uint64_t generation();

// True when any extension kernel is registered for device (the fast path skips everything else).
bool has_kernels(ggml_backend_dev_t device);

// The extension kernel or the device's own kernel that runs node on device (spec "Kernel
// selection"). Layout ops and empty nodes select the device's own (no-op) kernel.
Selection select(ggml_backend_dev_t device, const ggml_tensor * node);

// Native support or a single-node extension kernel (ggml_backend_dev_supports_op).
bool supports(ggml_backend_dev_t device, const ggml_tensor * node);

// The device's fusion rules' optimize callbacks, in priority order, over graph.
void optimize(ggml_backend_dev_t device, ggml_cgraph * graph);

// Legal matches of the device's fusion rules over nodes [begin, end) of graph, in order, none
// overlapping: at each node the highest-priority rule whose match is legal wins.
std::vector<FusedGroup> match_fusions(ggml_backend_dev_t device, const ggml_cgraph * graph, int begin,
                                      int end);

// ggml_ext_fusion_is_legal (error set when not).
bool fusion_is_legal(const ggml_cgraph * graph, int first, int n);

// "'name' (OP f32 [..])" for messages about node.
std::string describe(const ggml_tensor * node);

}  // namespace ggx::ext
