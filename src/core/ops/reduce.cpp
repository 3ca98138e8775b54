// Constructors of the reduction family: SUM, SUM_ROWS, MEAN, ARGMAX.
#include "core/ops/common.h"

using namespace ggx::core;

namespace {

ggml_tensor * reduce_rows(ggml_context * ctx, const char * name, ggml_op op, ggml_tensor * a,
                          const std::array<int64_t, 4> & ne) {
    Check check(ctx, name, {{"a", a}});
    if (!check) return nullptr;
    if (!check.require(is_float(a), "a must be f32, f16 or bf16")) return nullptr;
    return make_node(ctx, name, op, a->type, ne, {a});
}

}  // namespace

extern "C" {

ggml_tensor * ggml_sum(ggml_context * ctx, ggml_tensor * a) {
    return reduce_rows(ctx, "ggml_sum", GGML_OP_SUM, a, {1, 1, 1, 1});
}
ggml_tensor * ggml_sum_rows(ggml_context * ctx, ggml_tensor * a) {
    return a ? reduce_rows(ctx, "ggml_sum_rows", GGML_OP_SUM_ROWS, a, {1, a->ne[1], a->ne[2], a->ne[3]})
             : nullptr;
}
ggml_tensor * ggml_mean(ggml_context * ctx, ggml_tensor * a) {
    return a ? reduce_rows(ctx, "ggml_mean", GGML_OP_MEAN, a, {1, a->ne[1], a->ne[2], a->ne[3]}) : nullptr;
}

ggml_tensor * ggml_argmax(ggml_context * ctx, ggml_tensor * a) {
    Check check(ctx, "ggml_argmax", {{"a", a}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32, "a must be f32")
        .require(ggml_is_matrix(a), "a must be a matrix")
        .require(a->ne[0] > 0, "rows must not be empty");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_argmax", GGML_OP_ARGMAX, GGML_TYPE_I32, {a->ne[1], 1, 1, 1}, {a});
}

}  // extern "C"
