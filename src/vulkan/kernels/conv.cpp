// Vulkan kernels of the conv family, each accepting what the CPU backend's does (types, strides,
// shapes; src/cpu/kernels/conv.cpp) within 32-bit shader coordinates:
//  * IM2COL (1-D, 2-D) and IM2COL_3D: F32/F16 input and result, any strides (im2col.comp);
//  * CONV_2D, CONV_3D: F32/F16 kernel and input, any strides, contiguous result (a tiled implicit
//    GEMM, conv_gemm.comp; with few output channels conv.comp, one invocation per result element);
//  * CONV_2D_DW: F32/F16 kernel and input, any strides, channels-first too (conv_dw.comp);
//  * CONV_TRANSPOSE_1D/2D: F32/F16 kernel, F32 input, contiguous F32 result, as a gather
//    (conv_transpose.comp);
//  * IM2COL_BACK (F32), COL2IM_1D (F32/F16/BF16), POOL_2D_BACK (F32/F16/BF16 sources, F32 result)
//    as gathers, each result element summing its contributors in the CPU's order where it has one
//    (im2col_back.comp, col2im_1d.comp, pool_back.comp);
//  * POOL_1D, POOL_2D: F32/F16/BF16 source, F32 result, any strides (pool.comp).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

constexpr uint32_t kLocalSize = 256;  // local_size_x of every conv shader
constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }
int32_t i32(int64_t v) { return static_cast<int32_t>(v); }

bool f32_or_f16(const Device & device, const ggml_tensor * tensor) {
    return (tensor->type == GGML_TYPE_F32 || tensor->type == GGML_TYPE_F16) && float_tensor(device, tensor);
}

// Stride s >= 1, dilation d >= 1, padding p >= 0, and the input coordinates o*s + k*d - p of out
// outputs and k taps (one past the last) fit in 32 bits.
bool axis_fits(int64_t out, int64_t k, int64_t s, int64_t p, int64_t d) {
    return s >= 1 && d >= 1 && p >= 0 && out * s + k * d <= kIntMax;
}

View view(const Recorder & rec, const ggml_tensor * t) { return view_of(rec, t, float_unit(t->type)); }
uint32_t first(const Recorder & rec, const ggml_tensor * t) {
    return rec.element_offset(t, float_unit(t->type));
}
const char * tn(const ggml_tensor * t) { return float_type_name(t->type); }

// ---- IM2COL, IM2COL_3D ----------------------------------------------------------------------------

constexpr uint32_t kIm2colChunk = 16;  // columns per invocation (im2col.comp CHUNK)

// The op as a 3-D one: x as (w, h, d, c) and n, the result as (r, ow, oh, od) and n (im2col.comp).
struct Im2col {
    View x;
    uint32_t x_n;
    View d;
    uint32_t d_n;
    int32_t s0, s1, s2, p0, p1, p2, d0, d1, d2;
    uint32_t kw, kh, kd, width, height, depth;
    uint32_t rows, ow, oh, od, count;
};

// IM2COL's and IM2COL_3D's axes: kernel, input and output extents, stride, padding, dilation.
struct Axes {
    int64_t k[3] = {1, 1, 1}, in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
    int32_t s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
    int64_t channels = 0, batch = 0;
};

Axes im2col_axes(const ggml_tensor * node) {
    const ggml_tensor *k = node->src[0], *x = node->src[1];
    Axes a;
    if (node->op == GGML_OP_IM2COL_3D) {
        const auto p = core::params<ggml_ext_im2col_3d_params>(node);
        a.channels = p.ic, a.batch = p.ic > 0 ? x->ne[3] / p.ic : 0;
        for (int i = 0; i < 3; ++i)
            a.k[i] = k->ne[i], a.in[i] = x->ne[i];
        a.out[0] = node->ne[1], a.out[1] = node->ne[2], a.out[2] = a.batch > 0 ? node->ne[3] / a.batch : 0;
        a.s[0] = p.s0, a.s[1] = p.s1, a.s[2] = p.s2, a.p[0] = p.p0, a.p[1] = p.p1, a.p[2] = p.p2;
        a.d[0] = p.d0, a.d[1] = p.d1, a.d[2] = p.d2;
        return a;
    }
    const auto p = core::params<ggml_ext_im2col_params>(node);
    a.k[0] = k->ne[0], a.in[0] = x->ne[0], a.out[0] = node->ne[1];
    a.s[0] = p.s0, a.p[0] = p.p0, a.d[0] = p.d0;
    if (p.is_2d != 0) {
        a.k[1] = k->ne[1], a.in[1] = x->ne[1], a.out[1] = node->ne[2];
        a.s[1] = p.s1, a.p[1] = p.p1, a.d[1] = p.d1;
        a.channels = x->ne[2], a.batch = node->ne[3];
    } else {
        a.channels = x->ne[1], a.batch = node->ne[2];
    }
    return a;
}

