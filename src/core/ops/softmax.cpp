// Constructors of the softmax family: SOFT_MAX.
#include <cmath>

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

}  // extern "C"
