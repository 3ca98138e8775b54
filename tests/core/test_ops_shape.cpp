// Constructors of the shape family added for ggml's API: REPEAT_4D, REPEAT_BACK, circular PAD,
// PAD_REFLECT_1D, ROLL, INTERPOLATE, ARANGE, WIN_PART/UNPART, GET_REL_POS, ADD_REL_POS, TRI, DIAG,
// SOLVE_TRI: what they record, their errors, and a small CPU result each (ggx-ops checks the rest).
#include "core/ops_test_support.h"

namespace {

using ggx::test::compute_on_cpu;
using ggx::test::cpu_backend;
using ggx::test::ramp;

class OpsShape : public ggx::test::OpsTest {};

TEST_F(OpsShape, Repeat4dTilesA) {
    ggml_tensor * a = f32(2, 1);
    ggml_tensor * r = ggml_repeat_4d(ctx(), a, 4, 2, 1, 1);
    expect_node(r, GGML_OP_REPEAT, GGML_TYPE_F32, {4, 2, 1, 1}, {a});
    EXPECT_EQ(compute_on_cpu(ctx(), r, {{a, {1, 2}}}), (std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2}));
    expect_error(ggml_repeat_4d(ctx(), a, 3, 1, 1, 1), "ggml_repeat_4d", "cannot be tiled");
}

TEST_F(OpsShape, RepeatBack) {
    ggml_tensor *a = f32(4, 6), *b = f32(2, 3);
    ggml_tensor * r = ggml_repeat_back(ctx(), a, b);
    expect_node(r, GGML_OP_REPEAT_BACK, GGML_TYPE_F32, {2, 3, 1, 1}, {a});
    expect_error(ggml_repeat_back(ctx(), a, f32(3)), "ggml_repeat_back", "cannot be tiled");
    ggml_tensor * row = f32(6);
    EXPECT_EQ(compute_on_cpu(ctx(), ggml_repeat_back(ctx(), row, f32(2)), {{row, {1, 2, 3, 4, 5, 6}}}),
              (std::vector<float>{9, 12}));
}

TEST_F(OpsShape, CircularPadWrapsAround) {
    ggml_tensor * a = f32(4, 3);
    ggml_tensor * r = ggml_pad_ext_circular(ctx(), a, 1, 2, 0, 3, 0, 0, 0, 0);
    expect_node(r, GGML_OP_PAD, GGML_TYPE_F32, {7, 6, 1, 1}, {a});
    const auto p = params_of<ggml_ext_pad_params>(r);
    EXPECT_EQ(p.pads[0][0], 1);
    EXPECT_EQ(p.pads[0][1], 2);
    EXPECT_EQ(p.pads[1][1], 3);
    EXPECT_EQ(p.circular, 1);
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), r));
    ggml_tensor * c = ggml_pad_circular(ctx(), a, 1, 1, 0, 0);
    expect_node(c, GGML_OP_PAD, GGML_TYPE_F32, {5, 4, 1, 1}, {a});
    EXPECT_EQ(params_of<ggml_ext_pad_params>(c).pads[0][0], 0);
    EXPECT_EQ(params_of<ggml_ext_pad_params>(ggml_pad(ctx(), a, 1, 0, 0, 0)).circular, 0);
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), ggml_pad(ctx(), a, 1, 0, 0, 0)));
    expect_error(ggml_pad_circular(ctx(), a, 5, 0, 0, 0), "ggml_pad_circular", "paddings must be in 0..ne");
    ggml_tensor * row = f32(3);
    EXPECT_EQ(
        compute_on_cpu(ctx(), ggml_pad_ext_circular(ctx(), row, 2, 1, 0, 0, 0, 0, 0, 0), {{row, {1, 2, 3}}}),
        (std::vector<float>{2, 3, 1, 2, 3, 1}));
}

