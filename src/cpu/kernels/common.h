// Helpers shared by the CPU kernel families: element addressing, float conversion of strided rows,
// work splitting and the per-family kernel descriptors.
#pragma once

#include <ggml.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/op_params.h"
#include "core/types.h"
#include "cpu/kernel.h"

namespace ggx::cpu {

inline bool is_float(ggml_type type) { return ggml_is_float_type(type); }

// Address of element (i0, i1, i2, i3); for quantized types i0 must be a block start.
inline char * element_at(const ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2 = 0, int64_t i3 = 0) {
    return static_cast<char *>(t->data) + i0 / ggml_blck_size(t->type) * t->nb[0] + i1 * t->nb[1] +
           i2 * t->nb[2] + i3 * t->nb[3];
}

inline char * row_at(const ggml_tensor * t, int64_t i1, int64_t i2 = 0, int64_t i3 = 0) {
    return element_at(t, 0, i1, i2, i3);
}

// One element of a tensor of a plain (non-block) type as float, and back, by the rules of the row
// conversions (ggml_quantize_row: integers round to nearest even and saturate); F32, F16, BF16 and
// I32 reads take the short way.
inline float load_float(ggml_type type, const void * p) {
    switch (type) {
        case GGML_TYPE_F32: {
            float v;
            std::memcpy(&v, p, sizeof v);
            return v;
        }
        case GGML_TYPE_F16: {
            ggml_fp16_t h;
            std::memcpy(&h, p, sizeof h);
            return ggml_fp16_to_fp32(h);
        }
        case GGML_TYPE_BF16: {
            ggml_bf16_t h;
            std::memcpy(&h, p, sizeof h);
            return ggml_bf16_to_fp32(h);
        }
        case GGML_TYPE_I32: {
            int32_t v;
            std::memcpy(&v, p, sizeof v);
            return static_cast<float>(v);
        }
        default: {
            float v = 0.0f;
            ggml_dequantize_row(type, p, &v, 1);
            return v;
        }
    }
}

inline void store_float(ggml_type type, void * p, float v) {
    switch (type) {
        case GGML_TYPE_F32:
            std::memcpy(p, &v, sizeof v);
            break;
        case GGML_TYPE_F16: {
            const ggml_fp16_t h = ggml_fp32_to_fp16(v);
            std::memcpy(p, &h, sizeof h);
            break;
        }
        case GGML_TYPE_BF16: {
            const ggml_bf16_t h = ggml_fp32_to_bf16(v);
            std::memcpy(p, &h, sizeof h);
            break;
        }
        default:
            ggml_quantize_row(type, &v, p, 1);
    }
}

// Converts n elements of a row of any type starting at src, elements stride bytes apart (for
// quantized types the row must be dense), into F32 at dst.
void load_row(ggml_type type, const char * src, size_t stride, int64_t n, float * dst);
// Converts n F32 values into a row of type at dst, elements stride bytes apart (quantized: dense).
void store_row(ggml_type type, const float * src, char * dst, size_t stride, int64_t n);

// F32 row products, vectorised for the running CPU (defined in recurrent.cpp): the sum of a[i] * b[i],
// and y[i] = y[i] * a + x[i] * b.
float dot_f32(const float * a, const float * b, int64_t n);
void axpby_f32(float * y, float a, const float * x, float b, int64_t n);
// out[ow] = sum over kh < KH with rows[kh] non-null and kw < KW of w[kh * KW + kw] *
// rows[kh][ow + kw * d0] for ow < OW (depthwise.cpp): rows hold OW + (KW - 1) * d0 floats.
void depthwise_row_f32(const float * const * rows, int64_t KH, const float * w, int64_t KW, int64_t d0,
                       float * out, int64_t OW);

// Calls f(i1, i2, i3) for this thread's share of the rows of t.
template <class F>
void for_each_row(const ComputeParams & params, const ggml_tensor * t, F && f) {
    const auto [begin, end] = chunk_range(ggml_nrows(t), params.ith(), params.nth());
    for (int64_t r = begin; r < end; ++r) {
        const int64_t i1 = r % t->ne[1], i2 = r / t->ne[1] % t->ne[2], i3 = r / (t->ne[1] * t->ne[2]);
        f(i1, i2, i3);
    }
}

// Kernel descriptors, one per op family file under src/cpu/kernels/.
namespace kernels {
extern const Kernel none;         // VIEW, RESHAPE, PERMUTE, TRANSPOSE, NONE: nothing to compute
extern const Kernel unsupported;  // the ggml ops without a CPU kernel: supports no node
extern const Kernel binary;       // ADD, SUB, MUL, DIV
extern const Kernel scale, sqr, sqrt, clamp, unary, glu;
extern const Kernel silu_back, add_id, acc_set, opt_step, log, sin, cos, leaky_relu, fill;
extern const Kernel sum, sum_rows, mean, argmax;
extern const Kernel cumsum, count_equal, argsort, cross_entropy_loss, cross_entropy_loss_back;
extern const Kernel copy;  // DUP, CPY, CONT
extern const Kernel repeat, concat, pad, upscale, timestep_embedding;
extern const Kernel repeat_back, pad_reflect_1d, roll, arange, win_part, win_unpart, get_rel_pos, add_rel_pos,
    tri, diag, solve_tri;
extern const Kernel norm, rms_norm, group_norm, l2_norm;
extern const Kernel rms_norm_back;
extern const Kernel soft_max, rope;
extern const Kernel soft_max_back, diag_mask, rope_back;  // diag_mask: DIAG_MASK_INF and _ZERO
extern const Kernel get_rows, set_rows, im2col;
extern const Kernel mul_mat_id, out_prod;
extern const Kernel mul_mat, flash_attn_ext, lightning_indexer, dsv4_hc_comb, dsv4_hc_pre, dsv4_hc_post;
extern const Kernel ssm_conv, ssm_scan, rwkv_wkv6, gated_linear_attn, rwkv_wkv7, gated_delta_net;
extern const Kernel get_rows_back;
extern const Kernel custom;      // CPU callback nodes
extern const Kernel map_custom;  // MAP_CUSTOM1..3

extern const Kernel conv_direct;     // CONV_2D, CONV_3D (im2col: IM2COL and IM2COL_3D)
extern const Kernel conv_transpose;  // CONV_TRANSPOSE_1D, CONV_TRANSPOSE_2D
extern const Kernel conv_2d_dw, im2col_back, col2im_1d;
extern const Kernel pool;  // POOL_1D, POOL_2D
extern const Kernel pool_2d_back;
}  // namespace kernels

}  // namespace ggx::cpu
