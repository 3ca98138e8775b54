// The typed parameters of native ops (include/ggml-ext-params.h) for the code of src/: which struct
// each op records, and checked reads and writes of a node's op_params through it.
#pragma once

#include <ggml-ext-params.h>
#include <ggml.h>

#include <cassert>
#include <cstring>
#include <type_traits>
#include <utility>

namespace ggx::core {

// The parameter struct of Op; void for an op that records none.
template <ggml_op Op>
struct OpParams {
    using type = void;
};
template <ggml_op Op>
using op_params_t = typename OpParams<Op>::type;

#define GGX_OP_PARAMS(op, params) \
    template <>                   \
    struct OpParams<op> {         \
        using type = params;      \
    }
GGX_OP_PARAMS(GGML_OP_SCALE, ggml_ext_scale_params);
GGX_OP_PARAMS(GGML_OP_ACC, ggml_ext_acc_params);
GGX_OP_PARAMS(GGML_OP_SET, ggml_ext_acc_params);
GGX_OP_PARAMS(GGML_OP_CLAMP, ggml_ext_clamp_params);
GGX_OP_PARAMS(GGML_OP_UNARY, ggml_ext_unary_params);
GGX_OP_PARAMS(GGML_OP_LEAKY_RELU, ggml_ext_leaky_relu_params);
GGX_OP_PARAMS(GGML_OP_FILL, ggml_ext_fill_params);
GGX_OP_PARAMS(GGML_OP_GLU, ggml_ext_glu_params);
GGX_OP_PARAMS(GGML_OP_CONCAT, ggml_ext_concat_params);
GGX_OP_PARAMS(GGML_OP_PAD, ggml_ext_pad_params);
GGX_OP_PARAMS(GGML_OP_PAD_REFLECT_1D, ggml_ext_pad_reflect_1d_params);
GGX_OP_PARAMS(GGML_OP_ROLL, ggml_ext_roll_params);
GGX_OP_PARAMS(GGML_OP_ARANGE, ggml_ext_arange_params);
GGX_OP_PARAMS(GGML_OP_WIN_PART, ggml_ext_win_part_params);
GGX_OP_PARAMS(GGML_OP_WIN_UNPART, ggml_ext_win_unpart_params);
GGX_OP_PARAMS(GGML_OP_ADD_REL_POS, ggml_ext_add_rel_pos_params);
GGX_OP_PARAMS(GGML_OP_TRI, ggml_ext_tri_params);
GGX_OP_PARAMS(GGML_OP_UPSCALE, ggml_ext_upscale_params);
GGX_OP_PARAMS(GGML_OP_ARGSORT, ggml_ext_argsort_params);
GGX_OP_PARAMS(GGML_OP_TIMESTEP_EMBEDDING, ggml_ext_timestep_embedding_params);
GGX_OP_PARAMS(GGML_OP_NORM, ggml_ext_norm_params);
GGX_OP_PARAMS(GGML_OP_RMS_NORM, ggml_ext_norm_params);
GGX_OP_PARAMS(GGML_OP_RMS_NORM_BACK, ggml_ext_norm_params);
GGX_OP_PARAMS(GGML_OP_L2_NORM, ggml_ext_norm_params);
GGX_OP_PARAMS(GGML_OP_GROUP_NORM, ggml_ext_group_norm_params);
GGX_OP_PARAMS(GGML_OP_SOFT_MAX, ggml_ext_soft_max_params);
GGX_OP_PARAMS(GGML_OP_MUL_MAT, ggml_ext_mul_mat_params);
GGX_OP_PARAMS(GGML_OP_SOFT_MAX_BACK, ggml_ext_soft_max_params);
GGX_OP_PARAMS(GGML_OP_DIAG_MASK_INF, ggml_ext_diag_mask_params);
GGX_OP_PARAMS(GGML_OP_DIAG_MASK_ZERO, ggml_ext_diag_mask_params);
GGX_OP_PARAMS(GGML_OP_ROPE, ggml_ext_rope_params);
GGX_OP_PARAMS(GGML_OP_ROPE_BACK, ggml_ext_rope_params);
GGX_OP_PARAMS(GGML_OP_FLASH_ATTN_EXT, ggml_ext_flash_attn_ext_params);
GGX_OP_PARAMS(GGML_OP_GATED_LINEAR_ATTN, ggml_ext_gated_linear_attn_params);
GGX_OP_PARAMS(GGML_OP_GATED_DELTA_NET, ggml_ext_gated_delta_net_params);
GGX_OP_PARAMS(GGML_OP_DSV4_HC_COMB, ggml_ext_dsv4_hc_comb_params);
GGX_OP_PARAMS(GGML_OP_IM2COL, ggml_ext_im2col_params);
GGX_OP_PARAMS(GGML_OP_IM2COL_BACK, ggml_ext_im2col_params);
GGX_OP_PARAMS(GGML_OP_IM2COL_3D, ggml_ext_im2col_3d_params);
GGX_OP_PARAMS(GGML_OP_CONV_2D, ggml_ext_conv_2d_params);
GGX_OP_PARAMS(GGML_OP_CONV_2D_DW, ggml_ext_conv_2d_params);
GGX_OP_PARAMS(GGML_OP_CONV_3D, ggml_ext_conv_3d_params);
GGX_OP_PARAMS(GGML_OP_CONV_TRANSPOSE_1D, ggml_ext_conv_transpose_1d_params);
GGX_OP_PARAMS(GGML_OP_CONV_TRANSPOSE_2D, ggml_ext_conv_transpose_2d_params);
GGX_OP_PARAMS(GGML_OP_COL2IM_1D, ggml_ext_col2im_1d_params);
GGX_OP_PARAMS(GGML_OP_POOL_1D, ggml_ext_pool_1d_params);
GGX_OP_PARAMS(GGML_OP_POOL_2D, ggml_ext_pool_2d_params);
GGX_OP_PARAMS(GGML_OP_POOL_2D_BACK, ggml_ext_pool_2d_params);
GGX_OP_PARAMS(GGML_OP_MAP_CUSTOM1, ggml_ext_map_custom1_params);
GGX_OP_PARAMS(GGML_OP_MAP_CUSTOM2, ggml_ext_map_custom2_params);
GGX_OP_PARAMS(GGML_OP_MAP_CUSTOM3, ggml_ext_map_custom3_params);
GGX_OP_PARAMS(GGML_OP_PERMUTE, ggml_ext_permute_params);
GGX_OP_PARAMS(GGML_OP_TRANSPOSE, ggml_ext_permute_params);
#undef GGX_OP_PARAMS

namespace detail {

template <class P, int... Ops>
constexpr bool takes(ggml_op op, std::integer_sequence<int, Ops...>) {
    return ((op == Ops && std::is_same_v<op_params_t<static_cast<ggml_op>(Ops)>, P>) || ...);
}

template <class P>
constexpr size_t size_of() {
    if constexpr (std::is_void_v<P>) {
        return 0;
    } else {
        static_assert(std::is_trivially_copyable_v<P> && std::is_standard_layout_v<P>);
        static_assert(sizeof(P) <= GGML_MAX_OP_PARAMS && sizeof(P) % sizeof(int32_t) == 0);
        return sizeof(P);
    }
}

template <int... Ops>
constexpr size_t size_of(ggml_op op, std::integer_sequence<int, Ops...>) {
    size_t size = 0;
    ((size = op == Ops ? size_of<op_params_t<static_cast<ggml_op>(Ops)>>() : size), ...);
    return size;
}

using AllOps = std::make_integer_sequence<int, GGML_OP_COUNT>;

}  // namespace detail

// Whether op records parameters of type P.
template <class P>
constexpr bool op_takes(ggml_op op) {
    return detail::takes<P>(op, detail::AllOps{});
}

// Bytes of op's parameter struct; 0 for an op that records none.
constexpr size_t op_params_size(ggml_op op) { return detail::size_of(op, detail::AllOps{}); }

// The parameters of node, whose op must record P.
template <class P>
P params(const ggml_tensor * node) {
    assert(op_takes<P>(node->op));
    P p;
    std::memcpy(&p, node->op_params, sizeof p);
    return p;
}

// Records p as the parameters of node, whose op must record P.
template <class P>
void set_params(ggml_tensor * node, const P & p) {
    assert(op_takes<P>(node->op));
    std::memcpy(node->op_params, &p, sizeof p);
}

// UPSCALE's mode word (ggml_interpolate): the ggml_scale_mode and its flags.
struct ScaleMode {
    uint32_t base;  // enum ggml_scale_mode
    bool align_corners, antialias;
};

inline ScaleMode scale_mode(const ggml_tensor * node) {
    const auto mode = static_cast<uint32_t>(params<ggml_ext_upscale_params>(node).mode);
    return {mode & 0xFFu, (mode & GGML_SCALE_FLAG_ALIGN_CORNERS) != 0,
            (mode & GGML_SCALE_FLAG_ANTIALIAS) != 0};
}

// Whether node's mode word is one UPSCALE defines: a known mode and flags, ANTIALIAS with BILINEAR only.
inline bool valid_scale_mode(const ggml_tensor * node) {
    constexpr uint32_t known = 0xFFu | GGML_SCALE_FLAG_ALIGN_CORNERS | GGML_SCALE_FLAG_ANTIALIAS;
    const ScaleMode m = scale_mode(node);
    return (static_cast<uint32_t>(params<ggml_ext_upscale_params>(node).mode) & ~known) == 0 &&
           m.base < GGML_SCALE_MODE_COUNT && (!m.antialias || m.base == GGML_SCALE_MODE_BILINEAR);
}

// The scale s of UPSCALE's dimension k from a to node: ne / n, or (ne - 1) / (n - 1) with align
// corners where both exceed 1 (in float, as ggml computes it).
inline float upscale_axis_scale(const ggml_tensor * a, const ggml_tensor * node, int k, bool align_corners) {
    const int64_t n = a->ne[k], ne = node->ne[k];
    return align_corners && n > 1 && ne > 1 ? static_cast<float>(ne - 1) / static_cast<float>(n - 1)
                                            : static_cast<float>(ne) / static_cast<float>(n);
}

}  // namespace ggx::core
