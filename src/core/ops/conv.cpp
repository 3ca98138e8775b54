// Constructors of the convolution family: IM2COL, IM2COL_BACK, IM2COL_3D, COL2IM_1D, the direct
// convolutions (CONV_2D, CONV_2D_DW, CONV_3D, CONV_TRANSPOSE_1D, CONV_TRANSPOSE_2D), pooling, and the
// convolutions ggml builds from im2col and mul_mat.
#include <array>

#include "core/ops/common.h"

using namespace ggx::core;

namespace {

int64_t conv_output_size(int64_t in, int64_t kernel, int stride, int pad, int dilation) {
    return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

int64_t pool_output_size(int64_t in, int64_t kernel, int stride, float pad) {
    return static_cast<int64_t>((static_cast<float>(in) + 2 * pad - static_cast<float>(kernel)) / stride + 1);
}

bool valid_steps(int s, int p, int d) { return s >= 1 && p >= 0 && d >= 1; }

// Output extents along dims 0..2 of kernel a over input b with strides s, paddings p and dilations
// d; each >= 1 unless the kernel does not fit the padded input.
std::array<int64_t, 3> output_size_3d(const ggml_tensor * a, const ggml_tensor * b, std::array<int, 3> s,
                                      std::array<int, 3> p, std::array<int, 3> d) {
    std::array<int64_t, 3> extents{};
    for (int i = 0; i < 3; ++i)
        extents[i] = conv_output_size(b->ne[i], a->ne[i], s[i], p[i], d[i]);
    return extents;
}

bool is_f32_or_f16(const ggml_tensor * t) { return t->type == GGML_TYPE_F32 || t->type == GGML_TYPE_F16; }

ggml_tensor * contiguous(ggml_context * ctx, ggml_tensor * t) {
    return ggml_is_contiguous(t) ? t : ggml_cont(ctx, t);
}

// ggml's 1-D convolution: b [W, C, N] unfolded to F16 columns [C * K, OW, N], multiplied by kernel a
// [K, C, O] into [OW, O, N].
ggml_tensor * conv_1d(ggml_context * ctx, const char * op_name, ggml_tensor * a, ggml_tensor * b, int s0,
                      int p0, int d0) {
    Check check(ctx, op_name, {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    if (!check.require(is_f32_or_f16(a) && b->type == GGML_TYPE_F32,
                       "kernel a must be f32 or f16, input b f32"))
        return nullptr;
    ggml_tensor * kernel = contiguous(ctx, a);
    ggml_tensor * columns = ggml_im2col(ctx, kernel, b, s0, 0, p0, 0, d0, 0, false, GGML_TYPE_F16);
    if (!columns) return nullptr;
    ggml_tensor * product =
        ggml_mul_mat(ctx, ggml_reshape_2d(ctx, columns, columns->ne[0], columns->ne[2] * columns->ne[1]),
                     ggml_reshape_2d(ctx, kernel, a->ne[0] * a->ne[1], a->ne[2]));
    return ggml_reshape_3d(ctx, product, columns->ne[1], a->ne[2], columns->ne[2]);
}

// ggml's depthwise 1-D convolution: kernel a [K, 1, C], input b [W, C] (one sample) -> [OW, C].
ggml_tensor * conv_1d_dw(ggml_context * ctx, const char * op_name, ggml_tensor * a, ggml_tensor * b, int s0,
                         int p0, int d0) {
    Check check(ctx, op_name, {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    if (!check
             .require(is_f32_or_f16(a) && b->type == GGML_TYPE_F32,
                      "kernel a must be f32 or f16, input b f32")
             .require(b->ne[2] == 1 && b->ne[3] == 1, "input b must be one sample [W, C]"))
        return nullptr;
    ggml_tensor * kernel = contiguous(ctx, a);
    ggml_tensor * channels = ggml_reshape_4d(ctx, contiguous(ctx, b), b->ne[0], 1, b->ne[1], 1);
    ggml_tensor * columns = ggml_im2col(ctx, kernel, channels, s0, 0, p0, 0, d0, 0, false, GGML_TYPE_F16);
    ggml_tensor * product = ggml_mul_mat(ctx, columns, kernel);
    return product ? ggml_reshape_3d(ctx, product, product->ne[0], product->ne[2], 1) : nullptr;
}

// ggml's 2-D convolution through im2col (kept from ggx's ggml_conv_2d): kernel a [KW, KH, C, O], input
// b [W, H, C, N] -> [OW, OH, O, N].
ggml_tensor * conv_2d(ggml_context * ctx, const char * op_name, ggml_tensor * a, ggml_tensor * b, int s0,
                      int s1, int p0, int p1, int d0, int d1) {
    Check check(ctx, op_name, {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    if (!check.require(is_f32_or_f16(a), "kernel a must be f32 or f16")
             .require(b->type == GGML_TYPE_F32, "input b must be f32"))
        return nullptr;
    ggml_tensor * kernel = contiguous(ctx, a);
    ggml_tensor * columns = ggml_im2col(ctx, kernel, b, s0, s1, p0, p1, d0, d1, true, a->type);
    if (!columns) return nullptr;
    const int64_t ow = columns->ne[1], oh = columns->ne[2], n = columns->ne[3], oc = a->ne[3];
    ggml_tensor * product = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, columns, columns->ne[0], ow * oh * n),
                                         ggml_reshape_2d(ctx, kernel, a->ne[0] * a->ne[1] * a->ne[2], oc));
    ggml_tensor * image = ggml_reshape_4d(ctx, product, ow, oh, n, oc);
    return ggml_cont(ctx, ggml_permute(ctx, image, 0, 1, 3, 2));
}

}  // namespace

extern "C" {

ggml_tensor * ggml_im2col(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int s1, int p0,
                          int p1, int d0, int d1, bool is_2d, ggml_type dst_type) {
    Check check(ctx, "ggml_im2col", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    const int64_t channels = is_2d ? b->ne[2] : b->ne[1];
    check.require(is_f32_or_f16(b), "b must be f32 or f16")
        .require(dst_type == GGML_TYPE_F32 || dst_type == GGML_TYPE_F16, "dst_type must be f32 or f16")
        .require(valid_steps(s0, p0, d0) && (!is_2d || valid_steps(s1, p1, d1)),
                 "strides and dilations must be >= 1, paddings >= 0");
    if (!check) return nullptr;
    const int64_t kw = a->ne[0], kh = is_2d ? a->ne[1] : 1;
    const int64_t ow = conv_output_size(b->ne[0], kw, s0, p0, d0);
    const int64_t oh = is_2d ? conv_output_size(b->ne[1], kh, s1, p1, d1) : 1;
    check.require((is_2d ? a->ne[2] : a->ne[1]) == channels, "kernel and input channel counts differ")
        .require(is_2d || b->ne[3] == 1, "a 1-D input must be [W, C, N]")
        .require(kw >= 1 && kh >= 1 && ow >= 1 && oh >= 1, "the kernel does not fit the padded input");
    if (!check) return nullptr;
    const std::array<int64_t, 4> ne = is_2d ? std::array<int64_t, 4>{channels * kh * kw, ow, oh, b->ne[3]}
                                            : std::array<int64_t, 4>{channels * kw, ow, b->ne[2], 1};
    return with_params(make_node(ctx, "ggml_im2col", GGML_OP_IM2COL, dst_type, ne, {a, b}),
                       ggml_ext_im2col_params{s0, s1, p0, p1, d0, d1, is_2d ? 1 : 0});
}

ggml_tensor * ggml_im2col_back(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int64_t * ne, int s0,
                               int s1, int p0, int p1, int d0, int d1, bool is_2d) {
    Check check(ctx, "ggml_im2col_back", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check
        .require(ne != nullptr && ne[0] >= 1 && ne[1] >= 1 && ne[2] >= 1 && ne[3] >= 1,
                 "ne must give the im2col input's shape (every size >= 1)")
        .require(b->type == GGML_TYPE_F32, "b must be f32")
        .require(valid_steps(s0, p0, d0) && (!is_2d || valid_steps(s1, p1, d1)),
                 "strides and dilations must be >= 1, paddings >= 0");
    if (!check) return nullptr;
    return with_params(make_node(ctx, "ggml_im2col_back", GGML_OP_IM2COL_BACK, GGML_TYPE_F32,
                                 {ne[0], ne[1], ne[2], ne[3]}, {a, b}),
                       ggml_ext_im2col_params{s0, s1, p0, p1, d0, d1, is_2d ? 1 : 0});
}

ggml_tensor * ggml_im2col_3d(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int64_t IC, int s0, int s1,
                             int s2, int p0, int p1, int p2, int d0, int d1, int d2, ggml_type dst_type) {
    Check check(ctx, "ggml_im2col_3d", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_f32_or_f16(b), "b must be f32 or f16")
        .require(dst_type == GGML_TYPE_F32 || dst_type == GGML_TYPE_F16, "dst_type must be f32 or f16")
        .require(valid_steps(s0, p0, d0) && valid_steps(s1, p1, d1) && valid_steps(s2, p2, d2),
                 "strides and dilations must be >= 1, paddings >= 0")
        .require(IC >= 1 && IC <= INT32_MAX && a->ne[3] % IC == 0 && b->ne[3] % IC == 0,
                 "IC must divide a.ne3 (OC * IC) and b.ne3 (N * IC)");
    if (!check) return nullptr;
    const auto [ow, oh, od] = output_size_3d(a, b, {s0, s1, s2}, {p0, p1, p2}, {d0, d1, d2});
    if (!check.require(ow >= 1 && oh >= 1 && od >= 1, "the kernel does not fit the padded input"))
        return nullptr;
    return with_params(
        make_node(ctx, "ggml_im2col_3d", GGML_OP_IM2COL_3D, dst_type,
                  {a->ne[0] * a->ne[1] * a->ne[2] * IC, ow, oh, od * (b->ne[3] / IC)}, {a, b}),
        ggml_ext_im2col_3d_params{s0, s1, s2, p0, p1, p2, d0, d1, d2, static_cast<int32_t>(IC)});
}

ggml_tensor * ggml_col2im_1d(ggml_context * ctx, ggml_tensor * a, int s0, int oc, int p0) {
    Check check(ctx, "ggml_col2im_1d", {{"a", a}});
    if (!check) return nullptr;
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require(ggml_is_matrix(a), "a must be columns [K * OC, T_in]")
        .require(s0 >= 1 && p0 >= 0 && oc >= 1, "s0 and oc must be >= 1, p0 >= 0")
        .require(oc >= 1 && a->ne[0] % oc == 0, "a.ne0 must be a multiple of oc");
    if (!check) return nullptr;
    const int64_t t_out = (a->ne[1] - 1) * s0 + a->ne[0] / oc - 2 * p0;
    if (!check.require(t_out >= 1, "the padding crops the whole output")) return nullptr;
    return with_params(make_node(ctx, "ggml_col2im_1d", GGML_OP_COL2IM_1D, a->type, {t_out, oc, 1, 1}, {a}),
                       ggml_ext_col2im_1d_params{s0, oc, p0});
}

ggml_tensor * ggml_conv_1d(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int p0, int d0) {
    return conv_1d(ctx, "ggml_conv_1d", a, b, s0, p0, d0);
}

ggml_tensor * ggml_conv_1d_ph(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s, int d) {
    return conv_1d(ctx, "ggml_conv_1d_ph", a, b, s, a ? static_cast<int>(a->ne[0] / 2) : 0, d);
}

ggml_tensor * ggml_conv_1d_dw(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int p0, int d0) {
    return conv_1d_dw(ctx, "ggml_conv_1d_dw", a, b, s0, p0, d0);
}

ggml_tensor * ggml_conv_1d_dw_ph(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int d0) {
    return conv_1d_dw(ctx, "ggml_conv_1d_dw_ph", a, b, s0, a ? static_cast<int>(a->ne[0] / 2) : 0, d0);
}

ggml_tensor * ggml_conv_2d(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int s1, int p0,
                           int p1, int d0, int d1) {
    return conv_2d(ctx, "ggml_conv_2d", a, b, s0, s1, p0, p1, d0, d1);
}

// Stride = kernel size, no padding (non-overlapping patches).
ggml_tensor * ggml_conv_2d_sk_p0(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    const int kw = a ? static_cast<int>(a->ne[0]) : 1, kh = a ? static_cast<int>(a->ne[1]) : 1;
    return conv_2d(ctx, "ggml_conv_2d_sk_p0", a, b, kw, kh, 0, 0, 1, 1);
}

// Stride 1, half-kernel padding.
ggml_tensor * ggml_conv_2d_s1_ph(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    const int pw = a ? static_cast<int>(a->ne[0] / 2) : 0, ph = a ? static_cast<int>(a->ne[1] / 2) : 0;
    return conv_2d(ctx, "ggml_conv_2d_s1_ph", a, b, 1, 1, pw, ph, 1, 1);
}

// Depthwise: kernel a [KW, KH, 1, C] (or [KW, KH, C, 1]), input b [W, H, C, N] -> [OW, OH, C, N]; every
// channel is unfolded on its own and multiplied by its own kernel.
ggml_tensor * ggml_conv_2d_dw(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int s1, int p0,
                              int p1, int d0, int d1) {
    Check check(ctx, "ggml_conv_2d_dw", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    if (!check
             .require(is_f32_or_f16(a) && b->type == GGML_TYPE_F32,
                      "kernel a must be f32 or f16, input b f32")
             .require(a->ne[2] * a->ne[3] == b->ne[2], "a must hold one KW x KH kernel per channel of b"))
        return nullptr;
    ggml_tensor * kernel = ggml_reshape_4d(ctx, contiguous(ctx, a), a->ne[0], a->ne[1], 1, b->ne[2]);
    ggml_tensor * planes =
        ggml_reshape_4d(ctx, contiguous(ctx, b), b->ne[0], b->ne[1], 1, b->ne[2] * b->ne[3]);
    ggml_tensor * columns = ggml_im2col(ctx, kernel, planes, s0, s1, p0, p1, d0, d1, true, GGML_TYPE_F16);
    if (!columns) return nullptr;
    const int64_t ow = columns->ne[1], oh = columns->ne[2];
    ggml_tensor * product =
        ggml_mul_mat(ctx, ggml_reshape_4d(ctx, kernel, a->ne[0] * a->ne[1], 1, b->ne[2], 1),
                     ggml_reshape_4d(ctx, columns, columns->ne[0], ow * oh, b->ne[2], b->ne[3]));
    return ggml_reshape_4d(ctx, product, ow, oh, b->ne[2], b->ne[3]);
}

ggml_tensor * ggml_conv_2d_direct(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int s1,
                                  int p0, int p1, int d0, int d1) {
    Check check(ctx, "ggml_conv_2d_direct", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_f32_or_f16(a) && is_f32_or_f16(b), "a and b must be f32 or f16")
        .require(a->ne[2] == b->ne[2], "kernel and input channel counts differ (a.ne2, b.ne2)")
        .require(valid_steps(s0, p0, d0) && valid_steps(s1, p1, d1),
                 "strides and dilations must be >= 1, paddings >= 0");
    if (!check) return nullptr;
    const int64_t ow = conv_output_size(b->ne[0], a->ne[0], s0, p0, d0);
    const int64_t oh = conv_output_size(b->ne[1], a->ne[1], s1, p1, d1);
    if (!check.require(ow >= 1 && oh >= 1, "the kernel does not fit the padded input")) return nullptr;
    return with_params(
        make_node(ctx, "ggml_conv_2d_direct", GGML_OP_CONV_2D, b->type, {ow, oh, a->ne[3], b->ne[3]}, {a, b}),
        ggml_ext_conv_2d_params{s0, s1, p0, p1, d0, d1});
}

// The result is stored channels-first (as b) when b is.
ggml_tensor * ggml_conv_2d_dw_direct(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int stride0,
                                     int stride1, int pad0, int pad1, int dilation0, int dilation1) {
    Check check(ctx, "ggml_conv_2d_dw_direct", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_f32_or_f16(a) && is_f32_or_f16(b), "a and b must be f32 or f16")
        .require(a->ne[2] == 1 && a->ne[3] == b->ne[2], "a must be [KW, KH, 1, C] for b [W, H, C, N]")
        .require(valid_steps(stride0, pad0, dilation0) && valid_steps(stride1, pad1, dilation1),
                 "strides and dilations must be >= 1, paddings >= 0");
    if (!check) return nullptr;
    const int64_t ow = conv_output_size(b->ne[0], a->ne[0], stride0, pad0, dilation0);
    const int64_t oh = conv_output_size(b->ne[1], a->ne[1], stride1, pad1, dilation1);
    if (!check.require(ow >= 1 && oh >= 1, "the kernel does not fit the padded input")) return nullptr;
    ggml_tensor * result = make_node(ctx, "ggml_conv_2d_dw_direct", GGML_OP_CONV_2D_DW, b->type,
                                     {ow, oh, b->ne[2], b->ne[3]}, {a, b});
    const size_t size = ggml_type_size(b->type);
    if (result && b->nb[0] > b->nb[2] && b->nb[1] > b->nb[0] && b->nb[2] == size) {
        result->nb[2] = size;
        result->nb[0] = result->ne[2] * size;
        result->nb[1] = result->nb[0] * result->ne[0];
    }
    return with_params(result, ggml_ext_conv_2d_params{stride0, stride1, pad0, pad1, dilation0, dilation1});
}

ggml_tensor * ggml_conv_3d_direct(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int s1,
                                  int s2, int p0, int p1, int p2, int d0, int d1, int d2, int n_channels,
                                  int n_batch, int n_channels_out) {
    Check check(ctx, "ggml_conv_3d_direct", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_f32_or_f16(a) && is_f32_or_f16(b), "a and b must be f32 or f16")
        .require(n_channels >= 1 && n_batch >= 1 && n_channels_out >= 1,
                 "channel and batch counts must be >= 1")
        .require(a->ne[3] == int64_t{n_channels} * n_channels_out,
                 "a.ne3 must be n_channels * n_channels_out")
        .require(b->ne[3] == int64_t{n_channels} * n_batch, "b.ne3 must be n_channels * n_batch")
        .require(valid_steps(s0, p0, d0) && valid_steps(s1, p1, d1) && valid_steps(s2, p2, d2),
                 "strides and dilations must be >= 1, paddings >= 0");
    if (!check) return nullptr;
    const auto [ow, oh, od] = output_size_3d(a, b, {s0, s1, s2}, {p0, p1, p2}, {d0, d1, d2});
    if (!check.require(ow >= 1 && oh >= 1 && od >= 1, "the kernel does not fit the padded input"))
        return nullptr;
    return with_params(
        make_node(ctx, "ggml_conv_3d_direct", GGML_OP_CONV_3D, GGML_TYPE_F32,
                  {ow, oh, od, int64_t{n_channels_out} * n_batch}, {a, b}),
        ggml_ext_conv_3d_params{s0, s1, s2, p0, p1, p2, d0, d1, d2, n_channels, n_batch, n_channels_out});
}

// a [KW, KH, KD, OC * IC], b [W, H, D, N * IC] -> [OW, OH, OD, OC * N], through im2col_3d and mul_mat.
ggml_tensor * ggml_conv_3d(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int64_t IC, int s0, int s1,
                           int s2, int p0, int p1, int p2, int d0, int d1, int d2) {
    Check check(ctx, "ggml_conv_3d", {{"a", a}, {"b", b}});
    if (!check || !check.require(is_f32_or_f16(a), "kernel a must be f32 or f16")) return nullptr;
    ggml_tensor * kernel = contiguous(ctx, a);
    ggml_tensor * columns = ggml_im2col_3d(ctx, kernel, b, IC, s0, s1, s2, p0, p1, p2, d0, d1, d2, a->type);
    if (!columns) return nullptr;
    const int64_t oc = a->ne[3] / IC, n = b->ne[3] / IC, od = columns->ne[3] / n;
    const int64_t ow = columns->ne[1], oh = columns->ne[2];
    ggml_tensor * product =
        ggml_mul_mat(ctx, ggml_reshape_2d(ctx, columns, columns->ne[0], ow * oh * columns->ne[3]),
                     ggml_reshape_2d(ctx, kernel, a->ne[0] * a->ne[1] * a->ne[2] * IC, oc));
    ggml_tensor * volumes = ggml_reshape_4d(ctx, product, ow * oh, od, n, oc);
    ggml_tensor * ordered = ggml_cont(ctx, ggml_permute(ctx, volumes, 0, 1, 3, 2));
    return ggml_reshape_4d(ctx, ordered, ow, oh, od, oc * n);
}

ggml_tensor * ggml_conv_transpose_1d(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int p0,
                                     int d0) {
    Check check(ctx, "ggml_conv_transpose_1d", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_f32_or_f16(a) && b->type == GGML_TYPE_F32, "kernel a must be f32 or f16, input b f32")
        .require(ggml_is_matrix(b), "b must be [W, C]")
        .require(a->ne[2] == b->ne[1] && a->ne[3] == 1, "a must be [K, OC, C] for b [W, C]")
        .require(s0 >= 1, "s0 must be >= 1")
        .require(p0 == 0 && d0 == 1, "only p0 = 0 and d0 = 1 are defined");
    if (!check) return nullptr;
    return with_params(make_node(ctx, "ggml_conv_transpose_1d", GGML_OP_CONV_TRANSPOSE_1D, GGML_TYPE_F32,
                                 {(b->ne[0] - 1) * s0 + a->ne[0], a->ne[1], 1, 1}, {a, b}),
                       ggml_ext_conv_transpose_1d_params{s0, p0, d0});
}

ggml_tensor * ggml_conv_transpose_2d_p0(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int stride) {
    Check check(ctx, "ggml_conv_transpose_2d_p0", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_f32_or_f16(a) && b->type == GGML_TYPE_F32, "kernel a must be f32 or f16, input b f32")
        .require(a->ne[3] == b->ne[2], "a must be [KW, KH, OC, C] for b [W, H, C, N]")
        .require(stride >= 1, "stride must be >= 1");
    if (!check) return nullptr;
    return with_params(make_node(ctx, "ggml_conv_transpose_2d_p0", GGML_OP_CONV_TRANSPOSE_2D, GGML_TYPE_F32,
                                 {(b->ne[0] - 1) * stride + a->ne[0], (b->ne[1] - 1) * stride + a->ne[1],
                                  a->ne[2], b->ne[3]},
                                 {a, b}),
                       ggml_ext_conv_transpose_2d_params{stride});
}

ggml_tensor * ggml_pool_1d(ggml_context * ctx, ggml_tensor * a, enum ggml_op_pool op, int k0, int s0,
                           int p0) {
    Check check(ctx, "ggml_pool_1d", {{"a", a}});
    if (!check) return nullptr;
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require(op == GGML_OP_POOL_MAX || op == GGML_OP_POOL_AVG, "op must be GGML_OP_POOL_MAX or AVG")
        .require(k0 >= 1 && s0 >= 1 && p0 >= 0, "k0 and s0 must be >= 1, p0 >= 0");
    if (!check) return nullptr;
    const int64_t ow = pool_output_size(a->ne[0], k0, s0, static_cast<float>(p0));
    if (!check.require(ow >= 1, "the window does not fit the padded input")) return nullptr;
    return with_params(make_node(ctx, "ggml_pool_1d", GGML_OP_POOL_1D, GGML_TYPE_F32,
                                 {ow, a->ne[1], a->ne[2], a->ne[3]}, {a}),
                       ggml_ext_pool_1d_params{op, k0, s0, p0});
}

ggml_tensor * ggml_pool_2d(ggml_context * ctx, ggml_tensor * a, enum ggml_op_pool op, int k0, int k1, int s0,
                           int s1, float p0, float p1) {
    Check check(ctx, "ggml_pool_2d", {{"a", a}});
    if (!check) return nullptr;
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require(op == GGML_OP_POOL_MAX || op == GGML_OP_POOL_AVG, "op must be GGML_OP_POOL_MAX or AVG")
        .require(k0 >= 1 && k1 >= 1 && s0 >= 1 && s1 >= 1 && p0 >= 0.0f && p1 >= 0.0f,
                 "kernel sizes and strides must be >= 1, paddings >= 0");
    if (!check) return nullptr;
    const int64_t ow = pool_output_size(a->ne[0], k0, s0, p0), oh = pool_output_size(a->ne[1], k1, s1, p1);
    if (!check.require(ow >= 1 && oh >= 1, "the window does not fit the padded input")) return nullptr;
    return with_params(
        make_node(ctx, "ggml_pool_2d", GGML_OP_POOL_2D, GGML_TYPE_F32, {ow, oh, a->ne[2], a->ne[3]}, {a}),
        ggml_ext_pool_2d_params{op, k0, k1, s0, s1, p0, p1});
}

// a: the gradient of ggml_pool_2d's result; af: the pooled input, whose shape the result takes.
ggml_tensor * ggml_pool_2d_back(ggml_context * ctx, ggml_tensor * a, ggml_tensor * af, enum ggml_op_pool op,
                                int k0, int k1, int s0, int s1, float p0, float p1) {
    Check check(ctx, "ggml_pool_2d_back", {{"a", a}, {"af", af}});
    if (!check) return nullptr;
    check.require(is_float(a) && is_float(af), "a and af must be f32, f16 or bf16")
        .require(op == GGML_OP_POOL_MAX || op == GGML_OP_POOL_AVG, "op must be GGML_OP_POOL_MAX or AVG")
        .require(k0 >= 1 && k1 >= 1 && s0 >= 1 && s1 >= 1 && p0 >= 0.0f && p1 >= 0.0f,
                 "kernel sizes and strides must be >= 1, paddings >= 0");
    if (!check) return nullptr;
    const bool pooled_shape = a->ne[0] == pool_output_size(af->ne[0], k0, s0, p0) &&
                              a->ne[1] == pool_output_size(af->ne[1], k1, s1, p1) && a->ne[2] == af->ne[2] &&
                              a->ne[3] == af->ne[3];
    if (!check.require(pooled_shape, "a must have the shape ggml_pool_2d gives af")) return nullptr;
    return with_params(
        make_node(ctx, "ggml_pool_2d_back", GGML_OP_POOL_2D_BACK, GGML_TYPE_F32, shape_of(af), {a, af}),
        ggml_ext_pool_2d_params{op, k0, k1, s0, s1, p0, p1});
}

}  // extern "C"
