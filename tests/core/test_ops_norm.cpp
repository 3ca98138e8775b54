// Constructors of the normalisation family added for ggml's API: ggml_group_norm_inplace and
// ggml_l2_norm_inplace (computed on the CPU over a) and ggml_rms_norm_back.
#include <cmath>

#include "core/ops_test_support.h"

namespace {

using ggx::test::compute_on_cpu;
using ggx::test::ramp;

class OpsNorm : public ggx::test::OpsTest {};

TEST_F(OpsNorm, InplaceNormsAreViewsOfA) {
    ggml_tensor * a = f32(4, 2, 6);
    ggml_tensor * g = ggml_group_norm_inplace(ctx(), a, 3, 1e-5f);
    expect_node(g, GGML_OP_GROUP_NORM, GGML_TYPE_F32, {4, 2, 6, 1}, {a});
    expect_view_of(g, a);
    EXPECT_EQ(params_of<ggml_ext_group_norm_params>(g).n_groups, 3);
    EXPECT_EQ(params_of<ggml_ext_group_norm_params>(g).eps, 1e-5f);
    ggml_tensor * l2 = ggml_l2_norm_inplace(ctx(), a, 1e-6f);
    expect_node(l2, GGML_OP_L2_NORM, GGML_TYPE_F32, {4, 2, 6, 1}, {a});
    expect_view_of(l2, a);
    EXPECT_EQ(params_of<ggml_ext_norm_params>(l2).eps, 1e-6f);
    expect_error(ggml_group_norm_inplace(ctx(), a, 7, 1e-5f), "ggml_group_norm_inplace",
                 "n_groups must be in 1..ne2");
    expect_error(ggml_l2_norm_inplace(ctx(), a, -1.0f), "ggml_l2_norm_inplace",
                 "eps must be finite and >= 0");
}

TEST_F(OpsNorm, L2NormInplaceComputes) {
    ggml_tensor * a = f32(2, 2);
    const std::vector<float> y =
        compute_on_cpu(ctx(), ggml_l2_norm_inplace(ctx(), a, 1e-12f), {{a, {3, 4, 0, 2}}});
    ASSERT_EQ(y.size(), 4u);
    EXPECT_NEAR(y[0], 0.6f, 1e-6f);
    EXPECT_NEAR(y[1], 0.8f, 1e-6f);
    EXPECT_NEAR(y[2], 0.0f, 1e-6f);
    EXPECT_NEAR(y[3], 1.0f, 1e-6f);
}

TEST_F(OpsNorm, GroupNormInplaceComputes) {
    ggml_tensor * a = f32(2, 1, 2);  // two channels of two values, one group each
    const std::vector<float> y =
        compute_on_cpu(ctx(), ggml_group_norm_inplace(ctx(), a, 2, 0.0f), {{a, {1, 3, 10, 14}}});
    const std::vector<float> expected = {-1, 1, -1, 1};
    ASSERT_EQ(y.size(), expected.size());
    for (size_t i = 0; i < y.size(); ++i)
        EXPECT_NEAR(y[i], expected[i], 1e-5f) << i;
}

TEST_F(OpsNorm, RmsNormBack) {
    ggml_tensor *x = f32(8, 3), *dy = f32(8, 3);
    ggml_tensor * r = ggml_rms_norm_back(ctx(), x, dy, 1e-6f);
    expect_node(r, GGML_OP_RMS_NORM_BACK, GGML_TYPE_F32, {8, 3, 1, 1}, {x, dy});
    EXPECT_EQ(params_of<ggml_ext_norm_params>(r).eps, 1e-6f);
    EXPECT_TRUE(ggml_backend_supports_op(ggx::test::cpu_backend(), r));
    expect_error(ggml_rms_norm_back(ctx(), x, f32(8), 1e-6f), "ggml_rms_norm_back",
                 "b must be f32 of a's shape");
    expect_error(ggml_rms_norm_back(ctx(), tensor(GGML_TYPE_F16, 8, 3), dy, 1e-6f), "ggml_rms_norm_back",
                 "a must be f32");
}

}  // namespace