TEST_F(OpsShape, PadReflectAndRoll) {
    ggml_tensor * a = f32(5, 2);
    ggml_tensor * r = ggml_pad_reflect_1d(ctx(), a, 2, 1);
    expect_node(r, GGML_OP_PAD_REFLECT_1D, GGML_TYPE_F32, {8, 2, 1, 1}, {a});
    EXPECT_EQ(params_of<ggml_ext_pad_reflect_1d_params>(r).p0, 2);
    EXPECT_EQ(params_of<ggml_ext_pad_reflect_1d_params>(r).p1, 1);
    expect_error(ggml_pad_reflect_1d(ctx(), a, 5, 0), "ggml_pad_reflect_1d", "p0 and p1 must be in 0..ne0-1");
    ggml_tensor * row = f32(4);
    EXPECT_EQ(compute_on_cpu(ctx(), ggml_pad_reflect_1d(ctx(), row, 1, 1), {{row, {1, 2, 3, 4}}}),
              (std::vector<float>{2, 1, 2, 3, 4, 3}));

    ggml_tensor * roll = ggml_roll(ctx(), a, -4, 1, 0, 0);
    expect_node(roll, GGML_OP_ROLL, GGML_TYPE_F32, {5, 2, 1, 1}, {a});
    EXPECT_EQ(params_of<ggml_ext_roll_params>(roll).shifts[0], -4);
    EXPECT_EQ(params_of<ggml_ext_roll_params>(roll).shifts[1], 1);
    expect_error(ggml_roll(ctx(), a, 5, 0, 0, 0), "ggml_roll", "|shift_i| must be < ne_i");
    ggml_tensor * ring = f32(4);  // compute_on_cpu frees its buffer: a fresh input per computation
    EXPECT_EQ(compute_on_cpu(ctx(), ggml_roll(ctx(), ring, 1, 0, 0, 0), {{ring, {1, 2, 3, 4}}}),
              (std::vector<float>{4, 1, 2, 3}));
}

TEST_F(OpsShape, InterpolateRecordsModeAndFlags) {
    ggml_tensor * a = f32(2, 2);
    const uint32_t bilinear = uint32_t{GGML_SCALE_MODE_BILINEAR} | uint32_t{GGML_SCALE_FLAG_ALIGN_CORNERS};
    ggml_tensor * r = ggml_interpolate(ctx(), a, 3, 5, 1, 1, bilinear);
    expect_node(r, GGML_OP_UPSCALE, GGML_TYPE_F32, {3, 5, 1, 1}, {a});
    EXPECT_EQ(static_cast<uint32_t>(params_of<ggml_ext_upscale_params>(r).mode), bilinear);
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), r));
    expect_error(ggml_interpolate(ctx(), a, 3, 5, 1, 1, 7), "ggml_interpolate", "unknown mode or flag");
    expect_error(ggml_interpolate(ctx(), a, 0, 5, 1, 1, 0), "ggml_interpolate", "target sizes must be >= 1");
    const uint32_t bicubic_antialias =
        uint32_t{GGML_SCALE_MODE_BICUBIC} | uint32_t{GGML_SCALE_FLAG_ANTIALIAS};
    expect_error(ggml_interpolate(ctx(), a, 3, 5, 1, 1, bicubic_antialias), "ggml_interpolate",
                 "antialias needs bilinear mode");
    expect_error(ggml_interpolate(ctx(), f32(0, 2), 3, 5, 1, 1, 0), "ggml_interpolate",
                 "a must not be empty");
    expect_error(ggml_upscale_ext(ctx(), a, 3, 5, 1, 1, GGML_SCALE_MODE_COUNT), "ggml_upscale_ext",
                 "unknown mode or flag");

    ggml_tensor * nearest = ggml_interpolate(ctx(), a, 4, 2, 1, 1, GGML_SCALE_MODE_NEAREST);
    EXPECT_EQ(compute_on_cpu(ctx(), nearest, {{a, {1, 2, 3, 4}}}),
              (std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4}));

    // Bilinear with align corners: [1 2] -> [1 1.5 2] per row; half-pixel centres: [1 1.25 1.75 2].
    ggml_tensor * row = f32(2);
    EXPECT_EQ(compute_on_cpu(ctx(), ggml_interpolate(ctx(), row, 3, 1, 1, 1, bilinear), {{row, {1, 2}}}),
              (std::vector<float>{1, 1.5f, 2}));
    ggml_tensor * centred = f32(2);
    EXPECT_EQ(compute_on_cpu(ctx(), ggml_interpolate(ctx(), centred, 4, 1, 1, 1, GGML_SCALE_MODE_BILINEAR),
                             {{centred, {1, 2}}}),
              (std::vector<float>{1, 1.25f, 1.75f, 2}));
    // Bicubic, a = -0.75, half-pixel centres: the weights at distances 1/4 and 3/4 are dyadic.
    ggml_tensor * cubic = f32(2);
    EXPECT_EQ(compute_on_cpu(ctx(), ggml_interpolate(ctx(), cubic, 4, 1, 1, 1, GGML_SCALE_MODE_BICUBIC),
                             {{cubic, {1, 2}}}),
              (std::vector<float>{0.89453125f, 1.2265625f, 1.7734375f, 2.10546875f}));
    // Antialiased halving: a triangle of half-width 2 around 1 and 3 (in source pixel units).
    ggml_tensor * wide = f32(4);
    const uint32_t antialias = uint32_t{GGML_SCALE_MODE_BILINEAR} | uint32_t{GGML_SCALE_FLAG_ANTIALIAS};
    const auto halved =
        compute_on_cpu(ctx(), ggml_interpolate(ctx(), wide, 2, 1, 1, 1, antialias), {{wide, {1, 2, 3, 4}}});
    ASSERT_EQ(halved.size(), 2u);
    EXPECT_NEAR(halved[0], 3.0f / 1.75f, 1e-6f);
    EXPECT_NEAR(halved[1], 5.75f / 1.75f, 1e-6f);
}

