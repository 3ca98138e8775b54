// Constructors of the matrix-product family: MUL_MAT, MUL_MAT_ID, OUT_PROD.
#include "core/ops/common.h"

using namespace ggx::core;

namespace {

// Records one field of a MUL_MAT node's parameters; a NULL node (an earlier failure) is left alone.
void set_mul_mat_field(const char * op_name, ggml_tensor * a, int32_t ggml_ext_mul_mat_params::*field,
                       int32_t value) {
    if (!a) return;
    Check check(context_of(a), op_name, {{"a", a}});
    if (!check.require(a->op == GGML_OP_MUL_MAT, "a must be a ggml_mul_mat result")) return;
    auto p = params<ggml_ext_mul_mat_params>(a);
    p.*field = value;
    set_params(a, p);
}

}  // namespace

extern "C" {

ggml_tensor * ggml_mul_mat(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    Check check(ctx, "ggml_mul_mat", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_float_or_quantized(a), "a must be f32, f16, bf16, q8_0 or q4_0")
        .require(is_float(b), "b must be f32, f16 or bf16")
        .require(has_dense_blocks(a), "rows of a quantized a must be dense blocks")
        .require(a->ne[0] == b->ne[0], "a.ne0 and b.ne0 (K) must match")
        .require(a->ne[2] > 0 && a->ne[3] > 0 && b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0,
                 "a cannot be broadcast over b in dims 2 and 3");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_mul_mat", GGML_OP_MUL_MAT, GGML_TYPE_F32,
                     {a->ne[1], b->ne[1], b->ne[2], b->ne[3]}, {a, b});
}

void ggml_mul_mat_set_prec(ggml_tensor * a, enum ggml_prec prec) {
    set_mul_mat_field("ggml_mul_mat_set_prec", a, &ggml_ext_mul_mat_params::prec, prec);
}

void ggml_mul_mat_set_hint(ggml_tensor * a, enum ggml_op_hint hint) {
    set_mul_mat_field("ggml_mul_mat_set_hint", a, &ggml_ext_mul_mat_params::hint, hint);
}

ggml_tensor * ggml_mul_mat_id(ggml_context * ctx, ggml_tensor * as, ggml_tensor * b, ggml_tensor * ids) {
    Check check(ctx, "ggml_mul_mat_id", {{"as", as}, {"b", b}, {"ids", ids}});
    if (!check) return nullptr;
    check.require(is_float_or_quantized(as), "as must be f32, f16, bf16, q8_0 or q4_0")
        .require(is_float(b), "b must be f32, f16 or bf16")
        .require(ids->type == GGML_TYPE_I32, "ids must be i32")
        .require(as->ne[3] == 1 && b->ne[3] == 1, "as must be [K, M, n_as] and b [K, n_b, n_tokens]")
        .require(ids->ne[2] == 1 && ids->ne[3] == 1, "ids must be a matrix [n_used, n_tokens]")
        .require(ids->ne[1] == b->ne[2], "ids.ne1 and b.ne2 (tokens) must match")
        .require(as->ne[0] == b->ne[0], "as.ne0 and b.ne0 (K) must match")
        .require(b->ne[1] > 0 && ids->ne[0] % b->ne[1] == 0, "ids.ne0 must be a multiple of b.ne1");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_mul_mat_id", GGML_OP_MUL_MAT_ID, GGML_TYPE_F32,
                     {as->ne[1], ids->ne[0], b->ne[2], 1}, {as, b, ids});
}

ggml_tensor * ggml_out_prod(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    Check check(ctx, "ggml_out_prod", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_float_or_quantized(a) && is_float(b), "a must be float or quantized, b float")
        .require(a->ne[1] == b->ne[1], "a.ne1 and b.ne1 must match")
        .require(a->ne[2] > 0 && a->ne[3] > 0 && b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0,
                 "a cannot be broadcast over b in dims 2 and 3");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_out_prod", GGML_OP_OUT_PROD, GGML_TYPE_F32,
                     {a->ne[0], b->ne[0], b->ne[2], b->ne[3]}, {a, b});
}

}  // extern "C"
