// Constructors of the custom family: CPU callback nodes (ggml_custom_4d) and their accessors.
#include <cstring>

#include "core/ops/common.h"

using namespace ggx::core;

namespace {

struct CustomCallback {
    uint32_t marker;
    int32_t n_tasks;
    ggml_custom_op_t fun;
    void * userdata;
};
static_assert(sizeof(CustomCallback) <= GGML_MAX_OP_PARAMS);

}  // namespace

extern "C" {

ggml_tensor * ggml_custom_4d(ggml_context * ctx, ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2,
                             int64_t ne3, ggml_tensor ** args, int n_args, ggml_custom_op_t fun, int n_tasks,
                             void * userdata) {
    Check check(ctx, "ggml_custom_4d", {});
    check.require(is_known_type(type), "unknown type")
        .require(n_args >= 0 && n_args <= GGML_MAX_SRC && (n_args == 0 || args),
                 "n_args must be 0..GGML_MAX_SRC")
        .require(fun != nullptr, "fun must not be NULL")
        .require(n_tasks == GGML_N_TASKS_MAX || n_tasks >= 1, "n_tasks must be >= 1 or GGML_N_TASKS_MAX");
    if (!check) return nullptr;
    for (int i = 0; i < n_args; ++i) {
        if (!args[i]) return nullptr;  // an earlier constructor failed and reported why
    }
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    ggml_tensor * result = ggml_new_tensor(ctx, type, 4, ne);
    if (!result) return nullptr;
    result->op = GGML_OP_CUSTOM;
    for (int i = 0; i < n_args; ++i)
        result->src[i] = args[i];
    const CustomCallback callback{GGML_CUSTOM_MARKER_CPU_CALLBACK, n_tasks, fun, userdata};
    std::memcpy(result->op_params, &callback, sizeof callback);
    return result;
}

bool ggml_get_custom_callback(const ggml_tensor * tensor, ggml_custom_op_t * fun, int * n_tasks,
                              void ** userdata) {
    if (ggml_get_custom_kind(tensor) != GGML_CUSTOM_KIND_CPU_CALLBACK) return false;
    CustomCallback callback;
    std::memcpy(&callback, tensor->op_params, sizeof callback);
    if (fun) *fun = callback.fun;
    if (n_tasks) *n_tasks = callback.n_tasks;
    if (userdata) *userdata = callback.userdata;
    return true;
}

enum ggml_custom_kind ggml_get_custom_kind(const ggml_tensor * tensor) {
    if (tensor->op != GGML_OP_CUSTOM) return GGML_CUSTOM_KIND_NONE;
    switch (get_param<uint32_t>(tensor, 0)) {
        case GGML_CUSTOM_MARKER_CPU_CALLBACK:
            return GGML_CUSTOM_KIND_CPU_CALLBACK;
        case GGML_CUSTOM_MARKER_EXTENSION:
            return GGML_CUSTOM_KIND_EXTENSION;
        default:
            return GGML_CUSTOM_KIND_NONE;
    }
}

}  // extern "C"