bool supports_im2col(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *k = node->src[0], *x = node->src[1];
    if (!k || !x || !f32_or_f16(device, x) || !f32_or_f16(device, node)) return false;
    const bool is_3d = node->op == GGML_OP_IM2COL_3D;
    if (is_3d) {
        const int64_t ic = core::params<ggml_ext_im2col_3d_params>(node).ic;
        if (ic < 1 || x->ne[3] % ic != 0 || (x->ne[3] > 0 && node->ne[3] % (x->ne[3] / ic) != 0))
            return false;
    }
    const Axes a = im2col_axes(node);
    for (int i = 0; i < 3; ++i) {
        if (!axis_fits(a.out[i], a.k[i], a.s[i], a.p[i], a.d[i])) return false;
    }
    const bool is_2d = !is_3d && core::params<ggml_ext_im2col_params>(node).is_2d != 0;
    const bool batch_ok =
        is_3d || (is_2d ? node->ne[3] == x->ne[3] : node->ne[2] == x->ne[2] && node->ne[3] == 1);
    return batch_ok && node->ne[0] == a.channels * a.k[0] * a.k[1] * a.k[2];
}

Im2col im2col_geometry(const Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * x = node->src[1];
    const Axes a = im2col_axes(node);
    const View vx = view(rec, x), vd = view(rec, node);
    Im2col g{};
    g.s0 = a.s[0], g.s1 = a.s[1], g.s2 = a.s[2], g.p0 = a.p[0], g.p1 = a.p[1], g.p2 = a.p[2];
    g.d0 = a.d[0], g.d1 = a.d[1], g.d2 = a.d[2];
    g.kw = u32(a.k[0]), g.kh = u32(a.k[1]), g.kd = u32(a.k[2]);
    g.width = u32(a.in[0]), g.height = u32(a.in[1]), g.depth = u32(a.in[2]);
    g.rows = u32(node->ne[0]), g.ow = u32(a.out[0]), g.oh = u32(a.out[1]), g.od = u32(a.out[2]);
    if (node->op == GGML_OP_IM2COL_3D) {  // x (w, h, d, n*IC + c), result (r, ow, oh, n*OD + od)
        g.x = vx, g.x_n = u32(a.channels) * vx.s3;
        g.d = vd, g.d_n = g.od * vd.s3;
    } else if (core::params<ggml_ext_im2col_params>(node).is_2d != 0) {
        g.x = {vx.offset, vx.s0, vx.s1, 0, vx.s2}, g.x_n = vx.s3;
        g.d = {vd.offset, vd.s0, vd.s1, vd.s2, 0}, g.d_n = vd.s3;
    } else {
        g.x = {vx.offset, vx.s0, 0, 0, vx.s1}, g.x_n = vx.s2;
        g.d = {vd.offset, vd.s0, vd.s1, 0, 0}, g.d_n = vd.s2;
    }
    const uint64_t chunks = (uint64_t{g.ow} + kIm2colChunk - 1) / kIm2colChunk;
    g.count = u32(uint64_t{g.rows} * chunks * g.oh * g.od * uint64_t(a.batch));
    return g;
}

void record_im2col(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * x = node->src[1];
    const Im2col g = im2col_geometry(rec, node);
    rec.dispatch(std::string("im2col_") + tn(x) + "_" + tn(node), {rec.arg(x, false), rec.arg(node, true)}, g,
                 rec.groups_for(g.count, kLocalSize));
}

// ---- CONV_2D, CONV_3D ------------------------------------------------------------------------------

