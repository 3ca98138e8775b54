// Constructors of the matrix-product family: MUL_MAT.
#include "core/ops/common.h"

using namespace ggx::core;

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

}  // extern "C"
