// Constructors of the attention family: FLASH_ATTN_EXT (with its precision and sinks), FLASH_ATTN_BACK,
// and the recurrent and model-specific attention ops (SSM_CONV, SSM_SCAN, RWKV_WKV6, GATED_LINEAR_ATTN,
// RWKV_WKV7, GATED_DELTA_NET, LIGHTNING_INDEXER, DSV4_HC_COMB, DSV4_HC_PRE, DSV4_HC_POST).
#include <cmath>

#include "core/ops/common.h"

using namespace ggx::core;

namespace {

bool is_3d_shape(const ggml_tensor * t, int64_t ne0, int64_t ne1, int64_t ne2) {
    return t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == ne2;
}

// Checks a FLASH_ATTN_EXT node handed to one of its setters (which take no context).
bool check_flash_attn(Check & check, const ggml_tensor * a) {
    return static_cast<bool>(
        check.require(a->op == GGML_OP_FLASH_ATTN_EXT, "a must be a ggml_flash_attn_ext result"));
}

// The RWKV-style linear attentions: every per-token input (key included) is [S, H, n_tokens] with S, H
// and n_tokens from key; state holds S * S * H values per sequence. The result is the outputs
// [S * H, n_tokens] followed by the new states [S * H, S * n_seqs].
ggml_tensor * linear_attention(ggml_context * ctx, const char * op_name, ggml_op op,
                               std::initializer_list<Check::Operand> srcs, const ggml_tensor * key,
                               std::initializer_list<const ggml_tensor *> per_token,
                               const ggml_tensor * state) {
    Check check(ctx, op_name, srcs);
    if (!check) return nullptr;
    const int64_t S = key->ne[0], H = key->ne[1], n_tokens = key->ne[2], n_seqs = state->ne[1];
    for (const Check::Operand & src : srcs)
        check.require(ggml_is_contiguous(src.tensor), "every input must be contiguous");
    for (const ggml_tensor * t : per_token)
        check.require(is_3d_shape(t, S, H, n_tokens), "the per-token inputs must be [S, H, n_tokens] as k");
    check.require(ggml_nelements(state) == S * S * H * n_seqs,
                  "state must hold S * S * H values per sequence");
    if (!check) return nullptr;
    ggml_tensor * result =
        make_node(ctx, op_name, op, GGML_TYPE_F32, {S * H, n_tokens + S * n_seqs, 1, 1}, {});
    if (!result) return nullptr;
    int i = 0;
    for (const Check::Operand & src : srcs)
        result->src[i++] = const_cast<ggml_tensor *>(src.tensor);
    return result;
}

}  // namespace

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
                       ggml_ext_flash_attn_ext_params{scale, max_bias, logit_softcap, GGML_PREC_DEFAULT});
}

void ggml_flash_attn_ext_set_prec(ggml_tensor * a, enum ggml_prec prec) {
    if (!a) return;
    Check check(context_of(a), "ggml_flash_attn_ext_set_prec", {{"a", a}});
    if (!check_flash_attn(check, a)) return;
    auto p = params<ggml_ext_flash_attn_ext_params>(a);
    p.prec = prec;
    set_params(a, p);
}

enum ggml_prec ggml_flash_attn_ext_get_prec(const ggml_tensor * a) {
    if (!a || a->op != GGML_OP_FLASH_ATTN_EXT) return GGML_PREC_DEFAULT;
    return static_cast<ggml_prec>(params<ggml_ext_flash_attn_ext_params>(a).prec);
}

void ggml_flash_attn_ext_add_sinks(ggml_tensor * a, ggml_tensor * sinks) {
    if (!a || !sinks) return;
    Check check(context_of(a), "ggml_flash_attn_ext_add_sinks", {{"a", a}, {"sinks", sinks}});
    if (!check_flash_attn(check, a)) return;
    check.require(a->src[4] == nullptr, "a already has sinks")
        .require(sinks->type == GGML_TYPE_F32 && ggml_is_vector(sinks) && sinks->ne[0] == a->src[0]->ne[2],
                 "sinks must be an f32 vector of one value per q head (q.ne2)");
    if (check) a->src[4] = sinks;
}

// ggml itself refuses this op until it is adapted to ggml_flash_attn_ext's layout.
ggml_tensor * ggml_flash_attn_back(ggml_context * ctx, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v,
                                   ggml_tensor * d, bool /*masked*/) {
    Check check(ctx, "ggml_flash_attn_back", {{"q", q}, {"k", k}, {"v", v}, {"d", d}});
    check.require(false, "not available: ggml has not adapted it to ggml_flash_attn_ext yet");
    return nullptr;
}

