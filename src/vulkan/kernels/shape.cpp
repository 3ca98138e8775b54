// Vulkan kernels of the shape ops: REPEAT, CONCAT, PAD (zeros or circular), ROLL, PAD_REFLECT_1D,
// DIAG, TRI, WIN_PART, WIN_UNPART, ARANGE and the softmax family's DIAG_MASK_INF/ZERO (gather.comp:
// elements moved as raw bits), REPEAT_BACK, GET_REL_POS, ADD_REL_POS (shape_sum.comp), UPSCALE (every mode,
// F32/F16/BF16, any strides; upscale.comp, upscale_filter.comp) and TIMESTEP_EMBEDDING (F32;
// timestep_embedding.comp) and SOLVE_TRI (F32, any strides; solve_tri.comp, one invocation per
// right-hand-side column).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

constexpr uint32_t kGatherLocalSize = 256;  // gather.comp local_size_x

bool float_or_i32(ggml_type type) { return float_type_name(type) || type == GGML_TYPE_I32; }

bool fits_u32(int64_t value) { return value >= 0 && value <= std::numeric_limits<uint32_t>::max(); }

// ---- the gather ops: REPEAT, CONCAT, PAD, ROLL, PAD_REFLECT_1D, DIAG, TRI, DIAG_MASK_*, WIN_PART,
// WIN_UNPART, ARANGE ---------------------------------------------------------------------------------

enum GatherOp : uint32_t {
    kRepeat = 0,
    kConcat = 1,
    kPad = 2,
    kWrap = 3,
    kReflect = 4,
    kDiag = 5,
    kTri = 6,
    kDiagMask = 7,
    kWinPart = 8,
    kWinUnpart = 9,
    kArange = 10
};

bool same_raw(const Device & device, const ggml_tensor * node, const ggml_tensor * src) {
    // 1-byte types need 8-bit storage (gather_u8).
    return src && src->type == node->type && raw_tensor(device, src) && raw_tensor(device, node) &&
           (ggml_type_size(node->type) > 1 || device.info().storage_buffer_8bit);
}

bool same_float_raw(const Device & device, const ggml_tensor * node, const ggml_tensor * src) {
    return same_raw(device, node, src) && float_type_name(node->type);
}

bool same_f32(const Device & device, const ggml_tensor * node, const ggml_tensor * src) {
    return same_raw(device, node, src) && node->type == GGML_TYPE_F32;
}

bool supports_repeat(const Device & device, const ggml_tensor * node) {
    return same_raw(device, node, node->src[0]) && float_or_i32(node->type) &&
           ggml_can_repeat(node->src[0], node);
}

bool supports_concat(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const int32_t dim = core::params<ggml_ext_concat_params>(node).dim;
    if (!same_raw(device, node, a) || !same_raw(device, node, b) || !float_or_i32(node->type) || dim < 0 ||
        dim >= GGML_MAX_DIMS)
        return false;
    for (int k = 0; k < GGML_MAX_DIMS; ++k) {
        const int64_t expected = k == dim ? a->ne[k] + b->ne[k] : a->ne[k];
        if (node->ne[k] != expected || (k != dim && b->ne[k] != a->ne[k])) return false;
    }
    return true;
}

bool supports_pad(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!same_float_raw(device, node, a)) return false;
    const auto pad = core::params<ggml_ext_pad_params>(node);
    for (int k = 0; k < GGML_MAX_DIMS; ++k) {
        const int32_t lp = pad.pads[k][0], rp = pad.pads[k][1];
        if (lp < 0 || rp < 0 || node->ne[k] != a->ne[k] + lp + rp) return false;
        if (pad.circular && (lp > a->ne[k] || rp > a->ne[k])) return false;
    }
    return true;
}

bool supports_roll(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!same_raw(device, node, a) || !ggml_are_same_shape(a, node)) return false;
    const auto roll = core::params<ggml_ext_roll_params>(node);
    for (int k = 0; k < GGML_MAX_DIMS; ++k)
        if (std::abs(int64_t{roll.shifts[k]}) >= std::max<int64_t>(a->ne[k], 1)) return false;
    return true;
}

