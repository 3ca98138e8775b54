// Vulkan kernels of the normalisation, softmax and reduction ops: NORM, RMS_NORM, L2_NORM and
// GROUP_NORM (norm.comp, F32), SOFT_MAX (soft_max.comp, F32 with an optional F32/F16 mask), SUM_ROWS,
// MEAN and SUM (sum.comp, F32/F16/BF16). Any strides; one workgroup per reduced range.
#include <algorithm>
#include <bit>
#include <string>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

// Workgroup size for ranges of n elements: a power of two in [32, 256], no larger than needed.
uint32_t block_size(uint64_t n) {
    return static_cast<uint32_t>(std::clamp<uint64_t>(std::bit_ceil(std::max<uint64_t>(n, 1)), 32, 256));
}

// Groups for units workgroups of local_size invocations each.
Groups unit_groups(const Recorder & rec, uint64_t units, uint32_t local_size) {
    return rec.groups_for(units * local_size, local_size);
}

bool same_f32_shape(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_are_same_shape(a, node) &&
           float_tensor(device, a) && float_tensor(device, node);
}

// ---- NORM, RMS_NORM, L2_NORM, GROUP_NORM -----------------------------------------------------------

bool supports_group_norm(const Device & device, const ggml_tensor * node) {
    const int32_t groups = param<int32_t>(node, 0);
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
    const uint32_t requested = group ? static_cast<uint32_t>(param<int32_t>(node, 0)) : 1;
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
           param<float>(node, group ? 1 : 0)};
    const uint32_t local_size = block_size(uint64_t{slice} * per_group);
    rec.dispatch("norm", {rec.arg(a, false), rec.arg(node, true)}, push, unit_groups(rec, units, local_size),
                 {local_size, norm_op(node->op)});
}

// ---- SOFT_MAX --------------------------------------------------------------------------------------

bool supports_soft_max(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * mask = node->src[1];
    if (!same_f32_shape(device, node)) return false;
    return !mask ||
           ((mask->type == GGML_TYPE_F32 || mask->type == GGML_TYPE_F16) && float_tensor(device, mask) &&
            mask->ne[0] == a->ne[0] && mask->ne[1] >= a->ne[1] && mask->ne[2] > 0 && mask->ne[3] > 0 &&
            a->ne[2] % mask->ne[2] == 0 && a->ne[3] % mask->ne[3] == 0);
}

void record_soft_max(Recorder & rec, const ggml_tensor * node) {
    if (ggml_nelements(node) == 0) return;
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * mask = node->src[1];
    const ggml_tensor * m = mask ? mask : a;  // bound but not read without a mask
    struct {
        Shape ne;
        View a, m, d;
        uint32_t mask_ne2, mask_ne3;
        float scale, max_bias;
        uint32_t n_head_log2;
    } push{shape_of(node),
           view_of(rec, a, sizeof(float)),
           view_of(rec, m, float_unit(m->type)),
           view_of(rec, node, sizeof(float)),
           static_cast<uint32_t>(m->ne[2]),
           static_cast<uint32_t>(m->ne[3]),
           param<float>(node, 0),
           param<float>(node, 1),
           std::bit_floor(static_cast<uint32_t>(node->ne[2]))};
    const uint32_t local_size = block_size(static_cast<uint64_t>(node->ne[0]));
    rec.dispatch(std::string("soft_max_") + float_type_name(m->type),
                 {rec.arg(a, false), rec.arg(m, false), rec.arg(node, true)}, push,
                 unit_groups(rec, static_cast<uint64_t>(ggml_nrows(node)), local_size),
                 {local_size, mask ? 1u : 0u});
}

// ---- SUM_ROWS, MEAN, SUM ---------------------------------------------------------------------------

// A sum.comp dispatch: groups workgroups, each summing len consecutive logical elements of a tensor
// of shape ne into output element g of a tensor whose dims 1 and 2 are d_ne1, d_ne2.
struct SumPass {
    std::string shader;
    Arg a, d;
    Shape ne;
    View va, vd;
    uint32_t d_ne1 = 1, d_ne2 = 1, len = 0, groups = 1;
    float divisor = 1.0f;
};

void record_sum_pass(Recorder & rec, const SumPass & s) {
    struct {
        Shape ne;
        View a, d;
        uint32_t d_ne1, d_ne2, len;
        float divisor;
    } push{s.ne, s.va, s.vd, s.d_ne1, s.d_ne2, s.len, s.divisor};
    const uint32_t local_size = block_size(s.len);
    rec.dispatch(s.shader, {s.a, s.d}, push, unit_groups(rec, s.groups, local_size), {local_size});
}