ggml_tensor * ggml_ssm_conv(ggml_context * ctx, ggml_tensor * sx, ggml_tensor * c) {
    Check check(ctx, "ggml_ssm_conv", {{"sx", sx}, {"c", c}});
    if (!check) return nullptr;
    check.require(is_float(sx) && is_float(c), "sx and c must be float")
        .require(ggml_is_3d(sx) && ggml_is_matrix(c),
                 "sx must be [d_conv - 1 + n_t, d_inner, n_s], c [d_conv, d_inner]")
        .require(sx->ne[1] == c->ne[1], "sx.ne1 and c.ne1 (d_inner) must match")
        .require(c->ne[0] >= 1 && sx->ne[0] >= c->ne[0] - 1, "sx must hold d_conv - 1 elements of history");
    if (!check) return nullptr;
    const int64_t n_t = sx->ne[0] - c->ne[0] + 1;
    return make_node(ctx, "ggml_ssm_conv", GGML_OP_SSM_CONV, GGML_TYPE_F32, {c->ne[1], n_t, sx->ne[2], 1},
                     {sx, c});
}

ggml_tensor * ggml_ssm_scan(ggml_context * ctx, ggml_tensor * s, ggml_tensor * x, ggml_tensor * dt,
                            ggml_tensor * A, ggml_tensor * B, ggml_tensor * C, ggml_tensor * ids) {
    Check check(ctx, "ggml_ssm_scan",
                {{"s", s}, {"x", x}, {"dt", dt}, {"A", A}, {"B", B}, {"C", C}, {"ids", ids}});
    if (!check) return nullptr;
    const int64_t d_state = s->ne[0], head_dim = x->ne[0], n_head = x->ne[1];
    const int64_t n_tokens = x->ne[2], n_seqs = x->ne[3];
    check
        .require(ggml_is_contiguous(s) && ggml_is_contiguous(dt) && ggml_is_contiguous(A) &&
                     ggml_is_contiguous(B) && ggml_is_contiguous(C),
                 "s, dt, A, B and C must be contiguous")
        .require(x->nb[0] == ggml_type_size(x->type), "x rows must be dense")
        .require(ggml_are_same_shape(B, C), "B and C must have the same shape")
        .require(ids->type == GGML_TYPE_I32 && ggml_is_vector(ids) && ids->ne[0] == n_seqs,
                 "ids must be an i32 vector of x.ne3 sequence indices")
        .require(ggml_is_3d(dt) && is_3d_shape(dt, n_head, n_tokens, n_seqs),
                 "dt must be [n_head, n_tokens, n_seqs]")
        .require(s->ne[1] == head_dim && s->ne[2] == n_head, "s must be [d_state, head_dim, n_head, ...]")
        .require(B->ne[0] == d_state && B->ne[2] == n_tokens && B->ne[3] == n_seqs,
                 "B must be [d_state, n_group, n_tokens, n_seqs]")
        .require(ggml_is_matrix(A) && A->ne[1] == n_head && (A->ne[0] == 1 || A->ne[0] == d_state),
                 "A must be [1 or d_state, n_head]");
    if (!check) return nullptr;
    const int64_t n = ggml_nelements(x) + d_state * head_dim * n_head * ids->ne[0];
    return make_node(ctx, "ggml_ssm_scan", GGML_OP_SSM_SCAN, GGML_TYPE_F32, {n, 1, 1, 1},
                     {s, x, dt, A, B, C, ids});
}

ggml_tensor * ggml_rwkv_wkv6(ggml_context * ctx, ggml_tensor * k, ggml_tensor * v, ggml_tensor * r,
                             ggml_tensor * tf, ggml_tensor * td, ggml_tensor * state) {
    return linear_attention(ctx, "ggml_rwkv_wkv6", GGML_OP_RWKV_WKV6,
                            {{"k", k}, {"v", v}, {"r", r}, {"tf", tf}, {"td", td}, {"state", state}}, k,
                            {v, r, td}, state);
}

