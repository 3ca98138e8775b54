// Vulkan kernels of the copy and indexing ops: CPY/DUP/CONT (cpy.comp, quantize.comp), GET_ROWS
// (get_rows.comp), SET_ROWS (set_rows.comp) and REPEAT/CONCAT/PAD (gather.comp).
//
// Same-type moves copy raw bits (4-, 2- or 1-byte elements); F32/F16/BF16 convert into one another;
// Q8_0/Q4_0 blocks are addressed as 16-bit words, their rows dense blocks (quant.glsl).
#include <string>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

constexpr uint32_t kLocalSize = 256;
constexpr uint32_t kQuantizeLocalSize = 64;
constexpr uint32_t kCopyRun = 8;    // elements per invocation of cpy.comp (RUN in common.glsl)
constexpr int64_t kBlock = 32;      // elements per Q8_0 / Q4_0 block
constexpr uint32_t kBlockUnit = 2;  // blocks are addressed in 16-bit words

// The shader-name suffix of a type moved as raw bits, by element size.
const char * raw_name(ggml_type type) {
    if (ggml_is_quantized(type)) return nullptr;
    switch (ggml_type_size(type)) {
        case 4:
            return "u32";
        case 2:
            return "u16";
        case 1:
            return "u8";
        default:
            return nullptr;
    }
}

bool raw_tensor(const Device & device, const ggml_tensor * t) {
    return raw_name(t->type) && addressable(device, t, static_cast<uint32_t>(ggml_type_size(t->type))) &&
           small_enough(t);
}

// A Q8_0 / Q4_0 tensor of dense whole-block rows.
bool block_tensor(const Device & device, const ggml_tensor * t) {
    return block_type_name(t->type) && t->ne[0] % kBlock == 0 && t->nb[0] == ggml_type_size(t->type) &&
           addressable(device, t, kBlockUnit) && small_enough(t);
}

bool float_or_i32(ggml_type type) { return float_type_name(type) || type == GGML_TYPE_I32; }

Shape block_shape(const ggml_tensor * t) {
    Shape ne = shape_of(t);
    ne.ne[0] /= kBlock;
    return ne;
}

uint64_t count(const Shape & s) { return uint64_t{s.ne[0]} * s.ne[1] * s.ne[2] * s.ne[3]; }

// ---- CPY, DUP, CONT ---------------------------------------------------------------------------------

// The addressing of a copy: both tensors in one iteration shape, or (reshape) each in its own shape.
struct CopyPlan {
    Shape ne, a_ne;
    View a, d;
    bool reshape;
};

// Dense element strides of shape ne from offset.
View dense_view(uint32_t offset, const Shape & ne) {
    return {offset, 1, ne.ne[0], ne.ne[0] * ne.ne[1], ne.ne[0] * ne.ne[1] * ne.ne[2]};
}

// Shapes that differ are met by describing a contiguous (non-block) side in the other's shape, so
// the shader unravels only once; otherwise it unravels the flat index in both shapes.
CopyPlan plan_copy(const Recorder & rec, const ggml_tensor * node, uint32_t a_unit, uint32_t d_unit) {
    const ggml_tensor * a = node->src[0];
    const Shape a_ne = shape_of(a), d_ne = shape_of(node);
    const View va = view_of(rec, a, a_unit), vd = view_of(rec, node, d_unit);
    if (ggml_are_same_shape(a, node)) return {d_ne, a_ne, va, vd, false};
    if (ggml_is_contiguous(a) && !block_type_name(a->type))
        return {d_ne, a_ne, dense_view(va.offset, d_ne), vd, false};
    if (ggml_is_contiguous(node) && !block_type_name(node->type))
        return {a_ne, a_ne, va, dense_view(vd.offset, a_ne), false};
    return {d_ne, a_ne, va, vd, true};
}

bool supports_copy(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!a || ggml_nelements(a) != ggml_nelements(node)) return false;
    if (a->type == node->type) return raw_tensor(device, a) && raw_tensor(device, node);
    if (block_type_name(a->type))
        return node->type == GGML_TYPE_F32 && block_tensor(device, a) && float_tensor(device, node);
    if (!float_tensor(device, a)) return false;
    // quantize.comp reads a block's elements along dimension 0 of a described in node's shape.
    if (block_type_name(node->type))
        return block_tensor(device, node) && (ggml_are_same_shape(a, node) || ggml_is_contiguous(a));
    return float_tensor(device, node);
}

void record_quantize(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const CopyPlan plan = plan_copy(rec, node, float_unit(a->type), kBlockUnit);
    const struct {
        Shape ne;
        View a, d;
    } push{block_shape(node), plan.a, plan.d};
    rec.dispatch(std::string("quantize_") + float_type_name(a->type) + "_" + block_type_name(node->type),
                 {rec.arg(a, false), rec.arg(node, true)}, push,
                 rec.groups_for(count(push.ne), kQuantizeLocalSize));
}

void record_copy(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (ggml_nelements(node) == 0) return;
    if (block_type_name(node->type)) return record_quantize(rec, node);
    std::string shader = "cpy_";
    uint32_t a_unit, d_unit;
    if (a->type == node->type) {
        shader += raw_name(a->type);
        a_unit = d_unit = static_cast<uint32_t>(ggml_type_size(a->type));
    } else if (block_type_name(a->type)) {
        shader += std::string(block_type_name(a->type)) + "_f32";
        a_unit = kBlockUnit;
        d_unit = float_unit(node->type);
    } else {
        shader += std::string(float_type_name(a->type)) + "_" + float_type_name(node->type);
        a_unit = float_unit(a->type);
        d_unit = float_unit(node->type);
    }
    const CopyPlan plan = plan_copy(rec, node, a_unit, d_unit);
    const struct {
        Shape ne, a_ne;
        View a, d;
    } push{plan.ne, plan.a_ne, plan.a, plan.d};
    rec.dispatch(shader, {rec.arg(a, false), rec.arg(node, true)}, push,
                 rec.groups_for((count(plan.ne) + kCopyRun - 1) / kCopyRun, kLocalSize),
                 {plan.reshape ? 1u : 0u});
}

