// Constructors of the softmax family: SOFT_MAX (and its sinks), SOFT_MAX_BACK, DIAG_MASK_INF/ZERO.
#include <cmath>
#include <string>

#include "core/ops/common.h"

using namespace ggx::core;

namespace {

ggml_tensor * soft_max(ggml_context * ctx, const char * name, ggml_tensor * a, ggml_tensor * mask,
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

ggml_tensor * soft_max_back(ggml_context * ctx, const char * name, ggml_tensor * dy, ggml_tensor * y,
                            float scale, float max_bias, bool inplace) {
    Check check(ctx, name, {{"a", dy}, {"b", y}});
    if (!check) return nullptr;
    check.require(dy->type == GGML_TYPE_F32 && y->type == GGML_TYPE_F32, "a and b must be f32")
        .require(ggml_are_same_shape(dy, y), "a and b must have the same shape")
        .require(max_bias >= 0.0f && std::isfinite(max_bias), "max_bias must be finite and >= 0");
    if (!check) return nullptr;
    return with_params(
        make_node(ctx, name, GGML_OP_SOFT_MAX_BACK, dy->type, shape_of(dy), {dy, y}, inplace ? dy : nullptr),
        ggml_ext_soft_max_params{scale, max_bias});
}

ggml_tensor * diag_mask(ggml_context * ctx, const char * name, ggml_op op, ggml_tensor * a, int n_past,
                        bool inplace) {
    Check check(ctx, name, {{"a", a}});
    if (!check) return nullptr;
    check.require(is_float(a), "a must be f32, f16 or bf16").require(n_past >= 0, "n_past must be >= 0");
    if (!check) return nullptr;
    return with_params(make_node(ctx, name, op, a->type, shape_of(a), {a}, inplace ? a : nullptr),
                       ggml_ext_diag_mask_params{n_past});
}

[[noreturn]] void sinks_misuse(const ggml_tensor * a, const ggml_tensor * sinks, const char * why) {
    GGML_ABORT("ggml_soft_max_add_sinks: %s (a: %s, sinks: %s)", why, describe(a).c_str(),
               describe(sinks).c_str());
}

}  // namespace

extern "C" {

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
ggml_tensor * ggml_soft_max_ext_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * mask, float scale,
                                        float max_bias) {
    return soft_max(ctx, "ggml_soft_max_ext_inplace", a, mask, scale, max_bias, true);
}

void ggml_soft_max_add_sinks(ggml_tensor * a, ggml_tensor * sinks) {
    if (!a) return;  // an earlier constructor failed and reported why
    if (!sinks) {
        a->src[2] = nullptr;
        return;
    }
    if (a->op != GGML_OP_SOFT_MAX) sinks_misuse(a, sinks, "a must be a soft_max node");
    if (sinks->type != GGML_TYPE_F32 || !ggml_is_vector(sinks))
        sinks_misuse(a, sinks, "sinks must be an f32 vector");
    if (sinks->ne[0] != a->src[0]->ne[2])
        sinks_misuse(a, sinks, "sinks must have one value per head (a.ne2)");
    a->src[2] = sinks;
}

ggml_tensor * ggml_soft_max_ext_back(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, float scale,
                                     float max_bias) {
    return soft_max_back(ctx, "ggml_soft_max_ext_back", a, b, scale, max_bias, false);
}
ggml_tensor * ggml_soft_max_ext_back_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b,
                                             float scale, float max_bias) {
    return soft_max_back(ctx, "ggml_soft_max_ext_back_inplace", a, b, scale, max_bias, true);
}

ggml_tensor * ggml_diag_mask_inf(ggml_context * ctx, ggml_tensor * a, int n_past) {
    return diag_mask(ctx, "ggml_diag_mask_inf", GGML_OP_DIAG_MASK_INF, a, n_past, false);
}
ggml_tensor * ggml_diag_mask_inf_inplace(ggml_context * ctx, ggml_tensor * a, int n_past) {
    return diag_mask(ctx, "ggml_diag_mask_inf_inplace", GGML_OP_DIAG_MASK_INF, a, n_past, true);
}
ggml_tensor * ggml_diag_mask_zero(ggml_context * ctx, ggml_tensor * a, int n_past) {
    return diag_mask(ctx, "ggml_diag_mask_zero", GGML_OP_DIAG_MASK_ZERO, a, n_past, false);
}
ggml_tensor * ggml_diag_mask_zero_inplace(ggml_context * ctx, ggml_tensor * a, int n_past) {
    return diag_mask(ctx, "ggml_diag_mask_zero_inplace", GGML_OP_DIAG_MASK_ZERO, a, n_past, true);
}

}  // extern "C"