ggml_tensor * ggml_gated_linear_attn(ggml_context * ctx, ggml_tensor * k, ggml_tensor * v, ggml_tensor * q,
                                     ggml_tensor * g, ggml_tensor * state, float scale) {
    return with_params(
        linear_attention(ctx, "ggml_gated_linear_attn", GGML_OP_GATED_LINEAR_ATTN,
                         {{"k", k}, {"v", v}, {"q", q}, {"g", g}, {"state", state}}, k, {v, q, g}, state),
        ggml_ext_gated_linear_attn_params{scale});
}

ggml_tensor * ggml_rwkv_wkv7(ggml_context * ctx, ggml_tensor * r, ggml_tensor * w, ggml_tensor * k,
                             ggml_tensor * v, ggml_tensor * a, ggml_tensor * b, ggml_tensor * state) {
    return linear_attention(ctx, "ggml_rwkv_wkv7", GGML_OP_RWKV_WKV7,
                            {{"r", r}, {"w", w}, {"k", k}, {"v", v}, {"a", a}, {"b", b}, {"state", state}}, k,
                            {r, w, v, a, b}, state);
}

// The result holds the outputs [S_v * H_v, n_tokens * n_seqs], then K recurrent states [S_v * H_v, S_v *
// n_seqs] each, the most recent first.
ggml_tensor * ggml_gated_delta_net(ggml_context * ctx, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v,
                                   ggml_tensor * g, ggml_tensor * beta, ggml_tensor * state, int64_t K) {
    Check check(ctx, "ggml_gated_delta_net",
                {{"q", q}, {"k", k}, {"v", v}, {"g", g}, {"beta", beta}, {"state", state}});
    if (!check) return nullptr;
    const int64_t S = v->ne[0], H = v->ne[1], n_tokens = v->ne[2], n_seqs = v->ne[3];
    check.require(ggml_are_same_shape(q, k), "q and k must have the same shape")
        .require(k->ne[0] == S && k->ne[2] == n_tokens && k->ne[3] > 0 && n_seqs % k->ne[3] == 0,
                 "k must be [S_v, H_k, n_tokens, a divisor of n_seqs]")
        .require(k->ne[1] > 0 && H % k->ne[1] == 0, "v heads must be a multiple of k heads")
        .require(
            (g->ne[0] == 1 || g->ne[0] == S) && g->ne[1] == H && g->ne[2] == n_tokens && g->ne[3] == n_seqs,
            "g must be [1 or S_v, H_v, n_tokens, n_seqs]")
        .require(beta->ne[0] == 1 && beta->ne[1] == H && beta->ne[2] == n_tokens && beta->ne[3] == n_seqs,
                 "beta must be [1, H_v, n_tokens, n_seqs]")
        .require(is_3d_shape(state, S, S, H) && state->ne[3] == n_seqs,
                 "state must be [S_v, S_v, H_v, n_seqs]")
        .require(K >= 1 && K <= INT32_MAX, "K (states kept) must be >= 1");
    if (!check) return nullptr;
    return with_params(
        make_node(ctx, "ggml_gated_delta_net", GGML_OP_GATED_DELTA_NET, GGML_TYPE_F32,
                  {S * H, n_tokens * n_seqs + S * n_seqs * K, 1, 1}, {q, k, v, g, beta, state}),
        ggml_ext_gated_delta_net_params{static_cast<int32_t>(K)});
}

ggml_tensor * ggml_lightning_indexer(ggml_context * ctx, ggml_tensor * q, ggml_tensor * k,
                                     ggml_tensor * weights, ggml_tensor * mask) {
    Check check(ctx, "ggml_lightning_indexer", {{"q", q}, {"k", k}, {"weights", weights}, {"mask", mask}});
    if (!check) return nullptr;
    const int64_t n_embd = q->ne[0], n_head = q->ne[1], n_batch = q->ne[2], n3 = q->ne[3], n_kv = k->ne[2];
    check.require(q->type == GGML_TYPE_F32 && weights->type == GGML_TYPE_F32, "q and weights must be f32")
        .require(k->type == GGML_TYPE_F32 || k->type == GGML_TYPE_F16, "k must be f16 or f32")
        .require(mask->type == GGML_TYPE_F16, "mask must be f16")
        .require(k->ne[0] == n_embd && k->ne[1] == 1 && k->ne[3] == n3, "k must be [n_embd, 1, n_kv, q.ne3]")
        .require(is_3d_shape(weights, n_head, n_batch, 1) && weights->ne[3] == n3,
                 "weights must be [q.ne1, q.ne2, 1, q.ne3]")
        .require(mask->ne[0] == n_kv && mask->ne[1] == n_batch && mask->ne[2] == 1 && mask->ne[3] > 0 &&
                     n3 % mask->ne[3] == 0,
                 "mask must be [n_kv, q.ne2, 1, a divisor of q.ne3]");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_lightning_indexer", GGML_OP_LIGHTNING_INDEXER, GGML_TYPE_F32,
                     {n_kv, n_batch, 1, n3}, {q, k, weights, mask});
}