bool supports_pad_reflect_1d(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!same_f32(device, node, a)) return false;
    const auto p = core::params<ggml_ext_pad_reflect_1d_params>(node);
    return p.p0 >= 0 && p.p1 >= 0 && p.p0 < a->ne[0] && p.p1 < a->ne[0] &&
           node->ne[0] == a->ne[0] + p.p0 + p.p1 && node->ne[1] == a->ne[1] && node->ne[2] == a->ne[2] &&
           node->ne[3] == a->ne[3];
}

bool supports_diag(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return same_raw(device, node, a) && a->ne[1] == 1 && node->ne[0] == a->ne[0] && node->ne[1] == a->ne[0] &&
           node->ne[2] == a->ne[2] && node->ne[3] == a->ne[3];
}

bool supports_tri(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const int32_t type = core::params<ggml_ext_tri_params>(node).type;
    return same_f32(device, node, a) && ggml_are_same_shape(a, node) && a->ne[0] == a->ne[1] &&
           type >= GGML_TRI_TYPE_UPPER_DIAG && type <= GGML_TRI_TYPE_LOWER;
}

bool supports_diag_mask(const Device & device, const ggml_tensor * node) {
    return same_float_raw(device, node, node->src[0]) && ggml_are_same_shape(node->src[0], node);
}

bool supports_win_part(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const auto p = core::params<ggml_ext_win_part_params>(node);
    return same_f32(device, node, a) && a->ne[3] == 1 && p.w >= 1 && p.npx == (a->ne[1] + p.w - 1) / p.w &&
           p.npy == (a->ne[2] + p.w - 1) / p.w && node->ne[0] == a->ne[0] && node->ne[1] == p.w &&
           node->ne[2] == p.w && node->ne[3] == int64_t{p.npx} * p.npy;
}

bool supports_win_unpart(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const int64_t w = core::params<ggml_ext_win_unpart_params>(node).w;
    return same_f32(device, node, a) && w >= 1 && node->ne[0] == a->ne[0] && a->ne[1] == w && a->ne[2] == w &&
           node->ne[3] == 1 && a->ne[3] == (node->ne[1] + w - 1) / w * ((node->ne[2] + w - 1) / w);
}

bool supports_arange(const Device & device, const ggml_tensor * node) {
    const auto p = core::params<ggml_ext_arange_params>(node);
    return node->type == GGML_TYPE_F32 && p.step > 0.0f && ggml_nelements(node) == node->ne[0] &&
           raw_tensor(device, node);
}

// The bits of -inf in a float type.
uint32_t negative_infinity_bits(ggml_type type) {
    switch (type) {
        case GGML_TYPE_F16:
            return 0xfc00u;
        case GGML_TYPE_BF16:
            return 0xff80u;
        default:
            return 0xff800000u;
    }
}

