// Operator constructors: validate inputs, infer the result's shape and type, record op_params.
#include <algorithm>
#include <array>
#include <cmath>

#include "core/enum_table.h"
#include "core/internal.h"
#include "core/op_params.h"
#include "core/types.h"

namespace {

using namespace ggx::core;

bool is_float(const ggml_tensor * t) { return ggml_is_float_type(t->type); }
bool is_float_or_quantized(const ggml_tensor * t) { return is_float(t) || ggml_is_quantized(t->type); }
// Quantized data is read a row of whole blocks at a time.
bool has_dense_blocks(const ggml_tensor * t) {
    return !ggml_is_quantized(t->type) ||
           (t->ne[0] % ggml_blck_size(t->type) == 0 && t->nb[0] == ggml_type_size(t->type));
}

std::array<int64_t, 4> shape_of(const ggml_tensor * t) { return {t->ne[0], t->ne[1], t->ne[2], t->ne[3]}; }

// A new tensor computed by op from srcs or, when over is given, a view of over's storage with over's
// shape and strides that op writes in place.
ggml_tensor * make_node(ggml_context * ctx, const char * op_name, ggml_op op, ggml_type type,
                        const std::array<int64_t, 4> & ne, std::initializer_list<ggml_tensor *> srcs,
                        ggml_tensor * over = nullptr) {
    ggml_tensor * result = nullptr;
    if (over) {
        ggml_tensor * owner = over->view_src ? over->view_src : over;
        result = new_tensor(ctx, op_name, over->type, over->ne, owner, over->view_src ? over->view_offs : 0);
        if (result) std::copy(std::begin(over->nb), std::end(over->nb), result->nb);
    } else {
        result = new_tensor(ctx, op_name, type, ne.data(), nullptr, 0);
    }
    if (!result) return nullptr;
    result->op = op;
    int i = 0;
    for (ggml_tensor * src : srcs)
        result->src[i++] = src;
    return result;
}

ggml_tensor * binary(ggml_context * ctx, const char * name, ggml_op op, ggml_tensor * a, ggml_tensor * b,
                     bool inplace) {
    Check check(ctx, name, {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require(b->type == GGML_TYPE_F32 || b->type == a->type, "b must be f32 or of a's type")
        .require(ggml_can_repeat(b, a), "b cannot be broadcast over a (a.ne[i] % b.ne[i] != 0)");
    if (!check) return nullptr;
    return make_node(ctx, name, op, a->type, shape_of(a), {a, b}, inplace ? a : nullptr);
}

// Element-wise op on a float tensor.
ggml_tensor * elementwise(ggml_context * ctx, const char * name, ggml_op op, ggml_tensor * a, bool inplace) {
    Check check(ctx, name, {{"a", a}});
    if (!check) return nullptr;
    if (!check.require(is_float(a), "a must be f32, f16 or bf16")) return nullptr;
    return make_node(ctx, name, op, a->type, shape_of(a), {a}, inplace ? a : nullptr);
}

// result with params recorded (NULL stays NULL: its constructor failed and reported why).
template <class P>
ggml_tensor * with_params(ggml_tensor * result, const P & params) {
    if (result) set_params(result, params);
    return result;
}

// A per-row normalisation of F32 a (its parameters are recorded by the caller).
ggml_tensor * row_norm(ggml_context * ctx, const char * name, ggml_op op, ggml_tensor * a, float eps,
                       bool inplace) {
    Check check(ctx, name, {{"a", a}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32, "a must be f32")
        .require(eps >= 0.0f && std::isfinite(eps), "eps must be finite and >= 0");
    if (!check) return nullptr;
    return make_node(ctx, name, op, a->type, shape_of(a), {a}, inplace ? a : nullptr);
}

ggml_tensor * reduce_rows(ggml_context * ctx, const char * name, ggml_op op, ggml_tensor * a,
                          const std::array<int64_t, 4> & ne) {
    Check check(ctx, name, {{"a", a}});
    if (!check) return nullptr;
    if (!check.require(is_float(a), "a must be f32, f16 or bf16")) return nullptr;
    return make_node(ctx, name, op, a->type, ne, {a});
}

ggml_tensor * unary(ggml_context * ctx, ggml_tensor * a, ggml_unary_op op, bool inplace) {
    const char * name = inplace ? "ggml_unary_inplace" : "ggml_unary";
    Check check(ctx, name, {{"a", a}});
    if (!check) return nullptr;
    check.require(op >= 0 && op < GGML_UNARY_OP_COUNT, "unknown unary op")
        .require(is_float(a), "a must be f32, f16 or bf16");
    if (!check) return nullptr;
    return with_params(make_node(ctx, name, GGML_OP_UNARY, a->type, shape_of(a), {a}, inplace ? a : nullptr),
                       ggml_ext_unary_params{static_cast<int32_t>(op)});
}

ggml_tensor * glu(ggml_context * ctx, const char * name, ggml_tensor * a, ggml_tensor * b, ggml_glu_op op,
                  bool swapped) {
    Check check(ctx, name, {{"a", a}, {"b", b, true}});
    if (!check) return nullptr;
    check.require(op >= 0 && op < GGML_GLU_OP_COUNT, "unknown glu op")
        .require(is_float(a), "a must be f32, f16 or bf16");
    if (b) {
        check.require(b->type == a->type, "a and b must have the same type")
            .require(ggml_are_same_shape(a, b), "a and b must have the same shape");
    } else {
        check.require(a->ne[0] % 2 == 0, "ne0 of a merged gate/up tensor must be even");
    }
    if (!check) return nullptr;
    auto ne = shape_of(a);
    if (!b) ne[0] /= 2;
    return with_params(make_node(ctx, name, GGML_OP_GLU, a->type, ne, {a, b}),
                       ggml_ext_glu_params{static_cast<int32_t>(op), swapped ? 1 : 0});
}

// Copies a into dst (a new tensor, or a view of the destination b) converting to dst's type.
bool can_convert(ggml_type from, ggml_type to) {
    if (from == to) return true;
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

int64_t conv_output_size(int64_t in, int64_t kernel, int stride, int pad, int dilation) {
    return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

// Names (the enum value without its prefix, as ggml names them) and display formulas, in enum
// order; lists_every_value_in_order proves each table has one entry per value.
struct OpName {
    ggml_op op;
    const char * name;
    const char * symbol;
};
#define GGX_OP(name, symbol) \
    { GGML_OP_##name, #name, symbol }
constexpr OpName op_names[] = {
    GGX_OP(NONE, "none"),
    GGX_OP(DUP, "x"),
    GGX_OP(ADD, "x+y"),
    GGX_OP(ADD_ID, "x+y[ids]"),
    GGX_OP(ADD1, "x+scalar(y)"),
    GGX_OP(ACC, "view(x)+=y"),
    GGX_OP(SUB, "x-y"),
    GGX_OP(MUL, "x*y"),
    GGX_OP(DIV, "x/y"),
    GGX_OP(SQR, "x^2"),
    GGX_OP(SQRT, "sqrt(x)"),
    GGX_OP(LOG, "log(x)"),
    GGX_OP(SIN, "sin(x)"),
    GGX_OP(COS, "cos(x)"),
    GGX_OP(SUM, "sum(x)"),
    GGX_OP(SUM_ROWS, "sum_rows(x)"),
    GGX_OP(CUMSUM, "cumsum(x)"),
    GGX_OP(MEAN, "mean(x)"),
    GGX_OP(ARGMAX, "argmax(x)"),
    GGX_OP(COUNT_EQUAL, "count(x==y)"),
    GGX_OP(REPEAT, "repeat(x)"),
    GGX_OP(REPEAT_BACK, "repeat_back(x)"),
    GGX_OP(CONCAT, "concat(x,y)"),
    GGX_OP(SILU_BACK, "silu_back(x)"),
    GGX_OP(NORM, "norm(x)"),
    GGX_OP(RMS_NORM, "rms_norm(x)"),
    GGX_OP(RMS_NORM_BACK, "rms_norm_back(x)"),
    GGX_OP(GROUP_NORM, "group_norm(x)"),
    GGX_OP(L2_NORM, "l2_norm(x)"),
    GGX_OP(MUL_MAT, "X*Y"),
    GGX_OP(MUL_MAT_ID, "X[ids]*Y"),
    GGX_OP(OUT_PROD, "X*Y^T"),
    GGX_OP(SCALE, "x*s"),
    GGX_OP(SET, "view(x)=y"),
    GGX_OP(CPY, "y=x"),
    GGX_OP(CONT, "cont(x)"),
    GGX_OP(RESHAPE, "reshape(x)"),
    GGX_OP(VIEW, "view(x)"),
    GGX_OP(PERMUTE, "permute(x)"),
    GGX_OP(TRANSPOSE, "x^T"),
    GGX_OP(GET_ROWS, "x[rows]"),
    GGX_OP(GET_ROWS_BACK, "get_rows_back(x)"),
    GGX_OP(SET_ROWS, "x[rows]=y"),
    GGX_OP(DIAG, "diag(x)"),
    GGX_OP(DIAG_MASK_INF, "diag_mask_inf(x)"),
    GGX_OP(DIAG_MASK_ZERO, "diag_mask_zero(x)"),
    GGX_OP(SOFT_MAX, "softmax(x)"),
    GGX_OP(SOFT_MAX_BACK, "softmax_back(x)"),
    GGX_OP(ROPE, "rope(x)"),
    GGX_OP(ROPE_BACK, "rope_back(x)"),
    GGX_OP(CLAMP, "clamp(x)"),
    GGX_OP(CONV_TRANSPOSE_1D, "conv_transpose_1d(k,x)"),
    GGX_OP(IM2COL, "im2col(x)"),
    GGX_OP(IM2COL_BACK, "im2col_back(x)"),
    GGX_OP(IM2COL_3D, "im2col_3d(x)"),
    GGX_OP(COL2IM_1D, "col2im_1d(x)"),
    GGX_OP(CONV_2D, "conv_2d(k,x)"),
    GGX_OP(CONV_3D, "conv_3d(k,x)"),
    GGX_OP(CONV_2D_DW, "conv_2d_dw(k,x)"),
    GGX_OP(CONV_TRANSPOSE_2D, "conv_transpose_2d(k,x)"),
    GGX_OP(POOL_1D, "pool_1d(x)"),
    GGX_OP(POOL_2D, "pool_2d(x)"),
    GGX_OP(POOL_2D_BACK, "pool_2d_back(x)"),
    GGX_OP(UPSCALE, "upscale(x)"),
    GGX_OP(PAD, "pad(x)"),
    GGX_OP(PAD_REFLECT_1D, "pad_reflect_1d(x)"),
    GGX_OP(ROLL, "roll(x)"),
    GGX_OP(ARANGE, "arange(start,stop,step)"),
    GGX_OP(TIMESTEP_EMBEDDING, "timestep_embedding(t)"),
    GGX_OP(ARGSORT, "argsort(x)"),
    GGX_OP(TOP_K, "top_k(x)"),
    GGX_OP(LEAKY_RELU, "leaky_relu(x)"),
    GGX_OP(TRI, "tri(x)"),
    GGX_OP(FILL, "fill(x)"),
    GGX_OP(FLASH_ATTN_EXT, "flash_attn(q,k,v)"),
    GGX_OP(FLASH_ATTN_BACK, "flash_attn_back(q,k,v)"),
    GGX_OP(SSM_CONV, "ssm_conv(x)"),
    GGX_OP(SSM_SCAN, "ssm_scan(x)"),
    GGX_OP(WIN_PART, "win_part(x)"),
    GGX_OP(WIN_UNPART, "win_unpart(x)"),
    GGX_OP(GET_REL_POS, "get_rel_pos(x)"),
    GGX_OP(ADD_REL_POS, "add_rel_pos(x)"),
    GGX_OP(RWKV_WKV6, "rwkv_wkv6(k,v,r)"),
    GGX_OP(GATED_LINEAR_ATTN, "gated_linear_attn(k,v,q)"),
    GGX_OP(RWKV_WKV7, "rwkv_wkv7(r,w,k,v)"),
    GGX_OP(SOLVE_TRI, "solve_tri(A,B)"),
    GGX_OP(GATED_DELTA_NET, "gated_delta_net(q,k,v)"),
    GGX_OP(LIGHTNING_INDEXER, "lightning_indexer(q,k)"),
    GGX_OP(DSV4_HC_COMB, "hc_comb(x)"),
    GGX_OP(DSV4_HC_PRE, "hc_pre(x)"),
    GGX_OP(DSV4_HC_POST, "hc_post(x)"),
    GGX_OP(UNARY, "f(x)"),
    GGX_OP(MAP_CUSTOM1, "custom(x)"),
    GGX_OP(MAP_CUSTOM2, "custom(x,y)"),
    GGX_OP(MAP_CUSTOM3, "custom(x,y,z)"),
    GGX_OP(CUSTOM, "custom(...)"),
    GGX_OP(CROSS_ENTROPY_LOSS, "cross_entropy(x,y)"),
    GGX_OP(CROSS_ENTROPY_LOSS_BACK, "cross_entropy_back(x,y)"),
    GGX_OP(OPT_STEP_ADAMW, "adamw(x)"),
    GGX_OP(OPT_STEP_SGD, "sgd(x)"),
    GGX_OP(GLU, "glu(x)"),
};
#undef GGX_OP
static_assert(ggx::lists_every_value_in_order(op_names, GGML_OP_COUNT), "one name per ggml_op, in order");

template <class Op>
struct SubOpName {
    Op op;
    const char * name;
};
#define GGX_UNARY(name) \
    { GGML_UNARY_OP_##name, #name }
constexpr SubOpName<ggml_unary_op> unary_names[] = {
    GGX_UNARY(ABS),         GGX_UNARY(SGN),        GGX_UNARY(NEG),   GGX_UNARY(STEP),
    GGX_UNARY(TANH),        GGX_UNARY(ELU),        GGX_UNARY(RELU),  GGX_UNARY(SIGMOID),
    GGX_UNARY(GELU),        GGX_UNARY(GELU_QUICK), GGX_UNARY(SILU),  GGX_UNARY(HARDSWISH),
    GGX_UNARY(HARDSIGMOID), GGX_UNARY(EXP),        GGX_UNARY(EXPM1), GGX_UNARY(SOFTPLUS),
    GGX_UNARY(GELU_ERF),    GGX_UNARY(XIELU),      GGX_UNARY(FLOOR), GGX_UNARY(CEIL),
    GGX_UNARY(ROUND),       GGX_UNARY(TRUNC),
};
#undef GGX_UNARY
static_assert(ggx::lists_every_value_in_order(unary_names, GGML_UNARY_OP_COUNT), "one name per unary op");

#define GGX_GLU(name) \
    { GGML_GLU_OP_##name, #name }
constexpr SubOpName<ggml_glu_op> glu_names[] = {
    GGX_GLU(REGLU),      GGX_GLU(GEGLU),     GGX_GLU(SWIGLU),
    GGX_GLU(SWIGLU_OAI), GGX_GLU(GEGLU_ERF), GGX_GLU(GEGLU_QUICK),
};
#undef GGX_GLU
static_assert(ggx::lists_every_value_in_order(glu_names, GGML_GLU_OP_COUNT), "one name per glu op");

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

ggml_tensor * ggml_cont(ggml_context * ctx, ggml_tensor * a) {
    if (!a) return nullptr;
    return copy_into(ctx, "ggml_cont", a, nullptr, a->type, GGML_OP_CONT, shape_of(a));
}

ggml_tensor * ggml_cont_4d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2,
                           int64_t ne3) {
    if (!a) return nullptr;
    return copy_into(ctx, "ggml_cont_4d", a, nullptr, a->type, GGML_OP_CONT, {ne0, ne1, ne2, ne3});
}

ggml_tensor * ggml_add(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_add", GGML_OP_ADD, a, b, false);
}
ggml_tensor * ggml_sub(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_sub", GGML_OP_SUB, a, b, false);
}
ggml_tensor * ggml_mul(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_mul", GGML_OP_MUL, a, b, false);
}
ggml_tensor * ggml_div(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_div", GGML_OP_DIV, a, b, false);
}
ggml_tensor * ggml_add_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_add_inplace", GGML_OP_ADD, a, b, true);
}
ggml_tensor * ggml_sub_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_sub_inplace", GGML_OP_SUB, a, b, true);
}
ggml_tensor * ggml_mul_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_mul_inplace", GGML_OP_MUL, a, b, true);
}
ggml_tensor * ggml_div_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return binary(ctx, "ggml_div_inplace", GGML_OP_DIV, a, b, true);
}

ggml_tensor * ggml_scale(ggml_context * ctx, ggml_tensor * a, float s) {
    return with_params(elementwise(ctx, "ggml_scale", GGML_OP_SCALE, a, false),
                       ggml_ext_scale_params{s, 0.0f});
}
ggml_tensor * ggml_scale_inplace(ggml_context * ctx, ggml_tensor * a, float s) {
    return with_params(elementwise(ctx, "ggml_scale_inplace", GGML_OP_SCALE, a, true),
                       ggml_ext_scale_params{s, 0.0f});
}
ggml_tensor * ggml_scale_bias(ggml_context * ctx, ggml_tensor * a, float s, float bias) {
    return with_params(elementwise(ctx, "ggml_scale_bias", GGML_OP_SCALE, a, false),
                       ggml_ext_scale_params{s, bias});
}
ggml_tensor * ggml_scale_bias_inplace(ggml_context * ctx, ggml_tensor * a, float s, float bias) {
    return with_params(elementwise(ctx, "ggml_scale_bias_inplace", GGML_OP_SCALE, a, true),
                       ggml_ext_scale_params{s, bias});
}
ggml_tensor * ggml_sqr(ggml_context * ctx, ggml_tensor * a) {
    return elementwise(ctx, "ggml_sqr", GGML_OP_SQR, a, false);
}
ggml_tensor * ggml_sqr_inplace(ggml_context * ctx, ggml_tensor * a) {
    return elementwise(ctx, "ggml_sqr_inplace", GGML_OP_SQR, a, true);
}
ggml_tensor * ggml_sqrt(ggml_context * ctx, ggml_tensor * a) {
    return elementwise(ctx, "ggml_sqrt", GGML_OP_SQRT, a, false);
}
ggml_tensor * ggml_sqrt_inplace(ggml_context * ctx, ggml_tensor * a) {
    return elementwise(ctx, "ggml_sqrt_inplace", GGML_OP_SQRT, a, true);
}

static ggml_tensor * clamp(ggml_context * ctx, const char * name, ggml_tensor * a, float min, float max,
                           bool inplace) {
    Check check(ctx, name, {{"a", a}});
    if (!check || !check.require(min <= max, "min must be <= max")) return nullptr;
    return with_params(elementwise(ctx, name, GGML_OP_CLAMP, a, inplace), ggml_ext_clamp_params{min, max});
}
ggml_tensor * ggml_clamp(ggml_context * ctx, ggml_tensor * a, float min, float max) {
    return clamp(ctx, "ggml_clamp", a, min, max, false);
}
ggml_tensor * ggml_clamp_inplace(ggml_context * ctx, ggml_tensor * a, float min, float max) {
    return clamp(ctx, "ggml_clamp_inplace", a, min, max, true);
}

ggml_tensor * ggml_sum(ggml_context * ctx, ggml_tensor * a) {
    return reduce_rows(ctx, "ggml_sum", GGML_OP_SUM, a, {1, 1, 1, 1});
}
ggml_tensor * ggml_sum_rows(ggml_context * ctx, ggml_tensor * a) {
    return a ? reduce_rows(ctx, "ggml_sum_rows", GGML_OP_SUM_ROWS, a, {1, a->ne[1], a->ne[2], a->ne[3]})
             : nullptr;
}
ggml_tensor * ggml_mean(ggml_context * ctx, ggml_tensor * a) {
    return a ? reduce_rows(ctx, "ggml_mean", GGML_OP_MEAN, a, {1, a->ne[1], a->ne[2], a->ne[3]}) : nullptr;
}

ggml_tensor * ggml_argmax(ggml_context * ctx, ggml_tensor * a) {
    Check check(ctx, "ggml_argmax", {{"a", a}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32, "a must be f32")
        .require(ggml_is_matrix(a), "a must be a matrix")
        .require(a->ne[0] > 0, "rows must not be empty");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_argmax", GGML_OP_ARGMAX, GGML_TYPE_I32, {a->ne[1], 1, 1, 1}, {a});
}

ggml_tensor * ggml_repeat(ggml_context * ctx, ggml_tensor * a, const ggml_tensor * b) {
    Check check(ctx, "ggml_repeat", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_float(a) || a->type == GGML_TYPE_I32, "a must be f32, f16, bf16 or i32")
        .require(ggml_can_repeat(a, b), "a cannot be tiled to b's shape (b.ne[i] % a.ne[i] != 0)");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_repeat", GGML_OP_REPEAT, a->type, shape_of(b), {a});
}

ggml_tensor * ggml_concat(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int dim) {
    Check check(ctx, "ggml_concat", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(dim >= 0 && dim < GGML_MAX_DIMS, "dim must be 0..3")
        .require(a->type == b->type, "a and b must have the same type")
        .require(is_float(a) || a->type == GGML_TYPE_I32, "a must be f32, f16, bf16 or i32");
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        check.require(i == dim || a->ne[i] == b->ne[i], "dimensions other than dim must match");
    }
    if (!check) return nullptr;
    auto ne = shape_of(a);
    ne[dim] += b->ne[dim];
    return with_params(make_node(ctx, "ggml_concat", GGML_OP_CONCAT, a->type, ne, {a, b}),
                       ggml_ext_concat_params{dim});
}

ggml_tensor * ggml_pad_ext(ggml_context * ctx, ggml_tensor * a, int lp0, int rp0, int lp1, int rp1, int lp2,
                           int rp2, int lp3, int rp3) {
    Check check(ctx, "ggml_pad_ext", {{"a", a}});
    if (!check) return nullptr;
    const ggml_ext_pad_params params{{{lp0, rp0}, {lp1, rp1}, {lp2, rp2}, {lp3, rp3}}};
    bool non_negative = true;
    for (const auto & pad : params.pads)
        non_negative = non_negative && pad[0] >= 0 && pad[1] >= 0;
    check.require(is_float(a), "a must be f32, f16 or bf16").require(non_negative, "paddings must be >= 0");
    if (!check) return nullptr;
    auto ne = shape_of(a);
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        ne[i] += params.pads[i][0] + params.pads[i][1];
    return with_params(make_node(ctx, "ggml_pad_ext", GGML_OP_PAD, a->type, ne, {a}), params);
}

ggml_tensor * ggml_pad(ggml_context * ctx, ggml_tensor * a, int p0, int p1, int p2, int p3) {
    return ggml_pad_ext(ctx, a, 0, p0, 0, p1, 0, p2, 0, p3);
}

ggml_tensor * ggml_upscale_ext(ggml_context * ctx, ggml_tensor * a, int ne0, int ne1, int ne2, int ne3,
                               ggml_scale_mode mode) {
    Check check(ctx, "ggml_upscale_ext", {{"a", a}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32, "a must be f32")
        .require(mode == GGML_SCALE_MODE_NEAREST, "only nearest scaling is supported")
        .require(ne0 >= 1 && ne1 >= 1 && ne2 >= 1 && ne3 >= 1, "target sizes must be >= 1")
        .require(!ggml_is_empty(a), "a must not be empty");
    if (!check) return nullptr;
    return with_params(
        make_node(ctx, "ggml_upscale_ext", GGML_OP_UPSCALE, a->type, {ne0, ne1, ne2, ne3}, {a}),
        ggml_ext_upscale_params{static_cast<int32_t>(mode)});
}

ggml_tensor * ggml_upscale(ggml_context * ctx, ggml_tensor * a, int scale_factor, ggml_scale_mode mode) {
    Check check(ctx, "ggml_upscale", {{"a", a}});
    if (!check || !check.require(scale_factor >= 1, "scale_factor must be >= 1")) return nullptr;
    return ggml_upscale_ext(ctx, a, static_cast<int>(a->ne[0] * scale_factor),
                            static_cast<int>(a->ne[1] * scale_factor), static_cast<int>(a->ne[2]),
                            static_cast<int>(a->ne[3]), mode);
}

ggml_tensor * ggml_norm(ggml_context * ctx, ggml_tensor * a, float eps) {
    return with_params(row_norm(ctx, "ggml_norm", GGML_OP_NORM, a, eps, false), ggml_ext_norm_params{eps});
}
ggml_tensor * ggml_norm_inplace(ggml_context * ctx, ggml_tensor * a, float eps) {
    return with_params(row_norm(ctx, "ggml_norm_inplace", GGML_OP_NORM, a, eps, true),
                       ggml_ext_norm_params{eps});
}
ggml_tensor * ggml_rms_norm(ggml_context * ctx, ggml_tensor * a, float eps) {
    return with_params(row_norm(ctx, "ggml_rms_norm", GGML_OP_RMS_NORM, a, eps, false),
                       ggml_ext_norm_params{eps});
}
ggml_tensor * ggml_rms_norm_inplace(ggml_context * ctx, ggml_tensor * a, float eps) {
    return with_params(row_norm(ctx, "ggml_rms_norm_inplace", GGML_OP_RMS_NORM, a, eps, true),
                       ggml_ext_norm_params{eps});
}
ggml_tensor * ggml_l2_norm(ggml_context * ctx, ggml_tensor * a, float eps) {
    return with_params(row_norm(ctx, "ggml_l2_norm", GGML_OP_L2_NORM, a, eps, false),
                       ggml_ext_norm_params{eps});
}

ggml_tensor * ggml_group_norm(ggml_context * ctx, ggml_tensor * a, int n_groups, float eps) {
    Check check(ctx, "ggml_group_norm", {{"a", a}});
    if (!check) return nullptr;
    if (!check.require(n_groups >= 1 && n_groups <= a->ne[2], "n_groups must be in 1..ne2")) return nullptr;
    return with_params(row_norm(ctx, "ggml_group_norm", GGML_OP_GROUP_NORM, a, eps, false),
                       ggml_ext_group_norm_params{n_groups, eps});
}

ggml_tensor * ggml_mul_mat(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    Check check(ctx, "ggml_mul_mat", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_float_or_quantized(a), "a must be f32, f16, bf16, q8_0 or q4_0")
        .require(is_float(b), "b must be f32, f16 or bf16")
        .require(has_dense_blocks(a), "rows of a quantized a must be dense blocks")
        .require(a->ne[0] == b->ne[0], "a.ne0 and b.ne0 (K) must match")
        .require(a->ne[2] > 0 && a->ne[3] > 0 && b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0,
                 "a cannot be broadcast over b in dims 2 and 3");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_mul_mat", GGML_OP_MUL_MAT, GGML_TYPE_F32,
                     {a->ne[1], b->ne[1], b->ne[2], b->ne[3]}, {a, b});
}

static ggml_tensor * soft_max(ggml_context * ctx, const char * name, ggml_tensor * a, ggml_tensor * mask,
                              float scale, float max_bias, bool inplace) {
    Check check(ctx, name, {{"a", a}, {"mask", mask, true}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32, "a must be f32")
        .require(std::isfinite(scale), "scale must be finite")
        .require(max_bias >= 0.0f && std::isfinite(max_bias), "max_bias must be finite and >= 0");
    if (mask) {
        check.require(mask->type == GGML_TYPE_F32 || mask->type == GGML_TYPE_F16, "mask must be f32 or f16")
            .require(mask->ne[0] == a->ne[0] && mask->ne[1] >= a->ne[1],
                     "mask must be [a.ne0, >= a.ne1, ...]")
            .require(mask->ne[2] > 0 && mask->ne[3] > 0 && a->ne[2] % mask->ne[2] == 0 &&
                         a->ne[3] % mask->ne[3] == 0,
                     "mask cannot be broadcast over a in dims 2 and 3");
    }
    if (!check) return nullptr;
    return with_params(
        make_node(ctx, name, GGML_OP_SOFT_MAX, a->type, shape_of(a), {a, mask}, inplace ? a : nullptr),
        ggml_ext_soft_max_params{scale, max_bias});
}

ggml_tensor * ggml_soft_max(ggml_context * ctx, ggml_tensor * a) {
    return soft_max(ctx, "ggml_soft_max", a, nullptr, 1.0f, 0.0f, false);
}
ggml_tensor * ggml_soft_max_inplace(ggml_context * ctx, ggml_tensor * a) {
    return soft_max(ctx, "ggml_soft_max_inplace", a, nullptr, 1.0f, 0.0f, true);
}
ggml_tensor * ggml_soft_max_ext(ggml_context * ctx, ggml_tensor * a, ggml_tensor * mask, float scale,
                                float max_bias) {
    return soft_max(ctx, "ggml_soft_max_ext", a, mask, scale, max_bias, false);
}

ggml_tensor * ggml_rope_ext(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * c, int n_dims,
                            int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                            float attn_factor, float beta_fast, float beta_slow) {
    Check check(ctx, "ggml_rope_ext", {{"a", a}, {"b", b}, {"c", c, true}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16, "a must be f32 or f16")
        .require(b->type == GGML_TYPE_I32 && ggml_is_vector(b) && b->ne[0] == a->ne[2],
                 "b must be an i32 vector of a.ne2 positions")
        .require(n_dims > 0 && n_dims % 2 == 0 && n_dims <= a->ne[0], "n_dims must be even and in 2..a.ne0")
        .require(mode == GGML_ROPE_TYPE_NORMAL || mode == GGML_ROPE_TYPE_NEOX, "mode must be NORMAL or NEOX")
        .require(freq_base > 0.0f && freq_scale > 0.0f, "freq_base and freq_scale must be > 0")
        .require(!c || (c->type == GGML_TYPE_F32 && ggml_is_vector(c) && c->ne[0] >= n_dims / 2),
                 "c must be an f32 vector of >= n_dims/2 frequency factors");
    if (!check) return nullptr;
    return with_params(make_node(ctx, "ggml_rope_ext", GGML_OP_ROPE, a->type, shape_of(a), {a, b, c}),
                       ggml_ext_rope_params{0, n_dims, mode, 0, n_ctx_orig, freq_base, freq_scale, ext_factor,
                                            attn_factor, beta_fast, beta_slow});
}

ggml_tensor * ggml_flash_attn_ext(ggml_context * ctx, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v,
                                  ggml_tensor * mask, float scale, float max_bias, float logit_softcap) {
    Check check(ctx, "ggml_flash_attn_ext", {{"q", q}, {"k", k}, {"v", v}, {"mask", mask, true}});
    if (!check) return nullptr;
    auto kv_type = [](const ggml_tensor * t) { return t->type == GGML_TYPE_F32 || t->type == GGML_TYPE_F16; };
    check.require(q->type == GGML_TYPE_F32, "q must be f32")
        .require(kv_type(k) && kv_type(v), "k and v must be f16 or f32")
        .require(q->ne[0] == k->ne[0], "q and k must have the same head size (ne0)")
        .require(k->ne[1] == v->ne[1] && k->ne[2] == v->ne[2] && k->ne[3] == v->ne[3],
                 "k and v must agree in dims 1..3")
        .require(k->ne[2] > 0 && q->ne[2] % k->ne[2] == 0, "q heads must be a multiple of k/v heads")
        .require(k->ne[3] > 0 && q->ne[3] % k->ne[3] == 0, "q batch must be a multiple of k/v batch")
        .require(std::isfinite(scale), "scale must be finite")
        .require(max_bias >= 0.0f && std::isfinite(max_bias), "max_bias must be finite and >= 0")
        .require(logit_softcap >= 0.0f && std::isfinite(logit_softcap),
                 "logit_softcap must be finite and >= 0");
    if (mask) {
        check.require(mask->type == GGML_TYPE_F32 || mask->type == GGML_TYPE_F16, "mask must be f16 or f32")
            .require(mask->ne[0] == k->ne[1] && mask->ne[1] >= q->ne[1], "mask must be [n_kv, >= n_q, ...]")
            .require(mask->ne[2] > 0 && mask->ne[3] > 0 && q->ne[2] % mask->ne[2] == 0 &&
                         q->ne[3] % mask->ne[3] == 0,
                     "mask cannot be broadcast over q in dims 2 and 3");
    }
    if (!check) return nullptr;
    return with_params(make_node(ctx, "ggml_flash_attn_ext", GGML_OP_FLASH_ATTN_EXT, GGML_TYPE_F32,
                                 {v->ne[0], q->ne[2], q->ne[1], q->ne[3]}, {q, k, v, mask}),
                       ggml_ext_flash_attn_ext_params{scale, max_bias, logit_softcap});
}

ggml_tensor * ggml_get_rows(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    Check check(ctx, "ggml_get_rows", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check
        .require(is_float_or_quantized(a) || a->type == GGML_TYPE_I32,
                 "a must be f32, f16, bf16, q8_0, q4_0 or i32")
        .require(has_dense_blocks(a), "rows of a quantized a must be dense blocks")
        .require(b->type == GGML_TYPE_I32, "b must be i32")
        .require(b->ne[1] == a->ne[2] && b->ne[2] == a->ne[3] && b->ne[3] == 1,
                 "b must be [n, a.ne2, a.ne3]");
    if (!check) return nullptr;
    const ggml_type type = a->type == GGML_TYPE_I32 ? GGML_TYPE_I32 : GGML_TYPE_F32;
    return make_node(ctx, "ggml_get_rows", GGML_OP_GET_ROWS, type, {a->ne[0], b->ne[0], b->ne[1], b->ne[2]},
                     {a, b});
}

ggml_tensor * ggml_set_rows(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * c) {
    Check check(ctx, "ggml_set_rows", {{"a", a}, {"b", b}, {"c", c}});
    if (!check) return nullptr;
    check.require(is_float_or_quantized(a), "a must be f32, f16, bf16, q8_0 or q4_0")
        .require(has_dense_blocks(a), "rows of a quantized a must be dense blocks")
        .require(b->type == GGML_TYPE_F32, "b must be f32")
        .require(c->type == GGML_TYPE_I32, "c must be i32")
        .require(a->ne[0] == b->ne[0] && a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3],
                 "a and b must agree in dims 0, 2 and 3")
        .require(c->ne[0] == b->ne[1] && c->ne[3] == 1, "c must be [b.ne1, ...]")
        .require(c->ne[1] > 0 && c->ne[2] > 0 && b->ne[2] % c->ne[1] == 0 && b->ne[3] % c->ne[2] == 0,
                 "c cannot be broadcast over b in dims 2 and 3");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_set_rows", GGML_OP_SET_ROWS, a->type, shape_of(a), {a, b, c}, a);
}

ggml_tensor * ggml_unary(ggml_context * ctx, ggml_tensor * a, ggml_unary_op op) {
    return unary(ctx, a, op, false);
}
ggml_tensor * ggml_unary_inplace(ggml_context * ctx, ggml_tensor * a, ggml_unary_op op) {
    return unary(ctx, a, op, true);
}
ggml_tensor * ggml_relu(ggml_context * ctx, ggml_tensor * a) {
    return unary(ctx, a, GGML_UNARY_OP_RELU, false);
}
ggml_tensor * ggml_silu(ggml_context * ctx, ggml_tensor * a) {
    return unary(ctx, a, GGML_UNARY_OP_SILU, false);
}
ggml_tensor * ggml_gelu(ggml_context * ctx, ggml_tensor * a) {
    return unary(ctx, a, GGML_UNARY_OP_GELU, false);
}
ggml_tensor * ggml_gelu_quick(ggml_context * ctx, ggml_tensor * a) {
    return unary(ctx, a, GGML_UNARY_OP_GELU_QUICK, false);
}
ggml_tensor * ggml_sigmoid(ggml_context * ctx, ggml_tensor * a) {
    return unary(ctx, a, GGML_UNARY_OP_SIGMOID, false);
}
ggml_tensor * ggml_tanh(ggml_context * ctx, ggml_tensor * a) {
    return unary(ctx, a, GGML_UNARY_OP_TANH, false);
}

ggml_tensor * ggml_glu(ggml_context * ctx, ggml_tensor * a, ggml_glu_op op, bool swapped) {
    return glu(ctx, "ggml_glu", a, nullptr, op, swapped);
}
ggml_tensor * ggml_glu_split(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_glu_op op) {
    if (!b) return nullptr;
    return glu(ctx, "ggml_glu_split", a, b, op, false);
}
ggml_tensor * ggml_swiglu(ggml_context * ctx, ggml_tensor * a) {
    return ggml_glu(ctx, a, GGML_GLU_OP_SWIGLU, false);
}
ggml_tensor * ggml_swiglu_swapped(ggml_context * ctx, ggml_tensor * a) {
    return ggml_glu(ctx, a, GGML_GLU_OP_SWIGLU, true);
}
ggml_tensor * ggml_swiglu_split(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return ggml_glu_split(ctx, a, b, GGML_GLU_OP_SWIGLU);
}
ggml_tensor * ggml_geglu(ggml_context * ctx, ggml_tensor * a) {
    return ggml_glu(ctx, a, GGML_GLU_OP_GEGLU, false);
}
ggml_tensor * ggml_geglu_swapped(ggml_context * ctx, ggml_tensor * a) {
    return ggml_glu(ctx, a, GGML_GLU_OP_GEGLU, true);
}
ggml_tensor * ggml_geglu_split(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    return ggml_glu_split(ctx, a, b, GGML_GLU_OP_GEGLU);
}

ggml_tensor * ggml_im2col(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int s1, int p0,
                          int p1, int d0, int d1, bool is_2d, ggml_type dst_type) {
    Check check(ctx, "ggml_im2col", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    const int64_t channels = is_2d ? b->ne[2] : b->ne[1];
    check.require(b->type == GGML_TYPE_F32 || b->type == GGML_TYPE_F16, "b must be f32 or f16")
        .require(dst_type == GGML_TYPE_F32 || dst_type == GGML_TYPE_F16, "dst_type must be f32 or f16")
        .require(s0 >= 1 && d0 >= 1 && p0 >= 0 && (!is_2d || (s1 >= 1 && d1 >= 1 && p1 >= 0)),
                 "strides and dilations must be >= 1, paddings >= 0");
    if (!check) return nullptr;
    const int64_t kw = a->ne[0], kh = is_2d ? a->ne[1] : 1;
    const int64_t ow = conv_output_size(b->ne[0], kw, s0, p0, d0);
    const int64_t oh = is_2d ? conv_output_size(b->ne[1], kh, s1, p1, d1) : 1;
    check.require((is_2d ? a->ne[2] : a->ne[1]) == channels, "kernel and input channel counts differ")
        .require(is_2d || b->ne[3] == 1, "a 1-D input must be [W, C, N]")
        .require(kw >= 1 && kh >= 1 && ow >= 1 && oh >= 1, "the kernel does not fit the padded input");
    if (!check) return nullptr;
    const std::array<int64_t, 4> ne = is_2d ? std::array<int64_t, 4>{channels * kh * kw, ow, oh, b->ne[3]}
                                            : std::array<int64_t, 4>{channels * kw, ow, b->ne[2], 1};
    return with_params(make_node(ctx, "ggml_im2col", GGML_OP_IM2COL, dst_type, ne, {a, b}),
                       ggml_ext_im2col_params{s0, s1, p0, p1, d0, d1, is_2d ? 1 : 0});
}

ggml_tensor * ggml_conv_2d(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int s1, int p0,
                           int p1, int d0, int d1) {
    Check check(ctx, "ggml_conv_2d", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16, "kernel a must be f32 or f16")
        .require(b->type == GGML_TYPE_F32, "input b must be f32");
    if (!check) return nullptr;
    ggml_tensor * kernel = ggml_is_contiguous(a) ? a : ggml_cont(ctx, a);
    ggml_tensor * columns = ggml_im2col(ctx, kernel, b, s0, s1, p0, p1, d0, d1, true, a->type);
    if (!columns) return nullptr;
    const int64_t ow = columns->ne[1], oh = columns->ne[2], n = columns->ne[3], oc = a->ne[3];
    ggml_tensor * product = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, columns, columns->ne[0], ow * oh * n),
                                         ggml_reshape_2d(ctx, kernel, a->ne[0] * a->ne[1] * a->ne[2], oc));
    ggml_tensor * image = ggml_reshape_4d(ctx, product, ow, oh, n, oc);
    return ggml_cont(ctx, ggml_permute(ctx, image, 0, 1, 3, 2));
}

ggml_tensor * ggml_timestep_embedding(ggml_context * ctx, ggml_tensor * timesteps, int dim, int max_period) {
    Check check(ctx, "ggml_timestep_embedding", {{"timesteps", timesteps}});
    if (!check) return nullptr;
    check
        .require(timesteps->type == GGML_TYPE_F32 && ggml_is_vector(timesteps),
                 "timesteps must be an f32 vector")
        .require(dim >= 2, "dim must be >= 2")
        .require(max_period >= 1, "max_period must be >= 1");
    if (!check) return nullptr;
    return with_params(make_node(ctx, "ggml_timestep_embedding", GGML_OP_TIMESTEP_EMBEDDING, GGML_TYPE_F32,
                                 {dim, timesteps->ne[0], 1, 1}, {timesteps}),
                       ggml_ext_timestep_embedding_params{dim, max_period});
}

// CPU callback nodes carry, after the marker, the thread count, the callback and its user data.
namespace {
struct CustomCallback {
    uint32_t marker;
    int32_t n_tasks;
    ggml_custom_op_t fun;
    void * userdata;
};
static_assert(sizeof(CustomCallback) <= GGML_MAX_OP_PARAMS);
}  // namespace

ggml_tensor * ggml_custom_4d(ggml_context * ctx, ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2,
                             int64_t ne3, ggml_tensor ** args, int n_args, ggml_custom_op_t fun, int n_tasks,
                             void * userdata) {
    Check check(ctx, "ggml_custom_4d", {});
    check.require(is_known_type(type), "unknown type")
        .require(n_args >= 0 && n_args <= GGML_MAX_SRC && (n_args == 0 || args),
                 "n_args must be 0..GGML_MAX_SRC")
        .require(fun != nullptr, "fun must not be NULL")
        .require(n_tasks == GGML_N_TASKS_MAX || n_tasks >= 1, "n_tasks must be >= 1 or GGML_N_TASKS_MAX");
    if (!check) return nullptr;
    for (int i = 0; i < n_args; ++i) {
        if (!args[i]) return nullptr;  // an earlier constructor failed and reported why
    }
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    ggml_tensor * result = ggml_new_tensor(ctx, type, 4, ne);
    if (!result) return nullptr;
    result->op = GGML_OP_CUSTOM;
    for (int i = 0; i < n_args; ++i)
        result->src[i] = args[i];
    const CustomCallback callback{GGML_CUSTOM_MARKER_CPU_CALLBACK, n_tasks, fun, userdata};
    std::memcpy(result->op_params, &callback, sizeof callback);
    return result;
}

bool ggml_get_custom_callback(const ggml_tensor * tensor, ggml_custom_op_t * fun, int * n_tasks,
                              void ** userdata) {
    if (ggml_get_custom_kind(tensor) != GGML_CUSTOM_KIND_CPU_CALLBACK) return false;
    CustomCallback callback;
    std::memcpy(&callback, tensor->op_params, sizeof callback);
    if (fun) *fun = callback.fun;
    if (n_tasks) *n_tasks = callback.n_tasks;
    if (userdata) *userdata = callback.userdata;
    return true;
}

enum ggml_custom_kind ggml_get_custom_kind(const ggml_tensor * tensor) {
    if (tensor->op != GGML_OP_CUSTOM) return GGML_CUSTOM_KIND_NONE;
    switch (get_param<uint32_t>(tensor, 0)) {
        case GGML_CUSTOM_MARKER_CPU_CALLBACK:
            return GGML_CUSTOM_KIND_CPU_CALLBACK;
        case GGML_CUSTOM_MARKER_EXTENSION:
            return GGML_CUSTOM_KIND_EXTENSION;
        default:
            return GGML_CUSTOM_KIND_NONE;
    }
}

enum ggml_unary_op ggml_get_unary_op(const ggml_tensor * tensor) {
    return static_cast<ggml_unary_op>(params<ggml_ext_unary_params>(tensor).op);
}

enum ggml_glu_op ggml_get_glu_op(const ggml_tensor * tensor) {
    return static_cast<ggml_glu_op>(params<ggml_ext_glu_params>(tensor).op);
}

bool ggml_ext_get_op_params(const ggml_tensor * node, ggml_op op, void * params, size_t size) {
    if (!node || node->op != op || size == 0 || size != op_params_size(op)) return false;
    std::memcpy(params, node->op_params, size);
    return true;
}

const char * ggml_op_name(ggml_op op) {
    return op >= 0 && op < GGML_OP_COUNT ? op_names[op].name : "unknown";
}
const char * ggml_op_symbol(ggml_op op) {
    return op >= 0 && op < GGML_OP_COUNT ? op_names[op].symbol : "unknown";
}
const char * ggml_unary_op_name(ggml_unary_op op) {
    return op >= 0 && op < GGML_UNARY_OP_COUNT ? unary_names[op].name : "unknown";
}
const char * ggml_glu_op_name(ggml_glu_op op) {
    return op >= 0 && op < GGML_GLU_OP_COUNT ? glu_names[op].name : "unknown";
}

const char * ggml_op_desc(const ggml_tensor * tensor) {
    if (tensor->op == GGML_OP_UNARY) return ggml_unary_op_name(ggml_get_unary_op(tensor));
    if (tensor->op == GGML_OP_GLU) return ggml_glu_op_name(ggml_get_glu_op(tensor));
    return ggml_op_name(tensor->op);
}

}  // extern "C"
