// Constructors of the attention family (docs/ops.md "Attention"): the flash_attn_ext setters, the
// recurrent ops and DeepSeek's indexer and hyper-connections: shapes, types, sources, parameters
// and the rejected inputs.
#include "support/op_test_util.h"
#include "support/test_util.h"

namespace {

using ggx::test::OpTest;
using AttentionOps = OpTest;

TEST_F(AttentionOps, FlashAttnExtPrecision) {
    ggml_tensor * r =
        ggml_flash_attn_ext(ctx(), f32(8, 5, 4), f32(8, 7, 2), f32(6, 7, 2), nullptr, 0.5f, 0.0f, 0.0f);
    EXPECT_EQ(ggml_flash_attn_ext_get_prec(r), GGML_PREC_DEFAULT);
    ggml_flash_attn_ext_set_prec(r, GGML_PREC_F32);
    EXPECT_EQ(ggml_flash_attn_ext_get_prec(r), GGML_PREC_F32);
    EXPECT_EQ(r->op_params[3], GGML_PREC_F32);
    EXPECT_EQ(params_of<ggml_ext_flash_attn_ext_params>(r).scale, 0.5f);
    ggml_flash_attn_ext_set_prec(f32(3), GGML_PREC_F32);
    expect_error("ggml_flash_attn_ext_set_prec", "a must be a ggml_flash_attn_ext result");
    EXPECT_EQ(ggml_flash_attn_ext_get_prec(nullptr), GGML_PREC_DEFAULT);
}

TEST_F(AttentionOps, FlashAttnExtSinksBecomeSourceFour) {
    ggml_tensor * q = f32(8, 5, 4);
    ggml_tensor * r = ggml_flash_attn_ext(ctx(), q, f32(8, 7, 2), f32(6, 7, 2), nullptr, 0.5f, 0.0f, 0.0f);
    ggml_flash_attn_ext_add_sinks(r, nullptr);
    EXPECT_EQ(r->src[4], nullptr);
    ggml_flash_attn_ext_add_sinks(r, f32(3));
    expect_error("ggml_flash_attn_ext_add_sinks",
                 "sinks must be an f32 vector of one value per q head (q.ne2)");
    ggml_tensor * sinks = f32(4);
    ggml_flash_attn_ext_add_sinks(r, sinks);
    EXPECT_EQ(r->src[4], sinks);
    EXPECT_EQ(error(), "");
    ggml_flash_attn_ext_add_sinks(r, sinks);
    expect_error("ggml_flash_attn_ext_add_sinks", "a already has sinks");
    ggml_flash_attn_ext_add_sinks(q, sinks);
    expect_error("ggml_flash_attn_ext_add_sinks", "a must be a ggml_flash_attn_ext result");
    EXPECT_TRUE(ggml_backend_supports_op(ggx::test::cpu_backend(), r));  // the CPU kernel takes sinks
}

TEST_F(AttentionOps, FlashAttnBackIsRefusedAsInGgml) {
    expect_rejected(ggml_flash_attn_back(ctx(), f32(8, 5, 4), f32(8, 7, 4), f32(8, 7, 4), f32(8, 5, 4), true),
                    "ggml_flash_attn_back", "not available");
}

TEST_F(AttentionOps, SsmConv) {
    ggml_tensor *sx = f32(3 + 6, 16, 2), *c = f32(4, 16);
    expect_node(ggml_ssm_conv(ctx(), sx, c), GGML_OP_SSM_CONV, GGML_TYPE_F32, {16, 6, 2, 1}, {sx, c});
    expect_rejected(ggml_ssm_conv(ctx(), sx, f32(4, 15)), "ggml_ssm_conv",
                    "sx.ne1 and c.ne1 (d_inner) must match");
    expect_rejected(ggml_ssm_conv(ctx(), f32(2, 16, 2), c), "ggml_ssm_conv",
                    "sx must hold d_conv - 1 elements of history");
    expect_rejected(ggml_ssm_conv(ctx(), f32(9, 16, 2, 2), c), "ggml_ssm_conv",
                    "sx must be [d_conv - 1 + n_t, d_inner, n_s], c [d_conv, d_inner]");
}

TEST_F(AttentionOps, SsmScan) {
    const int64_t d_state = 16, head_dim = 4, n_head = 3, n_group = 1, n_tokens = 5, n_seqs = 2;
    ggml_tensor *s = f32(d_state, head_dim, n_head, n_seqs), *x = f32(head_dim, n_head, n_tokens, n_seqs);
    ggml_tensor *dt = f32(n_head, n_tokens, n_seqs), *A = f32(1, n_head);
    ggml_tensor *B = f32(d_state, n_group, n_tokens, n_seqs), *C = f32(d_state, n_group, n_tokens, n_seqs);
    ggml_tensor * ids = i32(n_seqs);
    expect_node(ggml_ssm_scan(ctx(), s, x, dt, A, B, C, ids), GGML_OP_SSM_SCAN, GGML_TYPE_F32,
                {head_dim * n_head * n_tokens * n_seqs + d_state * head_dim * n_head * n_seqs, 1, 1, 1},
                {s, x, dt, A, B, C, ids});
    expect_rejected(ggml_ssm_scan(ctx(), s, x, dt, A, B, f32(d_state, 2, n_tokens, n_seqs), ids),
                    "ggml_ssm_scan", "B and C must have the same shape");
    expect_rejected(ggml_ssm_scan(ctx(), s, x, f32(n_head, n_tokens + 1, n_seqs), A, B, C, ids),
                    "ggml_ssm_scan", "dt must be [n_head, n_tokens, n_seqs]");
    expect_rejected(ggml_ssm_scan(ctx(), s, x, dt, f32(2, n_head), B, C, ids), "ggml_ssm_scan",
                    "A must be [1 or d_state, n_head]");
    expect_rejected(ggml_ssm_scan(ctx(), s, x, dt, A, B, C, i32(3)), "ggml_ssm_scan",
                    "ids must be an i32 vector of x.ne3 sequence indices");
}

TEST_F(AttentionOps, LinearAttentionsConcatenateOutputsAndStates) {
    const int64_t S = 4, H = 3, T = 5, n_seqs = 2;
    auto tok = [&] { return f32(S, H, T); };
    ggml_tensor *k = tok(), *v = tok(), *r = tok(), *tf = f32(S, H), *td = tok(),
                *state = f32(S * S * H, n_seqs);
    expect_node(ggml_rwkv_wkv6(ctx(), k, v, r, tf, td, state), GGML_OP_RWKV_WKV6, GGML_TYPE_F32,
                {S * H, T + S * n_seqs, 1, 1}, {k, v, r, tf, td, state});
    ggml_tensor *q = tok(), *g = tok();
    ggml_tensor * gla = ggml_gated_linear_attn(ctx(), k, v, q, g, state, 0.125f);
    expect_node(gla, GGML_OP_GATED_LINEAR_ATTN, GGML_TYPE_F32, {S * H, T + S * n_seqs, 1, 1},
                {k, v, q, g, state});
    EXPECT_EQ(params_of<ggml_ext_gated_linear_attn_params>(gla).scale, 0.125f);
    ggml_tensor *w = tok(), *a = tok(), *b = tok();
    expect_node(ggml_rwkv_wkv7(ctx(), r, w, k, v, a, b, state), GGML_OP_RWKV_WKV7, GGML_TYPE_F32,
                {S * H, T + S * n_seqs, 1, 1}, {r, w, k, v, a, b, state});

    expect_rejected(ggml_rwkv_wkv6(ctx(), k, f32(S, H, T + 1), r, tf, td, state), "ggml_rwkv_wkv6",
                    "the per-token inputs must be [S, H, n_tokens] as k");
    expect_rejected(ggml_gated_linear_attn(ctx(), k, v, q, g, f32(S * S * H + 1, n_seqs), 1.0f),
                    "ggml_gated_linear_attn", "state must hold S * S * H values per sequence");
    expect_rejected(ggml_rwkv_wkv7(ctx(), r, w, k, v, ggml_transpose(ctx(), f32(S, S)), b, state),
                    "ggml_rwkv_wkv7", "every input must be contiguous");
}

TEST_F(AttentionOps, GatedDeltaNet) {
    const int64_t S = 8, Hk = 2, Hv = 4, T = 3, n_seqs = 2;
    ggml_tensor *q = f32(S, Hk, T, n_seqs), *k = f32(S, Hk, T, n_seqs), *v = f32(S, Hv, T, n_seqs);
    ggml_tensor *g = f32(1, Hv, T, n_seqs), *beta = f32(1, Hv, T, n_seqs), *state = f32(S, S, Hv, n_seqs);
    ggml_tensor * r = ggml_gated_delta_net(ctx(), q, k, v, g, beta, state, 2);
    expect_node(r, GGML_OP_GATED_DELTA_NET, GGML_TYPE_F32, {S * Hv, T * n_seqs + 2 * S * n_seqs, 1, 1},
                {q, k, v, g, beta, state});
    EXPECT_EQ(params_of<ggml_ext_gated_delta_net_params>(r).n_states, 2);
    ggml_tensor * kda = ggml_gated_delta_net(ctx(), q, k, v, f32(S, Hv, T, n_seqs), beta, state, 1);
    ASSERT_NE(kda, nullptr) << error();
    // q and k may be shared by the sequences (ne3 a divisor of n_seqs), as in ggml.
    ggml_tensor * shared =
        ggml_gated_delta_net(ctx(), f32(S, Hk, T, 1), f32(S, Hk, T, 1), v, g, beta, state, 1);
    ASSERT_NE(shared, nullptr) << error();
    expect_rejected(ggml_gated_delta_net(ctx(), f32(S, Hk, T, 3), f32(S, Hk, T, 3), v, g, beta, state, 1),
                    "ggml_gated_delta_net", "k must be [S_v, H_k, n_tokens, a divisor of n_seqs]");

    expect_rejected(ggml_gated_delta_net(ctx(), q, k, v, g, beta, state, 0), "ggml_gated_delta_net",
                    "K (states kept) must be >= 1");
    expect_rejected(
        ggml_gated_delta_net(ctx(), f32(S, 3, T, n_seqs), f32(S, 3, T, n_seqs), v, g, beta, state, 1),
        "ggml_gated_delta_net", "v heads must be a multiple of k heads");
    expect_rejected(ggml_gated_delta_net(ctx(), q, k, v, g, f32(2, Hv, T, n_seqs), state, 1),
                    "ggml_gated_delta_net", "beta must be [1, H_v, n_tokens, n_seqs]");
    expect_rejected(ggml_gated_delta_net(ctx(), q, k, v, g, beta, f32(S, S, Hv, 1), 1),
                    "ggml_gated_delta_net", "state must be [S_v, S_v, H_v, n_seqs]");
}

TEST_F(AttentionOps, LightningIndexer) {
    ggml_tensor *q = f32(32, 4, 3, 2), *k = t(GGML_TYPE_F16, 32, 1, 16, 2), *w = f32(4, 3, 1, 2);
    ggml_tensor * mask = t(GGML_TYPE_F16, 16, 3, 1, 1);
    expect_node(ggml_lightning_indexer(ctx(), q, k, w, mask), GGML_OP_LIGHTNING_INDEXER, GGML_TYPE_F32,
                {16, 3, 1, 2}, {q, k, w, mask});
    expect_rejected(ggml_lightning_indexer(ctx(), q, k, w, f32(16, 3, 1, 1)), "ggml_lightning_indexer",
                    "mask must be f16");
    expect_rejected(ggml_lightning_indexer(ctx(), q, t(GGML_TYPE_F16, 32, 2, 16, 2), w, mask),
                    "ggml_lightning_indexer", "k must be [n_embd, 1, n_kv, q.ne3]");
    expect_rejected(ggml_lightning_indexer(ctx(), q, k, f32(4, 2, 1, 2), mask), "ggml_lightning_indexer",
                    "weights must be [q.ne1, q.ne2, 1, q.ne3]");
    expect_rejected(ggml_lightning_indexer(ctx(), q, k, w, t(GGML_TYPE_F16, 16, 3, 1, 3)),
                    "ggml_lightning_indexer", "mask must be [n_kv, q.ne2, 1, a divisor of q.ne3]");
}

TEST_F(AttentionOps, HyperConnections) {
    const int64_t hc = 4, n_embd = 6, T = 5;
    ggml_tensor *mixes = f32((2 + hc) * hc, T), *scale = f32(3), *base = f32((2 + hc) * hc);
    ggml_tensor * comb = ggml_dsv4_hc_comb(ctx(), mixes, scale, base, 1e-6f, 20);
    expect_node(comb, GGML_OP_DSV4_HC_COMB, GGML_TYPE_F32, {hc, hc, T, 1}, {mixes, scale, base});
    const auto p = params_of<ggml_ext_dsv4_hc_comb_params>(comb);
    EXPECT_EQ(p.eps, 1e-6f);
    EXPECT_EQ(p.n_iter, 20);
    ggml_tensor *x = f32(n_embd, hc, T), *weights = f32(hc, T);
    expect_node(ggml_dsv4_hc_pre(ctx(), x, weights), GGML_OP_DSV4_HC_PRE, GGML_TYPE_F32, {n_embd, T, 1, 1},
                {x, weights});
    ggml_tensor *y = f32(n_embd, T), *post = f32(hc, T);
    expect_node(ggml_dsv4_hc_post(ctx(), y, x, post, comb), GGML_OP_DSV4_HC_POST, GGML_TYPE_F32,
                {n_embd, hc, T, 1}, {y, x, post, comb});

    expect_rejected(ggml_dsv4_hc_comb(ctx(), f32(23, T), scale, f32(23), 1e-6f, 20), "ggml_dsv4_hc_comb",
                    "mixes must be [(2 + hc) * hc, n_tokens]");
    expect_rejected(ggml_dsv4_hc_comb(ctx(), mixes, f32(2), base, 1e-6f, 20), "ggml_dsv4_hc_comb",
                    "scale must be [3]");
    expect_rejected(ggml_dsv4_hc_comb(ctx(), mixes, scale, base, 1e-6f, 0), "ggml_dsv4_hc_comb",
                    "n_iter must be >= 1");
    expect_rejected(ggml_dsv4_hc_pre(ctx(), x, f32(hc, T + 1)), "ggml_dsv4_hc_pre",
                    "weights must be [hc, n_tokens]");
    expect_rejected(ggml_dsv4_hc_post(ctx(), y, x, post, f32(hc, hc - 1, T)), "ggml_dsv4_hc_post",
                    "comb must be [hc, hc, n_tokens]");
    expect_rejected(ggml_dsv4_hc_post(ctx(), f32(n_embd, T + 1), x, post, comb), "ggml_dsv4_hc_post",
                    "x must be [n_embd, n_tokens]");
}

}  // namespace
