// Constructors of the matmul family (docs/ops.md "Matrix products"): MUL_MAT_ID, OUT_PROD and the
// MUL_MAT setters: shapes, types, sources, recorded parameters and the rejected inputs.
#include "support/op_test_util.h"

namespace {

using ggx::test::OpTest;
using MatmulOps = OpTest;

TEST_F(MatmulOps, MulMatSetPrecAndHintRecordInTheirSlots) {
    ggml_tensor * r = ggml_mul_mat(ctx(), f32(8, 3), f32(8, 5));
    EXPECT_EQ(params_of<ggml_ext_mul_mat_params>(r).prec, GGML_PREC_DEFAULT);
    ggml_mul_mat_set_prec(r, GGML_PREC_F32);
    ggml_mul_mat_set_hint(r, GGML_HINT_SRC0_IS_HADAMARD);
    const auto p = params_of<ggml_ext_mul_mat_params>(r);
    EXPECT_EQ(p.prec, GGML_PREC_F32);
    EXPECT_EQ(p.hint, GGML_HINT_SRC0_IS_HADAMARD);
    EXPECT_EQ(r->op_params[0], GGML_PREC_F32);
    EXPECT_EQ(r->op_params[1], GGML_HINT_SRC0_IS_HADAMARD);
}

TEST_F(MatmulOps, MulMatSettersRefuseOtherOpsAndIgnoreNull) {
    ggml_tensor * a = f32(4);
    ggml_mul_mat_set_prec(a, GGML_PREC_F32);
    expect_error("ggml_mul_mat_set_prec", "a must be a ggml_mul_mat result");
    ggml_mul_mat_set_hint(a, GGML_HINT_SRC0_IS_HADAMARD);
    expect_error("ggml_mul_mat_set_hint", "a must be a ggml_mul_mat result");
    EXPECT_EQ(a->op_params[0], 0);
    ggml_mul_mat_set_prec(nullptr, GGML_PREC_F32);
    EXPECT_EQ(error(), "");
}

TEST_F(MatmulOps, MulMatIdPicksExpertsPerToken) {
    ggml_tensor *as = t(GGML_TYPE_F16, 16, 7, 5), *b = f32(16, 1, 9), *ids = t(GGML_TYPE_I32, 3, 9);
    expect_node(ggml_mul_mat_id(ctx(), as, b, ids), GGML_OP_MUL_MAT_ID, GGML_TYPE_F32, {7, 3, 9, 1},
                {as, b, ids});
    ggml_tensor * per_expert = f32(16, 3, 9);
    expect_node(ggml_mul_mat_id(ctx(), as, per_expert, ids), GGML_OP_MUL_MAT_ID, GGML_TYPE_F32, {7, 3, 9, 1},
                {as, per_expert, ids});
}

TEST_F(MatmulOps, MulMatIdRejectsMismatches) {
    ggml_tensor *as = f32(16, 7, 5), *b = f32(16, 1, 9), *ids = t(GGML_TYPE_I32, 3, 9);
    expect_rejected(ggml_mul_mat_id(ctx(), as, b, t(GGML_TYPE_F32, 3, 9)), "ggml_mul_mat_id",
                    "ids must be i32");
    expect_rejected(ggml_mul_mat_id(ctx(), as, f32(16, 1, 8), ids), "ggml_mul_mat_id",
                    "ids.ne1 and b.ne2 (tokens) must match");
    expect_rejected(ggml_mul_mat_id(ctx(), as, f32(15, 1, 9), ids), "ggml_mul_mat_id",
                    "as.ne0 and b.ne0 (K) must match");
    expect_rejected(ggml_mul_mat_id(ctx(), as, f32(16, 2, 9), ids), "ggml_mul_mat_id",
                    "ids.ne0 must be a multiple of b.ne1");
    expect_rejected(ggml_mul_mat_id(ctx(), f32(16, 7, 5, 2), b, ids), "ggml_mul_mat_id",
                    "as must be [K, M, n_as] and b [K, n_b, n_tokens]");
    EXPECT_EQ(ggml_mul_mat_id(ctx(), as, b, nullptr), nullptr);
    EXPECT_EQ(error(), "");
}

TEST_F(MatmulOps, OutProdSumsOverDimOne) {
    ggml_tensor *a = f32(5, 7, 2), *b = t(GGML_TYPE_F16, 3, 7, 4, 3);
    expect_node(ggml_out_prod(ctx(), a, b), GGML_OP_OUT_PROD, GGML_TYPE_F32, {5, 3, 4, 3}, {a, b});
    expect_rejected(ggml_out_prod(ctx(), a, f32(3, 6, 4)), "ggml_out_prod", "a.ne1 and b.ne1 must match");
    expect_rejected(ggml_out_prod(ctx(), a, f32(3, 7, 3)), "ggml_out_prod",
                    "a cannot be broadcast over b in dims 2 and 3");
}

}  // namespace
