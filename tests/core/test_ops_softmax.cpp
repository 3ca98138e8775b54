// Constructors of the softmax family added for ggml's API: ggml_soft_max_ext_inplace (computed on the
// CPU), ggml_soft_max_add_sinks (a softmax with sinks is refused by the CPU; misuse aborts),
// ggml_soft_max_ext_back and ggml_diag_mask_inf/zero with their in-place forms.
#include <cmath>
#include <limits>

#include "core/ops_test_support.h"

namespace {

using ggx::test::compute_on_cpu;
using ggx::test::cpu_backend;

class OpsSoftmax : public ggx::test::OpsTest {};

TEST_F(OpsSoftmax, SoftMaxExtInplace) {
    ggml_tensor *a = f32(3, 2), *mask = f32(3, 2);
    ggml_tensor * r = ggml_soft_max_ext_inplace(ctx(), a, mask, 0.5f, 0.0f);
    expect_node(r, GGML_OP_SOFT_MAX, GGML_TYPE_F32, {3, 2, 1, 1}, {a, mask});
    expect_view_of(r, a);
    EXPECT_EQ(params_of<ggml_ext_soft_max_params>(r).scale, 0.5f);
    expect_error(ggml_soft_max_ext_inplace(ctx(), a, f32(2, 2), 1.0f, 0.0f), "ggml_soft_max_ext_inplace",
                 "mask must be [a.ne0, >= a.ne1, ...]");

    const std::vector<float> y =
        compute_on_cpu(ctx(), r, {{a, {0, 2, 4, 1, 1, 1}}, {mask, {0, 0, 0, 0, 0, 0}}});
    const float e1 = std::exp(1.0f), e2 = std::exp(2.0f), sum = 1 + e1 + e2;
    const std::vector<float> expected = {1 / sum, e1 / sum, e2 / sum, 1.0f / 3, 1.0f / 3, 1.0f / 3};
    ASSERT_EQ(y.size(), expected.size());
    for (size_t i = 0; i < y.size(); ++i)
        EXPECT_NEAR(y[i], expected[i], 1e-6f) << i;
}

TEST_F(OpsSoftmax, SinksBecomeSrc2AndJoinEachRowsSum) {
    ggml_tensor * a = f32(3, 1, 2);
    ggml_tensor * r = ggml_soft_max_ext(ctx(), a, nullptr, 1.0f, 0.0f);
    ggml_tensor * sinks = f32(2);
    ggml_soft_max_add_sinks(r, sinks);
    EXPECT_EQ(r->src[2], sinks);
    ASSERT_TRUE(ggml_backend_supports_op(cpu_backend(), r));
    // Head 0's sink ln 3 adds 3 to the sum 1 + 1 + 1; head 1's -inf sink adds nothing.
    const std::vector<float> y = compute_on_cpu(
        ctx(), r,
        {{a, {0, 0, 0, 0, 0, 0}}, {sinks, {std::log(3.0f), -std::numeric_limits<float>::infinity()}}});
    const std::vector<float> expected = {1.0f / 6, 1.0f / 6, 1.0f / 6, 1.0f / 3, 1.0f / 3, 1.0f / 3};
    ASSERT_EQ(y.size(), expected.size());
    for (size_t i = 0; i < y.size(); ++i)
        EXPECT_NEAR(y[i], expected[i], 1e-6f) << i;
    ggml_soft_max_add_sinks(r, nullptr);
    EXPECT_EQ(r->src[2], nullptr);
}

TEST_F(OpsSoftmax, SinksMisuseAborts) {
    ggml_tensor * a = f32(5, 3, 4);
    ggml_tensor * r = ggml_soft_max(ctx(), a);
    EXPECT_DEATH(ggml_soft_max_add_sinks(r, f32(3)),
                 "ggml_soft_max_add_sinks: sinks must have one value per head");
    EXPECT_DEATH(ggml_soft_max_add_sinks(r, tensor(GGML_TYPE_F16, 4)), "sinks must be an f32 vector");
    EXPECT_DEATH(ggml_soft_max_add_sinks(a, f32(4)), "a must be a soft_max node");
}

TEST_F(OpsSoftmax, SoftMaxExtBack) {
    ggml_tensor *dy = f32(6, 2), *y = f32(6, 2);
    ggml_tensor * r = ggml_soft_max_ext_back(ctx(), dy, y, 0.25f, 1.0f);
    expect_node(r, GGML_OP_SOFT_MAX_BACK, GGML_TYPE_F32, {6, 2, 1, 1}, {dy, y});
    EXPECT_EQ(r->view_src, nullptr);
    const auto p = params_of<ggml_ext_soft_max_params>(r);
    EXPECT_EQ(p.scale, 0.25f);
    EXPECT_EQ(p.max_bias, 1.0f);
    expect_view_of(ggml_soft_max_ext_back_inplace(ctx(), dy, y, 1.0f, 0.0f), dy);
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), r));
    expect_error(ggml_soft_max_ext_back(ctx(), dy, f32(6), 1.0f, 0.0f), "ggml_soft_max_ext_back",
                 "the same shape");
}

TEST_F(OpsSoftmax, DiagMasks) {
    ggml_tensor * a = f32(4, 4, 2);
    ggml_tensor * inf = ggml_diag_mask_inf(ctx(), a, 1);
    expect_node(inf, GGML_OP_DIAG_MASK_INF, GGML_TYPE_F32, {4, 4, 2, 1}, {a});
    EXPECT_EQ(params_of<ggml_ext_diag_mask_params>(inf).n_past, 1);
    EXPECT_EQ(inf->view_src, nullptr);
    ggml_tensor * zero = ggml_diag_mask_zero(ctx(), a, 0);
    expect_node(zero, GGML_OP_DIAG_MASK_ZERO, GGML_TYPE_F32, {4, 4, 2, 1}, {a});
    expect_view_of(ggml_diag_mask_inf_inplace(ctx(), a, 2), a);
    expect_view_of(ggml_diag_mask_zero_inplace(ctx(), a, 2), a);
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), zero));
    expect_error(ggml_diag_mask_inf(ctx(), a, -1), "ggml_diag_mask_inf", "n_past must be >= 0");
    expect_error(ggml_diag_mask_zero(ctx(), tensor(GGML_TYPE_I32, 4, 4), 0), "ggml_diag_mask_zero",
                 "a must be f32, f16 or bf16");
}

}  // namespace
