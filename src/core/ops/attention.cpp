// Constructors of the attention family: FLASH_ATTN_EXT.
#include <cmath>

#include "core/ops/common.h"

using namespace ggx::core;

extern "C" {

ggml_tensor * ggml_flash_attn_ext(ggml_context * ctx, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v,
                                  ggml_tensor * mask, float scale, float max_bias, float logit_softcap) {
    Check check(ctx, "ggml_flash_attn_ext", {{"q", q}, {"k", k}, {"v", v}, {"mask", mask, true}});
    if (!check) return nullptr;
    auto kv_type = [](const ggml_tensor * t) { return t->type == GGML_TYPE_F32 || t->type == GGML_TYPE_F16; };
    check.require(q->type == GGML_TYPE_F32, "q must be f32")
        .require(kv_type(k) && kv_type(v), "k and v must be f16 or f32")
        .require(q->ne[0] == k->ne[0], "q and k must have the same head size (ne0)")
        .require(k->ne[1] == v->ne[1] && k->ne[2] == v->ne[2] && k->ne[3] == v->ne[3],
                 "k and v must agree in dims 1..3")
        .require(k->ne[2] > 0 && q->ne[2] % k->ne[2] == 0, "q heads must be a multiple of k/v heads")
        .require(k->ne[3] > 0 && q->ne[3] % k->ne[3] == 0, "q batch must be a multiple of k/v batch")
        .require(std::isfinite(scale), "scale must be finite")
        .require(max_bias >= 0.0f && std::isfinite(max_bias), "max_bias must be finite and >= 0")
        .require(logit_softcap >= 0.0f && std::isfinite(logit_softcap),
                 "logit_softcap must be finite and >= 0");
    if (mask) {
        check.require(mask->type == GGML_TYPE_F32 || mask->type == GGML_TYPE_F16, "mask must be f16 or f32")
            .require(mask->ne[0] == k->ne[1] && mask->ne[1] >= q->ne[1], "mask must be [n_kv, >= n_q, ...]")
            .require(mask->ne[2] > 0 && mask->ne[3] > 0 && q->ne[2] % mask->ne[2] == 0 &&
                         q->ne[3] % mask->ne[3] == 0,
                     "mask cannot be broadcast over q in dims 2 and 3");
    }
    if (!check) return nullptr;
    return with_params(make_node(ctx, "ggml_flash_attn_ext", GGML_OP_FLASH_ATTN_EXT, GGML_TYPE_F32,
                                 {v->ne[0], q->ne[2], q->ne[1], q->ne[3]}, {q, k, v, mask}),
                       ggml_ext_flash_attn_ext_params{scale, max_bias, logit_softcap});
}

}  // extern "C"
