// Properties of operators that layers above the core rely on without knowing any kernel.
#include <ggml.h>

#include <cstring>

#include "core/enum_table.h"
#include "core/op_params.h"

using namespace ggx::core;

namespace {

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

// The ops listed here compute each output element (or each row, for the row-wise ops) only from the
// same position of src[0] (plus other sources), reading that position completely before writing it.
// Every device's kernel for them must accept dst == src[0] exactly (same data, type, shape and
// strides); the CPU kernels do (elementwise.cpp: a chunk is loaded before it is stored; norm.cpp,
// softmax.cpp, rope.cpp: a row or a group of rows is read before it is written, by one thread).
// The graph allocator's property test checks the results bit for bit against out-of-place runs.
bool ggml_op_can_inplace(const ggml_tensor * node) {
    if (node == nullptr || node->src[0] == nullptr) return false;
    const ggml_tensor * a = node->src[0];
    if (node->type != a->type || !ggml_are_same_shape(node, a)) return false;
    switch (node->op) {
        case GGML_OP_ADD:
        case GGML_OP_SUB:
        case GGML_OP_MUL:
        case GGML_OP_DIV:
        case GGML_OP_SCALE:
        case GGML_OP_SQR:
        case GGML_OP_SQRT:
        case GGML_OP_CLAMP:
        case GGML_OP_UNARY:
        case GGML_OP_NORM:
        case GGML_OP_RMS_NORM:
        case GGML_OP_L2_NORM:
        case GGML_OP_GROUP_NORM:
        case GGML_OP_SOFT_MAX:
        case GGML_OP_ROPE:
            return true;
        case GGML_OP_GLU:
            return node->src[1] != nullptr;  // split form act(a) * b; the merged form halves each row
        default:
            return false;
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
