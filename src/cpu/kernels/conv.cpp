// CPU kernel of IM2COL: unfolds input x (F32/F16, any strides) for a kernel of shape src[0] into
// columns of type F32/F16. 2-D: dst[(c*KH + kh)*KW + kw, ow, oh, n] = x[ow*s0 + kw*d0 - p0,
// oh*s1 + kh*d1 - p1, c, n]; 1-D is the same with KH = H = OH = 1 and x [W, C, N]. Positions
// outside the input read as 0. Work is split over the (ow, oh, n) columns.
#include "core/internal.h"
#include "cpu/kernels/common.h"

namespace ggx::cpu {
namespace {

// Sizes and byte strides with the 1-D case mapped onto the 2-D one (KH = H = OH = 1).
struct Geometry {
    int64_t s0, s1, p0, p1, d0, d1;
    int64_t kw, kh, width, height, channels, ow, oh, batch;
    size_t x_w, x_h, x_c, x_n;            // input strides of w, h, c, n
    size_t dst_row, dst_w, dst_h, dst_n;  // result strides of the column row, ow, oh, n
};

Geometry geometry(const ggml_tensor * node) {
    const ggml_tensor * k = node->src[0];
    const ggml_tensor * x = node->src[1];
    const auto p = core::params<ggml_ext_im2col_params>(node);
    Geometry g{};
    g.s0 = p.s0, g.p0 = p.p0, g.d0 = p.d0;
    g.kw = k->ne[0], g.width = x->ne[0], g.ow = node->ne[1];
    g.x_w = x->nb[0], g.dst_row = node->nb[0], g.dst_w = node->nb[1];
    if (p.is_2d != 0) {
        g.s1 = p.s1, g.p1 = p.p1, g.d1 = p.d1;
        g.kh = k->ne[1], g.height = x->ne[1], g.channels = x->ne[2], g.oh = node->ne[2],
        g.batch = node->ne[3];
        g.x_h = x->nb[1], g.x_c = x->nb[2], g.x_n = x->nb[3];
        g.dst_h = node->nb[2], g.dst_n = node->nb[3];
    } else {
        g.s1 = 1, g.p1 = 0, g.d1 = 1;
        g.kh = 1, g.height = 1, g.channels = x->ne[1], g.oh = 1, g.batch = node->ne[2];
        g.x_h = 0, g.x_c = x->nb[1], g.x_n = x->nb[2];
        g.dst_h = 0, g.dst_n = node->nb[2];
    }
    return g;
}

// Column (ow, oh, n) for input type In and result type Out (constant, so the conversions inline).
template <ggml_type In, ggml_type Out>
void column(const Geometry & g, const char * x, char * dst, int64_t ow, int64_t oh, int64_t n) {
    const char * sample = x + n * g.x_n;
    char * out = dst + ow * g.dst_w + oh * g.dst_h + n * g.dst_n;
    for (int64_t c = 0; c < g.channels; ++c)
        for (int64_t kh = 0; kh < g.kh; ++kh) {
            const int64_t ih = oh * g.s1 + kh * g.d1 - g.p1;
            const bool row_inside = ih >= 0 && ih < g.height;
            for (int64_t kw = 0; kw < g.kw; ++kw, out += g.dst_row) {
                const int64_t iw = ow * g.s0 + kw * g.d0 - g.p0;
                const float v = row_inside && iw >= 0 && iw < g.width
                                    ? load_float(In, sample + c * g.x_c + ih * g.x_h + iw * g.x_w)
                                    : 0.0f;
                store_float(Out, out, v);
            }
        }
}

template <ggml_type In, ggml_type Out>
void columns(const ComputeParams & params, const Geometry & g, const char * x, char * dst) {
    const auto [begin, end] = chunk_range(g.ow * g.oh * g.batch, params.ith(), params.nth());
    for (int64_t u = begin; u < end && !params.should_stop(); ++u)
        column<In, Out>(g, x, dst, u % g.ow, u / g.ow % g.oh, u / (g.ow * g.oh));
}

bool f32_or_f16(ggml_type type) { return type == GGML_TYPE_F32 || type == GGML_TYPE_F16; }

bool supports(const ggml_tensor * node) {
    const ggml_tensor * k = node->src[0];
    const ggml_tensor * x = node->src[1];
    if (k == nullptr || x == nullptr || !f32_or_f16(x->type) || !f32_or_f16(node->type)) return false;
    const bool is_2d = core::params<ggml_ext_im2col_params>(node).is_2d != 0;
    const Geometry g = geometry(node);
    const bool params_ok = g.s0 >= 1 && g.s1 >= 1 && g.d0 >= 1 && g.d1 >= 1 && g.p0 >= 0 && g.p1 >= 0;
    const bool shape_ok =
        is_2d ? node->ne[0] == g.channels * g.kh * g.kw && node->ne[3] == x->ne[3]
              : node->ne[0] == g.channels * g.kw && node->ne[2] == x->ne[2] && node->ne[3] == 1;
    return params_ok && shape_ok;
}

void compute(const ComputeParams & params, ggml_tensor * node) {
    const Geometry g = geometry(node);
    const char * x = static_cast<const char *>(node->src[1]->data);
    char * dst = static_cast<char *>(node->data);
    constexpr auto f32 = GGML_TYPE_F32, f16 = GGML_TYPE_F16;
    const bool in32 = node->src[1]->type == f32, out32 = node->type == f32;
    if (in32 && out32) columns<f32, f32>(params, g, x, dst);
    if (in32 && !out32) columns<f32, f16>(params, g, x, dst);
    if (!in32 && out32) columns<f16, f32>(params, g, x, dst);
    if (!in32 && !out32) columns<f16, f16>(params, g, x, dst);
}

}  // namespace

namespace kernels {
const Kernel im2col = cpu_kernel<supports, nullptr, compute>("cpu.im2col");
}  // namespace kernels

}  // namespace ggx::cpu
