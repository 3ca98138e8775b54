// Constructors of the custom family: CPU callback nodes (ggml_custom_4d, ggml_custom_inplace,
// ggml_map_custom1/2/3) and their accessors.
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

// A CUSTOM node computed by fun: new with type and ne, or (over) a view of over's storage with over as
// its first source before args.
ggml_tensor * custom(ggml_context * ctx, const char * name, ggml_type type, const std::array<int64_t, 4> & ne,
                     ggml_tensor * over, ggml_tensor ** args, int n_args, ggml_custom_op_t fun, int n_tasks,
                     void * userdata) {
    const int max_args = over ? GGML_MAX_SRC - 1 : GGML_MAX_SRC;
    Check check(ctx, name, {{"a", over, true}});
    check.require(is_known_type(type), "unknown type")
        .require(n_args >= 0 && n_args <= max_args && (n_args == 0 || args),
                 over ? "n_args must be 0..GGML_MAX_SRC-1" : "n_args must be 0..GGML_MAX_SRC")
        .require(fun != nullptr, "fun must not be NULL")
        .require(n_tasks == GGML_N_TASKS_MAX || n_tasks >= 1, "n_tasks must be >= 1 or GGML_N_TASKS_MAX");
    if (!check) return nullptr;
    for (int i = 0; i < n_args; ++i) {
        if (!args[i]) return nullptr;  // an earlier constructor failed and reported why
    }
    ggml_tensor * result = make_node(ctx, name, GGML_OP_CUSTOM, type, ne, {}, over);
    if (!result) return nullptr;
    int n_srcs = 0;
    if (over) result->src[n_srcs++] = over;
    for (int i = 0; i < n_args; ++i)
        result->src[n_srcs++] = args[i];
    const CustomCallback callback{GGML_CUSTOM_MARKER_CPU_CALLBACK, n_tasks, fun, userdata};
    std::memcpy(result->op_params, &callback, sizeof callback);
    return result;
}

// A MAP_CUSTOM<n> node of a's type and shape over srcs (a first), computed by the callback in P.
template <class P, class Fun>
ggml_tensor * map_custom(ggml_context * ctx, const char * name, ggml_op op,
                         std::initializer_list<ggml_tensor *> srcs, Fun fun, int n_tasks, void * userdata,
                         bool inplace) {
    for (ggml_tensor * src : srcs) {
        if (!src) return nullptr;  // an earlier constructor failed and reported why
    }
    ggml_tensor * a = *srcs.begin();
    Check check(ctx, name, {{"a", a}});
    check.require(fun != nullptr, "fun must not be NULL")
        .require(n_tasks == GGML_N_TASKS_MAX || n_tasks >= 1, "n_tasks must be >= 1 or GGML_N_TASKS_MAX");
    if (!check) return nullptr;
    return with_params(make_node(ctx, name, op, a->type, shape_of(a), srcs, inplace ? a : nullptr),
                       P{fun, n_tasks, userdata});
}

}  // namespace

extern "C" {

ggml_tensor * ggml_custom_4d(ggml_context * ctx, ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2,
                             int64_t ne3, ggml_tensor ** args, int n_args, ggml_custom_op_t fun, int n_tasks,
                             void * userdata) {
    return custom(ctx, "ggml_custom_4d", type, {ne0, ne1, ne2, ne3}, nullptr, args, n_args, fun, n_tasks,
                  userdata);
}

ggml_tensor * ggml_custom_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor ** args, int n_args,
                                  ggml_custom_op_t fun, int n_tasks, void * userdata) {
    if (!a) return nullptr;
    return custom(ctx, "ggml_custom_inplace", a->type, shape_of(a), a, args, n_args, fun, n_tasks, userdata);
}

ggml_tensor * ggml_map_custom1(ggml_context * ctx, ggml_tensor * a, ggml_custom1_op_t fun, int n_tasks,
                               void * userdata) {
    return map_custom<ggml_ext_map_custom1_params>(ctx, "ggml_map_custom1", GGML_OP_MAP_CUSTOM1, {a}, fun,
                                                   n_tasks, userdata, false);
}
ggml_tensor * ggml_map_custom1_inplace(ggml_context * ctx, ggml_tensor * a, ggml_custom1_op_t fun,
                                       int n_tasks, void * userdata) {
    return map_custom<ggml_ext_map_custom1_params>(ctx, "ggml_map_custom1_inplace", GGML_OP_MAP_CUSTOM1, {a},
                                                   fun, n_tasks, userdata, true);
}
ggml_tensor * ggml_map_custom2(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_custom2_op_t fun,
                               int n_tasks, void * userdata) {
    return map_custom<ggml_ext_map_custom2_params>(ctx, "ggml_map_custom2", GGML_OP_MAP_CUSTOM2, {a, b}, fun,
                                                   n_tasks, userdata, false);
}
ggml_tensor * ggml_map_custom2_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b,
                                       ggml_custom2_op_t fun, int n_tasks, void * userdata) {
    return map_custom<ggml_ext_map_custom2_params>(ctx, "ggml_map_custom2_inplace", GGML_OP_MAP_CUSTOM2,
                                                   {a, b}, fun, n_tasks, userdata, true);
}
ggml_tensor * ggml_map_custom3(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * c,
                               ggml_custom3_op_t fun, int n_tasks, void * userdata) {
    return map_custom<ggml_ext_map_custom3_params>(ctx, "ggml_map_custom3", GGML_OP_MAP_CUSTOM3, {a, b, c},
                                                   fun, n_tasks, userdata, false);
}
ggml_tensor * ggml_map_custom3_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * c,
                                       ggml_custom3_op_t fun, int n_tasks, void * userdata) {
    return map_custom<ggml_ext_map_custom3_params>(ctx, "ggml_map_custom3_inplace", GGML_OP_MAP_CUSTOM3,
                                                   {a, b, c}, fun, n_tasks, userdata, true);
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