// The gather.comp operation of node, and its extra parameters.
std::pair<GatherOp, Shape> gather_setup(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    Shape extra{};
    switch (node->op) {
        case GGML_OP_REPEAT:
            return {kRepeat, extra};
        case GGML_OP_CONCAT:
            extra.ne[0] = static_cast<uint32_t>(core::params<ggml_ext_concat_params>(node).dim);
            return {kConcat, extra};
        case GGML_OP_PAD: {
            const auto pad = core::params<ggml_ext_pad_params>(node);
            // circular: d[i] = a[(i - lp) mod a.ne], with lp <= a.ne
            for (int k = 0; k < GGML_MAX_DIMS; ++k)
                extra.ne[k] =
                    static_cast<uint32_t>(pad.circular ? a->ne[k] - pad.pads[k][0] : pad.pads[k][0]);
            return {pad.circular ? kWrap : kPad, extra};
        }
        case GGML_OP_ROLL: {
            const auto roll = core::params<ggml_ext_roll_params>(node);
            for (int k = 0; k < GGML_MAX_DIMS; ++k)  // d[i] = a[(i - shift) mod ne], |shift| < ne
                extra.ne[k] =
                    static_cast<uint32_t>((a->ne[k] - roll.shifts[k]) % std::max<int64_t>(a->ne[k], 1));
            return {kWrap, extra};
        }
        case GGML_OP_PAD_REFLECT_1D:
            extra.ne[0] = static_cast<uint32_t>(core::params<ggml_ext_pad_reflect_1d_params>(node).p0);
            return {kReflect, extra};
        case GGML_OP_DIAG:
            return {kDiag, extra};
        case GGML_OP_TRI:
            extra.ne[0] = static_cast<uint32_t>(core::params<ggml_ext_tri_params>(node).type);
            return {kTri, extra};
        case GGML_OP_DIAG_MASK_INF:
        case GGML_OP_DIAG_MASK_ZERO:
            extra.ne[0] = static_cast<uint32_t>(core::params<ggml_ext_diag_mask_params>(node).n_past);
            extra.ne[1] = node->op == GGML_OP_DIAG_MASK_INF ? negative_infinity_bits(node->type) : 0u;
            return {kDiagMask, extra};
        case GGML_OP_WIN_PART: {
            const auto p = core::params<ggml_ext_win_part_params>(node);
            extra.ne[0] = static_cast<uint32_t>(p.w);
            extra.ne[1] = static_cast<uint32_t>(p.npx);
            return {kWinPart, extra};
        }
        case GGML_OP_WIN_UNPART: {
            const int64_t w = core::params<ggml_ext_win_unpart_params>(node).w;
            extra.ne[0] = static_cast<uint32_t>(w);
            extra.ne[1] = static_cast<uint32_t>((node->ne[1] + w - 1) / w);
            return {kWinUnpart, extra};
        }
        default: {  // ARANGE
            const auto p = core::params<ggml_ext_arange_params>(node);
            extra.ne[0] = std::bit_cast<uint32_t>(p.start);
            extra.ne[1] = std::bit_cast<uint32_t>(p.step);
            return {kArange, extra};
        }
    }
}

void record_gather(Recorder & rec, const ggml_tensor * node) {
    if (ggml_nelements(node) == 0) return;
    const ggml_tensor * a = node->src[0] ? node->src[0] : node;  // ARANGE has no source
    const ggml_tensor * b = node->op == GGML_OP_CONCAT ? node->src[1] : a;
    const auto [op, extra] = gather_setup(node);
    const uint32_t unit = static_cast<uint32_t>(ggml_type_size(node->type));
    const struct {
        Shape ne, a_ne, extra;
        View a, b, d;
    } push{shape_of(node),        shape_of(a),           extra,
           view_of(rec, a, unit), view_of(rec, b, unit), view_of(rec, node, unit)};
    rec.dispatch(std::string("gather_") + raw_name(node->type),
                 {rec.arg(a, node == a), rec.arg(b, false), rec.arg(node, true)}, push,
                 rec.groups_for(ggml_nelements(node), kGatherLocalSize), {op});
}

// ---- REPEAT_BACK, GET_REL_POS, ADD_REL_POS (shape_sum.comp) --------------------------------------------

enum ShapeSumOp : uint32_t { kRepeatBack = 0, kGetRelPos = 1, kAddRelPos = 2 };

bool supports_repeat_back(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && a->type == node->type && float_tensor(device, a) && float_tensor(device, node) &&
           ggml_can_repeat(node, a);
}

bool supports_get_rel_pos(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && float_tensor(device, a) && node->type == GGML_TYPE_F16 && float_tensor(device, node) &&
           node->ne[0] == a->ne[0] && node->ne[1] == node->ne[2] && a->ne[1] == 2 * node->ne[1] - 1 &&
           node->ne[3] == 1;
}

bool supports_add_rel_pos(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *pw = node->src[1], *ph = node->src[2];
    return same_f32(device, node, a) && pw && ph && pw->type == GGML_TYPE_F32 && ph->type == GGML_TYPE_F32 &&
           float_tensor(device, pw) && float_tensor(device, ph) && ggml_are_same_shape(a, node) &&
           ggml_are_same_shape(pw, ph) && pw->ne[3] == a->ne[2] && pw->ne[0] * pw->ne[0] == a->ne[0] &&
           pw->ne[1] * pw->ne[2] == a->ne[1] && a->ne[3] == 1;
}