// Output channels from which the tiled implicit GEMM (conv_gemm.comp, tiles of kGemmTile positions
// x output channels) replaces the direct shader (conv.comp), which wastes nothing on few channels.
constexpr uint32_t kGemmMinChannels = 16, kGemmTile = 128;

struct Conv {
    View k, x;
    uint32_t d_off;
    int32_t s0, s1, s2, p0, p1, p2, d0, d1, d2;
    uint32_t kw, kh, kd, channels, width, height, depth;
    uint32_t ow, oh, od, oc, count;
};

bool supports_conv(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *k = node->src[0], *x = node->src[1];
    if (!k || !x || !f32_or_f16(device, k) || !f32_or_f16(device, x) || !f32_or_f16(device, node) ||
        !ggml_is_contiguous(node))
        return false;
    if (node->op == GGML_OP_CONV_3D) {
        const auto p = core::params<ggml_ext_conv_3d_params>(node);
        return node->type == GGML_TYPE_F32 && p.c >= 1 && k->ne[3] == int64_t{p.c} * p.oc &&
               x->ne[3] == int64_t{p.c} * p.n && node->ne[3] == int64_t{p.oc} * p.n &&
               axis_fits(node->ne[0], k->ne[0], p.s0, p.p0, p.d0) &&
               axis_fits(node->ne[1], k->ne[1], p.s1, p.p1, p.d1) &&
               axis_fits(node->ne[2], k->ne[2], p.s2, p.p2, p.d2);
    }
    const auto p = core::params<ggml_ext_conv_2d_params>(node);
    return node->type == x->type && k->ne[2] == x->ne[2] && node->ne[2] == k->ne[3] &&
           node->ne[3] == x->ne[3] && axis_fits(node->ne[0], k->ne[0], p.s0, p.p0, p.d0) &&
           axis_fits(node->ne[1], k->ne[1], p.s1, p.p1, p.d1);
}

void record_conv(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *k = node->src[0], *x = node->src[1];
    const bool is_3d = node->op == GGML_OP_CONV_3D;
    Conv c{};
    c.k = view(rec, k), c.x = view(rec, x), c.d_off = first(rec, node);
    c.kw = u32(k->ne[0]), c.kh = u32(k->ne[1]), c.width = u32(x->ne[0]), c.height = u32(x->ne[1]);
    c.ow = u32(node->ne[0]), c.oh = u32(node->ne[1]);
    if (is_3d) {
        const auto p = core::params<ggml_ext_conv_3d_params>(node);
        c.s0 = p.s0, c.s1 = p.s1, c.s2 = p.s2, c.p0 = p.p0, c.p1 = p.p1, c.p2 = p.p2;
        c.d0 = p.d0, c.d1 = p.d1, c.d2 = p.d2;
        c.kd = u32(k->ne[2]), c.depth = u32(x->ne[2]), c.od = u32(node->ne[2]);
        c.channels = u32(p.c), c.oc = u32(p.oc);
    } else {
        const auto p = core::params<ggml_ext_conv_2d_params>(node);
        c.s0 = p.s0, c.s1 = p.s1, c.s2 = 1, c.p0 = p.p0, c.p1 = p.p1, c.p2 = 0, c.d0 = p.d0, c.d1 = p.d1,
        c.d2 = 1;
        c.kd = 1, c.depth = 1, c.od = 1;
        c.channels = u32(x->ne[2]), c.oc = u32(node->ne[2]);
    }
    c.count = u32(ggml_nelements(node));
    const std::string types = std::string(tn(k)) + "_" + tn(x) + "_" + tn(node);
    const std::vector<Arg> args = {rec.arg(k, false), rec.arg(x, false), rec.arg(node, true)};
    const uint64_t positions = uint64_t{c.ow} * c.oh * c.od;
    if (c.oc < kGemmMinChannels || positions == 0) {
        rec.dispatch("conv_" + types, args, c, rec.groups_for(c.count, kLocalSize), {is_3d ? 1u : 0u});
        return;
    }
    // One workgroup per tile of positions x output channels of each sample.
    const auto tiles = [](uint64_t n) { return (n + kGemmTile - 1) / kGemmTile; };
    const uint64_t groups = tiles(positions) * tiles(c.oc) * (c.count / (positions * c.oc));
    rec.dispatch("conv_gemm_" + types, args, c, rec.groups_for(groups * kLocalSize, kLocalSize),
                 {is_3d ? 1u : 0u});
}

