/* ggx — typed parameters of native operators: what each op's constructor records in op_params.
 *
 * One struct per op (ops of one family share one: NORM, RMS_NORM and L2_NORM). The field order is the
 * order of the 32-bit op_params slots ggml uses, so programs that read op_params by slot see the same
 * values. Ops without a struct here (ADD, MUL_MAT, GET_ROWS, CPY, ...) record no parameters. CUSTOM
 * nodes carry a callback or an extension operator's attributes instead: read them with
 * ggml_get_custom_callback and ggml_ext_node_attrs. docs/ops.md lists each op's struct.
 *
 * Read a node's parameters with ggml_ext_get_op_params:
 *
 *     struct ggml_ext_rope_params p;
 *     if (ggml_ext_get_op_params(node, GGML_OP_ROPE, &p, sizeof p)) use(p.n_dims, p.freq_base);
 */
#ifndef GGML_EXT_PARAMS_H
#define GGML_EXT_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GGML_OP_SCALE: a * scale + bias. */
struct ggml_ext_scale_params {
    float scale;
    float bias;
};

/* GGML_OP_ACC (b added to) and GGML_OP_SET (b written over) the view of a with b's shape, byte
 * strides nb1..nb3 and byte offset; inplace: the result is a view of a. */
struct ggml_ext_acc_params {
    int32_t nb1, nb2, nb3;
    int32_t offset;
    int32_t inplace;
};

/* GGML_OP_CLAMP: min(max(a, min), max). */
struct ggml_ext_clamp_params {
    float min;
    float max;
};

/* GGML_OP_UNARY: the element-wise function, and XIELU's coefficients (0 for the other sub-ops). */
struct ggml_ext_unary_params {
    int32_t op;    /* enum ggml_unary_op */
    float alpha_n; /* XIELU: beta + softplus(alpha_n) of ggml_xielu's arguments */
    float alpha_p; /* XIELU: softplus(alpha_p) */
    float beta;
    float eps;
};

/* GGML_OP_LEAKY_RELU: x for x > 0, negative_slope * x otherwise. */
struct ggml_ext_leaky_relu_params {
    float negative_slope;
};

/* GGML_OP_FILL: every element becomes c. */
struct ggml_ext_fill_params {
    float c;
};

/* GGML_OP_GLU: the gate's activation, and (one-tensor form) which half of a row is gated. */
struct ggml_ext_glu_params {
    int32_t op;      /* enum ggml_glu_op */
    int32_t swapped; /* 1: the activation takes the second half of each row */
    float alpha;     /* SWIGLU_OAI's alpha and limit (0 for the other sub-ops) */
    float limit;
};

/* GGML_OP_CONCAT: the dimension the inputs are joined along. */
struct ggml_ext_concat_params {
    int32_t dim;
};

/* GGML_OP_PAD: zeros (or, circular, the values from the other end) before ([d][0]) and after ([d][1])
 * each dimension d. */
struct ggml_ext_pad_params {
    int32_t pads[GGML_MAX_DIMS][2];
    int32_t circular; /* 1: ggml_pad_circular / ggml_pad_ext_circular */
};

/* GGML_OP_PAD_REFLECT_1D: reflected elements before (p0) and after (p1) each row. */
struct ggml_ext_pad_reflect_1d_params {
    int32_t p0, p1;
};

/* GGML_OP_ROLL: elements move by shifts[d] along dimension d, wrapping around. */
struct ggml_ext_roll_params {
    int32_t shifts[GGML_MAX_DIMS];
};

/* GGML_OP_ARANGE: start, start + step, ... below stop. */
struct ggml_ext_arange_params {
    float start, stop, step;
};

/* GGML_OP_WIN_PART: windows per row (npx) and column (npy) of w x w elements. */
struct ggml_ext_win_part_params {
    int32_t npx, npy, w;
};

/* GGML_OP_WIN_UNPART: the window size. */
struct ggml_ext_win_unpart_params {
    int32_t w;
};

/* GGML_OP_ADD_REL_POS: 1 when the result is a view of a. */
struct ggml_ext_add_rel_pos_params {
    int32_t inplace;
};

/* GGML_OP_TRI: the part kept (enum ggml_tri_type). */
struct ggml_ext_tri_params {
    int32_t type;
};

/* GGML_OP_UPSCALE: the resampling mode. */
struct ggml_ext_upscale_params {
    int32_t mode; /* enum ggml_scale_mode, or-ed with ggml_scale_flag values (ggml_interpolate) */
};

/* GGML_OP_ARGSORT: the row order (enum ggml_sort_order). */
struct ggml_ext_argsort_params {
    int32_t order;
};

/* GGML_OP_TIMESTEP_EMBEDDING: output width and the longest period. */
struct ggml_ext_timestep_embedding_params {
    int32_t dim;
    int32_t max_period;
};

/* GGML_OP_NORM, GGML_OP_RMS_NORM, GGML_OP_L2_NORM, GGML_OP_RMS_NORM_BACK. */
struct ggml_ext_norm_params {
    float eps;
};

/* GGML_OP_GROUP_NORM. */
struct ggml_ext_group_norm_params {
    int32_t n_groups;
    float eps;
};

/* GGML_OP_SOFT_MAX: softmax(a * scale + slope * mask), slope from max_bias (ALiBi) or 1;
 * GGML_OP_SOFT_MAX_BACK: its gradient. */
struct ggml_ext_soft_max_params {
    float scale;
    float max_bias;
};

/* GGML_OP_DIAG_MASK_INF, GGML_OP_DIAG_MASK_ZERO: columns beyond row + n_past are masked. */
struct ggml_ext_diag_mask_params {
    int32_t n_past;
};

