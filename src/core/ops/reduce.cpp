// Constructors of the reduction family: SUM, SUM_ROWS, CUMSUM, MEAN, ARGMAX, COUNT_EQUAL, ARGSORT,
// TOP_K, CROSS_ENTROPY_LOSS(_BACK).
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

ggml_tensor * ggml_cumsum(ggml_context * ctx, ggml_tensor * a) {
    return a ? reduce_rows(ctx, "ggml_cumsum", GGML_OP_CUMSUM, a, shape_of(a)) : nullptr;
}

ggml_tensor * ggml_count_equal(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    Check check(ctx, "ggml_count_equal", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(a->type == b->type, "a and b must have the same type")
        .require(ggml_are_same_shape(a, b), "a and b must have the same shape");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_count_equal", GGML_OP_COUNT_EQUAL, GGML_TYPE_I64, {1, 1, 1, 1}, {a, b});
}

ggml_tensor * ggml_argsort(ggml_context * ctx, ggml_tensor * a, ggml_sort_order order) {
    Check check(ctx, "ggml_argsort", {{"a", a}});
    if (!check) return nullptr;
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require(order == GGML_SORT_ORDER_ASC || order == GGML_SORT_ORDER_DESC, "unknown sort order")
        .require(a->ne[0] <= INT32_MAX, "rows must have at most INT32_MAX elements");
    if (!check) return nullptr;
    return with_params(make_node(ctx, "ggml_argsort", GGML_OP_ARGSORT, GGML_TYPE_I32, shape_of(a), {a}),
                       ggml_ext_argsort_params{static_cast<int32_t>(order)});
}

// The first k indices of each row of a descending argsort.
ggml_tensor * ggml_argsort_top_k(ggml_context * ctx, ggml_tensor * a, int k) {
    Check check(ctx, "ggml_argsort_top_k", {{"a", a}});
    if (!check || !check.require(k >= 1 && k <= a->ne[0], "k must be in 1..a.ne0")) return nullptr;
    ggml_tensor * sorted = ggml_argsort(ctx, a, GGML_SORT_ORDER_DESC);
    if (!sorted) return nullptr;
    return ggml_view_4d(ctx, sorted, k, sorted->ne[1], sorted->ne[2], sorted->ne[3], sorted->nb[1],
                        sorted->nb[2], sorted->nb[3], 0);
}

ggml_tensor * ggml_top_k(ggml_context * ctx, ggml_tensor * a, int k) {
    Check check(ctx, "ggml_top_k", {{"a", a}});
    if (!check) return nullptr;
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require(k >= 1 && k <= a->ne[0], "k must be in 1..a.ne0");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_top_k", GGML_OP_TOP_K, GGML_TYPE_I32, {k, a->ne[1], a->ne[2], a->ne[3]}, {a});
}

ggml_tensor * ggml_cross_entropy_loss(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    Check check(ctx, "ggml_cross_entropy_loss", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_float(a) && b->type == a->type, "a and b must be of one float type")
        .require(ggml_are_same_shape(a, b), "a and b must have the same shape");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_cross_entropy_loss", GGML_OP_CROSS_ENTROPY_LOSS, a->type, {1, 1, 1, 1},
                     {a, b});
}

// As ggml builds it: a is the loss gradient (one element), b the logits, c the labels.
ggml_tensor * ggml_cross_entropy_loss_back(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b,
                                           ggml_tensor * c) {
    Check check(ctx, "ggml_cross_entropy_loss_back", {{"a", a}, {"b", b}, {"c", c}});
    if (!check) return nullptr;
    check.require(ggml_is_scalar(a), "a (the loss gradient) must have one element")
        .require(is_float(b) && c->type == b->type, "b and c must be of one float type")
        .require(ggml_are_same_shape(b, c), "b and c must have the same shape");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_cross_entropy_loss_back", GGML_OP_CROSS_ENTROPY_LOSS_BACK, b->type,
                     shape_of(b), {a, b, c});
}

}  // extern "C"