ggml_tensor * ggml_dsv4_hc_comb(ggml_context * ctx, ggml_tensor * mixes, ggml_tensor * scale,
                                ggml_tensor * base, float eps, int32_t n_iter) {
    Check check(ctx, "ggml_dsv4_hc_comb", {{"mixes", mixes}, {"scale", scale}, {"base", base}});
    if (!check) return nullptr;
    // mixes rows hold (2 + hc) * hc values: hc = sqrt(ne0 + 1) - 1.
    const auto hc =
        static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(mixes->ne[0]) + 1.0))) - 1;
    check
        .require(mixes->type == GGML_TYPE_F32 && scale->type == GGML_TYPE_F32 && base->type == GGML_TYPE_F32,
                 "mixes, scale and base must be f32")
        .require(ggml_is_matrix(mixes) && hc >= 1 && (2 + hc) * hc == mixes->ne[0],
                 "mixes must be [(2 + hc) * hc, n_tokens]")
        .require(ggml_is_vector(scale) && scale->ne[0] == 3, "scale must be [3]")
        .require(ggml_is_vector(base) && base->ne[0] == mixes->ne[0], "base must be [(2 + hc) * hc]")
        .require(eps >= 0.0f && std::isfinite(eps), "eps must be finite and >= 0")
        .require(n_iter >= 1, "n_iter must be >= 1");
    if (!check) return nullptr;
    return with_params(make_node(ctx, "ggml_dsv4_hc_comb", GGML_OP_DSV4_HC_COMB, GGML_TYPE_F32,
                                 {hc, hc, mixes->ne[1], 1}, {mixes, scale, base}),
                       ggml_ext_dsv4_hc_comb_params{eps, n_iter});
}

ggml_tensor * ggml_dsv4_hc_pre(ggml_context * ctx, ggml_tensor * x, ggml_tensor * weights) {
    Check check(ctx, "ggml_dsv4_hc_pre", {{"x", x}, {"weights", weights}});
    if (!check) return nullptr;
    check.require(x->type == GGML_TYPE_F32 && weights->type == GGML_TYPE_F32, "x and weights must be f32")
        .require(ggml_is_3d(x), "x must be [n_embd, hc, n_tokens]")
        .require(is_3d_shape(weights, x->ne[1], x->ne[2], 1), "weights must be [hc, n_tokens]");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_dsv4_hc_pre", GGML_OP_DSV4_HC_PRE, GGML_TYPE_F32, {x->ne[0], x->ne[2], 1, 1},
                     {x, weights});
}

ggml_tensor * ggml_dsv4_hc_post(ggml_context * ctx, ggml_tensor * x, ggml_tensor * residual,
                                ggml_tensor * post, ggml_tensor * comb) {
    Check check(ctx, "ggml_dsv4_hc_post", {{"x", x}, {"residual", residual}, {"post", post}, {"comb", comb}});
    if (!check) return nullptr;
    const int64_t n_embd = residual->ne[0], hc = residual->ne[1], n_tokens = residual->ne[2];
    check
        .require(x->type == GGML_TYPE_F32 && residual->type == GGML_TYPE_F32 && post->type == GGML_TYPE_F32 &&
                     comb->type == GGML_TYPE_F32,
                 "every input must be f32")
        .require(ggml_is_3d(residual), "residual must be [n_embd, hc, n_tokens]")
        .require(is_3d_shape(x, n_embd, n_tokens, 1), "x must be [n_embd, n_tokens]")
        .require(is_3d_shape(post, hc, n_tokens, 1), "post must be [hc, n_tokens]")
        .require(is_3d_shape(comb, hc, hc, n_tokens), "comb must be [hc, hc, n_tokens]");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_dsv4_hc_post", GGML_OP_DSV4_HC_POST, GGML_TYPE_F32, {n_embd, hc, n_tokens, 1},
                     {x, residual, post, comb});
}

}  // extern "C"
