/* The sd extension pack: stable-diffusion.cpp's operators on ggx's public extension interface
 * (../shared/spec/sd-ops.md for their exact semantics; ggml-extensions.md "sd.cpp integration").
 *
 * Call sd_ggml_register_extensions() once before building scheduler allocations for graphs with
 * these nodes: it registers the sd.* operators, their CPU kernels and the CPU fusion rules.
 *
 * The constructors below treat bad inputs as ggml.h's constructors do, in the process's error mode
 * (ggml-ext.h): an abort with the message by default, NULL with the error in ctx when returning. */
#ifndef SD_GGML_EXT_H
#define SD_GGML_EXT_H

#include <ggml-ext.h>
#include <ggml.h>

#ifdef __cplusplus
extern "C" {
#endif

enum sd_ggml_ext_status {
    SD_GGML_EXT_REGISTERED = 0,         /* this call registered everything */
    SD_GGML_EXT_ALREADY_REGISTERED = 1, /* an earlier call did; nothing changed (harmless) */
    SD_GGML_EXT_FAILED = -1,            /* reason in ggml_backend_get_last_error */
};

/* Register the pack (operators, CPU kernels, CPU fusion rules). Thread-safe; calling it again is
 * harmless and reported as SD_GGML_EXT_ALREADY_REGISTERED. */
enum sd_ggml_ext_status sd_ggml_register_extensions(void);

/* ---------------------------------------------------------------------------------------------- */
/* RoPE with precomputed position encodings: sd.rope_apply.v1 (sd-ops.md section 1).               */

/* a: F32 [D, H, L, B] (any float-aligned strides, D even); pe: F32 [2, 2, P, L] rotation matrices
 * (pe[c, r, j, t] = M[r][c]), 1 <= P <= D/2: the first 2P channels of each row are rotated, the rest
 * copied (partial rotation); result: contiguous F32 [D, L, H*B]. interleaved selects pairs
 * (2j, 2j+1), otherwise split halves (j, j + P). */
struct ggml_tensor * ggml_rope_apply(struct ggml_context * ctx, struct ggml_tensor * a,
                                     struct ggml_tensor * pe, bool interleaved);

/* The same result (full rotation, P = D/2) built from native ops only, as sd.cpp's
 * decomposed apply_rope does (sd-ops.md 1.5): permutes, views, repeats, two ggml_mul and one ggml_add.
 * For devices without the pack's kernel and for comparisons; bit-identical to ggml_rope_apply. */
struct ggml_tensor * sd_ggml_rope_apply_decomposed(struct ggml_context * ctx, struct ggml_tensor * a,
                                                   struct ggml_tensor * pe, bool interleaved);

/* ---------------------------------------------------------------------------------------------- */
/* INT8 tensorwise linear with ConvRot (sd-ops.md section 3).                                      */

/* sd.quantize_i8_convrot.v1: a F32 contiguous [K, rows...], group_size G a power of 4 dividing K
 * (1: no rotation); the packed I8 [K, round_up(rows, 4) + ceil(4 rows / K)] layout of section 3.3. */
struct ggml_tensor * ggml_quantize_i8_convrot(struct ggml_context * ctx, struct ggml_tensor * a,
                                              int group_size);

/* sd.linear_i8.v1: y = float(int32_dot(W, X)) * X_scale * W_scale + bias, each step in F32.
 * weight: I8 [K, N]; input: F32 [K, M, ...] (quantized in the op), the output of
 * ggml_quantize_i8_convrot, or I8 [K, M, ...] with input_scale (F32, one per row); weight_scale: F32
 * [N] or NULL (1); bias: F32 [N] or NULL; convrot_group_size: 0 or a power of 4 dividing K (F32
 * input only). Result: F32 [N, M, ...].
 * The six-argument form is the one existing callers (stable-diffusion.cpp) use; input_scale is an
 * optional seventh argument: in C through ggml_mul_mat_i8_tensorwise_ex, in C++ also as an overload. */
struct ggml_tensor * ggml_mul_mat_i8_tensorwise(struct ggml_context * ctx, struct ggml_tensor * weight,
                                                struct ggml_tensor * input, struct ggml_tensor * weight_scale,
                                                struct ggml_tensor * bias, int convrot_group_size);
struct ggml_tensor * ggml_mul_mat_i8_tensorwise_ex(struct ggml_context * ctx, struct ggml_tensor * weight,
                                                   struct ggml_tensor * input,
                                                   struct ggml_tensor * weight_scale,
                                                   struct ggml_tensor * bias, int convrot_group_size,
                                                   struct ggml_tensor * input_scale);

/* sd.cpp's Linear wiring (section 3.5): casts input to contiguous F32, quantizes with ConvRot once
 * per (input, G) when scale == 1 (the packed tensor is reused by every call sharing that input in
 * the same context), otherwise scales the input, quantizes inside the product, unscales and adds
 * the bias separately. */
struct ggml_tensor * ggml_ext_linear_i8_tensorwise(struct ggml_context * ctx, struct ggml_tensor * input,
                                                   struct ggml_tensor * weight,
                                                   struct ggml_tensor * weight_scale,
                                                   struct ggml_tensor * bias, int convrot_group_size,
                                                   float scale);

/* ---------------------------------------------------------------------------------------------- */
/* Quantized and sparse attention (sd-ops.md section 5; docs/sd-pack.md for the CPU algorithms).    */

enum ggml_sage_attn_mode {
    GGML_SAGE_ATTN_AUTO = 0,
    GGML_SAGE_ATTN_2,
    GGML_SAGE_ATTN_2_PLUS_PLUS,
};

/* sd.sage_attn.v1: approximately softmax(scale * q k^T) v, SageAttention-2 style (K smoothed by its
 * per-channel token mean, Q and K quantized to INT8 per block of 64 tokens, exact int32 QK^T, F32
 * softmax, F16 V). q, k: contiguous F32 [D, Tq, Hq, B] and [D, Tk, Hkv, B]; v: contiguous F16, the
 * shape of k; Hq % Hkv == 0 (query head h reads kv head h / (Hq / Hkv)); scale finite and > 0.
 * Result: F32 [D, Hq, Tq, B] (the layout of ggml_flash_attn_ext). No mask. */
struct ggml_tensor * ggml_sage_attn(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                    struct ggml_tensor * v, float scale, enum ggml_sage_attn_mode mode);

/* sd.sol_attn.v1: noncausal attention with KV tiles of 64 tokens; tiles whose estimated share of a
 * query block's attention falls below tau are pooled into the softmax through their mean key and
 * mean value (very negative tau: dense). q, k, v: contiguous F32 of one shape [128, T, H, B], T > 0;
 * scale finite and > 0; tau finite. Result: F32 [128, H, T, B]. */
struct ggml_tensor * ggml_sol_attn(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                   struct ggml_tensor * v, float scale, float tau);

#ifdef __cplusplus
}

/* C++: input_scale as the optional last argument of ggml_mul_mat_i8_tensorwise. */
inline struct ggml_tensor * ggml_mul_mat_i8_tensorwise(struct ggml_context * ctx, struct ggml_tensor * weight,
                                                       struct ggml_tensor * input,
                                                       struct ggml_tensor * weight_scale,
                                                       struct ggml_tensor * bias, int convrot_group_size,
                                                       struct ggml_tensor * input_scale) {
    return ggml_mul_mat_i8_tensorwise_ex(ctx, weight, input, weight_scale, bias, convrot_group_size,
                                         input_scale);
}
#endif

#endif /* SD_GGML_EXT_H */
