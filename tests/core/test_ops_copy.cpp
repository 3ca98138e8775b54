// Constructors of the copy family added for ggml's API: ggml_cont_1d/2d/3d (ggml_cont_4d with the
// omitted sizes 1, computed on the CPU) and ggml_dup_inplace.
#include "core/ops_test_support.h"

namespace {

using ggx::test::compute_on_cpu;
using ggx::test::ramp;

class OpsCopy : public ggx::test::OpsTest {};

TEST_F(OpsCopy, ContNdReshapesThroughCont4d) {
    ggml_tensor * a = ggml_transpose(ctx(), f32(4, 3, 2));
    expect_node(ggml_cont_1d(ctx(), a, 24), GGML_OP_CONT, GGML_TYPE_F32, {24, 1, 1, 1}, {a});
    expect_node(ggml_cont_2d(ctx(), a, 6, 4), GGML_OP_CONT, GGML_TYPE_F32, {6, 4, 1, 1}, {a});
    expect_node(ggml_cont_3d(ctx(), a, 2, 3, 4), GGML_OP_CONT, GGML_TYPE_F32, {2, 3, 4, 1}, {a});
    expect_error(ggml_cont_2d(ctx(), a, 5, 5), "ggml_cont_4d", "element counts differ");
    EXPECT_EQ(ggml_cont_1d(ctx(), nullptr, 1), nullptr);
}

TEST_F(OpsCopy, Cont2dOfATransposeComputes) {
    ggml_tensor * a = f32(3, 2);
    ggml_tensor * r = ggml_cont_2d(ctx(), ggml_transpose(ctx(), a), 3, 2);
    // a = [[0 1 2] [3 4 5]] (rows); its transpose read row by row: 0 3 1 4 2 5.
    EXPECT_EQ(compute_on_cpu(ctx(), r, {{a, ramp(6, 0, 1)}}), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST_F(OpsCopy, DupInplaceIsAViewOfA) {
    ggml_tensor * a = tensor(GGML_TYPE_F16, 4, 3);
    ggml_tensor * r = ggml_dup_inplace(ctx(), a);
    expect_node(r, GGML_OP_DUP, GGML_TYPE_F16, {4, 3, 1, 1}, {a});
    expect_view_of(r, a);
    EXPECT_EQ(ggml_dup_inplace(ctx(), nullptr), nullptr);
    EXPECT_EQ(ggml_get_error(ctx()), nullptr);
}

TEST_F(OpsCopy, DupInplaceComputes) {
    ggml_tensor * a = f32(5);
    EXPECT_EQ(compute_on_cpu(ctx(), ggml_dup_inplace(ctx(), a), {{a, ramp(5, 1, 2)}}), ramp(5, 1, 2));
}

}  // namespace