// ---- GET_ROWS ---------------------------------------------------------------------------------------

bool supports_get_rows(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *idx = node->src[1];
    if (!a || !idx || idx->type != GGML_TYPE_I32 || !raw_tensor(device, idx)) return false;
    if (node->ne[0] != a->ne[0] || node->ne[1] != idx->ne[0] || node->ne[2] != idx->ne[1] ||
        node->ne[3] != idx->ne[2] || node->ne[2] != a->ne[2] || node->ne[3] != a->ne[3])
        return false;
    if (a->type == GGML_TYPE_I32)
        return node->type == GGML_TYPE_I32 && raw_tensor(device, a) && raw_tensor(device, node);
    const bool source = block_type_name(a->type) ? block_tensor(device, a) : float_tensor(device, a);
    return source && node->type == GGML_TYPE_F32 && float_tensor(device, node);
}

void record_get_rows(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *idx = node->src[1];
    if (ggml_nelements(node) == 0) return;
    const char * type = a->type == GGML_TYPE_I32 ? "i32" : block_type_name(a->type);
    const uint32_t a_unit =
        block_type_name(a->type) ? kBlockUnit : static_cast<uint32_t>(ggml_type_size(a->type));
    const struct {
        Shape ne;
        View a, idx, d;
        uint32_t rows;
    } push{shape_of(node), view_of(rec, a, a_unit), view_of(rec, idx, 4), view_of(rec, node, 4),
           static_cast<uint32_t>(a->ne[1])};
    rec.dispatch(std::string("get_rows_") + (type ? type : float_type_name(a->type)),
                 {rec.arg(a, false), rec.arg(idx, false), rec.arg(node, true)}, push,
                 rec.groups_for(ggml_nelements(node), kLocalSize));
}

// ---- SET_ROWS ---------------------------------------------------------------------------------------

bool supports_set_rows(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1], *idx = node->src[2];
    if (!a || !b || !idx || a->type != node->type || !ggml_are_same_shape(a, node) ||
        b->type != GGML_TYPE_F32 || idx->type != GGML_TYPE_I32 || !float_tensor(device, b) ||
        !raw_tensor(device, idx))
        return false;
    if (b->ne[0] != node->ne[0] || b->ne[2] != node->ne[2] || b->ne[3] != node->ne[3] ||
        idx->ne[0] != b->ne[1] || idx->ne[1] <= 0 || idx->ne[2] <= 0 || idx->ne[3] != 1 ||
        b->ne[2] % idx->ne[1] != 0 || b->ne[3] % idx->ne[2] != 0)
        return false;
    return block_type_name(node->type) ? block_tensor(device, node) : float_tensor(device, node);
}

void record_set_rows(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *b = node->src[1], *idx = node->src[2];
    if (ggml_nelements(b) == 0) return;
    const char * block = block_type_name(node->type);
    const struct {
        Shape ne, idx_ne;
        View b, idx, d;
        uint32_t rows;
    } push{block ? block_shape(b) : shape_of(b),
           shape_of(idx),
           view_of(rec, b, 4),
           view_of(rec, idx, 4),
           view_of(rec, node, block ? kBlockUnit : float_unit(node->type)),
           static_cast<uint32_t>(node->ne[1])};
    rec.dispatch(std::string("set_rows_") + (block ? block : float_type_name(node->type)),
                 {rec.arg(b, false), rec.arg(idx, false), rec.arg(node, true)}, push,
                 rec.groups_for(count(push.ne), kLocalSize));
}

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
    const int32_t dim = param<int32_t>(node, 0);
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
    for (int k = 0; k < GGML_MAX_DIMS; ++k) {
        const int32_t lp = param<int32_t>(node, 2 * k), rp = param<int32_t>(node, 2 * k + 1);
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
    if (op == kConcat) extra.ne[0] = static_cast<uint32_t>(param<int32_t>(node, 0));
    for (int k = 0; op == kPad && k < GGML_MAX_DIMS; ++k)
        extra.ne[k] = static_cast<uint32_t>(param<int32_t>(node, 2 * k));
    const uint32_t unit = static_cast<uint32_t>(ggml_type_size(node->type));
    const struct {
        Shape ne, a_ne, extra;
        View a, b, d;
    } push{shape_of(node),        shape_of(a),           extra,
           view_of(rec, a, unit), view_of(rec, b, unit), view_of(rec, node, unit)};
    rec.dispatch(std::string("gather_") + raw_name(node->type),
                 {rec.arg(a, false), rec.arg(b, false), rec.arg(node, true)}, push,
                 rec.groups_for(ggml_nelements(node), kLocalSize), {op});
}

}  // namespace

namespace kernels {
const Kernel copy = vulkan_kernel<supports_copy, nullptr, record_copy>("vulkan.copy");
const Kernel get_rows = vulkan_kernel<supports_get_rows, nullptr, record_get_rows>("vulkan.get_rows");
const Kernel set_rows = vulkan_kernel<supports_set_rows, nullptr, record_set_rows>("vulkan.set_rows");
const Kernel repeat = vulkan_kernel<supports_repeat, nullptr, record_gather>("vulkan.repeat");
const Kernel concat = vulkan_kernel<supports_concat, nullptr, record_gather>("vulkan.concat");
const Kernel pad = vulkan_kernel<supports_pad, nullptr, record_gather>("vulkan.pad");
}  // namespace kernels

}  // namespace ggx::vulkan
