// Constructors of the normalisation family: NORM, RMS_NORM, L2_NORM, GROUP_NORM, RMS_NORM_BACK.
#include <cmath>

#include "core/ops/common.h"

using namespace ggx::core;

namespace {

// A per-row normalisation of F32 a, or its gradient dy (its parameters are recorded by the caller).
ggml_tensor * row_norm(ggml_context * ctx, const char * name, ggml_op op, ggml_tensor * a, float eps,
                       bool inplace, ggml_tensor * dy = nullptr) {
    Check check(ctx, name, {{"a", a}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32, "a must be f32")
        .require(eps >= 0.0f && std::isfinite(eps), "eps must be finite and >= 0");
    if (!check) return nullptr;
    return make_node(ctx, name, op, a->type, shape_of(a), {a, dy}, inplace ? a : nullptr);
}

ggml_tensor * group_norm(ggml_context * ctx, const char * name, ggml_tensor * a, int n_groups, float eps,
                         bool inplace) {
    Check check(ctx, name, {{"a", a}});
    if (!check) return nullptr;
    if (!check.require(n_groups >= 1 && n_groups <= a->ne[2], "n_groups must be in 1..ne2")) return nullptr;
    return with_params(row_norm(ctx, name, GGML_OP_GROUP_NORM, a, eps, inplace),
                       ggml_ext_group_norm_params{n_groups, eps});
}

}  // namespace

extern "C" {

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

ggml_tensor * ggml_l2_norm_inplace(ggml_context * ctx, ggml_tensor * a, float eps) {
    return with_params(row_norm(ctx, "ggml_l2_norm_inplace", GGML_OP_L2_NORM, a, eps, true),
                       ggml_ext_norm_params{eps});
}

ggml_tensor * ggml_group_norm(ggml_context * ctx, ggml_tensor * a, int n_groups, float eps) {
    return group_norm(ctx, "ggml_group_norm", a, n_groups, eps, false);
}
ggml_tensor * ggml_group_norm_inplace(ggml_context * ctx, ggml_tensor * a, int n_groups, float eps) {
    return group_norm(ctx, "ggml_group_norm_inplace", a, n_groups, eps, true);
}

ggml_tensor * ggml_rms_norm_back(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, float eps) {
    Check check(ctx, "ggml_rms_norm_back", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(b->type == GGML_TYPE_F32 && ggml_are_same_shape(a, b), "b must be f32 of a's shape");
    if (!check) return nullptr;
    return with_params(row_norm(ctx, "ggml_rms_norm_back", GGML_OP_RMS_NORM_BACK, a, eps, false, b),
                       ggml_ext_norm_params{eps});
}

}  // extern "C"
