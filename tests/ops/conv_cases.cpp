// ggx-ops case table: IM2COL (2-D and 1-D; strides, paddings, dilations; F32/F16 inputs and
// results) and the ggml_conv_2d composite (IM2COL then MUL_MAT), with strided and permuted inputs.
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
}

}  // namespace ggx::ops