// ---- CONV_2D_DW ------------------------------------------------------------------------------------

struct Depthwise {
    View k, x, d;
    int32_t s0, s1, p0, p1, d0, d1;
    uint32_t kw, kh, width, height;
    uint32_t ow, oh, channels, count;
};

bool supports_conv_2d_dw(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *k = node->src[0], *x = node->src[1];
    if (!k || !x || !f32_or_f16(device, k) || !f32_or_f16(device, x) || node->type != x->type ||
        !float_tensor(device, node))
        return false;
    const auto p = core::params<ggml_ext_conv_2d_params>(node);
    return k->ne[2] == 1 && k->ne[3] == x->ne[2] && node->ne[2] == x->ne[2] && node->ne[3] == x->ne[3] &&
           axis_fits(node->ne[0], k->ne[0], p.s0, p.p0, p.d0) &&
           axis_fits(node->ne[1], k->ne[1], p.s1, p.p1, p.d1);
}

// Input and result stored channels innermost (as ggml_conv_2d_dw_direct keeps them; the CPU's test).
bool channels_first(const ggml_tensor * node) {
    const ggml_tensor * x = node->src[1];
    return x->ne[2] > 1 && x->nb[2] == ggml_type_size(x->type) && node->nb[2] == ggml_type_size(node->type);
}

void record_conv_2d_dw(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *k = node->src[0], *x = node->src[1];
    const auto p = core::params<ggml_ext_conv_2d_params>(node);
    Depthwise c{};
    c.k = view(rec, k), c.x = view(rec, x), c.d = view(rec, node);
    c.s0 = p.s0, c.s1 = p.s1, c.p0 = p.p0, c.p1 = p.p1, c.d0 = p.d0, c.d1 = p.d1;
    c.kw = u32(k->ne[0]), c.kh = u32(k->ne[1]), c.width = u32(x->ne[0]), c.height = u32(x->ne[1]);
    c.ow = u32(node->ne[0]), c.oh = u32(node->ne[1]), c.channels = u32(node->ne[2]);
    c.count = u32(ggml_nelements(node));
    rec.dispatch(std::string("conv_dw_") + tn(k) + "_" + tn(x),
                 {rec.arg(k, false), rec.arg(x, false), rec.arg(node, true)}, c,
                 rec.groups_for(c.count, kLocalSize), {channels_first(node) ? 1u : 0u});
}

// ---- CONV_TRANSPOSE_1D, CONV_TRANSPOSE_2D ---------------------------------------------------------

// Both as the 2-D op: k (kx, ky, o, c), x (w, h, c, n), result [OW, OH, OC, N] (1-D: KH = H = OH =
// N = 1).
struct Transposed {
    View k, x;
    uint32_t d_off;
    uint32_t stride, width, height, channels, kw, kh;
    uint32_t ow, oh, oc, count;
};

bool supports_conv_transpose(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *k = node->src[0], *x = node->src[1];
    if (!k || !x || !f32_or_f16(device, k) || x->type != GGML_TYPE_F32 || !float_tensor(device, x) ||
        node->type != GGML_TYPE_F32 || !float_tensor(device, node) || !ggml_is_contiguous(node))
        return false;
    if (node->op == GGML_OP_CONV_TRANSPOSE_1D) {
        const int64_t s = core::params<ggml_ext_conv_transpose_1d_params>(node).s0;
        return s >= 1 && k->ne[2] == x->ne[1] && k->ne[3] == 1 &&
               node->ne[0] == (x->ne[0] - 1) * s + k->ne[0] && node->ne[1] == k->ne[1] && node->ne[2] == 1 &&
               node->ne[3] == 1;
    }
    const int64_t s = core::params<ggml_ext_conv_transpose_2d_params>(node).stride;
    return s >= 1 && k->ne[3] == x->ne[2] && node->ne[0] == (x->ne[0] - 1) * s + k->ne[0] &&
           node->ne[1] == (x->ne[1] - 1) * s + k->ne[1] && node->ne[2] == k->ne[2] && node->ne[3] == x->ne[3];
}

