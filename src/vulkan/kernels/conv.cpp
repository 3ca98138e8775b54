// Vulkan kernel of the conv ops: IM2COL (1-D and 2-D, F32/F16 input and result, any input and
// result strides; im2col.comp).
#include <cstdint>
#include <limits>
#include <string>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

bool f32_or_f16(const Device & device, const ggml_tensor * tensor) {
    return (tensor->type == GGML_TYPE_F32 || tensor->type == GGML_TYPE_F16) && float_tensor(device, tensor);
}

// ---- IM2COL ----------------------------------------------------------------------------------------

constexpr uint32_t kIm2colLocalSize = 256;
constexpr uint32_t kIm2colChunk = 16;  // columns per invocation (im2col.comp CHUNK)

// The op as a 2-D one (a 1-D im2col is a 2-D one with KH = H = OH = 1): the views address x as
// (w, h, c, n) and d as (r, ow, oh, n).
struct Im2col {
    View x, d;
    int32_t s0, s1, p0, p1, d0, d1;
    uint32_t kw, kh, width, height;
    uint32_t rows, ow, ow_chunks, oh, count;
};

bool is_2d(const ggml_tensor * node) { return core::params<ggml_ext_im2col_params>(node).is_2d != 0; }

// Whether the input coordinates the shader steps through along dimension i (in int, one stride past
// the last column) fit in 32 bits.
bool coordinates_fit(const ggml_tensor * node, int i) {
    const auto im2col = core::params<ggml_ext_im2col_params>(node);
    const int64_t s = i ? im2col.s1 : im2col.s0, p = i ? im2col.p1 : im2col.p0, d = i ? im2col.d1 : im2col.d0;
    if (s < 1 || p < 0 || d < 1) return false;
    const int64_t reach = node->ne[1 + i] * s + (node->src[0]->ne[i] - 1) * d;
    return reach <= std::numeric_limits<int32_t>::max();
}

bool supports_im2col(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *k = node->src[0], *x = node->src[1];
    if (!k || !x || !f32_or_f16(device, x) || !f32_or_f16(device, node)) return false;
    const int dims = is_2d(node) ? 2 : 1;
    for (int i = 0; i < dims; ++i) {
        if (!coordinates_fit(node, i)) return false;
    }
    const int64_t channels = x->ne[dims], batch = x->ne[dims + 1];
    const int64_t patch = k->ne[0] * (dims == 2 ? k->ne[1] : 1);
    return node->ne[0] == channels * patch && node->ne[dims + 1] == batch && (dims == 2 || node->ne[3] == 1);
}

Im2col im2col_geometry(const Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *k = node->src[0], *x = node->src[1];
    const View vx = view_of(rec, x, float_unit(x->type)), vd = view_of(rec, node, float_unit(node->type));
    const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
    Im2col g{};
    const auto im2col = core::params<ggml_ext_im2col_params>(node);
    g.s0 = im2col.s0, g.p0 = im2col.p0, g.d0 = im2col.d0;
    g.kw = u32(k->ne[0]), g.width = u32(x->ne[0]), g.rows = u32(node->ne[0]), g.ow = u32(node->ne[1]);
    g.ow_chunks = (g.ow + kIm2colChunk - 1) / kIm2colChunk;
    uint32_t batch;
    if (is_2d(node)) {
        g.s1 = im2col.s1, g.p1 = im2col.p1, g.d1 = im2col.d1;
        g.kh = u32(k->ne[1]), g.height = u32(x->ne[1]), g.oh = u32(node->ne[2]), batch = u32(node->ne[3]);
        g.x = vx, g.d = vd;
    } else {
        g.s1 = 1, g.p1 = 0, g.d1 = 1;
        g.kh = 1, g.height = 1, g.oh = 1, batch = u32(node->ne[2]);
        g.x = {vx.offset, vx.s0, 0, vx.s1, vx.s2};
        g.d = {vd.offset, vd.s0, vd.s1, 0, vd.s2};
    }
    g.count = g.rows * g.ow_chunks * g.oh * batch;
    return g;
}

void record_im2col(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * x = node->src[1];
    const Im2col g = im2col_geometry(rec, node);
    rec.dispatch(std::string("im2col_") + float_type_name(x->type) + "_" + float_type_name(node->type),
                 {rec.arg(x, false), rec.arg(node, true)}, g, rec.groups_for(g.count, kIm2colLocalSize));
}

}  // namespace

namespace kernels {
const Kernel im2col = vulkan_kernel<supports_im2col, nullptr, record_im2col>("vulkan.im2col");
}  // namespace kernels

}  // namespace ggx::vulkan
