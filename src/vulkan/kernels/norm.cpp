// Vulkan kernels of the normalisation ops: NORM, RMS_NORM, L2_NORM and GROUP_NORM (norm.comp, F32,
// any strides), one workgroup per row or group; RMS_NORM_BACK (row_back.comp, which SOFT_MAX_BACK
// shares), one workgroup per row.
#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

bool supports_group_norm(const Device & device, const ggml_tensor * node) {
    const int32_t groups = core::params<ggml_ext_group_norm_params>(node).n_groups;
    return same_f32_shape(device, node) && groups >= 1 && groups <= node->ne[2];
}

uint32_t norm_op(ggml_op op) {
    switch (op) {
        case GGML_OP_RMS_NORM:
            return 1;
        case GGML_OP_L2_NORM:
            return 2;
        default:
            return 0;
    }
}

void record_norm(Recorder & rec, const ggml_tensor * node) {
    if (ggml_nelements(node) == 0) return;
    const ggml_tensor * a = node->src[0];
    // A workgroup normalises per_group consecutive channels of slice elements of one sample: for the
    // row norms a channel is a row and a sample holds one; for GROUP_NORM a channel is an ne0 * ne1
    // plane and a group ceil(ne2 / groups) of them (the last group may have fewer).
    const bool group = node->op == GGML_OP_GROUP_NORM;
    const uint32_t slice = static_cast<uint32_t>(group ? node->ne[0] * node->ne[1] : node->ne[0]);
    const uint32_t channels = group ? static_cast<uint32_t>(node->ne[2]) : 1;
    const uint32_t requested =
        group ? static_cast<uint32_t>(core::params<ggml_ext_group_norm_params>(node).n_groups) : 1;
    const uint32_t per_group = (channels + requested - 1) / requested;
    const uint32_t groups = (channels + per_group - 1) / per_group;
    const uint64_t units = group ? static_cast<uint64_t>(node->ne[3]) * groups : ggml_nrows(node);
    struct {
        Shape ne;
        View x, d;
        uint32_t slice, channels, per_group, groups;
        float eps;
    } push{shape_of(node),
           view_of(rec, a, sizeof(float)),
           view_of(rec, node, sizeof(float)),
           slice,
           channels,
           per_group,
           groups,
           group ? core::params<ggml_ext_group_norm_params>(node).eps
                 : core::params<ggml_ext_norm_params>(node).eps};
    const uint32_t local_size = block_size(uint64_t{slice} * per_group);
    rec.dispatch("norm", {rec.arg(a, false), rec.arg(node, true)}, push, unit_groups(rec, units, local_size),
                 {local_size, norm_op(node->op)});
}

// RMS_NORM_BACK(dy, x): F32 of one shape.
bool supports_rms_norm_back(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * x = node->src[1];
    return same_f32_shape(device, node) && x && x->type == GGML_TYPE_F32 && ggml_are_same_shape(x, node) &&
           float_tensor(device, x);
}

void record_rms_norm_back(Recorder & rec, const ggml_tensor * node) {
    kernels::record_row_back(rec, node, kernels::RowBack::kRmsNorm,
                             core::params<ggml_ext_norm_params>(node).eps);
}

}  // namespace

void kernels::record_row_back(Recorder & rec, const ggml_tensor * node, RowBack op, float param) {
    if (ggml_nelements(node) == 0) return;
    const ggml_tensor *dy = node->src[0], *x = node->src[1];
    struct {
        Shape ne;
        View dy, x, d;
        float param;
    } push{shape_of(node), view_of(rec, dy, 4), view_of(rec, x, 4), view_of(rec, node, 4), param};
    const uint32_t local_size = block_size(static_cast<uint64_t>(node->ne[0]));
    rec.dispatch("row_back", {rec.arg(dy, false), rec.arg(x, false), rec.arg(node, true)}, push,
                 unit_groups(rec, static_cast<uint64_t>(ggml_nrows(node)), local_size),
                 {local_size, static_cast<uint32_t>(op)});
}

namespace kernels {
const Kernel rms_norm_back =
    vulkan_kernel<supports_rms_norm_back, nullptr, record_rms_norm_back>("vulkan.rms_norm_back");
const Kernel row_norm = vulkan_kernel<same_f32_shape, nullptr, record_norm>("vulkan.row_norm");
const Kernel group_norm = vulkan_kernel<supports_group_norm, nullptr, record_norm>("vulkan.group_norm");
}  // namespace kernels

}  // namespace ggx::vulkan