void record_conv_transpose(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *k = node->src[0], *x = node->src[1];
    const View vk = view(rec, k), vx = view(rec, x);
    Transposed t{};
    t.d_off = first(rec, node);
    t.width = u32(x->ne[0]), t.kw = u32(k->ne[0]), t.ow = u32(node->ne[0]);
    if (node->op == GGML_OP_CONV_TRANSPOSE_1D) {  // k [K, O, C], x [W, C], result [OW, O]
        t.k = {vk.offset, vk.s0, 0, vk.s1, vk.s2}, t.x = {vx.offset, vx.s0, 0, vx.s1, 0};
        t.stride = u32(core::params<ggml_ext_conv_transpose_1d_params>(node).s0);
        t.height = 1, t.channels = u32(x->ne[1]), t.kh = 1, t.oh = 1, t.oc = u32(k->ne[1]);
    } else {
        t.k = vk, t.x = vx;
        t.stride = u32(core::params<ggml_ext_conv_transpose_2d_params>(node).stride);
        t.height = u32(x->ne[1]), t.channels = u32(x->ne[2]), t.kh = u32(k->ne[1]), t.oh = u32(node->ne[1]);
        t.oc = u32(k->ne[2]);
    }
    t.count = u32(ggml_nelements(node));
    rec.dispatch(std::string("conv_transpose_") + tn(k),
                 {rec.arg(k, false), rec.arg(x, false), rec.arg(node, true)}, t,
                 rec.groups_for(t.count, kLocalSize));
}

// ---- IM2COL_BACK -----------------------------------------------------------------------------------

// The 1-D op as the 2-D one: the gradient as (r, ow, oh, n), the result as (w, h, c, n).
struct Im2colBack {
    View g, d;
    int32_t s0, s1, p0, p1, d0, d1;
    uint32_t kw, kh, width, height, channels, ow, oh, count;
};

Im2colBack im2col_back_geometry(const ggml_tensor * node) {
    const ggml_tensor *k = node->src[0], *g = node->src[1];
    const auto p = core::params<ggml_ext_im2col_params>(node);
    Im2colBack b{};
    b.s0 = p.s0, b.p0 = p.p0, b.d0 = p.d0, b.kw = u32(k->ne[0]), b.width = u32(node->ne[0]),
    b.ow = u32(g->ne[1]);
    if (p.is_2d != 0) {
        b.s1 = p.s1, b.p1 = p.p1, b.d1 = p.d1, b.kh = u32(k->ne[1]), b.height = u32(node->ne[1]);
        b.channels = u32(node->ne[2]), b.oh = u32(g->ne[2]);
    } else {
        b.s1 = 1, b.p1 = 0, b.d1 = 1, b.kh = 1, b.height = 1, b.channels = u32(node->ne[1]), b.oh = 1;
    }
    return b;
}

bool supports_im2col_back(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *k = node->src[0], *g = node->src[1];
    if (!k || !g || g->type != GGML_TYPE_F32 || !float_tensor(device, g) || node->type != GGML_TYPE_F32 ||
        !float_tensor(device, node) || !ggml_is_contiguous(node))
        return false;
    const auto p = core::params<ggml_ext_im2col_params>(node);
    const bool is_2d = p.is_2d != 0;
    const Im2colBack b = im2col_back_geometry(node);
    const int64_t n = is_2d ? node->ne[3] : node->ne[2];
    // The gather's coordinates i + p - k*d (and the largest input position's) fit in 32 bits.
    const auto fits = [](int64_t in, int64_t taps, int64_t s, int64_t pad, int64_t d) {
        return s >= 1 && d >= 1 && pad >= 0 && taps * d <= kIntMax && in + pad <= kIntMax;
    };
    return fits(b.width, b.kw, b.s0, b.p0, b.d0) && fits(b.height, b.kh, b.s1, b.p1, b.d1) &&
           g->ne[0] == int64_t{b.channels} * b.kh * b.kw &&
           (is_2d ? g->ne[3] == n && node->ne[3] >= 1 : g->ne[2] == n && node->ne[3] == 1);
}

