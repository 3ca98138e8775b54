// Constructors of the conv family (docs/ops.md "Convolution"): the direct ops (shapes, types,
// sources, parameters, rejected inputs) and the convolutions ggml composes from im2col and mul_mat,
// computed on the CPU backend against a direct convolution loop on small odd sizes.
#include <array>
#include <functional>
#include <utility>
#include <vector>

#include "support/op_test_util.h"
#include "support/test_util.h"

namespace {

using ggx::test::OpTest;
using ConvOps = OpTest;
using Ne = std::array<int64_t, 4>;

TEST_F(ConvOps, Im2colBackTakesTheGivenShape) {
    ggml_tensor *k = f32(3, 3, 2, 4), *grad = f32(18, 5, 4, 1);
    int64_t ne[4] = {7, 6, 2, 1};
    ggml_tensor * r = ggml_im2col_back(ctx(), k, grad, ne, 1, 1, 0, 0, 1, 1, true);
    expect_node(r, GGML_OP_IM2COL_BACK, GGML_TYPE_F32, {7, 6, 2, 1}, {k, grad});
    const auto p = params_of<ggml_ext_im2col_params>(r);
    EXPECT_EQ(p.is_2d, 1);
    EXPECT_EQ(p.d1, 1);
    expect_rejected(ggml_im2col_back(ctx(), k, grad, nullptr, 1, 1, 0, 0, 1, 1, true), "ggml_im2col_back",
                    "ne must give the im2col input's shape (every size >= 1)");
    expect_rejected(ggml_im2col_back(ctx(), k, grad, ne, 0, 1, 0, 0, 1, 1, true), "ggml_im2col_back",
                    "strides and dilations must be >= 1, paddings >= 0");
}

TEST_F(ConvOps, Im2col3d) {
    // a [KW, KH, KD, OC * IC] = [3, 2, 2, 4 * 3], b [W, H, D, N * IC] = [9, 7, 5, 2 * 3]
    ggml_tensor *a = t(GGML_TYPE_F16, 3, 2, 2, 12), *b = f32(9, 7, 5, 6);
    ggml_tensor * r = ggml_im2col_3d(ctx(), a, b, 3, 2, 1, 1, 1, 0, 0, 1, 1, 2, GGML_TYPE_F16);
    // OW = (9 + 2 - 2 - 1) / 2 + 1 = 5, OH = 6, OD = (5 - 2 - 1) / 1 + 1 = 3
    expect_node(r, GGML_OP_IM2COL_3D, GGML_TYPE_F16, {3 * 2 * 2 * 3, 5, 6, 3 * 2}, {a, b});
    const auto p = params_of<ggml_ext_im2col_3d_params>(r);
    EXPECT_EQ(p.s0, 2);
    EXPECT_EQ(p.d2, 2);
    EXPECT_EQ(p.ic, 3);
    expect_rejected(ggml_im2col_3d(ctx(), a, b, 5, 1, 1, 1, 0, 0, 0, 1, 1, 1, GGML_TYPE_F32),
                    "ggml_im2col_3d", "IC must divide a.ne3 (OC * IC) and b.ne3 (N * IC)");
    expect_rejected(ggml_im2col_3d(ctx(), a, b, 3, 1, 1, 1, 0, 0, 0, 1, 1, 9, GGML_TYPE_F32),
                    "ggml_im2col_3d", "the kernel does not fit the padded input");
    expect_rejected(ggml_im2col_3d(ctx(), a, b, 3, 1, 1, 1, 0, 0, 0, 1, 1, 1, GGML_TYPE_BF16),
                    "ggml_im2col_3d", "dst_type must be f32 or f16");
}

TEST_F(ConvOps, Col2im1d) {
    ggml_tensor * a = f32(3 * 4, 6);  // K = 3, OC = 4, T_in = 6
    ggml_tensor * r = ggml_col2im_1d(ctx(), a, 2, 4, 1);
    expect_node(r, GGML_OP_COL2IM_1D, GGML_TYPE_F32, {(6 - 1) * 2 + 3 - 2, 4, 1, 1}, {a});
    const auto p = params_of<ggml_ext_col2im_1d_params>(r);
    EXPECT_EQ((std::array<int32_t, 3>{p.s0, p.oc, p.p0}), (std::array<int32_t, 3>{2, 4, 1}));
    expect_rejected(ggml_col2im_1d(ctx(), a, 2, 5, 1), "ggml_col2im_1d", "a.ne0 must be a multiple of oc");
    expect_rejected(ggml_col2im_1d(ctx(), f32(4, 1), 1, 4, 1), "ggml_col2im_1d",
                    "the padding crops the whole output");
}

TEST_F(ConvOps, DirectConvolutions) {
    ggml_tensor *k = t(GGML_TYPE_F16, 3, 3, 5, 7), *x = f32(11, 9, 5, 2);
    ggml_tensor * r = ggml_conv_2d_direct(ctx(), k, x, 2, 1, 1, 0, 1, 2);
    expect_node(r, GGML_OP_CONV_2D, GGML_TYPE_F32, {6, 5, 7, 2}, {k, x});
    const auto p = params_of<ggml_ext_conv_2d_params>(r);
    EXPECT_EQ((std::array<int32_t, 6>{p.s0, p.s1, p.p0, p.p1, p.d0, p.d1}),
              (std::array<int32_t, 6>{2, 1, 1, 0, 1, 2}));
    expect_rejected(ggml_conv_2d_direct(ctx(), k, f32(11, 9, 4, 2), 1, 1, 0, 0, 1, 1), "ggml_conv_2d_direct",
                    "kernel and input channel counts differ (a.ne2, b.ne2)");

    ggml_tensor * dk = f32(3, 3, 1, 5);
    expect_node(ggml_conv_2d_dw_direct(ctx(), dk, x, 1, 1, 1, 1, 1, 1), GGML_OP_CONV_2D_DW, GGML_TYPE_F32,
                {11, 9, 5, 2}, {dk, x});
    expect_rejected(ggml_conv_2d_dw_direct(ctx(), k, x, 1, 1, 1, 1, 1, 1), "ggml_conv_2d_dw_direct",
                    "a must be [KW, KH, 1, C] for b [W, H, C, N]");

    ggml_tensor *k3 = f32(3, 3, 3, 2 * 4), *x3 = f32(8, 7, 6, 2 * 3);
    ggml_tensor * r3 = ggml_conv_3d_direct(ctx(), k3, x3, 1, 1, 2, 1, 1, 0, 1, 1, 1, 2, 3, 4);
    expect_node(r3, GGML_OP_CONV_3D, GGML_TYPE_F32, {8, 7, 2, 4 * 3}, {k3, x3});
    EXPECT_EQ(params_of<ggml_ext_conv_3d_params>(r3).oc, 4);
    expect_rejected(ggml_conv_3d_direct(ctx(), k3, x3, 1, 1, 1, 0, 0, 0, 1, 1, 1, 2, 2, 4),
                    "ggml_conv_3d_direct", "b.ne3 must be n_channels * n_batch");
}

// A channels-first input (nb2 the element size) makes a channels-first depthwise result, as in ggml.
TEST_F(ConvOps, DepthwiseDirectKeepsChannelsFirstLayout) {
    ggml_tensor * cwhn = f32(5, 11, 9, 2);                    // [C, W, H, N] in memory
    ggml_tensor * x = ggml_permute(ctx(), cwhn, 2, 0, 1, 3);  // viewed as [W, H, C, N]
    ggml_tensor * r = ggml_conv_2d_dw_direct(ctx(), f32(3, 3, 1, 5), x, 1, 1, 1, 1, 1, 1);
    ASSERT_NE(r, nullptr) << error();
    EXPECT_EQ(r->nb[2], sizeof(float));
    EXPECT_EQ(r->nb[0], 5 * sizeof(float));
    EXPECT_EQ(r->nb[1], 5 * 11 * sizeof(float));
}

TEST_F(ConvOps, TransposedConvolutions) {
    ggml_tensor *k = f32(3, 4, 5), *x = f32(7, 5);
    ggml_tensor * r = ggml_conv_transpose_1d(ctx(), k, x, 2, 0, 1);
    expect_node(r, GGML_OP_CONV_TRANSPOSE_1D, GGML_TYPE_F32, {(7 - 1) * 2 + 3, 4, 1, 1}, {k, x});
    EXPECT_EQ(params_of<ggml_ext_conv_transpose_1d_params>(r).s0, 2);
    expect_rejected(ggml_conv_transpose_1d(ctx(), k, x, 2, 1, 1), "ggml_conv_transpose_1d",
                    "only p0 = 0 and d0 = 1 are defined");
    expect_rejected(ggml_conv_transpose_1d(ctx(), k, f32(7, 4), 2, 0, 1), "ggml_conv_transpose_1d",
                    "a must be [K, OC, C] for b [W, C]");

    ggml_tensor *k2 = t(GGML_TYPE_F16, 3, 2, 6, 5), *x2 = f32(7, 4, 5, 2);
    ggml_tensor * r2 = ggml_conv_transpose_2d_p0(ctx(), k2, x2, 3);
    expect_node(r2, GGML_OP_CONV_TRANSPOSE_2D, GGML_TYPE_F32, {6 * 3 + 3, 3 * 3 + 2, 6, 2}, {k2, x2});
    EXPECT_EQ(params_of<ggml_ext_conv_transpose_2d_params>(r2).stride, 3);
    expect_rejected(ggml_conv_transpose_2d_p0(ctx(), k2, f32(7, 4, 4, 2), 3), "ggml_conv_transpose_2d_p0",
                    "a must be [KW, KH, OC, C] for b [W, H, C, N]");
}

TEST_F(ConvOps, Pooling) {
    ggml_tensor * a = f32(11, 9, 3, 2);
    ggml_tensor * r1 = ggml_pool_1d(ctx(), a, GGML_OP_POOL_AVG, 3, 2, 1);
    expect_node(r1, GGML_OP_POOL_1D, GGML_TYPE_F32, {6, 9, 3, 2}, {a});
    const auto p1 = params_of<ggml_ext_pool_1d_params>(r1);
    EXPECT_EQ((std::array<int32_t, 4>{p1.op, p1.k0, p1.s0, p1.p0}),
              (std::array<int32_t, 4>{GGML_OP_POOL_AVG, 3, 2, 1}));
    ggml_tensor * r2 = ggml_pool_2d(ctx(), a, GGML_OP_POOL_MAX, 3, 2, 2, 2, 1.0f, 0.0f);
    expect_node(r2, GGML_OP_POOL_2D, GGML_TYPE_F32, {6, 4, 3, 2}, {a});
    EXPECT_EQ(params_of<ggml_ext_pool_2d_params>(r2).p0, 1.0f);
    ggml_tensor * grad = f32(6, 4, 3, 2);
    expect_node(ggml_pool_2d_back(ctx(), grad, a, GGML_OP_POOL_MAX, 3, 2, 2, 2, 1.0f, 0.0f),
                GGML_OP_POOL_2D_BACK, GGML_TYPE_F32, {11, 9, 3, 2}, {grad, a});

    expect_rejected(ggml_pool_1d(ctx(), a, GGML_OP_POOL_COUNT, 3, 2, 1), "ggml_pool_1d",
                    "op must be GGML_OP_POOL_MAX or AVG");
    expect_rejected(ggml_pool_1d(ctx(), a, GGML_OP_POOL_MAX, 14, 1, 1), "ggml_pool_1d",
                    "the window does not fit the padded input");
    expect_rejected(ggml_pool_2d(ctx(), a, GGML_OP_POOL_MAX, 3, 0, 2, 2, 1.0f, 0.0f), "ggml_pool_2d",
                    "kernel sizes and strides must be >= 1, paddings >= 0");
    expect_rejected(ggml_pool_2d_back(ctx(), f32(6, 5, 3, 2), a, GGML_OP_POOL_MAX, 3, 2, 2, 2, 1.0f, 0.0f),
                    "ggml_pool_2d_back", "a must have the shape ggml_pool_2d gives af");
}

TEST_F(ConvOps, CompositionsRejectMisuse) {
    expect_rejected(ggml_conv_1d(ctx(), f32(3, 4, 2), t(GGML_TYPE_F16, 9, 4), 1, 0, 1), "ggml_conv_1d",
                    "kernel a must be f32 or f16, input b f32");
    expect_rejected(ggml_conv_1d_ph(ctx(), f32(3, 4, 2), f32(9, 5), 1, 1), "ggml_im2col",
                    "kernel and input channel counts differ");
    expect_rejected(ggml_conv_1d_dw(ctx(), f32(3, 1, 4), f32(9, 4, 2), 1, 0, 1), "ggml_conv_1d_dw",
                    "input b must be one sample [W, C]");
    expect_rejected(ggml_conv_2d_dw(ctx(), f32(3, 3, 1, 4), f32(9, 8, 5), 1, 1, 0, 0, 1, 1),
                    "ggml_conv_2d_dw", "a must hold one KW x KH kernel per channel of b");
    expect_rejected(ggml_conv_2d_sk_p0(ctx(), f32(4, 4, 3, 2), f32(8, 8, 2)), "ggml_im2col",
                    "kernel and input channel counts differ");
    expect_rejected(ggml_conv_2d_s1_ph(ctx(), t(GGML_TYPE_BF16, 3, 3, 3, 2), f32(8, 8, 3)),
                    "ggml_conv_2d_s1_ph", "kernel a must be f32 or f16");
    expect_rejected(ggml_conv_3d(ctx(), f32(3, 3, 3, 8), f32(8, 7, 6, 6), 5, 1, 1, 1, 0, 0, 0, 1, 1, 1),
                    "ggml_im2col_3d", "IC must divide a.ne3 (OC * IC) and b.ne3 (N * IC)");
    EXPECT_EQ(ggml_conv_1d_ph(ctx(), nullptr, f32(9, 4), 1, 1), nullptr);
    EXPECT_EQ(ggml_conv_2d_sk_p0(ctx(), nullptr, f32(9, 4)), nullptr);
    EXPECT_EQ(error(), "");
}

TEST_F(ConvOps, Conv3dComposesIm2col3dAndMulMat) {
    // a [KW, KH, KD, OC * IC] = [3, 3, 2, 4 * 2], b [W, H, D, N * IC] = [7, 6, 5, 3 * 2]
    ggml_tensor *a = f32(3, 3, 2, 8), *b = f32(7, 6, 5, 6);
    ggml_tensor * r = ggml_conv_3d(ctx(), a, b, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1);
    ASSERT_NE(r, nullptr) << error();
    EXPECT_EQ((Ne{r->ne[0], r->ne[1], r->ne[2], r->ne[3]}), (Ne{7, 4, 4, 4 * 3}));
    EXPECT_EQ(r->type, GGML_TYPE_F32);
    bool has_im2col_3d = false;
    ggml_cgraph * graph = ggml_new_graph(ctx());
    ggml_build_forward_expand(graph, r);
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i)
        has_im2col_3d |= ggml_graph_node(graph, i)->op == GGML_OP_IM2COL_3D;
    EXPECT_TRUE(has_im2col_3d);
}

