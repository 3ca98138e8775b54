// Constructors of the convolution family: IM2COL and the convolutions built on it.
#include <array>

#include "core/ops/common.h"

using namespace ggx::core;

namespace {

int64_t conv_output_size(int64_t in, int64_t kernel, int stride, int pad, int dilation) {
    return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

}  // namespace

extern "C" {

ggml_tensor * ggml_im2col(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int s1, int p0,
                          int p1, int d0, int d1, bool is_2d, ggml_type dst_type) {
    Check check(ctx, "ggml_im2col", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    const int64_t channels = is_2d ? b->ne[2] : b->ne[1];
    check.require(b->type == GGML_TYPE_F32 || b->type == GGML_TYPE_F16, "b must be f32 or f16")
        .require(dst_type == GGML_TYPE_F32 || dst_type == GGML_TYPE_F16, "dst_type must be f32 or f16")
        .require(s0 >= 1 && d0 >= 1 && p0 >= 0 && (!is_2d || (s1 >= 1 && d1 >= 1 && p1 >= 0)),
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

ggml_tensor * ggml_conv_2d(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int s1, int p0,
                           int p1, int d0, int d1) {
    Check check(ctx, "ggml_conv_2d", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16, "kernel a must be f32 or f16")
        .require(b->type == GGML_TYPE_F32, "input b must be f32");
    if (!check) return nullptr;
    ggml_tensor * kernel = ggml_is_contiguous(a) ? a : ggml_cont(ctx, a);
    ggml_tensor * columns = ggml_im2col(ctx, kernel, b, s0, s1, p0, p1, d0, d1, true, a->type);
    if (!columns) return nullptr;
    const int64_t ow = columns->ne[1], oh = columns->ne[2], n = columns->ne[3], oc = a->ne[3];
    ggml_tensor * product = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, columns, columns->ne[0], ow * oh * n),
                                         ggml_reshape_2d(ctx, kernel, a->ne[0] * a->ne[1] * a->ne[2], oc));
    ggml_tensor * image = ggml_reshape_4d(ctx, product, ow, oh, n, oc);
    return ggml_cont(ctx, ggml_permute(ctx, image, 0, 1, 3, 2));
}

}  // extern "C"
