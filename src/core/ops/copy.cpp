// Constructors of the copy family: CPY, DUP, CONT (ggml_cpy, ggml_cast, ggml_dup*, ggml_cont*).
#include "core/ops/common.h"

using namespace ggx::core;

namespace {

// Copies a into dst (a new tensor, or a view of the destination b) converting to dst's type.
bool can_convert(ggml_type from, ggml_type to) {
    if (from == to || is_f64_conversion(from, to)) return true;
    if (ggml_is_float_type(from)) return ggml_is_float_type(to) || ggml_is_quantized(to);
    return ggml_is_quantized(from) && to == GGML_TYPE_F32;
}

ggml_tensor * copy_into(ggml_context * ctx, const char * name, ggml_tensor * a, ggml_tensor * b,
                        ggml_type type, ggml_op op, const std::array<int64_t, 4> & ne) {
    Check check(ctx, name, {{"a", a}, {"b", b, true}});
    if (!check) return nullptr;
    const ggml_type dst_type = b ? b->type : type;
    const int64_t dst_elements = ne[0] * ne[1] * ne[2] * ne[3];
    check.require(is_known_type(dst_type), "unknown destination type")
        .require(can_convert(a->type, dst_type), "unsupported type conversion")
        .require(ggml_nelements(a) == dst_elements, "element counts differ")
        .require(has_dense_blocks(a) && (!b || has_dense_blocks(b)), "quantized rows must be dense blocks")
        .require(ne[0] % ggml_blck_size(dst_type) == 0,
                 "ne0 must be a multiple of the destination block size");
    if (!check) return nullptr;
    return b ? make_node(ctx, name, op, b->type, ne, {a, b}, b) : make_node(ctx, name, op, dst_type, ne, {a});
}

}  // namespace

extern "C" {

ggml_tensor * ggml_cpy(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    if (!a || !b) return nullptr;
    return copy_into(ctx, "ggml_cpy", a, b, b->type, GGML_OP_CPY, shape_of(b));
}

ggml_tensor * ggml_cast(ggml_context * ctx, ggml_tensor * a, ggml_type type) {
    if (!a) return nullptr;
    return copy_into(ctx, "ggml_cast", a, nullptr, type, GGML_OP_CPY, shape_of(a));
}

ggml_tensor * ggml_dup(ggml_context * ctx, ggml_tensor * a) {
    if (!a) return nullptr;
    return copy_into(ctx, "ggml_dup", a, nullptr, a->type, GGML_OP_DUP, shape_of(a));
}

ggml_tensor * ggml_dup_inplace(ggml_context * ctx, ggml_tensor * a) {
    Check check(ctx, "ggml_dup_inplace", {{"a", a}});
    if (!check) return nullptr;
    return make_node(ctx, "ggml_dup_inplace", GGML_OP_DUP, a->type, shape_of(a), {a}, a);
}

ggml_tensor * ggml_cont(ggml_context * ctx, ggml_tensor * a) {
    if (!a) return nullptr;
    return copy_into(ctx, "ggml_cont", a, nullptr, a->type, GGML_OP_CONT, shape_of(a));
}

ggml_tensor * ggml_cont_4d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2,
                           int64_t ne3) {
    if (!a) return nullptr;
    return copy_into(ctx, "ggml_cont_4d", a, nullptr, a->type, GGML_OP_CONT, {ne0, ne1, ne2, ne3});
}
ggml_tensor * ggml_cont_1d(ggml_context * ctx, ggml_tensor * a, int64_t ne0) {
    return ggml_cont_4d(ctx, a, ne0, 1, 1, 1);
}
ggml_tensor * ggml_cont_2d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1) {
    return ggml_cont_4d(ctx, a, ne0, ne1, 1, 1);
}
ggml_tensor * ggml_cont_3d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2) {
    return ggml_cont_4d(ctx, a, ne0, ne1, ne2, 1);
}

}  // extern "C"