// --- Numerical checks of the compositions on the CPU backend -----------------------------------

int64_t flat(const Ne & ne, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return ((i3 * ne[2] + i2) * ne[1] + i1) * ne[0] + i0;
}

// Values that are exact in F16 (multiples of 1/16 below 4 in magnitude), so the F16 columns some
// compositions unfold into round nothing and only F32 summation order differs.
std::vector<float> f16_exact(int64_t n, int seed) {
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>(static_cast<int>((i * 37 + seed * 11) % 97) - 48) / 16.0f;
    return v;
}

// The direct 2-D convolution r[ow, oh, o, n] = sum_{c, kh, kw} k[kw, kh, c, o] x[ow s0 + kw d0 - p0,
// oh s1 + kh d1 - p1, c, n], 0 outside x. depthwise: c runs over the one channel o, k[kw, kh, 0, o].
std::vector<float> direct_conv_2d(const std::vector<float> & k, Ne kne, const std::vector<float> & x, Ne xne,
                                  Ne rne, int s0, int s1, int p0, int p1, int d0, int d1, bool depthwise) {
    std::vector<float> r(static_cast<size_t>(rne[0] * rne[1] * rne[2] * rne[3]), 0.0f);
    for (int64_t n = 0; n < rne[3]; ++n)
        for (int64_t o = 0; o < rne[2]; ++o)
            for (int64_t oh = 0; oh < rne[1]; ++oh)
                for (int64_t ow = 0; ow < rne[0]; ++ow) {
                    double sum = 0.0;
                    const int64_t c0 = depthwise ? o : 0, c1 = depthwise ? o + 1 : xne[2];
                    for (int64_t c = c0; c < c1; ++c)
                        for (int64_t kh = 0; kh < kne[1]; ++kh)
                            for (int64_t kw = 0; kw < kne[0]; ++kw) {
                                const int64_t iw = ow * s0 + kw * d0 - p0, ih = oh * s1 + kh * d1 - p1;
                                if (iw < 0 || iw >= xne[0] || ih < 0 || ih >= xne[1]) continue;
                                const int64_t kc = depthwise ? 0 : c, ko = depthwise ? c : o;
                                sum += double(k[flat(kne, kw, kh, kc, ko)]) * x[flat(xne, iw, ih, c, n)];
                            }
                    r[flat(rne, ow, oh, o, n)] = static_cast<float>(sum);
                }
    return r;
}

