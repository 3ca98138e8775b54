// Constructors of the rotary-embedding family: ROPE, ROPE_BACK (and ggml_rope_yarn_corr_dims, the
// YaRN correction range they share with the kernels).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/ops/common.h"

using namespace ggx::core;

namespace {

constexpr bool is_multi_mode(int mode) { return (mode & GGML_ROPE_TYPE_MROPE) != 0; }

// The parameters of ggml_rope_ext / ggml_rope_multi; sections NULL for the single-axis forms.
ggml_ext_rope_params rope_params(int n_dims, const int * sections, int mode, int n_ctx_orig, float freq_base,
                                 float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                 float beta_slow) {
    ggml_ext_rope_params p{0,          n_dims,      mode,      0,         n_ctx_orig,   freq_base, freq_scale,
                           ext_factor, attn_factor, beta_fast, beta_slow, {0, 0, 0, 0}, 0};
    if (sections) std::copy(sections, sections + GGML_MROPE_SECTIONS, p.sections);
    return p;
}

// Single-axis modes (NORMAL, NEOX) take one position per token; multi modes (MROPE, IMROPE, VISION)
// four, and sections that say how many rotation pairs each position axis drives.
void check_mode(Check & check, const ggml_tensor * a, const ggml_tensor * b, const ggml_ext_rope_params & p) {
    if (!is_multi_mode(p.mode)) {
        check
            .require(p.mode == GGML_ROPE_TYPE_NORMAL || p.mode == GGML_ROPE_TYPE_NEOX,
                     "mode must be NORMAL or NEOX")
            .require(b->type == GGML_TYPE_I32 && ggml_is_vector(b) && b->ne[0] == a->ne[2],
                     "b must be an i32 vector of a.ne2 positions");
        return;
    }
    const bool sections_ok =
        std::all_of(p.sections, p.sections + GGML_MROPE_SECTIONS, [](int s) { return s >= 0; });
    check
        .require(p.mode == GGML_ROPE_TYPE_MROPE || p.mode == GGML_ROPE_TYPE_IMROPE ||
                     p.mode == GGML_ROPE_TYPE_VISION,
                 "mode must be MROPE, IMROPE or VISION")
        .require(b->type == GGML_TYPE_I32 && ggml_is_vector(b) && b->ne[0] == 4 * a->ne[2],
                 "b must be an i32 vector of 4 * a.ne2 positions")
        .require(sections_ok, "sections must be >= 0")
        .require(p.mode != GGML_ROPE_TYPE_VISION || 2 * p.n_dims == a->ne[0],
                 "VISION needs n_dims == a.ne0 / 2");
}

// A ROPE or ROPE_BACK node of a (a view of a when inplace).
ggml_tensor * rope_node(ggml_context * ctx, const char * op_name, ggml_op op, ggml_tensor * a,
                        ggml_tensor * b, ggml_tensor * c, const ggml_ext_rope_params & p, bool inplace) {
    Check check(ctx, op_name, {{"a", a}, {"b", b}, {"c", c, true}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16, "a must be f32 or f16");
    check_mode(check, a, b, p);
    check
        .require(p.n_dims > 0 && p.n_dims % 2 == 0 && p.n_dims <= a->ne[0],
                 "n_dims must be even and in 2..a.ne0")
        .require(p.freq_base > 0.0f && p.freq_scale > 0.0f, "freq_base and freq_scale must be > 0")
        .require(!c || (c->type == GGML_TYPE_F32 && ggml_is_vector(c) && c->ne[0] >= p.n_dims / 2),
                 "c must be an f32 vector of >= n_dims/2 frequency factors");
    if (!check) return nullptr;
    return with_params(make_node(ctx, op_name, op, a->type, shape_of(a), {a, b, c}, inplace ? a : nullptr),
                       p);
}

}  // namespace

extern "C" {

ggml_tensor * ggml_rope_ext(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * c, int n_dims,
                            int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                            float attn_factor, float beta_fast, float beta_slow) {
    return rope_node(ctx, "ggml_rope_ext", GGML_OP_ROPE, a, b, c,
                     rope_params(n_dims, nullptr, mode, n_ctx_orig, freq_base, freq_scale, ext_factor,
                                 attn_factor, beta_fast, beta_slow),
                     false);
}

ggml_tensor * ggml_rope_ext_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * c,
                                    int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale,
                                    float ext_factor, float attn_factor, float beta_fast, float beta_slow) {
    return rope_node(ctx, "ggml_rope_ext_inplace", GGML_OP_ROPE, a, b, c,
                     rope_params(n_dims, nullptr, mode, n_ctx_orig, freq_base, freq_scale, ext_factor,
                                 attn_factor, beta_fast, beta_slow),
                     true);
}

// ggml's defaults for the short forms: base 10000, no scaling, no YaRN.
ggml_tensor * ggml_rope(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int n_dims, int mode) {
    return rope_node(ctx, "ggml_rope", GGML_OP_ROPE, a, b, nullptr,
                     rope_params(n_dims, nullptr, mode, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f), false);
}

ggml_tensor * ggml_rope_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int n_dims, int mode) {
    return rope_node(ctx, "ggml_rope_inplace", GGML_OP_ROPE, a, b, nullptr,
                     rope_params(n_dims, nullptr, mode, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f), true);
}