/* GGML_OP_ROPE, GGML_OP_ROPE_BACK: the rotation (ggml_rope_ext's and ggml_rope_multi's arguments). */
struct ggml_ext_rope_params {
    int32_t unused_n_past; /* 0: the slot ggml keeps for n_past */
    int32_t n_dims;        /* elements of a row that rotate, from n_offs on */
    int32_t mode;          /* GGML_ROPE_TYPE_NORMAL, NEOX, MROPE, IMROPE or VISION */
    int32_t unused_n_ctx;  /* 0: the slot ggml keeps for n_ctx */
    int32_t n_ctx_orig;
    float freq_base;
    float freq_scale;
    float ext_factor;
    float attn_factor;
    float beta_fast;
    float beta_slow;
    int32_t sections[GGML_MROPE_SECTIONS]; /* rotation pairs per position axis (multi modes); else 0 */
    int32_t n_offs;                        /* first rotated element (ggml_rope_set_offset); 0 by default */
};

/* GGML_OP_FLASH_ATTN_EXT. */
struct ggml_ext_flash_attn_ext_params {
    float scale;
    float max_bias;
    float logit_softcap; /* 0: no soft cap */
    int32_t prec;        /* enum ggml_prec (ggml_flash_attn_ext_set_prec) */
};

/* GGML_OP_MUL_MAT: what ggml_mul_mat_set_prec and ggml_mul_mat_set_hint record. */
struct ggml_ext_mul_mat_params {
    int32_t prec; /* enum ggml_prec */
    int32_t hint; /* enum ggml_op_hint */
};

/* GGML_OP_GATED_LINEAR_ATTN. */
struct ggml_ext_gated_linear_attn_params {
    float scale;
};

/* GGML_OP_GATED_DELTA_NET: how many recurrent states the result keeps after the outputs. */
struct ggml_ext_gated_delta_net_params {
    int32_t n_states; /* ggml_gated_delta_net's K */
};

/* GGML_OP_DSV4_HC_COMB: the Sinkhorn normalisation. */
struct ggml_ext_dsv4_hc_comb_params {
    float eps;
    int32_t n_iter;
};

/* GGML_OP_IM2COL, GGML_OP_IM2COL_BACK: strides, paddings and dilations along width (0) and height (1). */
struct ggml_ext_im2col_params {
    int32_t s0, s1;
    int32_t p0, p1;
    int32_t d0, d1;
    int32_t is_2d; /* 0: a 1-D convolution (s1, p1, d1 unused) */
};

/* GGML_OP_IM2COL_3D: strides, paddings and dilations along width, height, depth; input channels. */
struct ggml_ext_im2col_3d_params {
    int32_t s0, s1, s2;
    int32_t p0, p1, p2;
    int32_t d0, d1, d2;
    int32_t ic;
};

/* GGML_OP_CONV_2D, GGML_OP_CONV_2D_DW (direct convolutions). */
struct ggml_ext_conv_2d_params {
    int32_t s0, s1;
    int32_t p0, p1;
    int32_t d0, d1;
};

/* GGML_OP_CONV_3D: as IM2COL_3D, then the channel, batch and output-channel counts. */
struct ggml_ext_conv_3d_params {
    int32_t s0, s1, s2;
    int32_t p0, p1, p2;
    int32_t d0, d1, d2;
    int32_t c, n, oc;
};

/* GGML_OP_CONV_TRANSPOSE_1D. */
struct ggml_ext_conv_transpose_1d_params {
    int32_t s0, p0, d0;
};

/* GGML_OP_CONV_TRANSPOSE_2D. */
struct ggml_ext_conv_transpose_2d_params {
    int32_t stride;
};

/* GGML_OP_COL2IM_1D. */
struct ggml_ext_col2im_1d_params {
    int32_t s0;
    int32_t oc; /* output channels */
    int32_t p0; /* cropped from both ends */
};

/* GGML_OP_POOL_1D. */
struct ggml_ext_pool_1d_params {
    int32_t op; /* enum ggml_op_pool */
    int32_t k0, s0, p0;
};

/* GGML_OP_POOL_2D, GGML_OP_POOL_2D_BACK. */
struct ggml_ext_pool_2d_params {
    int32_t op; /* enum ggml_op_pool */
    int32_t k0, k1;
    int32_t s0, s1;
    float p0, p1;
};

/* GGML_OP_MAP_CUSTOM1..3: the callback, its thread count (GGML_N_TASKS_MAX: all) and user data, laid
 * out as ggml lays them out. */
struct ggml_ext_map_custom1_params {
    ggml_custom1_op_t fun;
    int32_t n_tasks;
    void * userdata;
};
struct ggml_ext_map_custom2_params {
    ggml_custom2_op_t fun;
    int32_t n_tasks;
    void * userdata;
};
struct ggml_ext_map_custom3_params {
    ggml_custom3_op_t fun;
    int32_t n_tasks;
    void * userdata;
};

/* GGML_OP_PERMUTE, GGML_OP_TRANSPOSE (axes 1, 0, 2, 3): dimension i of the source becomes dimension
 * axes[i]. */
struct ggml_ext_permute_params {
    int32_t axes[GGML_MAX_DIMS];
};

/* Copy the parameters of node, a node of op, into *params, the struct above for op (size: its
 * sizeof). false, *params untouched, when node is NULL or not a node of op, when op records no
 * parameters, or when size is not its struct's. */
bool ggml_ext_get_op_params(const struct ggml_tensor * node, enum ggml_op op, void * params, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* GGML_EXT_PARAMS_H */