// Strides, paddings and dilations along width (0) and height (1).
struct Steps {
    int s0, s1, p0, p1, d0, d1;
};

struct Composition {
    const char * name;
    Ne kne, xne, rne;  // kernel, input and expected result shapes (1-D shapes with H = 1)
    Steps steps;
    bool depthwise;
    std::function<ggml_tensor *(ggml_context *, ggml_tensor *, ggml_tensor *)> build;
};

void run_composition(const Composition & c) {
    using namespace ggx::test;
    SCOPED_TRACE(c.name);
    ggml_init_params ip{};
    ip.mem_size = 4 << 20;
    ip.no_alloc = true;
    Context ctx(ggml_init(ip));
    // 1-D operands drop the unit height: kernel [K, C, O] / [K, 1, C], input [W, C, N] / [W, C].
    const bool one_d = c.kne[1] == 1 && c.xne[1] == 1;
    const auto shape = [&](Ne ne) { return one_d ? Ne{ne[0], ne[2], ne[3], 1} : ne; };
    const Ne ks = shape(c.kne), xs = shape(c.xne);
    ggml_tensor * k = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, ks[0], ks[1], ks[2], ks[3]);
    ggml_tensor * x = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, xs[0], xs[1], xs[2], xs[3]);
    ggml_tensor * r = c.build(ctx.get(), k, x);
    ASSERT_NE(r, nullptr) << ggml_get_error(ctx.get());
    ASSERT_EQ(ggml_nelements(r), c.rne[0] * c.rne[1] * c.rne[2] * c.rne[3]);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, r);
    Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), cpu_backend()));
    const std::vector<float> kv = f16_exact(ggml_nelements(k), 1), xv = f16_exact(ggml_nelements(x), 2);
    write_f32(k, kv);
    write_f32(x, xv);
    ASSERT_EQ(ggml_backend_graph_compute(cpu_backend(), graph), GGML_STATUS_SUCCESS);
    const std::vector<float> got = read_f32(r);
    const Steps & st = c.steps;
    const std::vector<float> want =
        direct_conv_2d(kv, c.kne, xv, c.xne, c.rne, st.s0, st.s1, st.p0, st.p1, st.d0, st.d1, c.depthwise);
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-4) << "element " << i;
}