ggml_tensor * ggml_rope_custom(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int n_dims, int mode,
                               int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                               float attn_factor, float beta_fast, float beta_slow) {
    return rope_node(ctx, "ggml_rope_custom", GGML_OP_ROPE, a, b, nullptr,
                     rope_params(n_dims, nullptr, mode, n_ctx_orig, freq_base, freq_scale, ext_factor,
                                 attn_factor, beta_fast, beta_slow),
                     false);
}

ggml_tensor * ggml_rope_custom_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int n_dims,
                                       int mode, int n_ctx_orig, float freq_base, float freq_scale,
                                       float ext_factor, float attn_factor, float beta_fast,
                                       float beta_slow) {
    return rope_node(ctx, "ggml_rope_custom_inplace", GGML_OP_ROPE, a, b, nullptr,
                     rope_params(n_dims, nullptr, mode, n_ctx_orig, freq_base, freq_scale, ext_factor,
                                 attn_factor, beta_fast, beta_slow),
                     true);
}

ggml_tensor * ggml_rope_multi(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * c,
                              int n_dims, int sections[GGML_MROPE_SECTIONS], int mode, int n_ctx_orig,
                              float freq_base, float freq_scale, float ext_factor, float attn_factor,
                              float beta_fast, float beta_slow) {
    return rope_node(ctx, "ggml_rope_multi", GGML_OP_ROPE, a, b, c,
                     rope_params(n_dims, sections, mode, n_ctx_orig, freq_base, freq_scale, ext_factor,
                                 attn_factor, beta_fast, beta_slow),
                     false);
}

ggml_tensor * ggml_rope_multi_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * c,
                                      int n_dims, int sections[GGML_MROPE_SECTIONS], int mode, int n_ctx_orig,
                                      float freq_base, float freq_scale, float ext_factor, float attn_factor,
                                      float beta_fast, float beta_slow) {
    return rope_node(ctx, "ggml_rope_multi_inplace", GGML_OP_ROPE, a, b, c,
                     rope_params(n_dims, sections, mode, n_ctx_orig, freq_base, freq_scale, ext_factor,
                                 attn_factor, beta_fast, beta_slow),
                     true);
}

ggml_tensor * ggml_rope_ext_back(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * c,
                                 int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale,
                                 float ext_factor, float attn_factor, float beta_fast, float beta_slow) {
    return rope_node(ctx, "ggml_rope_ext_back", GGML_OP_ROPE_BACK, a, b, c,
                     rope_params(n_dims, nullptr, mode, n_ctx_orig, freq_base, freq_scale, ext_factor,
                                 attn_factor, beta_fast, beta_slow),
                     false);
}

ggml_tensor * ggml_rope_multi_back(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * c,
                                   int n_dims, int sections[4], int mode, int n_ctx_orig, float freq_base,
                                   float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                   float beta_slow) {
    return rope_node(ctx, "ggml_rope_multi_back", GGML_OP_ROPE_BACK, a, b, c,
                     rope_params(n_dims, sections, mode, n_ctx_orig, freq_base, freq_scale, ext_factor,
                                 attn_factor, beta_fast, beta_slow),
                     false);
}

ggml_tensor * ggml_rope_set_offset(ggml_tensor * a, int n_offs) {
    if (!a) return nullptr;
    Check check(context_of(a), "ggml_rope_set_offset", {{"a", a}});
    if (!check.require(a->op == GGML_OP_ROPE || a->op == GGML_OP_ROPE_BACK,
                       "a must be a rope or rope_back result"))
        return nullptr;
    auto p = params<ggml_ext_rope_params>(a);
    check.require(p.mode != GGML_ROPE_TYPE_VISION, "VISION rope takes no offset")
        .require(n_offs >= 0 && n_offs % 2 == 0 && n_offs + p.n_dims <= a->ne[0],
                 "n_offs must be even, >= 0 and leave n_dims elements of a row to rotate");
    if (!check) return nullptr;
    p.n_offs = n_offs;
    set_params(a, p);
    return a;
}

// The dimension that turns n_rot times over n_ctx_orig positions, from θ_i = base^(-2i/n_dims).
void ggml_rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow,
                              float dims[2]) {
    const auto corr_dim = [&](float n_rot) {
        return static_cast<float>(n_dims) *
               std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * std::numbers::pi_v<float>)) /
               (2.0f * std::log(freq_base));
    };
    dims[0] = std::max(0.0f, std::floor(corr_dim(beta_fast)));
    dims[1] = std::min(static_cast<float>(n_dims - 1), std::ceil(corr_dim(beta_slow)));
}

}  // extern "C"
