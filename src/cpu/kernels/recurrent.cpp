// CPU kernels of the recurrent family: SSM_CONV (Mamba's causal convolution), SSM_SCAN (Mamba-1 and
// Mamba-2 selective scans), RWKV_WKV6, GATED_LINEAR_ATTN, RWKV_WKV7 and GATED_DELTA_NET (linear
// attentions with a matrix state per head). The formulas are docs/ops.md's.
//
// The recurrences are sequential over the tokens of a sequence, so the work is split over what is
// independent: (channel, sequence) rows for SSM_CONV, (head, sequence) pairs for SSM_SCAN and
// the matrix-state ops. Every state lives in the result from the first token on (the
// input state is copied there), so the ops need no scratch beyond a few rows. The row products
// (dot, scaled adds) are Highway code compiled for every target and chosen at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/recurrent.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace ggx::cpu::recurrent_simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum over i of a[i] * b[i].
float Dot(const float * a, const float * b, int64_t n) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    auto acc0 = hn::Zero(d), acc1 = hn::Zero(d);
    int64_t i = 0;
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
        acc0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), acc0);
        acc1 = hn::MulAdd(hn::LoadU(d, a + i + lanes), hn::LoadU(d, b + i + lanes), acc1);
    }
    float total = hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1)));
    for (; i < n; ++i)
        total += a[i] * b[i];
    return total;
}

// y[i] = y[i] * a + x[i] * b.
void Axpby(float * y, float a, const float * x, float b, int64_t n) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    const auto va = hn::Set(d, a), vb = hn::Set(d, b);
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(hn::MulAdd(hn::LoadU(d, x + i), vb, hn::Mul(hn::LoadU(d, y + i), va)), d, y + i);
    for (; i < n; ++i)
        y[i] = y[i] * a + x[i] * b;
}

// y[i] = y[i] * a + x[i] * b, then the sum over i of y[i] * q[i].
float AxpbyDot(float * y, float a, const float * x, float b, const float * q, int64_t n) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    const auto va = hn::Set(d, a), vb = hn::Set(d, b);
    auto acc = hn::Zero(d);
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const auto v = hn::MulAdd(hn::LoadU(d, x + i), vb, hn::Mul(hn::LoadU(d, y + i), va));
        hn::StoreU(v, d, y + i);
        acc = hn::MulAdd(v, hn::LoadU(d, q + i), acc);
    }
    float total = hn::GetLane(hn::SumOfLanes(d, acc));
    for (; i < n; ++i) {
        y[i] = y[i] * a + x[i] * b;
        total += y[i] * q[i];
    }
    return total;
}

// y[i] = y[i] * w[i] + x[i] * b.
void MulAxpy(float * y, const float * w, const float * x, float b, int64_t n) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    const auto vb = hn::Set(d, b);
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(hn::MulAdd(hn::LoadU(d, x + i), vb, hn::Mul(hn::LoadU(d, y + i), hn::LoadU(d, w + i))), d,
                   y + i);
    for (; i < n; ++i)
        y[i] = y[i] * w[i] + x[i] * b;
}

}  // namespace HWY_NAMESPACE
}  // namespace ggx::cpu::recurrent_simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/internal.h"
#include "cpu/kernels/common.h"

