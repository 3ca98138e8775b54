// ggx-ops case table of the convolution family: IM2COL (2-D and 1-D) and IM2COL_3D, the direct
// convolutions CONV_2D, CONV_2D_DW (also channels-first), CONV_3D, the transposed CONV_TRANSPOSE_1D/2D,
// the scatters IM2COL_BACK and COL2IM_1D, POOL_1D/2D (max, avg) and POOL_2D_BACK; strides, paddings,
// dilations, F32/F16 kernels and inputs, strided and permuted operands; the ggml_conv_2d, _dw and
// ggml_conv_3d composites; perf cases at a VAE decoder's shapes next to the im2col + MUL_MAT path.
#include "ggx-ops/case.h"

namespace ggx::ops {

namespace {

struct Conv {
    int64_t w, h, c, n, kw, kh;
    int s0, s1, p0, p1, d0, d1;
};
const Conv k2d[] = {{5, 4, 2, 1, 3, 3, 1, 1, 1, 1, 1, 1},  {7, 6, 3, 2, 3, 2, 2, 1, 0, 1, 1, 1},
                    {8, 8, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1},  {9, 7, 2, 1, 3, 3, 1, 2, 2, 1, 2, 1},
                    {6, 5, 4, 1, 5, 5, 1, 1, 2, 2, 1, 1},  {4, 4, 3, 2, 2, 2, 2, 2, 0, 0, 1, 1},
                    {11, 3, 1, 1, 3, 1, 3, 1, 1, 0, 2, 1}, {3, 3, 1, 1, 3, 3, 1, 1, 0, 0, 1, 1}};
// 1-D: h and kh unused (1); s1, p1, d1 ignored.
const Conv k1d[] = {{9, 1, 2, 1, 3, 1, 1, 0, 1, 0, 1, 0}, {16, 1, 3, 2, 5, 1, 2, 0, 2, 0, 1, 0},
                    {7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0}, {12, 1, 2, 3, 3, 1, 3, 0, 0, 0, 2, 0},
                    {5, 1, 4, 1, 5, 1, 1, 0, 2, 0, 1, 0}, {20, 1, 1, 1, 4, 1, 4, 0, 1, 0, 1, 0}};

std::string describe(const Conv & v, bool is_2d) {
    if (!is_2d) {
        return "x=" + str(Shape{v.w, v.c, v.n, 1}) +
               format(" k %lld s %d p %d d %d", static_cast<long long>(v.kw), v.s0, v.p0, v.d0);
    }
    return "x=" + str(Shape{v.w, v.h, v.c, v.n}) +
           format(" k %lldx%lld s %d,%d p %d,%d d %d,%d", static_cast<long long>(v.kw),
                  static_cast<long long>(v.kh), v.s0, v.s1, v.p0, v.p1, v.d0, v.d1);
}

void add_im2col(CaseList & list, const Conv & v, bool is_2d, ggml_type x_type, ggml_type dst, Layout layout) {
    list.add(GGML_OP_IM2COL,
             std::string(is_2d ? "2d " : "1d ") + str(x_type) + "->" + str(dst) + " " + describe(v, is_2d) +
                 " " + layout_name(layout),
             [=](Graph & g) {
                 const Shape k_ne = is_2d ? Shape{v.kw, v.kh, v.c, 2} : Shape{v.kw, v.c, 2, 1};
                 const Shape x_ne = is_2d ? Shape{v.w, v.h, v.c, v.n} : Shape{v.w, v.c, v.n, 1};
                 ggml_tensor * kernel = g.input(dst, k_ne);
                 return ggml_im2col(g.ctx(), kernel, g.input(x_type, x_ne, layout), v.s0, v.s1, v.p0, v.p1,
                                    v.d0, v.d1, is_2d, dst);
             });
}

void add_conv_2d(CaseList & list, const Conv & v, ggml_type k_type, Layout k_layout) {
    list.add(GGML_OP_IM2COL,
             "conv_2d " + str(k_type) + " kernel:" + layout_name(k_layout) + " " + describe(v, true),
             [=](Graph & g) {
                 ggml_tensor * kernel = g.input(k_type, {v.kw, v.kh, v.c, 3}, k_layout);
                 ggml_tensor * x = g.input(GGML_TYPE_F32, {v.w, v.h, v.c, v.n});
                 return ggml_conv_2d(g.ctx(), kernel, x, v.s0, v.s1, v.p0, v.p1, v.d0, v.d1);
             });
}

const ggml_type kConvTypes[] = {GGML_TYPE_F32, GGML_TYPE_F16};

// CONV_2D with O output channels (enough for several GEMM column panels when large).
void add_conv_2d_direct(CaseList & list, const Conv & v, int64_t o, ggml_type k_type, ggml_type x_type,
                        Layout k_layout, Layout x_layout) {
    list.add(GGML_OP_CONV_2D,
             str(k_type) + "*" + str(x_type) + " o=" + std::to_string(o) + " " + describe(v, true) +
                 " k:" + layout_name(k_layout) + " x:" + layout_name(x_layout),
             [=](Graph & g) {
                 ggml_tensor * kernel = g.input(k_type, {v.kw, v.kh, v.c, o}, k_layout);
                 ggml_tensor * x = g.input(x_type, {v.w, v.h, v.c, v.n}, x_layout);
                 return ggml_conv_2d_direct(g.ctx(), kernel, x, v.s0, v.s1, v.p0, v.p1, v.d0, v.d1);
             });
}

// x [W, H, C, N] as a view of a [C, W, H, N] leaf (channels innermost).
ggml_tensor * channels_first(Graph & g, ggml_type type, const Conv & v) {
    ggml_tensor * leaf = g.input(type, {v.c, v.w, v.h, v.n});
    return leaf ? ggml_permute(g.ctx(), leaf, 2, 0, 1, 3) : nullptr;
}

void add_conv_2d_dw(CaseList & list, const Conv & v, ggml_type k_type, ggml_type x_type, Layout x_layout,
                    bool cwhn) {
    list.add(GGML_OP_CONV_2D_DW,
             str(k_type) + "*" + str(x_type) + " " + describe(v, true) +
                 " x:" + (cwhn ? std::string("channels-first") : layout_name(x_layout)),
             [=](Graph & g) {
                 ggml_tensor * kernel = g.input(k_type, {v.kw, v.kh, 1, v.c});
                 ggml_tensor * x =
                     cwhn ? channels_first(g, x_type, v) : g.input(x_type, {v.w, v.h, v.c, v.n}, x_layout);
                 return ggml_conv_2d_dw_direct(g.ctx(), kernel, x, v.s0, v.s1, v.p0, v.p1, v.d0, v.d1);
             });
}

struct Conv3 {
    int64_t w, h, d, ic, n, oc, kw, kh, kd;
    int s0, s1, s2, p0, p1, p2, d0, d1, d2;
};
const Conv3 k3d[] = {{5, 4, 3, 2, 1, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                     {7, 5, 4, 3, 2, 2, 3, 2, 2, 2, 1, 2, 0, 1, 1, 1, 1, 1},
                     {6, 6, 5, 1, 1, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1},
                     {9, 5, 6, 2, 1, 3, 2, 2, 3, 1, 2, 1, 2, 0, 1, 2, 1, 2},
                     {33, 3, 2, 4, 2, 13, 3, 1, 2, 1, 1, 1, 1, 0, 1, 1, 1, 1},
                     {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1},
                     {4, 6, 2, 3, 2, 2, 1, 3, 1, 1, 2, 1, 0, 1, 0, 1, 1, 1},
                     {8, 3, 7, 2, 1, 5, 2, 2, 3, 2, 1, 3, 1, 1, 1, 1, 1, 1},
                     {5, 5, 5, 1, 3, 2, 3, 3, 3, 1, 1, 1, 2, 2, 2, 2, 2, 2},
                     {12, 2, 3, 5, 1, 3, 4, 1, 2, 3, 1, 1, 0, 0, 1, 1, 1, 1}};

// More output channels (GEMM tiles of a GPU: partial, several), samples and taps over several K
// slices.
const Conv3 k3d_wide[] = {{9, 5, 6, 2, 1, 20, 2, 2, 3, 1, 2, 1, 2, 0, 1, 2, 1, 2},
                          {7, 6, 4, 5, 2, 70, 3, 3, 2, 1, 1, 2, 1, 1, 1, 1, 2, 1}};

std::string describe(const Conv3 & v) {
    return format(
        "x=[%lld,%lld,%lld] ic %lld n %lld oc %lld k %lldx%lldx%lld s %d,%d,%d p %d,%d,%d d %d,%d,%d",
        static_cast<long long>(v.w), static_cast<long long>(v.h), static_cast<long long>(v.d),
        static_cast<long long>(v.ic), static_cast<long long>(v.n), static_cast<long long>(v.oc),
        static_cast<long long>(v.kw), static_cast<long long>(v.kh), static_cast<long long>(v.kd), v.s0, v.s1,
        v.s2, v.p0, v.p1, v.p2, v.d0, v.d1, v.d2);
}

// CONV_3D, or IM2COL_3D into columns of type t (kernel and input of type t and x_type).
void add_3d(CaseList & list, ggml_op op, const Conv3 & v, ggml_type t, ggml_type x_type, Layout x_layout) {
    const bool unfold = op == GGML_OP_IM2COL_3D;
    list.add(op,
             str(unfold ? x_type : t) + (unfold ? "->" : "*") + str(unfold ? t : x_type) + " " + describe(v) +
                 " x:" + layout_name(x_layout),
             [=](Graph & g) {
                 ggml_tensor * kernel = g.input(t, {v.kw, v.kh, v.kd, v.oc * v.ic});
                 ggml_tensor * x = g.input(x_type, {v.w, v.h, v.d, v.n * v.ic}, x_layout);
                 if (unfold)
                     return ggml_im2col_3d(g.ctx(), kernel, x, v.ic, v.s0, v.s1, v.s2, v.p0, v.p1, v.p2, v.d0,
                                           v.d1, v.d2, t);
                 return ggml_conv_3d_direct(g.ctx(), kernel, x, v.s0, v.s1, v.s2, v.p0, v.p1, v.p2, v.d0,
                                            v.d1, v.d2, static_cast<int>(v.ic), static_cast<int>(v.n),
                                            static_cast<int>(v.oc));
             });
}

// The ggml_conv_3d composite (IM2COL_3D of the kernel's type, then MUL_MAT).
void add_conv_3d_composite(CaseList & list, const Conv3 & v, ggml_type k_type) {
    list.add(GGML_OP_IM2COL_3D, "conv_3d " + str(k_type) + " " + describe(v), [=](Graph & g) {
        ggml_tensor * kernel = g.input(k_type, {v.kw, v.kh, v.kd, v.oc * v.ic});
        ggml_tensor * x = g.input(GGML_TYPE_F32, {v.w, v.h, v.d, v.n * v.ic});
        return ggml_conv_3d(g.ctx(), kernel, x, v.ic, v.s0, v.s1, v.s2, v.p0, v.p1, v.p2, v.d0, v.d1, v.d2);
    });
}

struct Transposed {
    int64_t w, h, c, n, kw, kh, oc;
    int stride;
};
const Transposed kTransposed[] = {
    {5, 4, 2, 1, 3, 3, 2, 1}, {6, 3, 3, 2, 3, 2, 4, 2},  {4, 4, 1, 1, 1, 1, 1, 1},
    {7, 5, 4, 1, 4, 4, 3, 3}, {3, 2, 5, 2, 2, 3, 13, 2}, {37, 2, 3, 1, 3, 3, 2, 1},
    {1, 1, 1, 1, 1, 1, 1, 1}, {9, 1, 2, 1, 5, 1, 3, 4},  {2, 7, 3, 2, 3, 5, 1, 2},
    {8, 8, 2, 1, 2, 2, 2, 2}, {5, 5, 6, 1, 3, 3, 5, 1},  {13, 3, 1, 3, 7, 2, 2, 5}};

void add_conv_transpose_2d(CaseList & list, const Transposed & v, ggml_type k_type, Layout layout) {
    list.add(GGML_OP_CONV_TRANSPOSE_2D,
             str(k_type) +
                 format(" x=[%lld,%lld,%lld,%lld] k %lldx%lld oc %lld s %d ", static_cast<long long>(v.w),
                        static_cast<long long>(v.h), static_cast<long long>(v.c), static_cast<long long>(v.n),
                        static_cast<long long>(v.kw), static_cast<long long>(v.kh),
                        static_cast<long long>(v.oc), v.stride) +
                 layout_name(layout),
             [=](Graph & g) {
                 ggml_tensor * kernel = g.input(k_type, {v.kw, v.kh, v.oc, v.c}, layout);
                 ggml_tensor * x = g.input(GGML_TYPE_F32, {v.w, v.h, v.c, v.n}, layout);
                 return ggml_conv_transpose_2d_p0(g.ctx(), kernel, x, v.stride);
             });
}

void add_conv_transpose_1d(CaseList & list, const Transposed & v, ggml_type k_type, Layout layout) {
    list.add(GGML_OP_CONV_TRANSPOSE_1D,
             str(k_type) +
                 format(" x=[%lld,%lld] k %lld oc %lld s %d ", static_cast<long long>(v.w),
                        static_cast<long long>(v.c), static_cast<long long>(v.kw),
                        static_cast<long long>(v.oc), v.stride) +
                 layout_name(layout),
             [=](Graph & g) {
                 ggml_tensor * kernel = g.input(k_type, {v.kw, v.oc, v.c, 1}, layout);
                 ggml_tensor * x = g.input(GGML_TYPE_F32, {v.w, v.c, 1, 1}, layout);
                 return ggml_conv_transpose_1d(g.ctx(), kernel, x, v.stride, 0, 1);
             });
}

void add_im2col_back(CaseList & list, const Conv & v, bool is_2d, Layout layout) {
    list.add(GGML_OP_IM2COL_BACK,
             std::string(is_2d ? "2d " : "1d ") + describe(v, is_2d) + " " + layout_name(layout),
             [=](Graph & g) {
                 const int64_t ow = (v.w + 2 * v.p0 - v.d0 * (v.kw - 1) - 1) / v.s0 + 1;
                 const int64_t oh = is_2d ? (v.h + 2 * v.p1 - v.d1 * (v.kh - 1) - 1) / v.s1 + 1 : 1;
                 ggml_tensor * kernel =
                     g.input(GGML_TYPE_F32, is_2d ? Shape{v.kw, v.kh, v.c, 2} : Shape{v.kw, v.c, 2, 1});
                 const Shape grad_ne =
                     is_2d ? Shape{v.c * v.kh * v.kw, ow, oh, v.n} : Shape{v.c * v.kw, ow, v.n, 1};
                 int64_t ne[4] = {v.w, is_2d ? v.h : v.c, is_2d ? v.c : v.n, is_2d ? v.n : 1};
                 return ggml_im2col_back(g.ctx(), kernel, g.input(GGML_TYPE_F32, grad_ne, layout), ne, v.s0,
                                         v.s1, v.p0, v.p1, v.d0, v.d1, is_2d);
             });
}

void add_col2im_1d(CaseList & list, ggml_type type, int64_t k, int64_t oc, int64_t t, int s0, int p0,
                   Layout layout) {
    list.add(GGML_OP_COL2IM_1D,
             str(type) +
                 format(" k %lld oc %lld t %lld s %d p %d ", static_cast<long long>(k),
                        static_cast<long long>(oc), static_cast<long long>(t), s0, p0) +
                 layout_name(layout),
             [=](Graph & g) {
                 return ggml_col2im_1d(g.ctx(), g.input(type, {k * oc, t, 1, 1}, layout), s0,
                                       static_cast<int>(oc), p0);
             });
}

// COL2IM_1D columns: one tap, more taps than the stride (overlaps) and fewer (gaps), paddings that
// crop up to all but one output of an edge.
struct Col2im {
    int64_t k, oc, t;
    int s0, p0;
};
const Col2im kCol2im[] = {{3, 2, 5, 1, 0}, {4, 3, 6, 2, 1},  {5, 1, 7, 3, 2},  {2, 4, 9, 2, 0},
                          {1, 1, 1, 1, 0}, {1, 5, 4, 1, 0},  {7, 2, 3, 1, 3},  {3, 3, 8, 5, 0},
                          {6, 1, 2, 2, 2}, {4, 16, 5, 4, 0}, {9, 2, 11, 2, 4}, {2, 1, 33, 1, 0}};

struct Pool {
    int64_t w, h, c, n;
    int k0, k1, s0, s1;
    float p0, p1;
};
const Pool kPools[] = {{8, 6, 2, 1, 2, 2, 2, 2, 0, 0},
                       {9, 7, 3, 2, 3, 3, 1, 1, 1, 1},
                       {7, 5, 1, 1, 3, 2, 2, 1, 1, 0},
                       {10, 10, 2, 1, 4, 4, 3, 3, 1.5f, 0.5f},
                       {5, 1, 3, 2, 5, 1, 1, 1, 2, 0}};

std::string describe(const Pool & v, bool is_2d) {
    return "a=" + str(Shape{v.w, v.h, v.c, v.n}) +
           (is_2d ? format(" k %dx%d s %d,%d p %g,%g", v.k0, v.k1, v.s0, v.s1, v.p0, v.p1)
                  : format(" k %d s %d p %d", v.k0, v.s0, static_cast<int>(v.p0)));
}

const char * pool_name(ggml_op_pool op) { return op == GGML_OP_POOL_MAX ? "max" : "avg"; }

void add_pool(CaseList & list, const Pool & v, bool is_2d, ggml_op_pool op, ggml_type type, Layout layout) {
    list.add(
        is_2d ? GGML_OP_POOL_2D : GGML_OP_POOL_1D,
        std::string(pool_name(op)) + " " + str(type) + " " + describe(v, is_2d) + " " + layout_name(layout),
        [=](Graph & g) {
            ggml_tensor * a = g.input(type, {v.w, v.h, v.c, v.n}, layout);
            return is_2d ? ggml_pool_2d(g.ctx(), a, op, v.k0, v.k1, v.s0, v.s1, v.p0, v.p1)
                         : ggml_pool_1d(g.ctx(), a, op, v.k0, v.s0, static_cast<int>(v.p0));
        });
}

void add_pool_2d_back(CaseList & list, const Pool & v, ggml_op_pool op, ggml_type type, Layout layout) {
    list.add(
        GGML_OP_POOL_2D_BACK,
        std::string(pool_name(op)) + " " + str(type) + " " + describe(v, true) + " " + layout_name(layout),
        [=](Graph & g) {
            ggml_tensor * af = g.input(type, {v.w, v.h, v.c, v.n}, layout);
            const auto out = [](int64_t in, int k, int s, float p) {
                return static_cast<int64_t>((static_cast<float>(in) + 2 * p - static_cast<float>(k)) / s + 1);
            };
            ggml_tensor * grad =
                g.input(type, {out(v.w, v.k0, v.s0, v.p0), out(v.h, v.k1, v.s1, v.p1), v.c, v.n}, layout);
            return ggml_pool_2d_back(g.ctx(), grad, af, op, v.k0, v.k1, v.s0, v.s1, v.p0, v.p1);
        });
}

// Larger shapes for the GEMM path: several row and column panels, panels across output rows,
// more taps than one k block.
const Conv kConvLarge[] = {{37, 9, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1},
                           {12, 10, 64, 1, 3, 3, 1, 1, 1, 1, 1, 1},
                           {19, 17, 7, 1, 5, 3, 2, 1, 2, 1, 1, 2}};

void add_direct_cases(CaseList & list) {
    for (ggml_type k_type : kConvTypes)
        for (ggml_type x_type : kConvTypes) {
            for (const Conv & v : k2d)
                for (Layout x_layout : {Layout::Contiguous, Layout::Permuted, Layout::Strided})
                    add_conv_2d_direct(list, v, 3, k_type, x_type, Layout::Contiguous, x_layout);
            for (const Conv & v : kConvLarge)
                add_conv_2d_direct(list, v, 20, k_type, x_type, Layout::Contiguous, Layout::Contiguous);
            // Output channels over more than one tile of a GPU's GEMM, strided and permuted operands.
            add_conv_2d_direct(list, kConvLarge[2], 70, k_type, x_type, Layout::Permuted, Layout::Strided);
            add_conv_2d_direct(list, k2d[1], 5, k_type, x_type, Layout::Permuted, Layout::Contiguous);
            for (const Conv & v : k2d) {
                for (Layout x_layout : {Layout::Contiguous, Layout::Strided})
                    add_conv_2d_dw(list, v, k_type, x_type, x_layout, false);
                add_conv_2d_dw(list, v, k_type, x_type, Layout::Contiguous, true);
            }
            for (const Conv3 & v : k3d)
                for (Layout x_layout : {Layout::Contiguous, Layout::Strided})
                    add_3d(list, GGML_OP_CONV_3D, v, k_type, x_type, x_layout);
            for (const Conv3 & v : k3d_wide)
                add_3d(list, GGML_OP_CONV_3D, v, k_type, x_type, Layout::Strided);
            for (const Conv3 & v : k3d)
                for (Layout x_layout : {Layout::Contiguous, Layout::Permuted, Layout::Strided})
                    add_3d(list, GGML_OP_IM2COL_3D, v, k_type, x_type, x_layout);
        }
    for (ggml_type k_type : kConvTypes) {
        for (const Conv3 & v : k3d)
            add_conv_3d_composite(list, v, k_type);
        for (const Transposed & v : kTransposed)
            for (Layout layout : kAllLayouts) {
                add_conv_transpose_2d(list, v, k_type, layout);
                add_conv_transpose_1d(list, v, k_type, layout);
            }
    }
}

// Empty operands the constructors accept: no input channels (empty sums), no samples, no planes.
void add_empty_cases(CaseList & list) {
    const Conv no_channels{6, 5, 0, 2, 3, 3, 1, 1, 1, 1, 1, 1},
        no_samples{6, 5, 3, 0, 3, 3, 1, 1, 1, 1, 1, 1};
    for (ggml_type type : kConvTypes) {
        add_conv_2d_direct(list, no_channels, 4, type, type, Layout::Contiguous, Layout::Contiguous);
        add_conv_2d_direct(list, no_samples, 4, type, type, Layout::Contiguous, Layout::Contiguous);
        add_conv_2d_dw(list, no_samples, type, type, Layout::Contiguous, false);
        add_conv_transpose_2d(list, {4, 3, 0, 1, 3, 3, 2, 2}, type, Layout::Contiguous);
        add_3d(list, GGML_OP_IM2COL_3D, {5, 4, 3, 2, 0, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, type, type,
               Layout::Contiguous);
    }
    for (ggml_op_pool op : {GGML_OP_POOL_MAX, GGML_OP_POOL_AVG}) {
        add_pool(list, {6, 4, 0, 1, 2, 2, 2, 2, 0, 0}, true, op, GGML_TYPE_F32, Layout::Contiguous);
        add_pool(list, {6, 4, 0, 1, 2, 2, 2, 2, 0, 0}, false, op, GGML_TYPE_F32, Layout::Contiguous);
        add_pool_2d_back(list, {6, 4, 0, 1, 2, 2, 2, 2, 0, 0}, op, GGML_TYPE_F32, Layout::Contiguous);
    }
}

void add_scatter_and_pool_cases(CaseList & list) {
    for (Layout layout : kAllLayouts) {
        for (const Conv & v : k2d)
            add_im2col_back(list, v, true, layout);
        for (const Conv & v : k1d)
            add_im2col_back(list, v, false, layout);
    }
    for (ggml_type type : kFloatTypes)
        for (Layout layout : {Layout::Contiguous, Layout::Strided, Layout::Transposed})
            for (const Col2im & c : kCol2im)
                add_col2im_1d(list, type, c.k, c.oc, c.t, c.s0, c.p0, layout);
    for (ggml_type type : kFloatTypes)
        for (ggml_op_pool op : {GGML_OP_POOL_MAX, GGML_OP_POOL_AVG})
            for (Layout layout : {Layout::Contiguous, Layout::Permuted, Layout::Strided})
                for (const Pool & v : kPools) {
                    add_pool(list, v, true, op, type, layout);
                    add_pool(list, v, false, op, type, layout);
                    add_pool_2d_back(list, v, op, type, layout);
                }
}

// Perf at a VAE decoder's shapes (512 channels, 128 x 128), each next to the path it replaces or
// the GEMM it is measured against: CONV_2D and CONV_3D against ggml_conv_2d / ggml_conv_3d
// (IM2COL + MUL_MAT), CONV_2D_DW against ggml_conv_2d_dw, CONV_TRANSPOSE_2D against the MUL_MAT of
// its column GEMM, IM2COL_3D and POOL_2D on their own.
void add_perf_cases(CaseList & list) {
    const int64_t c = 512, w = 128;
    const double conv_flops = 2.0 * w * w * c * c * 9;
    for (ggml_type k_type : kConvTypes) {
        list.add_perf(GGML_OP_CONV_2D, "perf vae " + str(k_type) + " 3x3 c=512 128x128", conv_flops,
                      [=](Graph & g) {
                          return ggml_conv_2d_direct(g.ctx(), g.input(k_type, {3, 3, c, c}),
                                                     g.input(GGML_TYPE_F32, {w, w, c, 1}), 1, 1, 1, 1, 1, 1);
                      });
        list.add_perf(GGML_OP_IM2COL, "perf vae ggml_conv_2d " + str(k_type) + " 3x3 c=512 128x128",
                      conv_flops, [=](Graph & g) {
                          return ggml_conv_2d(g.ctx(), g.input(k_type, {3, 3, c, c}),
                                              g.input(GGML_TYPE_F32, {w, w, c, 1}), 1, 1, 1, 1, 1, 1);
                      });
    }
    // The same layer at a size a software device (lavapipe) times in seconds: 128 channels, 64 x 64.
    const int64_t sc = 128, sw = 64;
    list.add_perf(GGML_OP_CONV_2D, "perf f32 3x3 c=128 64x64", 2.0 * sw * sw * sc * sc * 9, [=](Graph & g) {
        return ggml_conv_2d_direct(g.ctx(), g.input(GGML_TYPE_F32, {3, 3, sc, sc}),
                                   g.input(GGML_TYPE_F32, {sw, sw, sc, 1}), 1, 1, 1, 1, 1, 1);
    });
    const double dw_flops = 2.0 * w * w * c * 9;
    list.add_perf(
        GGML_OP_CONV_2D_DW, "perf vae f32 3x3 c=512 128x128 channels-first", dw_flops, [=](Graph & g) {
            ggml_tensor * x = ggml_permute(g.ctx(), g.input(GGML_TYPE_F32, {c, w, w, 1}), 2, 0, 1, 3);
            return ggml_conv_2d_dw_direct(g.ctx(), g.input(GGML_TYPE_F32, {3, 3, 1, c}), x, 1, 1, 1, 1, 1, 1);
        });
    list.add_perf(GGML_OP_CONV_2D_DW, "perf vae f32 3x3 c=512 128x128", dw_flops, [=](Graph & g) {
        return ggml_conv_2d_dw_direct(g.ctx(), g.input(GGML_TYPE_F32, {3, 3, 1, c}),
                                      g.input(GGML_TYPE_F32, {w, w, c, 1}), 1, 1, 1, 1, 1, 1);
    });
    list.add_perf(GGML_OP_IM2COL, "perf vae ggml_conv_2d_dw f32 3x3 c=512 128x128", dw_flops, [=](Graph & g) {
        return ggml_conv_2d_dw(g.ctx(), g.input(GGML_TYPE_F32, {3, 3, 1, c}),
                               g.input(GGML_TYPE_F32, {w, w, c, 1}), 1, 1, 1, 1, 1, 1);
    });
    // The GEMM CONV_2D computes: weights [C*9, O] times the unfolded input [C*9, W*H].
    list.add_perf(GGML_OP_MUL_MAT, "perf vae conv_2d gemm f32 m=512 k=4608 n=16384", conv_flops,
                  [=](Graph & g) {
                      return ggml_mul_mat(g.ctx(), g.input(GGML_TYPE_F32, {c * 9, c, 1, 1}),
                                          g.input(GGML_TYPE_F32, {c * 9, w * w, 1, 1}));
                  });
    // Transposed: x [64, 64, 128], 4x4 kernel, stride 2; its GEMM is [C, KW*KH*OC] x [C, W*H].
    const int64_t tw = 64, tk = 4, tc = 128;
    const double transposed_flops = 2.0 * tw * tw * tc * tc * tk * tk;
    list.add_perf(GGML_OP_CONV_TRANSPOSE_2D, "perf vae f32 4x4 s2 c=128 64x64", transposed_flops,
                  [=](Graph & g) {
                      return ggml_conv_transpose_2d_p0(g.ctx(), g.input(GGML_TYPE_F32, {tk, tk, tc, tc}),
                                                       g.input(GGML_TYPE_F32, {tw, tw, tc, 1}), 2);
                  });
    list.add_perf(GGML_OP_MUL_MAT, "perf vae conv_transpose gemm f32 m=2048 k=128 n=4096", transposed_flops,
                  [=](Graph & g) {
                      return ggml_mul_mat(g.ctx(), g.input(GGML_TYPE_F32, {tc, tk * tk * tc, 1, 1}),
                                          g.input(GGML_TYPE_F32, {tc, tw * tw, 1, 1}));
                  });
    // 3-D: a video VAE's [32, 32, 8] volumes of 128 channels, 3x3x3.
    const int64_t vc = 128, vw = 32, vd = 8;
    const double conv3d_flops = 2.0 * vw * vw * vd * vc * vc * 27;
    list.add_perf(GGML_OP_CONV_3D, "perf vae f32 3x3x3 c=128 32x32x8", conv3d_flops, [=](Graph & g) {
        return ggml_conv_3d_direct(g.ctx(), g.input(GGML_TYPE_F32, {3, 3, 3, vc * vc}),
                                   g.input(GGML_TYPE_F32, {vw, vw, vd, vc}), 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                   static_cast<int>(vc), 1, static_cast<int>(vc));
    });
    list.add_perf(
        GGML_OP_IM2COL_3D, "perf vae ggml_conv_3d f32 3x3x3 c=128 32x32x8", conv3d_flops, [=](Graph & g) {
            return ggml_conv_3d(g.ctx(), g.input(GGML_TYPE_F32, {3, 3, 3, vc * vc}),
                                g.input(GGML_TYPE_F32, {vw, vw, vd, vc}), vc, 1, 1, 1, 1, 1, 1, 1, 1, 1);
        });
    list.add_perf(GGML_OP_IM2COL_3D, "perf vae f32->f16 3x3x3 c=128 32x32x8", 0.0, [=](Graph & g) {
        return ggml_im2col_3d(g.ctx(), g.input(GGML_TYPE_F16, {3, 3, 3, vc * vc}),
                              g.input(GGML_TYPE_F32, {vw, vw, vd, vc}), vc, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                              GGML_TYPE_F16);
    });
    list.add_perf(GGML_OP_POOL_2D, "perf vae avg f32 2x2 c=512 128x128", 0.0, [=](Graph & g) {
        return ggml_pool_2d(g.ctx(), g.input(GGML_TYPE_F32, {w, w, c, 1}), GGML_OP_POOL_AVG, 2, 2, 2, 2, 0,
                            0);
    });
}

}  // namespace

void add_conv_cases(CaseList & list) {
    for (ggml_type x_type : {GGML_TYPE_F32, GGML_TYPE_F16}) {
        for (ggml_type dst : {GGML_TYPE_F32, GGML_TYPE_F16}) {
            for (Layout layout : {Layout::Contiguous, Layout::Permuted, Layout::Strided}) {
                for (const Conv & v : k2d)
                    add_im2col(list, v, true, x_type, dst, layout);
            }
            for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
                for (const Conv & v : k1d)
                    add_im2col(list, v, false, x_type, dst, layout);
            }
        }
    }
    for (ggml_type k_type : {GGML_TYPE_F32, GGML_TYPE_F16}) {
        for (Layout k_layout : {Layout::Contiguous, Layout::Permuted}) {
            for (const Conv & v : k2d)
                add_conv_2d(list, v, k_type, k_layout);
        }
    }
    add_direct_cases(list);
    add_scatter_and_pool_cases(list);
    add_empty_cases(list);
    add_perf_cases(list);
}

}  // namespace ggx::ops