void record_im2col_back(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * g = node->src[1];
    Im2colBack b = im2col_back_geometry(node);
    const View vg = view(rec, g), vd = view(rec, node);
    if (core::params<ggml_ext_im2col_params>(node).is_2d != 0) {
        b.g = vg, b.d = vd;
    } else {  // gradient [C*KW, OW, N], result [W, C, N]
        b.g = {vg.offset, vg.s0, vg.s1, 0, vg.s2}, b.d = {vd.offset, vd.s0, 0, vd.s1, vd.s2};
    }
    b.count = u32(ggml_nelements(node));
    rec.dispatch("im2col_back", {rec.arg(g, false), rec.arg(node, true)}, b,
                 rec.groups_for(b.count, kLocalSize));
}

// ---- COL2IM_1D -------------------------------------------------------------------------------------

struct Col2im {
    View a, d;
    int32_t s0, p0;
    uint32_t taps, columns, width, count;
};

bool supports_col2im_1d(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!a || !float_tensor(device, a) || node->type != a->type || !float_tensor(device, node)) return false;
    const auto p = core::params<ggml_ext_col2im_1d_params>(node);
    return p.s0 >= 1 && p.p0 >= 0 && p.oc >= 1 && a->ne[0] % p.oc == 0 && node->ne[1] == p.oc &&
           node->ne[0] + p.p0 <= kIntMax && a->ne[1] <= kIntMax;
}

void record_col2im_1d(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const auto p = core::params<ggml_ext_col2im_1d_params>(node);
    Col2im c{};
    c.a = view(rec, a), c.d = view(rec, node), c.s0 = p.s0, c.p0 = p.p0;
    c.taps = u32(a->ne[0] / p.oc), c.columns = u32(a->ne[1]), c.width = u32(node->ne[0]);
    c.count = u32(node->ne[0] * node->ne[1]);
    rec.dispatch(std::string("col2im_1d_") + tn(a), {rec.arg(a, false), rec.arg(node, true)}, c,
                 rec.groups_for(c.count, kLocalSize));
}

// ---- POOL_1D, POOL_2D, POOL_2D_BACK ----------------------------------------------------------------

// The window as POOL_2D's (POOL_1D: k1 = s1 = 1, p1 = 0); ggml truncates the float paddings.
struct Window {
    int64_t k0 = 1, k1 = 1, s0 = 1, s1 = 1, p0 = 0, p1 = 0;
    int32_t op = -1;
};

Window window_of(const ggml_tensor * node) {
    Window w;
    if (node->op == GGML_OP_POOL_1D) {
        const auto p = core::params<ggml_ext_pool_1d_params>(node);
        w.op = p.op, w.k0 = p.k0, w.s0 = p.s0, w.p0 = p.p0;
        return w;
    }
    const auto p = core::params<ggml_ext_pool_2d_params>(node);
    w.op = p.op, w.k0 = p.k0, w.k1 = p.k1, w.s0 = p.s0, w.s1 = p.s1;
    // Paddings outside [0, 2^31) are rejected (valid_window); the cast is defined for them.
    const auto truncate = [](float v) {
        return v > -1.0f && v < 2147483648.0f ? static_cast<int64_t>(v) : -1;
    };
    w.p0 = truncate(p.p0), w.p1 = truncate(p.p1);
    return w;
}

// A window of the CPU's kinds whose positions o*s - p + k over outputs (and inputs) of extent
// out0 x out1 (in0 x in1) fit in 32 bits.
bool valid_window(const Window & w, int64_t out0, int64_t out1, int64_t in0, int64_t in1) {
    return (w.op == GGML_OP_POOL_MAX || w.op == GGML_OP_POOL_AVG) && w.k0 >= 1 && w.k1 >= 1 && w.s0 >= 1 &&
           w.s1 >= 1 && w.p0 >= 0 && w.p1 >= 0 && out0 * w.s0 + w.k0 <= kIntMax &&
           out1 * w.s1 + w.k1 <= kIntMax && in0 + w.p0 <= kIntMax && in1 + w.p1 <= kIntMax;
}

struct Pool {
    View a, d;
    int32_t k0, k1, s0, s1, p0, p1;
    uint32_t width, height, ow, oh, ne2, count;
    float scale;
};

