// Constructors of the reduction family added for ggml's API: CUMSUM, COUNT_EQUAL, ARGSORT (and
// ggml_argsort_top_k, a view of a descending argsort), TOP_K, CROSS_ENTROPY_LOSS(_BACK).
#include "core/ops_test_support.h"

namespace {

using ggx::test::cpu_backend;

class OpsReduce : public ggx::test::OpsTest {};

TEST_F(OpsReduce, CumsumAndCountEqual) {
    ggml_tensor * a = f32(5, 3);
    ggml_tensor * cumsum = ggml_cumsum(ctx(), a);
    expect_node(cumsum, GGML_OP_CUMSUM, GGML_TYPE_F32, {5, 3, 1, 1}, {a});
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), cumsum));
    expect_error(ggml_cumsum(ctx(), tensor(GGML_TYPE_I32, 5)), "ggml_cumsum", "a must be f32, f16 or bf16");

    ggml_tensor *x = tensor(GGML_TYPE_I32, 7, 2), *y = tensor(GGML_TYPE_I32, 7, 2);
    expect_node(ggml_count_equal(ctx(), x, y), GGML_OP_COUNT_EQUAL, GGML_TYPE_I64, {1, 1, 1, 1}, {x, y});
    expect_error(ggml_count_equal(ctx(), x, tensor(GGML_TYPE_I32, 7)), "ggml_count_equal", "the same shape");
    expect_error(ggml_count_equal(ctx(), x, f32(7, 2)), "ggml_count_equal", "the same type");
}

TEST_F(OpsReduce, ArgsortAndTopK) {
    ggml_tensor * a = f32(10, 3, 2);
    ggml_tensor * sorted = ggml_argsort(ctx(), a, GGML_SORT_ORDER_DESC);
    expect_node(sorted, GGML_OP_ARGSORT, GGML_TYPE_I32, {10, 3, 2, 1}, {a});
    EXPECT_EQ(params_of<ggml_ext_argsort_params>(sorted).order, GGML_SORT_ORDER_DESC);
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), sorted));

    ggml_tensor * top = ggml_argsort_top_k(ctx(), a, 4);
    ASSERT_NE(top, nullptr);
    EXPECT_EQ(top->op, GGML_OP_VIEW);
    EXPECT_EQ((ggx::test::Shape{top->ne[0], top->ne[1], top->ne[2], top->ne[3]}),
              (ggx::test::Shape{4, 3, 2, 1}));
    const ggml_tensor * argsort = top->src[0];
    ASSERT_NE(argsort, nullptr);
    EXPECT_EQ(argsort->op, GGML_OP_ARGSORT);
    EXPECT_EQ(params_of<ggml_ext_argsort_params>(argsort).order, GGML_SORT_ORDER_DESC);
    EXPECT_EQ(top->nb[1], argsort->nb[1]);

    expect_node(ggml_top_k(ctx(), a, 4), GGML_OP_TOP_K, GGML_TYPE_I32, {4, 3, 2, 1}, {a});
    expect_error(ggml_top_k(ctx(), a, 11), "ggml_top_k", "k must be in 1..a.ne0");
    expect_error(ggml_argsort_top_k(ctx(), a, 0), "ggml_argsort_top_k", "k must be in 1..a.ne0");
    expect_error(ggml_argsort(ctx(), a, static_cast<ggml_sort_order>(5)), "ggml_argsort",
                 "unknown sort order");
}

TEST_F(OpsReduce, CrossEntropyLoss) {
    ggml_tensor *logits = f32(6, 4), *labels = f32(6, 4), *grad = f32(1);
    expect_node(ggml_cross_entropy_loss(ctx(), logits, labels), GGML_OP_CROSS_ENTROPY_LOSS, GGML_TYPE_F32,
                {1, 1, 1, 1}, {logits, labels});
    expect_node(ggml_cross_entropy_loss_back(ctx(), grad, logits, labels), GGML_OP_CROSS_ENTROPY_LOSS_BACK,
                GGML_TYPE_F32, {6, 4, 1, 1}, {grad, logits, labels});
    expect_error(ggml_cross_entropy_loss(ctx(), logits, f32(6)), "ggml_cross_entropy_loss", "the same shape");
    expect_error(ggml_cross_entropy_loss_back(ctx(), f32(2), logits, labels), "ggml_cross_entropy_loss_back",
                 "one element");
}

// The validation errors the tests above do not reach.
TEST_F(OpsReduce, RejectsOperandsTheKernelsCannotTake) {
    ggml_tensor * i32 = tensor(GGML_TYPE_I32, 6, 2);
    expect_error(ggml_argsort(ctx(), i32, GGML_SORT_ORDER_ASC), "ggml_argsort", "a must be f32, f16 or bf16");
    expect_error(ggml_top_k(ctx(), i32, 2), "ggml_top_k", "a must be f32, f16 or bf16");
    expect_error(ggml_cross_entropy_loss(ctx(), f32(6, 2), tensor(GGML_TYPE_F16, 6, 2)),
                 "ggml_cross_entropy_loss", "one float type");
    expect_error(ggml_cross_entropy_loss_back(ctx(), f32(1), f32(6, 2), f32(6, 3)),
                 "ggml_cross_entropy_loss_back", "the same shape");
}

}  // namespace
