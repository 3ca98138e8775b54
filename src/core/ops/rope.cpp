// Constructors of the rotary-embedding family: ROPE.
#include "core/ops/common.h"

using namespace ggx::core;

extern "C" {

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

}  // extern "C"