namespace ggx::cpu {

namespace recurrent_simd {
HWY_EXPORT(Dot);
HWY_EXPORT(Axpby);
HWY_EXPORT(AxpbyDot);
HWY_EXPORT(MulAxpy);
}  // namespace recurrent_simd

float dot_f32(const float * a, const float * b, int64_t n) {
    return HWY_DYNAMIC_DISPATCH(recurrent_simd::Dot)(a, b, n);
}
void axpby_f32(float * y, float a, const float * x, float b, int64_t n) {
    HWY_DYNAMIC_DISPATCH(recurrent_simd::Axpby)(y, a, x, b, n);
}

namespace {

float axpby_dot(float * y, float a, const float * x, float b, const float * q, int64_t n) {
    return HWY_DYNAMIC_DISPATCH(recurrent_simd::AxpbyDot)(y, a, x, b, q, n);
}

void mul_axpy(float * y, const float * w, const float * x, float b, int64_t n) {
    HWY_DYNAMIC_DISPATCH(recurrent_simd::MulAxpy)(y, w, x, b, n);
}

constexpr size_t kAlign = 64;

bool all_f32(const ggml_tensor * node, int n_src) {
    for (int i = 0; i < n_src; ++i)
        if (!node->src[i] || node->src[i]->type != GGML_TYPE_F32) return false;
    return node->type == GGML_TYPE_F32 && ggml_is_contiguous(node);
}

bool dense_rows(const ggml_tensor * t) { return t->nb[0] == sizeof(float); }

float * f32_at(const ggml_tensor * t, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) {
    return reinterpret_cast<float *>(element_at(t, i0, i1, i2, i3));
}

float * dst_floats(const ggml_tensor * node) { return static_cast<float *>(node->data); }

// Per-thread scratch of `floats` floats.
size_t per_thread_bytes(int64_t floats) {
    return core::align_up(static_cast<size_t>(floats) * sizeof(float), kAlign);
}
float * thread_scratch(const ComputeParams & params, int64_t floats) {
    return reinterpret_cast<float *>(static_cast<char *>(params.workspace) +
                                     per_thread_bytes(floats) * static_cast<size_t>(params.ith()));
}

// ----------------------------------------------------------------------------------------------
// SSM_CONV: r[c, t, s] = sum_k sx[t + k, c, s] * w[k, c].

bool ssm_conv_supports(const ggml_tensor * node) {
    const ggml_tensor *sx = node->src[0], *w = node->src[1];
    return node->op == GGML_OP_SSM_CONV && sx && w && is_float(sx->type) && is_float(w->type) &&
           node->type == GGML_TYPE_F32;
}

int64_t ssm_conv_row_floats(const ggml_tensor * node) { return node->src[0]->ne[0] + node->src[1]->ne[0]; }

size_t ssm_conv_workspace(const ggml_tensor * node, int n_threads) {
    return per_thread_bytes(ssm_conv_row_floats(node)) * static_cast<size_t>(n_threads);
}

void ssm_conv_compute(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *sx = node->src[0], *w = node->src[1];
    const int64_t d_conv = w->ne[0], channels = w->ne[1], n_t = node->ne[1];
    float * x = thread_scratch(params, ssm_conv_row_floats(node));
    float * taps = x + sx->ne[0];
    const auto [begin, end] = params.thread.chunk(channels * sx->ne[2]);
    for (int64_t row = begin; row < end; ++row) {
        const int64_t c = row % channels, s = row / channels;
        load_row(sx->type, row_at(sx, c, s), sx->nb[0], sx->ne[0], x);
        load_row(w->type, row_at(w, c), w->nb[0], d_conv, taps);
        for (int64_t t = 0; t < n_t; ++t)
            *f32_at(node, c, t, s) = dot_f32(x + t, taps, d_conv);
    }
}

// ----------------------------------------------------------------------------------------------
// SSM_SCAN: per state row (element i of head h's head_dim, sequence q), starting from
// s[:, i, h, ids[q]], for each token: dt' = softplus(dt[h]), h_n = h_n * exp(dt' * A[n or 0, h]) +
// B[n, g] * x[i, h] * dt', y = sum_n h_n * C[n, g], with group g = h / (n_head / n_group).

bool ssm_scan_supports(const ggml_tensor * node) {
    if (node->op != GGML_OP_SSM_SCAN || !all_f32(node, 6) || !node->src[6]) return false;
    const ggml_tensor *x = node->src[1], *B = node->src[4];
    return node->src[6]->type == GGML_TYPE_I32 && dense_rows(x) && B->ne[1] > 0 && x->ne[1] % B->ne[1] == 0;
}

// softplus as ggml computes it: the identity above 20.
float softplus(float v) { return v > 20.0f ? v : std::log1p(std::exp(v)); }

void ssm_scan_compute(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *s0 = node->src[0], *x = node->src[1], *dt = node->src[2], *A = node->src[3];
    const ggml_tensor *B = node->src[4], *C = node->src[5], *ids = node->src[6];
    const int64_t N = s0->ne[0], head_dim = x->ne[0], n_head = x->ne[1], n_t = x->ne[2], n_seqs = x->ne[3];
    const int64_t heads_per_group = n_head / B->ne[1];
    const bool mamba2 = A->ne[0] == 1;
    float * y = dst_floats(node);
    float * states = y + ggml_nelements(x);
    // Units are (head, sequence) pairs, so the step and the Mamba-2 decay are computed once per
    // token for the head's head_dim state rows.
    const auto [begin, end] = params.thread.chunk(n_head * n_seqs);
    for (int64_t unit = begin; unit < end && !params.should_stop(); ++unit) {
        const int64_t h = unit % n_head, q = unit / n_head, g = h / heads_per_group;
        const int32_t slot = static_cast<const int32_t *>(ids->data)[q];
        if (slot < 0 || slot >= s0->ne[3])
            return params.fail("ssm_scan: ids holds a state index out of range");
        float * state = states + unit * head_dim * N;
        for (int64_t i = 0; i < head_dim; ++i)
            std::memcpy(state + i * N, f32_at(s0, 0, i, h, slot), N * sizeof(float));
        const float * a = f32_at(A, 0, h);
        for (int64_t t = 0; t < n_t; ++t) {
            const float step = softplus(*f32_at(dt, h, t, q));
            const float decay = mamba2 ? std::exp(step * a[0]) : 0.0f;
            const float * b = f32_at(B, 0, g, t, q);
            const float * c = f32_at(C, 0, g, t, q);
            const float * xt = f32_at(x, 0, h, t, q);
            float * yt = y + head_dim * (h + n_head * (t + n_t * q));
            for (int64_t i = 0; i < head_dim; ++i) {
                float * row = state + i * N;
                const float x_dt = xt[i] * step;
                if (mamba2) {
                    axpby_f32(row, decay, b, x_dt, N);
                } else {
                    for (int64_t n = 0; n < N; ++n)
                        row[n] = row[n] * std::exp(step * a[n]) + b[n] * x_dt;
                }
                yt[i] = dot_f32(row, c, N);
            }
        }
    }
}

// ----------------------------------------------------------------------------------------------
// The RWKV-style linear attentions: inputs [S, H, T] with T = n_seqs * tokens per sequence, state
// S * S values per head and sequence (row i, column j at i * S + j); result rows of S * H floats,
// the T outputs and then the S * n_seqs state rows.

struct Linear {
    int64_t S, H, T, n_seqs, per_seq;
    Linear(const ggml_tensor * key, const ggml_tensor * state)
        : S(key->ne[0]), H(key->ne[1]), T(key->ne[2]), n_seqs(state->ne[1]), per_seq(T / n_seqs) {}
    int64_t C() const { return S * H; }
    // Offset of head h's vector of token t in a per-token input (and in the outputs).
    int64_t token(int64_t t, int64_t h) const { return t * C() + h * S; }
};

bool linear_supports(const ggml_tensor * node, ggml_op op, int n_src, int key) {
    if (node->op != op || !all_f32(node, n_src)) return false;
    const ggml_tensor *k = node->src[key], *state = node->src[n_src - 1];
    return state->ne[1] > 0 && k->ne[2] % state->ne[1] == 0;
}

// Calls step(state, at, h, y) for every token of this thread's share of the (sequence, head) pairs,
// in order: state is the pair's state (copied into the result first), at the offset of the token's
// head-h vectors in the per-token inputs, y the head's S outputs of the token (zeroed).
template <class Step>
void for_each_token(const ComputeParams & params, ggml_tensor * node, const Linear & p,
                    const ggml_tensor * s0, Step && step) {
    float * states = dst_floats(node) + p.T * p.C();
    const auto [begin, end] = params.thread.chunk(p.n_seqs * p.H);
    for (int64_t unit = begin; unit < end && !params.should_stop(); ++unit) {
        const int64_t q = unit / p.H, h = unit % p.H;
        const int64_t offset = (q * p.H + h) * p.S * p.S;
        float * state = states + offset;
        std::memcpy(state, static_cast<const float *>(s0->data) + offset, p.S * p.S * sizeof(float));
        for (int64_t t = q * p.per_seq; t < (q + 1) * p.per_seq; ++t) {
            const int64_t at = p.token(t, h);
            float * y = dst_floats(node) + at;
            std::fill(y, y + p.S, 0.0f);
            step(state, at, h, y);
        }
    }
}

const float * floats(const ggml_tensor * t) { return static_cast<const float *>(t->data); }

// RWKV_WKV6 (k, v, r, u = tf [S, H], w = td, state): y_j = sum_i r_i (u_i k_i v_j + S_ij);
// S_ij = S_ij w_i + k_i v_j.
bool wkv6_supports(const ggml_tensor * node) {
    return linear_supports(node, GGML_OP_RWKV_WKV6, 6, 0) &&
           ggml_nelements(node->src[3]) == node->src[0]->ne[0] * node->src[0]->ne[1];
}

void wkv6_compute(const ComputeParams & params, ggml_tensor * node) {
    const Linear p(node->src[0], node->src[5]);
    const float *k = floats(node->src[0]), *v = floats(node->src[1]), *r = floats(node->src[2]);
    const float *u = floats(node->src[3]), *w = floats(node->src[4]);
    for_each_token(params, node, p, node->src[5], [&](float * state, int64_t at, int64_t h, float * y) {
        for (int64_t i = 0; i < p.S; ++i) {
            float * row = state + i * p.S;
            axpby_f32(y, 1.0f, v + at, r[at + i] * u[h * p.S + i] * k[at + i], p.S);
            axpby_f32(y, 1.0f, row, r[at + i], p.S);
            axpby_f32(row, w[at + i], v + at, k[at + i], p.S);
        }
    });
}

// GATED_LINEAR_ATTN (k, v, q, g, state, scale): S_ij = S_ij exp(g_i) + k_i v_j;
// y_j = scale * sum_i q_i S_ij.
bool gla_supports(const ggml_tensor * node) { return linear_supports(node, GGML_OP_GATED_LINEAR_ATTN, 5, 0); }

void gla_compute(const ComputeParams & params, ggml_tensor * node) {
    const Linear p(node->src[0], node->src[4]);
    const float *k = floats(node->src[0]), *v = floats(node->src[1]), *qv = floats(node->src[2]);
    const float * g = floats(node->src[3]);
    const float scale = core::params<ggml_ext_gated_linear_attn_params>(node).scale;
    for_each_token(params, node, p, node->src[4], [&](float * state, int64_t at, int64_t, float * y) {
        for (int64_t i = 0; i < p.S; ++i) {
            float * row = state + i * p.S;
            axpby_f32(row, std::exp(g[at + i]), v + at, k[at + i], p.S);
            axpby_f32(y, 1.0f, row, qv[at + i] * scale, p.S);
        }
    });
}

// RWKV_WKV7 (r, w, k, v, a, b, state), row i a value index: sa = sum_j a_j S_ij;
// S_ij = S_ij w_j + v_i k_j + sa b_j; y_i = sum_j r_j S_ij.
bool wkv7_supports(const ggml_tensor * node) { return linear_supports(node, GGML_OP_RWKV_WKV7, 7, 2); }

void wkv7_compute(const ComputeParams & params, ggml_tensor * node) {
    const Linear p(node->src[2], node->src[6]);
    const float *r = floats(node->src[0]), *w = floats(node->src[1]), *k = floats(node->src[2]);
    const float *v = floats(node->src[3]), *a = floats(node->src[4]), *b = floats(node->src[5]);
    for_each_token(params, node, p, node->src[6], [&](float * state, int64_t at, int64_t, float * y) {
        for (int64_t i = 0; i < p.S; ++i) {
            float * row = state + i * p.S;
            const float sa = dot_f32(a + at, row, p.S);
            mul_axpy(row, w + at, k + at, v[at + i], p.S);
            y[i] = axpby_dot(row, 1.0f, b + at, sa, r + at, p.S);
        }
    });
}

// ----------------------------------------------------------------------------------------------
// GATED_DELTA_NET (q, k, v, g, beta, state, K): per value head h and sequence n, with q/k head
// h % H_k and sequence n / (n_seqs / q.ne3), state row j (a value index) over the key index i:
// S_ji *= exp(g) (or exp(g_i)); d_j = beta (v_j - sum_i S_ji k_i); S_ji += k_i d_j;
// o_j = sum_i S_ji q_i / sqrt(S). The result holds the outputs [S, H, T, n], then K state slots of
// [S, S, H, n]: slot m is the state after token T - 1 - m.

struct DeltaNet {
    const ggml_tensor *q, *k, *v, *g, *beta, *s0;
    int64_t S, H, T, n_seqs, K;
    bool per_key_gate;
    explicit DeltaNet(const ggml_tensor * node)
        : q(node->src[0]),
          k(node->src[1]),
          v(node->src[2]),
          g(node->src[3]),
          beta(node->src[4]),
          s0(node->src[5]),
          S(v->ne[0]),
          H(v->ne[1]),
          T(v->ne[2]),
          n_seqs(v->ne[3]),
          K(core::params<ggml_ext_gated_delta_net_params>(node).n_states),
          per_key_gate(g->ne[0] == S) {}
    int64_t state_floats() const { return S * S * H * n_seqs; }
};

bool gdn_supports(const ggml_tensor * node) {
    if (node->op != GGML_OP_GATED_DELTA_NET || !all_f32(node, 6)) return false;
    const DeltaNet p(node);
    // Slots older than the tokens are left unwritten by ggml; refused rather than left undefined.
    return dense_rows(p.q) && dense_rows(p.k) && dense_rows(p.v) && dense_rows(p.g) && p.q->ne[3] > 0 &&
           p.n_seqs % p.q->ne[3] == 0 && p.K <= std::max<int64_t>(p.T, 1);
}

size_t gdn_workspace(const ggml_tensor * node, int n_threads) {
    return per_thread_bytes(node->src[2]->ne[0]) * static_cast<size_t>(n_threads);
}

void gdn_compute(const ComputeParams & params, ggml_tensor * node) {
    const DeltaNet p(node);
    const float scale = 1.0f / std::sqrt(static_cast<float>(p.S));
    const int64_t Hk = p.q->ne[1], seqs_per_qk = p.n_seqs / p.q->ne[3];
    float * out = dst_floats(node);
    float * slots = out + p.S * p.H * p.T * p.n_seqs;
    float * decay = thread_scratch(params, p.S);
    const auto [begin, end] = params.thread.chunk(p.n_seqs * p.H);
    for (int64_t unit = begin; unit < end && !params.should_stop(); ++unit) {
        const int64_t n = unit / p.H, h = unit % p.H, hk = h % Hk, nk = n / seqs_per_qk;
        const int64_t head_offset = (n * p.H + h) * p.S * p.S;
        float * state = slots + head_offset;
        for (int64_t j = 0; j < p.S; ++j)
            std::memcpy(state + j * p.S, f32_at(p.s0, 0, j, h, n), p.S * sizeof(float));
        for (int64_t t = 0; t < p.T; ++t) {
            const float *qt = f32_at(p.q, 0, hk, t, nk), *kt = f32_at(p.k, 0, hk, t, nk);
            const float *vt = f32_at(p.v, 0, h, t, n), *gt = f32_at(p.g, 0, h, t, n);
            const float beta = *f32_at(p.beta, 0, h, t, n);
            if (p.per_key_gate) {
                for (int64_t i = 0; i < p.S; ++i)
                    decay[i] = std::exp(gt[i]);
            }
            const float e = p.per_key_gate ? 1.0f : std::exp(gt[0]);
            float * o = out + ((n * p.T + t) * p.H + h) * p.S;
            for (int64_t j = 0; j < p.S; ++j) {
                float * row = state + j * p.S;
                if (p.per_key_gate) mul_axpy(row, decay, kt, 0.0f, p.S);
                const float delta = (vt[j] - e * dot_f32(row, kt, p.S)) * beta;
                o[j] = axpby_dot(row, e, kt, delta, qt, p.S) * scale;
            }
            const int64_t slot = p.T - 1 - t;
            if (slot >= 1 && slot < p.K)
                std::memcpy(slots + slot * p.state_floats() + head_offset, state, p.S * p.S * sizeof(float));
        }
    }
}

}  // namespace

namespace kernels {
const Kernel ssm_conv = cpu_kernel<ssm_conv_supports, ssm_conv_workspace, ssm_conv_compute>("cpu.ssm_conv");
const Kernel ssm_scan = cpu_kernel<ssm_scan_supports, nullptr, ssm_scan_compute>("cpu.ssm_scan");
const Kernel rwkv_wkv6 = cpu_kernel<wkv6_supports, nullptr, wkv6_compute>("cpu.rwkv_wkv6");
const Kernel gated_linear_attn = cpu_kernel<gla_supports, nullptr, gla_compute>("cpu.gated_linear_attn");
const Kernel rwkv_wkv7 = cpu_kernel<wkv7_supports, nullptr, wkv7_compute>("cpu.rwkv_wkv7");
const Kernel gated_delta_net = cpu_kernel<gdn_supports, gdn_workspace, gdn_compute>("cpu.gated_delta_net");
}  // namespace kernels

}  // namespace ggx::cpu

#endif  // HWY_ONCE
