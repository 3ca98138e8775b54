// Constructors of the indexing family: GET_ROWS, GET_ROWS_BACK, SET_ROWS.
#include "core/ops/common.h"

using namespace ggx::core;

extern "C" {

ggml_tensor * ggml_get_rows(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    Check check(ctx, "ggml_get_rows", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check
        .require(is_float_or_quantized(a) || a->type == GGML_TYPE_I32,
                 "a must be f32, f16, bf16, q8_0, q4_0 or i32")
        .require(has_dense_blocks(a), "rows of a quantized a must be dense blocks")
        .require(b->type == GGML_TYPE_I32, "b must be i32")
        .require(b->ne[1] == a->ne[2] && b->ne[2] == a->ne[3] && b->ne[3] == 1,
                 "b must be [n, a.ne2, a.ne3]");
    if (!check) return nullptr;
    const ggml_type type = a->type == GGML_TYPE_I32 ? GGML_TYPE_I32 : GGML_TYPE_F32;
    return make_node(ctx, "ggml_get_rows", GGML_OP_GET_ROWS, type, {a->ne[0], b->ne[0], b->ne[1], b->ne[2]},
                     {a, b});
}

ggml_tensor * ggml_get_rows_back(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * c) {
    Check check(ctx, "ggml_get_rows_back", {{"a", a}, {"b", b}, {"c", c}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32 && ggml_is_matrix(a), "a must be an f32 matrix")
        .require(b->type == GGML_TYPE_I32 && ggml_is_vector(b) && b->ne[0] == a->ne[1],
                 "b must be an i32 vector of a.ne1 indices")
        .require(ggml_is_matrix(c) && c->ne[0] == a->ne[0], "c must be a matrix with a's ne0");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_get_rows_back", GGML_OP_GET_ROWS_BACK, GGML_TYPE_F32,
                     {c->ne[0], c->ne[1], 1, 1}, {a, b});
}

ggml_tensor * ggml_set_rows(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * c) {
    Check check(ctx, "ggml_set_rows", {{"a", a}, {"b", b}, {"c", c}});
    if (!check) return nullptr;
    check.require(is_float_or_quantized(a), "a must be f32, f16, bf16, q8_0 or q4_0")
        .require(has_dense_blocks(a), "rows of a quantized a must be dense blocks")
        .require(b->type == GGML_TYPE_F32, "b must be f32")
        .require(c->type == GGML_TYPE_I32, "c must be i32")
        .require(a->ne[0] == b->ne[0] && a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3],
                 "a and b must agree in dims 0, 2 and 3")
        .require(c->ne[0] == b->ne[1] && c->ne[3] == 1, "c must be [b.ne1, ...]")
        .require(c->ne[1] > 0 && c->ne[2] > 0 && b->ne[2] % c->ne[1] == 0 && b->ne[3] % c->ne[2] == 0,
                 "c cannot be broadcast over b in dims 2 and 3");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_set_rows", GGML_OP_SET_ROWS, a->type, shape_of(a), {a, b, c}, a);
}

}  // extern "C"
