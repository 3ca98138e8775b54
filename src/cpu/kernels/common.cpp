// Shared kernel helpers and the kernels of ops without computation and of CPU callback nodes (CUSTOM,
// MAP_CUSTOM1..3).
#include "cpu/kernels/common.h"

#include <vector>

#include "core/op_params.h"

namespace ggx::cpu {

void ComputeParams::fail(const std::string & message) const {
    bool expected = false;
    if (failed_.compare_exchange_strong(expected, true)) error_ = message;
    thread.request_abort();
}

void load_row(ggml_type type, const char * src, size_t stride, int64_t n, float * dst) {
    if (ggml_is_quantized(type) || stride == ggml_type_size(type)) {
        ggml_dequantize_row(type, src, dst, n);
        return;
    }
    for (int64_t i = 0; i < n; ++i)
        dst[i] = load_float(type, src + i * stride);
}

void store_row(ggml_type type, const float * src, char * dst, size_t stride, int64_t n) {
    if (ggml_is_quantized(type) || stride == ggml_type_size(type)) {
        ggml_quantize_row(type, src, dst, n);
        return;
    }
    for (int64_t i = 0; i < n; ++i)
        store_float(type, dst + i * stride, src[i]);
}

namespace {

bool supports_any(const ggml_tensor *) { return true; }
bool supports_nothing(const ggml_tensor *) { return false; }
void compute_nothing(const ComputeParams &, ggml_tensor *) {}

bool supports_custom(const ggml_tensor * node) {
    return ggml_get_custom_kind(node) == GGML_CUSTOM_KIND_CPU_CALLBACK;
}

// Threads a callback of n_tasks asks for, capped by the pool (GGML_N_TASKS_MAX: all).
int callback_threads(const ComputeParams & params, int n_tasks) {
    return n_tasks == GGML_N_TASKS_MAX ? params.nth() : std::min(n_tasks, params.nth());
}

// The application's callback computes the node; it is given this thread's index and the number of
// threads it asked for (capped by the pool).
void compute_custom(const ComputeParams & params, ggml_tensor * node) {
    ggml_custom_op_t fun = nullptr;
    int n_tasks = 0;
    void * userdata = nullptr;
    ggml_get_custom_callback(node, &fun, &n_tasks, &userdata);
    const int nth = callback_threads(params, n_tasks);
    if (params.ith() < nth) fun(node, params.ith(), nth, userdata);
}

// A MAP_CUSTOM node carries its callback (a node without one, as op alone, computes nothing).
bool supports_map_custom(const ggml_tensor * node) {
    switch (node->op) {
        case GGML_OP_MAP_CUSTOM1:
            return core::params<ggml_ext_map_custom1_params>(node).fun != nullptr;
        case GGML_OP_MAP_CUSTOM2:
            return core::params<ggml_ext_map_custom2_params>(node).fun != nullptr;
        default:
            return core::params<ggml_ext_map_custom3_params>(node).fun != nullptr;
    }
}

// MAP_CUSTOM1..3: the application's callback computes dst from its sources.
void compute_map_custom(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1], *c = node->src[2];
    const int ith = params.ith();
    if (node->op == GGML_OP_MAP_CUSTOM1) {
        const auto p = core::params<ggml_ext_map_custom1_params>(node);
        const int nth = callback_threads(params, p.n_tasks);
        if (ith < nth) p.fun(node, a, ith, nth, p.userdata);
    } else if (node->op == GGML_OP_MAP_CUSTOM2) {
        const auto p = core::params<ggml_ext_map_custom2_params>(node);
        const int nth = callback_threads(params, p.n_tasks);
        if (ith < nth) p.fun(node, a, b, ith, nth, p.userdata);
    } else {
        const auto p = core::params<ggml_ext_map_custom3_params>(node);
        const int nth = callback_threads(params, p.n_tasks);
        if (ith < nth) p.fun(node, a, b, c, ith, nth, p.userdata);
    }
}

}  // namespace

namespace kernels {

const Kernel none = cpu_kernel<supports_any, nullptr, compute_nothing>("cpu.none");
const Kernel unsupported = cpu_kernel<supports_nothing, nullptr, compute_nothing>("cpu.unsupported");
const Kernel custom = cpu_kernel<supports_custom, nullptr, compute_custom>("cpu.custom");
const Kernel map_custom = cpu_kernel<supports_map_custom, nullptr, compute_map_custom>("cpu.map_custom");

}  // namespace kernels

}  // namespace ggx::cpu