TEST_F(OpsShape, Arange) {
    ggml_tensor * r = ggml_arange(ctx(), 1.0f, 4.0f, 0.5f);
    expect_node(r, GGML_OP_ARANGE, GGML_TYPE_F32, {6, 1, 1, 1}, {});
    const auto p = params_of<ggml_ext_arange_params>(r);
    EXPECT_EQ(p.start, 1.0f);
    EXPECT_EQ(p.stop, 4.0f);
    EXPECT_EQ(p.step, 0.5f);
    expect_error(ggml_arange(ctx(), 2.0f, 1.0f, 1.0f), "ggml_arange", "stop must be > start");
    expect_error(ggml_arange(ctx(), 0.0f, 1.0f, 0.0f), "ggml_arange", "step must be > 0");
    EXPECT_EQ(compute_on_cpu(ctx(), r, {}), (std::vector<float>{1, 1.5f, 2, 2.5f, 3, 3.5f}));
}

TEST_F(OpsShape, Windows) {
    ggml_tensor * a = f32(8, 10, 7);
    ggml_tensor * part = ggml_win_part(ctx(), a, 4);
    expect_node(part, GGML_OP_WIN_PART, GGML_TYPE_F32, {8, 4, 4, 6}, {a});
    const auto p = params_of<ggml_ext_win_part_params>(part);
    EXPECT_EQ(p.npx, 3);
    EXPECT_EQ(p.npy, 2);
    EXPECT_EQ(p.w, 4);
    ggml_tensor * image = f32(1, 3, 1);  // C = 1, W = 3, H = 1 in 2 x 2 windows: two, zero-padded
    EXPECT_EQ(compute_on_cpu(ctx(), ggml_win_part(ctx(), image, 2), {{image, {1, 2, 3}}}),
              (std::vector<float>{1, 2, 0, 0, 3, 0, 0, 0}));
    ggml_tensor * unpart = ggml_win_unpart(ctx(), part, 10, 7, 4);
    expect_node(unpart, GGML_OP_WIN_UNPART, GGML_TYPE_F32, {8, 10, 7, 1}, {part});
    EXPECT_EQ(params_of<ggml_ext_win_unpart_params>(unpart).w, 4);
    expect_error(ggml_win_part(ctx(), f32(8, 10, 7, 2), 4), "ggml_win_part", "a must be 3-d");
    expect_error(ggml_win_unpart(ctx(), part, 20, 7, 4), "ggml_win_unpart", "windows of a w0 x h0 image");
}

TEST_F(OpsShape, RelativePositions) {
    ggml_tensor * table = tensor(GGML_TYPE_F16, 16, 7);
    expect_node(ggml_get_rel_pos(ctx(), table, 4, 4), GGML_OP_GET_REL_POS, GGML_TYPE_F16, {16, 4, 4, 1},
                {table});
    expect_error(ggml_get_rel_pos(ctx(), table, 4, 3), "ggml_get_rel_pos", "qh and kh must be equal");
    ggml_tensor * positions = f32(1, 3);  // r[0, k, q] = a[0, 1 - k + q]
    EXPECT_EQ(compute_on_cpu(ctx(), ggml_cast(ctx(), ggml_get_rel_pos(ctx(), positions, 2, 2), GGML_TYPE_F32),
                             {{positions, {10, 20, 30}}}),
              (std::vector<float>{20, 10, 30, 20}));

    ggml_tensor *a = f32(9, 6, 2), *pw = f32(3, 2, 3, 2), *ph = f32(3, 2, 3, 2);
    ggml_tensor * r = ggml_add_rel_pos(ctx(), a, pw, ph);
    expect_node(r, GGML_OP_ADD_REL_POS, GGML_TYPE_F32, {9, 6, 2, 1}, {a, pw, ph});
    EXPECT_EQ(params_of<ggml_ext_add_rel_pos_params>(r).inplace, 0);
    ggml_tensor * in = ggml_add_rel_pos_inplace(ctx(), a, pw, ph);
    expect_view_of(in, a);
    EXPECT_EQ(params_of<ggml_ext_add_rel_pos_params>(in).inplace, 1);
    expect_error(ggml_add_rel_pos(ctx(), a, pw, f32(3, 2, 3)), "ggml_add_rel_pos",
                 "pw and ph must have the same shape");
    expect_error(ggml_add_rel_pos(ctx(), f32(8, 6, 2), pw, ph), "ggml_add_rel_pos",
                 "pw must be [W, H, W, a.ne2]");
}

