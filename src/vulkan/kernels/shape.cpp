// Vulkan kernels of the shape ops: REPEAT, CONCAT and PAD (gather.comp; F32/F16/BF16/I32 moved as raw
// bits, PAD float only), UPSCALE (nearest, F32, any strides; upscale.comp) and TIMESTEP_EMBEDDING
// (F32; timestep_embedding.comp).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

constexpr uint32_t kGatherLocalSize = 256;  // gather.comp local_size_x

bool float_or_i32(ggml_type type) { return float_type_name(type) || type == GGML_TYPE_I32; }

bool fits_u32(int64_t value) { return value >= 0 && value <= std::numeric_limits<uint32_t>::max(); }

// ---- REPEAT, CONCAT, PAD ----------------------------------------------------------------------------

enum GatherOp : uint32_t { kRepeat = 0, kConcat = 1, kPad = 2 };

bool same_raw(const Device & device, const ggml_tensor * node, const ggml_tensor * src) {
    return src && src->type == node->type && float_or_i32(node->type) && raw_tensor(device, src) &&
           raw_tensor(device, node);
}

bool supports_repeat(const Device & device, const ggml_tensor * node) {
    return same_raw(device, node, node->src[0]) && ggml_can_repeat(node->src[0], node);
}

bool supports_concat(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const int32_t dim = core::params<ggml_ext_concat_params>(node).dim;
    if (!same_raw(device, node, a) || !same_raw(device, node, b) || dim < 0 || dim >= GGML_MAX_DIMS)
        return false;
    for (int k = 0; k < GGML_MAX_DIMS; ++k) {
        const int64_t expected = k == dim ? a->ne[k] + b->ne[k] : a->ne[k];
        if (node->ne[k] != expected || (k != dim && b->ne[k] != a->ne[k])) return false;
    }
    return true;
}

bool supports_pad(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!same_raw(device, node, a) || !float_type_name(a->type)) return false;
    const auto pad = core::params<ggml_ext_pad_params>(node);
    if (pad.circular) return false;  // no kernel wraps around yet
    for (int k = 0; k < GGML_MAX_DIMS; ++k) {
        const int32_t lp = pad.pads[k][0], rp = pad.pads[k][1];
        if (lp < 0 || rp < 0 || node->ne[k] != a->ne[k] + lp + rp) return false;
    }
    return true;
}

void record_gather(Recorder & rec, const ggml_tensor * node) {
    if (ggml_nelements(node) == 0) return;
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * b = node->op == GGML_OP_CONCAT ? node->src[1] : a;
    const GatherOp op = node->op == GGML_OP_REPEAT ? kRepeat : node->op == GGML_OP_CONCAT ? kConcat : kPad;
    Shape extra{};
    if (op == kConcat) extra.ne[0] = static_cast<uint32_t>(core::params<ggml_ext_concat_params>(node).dim);
    for (int k = 0; op == kPad && k < GGML_MAX_DIMS; ++k)
        extra.ne[k] = static_cast<uint32_t>(core::params<ggml_ext_pad_params>(node).pads[k][0]);
    const uint32_t unit = static_cast<uint32_t>(ggml_type_size(node->type));
    const struct {
        Shape ne, a_ne, extra;
        View a, b, d;
    } push{shape_of(node),        shape_of(a),           extra,
           view_of(rec, a, unit), view_of(rec, b, unit), view_of(rec, node, unit)};
    rec.dispatch(std::string("gather_") + raw_name(node->type),
                 {rec.arg(a, false), rec.arg(b, false), rec.arg(node, true)}, push,
                 rec.groups_for(ggml_nelements(node), kGatherLocalSize), {op});
}

// ---- UPSCALE (nearest) -----------------------------------------------------------------------------

constexpr uint32_t kUpscaleLocalSize = 128;  // upscale.comp local_size_x

bool supports_upscale(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!a || a->type != GGML_TYPE_F32 || node->type != GGML_TYPE_F32 || ggml_is_empty(a) ||
        core::params<ggml_ext_upscale_params>(node).mode != GGML_SCALE_MODE_NEAREST || !float_tensor(device, a) ||
        !float_tensor(device, node))
        return false;
    // The shader forms i * a.ne / d.ne in 32 bits.
    for (int k = 0; k < GGML_MAX_DIMS; ++k) {
        if (!fits_u32(node->ne[k] * a->ne[k])) return false;
    }
    return true;
}

void record_upscale(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    // The step is used only when a row is longer than the workgroup, and then it is below a.ne[0].
    const uint64_t step = uint64_t{kUpscaleLocalSize} * static_cast<uint64_t>(a->ne[0]);
    const uint64_t ne0 = static_cast<uint64_t>(node->ne[0]);
    struct {
        Shape ne, a_ne;
        View a, d;
        uint32_t step_q, step_r;
    } push{shape_of(node),
           shape_of(a),
           view_of(rec, a, 4),
           view_of(rec, node, 4),
           static_cast<uint32_t>(step / ne0),
           static_cast<uint32_t>(step % ne0)};
    const uint64_t rows = static_cast<uint64_t>(ggml_nrows(node));
    rec.dispatch("upscale", {rec.arg(a, false), rec.arg(node, true)}, push,
                 rec.groups_for(rows * kUpscaleLocalSize, kUpscaleLocalSize));
}

// ---- TIMESTEP_EMBEDDING ----------------------------------------------------------------------------

constexpr uint32_t kTimestepLocalSize = 128;  // timestep_embedding.comp local_size_x

bool supports_timestep_embedding(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * t = node->src[0];
    const auto embedding = core::params<ggml_ext_timestep_embedding_params>(node);
    const int32_t dim = embedding.dim;
    return t && t->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_is_vector(t) && dim >= 2 &&
           embedding.max_period >= 1 && node->ne[0] >= dim / 2 * 2 && node->ne[1] == t->ne[0] &&
           ggml_nrows(node) == node->ne[1] && float_tensor(device, t) && float_tensor(device, node);
}

void record_timestep_embedding(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * t = node->src[0];
    const auto embedding = core::params<ggml_ext_timestep_embedding_params>(node);
    const uint32_t half = static_cast<uint32_t>(embedding.dim / 2);
    struct {
        View t, d;
        uint32_t ne0, rows, half;
        float log2_period_per_j;
    } push{view_of(rec, t, 4),
           view_of(rec, node, 4),
           static_cast<uint32_t>(node->ne[0]),
           static_cast<uint32_t>(node->ne[1]),
           half,
           static_cast<float>(std::log2(static_cast<double>(embedding.max_period)) / half)};
    rec.dispatch("timestep_embedding", {rec.arg(t, false), rec.arg(node, true)}, push,
                 rec.groups_for(static_cast<uint64_t>(node->ne[1]) * kTimestepLocalSize, kTimestepLocalSize));
}

}  // namespace

namespace kernels {
const Kernel repeat = vulkan_kernel<supports_repeat, nullptr, record_gather>("vulkan.repeat");
const Kernel concat = vulkan_kernel<supports_concat, nullptr, record_gather>("vulkan.concat");
const Kernel pad = vulkan_kernel<supports_pad, nullptr, record_gather>("vulkan.pad");
const Kernel upscale = vulkan_kernel<supports_upscale, nullptr, record_upscale>("vulkan.upscale");
const Kernel timestep_embedding =
    vulkan_kernel<supports_timestep_embedding, nullptr, record_timestep_embedding>(
        "vulkan.timestep_embedding");
}  // namespace kernels

}  // namespace ggx::vulkan
