// Vulkan kernel of the copy ops: CPY/DUP/CONT (cpy.comp, quantize.comp).
//
// Same-type moves copy raw bits (4-, 2- or 1-byte elements); F32/F16/BF16 convert into one another;
// block types are dequantized into F32 and floats quantized into the quantizable ones, their rows
// dense blocks addressed by byte (quant.glsl).
#include <string>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

constexpr uint32_t kLocalSize = 256;
constexpr uint32_t kQuantizeLocalSize = 64;
constexpr uint32_t kCopyRun = 8;  // elements per invocation of cpy.comp (RUN in common.glsl)

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
    if (a->type == node->type && block_type_name(a->type))
        return block_tensor(device, a) && block_tensor(device, node) &&
               (ggml_are_same_shape(a, node) || (ggml_is_contiguous(a) && ggml_is_contiguous(node)));
    if (a->type == node->type) return raw_tensor(device, a) && raw_tensor(device, node);
    if (block_type_name(a->type))
        return node->type == GGML_TYPE_F32 && block_tensor(device, a) && float_tensor(device, node);
    if (!float_tensor(device, a)) return false;
    // quantize.comp reads a block's elements along dimension 0 of a described in node's shape.
    if (block_type_name(node->type))
        return quantizable_block_type(node->type) && block_tensor(device, node) &&
               (ggml_are_same_shape(a, node) || ggml_is_contiguous(a));
    return float_tensor(device, node);
}

void record_quantize(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const CopyPlan plan = plan_copy(rec, node, float_unit(a->type), kBlockUnit);
    const struct {
        Shape ne;
        View a, d;
    } push{block_shape(node, node->type), plan.a, plan.d};
    rec.dispatch(std::string("quantize_") + float_type_name(a->type) + "_" + block_type_name(node->type),
                 {rec.arg(a, false), rec.arg(node, true)}, push,
                 rec.groups_for(count(push.ne), kQuantizeLocalSize));
}

void dispatch_copy(Recorder & rec, const ggml_tensor * node, const std::string & shader,
                   const CopyPlan & plan) {
    const ggml_tensor * a = node->src[0];
    const struct {
        Shape ne, a_ne;
        View a, d;
    } push{plan.ne, plan.a_ne, plan.a, plan.d};
    std::vector<Arg> args = {rec.arg(a, false), rec.arg(node, true)};
    add_grids(rec, a->type, args);
    rec.dispatch(shader, args, push, rec.groups_for((count(plan.ne) + kCopyRun - 1) / kCopyRun, kLocalSize),
                 {plan.reshape ? 1u : 0u});
}

// A block tensor as bytes: dimension 0 the bytes of its rows (dense blocks), the others its strides.
Shape byte_shape(const ggml_tensor * t) {
    Shape ne = shape_of(t);
    ne.ne[0] = static_cast<uint32_t>(ggml_row_size(t->type, t->ne[0]));
    return ne;
}

View byte_view(const Recorder & rec, const ggml_tensor * t) {
    View v = view_of(rec, t, 1);
    v.s0 = 1;
    return v;
}

// Same-type block copies move bytes (cpy.comp's BYTES): row by row in one shape, or as flat bytes
// between contiguous tensors of different shapes.
void record_block_copy(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const View va = byte_view(rec, a), vd = byte_view(rec, node);
    if (ggml_are_same_shape(a, node))
        return dispatch_copy(rec, node, "cpy_u8", {byte_shape(node), byte_shape(a), va, vd, false});
    const Shape flat = {{static_cast<uint32_t>(ggml_nbytes(node)), 1, 1, 1}};
    dispatch_copy(rec, node, "cpy_u8",
                  {flat, flat, dense_view(va.offset, flat), dense_view(vd.offset, flat), false});
}

}  // namespace

void kernels::record_copy(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (ggml_nelements(node) == 0) return;
    if (a->type == node->type && block_type_name(a->type)) return record_block_copy(rec, node);
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
    dispatch_copy(rec, node, shader, plan_copy(rec, node, a_unit, d_unit));
}

namespace kernels {
const Kernel copy = vulkan_kernel<supports_copy, nullptr, record_copy>("vulkan.copy");
}  // namespace kernels

}  // namespace ggx::vulkan
