// The typed op parameters (include/ggml-ext-params.h): every constructor that records parameters
// records its arguments in the op's struct, in ggml's slot order, and ggml_ext_get_op_params reads
// them back; it refuses a node of another op, an op without parameters, a wrong size and NULL.
#include <ggml-ext-params.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cstring>

#include "core/op_params.h"
#include "core/ops_test_support.h"

namespace {

class OpParams : public ggx::test::OpsTest {
protected:
    // The parameters of node read through the public accessor; also checks that they are the
    // leading bytes of op_params (the slot layout programs written for ggml read).
    template <class P>
    P read(const ggml_tensor * node) const {
        EXPECT_NE(node, nullptr) << ggml_get_error(ctx());
        P p{};
        EXPECT_TRUE(node && ggml_ext_get_op_params(node, node->op, &p, sizeof p));
        EXPECT_TRUE(node && std::memcmp(&p, node->op_params, sizeof p) == 0);
        return p;
    }
};

TEST_F(OpParams, ElementwiseOpsRecordTheirArguments) {
    const auto scale = read<ggml_ext_scale_params>(ggml_scale_bias(ctx(), f32(4), 2.5f, -1.0f));
    EXPECT_EQ(scale.scale, 2.5f);
    EXPECT_EQ(scale.bias, -1.0f);
    EXPECT_EQ(read<ggml_ext_scale_params>(ggml_scale(ctx(), f32(4), 3.0f)).bias, 0.0f);
    const auto clamp = read<ggml_ext_clamp_params>(ggml_clamp(ctx(), f32(4), -0.5f, 0.75f));
    EXPECT_EQ(clamp.min, -0.5f);
    EXPECT_EQ(clamp.max, 0.75f);
    EXPECT_EQ(read<ggml_ext_unary_params>(ggml_gelu(ctx(), f32(4))).op, GGML_UNARY_OP_GELU);
    const auto glu = read<ggml_ext_glu_params>(ggml_geglu_swapped(ctx(), f32(8)));
    EXPECT_EQ(glu.op, GGML_GLU_OP_GEGLU);
    EXPECT_EQ(glu.swapped, 1);
    EXPECT_EQ(read<ggml_ext_glu_params>(ggml_swiglu_split(ctx(), f32(4), f32(4))).swapped, 0);
}

TEST_F(OpParams, ShapeOpsRecordTheirArguments) {
    EXPECT_EQ(read<ggml_ext_concat_params>(ggml_concat(ctx(), f32(2, 3), f32(2, 5), 1)).dim, 1);
    const auto pad = read<ggml_ext_pad_params>(ggml_pad_ext(ctx(), f32(2, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8));
    for (int d = 0; d < GGML_MAX_DIMS; ++d) {
        EXPECT_EQ(pad.pads[d][0], 2 * d + 1);
        EXPECT_EQ(pad.pads[d][1], 2 * d + 2);
    }
    EXPECT_EQ(read<ggml_ext_upscale_params>(ggml_upscale(ctx(), f32(2, 2), 2, GGML_SCALE_MODE_NEAREST)).mode,
              GGML_SCALE_MODE_NEAREST);
    const auto embedding = read<ggml_ext_timestep_embedding_params>(ggml_timestep_embedding(ctx(), f32(3), 8, 100));
    EXPECT_EQ(embedding.dim, 8);
    EXPECT_EQ(embedding.max_period, 100);
    const auto permute = read<ggml_ext_permute_params>(ggml_permute(ctx(), f32(2, 3, 4, 5), 1, 2, 0, 3));
    EXPECT_EQ(permute.axes[0], 1);
    EXPECT_EQ(permute.axes[1], 2);
    EXPECT_EQ(permute.axes[2], 0);
    EXPECT_EQ(permute.axes[3], 3);
    const auto transpose = read<ggml_ext_permute_params>(ggml_transpose(ctx(), f32(2, 3)));
    EXPECT_EQ(transpose.axes[0], 1);
    EXPECT_EQ(transpose.axes[1], 0);
}

TEST_F(OpParams, NormsSoftmaxRopeAttentionAndIm2colRecordTheirArguments) {
    EXPECT_EQ(read<ggml_ext_norm_params>(ggml_rms_norm(ctx(), f32(4), 1e-6f)).eps, 1e-6f);
    EXPECT_EQ(read<ggml_ext_norm_params>(ggml_norm_inplace(ctx(), f32(4), 1e-5f)).eps, 1e-5f);
    EXPECT_EQ(read<ggml_ext_norm_params>(ggml_l2_norm(ctx(), f32(4), 1e-4f)).eps, 1e-4f);
    const auto group = read<ggml_ext_group_norm_params>(ggml_group_norm(ctx(), f32(2, 2, 6), 3, 1e-3f));
    EXPECT_EQ(group.n_groups, 3);
    EXPECT_EQ(group.eps, 1e-3f);
    const auto soft_max = read<ggml_ext_soft_max_params>(ggml_soft_max_ext(ctx(), f32(4, 2), nullptr, 0.5f, 8.0f));
    EXPECT_EQ(soft_max.scale, 0.5f);
    EXPECT_EQ(soft_max.max_bias, 8.0f);

    ggml_tensor * pos = ggml_new_tensor_1d(ctx(), GGML_TYPE_I32, 3);
    const auto rope = read<ggml_ext_rope_params>(ggml_rope_ext(ctx(), f32(8, 2, 3), pos, nullptr, 6,
                                                               GGML_ROPE_TYPE_NEOX, 4096, 10000.0f, 0.5f, 1.0f,
                                                               0.9f, 32.0f, 2.0f));
    EXPECT_EQ(rope.unused_n_past, 0);
    EXPECT_EQ(rope.n_dims, 6);
    EXPECT_EQ(rope.mode, GGML_ROPE_TYPE_NEOX);
    EXPECT_EQ(rope.unused_n_ctx, 0);
    EXPECT_EQ(rope.n_ctx_orig, 4096);
    EXPECT_EQ(rope.freq_base, 10000.0f);
    EXPECT_EQ(rope.freq_scale, 0.5f);
    EXPECT_EQ(rope.ext_factor, 1.0f);
    EXPECT_EQ(rope.attn_factor, 0.9f);
    EXPECT_EQ(rope.beta_fast, 32.0f);
    EXPECT_EQ(rope.beta_slow, 2.0f);

    const auto attn = read<ggml_ext_flash_attn_ext_params>(
        ggml_flash_attn_ext(ctx(), f32(8, 4, 2), f32(8, 6, 2), f32(8, 6, 2), nullptr, 0.125f, 0.0f, 30.0f));
    EXPECT_EQ(attn.scale, 0.125f);
    EXPECT_EQ(attn.max_bias, 0.0f);
    EXPECT_EQ(attn.logit_softcap, 30.0f);

    const auto im2col = read<ggml_ext_im2col_params>(
        ggml_im2col(ctx(), f32(3, 3, 2, 4), f32(9, 8, 2, 1), 2, 1, 1, 0, 1, 2, true, GGML_TYPE_F32));
    EXPECT_EQ(im2col.s0, 2);
    EXPECT_EQ(im2col.s1, 1);
    EXPECT_EQ(im2col.p0, 1);
    EXPECT_EQ(im2col.p1, 0);
    EXPECT_EQ(im2col.d0, 1);
    EXPECT_EQ(im2col.d1, 2);
    EXPECT_EQ(im2col.is_2d, 1);
}

TEST_F(OpParams, TheAccessorRefusesMismatchesAndLeavesTheStructUntouched) {
    ggml_tensor * norm = ggml_rms_norm(ctx(), f32(4), 1e-6f);
    ggml_ext_norm_params eps{42.0f};
    // A node of another op than the one named.
    EXPECT_FALSE(ggml_ext_get_op_params(norm, GGML_OP_NORM, &eps, sizeof eps));
    // A size that is not the op's struct's.
    EXPECT_FALSE(ggml_ext_get_op_params(norm, GGML_OP_RMS_NORM, &eps, sizeof eps + 4));
    EXPECT_FALSE(ggml_ext_get_op_params(norm, GGML_OP_RMS_NORM, &eps, 0));
    // No node.
    EXPECT_FALSE(ggml_ext_get_op_params(nullptr, GGML_OP_RMS_NORM, &eps, sizeof eps));
    EXPECT_EQ(eps.eps, 42.0f);
    // Ops that record no parameters.
    int32_t word = 7;
    EXPECT_FALSE(ggml_ext_get_op_params(ggml_add(ctx(), f32(4), f32(4)), GGML_OP_ADD, &word, sizeof word));
    EXPECT_FALSE(ggml_ext_get_op_params(f32(4), GGML_OP_NONE, &word, sizeof word));
    EXPECT_EQ(word, 7);
}

// Every op that records a struct has one of the public header's sizes, within op_params.
TEST(OpParamsTable, SizesMatchThePublicStructs) {
    EXPECT_EQ(ggx::core::op_params_size(GGML_OP_ROPE), sizeof(ggml_ext_rope_params));
    EXPECT_EQ(ggx::core::op_params_size(GGML_OP_PAD), sizeof(ggml_ext_pad_params));
    EXPECT_EQ(ggx::core::op_params_size(GGML_OP_L2_NORM), sizeof(ggml_ext_norm_params));
    EXPECT_EQ(ggx::core::op_params_size(GGML_OP_ADD), 0u);
    EXPECT_EQ(ggx::core::op_params_size(GGML_OP_CUSTOM), 0u);
    for (int op = 0; op < GGML_OP_COUNT; ++op)
        EXPECT_LE(ggx::core::op_params_size(static_cast<ggml_op>(op)), static_cast<size_t>(GGML_MAX_OP_PARAMS));
    static_assert(ggx::core::op_takes<ggml_ext_norm_params>(GGML_OP_RMS_NORM));
    static_assert(!ggx::core::op_takes<ggml_ext_norm_params>(GGML_OP_GROUP_NORM));
}

}  // namespace
