// Vulkan kernel of ROPE and ROPE_BACK (rope.comp): NORMAL, NEOX and the multi-axis MROPE, IMROPE
// and VISION rotations with YaRN scaling, optional frequency factors and a rotated range from
// n_offs, of F32/F16 tensors of any strides, with the CPU kernel's parameters
// (ggml_ext_rope_params).
#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <string>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

constexpr uint32_t kLocalSize = 256;     // rope.comp's LOCAL_SIZE
constexpr int32_t kMaxPairs = 512;       // rope.comp's MAX_PAIRS (its shared cos/sin table)
constexpr uint32_t kPassesPerGroup = 4;  // row passes of one workgroup: amortises its table

bool vector_of(const Device & device, const ggml_tensor * t, ggml_type type) {
    return t->type == type && ggml_is_vector(t) && addressable(device, t, 4) && small_enough(t);
}

// rope.comp's MULTI: 0 for NORMAL and NEOX, else 1 MROPE, 2 IMROPE, 3 VISION; ~0u for other modes.
uint32_t multi_mode(int32_t mode) {
    switch (mode) {
        case GGML_ROPE_TYPE_NORMAL:
        case GGML_ROPE_TYPE_NEOX:
            return 0;
        case GGML_ROPE_TYPE_MROPE:
            return 1;
        case GGML_ROPE_TYPE_IMROPE:
            return 2;
        case GGML_ROPE_TYPE_VISION:
            return 3;
        default:
            return ~0u;
    }
}

int64_t pairs_of(const ggml_ext_rope_params & rope) {
    return rope.mode == GGML_ROPE_TYPE_VISION ? rope.n_dims : rope.n_dims / 2;
}

bool sections_ok(const ggml_ext_rope_params & rope) {
    const int32_t * sec = rope.sections;
    // rope.comp packs them in 16 bits each.
    return std::all_of(sec, sec + GGML_MROPE_SECTIONS, [](int32_t v) { return v >= 0 && v <= 0xFFFF; }) &&
           int64_t{sec[0]} + sec[1] + sec[2] + sec[3] > 0;
}

// Sections k and k + 1, 16 bits each (only the multi modes read them; 0 otherwise).
uint32_t section_pair(const ggml_ext_rope_params & rope, int k) {
    if (multi_mode(rope.mode) == 0) return 0;
    return static_cast<uint32_t>(rope.sections[k]) | static_cast<uint32_t>(rope.sections[k + 1]) << 16;
}

bool supports_rope(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *pos = node->src[1], *factors = node->src[2];
    if (!a || !pos) return false;
    const auto rope = core::params<ggml_ext_rope_params>(node);
    const uint32_t multi = multi_mode(rope.mode);
    const int64_t pairs = pairs_of(rope), axes = multi != 0 ? 4 : 1;
    return (a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16) && node->type == a->type &&
           ggml_are_same_shape(a, node) && float_tensor(device, a) && float_tensor(device, node) &&
           vector_of(device, pos, GGML_TYPE_I32) && pos->ne[0] >= axes * a->ne[2] && multi != ~0u &&
           (multi == 0 || sections_ok(rope)) && rope.n_dims > 0 && rope.n_dims % 2 == 0 && rope.n_offs >= 0 &&
           rope.n_offs % 2 == 0 && rope.n_offs + 2 * pairs <= a->ne[0] && pairs <= kMaxPairs &&
           (!factors || (vector_of(device, factors, GGML_TYPE_F32) && factors->ne[0] >= pairs));
}

// The rotation parameters the shader takes, derived in double as the CPU kernel does.
struct Angles {
    float log2_theta_scale, ramp_low, ramp_inv_range, mscale;
};

Angles angles_of(const ggml_tensor * node) {
    const auto rope = core::params<ggml_ext_rope_params>(node);
    const double n_dims = rope.n_dims, n_ctx_orig = rope.n_ctx_orig;
    const double base = rope.freq_base, freq_scale = rope.freq_scale;
    const double ext_factor = rope.ext_factor, attn_factor = rope.attn_factor;
    const double beta_fast = rope.beta_fast, beta_slow = rope.beta_slow;
    const auto corr_dim = [&](double n_rot) {
        return n_dims * std::log(n_ctx_orig / (n_rot * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
    };
    const double low = std::max(0.0, std::floor(corr_dim(beta_fast)));
    const double high = std::min(n_dims - 1.0, std::ceil(corr_dim(beta_slow)));
    const double mscale =
        ext_factor != 0.0 ? attn_factor * (1.0 + 0.1 * std::log(1.0 / freq_scale)) : attn_factor;
    return {static_cast<float>(-2.0 / n_dims * std::log2(base)), static_cast<float>(low),
            static_cast<float>(1.0 / std::max(0.001, high - low)), static_cast<float>(mscale)};
}

void record_rope(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *pos = node->src[1], *factors = node->src[2];
    const uint32_t unit = float_unit(node->type);
    const auto rope = core::params<ggml_ext_rope_params>(node);
    const uint32_t pairs = static_cast<uint32_t>(pairs_of(rope));
    const uint32_t items = static_cast<uint32_t>(node->ne[0]) - pairs;  // pairs and copied channels
    const uint32_t lanes = std::min(kLocalSize, std::bit_ceil(items));
    const uint32_t heads_per_group = kPassesPerGroup * (kLocalSize / lanes);
    const Angles angles = angles_of(node);
    const View pos_view = view_of(rec, pos, 4);
    const View factors_view = factors ? view_of(rec, factors, 4) : View{};
    struct {
        Shape ne;
        View a, d;
        uint32_t pos_off, pos_s0, factors_off, factors_s0;
        uint32_t pairs, offs, lane_shift, heads_per_group;
        float log2_theta_scale, freq_scale, ext_factor, ramp_low, ramp_inv_range, mscale, sin_sign;
        uint32_t sections01, sections23;
    } push{shape_of(node),
           view_of(rec, a, unit),
           view_of(rec, node, unit),
           pos_view.offset,
           pos_view.s0,
           factors_view.offset,
           factors_view.s0,
           pairs,
           static_cast<uint32_t>(rope.n_offs),
           static_cast<uint32_t>(std::countr_zero(lanes)),
           heads_per_group,
           angles.log2_theta_scale,
           rope.freq_scale,
           rope.ext_factor,
           angles.ramp_low,
           angles.ramp_inv_range,
           angles.mscale,
           node->op == GGML_OP_ROPE_BACK ? -1.0f : 1.0f,
           section_pair(rope, 0),
           section_pair(rope, 2)};
    const uint64_t head_blocks = (node->ne[1] + heads_per_group - 1) / heads_per_group;
    const uint64_t groups = head_blocks * node->ne[2] * node->ne[3];
    const Arg pos_arg = rec.arg(pos, false);
    rec.dispatch(
        std::string("rope_") + float_type_name(node->type),
        {rec.arg(a, false), pos_arg, factors ? rec.arg(factors, false) : pos_arg, rec.arg(node, true)}, push,
        rec.groups_for(groups * kLocalSize, kLocalSize),
        {rope.mode != GGML_ROPE_TYPE_NORMAL ? 1u : 0u, factors ? 1u : 0u, multi_mode(rope.mode)});
}

}  // namespace

namespace kernels {
const Kernel rope = vulkan_kernel<supports_rope, nullptr, record_rope>("vulkan.rope");
}  // namespace kernels

}  // namespace ggx::vulkan
