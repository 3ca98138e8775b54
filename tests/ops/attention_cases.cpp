// ggx-ops case table: FLASH_ATTN_EXT over head sizes (Dv != D too, up to 576), query and key counts
// (up to 65,536 keys), grouped
// heads, batches, K/V dtypes, masks (none, shared F16 with -inf, per-head F32), logit softcap, ALiBi,
// sinks (with the precision setter) and strided/permuted operands; LIGHTNING_INDEXER and the DeepSeek-V4
// hyper-connection ops DSV4_HC_COMB, DSV4_HC_PRE and DSV4_HC_POST.
#include <cmath>
#include <utility>
#include <vector>

#include "ggx-ops/case.h"

namespace ggx::ops {

namespace {

struct Attn {
    int64_t d, dv, n_q, n_kv, h, hk, b, bk;
    ggml_type k_type, v_type;
    int mask;  // 0 none, 1 shared F16 [n_kv, n_q + 2], 2 per-head F32 [n_kv, n_q, h, b]
    float softcap, max_bias;
    Layout q_layout, kv_layout;
    bool sinks = false;  // ggml_flash_attn_ext_add_sinks, with ggml_flash_attn_ext_set_prec(F32)
};

std::string describe(const Attn & a) {
    static const char * masks[] = {"none", "f16-shared", "f32-per-head"};
    return "q=" + str(Shape{a.d, a.n_q, a.h, a.b}) + " k=" + str(Shape{a.d, a.n_kv, a.hk, a.bk}) + " dv " +
           std::to_string(a.dv) + " " + str(a.k_type) + "," + str(a.v_type) + " mask " + masks[a.mask] +
           " softcap " + str(a.softcap) + " max_bias " + str(a.max_bias) + " q:" + layout_name(a.q_layout) +
           " kv:" + layout_name(a.kv_layout) + (a.sinks ? " sinks prec f32" : "");
}

ggml_tensor * build(Graph & g, const Attn & a) {
    ggml_tensor * q = g.input(GGML_TYPE_F32, {a.d, a.n_q, a.h, a.b}, a.q_layout);
    ggml_tensor * k = g.input(a.k_type, {a.d, a.n_kv, a.hk, a.bk}, a.kv_layout);
    ggml_tensor * v = g.input(a.v_type, {a.dv, a.n_kv, a.hk, a.bk}, a.kv_layout);
    ggml_tensor * mask = nullptr;
    if (a.mask == 1)
        mask = g.input(GGML_TYPE_F16, {a.n_kv, a.n_q + 2, 1, 1}, Layout::Contiguous, Gen::mask());
    if (a.mask == 2)
        mask = g.input(GGML_TYPE_F32, {a.n_kv, a.n_q, a.h, a.b}, Layout::Contiguous, Gen::mask());
    const float scale = a.softcap > 0.0f ? 1.0f : 1.0f / std::sqrt(static_cast<float>(a.d));
    ggml_tensor * r = ggml_flash_attn_ext(g.ctx(), q, k, v, mask, scale, a.max_bias, a.softcap);
    if (r && a.sinks) {
        ggml_flash_attn_ext_add_sinks(
            r, g.input(GGML_TYPE_F32, {a.h, 1, 1, 1}, Layout::Contiguous, Gen::uniform(-3.0, 3.0)));
        ggml_flash_attn_ext_set_prec(r, GGML_PREC_F32);
    }
    return r;
}

void add(CaseList & list, const Attn & a) {
    list.add(GGML_OP_FLASH_ATTN_EXT, describe(a), [a](Graph & g) { return build(g, a); });
}

constexpr std::pair<ggml_type, ggml_type> kKvTypes[] = {
    {GGML_TYPE_F16, GGML_TYPE_F16}, {GGML_TYPE_F32, GGML_TYPE_F32}, {GGML_TYPE_F32, GGML_TYPE_F16}};
constexpr std::pair<Layout, Layout> kLayouts[] = {{Layout::Contiguous, Layout::Contiguous},
                                                  {Layout::Permuted, Layout::Strided},
                                                  {Layout::Strided, Layout::Contiguous}};

// Sizes swept with the remaining options rotated, so every option meets many sizes.
void add_size_sweep(CaseList & list) {
    const std::pair<int64_t, int64_t> heads[] = {{32, 32}, {64, 64}, {40, 24}};
    const std::pair<int64_t, int64_t> tokens[] = {{1, 7}, {3, 32}, {8, 65}, {1, 65}};
    const std::pair<int64_t, int64_t> groups[] = {{1, 1}, {4, 2}, {3, 1}};
    int i = 0;
    for (auto [d, dv] : heads) {
        for (auto [n_q, n_kv] : tokens) {
            for (auto [h, hk] : groups) {
                for (auto [tk, tv] : kKvTypes) {
                    const int64_t b = 1 + i % 2, bk = i % 4 == 1 ? 1 : b;
                    const auto [lq, lkv] = kLayouts[i % 3];
                    add(list, {d, dv, n_q, n_kv, h, hk, b, bk, tk, tv, i % 3, (i / 3) % 2 ? 3.0f : 0.0f,
                               (i / 2) % 2 ? 8.0f : 0.0f, lq, lkv});
                    ++i;
                }
            }
        }
    }
}

// Query and key counts past the tiled path's thresholds, with remainders.
void add_tile_sweep(CaseList & list) {
    const std::pair<int64_t, int64_t> tokens[] = {{16, 96}, {17, 97}, {64, 200}, {70, 33}, {130, 257}};
    int i = 0;
    for (auto [n_q, n_kv] : tokens) {
        for (auto [tk, tv] : kKvTypes) {
            const auto [lq, lkv] = kLayouts[i % 3];
            add(list, {64, 64, n_q, n_kv, 2, 1, 1, 1, tk, tv, 1 + i % 2, i % 4 == 3 ? 3.0f : 0.0f,
                       (i / 2) % 2 ? 8.0f : 0.0f, lq, lkv});
            add(list, {40, 24, n_q, n_kv, 3, 3, 1, 1, tk, tv, i % 3, 0.0f, 0.0f, kLayouts[(i + 1) % 3].first,
                       kLayouts[(i + 1) % 3].second});
            ++i;
        }
    }
}

// Every option combination on one size.
void add_option_sweep(CaseList & list) {
    for (auto [tk, tv] : kKvTypes) {
        for (int mask = 0; mask < 3; ++mask) {
            for (float softcap : {0.0f, 3.0f}) {
                for (float max_bias : {0.0f, 8.0f}) {
                    for (auto [lq, lkv] : kLayouts)
                        add(list, {64, 64, 5, 33, 4, 2, 2, 2, tk, tv, mask, softcap, max_bias, lq, lkv});
                }
            }
        }
    }
}

// Sinks on the row path (n_q < 16) and the tile path, with every mask, softcap and ALiBi, K/V types.
void add_sink_sweep(CaseList & list) {
    int i = 0;
    for (int64_t n_q : {1, 5, 17, 70}) {
        for (int mask = 0; mask < 3; ++mask) {
            const auto [tk, tv] = kKvTypes[i % 3];
            const auto [lq, lkv] = kLayouts[i % 3];
            add(list, {64, 40, n_q, 33 + 32 * (i % 2), 4, 2, 1 + i % 2, 1, tk, tv, mask,
                       i % 4 == 1 ? 3.0f : 0.0f, i % 4 == 2 ? 8.0f : 0.0f, lq, lkv, true});
            ++i;
        }
    }
}

// LIGHTNING_INDEXER over head sizes, key counts past one key block of the kernel (64), batches
// sharing a mask or not, F16/F32 keys (dense or strided) and queries in every layout.
void add_indexer_cases(CaseList & list) {
    struct Indexer {
        int64_t e, h, n_batch, b, n_kv;
    };
    const Indexer shapes[] = {{32, 4, 3, 1, 16}, {17, 3, 5, 2, 70}, {64, 2, 1, 1, 1},  {8, 1, 2, 3, 129},
                              {1, 1, 1, 1, 1},   {5, 7, 4, 2, 64},  {16, 2, 9, 1, 65}, {3, 5, 2, 4, 200}};
    for (const Indexer & c : shapes) {
        const std::vector<int64_t> mask_batches =
            c.b == 1 ? std::vector<int64_t>{1} : std::vector{int64_t{1}, c.b};
        for (int64_t mask_b : mask_batches)
            for (ggml_type k_type : {GGML_TYPE_F16, GGML_TYPE_F32})
                for (Layout k_layout : {Layout::Contiguous, Layout::Strided})
                    for (Layout q_layout : kAllLayouts) {
                        list.add(
                            GGML_OP_LIGHTNING_INDEXER,
                            "q=" + str(Shape{c.e, c.h, c.n_batch, c.b}) + " kv " + std::to_string(c.n_kv) +
                                " " + str(k_type) + " mask batches " + std::to_string(mask_b) +
                                " q:" + layout_name(q_layout) + " k:" + layout_name(k_layout),
                            [=](Graph & g) {
                                ggml_tensor * q =
                                    g.input(GGML_TYPE_F32, {c.e, c.h, c.n_batch, c.b}, q_layout);
                                ggml_tensor * k = g.input(k_type, {c.e, 1, c.n_kv, c.b}, k_layout);
                                ggml_tensor * w = g.input(GGML_TYPE_F32, {c.h, c.n_batch, 1, c.b});
                                ggml_tensor * mask = g.input(GGML_TYPE_F16, {c.n_kv, c.n_batch, 1, mask_b},
                                                             Layout::Contiguous, Gen::mask());
                                return ggml_lightning_indexer(g.ctx(), q, k, w, mask);
                            });
                    }
    }
}

// The hyper-connection ops: hc streams of 1..5, Sinkhorn iterations and eps, mixes in each matrix
// layout; PRE and POST over row lengths, streams and tokens with every input layout.
void add_hyper_connection_cases(CaseList & list) {
    const ggml_type f32 = GGML_TYPE_F32;
    for (int64_t hc : {1, 2, 3, 4, 5})
        for (int64_t n_t : {1, 5})
            for (auto [eps, n_iter] : {std::pair{1e-6f, 20}, {0.01f, 1}, {0.0f, 3}, {0.1f, 5}})
                for (Layout layout : {Layout::Contiguous, Layout::Strided, Layout::Transposed}) {
                    const int64_t width = (2 + hc) * hc;
                    list.add(GGML_OP_DSV4_HC_COMB,
                             "hc " + std::to_string(hc) + " tokens " + std::to_string(n_t) + " eps " +
                                 str(eps) + " iterations " + std::to_string(n_iter) + " " +
                                 layout_name(layout),
                             [=](Graph & g) {
                                 return ggml_dsv4_hc_comb(
                                     g.ctx(), g.input(f32, {width, n_t, 1, 1}, layout),
                                     g.input(f32, {3, 1, 1, 1}, Layout::Contiguous, Gen::uniform(0.5, 2.0)),
                                     g.input(f32, {width, 1, 1, 1}), eps, n_iter);
                             });
                }
    for (int64_t e : {1, 7, 33, 64})
        for (int64_t hc : {1, 2, 3, 4})
            for (int64_t n_t : {1, 3})
                for (Layout layout : kAllLayouts) {
                    const std::string shape = "x=" + str(Shape{e, hc, n_t, 1}) + " " + layout_name(layout);
                    list.add(GGML_OP_DSV4_HC_PRE, shape, [=](Graph & g) {
                        return ggml_dsv4_hc_pre(g.ctx(), g.input(f32, {e, hc, n_t, 1}, layout),
                                                g.input(f32, {hc, n_t, 1, 1}, layout));
                    });
                    list.add(GGML_OP_DSV4_HC_POST, shape, [=](Graph & g) {
                        return ggml_dsv4_hc_post(g.ctx(), g.input(f32, {e, n_t, 1, 1}, layout),
                                                 g.input(f32, {e, hc, n_t, 1}, layout),
                                                 g.input(f32, {hc, n_t, 1, 1}),
                                                 g.input(f32, {hc, hc, n_t, 1}, layout));
                    });
                }
}

// The head sizes of ggml's models above the sweep's (Gemma 256, DeepSeek's MLA 576 with Dv 512,
// ...), on the row path (one query) and the tile path (17), with a shared mask.
void add_wide_head_cases(CaseList & list) {
    const std::pair<int64_t, int64_t> heads[] = {{80, 80},   {96, 96},   {112, 112}, {128, 128},
                                                 {192, 128}, {256, 256}, {576, 512}};
    int i = 0;
    for (auto [d, dv] : heads) {
        for (int64_t n_q : {1, 17}) {
            const auto [tk, tv] = kKvTypes[i % 3];
            add(list,
                {d, dv, n_q, 77, 2, 1, 1, 1, tk, tv, 1, 0.0f, 0.0f, Layout::Contiguous, Layout::Contiguous});
            ++i;
        }
    }
}

// Long key ranges (the split-and-combine path of devices that split kv): 16,384 and 65,536 keys,
// F16 K/V, with and without a shared mask; and sinks over split keys.
void add_long_kv_cases(CaseList & list) {
    const auto f16 = GGML_TYPE_F16;
    for (int64_t n_kv : {16384, 65536}) {
        for (int mask : {0, 1})
            add(list, {128, 128, 2, n_kv, 2, 1, 1, 1, f16, f16, mask, 0.0f, 0.0f, Layout::Contiguous,
                       Layout::Contiguous});
    }  // Sinks where the keys are split (a decoding query over 4,096 keys).
    add(list,
        {64, 64, 1, 4096, 4, 2, 1, 1, f16, f16, 1, 0.0f, 0.0f, Layout::Contiguous, Layout::Contiguous, true});
}

// Perf: head size 128, 32 query heads over 8 K/V heads, F16 K/V; one query (decoding) and 512
// queries with a shared mask, over 512 and 4096 keys.
void add_perf_cases(CaseList & list) {
    const auto f16 = GGML_TYPE_F16;
    const auto dense = Layout::Contiguous;
    for (int64_t n_q : {1, 512}) {
        for (int64_t n_kv : {512, 4096}) {
            const int mask = n_q > 1 ? 1 : 0;
            const Attn a = {128, 128, n_q, n_kv, 32, 8, 1, 1, f16, f16, mask, 0.0f, 0.0f, dense, dense};
            list.add_perf(GGML_OP_FLASH_ATTN_EXT,
                          format("perf d128 h32/8 q%lld kv%lld f16 %s", static_cast<long long>(n_q),
                                 static_cast<long long>(n_kv), mask ? "mask" : "no-mask"),
                          4.0 * 128 * n_q * n_kv * 32, [a](Graph & g) { return build(g, a); });
        }
    }
}

}  // namespace

void add_attention_cases(CaseList & list) {
    add_size_sweep(list);
    add_tile_sweep(list);
    add_option_sweep(list);
    add_sink_sweep(list);
    add_wide_head_cases(list);
    add_long_kv_cases(list);
    add_indexer_cases(list);
    add_hyper_connection_cases(list);
    add_perf_cases(list);
}

}  // namespace ggx::ops