void record_shape_sum(Recorder & rec, const ggml_tensor * node) {
    if (ggml_nelements(node) == 0) return;
    const ggml_tensor * a = node->src[0];
    const ShapeSumOp op = node->op == GGML_OP_REPEAT_BACK   ? kRepeatBack
                          : node->op == GGML_OP_GET_REL_POS ? kGetRelPos
                                                            : kAddRelPos;
    const ggml_tensor * pw = op == kAddRelPos ? node->src[1] : a;  // bound, read by ADD_REL_POS only
    const ggml_tensor * ph = op == kAddRelPos ? node->src[2] : a;
    Shape a_ne = shape_of(a);
    if (op == kAddRelPos) a_ne = {{static_cast<uint32_t>(pw->ne[0]), static_cast<uint32_t>(pw->ne[1]), 0, 0}};
    const struct {
        Shape ne, a_ne;
        View a, b, c, d;
    } push{shape_of(node),
           a_ne,
           view_of(rec, a, float_unit(a->type)),
           view_of(rec, pw, float_unit(pw->type)),
           view_of(rec, ph, float_unit(ph->type)),
           view_of(rec, node, float_unit(node->type))};
    rec.dispatch(std::string("shape_sum_") + float_type_name(a->type) + "_" + float_type_name(node->type),
                 {rec.arg(a, false), rec.arg(pw, false), rec.arg(ph, false), rec.arg(node, true)}, push,
                 rec.groups_for(static_cast<uint64_t>(ggml_nelements(node)), kGatherLocalSize), {op});
}

// ---- UPSCALE: nearest F32 without align corners (upscale.comp), every other mode (upscale_filter.comp)

constexpr uint32_t kUpscaleLocalSize = 128;  // upscale.comp local_size_x
constexpr uint32_t kFilterLocalSize = 256;   // upscale_filter.comp local_size_x
constexpr int kMaxTaps = 64;                 // the most taps of upscale_filter.comp's arrays

using core::scale_mode;
using core::ScaleMode;

bool fast_nearest(const ggml_tensor * node) {
    const ScaleMode m = scale_mode(node);
    return m.base == GGML_SCALE_MODE_NEAREST && !m.align_corners && node->type == GGML_TYPE_F32;
}

using core::upscale_axis_scale;

// The taps per result index of the antialiasing triangle filter along its longer axis (dims 0, 1).
int antialias_taps(const ggml_tensor * node, bool align_corners) {
    int taps = 0;
    for (int k = 0; k < 2; ++k) {
        const float support = std::max(1.0f, 1.0f / upscale_axis_scale(node->src[0], node, k, align_corners));
        taps = std::max(taps, static_cast<int>(std::ceil(2.0f * support)) + 1);
    }
    return taps;
}

bool supports_upscale(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!a || a->type != node->type || !float_tensor(device, a) || !float_tensor(device, node) ||
        ggml_is_empty(a))
        return false;
    if (!core::valid_scale_mode(node)) return false;
    const ScaleMode m = scale_mode(node);
    if (m.antialias && antialias_taps(node, m.align_corners) > kMaxTaps) return false;
    // The shaders form i * a.ne / d.ne in 32 bits.
    for (int k = 0; k < GGML_MAX_DIMS; ++k) {
        if (!fits_u32(node->ne[k] * a->ne[k])) return false;
    }
    return true;
}

