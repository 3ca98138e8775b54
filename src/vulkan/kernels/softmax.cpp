// Vulkan kernels of SOFT_MAX and SOFT_MAX_BACK (row_back.comp, recorded by norm.cpp). SOFT_MAX: F32 with an
// optional F32/F16 mask and optional F32 sinks, any strides (soft_max.comp); one workgroup per row.
#include <bit>
#include <string>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

bool supports_soft_max(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * mask = node->src[1];
    const ggml_tensor * sinks = node->src[2];  // ggml_soft_max_add_sinks: F32 [ne2]
    if (!same_f32_shape(device, node)) return false;
    if (sinks && (sinks->type != GGML_TYPE_F32 || !ggml_is_vector(sinks) || sinks->ne[0] != a->ne[2] ||
                  !float_tensor(device, sinks)))
        return false;
    return !mask ||
           ((mask->type == GGML_TYPE_F32 || mask->type == GGML_TYPE_F16) && float_tensor(device, mask) &&
            mask->ne[0] == a->ne[0] && mask->ne[1] >= a->ne[1] && mask->ne[2] > 0 && mask->ne[3] > 0 &&
            a->ne[2] % mask->ne[2] == 0 && a->ne[3] % mask->ne[3] == 0);
}

void record_soft_max(Recorder & rec, const ggml_tensor * node) {
    if (ggml_nelements(node) == 0) return;
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * mask = node->src[1];
    const ggml_tensor * sinks = node->src[2];
    const ggml_tensor * m = mask ? mask : a;    // bound but not read without a mask
    const ggml_tensor * s = sinks ? sinks : a;  // likewise without sinks
    const auto softmax = core::params<ggml_ext_soft_max_params>(node);
    struct {
        Shape ne;
        View a, m, d, s;
        uint32_t mask_ne2, mask_ne3;
        float scale, max_bias;
        uint32_t n_head_log2;
    } push{shape_of(node),
           view_of(rec, a, sizeof(float)),
           view_of(rec, m, float_unit(m->type)),
           view_of(rec, node, sizeof(float)),
           view_of(rec, s, sizeof(float)),
           static_cast<uint32_t>(m->ne[2]),
           static_cast<uint32_t>(m->ne[3]),
           softmax.scale,
           softmax.max_bias,
           std::bit_floor(static_cast<uint32_t>(node->ne[2]))};
    const uint32_t local_size = block_size(static_cast<uint64_t>(node->ne[0]));
    rec.dispatch(std::string("soft_max_") + float_type_name(m->type),
                 {rec.arg(a, false), rec.arg(m, false), rec.arg(node, true), rec.arg(s, false)}, push,
                 unit_groups(rec, static_cast<uint64_t>(ggml_nrows(node)), local_size),
                 {local_size, mask ? 1u : 0u, sinks ? 1u : 0u});
}

// SOFT_MAX_BACK(dy, y): F32 of one shape (row_back.comp, in norm.cpp).
bool supports_soft_max_back(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * y = node->src[1];
    return same_f32_shape(device, node) && y && y->type == GGML_TYPE_F32 && ggml_are_same_shape(y, node) &&
           float_tensor(device, y);
}

void record_soft_max_back(Recorder & rec, const ggml_tensor * node) {
    kernels::record_row_back(rec, node, kernels::RowBack::kSoftMax,
                             core::params<ggml_ext_soft_max_params>(node).scale);
}

}  // namespace

namespace kernels {
const Kernel soft_max_back =
    vulkan_kernel<supports_soft_max_back, nullptr, record_soft_max_back>("vulkan.soft_max_back");
const Kernel soft_max = vulkan_kernel<supports_soft_max, nullptr, record_soft_max>("vulkan.soft_max");
}  // namespace kernels

}  // namespace ggx::vulkan