std::string sum_shader(ggml_type a, ggml_type d) {
    return std::string("sum_") + float_type_name(a) + "_" + float_type_name(d);
}

bool supports_sum_rows(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && a->type == node->type && float_tensor(device, a) && float_tensor(device, node) &&
           node->ne[0] == 1 && node->ne[1] == a->ne[1] && node->ne[2] == a->ne[2] && node->ne[3] == a->ne[3];
}

void record_sum_rows(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const uint32_t rows = static_cast<uint32_t>(ggml_nrows(a));
    if (rows == 0) return;
    const uint32_t unit = float_unit(a->type);
    const float divisor = node->op == GGML_OP_MEAN ? static_cast<float>(a->ne[0]) : 1.0f;
    record_sum_pass(rec, {.shader = sum_shader(a->type, node->type),
                          .a = rec.arg(a, false),
                          .d = rec.arg(node, true),
                          .ne = shape_of(a),
                          .va = view_of(rec, a, unit),
                          .vd = view_of(rec, node, unit),
                          .d_ne1 = static_cast<uint32_t>(node->ne[1]),
                          .d_ne2 = static_cast<uint32_t>(node->ne[2]),
                          .len = static_cast<uint32_t>(a->ne[0]),
                          .groups = rows,
                          .divisor = divisor});
}

// SUM of more than one chunk sums chunks into F32 partial sums in the workspace first, then those.
constexpr uint64_t kSumChunk = 8192;
constexpr uint64_t kMaxPartials = 1024;
// The dense partial sums, seen as [n, 1, 1, 1] (read) or as [1, n, 1, 1] (written).
constexpr View kPartials{0, 1, 1, 1, 1};

uint32_t sum_partials(const ggml_tensor * node) {
    const uint64_t n = static_cast<uint64_t>(ggml_nelements(node->src[0]));
    return static_cast<uint32_t>(std::clamp<uint64_t>((n + kSumChunk - 1) / kSumChunk, 1, kMaxPartials));
}

bool supports_sum(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && a->type == node->type && float_tensor(device, a) && float_tensor(device, node) &&
           ggml_nelements(node) == 1;
}

size_t sum_workspace(const ggml_tensor * node) {
    const uint32_t partials = sum_partials(node);
    return partials > 1 ? partials * sizeof(float) : 0;
}

void record_sum(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const uint32_t n = static_cast<uint32_t>(ggml_nelements(a));
    const uint32_t unit = float_unit(a->type);
    const uint32_t partials = sum_partials(node);
    const SumPass whole{.shader = sum_shader(a->type, node->type),
                        .a = rec.arg(a, false),
                        .d = rec.arg(node, true),
                        .ne = shape_of(a),
                        .va = view_of(rec, a, unit),
                        .vd = view_of(rec, node, unit),
                        .len = n};
    if (partials == 1) {
        record_sum_pass(rec, whole);
        return;
    }
    Arg scratch = rec.workspace();
    scratch.written = true;
    SumPass chunks = whole;
    chunks.shader = sum_shader(a->type, GGML_TYPE_F32);
    chunks.d = scratch;
    chunks.vd = kPartials;
    chunks.d_ne1 = chunks.groups = partials;
    chunks.len = (n + partials - 1) / partials;
    record_sum_pass(rec, chunks);
    scratch.written = false;
    SumPass total = whole;
    total.shader = sum_shader(GGML_TYPE_F32, node->type);
    total.a = scratch;
    total.ne = Shape{{partials, 1, 1, 1}};
    total.va = kPartials;
    total.len = partials;
    record_sum_pass(rec, total);
}

}  // namespace

namespace kernels {
const Kernel row_norm = vulkan_kernel<same_f32_shape, nullptr, record_norm>("vulkan.row_norm");
const Kernel group_norm = vulkan_kernel<supports_group_norm, nullptr, record_norm>("vulkan.group_norm");
const Kernel soft_max = vulkan_kernel<supports_soft_max, nullptr, record_soft_max>("vulkan.soft_max");
const Kernel sum_rows = vulkan_kernel<supports_sum_rows, nullptr, record_sum_rows>("vulkan.sum_rows");
const Kernel sum = vulkan_kernel<supports_sum, sum_workspace, record_sum>("vulkan.sum");
}  // namespace kernels

}  // namespace ggx::vulkan
