// ggx-ops case table: SSM_CONV (every float type of sx and weight, every sx layout, transposed
// weights, no output token), SSM_SCAN (Mamba-1 and Mamba-2 forms, groups, several sequences with
// permuted and spare state slots, softplus above its threshold), RWKV_WKV6, GATED_LINEAR_ATTN and
// RWKV_WKV7 (odd head sizes, several sequences, scales) and GATED_DELTA_NET (grouped q/k heads, q/k
// shared by sequences, scalar and per-key gates, state snapshots, strided rows, and their cross
// product over small sizes); perf cases for SSM_SCAN and GATED_DELTA_NET.
#include <utility>
#include <vector>

#include "ggx-ops/case.h"

namespace ggx::ops {

namespace {

std::string ll(int64_t v) { return std::to_string(static_cast<long long>(v)); }

struct Conv {
    int64_t d_conv, n_t, channels, n_s;
};

void add_ssm_conv(CaseList & list, const Conv & c, ggml_type type, Layout layout, ggml_type w_type,
                  Layout w_layout) {
    const Shape sx_ne{c.d_conv - 1 + c.n_t, c.channels, c.n_s, 1};
    list.add(GGML_OP_SSM_CONV,
             "sx=" + str(sx_ne) + " " + str(type) + " w " + str(w_type) + " d_conv " + ll(c.d_conv) + " " +
                 layout_name(layout) + " w:" + layout_name(w_layout),
             [=](Graph & g) {
                 return ggml_ssm_conv(g.ctx(), g.input(type, sx_ne, layout),
                                      g.input(w_type, {c.d_conv, c.channels, 1, 1}, w_layout));
             });
}

// Every float type of sx with a weight of its type or F32, each in every layout (the weight dense or
// transposed); one-tap and wide kernels, no output token, one channel, several sequences.
void add_ssm_conv_cases(CaseList & list) {
    const Conv convs[] = {{4, 5, 16, 2}, {4, 1, 7, 1},   {1, 3, 5, 2}, {3, 0, 4, 1}, {5, 9, 33, 3},
                          {2, 2, 1, 1},  {4, 16, 64, 1}, {3, 7, 3, 4}, {7, 2, 5, 1}, {4, 3, 17, 2}};
    for (const Conv & c : convs) {
        for (ggml_type type : kFloatTypes) {
            const std::vector<ggml_type> w_types =
                type == GGML_TYPE_F32 ? std::vector{type} : std::vector{type, GGML_TYPE_F32};
            for (ggml_type w_type : w_types)
                for (Layout layout : kAllLayouts)
                    for (Layout w_layout : {Layout::Contiguous, Layout::Transposed})
                        add_ssm_conv(list, c, type, layout, w_type, w_layout);
        }
    }
}

struct Scan {
    int64_t d_state, head_dim, n_head, n_group, n_t, n_seqs;
    bool mamba2;
    Gen dt;
    int64_t spare_slots = 1;  // state slots beyond n_seqs that no id names
};

ggml_tensor * build_scan(Graph & g, const Scan & s, Layout x_layout) {
    const int64_t n_rs = s.n_seqs + s.spare_slots;
    const ggml_type f32 = GGML_TYPE_F32;
    ggml_tensor * state = g.input(f32, {s.d_state, s.head_dim, s.n_head, n_rs});
    ggml_tensor * x = g.input(f32, {s.head_dim, s.n_head, s.n_t, s.n_seqs}, x_layout);
    ggml_tensor * dt = g.input(f32, {s.n_head, s.n_t, s.n_seqs, 1}, Layout::Contiguous, s.dt);
    ggml_tensor * A = g.input(f32, {s.mamba2 ? 1 : s.d_state, s.n_head, 1, 1}, Layout::Contiguous,
                              Gen::uniform(-2.0, -0.1));
    ggml_tensor * B = g.input(f32, {s.d_state, s.n_group, s.n_t, s.n_seqs});
    ggml_tensor * C = g.input(f32, {s.d_state, s.n_group, s.n_t, s.n_seqs});
    ggml_tensor * ids = g.input(GGML_TYPE_I32, {s.n_seqs, 1, 1, 1}, Layout::Contiguous, Gen::distinct(n_rs));
    return ggml_ssm_scan(g.ctx(), state, x, dt, A, B, C, ids);
}

void add_ssm_scan_cases(CaseList & list) {
    const Gen dt = Gen::uniform(-3.0, 3.0), large_dt = Gen::uniform(15.0, 25.0);
    const Scan scans[] = {
        {16, 1, 8, 1, 5, 1, false, dt},      {16, 1, 6, 1, 1, 3, false, dt},
        {5, 1, 3, 1, 4, 2, false, large_dt}, {16, 8, 4, 2, 5, 2, true, dt},
        {16, 8, 4, 1, 1, 1, true, dt},       {7, 3, 6, 3, 6, 3, true, dt},
        {32, 4, 2, 2, 3, 1, true, large_dt}, {16, 8, 4, 4, 0, 2, true, dt},
        {1, 1, 4, 1, 3, 2, false, dt},       {33, 1, 5, 1, 7, 1, false, dt},
        {16, 1, 1, 1, 0, 1, false, dt},      {8, 1, 17, 1, 2, 4, false, dt},
        {1, 1, 1, 1, 1, 1, true, dt},        {16, 1, 4, 2, 3, 2, true, dt},
        {8, 5, 6, 6, 4, 1, true, dt},        {64, 2, 3, 1, 2, 2, true, dt},
        {4, 16, 2, 2, 1, 5, true, large_dt},
    };
    for (Scan s : scans) {
        for (int64_t spare : {1, 4}) {
            s.spare_slots = spare;
            for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
                list.add(GGML_OP_SSM_SCAN,
                         std::string(s.mamba2 ? "mamba2" : "mamba1") + " d_state " + ll(s.d_state) +
                             " x=" + str(Shape{s.head_dim, s.n_head, s.n_t, s.n_seqs}) + " groups " +
                             ll(s.n_group) + " slots " + ll(s.n_seqs + spare) +
                             (s.dt.lo > 10.0 ? " dt>20" : "") + " x:" + layout_name(layout),
                         [=](Graph & g) { return build_scan(g, s, layout); });
            }
        }
    }
}

struct Linear {
    int64_t S, H, n_t, n_seqs;
};
// n_t counts the tokens of all sequences together (a multiple of n_seqs).
constexpr Linear kLinear[] = {{8, 2, 4, 1}, {16, 3, 6, 2}, {5, 2, 3, 3}, {1, 4, 2, 1},
                              {8, 1, 0, 2}, {2, 1, 1, 1},  {3, 5, 8, 2}, {32, 1, 3, 1},
                              {7, 3, 4, 4}, {64, 2, 2, 1}, {4, 6, 6, 3}, {9, 1, 10, 2}};

std::string describe(const Linear & l) {
    return "S " + ll(l.S) + " H " + ll(l.H) + " tokens " + ll(l.n_t) + " seqs " + ll(l.n_seqs);
}

void add_linear_attention_cases(CaseList & list) {
    const ggml_type f32 = GGML_TYPE_F32;
    const Gen decay = Gen::uniform(0.5, 1.0), small = Gen::uniform(-0.3, 0.3);
    for (const Linear & l : kLinear) {
        const Shape token{l.S, l.H, l.n_t, 1}, state{l.S * l.S * l.H, l.n_seqs, 1, 1};
        list.add(GGML_OP_RWKV_WKV6, describe(l), [=](Graph & g) {
            return ggml_rwkv_wkv6(g.ctx(), g.input(f32, token), g.input(f32, token), g.input(f32, token),
                                  g.input(f32, {l.S, l.H, 1, 1}),
                                  g.input(f32, token, Layout::Contiguous, decay), g.input(f32, state));
        });
        for (float scale : {1.0f, 0.25f, 3.0f}) {
            list.add(GGML_OP_GATED_LINEAR_ATTN, describe(l) + " scale " + str(scale), [=](Graph & g) {
                return ggml_gated_linear_attn(
                    g.ctx(), g.input(f32, token), g.input(f32, token), g.input(f32, token),
                    g.input(f32, token, Layout::Contiguous, Gen::uniform(-1.0, 0.0)), g.input(f32, state),
                    scale);
            });
        }
        list.add(GGML_OP_RWKV_WKV7, describe(l), [=](Graph & g) {
            return ggml_rwkv_wkv7(g.ctx(), g.input(f32, token),
                                  g.input(f32, token, Layout::Contiguous, decay), g.input(f32, token),
                                  g.input(f32, token), g.input(f32, token, Layout::Contiguous, small),
                                  g.input(f32, token, Layout::Contiguous, small), g.input(f32, state));
        });
    }
}

struct Delta {
    int64_t S, H, Hk, n_t, n_seqs, qk_seqs, K;
    bool per_key_gate;
    Layout layout;
};

ggml_tensor * build_delta(Graph & g, const Delta & d) {
    const ggml_type f32 = GGML_TYPE_F32;
    ggml_tensor * q = g.input(f32, {d.S, d.Hk, d.n_t, d.qk_seqs}, d.layout);
    ggml_tensor * k = g.input(f32, {d.S, d.Hk, d.n_t, d.qk_seqs}, d.layout);
    ggml_tensor * v = g.input(f32, {d.S, d.H, d.n_t, d.n_seqs}, d.layout);
    ggml_tensor * gate = g.input(f32, {d.per_key_gate ? d.S : 1, d.H, d.n_t, d.n_seqs}, Layout::Contiguous,
                                 Gen::uniform(-1.0, 0.0));
    ggml_tensor * beta = g.input(f32, {1, d.H, d.n_t, d.n_seqs}, Layout::Contiguous, Gen::uniform(0.0, 1.0));
    ggml_tensor * state = g.input(f32, {d.S, d.S, d.H, d.n_seqs});
    return ggml_gated_delta_net(g.ctx(), q, k, v, gate, beta, state, d.K);
}

void add_gated_delta_net(CaseList & list, const Delta & d) {
    list.add(GGML_OP_GATED_DELTA_NET,
             "S " + ll(d.S) + " H " + ll(d.H) + "/" + ll(d.Hk) + " tokens " + ll(d.n_t) + " seqs " +
                 ll(d.n_seqs) + " qk seqs " + ll(d.qk_seqs) + " K " + ll(d.K) +
                 (d.per_key_gate ? " per-key gate " : " scalar gate ") + layout_name(d.layout),
             [=](Graph & g) { return build_delta(g, d); });
}

void add_gated_delta_net_cases(CaseList & list) {
    const Layout dense = Layout::Contiguous, strided = Layout::Strided;
    const Delta deltas[] = {
        {8, 4, 2, 4, 1, 1, 1, false, dense},   {16, 4, 4, 3, 2, 2, 1, true, strided},
        {5, 3, 1, 5, 2, 1, 3, false, strided}, {8, 2, 2, 4, 1, 1, 4, true, dense},
        {16, 6, 3, 1, 3, 3, 1, false, dense},  {4, 2, 1, 0, 2, 2, 1, true, dense},
        {32, 2, 1, 6, 1, 1, 2, false, dense},
    };
    for (const Delta & d : deltas)
        add_gated_delta_net(list, d);
    // Every combination of head size, value/key heads, tokens, sequences (q/k batches one per sequence,
    // one per two, or one for all), states kept (up to the tokens), gate kind and layout.
    const std::pair<int64_t, int64_t> heads[] = {{1, 1}, {4, 2}, {3, 3}, {6, 2}};
    const std::pair<int64_t, int64_t> seqs[] = {{1, 1}, {2, 2}, {4, 2}, {3, 1}};
    for (int64_t S : {1, 5, 16})
        for (auto [H, Hk] : heads)
            for (int64_t n_t : {1, 5})
                for (auto [n_seqs, qk_seqs] : seqs)
                    for (int64_t K : {1, 3}) {
                        if (K > n_t) continue;
                        for (bool per_key_gate : {false, true})
                            for (Layout layout : {dense, strided})
                                add_gated_delta_net(
                                    list, {S, H, Hk, n_t, n_seqs, qk_seqs, K, per_key_gate, layout});
                    }
}

// Perf: Mamba-2 prefill (d_state 128, 24 heads of 64, 256 tokens) and a Qwen3-Next-like gated delta
// net (head size 128, 32 value heads over 16 key heads, 256 tokens). Flops per state element and
// token: SSM_SCAN 5 (update and read-out), GATED_DELTA_NET 7 (decay, two dots, update).
void add_perf_cases(CaseList & list) {
    const Scan scan{128, 64, 24, 1, 256, 1, true, Gen::uniform(-3.0, 3.0)};
    list.add_perf(GGML_OP_SSM_SCAN, "perf mamba2 d_state 128 h24x64 t256", 5.0 * 128 * 64 * 24 * 256,
                  [scan](Graph & g) { return build_scan(g, scan, Layout::Contiguous); });
    const Delta delta{128, 32, 16, 256, 1, 1, 1, false, Layout::Contiguous};
    list.add_perf(GGML_OP_GATED_DELTA_NET, "perf S128 h32/16 t256", 7.0 * 128 * 128 * 32 * 256,
                  [delta](Graph & g) { return build_delta(g, delta); });
}

}  // namespace

void add_recurrent_cases(CaseList & list) {
    add_ssm_conv_cases(list);
    add_ssm_scan_cases(list);
    add_linear_attention_cases(list);
    add_gated_delta_net_cases(list);
    add_perf_cases(list);
}

}  // namespace ggx::ops
