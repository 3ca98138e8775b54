// The CPU device's kernel table: one entry per ggml_op, checked at compile time.
#include <algorithm>

#include "cpu/kernels/common.h"

namespace ggx::cpu {

namespace {

struct Entry {
    ggml_op op;
    const Kernel * kernel;
};

// Listed in ggml_op order so that the static_assert below proves every op has exactly one entry: a
// new op fails to compile until it is listed (as kernels::unsupported if the CPU lacks it).
constexpr Entry entries[] = {
    {GGML_OP_NONE, &kernels::none},
    {GGML_OP_DUP, &kernels::copy},
    {GGML_OP_ADD, &kernels::binary},
    {GGML_OP_ADD_ID, &kernels::add_id},
    {GGML_OP_ADD1, &kernels::binary},
    {GGML_OP_ACC, &kernels::acc_set},
    {GGML_OP_SUB, &kernels::binary},
    {GGML_OP_MUL, &kernels::binary},
    {GGML_OP_DIV, &kernels::binary},
    {GGML_OP_SQR, &kernels::sqr},
    {GGML_OP_SQRT, &kernels::sqrt},
    {GGML_OP_LOG, &kernels::log},
    {GGML_OP_SIN, &kernels::sin},
    {GGML_OP_COS, &kernels::cos},
    {GGML_OP_SUM, &kernels::sum},
    {GGML_OP_SUM_ROWS, &kernels::sum_rows},
    {GGML_OP_CUMSUM, &kernels::cumsum},
    {GGML_OP_MEAN, &kernels::mean},
    {GGML_OP_ARGMAX, &kernels::argmax},
    {GGML_OP_COUNT_EQUAL, &kernels::count_equal},
    {GGML_OP_REPEAT, &kernels::repeat},
    {GGML_OP_REPEAT_BACK, &kernels::repeat_back},
    {GGML_OP_CONCAT, &kernels::concat},
    {GGML_OP_SILU_BACK, &kernels::silu_back},
    {GGML_OP_NORM, &kernels::norm},
    {GGML_OP_RMS_NORM, &kernels::rms_norm},
    {GGML_OP_RMS_NORM_BACK, &kernels::rms_norm_back},
    {GGML_OP_GROUP_NORM, &kernels::group_norm},
    {GGML_OP_L2_NORM, &kernels::l2_norm},
    {GGML_OP_MUL_MAT, &kernels::mul_mat},
    {GGML_OP_MUL_MAT_ID, &kernels::mul_mat_id},
    {GGML_OP_OUT_PROD, &kernels::out_prod},
    {GGML_OP_SCALE, &kernels::scale},
    {GGML_OP_SET, &kernels::acc_set},
    {GGML_OP_CPY, &kernels::copy},
    {GGML_OP_CONT, &kernels::copy},
    {GGML_OP_RESHAPE, &kernels::none},
    {GGML_OP_VIEW, &kernels::none},
    {GGML_OP_PERMUTE, &kernels::none},
    {GGML_OP_TRANSPOSE, &kernels::none},
    {GGML_OP_GET_ROWS, &kernels::get_rows},
    {GGML_OP_GET_ROWS_BACK, &kernels::get_rows_back},
    {GGML_OP_SET_ROWS, &kernels::set_rows},
    {GGML_OP_DIAG, &kernels::diag},
    {GGML_OP_DIAG_MASK_INF, &kernels::diag_mask},
    {GGML_OP_DIAG_MASK_ZERO, &kernels::diag_mask},
    {GGML_OP_SOFT_MAX, &kernels::soft_max},
    {GGML_OP_SOFT_MAX_BACK, &kernels::soft_max_back},
    {GGML_OP_ROPE, &kernels::rope},
    {GGML_OP_ROPE_BACK, &kernels::rope_back},
    {GGML_OP_CLAMP, &kernels::clamp},
    {GGML_OP_CONV_TRANSPOSE_1D, &kernels::conv_transpose},
    {GGML_OP_IM2COL, &kernels::im2col},
    {GGML_OP_IM2COL_BACK, &kernels::im2col_back},
    {GGML_OP_IM2COL_3D, &kernels::im2col},
    {GGML_OP_COL2IM_1D, &kernels::col2im_1d},
    {GGML_OP_CONV_2D, &kernels::conv_direct},
    {GGML_OP_CONV_3D, &kernels::conv_direct},
    {GGML_OP_CONV_2D_DW, &kernels::conv_2d_dw},
    {GGML_OP_CONV_TRANSPOSE_2D, &kernels::conv_transpose},
    {GGML_OP_POOL_1D, &kernels::pool},
    {GGML_OP_POOL_2D, &kernels::pool},
    {GGML_OP_POOL_2D_BACK, &kernels::pool_2d_back},
    {GGML_OP_UPSCALE, &kernels::upscale},
    {GGML_OP_PAD, &kernels::pad},
    {GGML_OP_PAD_REFLECT_1D, &kernels::pad_reflect_1d},
    {GGML_OP_ROLL, &kernels::roll},
    {GGML_OP_ARANGE, &kernels::arange},
    {GGML_OP_TIMESTEP_EMBEDDING, &kernels::timestep_embedding},
    {GGML_OP_ARGSORT, &kernels::argsort},
    {GGML_OP_TOP_K, &kernels::argsort},
    {GGML_OP_LEAKY_RELU, &kernels::leaky_relu},
    {GGML_OP_TRI, &kernels::tri},
    {GGML_OP_FILL, &kernels::fill},
    {GGML_OP_FLASH_ATTN_EXT, &kernels::flash_attn_ext},
    {GGML_OP_FLASH_ATTN_BACK, &kernels::unsupported},
    {GGML_OP_SSM_CONV, &kernels::ssm_conv},
    {GGML_OP_SSM_SCAN, &kernels::ssm_scan},
    {GGML_OP_WIN_PART, &kernels::win_part},
    {GGML_OP_WIN_UNPART, &kernels::win_unpart},
    {GGML_OP_GET_REL_POS, &kernels::get_rel_pos},
    {GGML_OP_ADD_REL_POS, &kernels::add_rel_pos},
    {GGML_OP_RWKV_WKV6, &kernels::rwkv_wkv6},
    {GGML_OP_GATED_LINEAR_ATTN, &kernels::gated_linear_attn},
    {GGML_OP_RWKV_WKV7, &kernels::rwkv_wkv7},
    {GGML_OP_SOLVE_TRI, &kernels::solve_tri},
    {GGML_OP_GATED_DELTA_NET, &kernels::gated_delta_net},
    {GGML_OP_LIGHTNING_INDEXER, &kernels::lightning_indexer},
    {GGML_OP_DSV4_HC_COMB, &kernels::dsv4_hc_comb},
    {GGML_OP_DSV4_HC_PRE, &kernels::dsv4_hc_pre},
    {GGML_OP_DSV4_HC_POST, &kernels::dsv4_hc_post},
    {GGML_OP_UNARY, &kernels::unary},
    {GGML_OP_MAP_CUSTOM1, &kernels::map_custom},
    {GGML_OP_MAP_CUSTOM2, &kernels::map_custom},
    {GGML_OP_MAP_CUSTOM3, &kernels::map_custom},
    {GGML_OP_CUSTOM, &kernels::custom},
    {GGML_OP_CROSS_ENTROPY_LOSS, &kernels::cross_entropy_loss},
    {GGML_OP_CROSS_ENTROPY_LOSS_BACK, &kernels::cross_entropy_loss_back},
    {GGML_OP_OPT_STEP_ADAMW, &kernels::opt_step},
    {GGML_OP_OPT_STEP_SGD, &kernels::opt_step},
    {GGML_OP_GLU, &kernels::glu},
};

static_assert(lists_every_value_in_order(entries, GGML_OP_COUNT),
              "the CPU kernel table must list every ggml_op once, in order");

}  // namespace

const std::array<Kernel, GGML_OP_COUNT> & kernel_table() {
    static const std::array<Kernel, GGML_OP_COUNT> table = [] {
        std::array<Kernel, GGML_OP_COUNT> t{};
        for (const Entry & entry : entries)
            t[entry.op] = *entry.kernel;
        return t;
    }();
    return table;
}

}  // namespace ggx::cpu