TEST(ConvCompute, CompositionsMatchADirectConvolutionOnCpu) {
    using Tensor = ggml_tensor *;
    const auto as_2d = [](ggml_context * ctx, Tensor x) {
        return ggml_reshape_2d(ctx, x, x->ne[0], x->ne[1]);
    };
    const Composition cases[] = {
        {"ggml_conv_1d",
         {3, 1, 5, 4},
         {13, 1, 5, 1},
         {6, 1, 4, 1},
         {2, 1, 1, 0, 2, 1},
         false,
         [](ggml_context * ctx, Tensor k, Tensor x) { return ggml_conv_1d(ctx, k, x, 2, 1, 2); }},
        {"ggml_conv_1d_ph",
         {5, 1, 3, 2},
         {11, 1, 3, 1},
         {11, 1, 2, 1},
         {1, 1, 2, 0, 1, 1},
         false,
         [](ggml_context * ctx, Tensor k, Tensor x) { return ggml_conv_1d_ph(ctx, k, x, 1, 1); }},
        {"ggml_conv_1d_dw",
         {3, 1, 1, 5},
         {13, 1, 5, 1},
         {7, 1, 5, 1},
         {2, 1, 1, 0, 1, 1},
         true,
         [&](ggml_context * ctx, Tensor k, Tensor x) {
             return ggml_conv_1d_dw(ctx, k, as_2d(ctx, x), 2, 1, 1);
         }},
        {"ggml_conv_1d_dw_ph",
         {5, 1, 1, 3},
         {9, 1, 3, 1},
         {5, 1, 3, 1},
         {2, 1, 2, 0, 1, 1},
         true,
         [&](ggml_context * ctx, Tensor k, Tensor x) {
             return ggml_conv_1d_dw_ph(ctx, k, as_2d(ctx, x), 2, 1);
         }},
        {"ggml_conv_2d_sk_p0",
         {3, 2, 3, 5},
         {10, 7, 3, 2},
         {3, 3, 5, 2},
         {3, 2, 0, 0, 1, 1},
         false,
         [](ggml_context * ctx, Tensor k, Tensor x) { return ggml_conv_2d_sk_p0(ctx, k, x); }},
        {"ggml_conv_2d_s1_ph",
         {3, 5, 2, 3},
         {7, 9, 2, 3},
         {7, 9, 3, 3},
         {1, 1, 1, 2, 1, 1},
         false,
         [](ggml_context * ctx, Tensor k, Tensor x) { return ggml_conv_2d_s1_ph(ctx, k, x); }},
        {"ggml_conv_2d_dw",
         {3, 3, 1, 5},
         {9, 7, 5, 3},
         {5, 5, 5, 3},
         {2, 1, 1, 0, 1, 1},
         true,
         [](ggml_context * ctx, Tensor k, Tensor x) { return ggml_conv_2d_dw(ctx, k, x, 2, 1, 1, 0, 1, 1); }},
    };
    for (const Composition & c : cases)
        run_composition(c);
}

}  // namespace
