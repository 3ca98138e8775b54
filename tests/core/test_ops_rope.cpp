// Constructors of the rope family (docs/ops.md "Rotary position embedding"): the ggml_rope_* forms,
// ROPE_BACK, ggml_rope_set_offset and ggml_rope_yarn_corr_dims; the short forms computed on the CPU
// backend against a direct rotation.
#include <cmath>
#include <vector>

#include "support/op_test_util.h"
#include "support/test_util.h"

namespace {

using ggx::test::OpTest;
using RopeOps = OpTest;

int kSections[GGML_MROPE_SECTIONS] = {3, 2, 1, 0};

TEST_F(RopeOps, ShortFormsRecordGgmlsDefaults) {
    ggml_tensor *a = f32(10, 3, 5), *pos = i32(5);
    ggml_tensor * r = ggml_rope(ctx(), a, pos, 6, GGML_ROPE_TYPE_NEOX);
    expect_node(r, GGML_OP_ROPE, GGML_TYPE_F32, {10, 3, 5, 1}, {a, pos});
    const auto p = params_of<ggml_ext_rope_params>(r);
    EXPECT_EQ(p.n_dims, 6);
    EXPECT_EQ(p.mode, GGML_ROPE_TYPE_NEOX);
    EXPECT_EQ(p.n_ctx_orig, 0);
    EXPECT_EQ(p.freq_base, 10000.0f);
    EXPECT_EQ(p.freq_scale, 1.0f);
    EXPECT_EQ(p.ext_factor, 0.0f);
    EXPECT_EQ(p.attn_factor, 1.0f);
    EXPECT_EQ(p.beta_fast, 0.0f);
    EXPECT_EQ(p.n_offs, 0);
    EXPECT_EQ(r->view_src, nullptr);
}

TEST_F(RopeOps, InplaceFormsAreViewsOfA) {
    ggml_tensor *a = t(GGML_TYPE_F16, 8, 2, 3), *pos = i32(3), *ff = f32(4);
    expect_view_of(ggml_rope_inplace(ctx(), a, pos, 8, GGML_ROPE_TYPE_NORMAL), a);
    expect_view_of(ggml_rope_custom_inplace(ctx(), a, pos, 4, 0, 64, 500.0f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f),
                   a);
    expect_view_of(ggml_rope_ext_inplace(ctx(), a, pos, ff, 8, 0, 64, 500.0f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f),
                   a);
    ggml_tensor * mpos = i32(12);
    expect_view_of(ggml_rope_multi_inplace(ctx(), a, mpos, nullptr, 8, kSections, GGML_ROPE_TYPE_MROPE, 64,
                                           500.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f),
                   a);
    EXPECT_EQ(ggml_rope_inplace(ctx(), a, pos, 8, 0)->op, GGML_OP_ROPE);
}

TEST_F(RopeOps, CustomRecordsEveryArgument) {
    ggml_tensor *a = f32(8, 2, 3), *pos = i32(3);
    ggml_tensor * r =
        ggml_rope_custom(ctx(), a, pos, 4, GGML_ROPE_TYPE_NORMAL, 64, 500.0f, 0.5f, 0.25f, 1.5f, 16.0f, 2.0f);
    expect_node(r, GGML_OP_ROPE, GGML_TYPE_F32, {8, 2, 3, 1}, {a, pos});
    const auto p = params_of<ggml_ext_rope_params>(r);
    EXPECT_EQ(p.n_ctx_orig, 64);
    EXPECT_EQ(p.freq_base, 500.0f);
    EXPECT_EQ(p.freq_scale, 0.5f);
    EXPECT_EQ(p.ext_factor, 0.25f);
    EXPECT_EQ(p.attn_factor, 1.5f);
    EXPECT_EQ(p.beta_fast, 16.0f);
    EXPECT_EQ(p.beta_slow, 2.0f);
}

TEST_F(RopeOps, MultiTakesFourPositionsPerTokenAndSections) {
    ggml_tensor *a = f32(16, 2, 3), *pos = i32(12), *ff = f32(6);
    ggml_tensor * r = ggml_rope_multi(ctx(), a, pos, ff, 12, kSections, GGML_ROPE_TYPE_IMROPE, 128, 1e6f,
                                      1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
    expect_node(r, GGML_OP_ROPE, GGML_TYPE_F32, {16, 2, 3, 1}, {a, pos, ff});
    const auto p = params_of<ggml_ext_rope_params>(r);
    EXPECT_EQ(p.mode, GGML_ROPE_TYPE_IMROPE);
    for (int i = 0; i < GGML_MROPE_SECTIONS; ++i)
        EXPECT_EQ(p.sections[i], kSections[i]);
    EXPECT_EQ(r->op_params[11], 3);  // ggml's slots 11..14 hold the sections
    expect_node(ggml_rope_multi(ctx(), a, pos, nullptr, 8, kSections, GGML_ROPE_TYPE_VISION, 0, 1e4f, 1.0f,
                                0.0f, 1.0f, 0.0f, 0.0f),
                GGML_OP_ROPE, GGML_TYPE_F32, {16, 2, 3, 1}, {a, pos});
}

TEST_F(RopeOps, MultiRejectsMisuse) {
    ggml_tensor *a = f32(16, 2, 3), *pos = i32(12);
    expect_rejected(ggml_rope_multi(ctx(), a, i32(3), nullptr, 12, kSections, GGML_ROPE_TYPE_MROPE, 0, 1e4f,
                                    1.0f, 0.0f, 1.0f, 0.0f, 0.0f),
                    "ggml_rope_multi", "b must be an i32 vector of 4 * a.ne2 positions");
    expect_rejected(ggml_rope_multi(ctx(), a, pos, nullptr, 12, kSections, GGML_ROPE_TYPE_NEOX, 0, 1e4f, 1.0f,
                                    0.0f, 1.0f, 0.0f, 0.0f),
                    "ggml_rope_multi", "b must be an i32 vector of a.ne2 positions");
    expect_rejected(ggml_rope_multi(ctx(), a, pos, nullptr, 12, kSections, GGML_ROPE_TYPE_VISION, 0, 1e4f,
                                    1.0f, 0.0f, 1.0f, 0.0f, 0.0f),
                    "ggml_rope_multi", "VISION needs n_dims == a.ne0 / 2");
    int negative[GGML_MROPE_SECTIONS] = {2, -1, 0, 0};
    expect_rejected(ggml_rope_multi(ctx(), a, pos, nullptr, 12, negative, GGML_ROPE_TYPE_MROPE, 0, 1e4f, 1.0f,
                                    0.0f, 1.0f, 0.0f, 0.0f),
                    "ggml_rope_multi", "sections must be >= 0");
    expect_rejected(
        ggml_rope_multi(ctx(), a, pos, nullptr, 12, kSections, 24 + 1, 0, 1e4f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f),
        "ggml_rope_multi", "mode must be MROPE, IMROPE or VISION");
}

TEST_F(RopeOps, BackFormsAreRopeBackNodes) {
    ggml_tensor *dy = f32(8, 2, 3), *pos = i32(3), *ff = f32(4);
    ggml_tensor * r = ggml_rope_ext_back(ctx(), dy, pos, ff, 8, 0, 64, 500.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    expect_node(r, GGML_OP_ROPE_BACK, GGML_TYPE_F32, {8, 2, 3, 1}, {dy, pos, ff});
    EXPECT_EQ(params_of<ggml_ext_rope_params>(r).freq_base, 500.0f);
    ggml_tensor * m = ggml_rope_multi_back(ctx(), dy, i32(12), nullptr, 8, kSections, GGML_ROPE_TYPE_MROPE,
                                           64, 500.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    ASSERT_NE(m, nullptr) << error();
    EXPECT_EQ(m->op, GGML_OP_ROPE_BACK);
    EXPECT_EQ(params_of<ggml_ext_rope_params>(m).sections[1], 2);
    expect_rejected(ggml_rope_ext_back(ctx(), dy, pos, ff, 7, 0, 64, 500.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f),
                    "ggml_rope_ext_back", "n_dims must be even and in 2..a.ne0");
}

TEST_F(RopeOps, ShortFormsRejectMisuse) {
    ggml_tensor *a = f32(8, 2, 3), *pos = i32(3);
    expect_rejected(ggml_rope(ctx(), a, i32(2), 8, 0), "ggml_rope",
                    "b must be an i32 vector of a.ne2 positions");
    expect_rejected(ggml_rope_inplace(ctx(), t(GGML_TYPE_BF16, 8, 2, 3), pos, 8, 0), "ggml_rope_inplace",
                    "a must be f32 or f16");
    expect_rejected(ggml_rope_custom(ctx(), a, pos, 10, 0, 0, 1e4f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f),
                    "ggml_rope_custom", "n_dims must be even and in 2..a.ne0");
    expect_rejected(ggml_rope_custom_inplace(ctx(), a, pos, 8, 0, 0, 0.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f),
                    "ggml_rope_custom_inplace", "freq_base and freq_scale must be > 0");
    expect_rejected(ggml_rope_ext_inplace(ctx(), a, pos, f32(2), 8, 0, 0, 1e4f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f),
                    "ggml_rope_ext_inplace", "c must be an f32 vector of >= n_dims/2 frequency factors");
    EXPECT_EQ(ggml_rope(ctx(), nullptr, pos, 8, 0), nullptr);
    EXPECT_EQ(error(), "");
}

TEST_F(RopeOps, SetOffsetRecordsSlotFifteen) {
    ggml_tensor * r = ggml_rope(ctx(), f32(10, 2, 3), i32(3), 4, 0);
    EXPECT_EQ(ggml_rope_set_offset(r, 6), r);
    EXPECT_EQ(params_of<ggml_ext_rope_params>(r).n_offs, 6);
    EXPECT_EQ(r->op_params[15], 6);
    ggml_tensor * back = ggml_rope_ext_back(ctx(), f32(10, 2, 3), i32(3), nullptr, 4, 0, 0, 1e4f, 1.0f, 0.0f,
                                            1.0f, 0.0f, 0.0f);
    EXPECT_EQ(ggml_rope_set_offset(back, 2), back);
}

TEST_F(RopeOps, SetOffsetRejectsMisuse) {
    ggml_tensor * r = ggml_rope(ctx(), f32(10, 2, 3), i32(3), 4, 0);
    expect_rejected(ggml_rope_set_offset(r, 3), "ggml_rope_set_offset",
                    "n_offs must be even, >= 0 and leave n_dims elements of a row to rotate");
    expect_rejected(ggml_rope_set_offset(r, 8), "ggml_rope_set_offset",
                    "n_offs must be even, >= 0 and leave n_dims elements of a row to rotate");
    expect_rejected(ggml_rope_set_offset(f32(10), 2), "ggml_rope_set_offset",
                    "a must be a rope or rope_back result");
    ggml_tensor * vision = ggml_rope_multi(ctx(), f32(16, 2, 3), i32(12), nullptr, 8, kSections,
                                           GGML_ROPE_TYPE_VISION, 0, 1e4f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    expect_rejected(ggml_rope_set_offset(vision, 2), "ggml_rope_set_offset", "VISION rope takes no offset");
    EXPECT_EQ(ggml_rope_set_offset(nullptr, 2), nullptr);
    EXPECT_EQ(params_of<ggml_ext_rope_params>(r).n_offs, 0);
}

// Values from the documented formula c(r) = n_dims ln(n_ctx_orig / (2 pi r)) / (2 ln base), worked out
// by hand: c(32) = 20.94, c(1) = 45.03 for (128, 4096, 1e4); clamped at 0 and n_dims - 1 otherwise.
TEST(RopeYarnCorrDims, FollowTheFormula) {
    float dims[2];
    ggml_rope_yarn_corr_dims(128, 4096, 10000.0f, 32.0f, 1.0f, dims);
    EXPECT_EQ(dims[0], 20.0f);
    EXPECT_EQ(dims[1], 46.0f);
    ggml_rope_yarn_corr_dims(64, 64, 500000.0f, 32.0f, 0.001f, dims);  // c(32) = -2.79, c(0.001) = 22.51
    EXPECT_EQ(dims[0], 0.0f);
    EXPECT_EQ(dims[1], 23.0f);
    ggml_rope_yarn_corr_dims(8, 4096, 2.0f, 32.0f, 1.0f, dims);  // c(32) = 17.39, c(1) = 37.39
    EXPECT_EQ(dims[0], 17.0f);
    EXPECT_EQ(dims[1], 7.0f);
}

// Rotation of x [D, H, T] at positions pos by theta_i = freq_scale * pos * base^(-2i / n_dims), pairs
// (2i, 2i+1) or (i, i + n_dims / 2), scaled by attn_factor (no YaRN: ext_factor 0).
std::vector<float> rotate(const std::vector<float> & x, const std::vector<int> & pos, int64_t D, int64_t H,
                          int n_dims, bool neox, double base, double freq_scale, double attn_factor) {
    std::vector<float> y = x;
    for (size_t t = 0; t < pos.size(); ++t)
        for (int64_t h = 0; h < H; ++h)
            for (int i = 0; i < n_dims / 2; ++i) {
                const double theta = freq_scale * pos[t] * std::pow(base, -2.0 * i / n_dims);
                const int64_t row = (static_cast<int64_t>(t) * H + h) * D;
                const int64_t j0 = row + (neox ? i : 2 * i), j1 = row + (neox ? i + n_dims / 2 : 2 * i + 1);
                const double c = std::cos(theta) * attn_factor, s = std::sin(theta) * attn_factor;
                y[j0] = static_cast<float>(x[j0] * c - x[j1] * s);
                y[j1] = static_cast<float>(x[j0] * s + x[j1] * c);
            }
    return y;
}

struct RopeCase {
    const char * name;
    bool inplace, neox;
    double freq_scale, attn_factor;
};

void run_rope_case(const RopeCase & c) {
    using namespace ggx::test;
    SCOPED_TRACE(c.name);
    const int64_t D = 11, H = 3, T = 5;
    const int n_dims = 6;
    const std::vector<int> positions = {0, 3, 7, 12, 40};
    ggml_init_params ip{};
    ip.mem_size = 1 << 20;
    ip.no_alloc = true;
    Context ctx(ggml_init(ip));
    ggml_tensor * x = ggml_new_tensor_3d(ctx.get(), GGML_TYPE_F32, D, H, T);
    ggml_tensor * pos = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_I32, T);
    const int mode = c.neox ? GGML_ROPE_TYPE_NEOX : GGML_ROPE_TYPE_NORMAL;
    ggml_tensor * r = nullptr;
    if (c.freq_scale == 1.0 && c.attn_factor == 1.0)
        r = c.inplace ? ggml_rope_inplace(ctx.get(), x, pos, n_dims, mode)
                      : ggml_rope(ctx.get(), x, pos, n_dims, mode);
    else if (c.inplace)
        r = ggml_rope_ext_inplace(ctx.get(), x, pos, nullptr, n_dims, mode, 0, 10000.0f, float(c.freq_scale),
                                  0.0f, float(c.attn_factor), 0.0f, 0.0f);
    else
        r = ggml_rope_custom(ctx.get(), x, pos, n_dims, mode, 0, 10000.0f, float(c.freq_scale), 0.0f,
                             float(c.attn_factor), 0.0f, 0.0f);
    ASSERT_NE(r, nullptr) << ggml_get_error(ctx.get());
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, r);
    Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), cpu_backend()));
    const std::vector<float> input = ramp(D * H * T, -1.3f, 0.07f);
    write_f32(x, input);
    ASSERT_EQ(ggml_ext_backend_tensor_set(pos, positions.data(), 0, ggml_nbytes(pos)), GGML_STATUS_SUCCESS);
    ASSERT_EQ(ggml_backend_graph_compute(cpu_backend(), graph), GGML_STATUS_SUCCESS);
    const std::vector<float> got = read_f32(c.inplace ? x : r);
    const std::vector<float> want =
        rotate(input, positions, D, H, n_dims, c.neox, 10000.0, c.freq_scale, c.attn_factor);
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 2e-5) << "element " << i;
}