TEST_F(OpsShape, TriDiagSolveTri) {
    ggml_tensor * m = f32(4, 4, 3);
    ggml_tensor * tri = ggml_tri(ctx(), m, GGML_TRI_TYPE_LOWER);
    expect_node(tri, GGML_OP_TRI, GGML_TYPE_F32, {4, 4, 3, 1}, {m});
    EXPECT_EQ(params_of<ggml_ext_tri_params>(tri).type, GGML_TRI_TYPE_LOWER);
    expect_error(ggml_tri(ctx(), f32(4, 3), GGML_TRI_TYPE_UPPER), "ggml_tri", "a must be square");

    ggml_tensor * rows = f32(5, 1, 2);
    expect_node(ggml_diag(ctx(), rows), GGML_OP_DIAG, GGML_TYPE_F32, {5, 5, 2, 1}, {rows});
    expect_error(ggml_diag(ctx(), f32(5, 2)), "ggml_diag", "ne1 == 1");
    ggml_tensor * square = f32(2, 2);  // rows [1 2], [3 4]
    EXPECT_EQ(compute_on_cpu(ctx(), ggml_tri(ctx(), square, GGML_TRI_TYPE_LOWER), {{square, {1, 2, 3, 4}}}),
              (std::vector<float>{0, 0, 3, 0}));
    ggml_tensor * pair = f32(2);  // created after the computation above, whose buffer is gone
    EXPECT_EQ(compute_on_cpu(ctx(), ggml_diag(ctx(), pair), {{pair, {5, 6}}}),
              (std::vector<float>{5, 0, 0, 6}));

    ggml_tensor * b = f32(2, 4, 3);
    ggml_tensor * x = ggml_solve_tri(ctx(), m, b, true, true, false);
    expect_node(x, GGML_OP_SOLVE_TRI, GGML_TYPE_F32, {2, 4, 3, 1}, {m, b});
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), x));
    expect_error(ggml_solve_tri(ctx(), m, b, true, false, false), "ggml_solve_tri", "only left, lower");
    // [[2 0] [1 4]] x = [2 9] gives x = [1 2].
    ggml_tensor *l = f32(2, 2), *rhs = f32(1, 2);
    EXPECT_EQ(compute_on_cpu(ctx(), ggml_solve_tri(ctx(), l, rhs, true, true, false),
                             {{l, {2, 0, 1, 4}}, {rhs, {2, 9}}}),
              (std::vector<float>{1, 2}));
    expect_error(ggml_solve_tri(ctx(), m, f32(2, 3, 3), true, true, false), "ggml_solve_tri",
                 "b must be [k, a.ne1");
}

// What the constructors accept but the CPU cannot compute is refused, never computed wrongly.
TEST_F(OpsShape, CpuRefusesWhatItCannotCompute) {
    ggml_tensor * quantized_rows = tensor(GGML_TYPE_Q8_0, 32, 1);
    EXPECT_FALSE(ggml_backend_supports_op(cpu_backend(), ggml_diag(ctx(), quantized_rows)));
    ggml_tensor * a = f32(4, 4);
    ggml_tensor * r = ggml_interpolate(ctx(), a, 8, 8, 1, 1, GGML_SCALE_MODE_BILINEAR);
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), r));
    r->op_params[0] = GGML_SCALE_MODE_COUNT;  // an unknown mode
    EXPECT_FALSE(ggml_backend_supports_op(cpu_backend(), r));
    r->op_params[0] =
        static_cast<int32_t>(uint32_t{GGML_SCALE_MODE_BICUBIC} | uint32_t{GGML_SCALE_FLAG_ANTIALIAS});
    EXPECT_FALSE(ggml_backend_supports_op(cpu_backend(), r));
    ggml_tensor * tri = ggml_tri(ctx(), a, GGML_TRI_TYPE_LOWER);
    tri->op_params[0] = 4;  // not a ggml_tri_type
    EXPECT_FALSE(ggml_backend_supports_op(cpu_backend(), tri));
}

}  // namespace