void record_nearest_upscale(Recorder & rec, const ggml_tensor * node) {
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

void record_upscale(Recorder & rec, const ggml_tensor * node) {
    if (ggml_nelements(node) == 0) return;
    if (fast_nearest(node)) return record_nearest_upscale(rec, node);
    const ggml_tensor * a = node->src[0];
    const ScaleMode m = scale_mode(node);
    const uint32_t unit = float_unit(node->type);
    struct {
        Shape ne, a_ne;
        View a, d;
        float scale0, scale1;
    } push{shape_of(node),
           shape_of(a),
           view_of(rec, a, unit),
           view_of(rec, node, unit),
           upscale_axis_scale(a, node, 0, m.align_corners),
           upscale_axis_scale(a, node, 1, m.align_corners)};
    rec.dispatch(std::string("upscale_filter_") + float_type_name(node->type),
                 {rec.arg(a, false), rec.arg(node, true)}, push,
                 rec.groups_for(static_cast<uint64_t>(ggml_nelements(node)), kFilterLocalSize),
                 {m.base, m.align_corners ? 1u : 0u, m.antialias ? 1u : 0u,
                  static_cast<uint32_t>(m.antialias ? antialias_taps(node, m.align_corners)
                                        : m.base == GGML_SCALE_MODE_BICUBIC ? 4
                                                                            : 2)});
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

// ---- SOLVE_TRI -------------------------------------------------------------------------------------

constexpr uint32_t kSolveLocalSize = 64;  // solve_tri.comp local_size_x

bool f32_float(const Device & device, const ggml_tensor * t) {
    return t && t->type == GGML_TYPE_F32 && float_tensor(device, t);
}

// a [n, n, B2, B3] and b [k, n, B2, B3] F32 of any strides (solve_tri.comp).
bool supports_solve_tri(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    return f32_float(device, a) && f32_float(device, b) && f32_float(device, node) && a->ne[0] == a->ne[1] &&
           b->ne[1] == a->ne[1] && b->ne[2] == a->ne[2] && b->ne[3] == a->ne[3] &&
           ggml_are_same_shape(node, b);
}

void record_solve_tri(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const uint64_t columns = static_cast<uint64_t>(node->ne[0] * node->ne[2] * node->ne[3]);
    if (columns == 0 || node->ne[1] == 0) return;
    struct {
        Shape ne;
        View a, b, d;
    } push{shape_of(node), view_of(rec, a, sizeof(float)), view_of(rec, b, sizeof(float)),
           view_of(rec, node, sizeof(float))};
    rec.dispatch("solve_tri", {rec.arg(a, false), rec.arg(b, false), rec.arg(node, true)}, push,
                 rec.groups_for(columns, kSolveLocalSize));
}

}  // namespace

namespace kernels {
const Kernel repeat = vulkan_kernel<supports_repeat, nullptr, record_gather>("vulkan.repeat");
const Kernel concat = vulkan_kernel<supports_concat, nullptr, record_gather>("vulkan.concat");
const Kernel pad = vulkan_kernel<supports_pad, nullptr, record_gather>("vulkan.pad");
const Kernel roll = vulkan_kernel<supports_roll, nullptr, record_gather>("vulkan.roll");
const Kernel pad_reflect_1d =
    vulkan_kernel<supports_pad_reflect_1d, nullptr, record_gather>("vulkan.pad_reflect_1d");
const Kernel diag = vulkan_kernel<supports_diag, nullptr, record_gather>("vulkan.diag");
const Kernel tri = vulkan_kernel<supports_tri, nullptr, record_gather>("vulkan.tri");
const Kernel diag_mask = vulkan_kernel<supports_diag_mask, nullptr, record_gather>("vulkan.diag_mask");
const Kernel win_part = vulkan_kernel<supports_win_part, nullptr, record_gather>("vulkan.win_part");
const Kernel win_unpart = vulkan_kernel<supports_win_unpart, nullptr, record_gather>("vulkan.win_unpart");
const Kernel arange = vulkan_kernel<supports_arange, nullptr, record_gather>("vulkan.arange");
const Kernel repeat_back =
    vulkan_kernel<supports_repeat_back, nullptr, record_shape_sum>("vulkan.repeat_back");
const Kernel get_rel_pos =
    vulkan_kernel<supports_get_rel_pos, nullptr, record_shape_sum>("vulkan.get_rel_pos");
const Kernel add_rel_pos =
    vulkan_kernel<supports_add_rel_pos, nullptr, record_shape_sum>("vulkan.add_rel_pos");
const Kernel upscale = vulkan_kernel<supports_upscale, nullptr, record_upscale>("vulkan.upscale");
const Kernel timestep_embedding =
    vulkan_kernel<supports_timestep_embedding, nullptr, record_timestep_embedding>(
        "vulkan.timestep_embedding");
const Kernel solve_tri = vulkan_kernel<supports_solve_tri, nullptr, record_solve_tri>("vulkan.solve_tri");
}  // namespace kernels

}  // namespace ggx::vulkan