bool supports_pool(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && float_tensor(device, a) && node->type == GGML_TYPE_F32 && float_tensor(device, node) &&
           valid_window(window_of(node), node->ne[0], node->ne[1], a->ne[0], a->ne[1]) &&
           node->ne[2] == a->ne[2] && node->ne[3] == a->ne[3] &&
           (node->op == GGML_OP_POOL_2D || node->ne[1] == a->ne[1]);
}

void record_pool(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const Window w = window_of(node);
    Pool p{};
    p.a = view(rec, a), p.d = view(rec, node);
    p.k0 = i32(w.k0), p.k1 = i32(w.k1), p.s0 = i32(w.s0), p.s1 = i32(w.s1), p.p0 = i32(w.p0),
    p.p1 = i32(w.p1);
    p.width = u32(a->ne[0]), p.height = u32(a->ne[1]), p.ow = u32(node->ne[0]), p.oh = u32(node->ne[1]);
    p.ne2 = u32(node->ne[2]), p.count = u32(ggml_nelements(node));
    p.scale = 1.0f / static_cast<float>(w.k0 * w.k1);
    rec.dispatch(std::string("pool_") + tn(a), {rec.arg(a, false), rec.arg(node, true)}, p,
                 rec.groups_for(p.count, kLocalSize), {w.op == GGML_OP_POOL_MAX ? 1u : 0u});
}

struct PoolBack {
    View g, a, d;
    int32_t k0, k1, s0, s1, p0, p1;
    uint32_t width, height, gw, gh, ne2, count;
    float share;
};

bool supports_pool_2d_back(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *g = node->src[0], *af = node->src[1];
    return g && af && float_tensor(device, g) && float_tensor(device, af) && node->type == GGML_TYPE_F32 &&
           float_tensor(device, node) && ggml_is_contiguous(node) && ggml_are_same_shape(af, node) &&
           valid_window(window_of(node), g->ne[0], g->ne[1], node->ne[0], node->ne[1]) &&
           g->ne[2] == node->ne[2] && g->ne[3] == node->ne[3];
}

void record_pool_2d_back(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *g = node->src[0], *af = node->src[1];
    const Window w = window_of(node);
    PoolBack p{};
    p.g = view(rec, g), p.a = view(rec, af), p.d = view(rec, node);
    p.k0 = i32(w.k0), p.k1 = i32(w.k1), p.s0 = i32(w.s0), p.s1 = i32(w.s1), p.p0 = i32(w.p0),
    p.p1 = i32(w.p1);
    p.width = u32(node->ne[0]), p.height = u32(node->ne[1]), p.gw = u32(g->ne[0]), p.gh = u32(g->ne[1]);
    p.ne2 = u32(node->ne[2]), p.count = u32(ggml_nelements(node));
    p.share = 1.0f / static_cast<float>(w.k0 * w.k1);
    rec.dispatch(std::string("pool_back_") + tn(g) + "_" + tn(af),
                 {rec.arg(g, false), rec.arg(af, false), rec.arg(node, true)}, p,
                 rec.groups_for(p.count, kLocalSize), {w.op == GGML_OP_POOL_MAX ? 1u : 0u});
}

}  // namespace

namespace kernels {
const Kernel im2col = vulkan_kernel<supports_im2col, nullptr, record_im2col>("vulkan.im2col");
const Kernel conv = vulkan_kernel<supports_conv, nullptr, record_conv>("vulkan.conv");
const Kernel conv_2d_dw = vulkan_kernel<supports_conv_2d_dw, nullptr, record_conv_2d_dw>("vulkan.conv_2d_dw");
const Kernel conv_transpose =
    vulkan_kernel<supports_conv_transpose, nullptr, record_conv_transpose>("vulkan.conv_transpose");
const Kernel im2col_back =
    vulkan_kernel<supports_im2col_back, nullptr, record_im2col_back>("vulkan.im2col_back");
const Kernel col2im_1d = vulkan_kernel<supports_col2im_1d, nullptr, record_col2im_1d>("vulkan.col2im_1d");
const Kernel pool = vulkan_kernel<supports_pool, nullptr, record_pool>("vulkan.pool");
const Kernel pool_2d_back =
    vulkan_kernel<supports_pool_2d_back, nullptr, record_pool_2d_back>("vulkan.pool_2d_back");
}  // namespace kernels

}  // namespace ggx::vulkan