TEST(RopeCompute, ShortFormsRotateLikeTheFormulaOnCpu) {
    for (const RopeCase & c : {RopeCase{"ggml_rope normal", false, false, 1.0, 1.0},
                               RopeCase{"ggml_rope_inplace neox", true, true, 1.0, 1.0},
                               RopeCase{"ggml_rope_custom normal", false, false, 0.5, 1.5},
                               RopeCase{"ggml_rope_ext_inplace neox", true, true, 0.25, 0.75}})
        run_rope_case(c);
}

TEST(RopeCompute, OffsetsAndMultiModesAreComputedEmptySectionsRefused) {
    using namespace ggx::test;
    ggml_init_params ip{};
    ip.mem_size = 1 << 20;
    ip.no_alloc = true;
    Context ctx(ggml_init(ip));
    ggml_tensor * offset =
        ggml_rope_set_offset(ggml_rope(ctx.get(), ggml_new_tensor_3d(ctx.get(), GGML_TYPE_F32, 8, 2, 3),
                                       ggml_new_tensor_1d(ctx.get(), GGML_TYPE_I32, 3), 4, 0),
                             2);
    const auto multi = [&](int * sections) {
        return ggml_rope_multi(ctx.get(), ggml_new_tensor_3d(ctx.get(), GGML_TYPE_F32, 8, 2, 3),
                               ggml_new_tensor_1d(ctx.get(), GGML_TYPE_I32, 12), nullptr, 8, sections,
                               GGML_ROPE_TYPE_MROPE, 0, 1e4f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    };
    int empty[GGML_MROPE_SECTIONS] = {0, 0, 0, 0};
    ggml_tensor * split = multi(kSections);
    ggml_tensor * unsplit = multi(empty);  // no pair has an axis
    ASSERT_NE(offset, nullptr);
    ASSERT_NE(split, nullptr);
    ASSERT_NE(unsplit, nullptr);
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), offset));
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), split));
    EXPECT_FALSE(ggml_backend_supports_op(cpu_backend(), unsplit));
    // VISION rotates n_dims pairs, so it needs n_dims frequency factors (the constructor asks n_dims / 2).
    const auto vision = [&](int64_t n_factors) {
        return ggml_rope_multi(ctx.get(), ggml_new_tensor_3d(ctx.get(), GGML_TYPE_F32, 16, 2, 3),
                               ggml_new_tensor_1d(ctx.get(), GGML_TYPE_I32, 12),
                               ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, n_factors), 8, kSections,
                               GGML_ROPE_TYPE_VISION, 0, 1e4f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    };
    ggml_tensor * enough = vision(8);
    ggml_tensor * short_factors = vision(4);
    ASSERT_NE(enough, nullptr);
    ASSERT_NE(short_factors, nullptr);
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), enough));
    EXPECT_FALSE(ggml_backend_supports_op(cpu_backend(), short_factors));
}

}  // namespace
