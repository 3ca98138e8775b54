// CPU kernels of sd.sage_attn.v1 and sd.sol_attn.v1 (sd-ops.md 5; the algorithms are written down in
// docs/sd-pack.md "Sage and Sol attention"). The spec has these operators on CUDA only; the CPU
// kernels compute the same algorithms so that the operators run, and are tested, everywhere.
//
// Sage (SageAttention-2 style), per batch item and kv head: the mean of K over its tokens per
// channel (in double, rounded to F32) is subtracted from every key (smoothing: q.(k - m) differs from
// q.k by q.m, the same for every key of a query row, so the softmax is unchanged); Q and the smoothed
// K are quantized to INT8 per block of 64 tokens of one head (scale = absmax / 127, codes
// round-half-even(clamp(x / scale, +-127))); QK^T is an exact int32 dot scaled back by
// q_scale * k_scale * scale in F32; the softmax runs online in F32 with a running max per query
// row; P stays F32 and V is widened exactly from F16, so P.V accumulates in F32.
//
// Sol, per batch item and head: KV tiles and query blocks of 64 tokens, each summarised by its mean
// (computed in double); the tile scores of a query block are s_j = scale * qbar . kbar_j (double);
// a tile is kept exact when its share T exp(s_j - max s) / sum_i n_i exp(s_i - max s) is >= tau,
// when it is the best-scored tile, or when the sequence has at most kSolDenseTiles tiles; every
// other tile enters each query's online softmax as one pooled entry: n_j tokens of logit
// scale * q . kbar_j and value vbar_j. Exact tiles as in dense attention, in F32.
//
// Work: one phase prepares per kv head (Sage: smoothing, K codes, V in F32; Sol: summaries and the
// tile selection), a second computes blocks of 64 query rows of one head; both take their items from
// an atomic counter on the pool's threads (ggml_ext_cpu_parallel_v1) and poll should_stop per item.
// The dot products, exponentials and P.V rows run on Highway vectors (dynamic dispatch).

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/attention.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include <ggml-ext.h>
#include <ggml.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/attention.h"
#include "common/pack.h"

#ifndef SD_ATTENTION_CPU_SHARED
#define SD_ATTENTION_CPU_SHARED
namespace sd::attention::cpu {

inline const ggml_ext_cpu_parallel_v1 * g_parallel = nullptr;

inline size_t align64(size_t x) { return (x + 63) & ~size_t(63); }
inline int64_t blocks_of(int64_t n, int64_t block) { return (n + block - 1) / block; }

// The shapes of an attention node: q [d, tq, hq, b], k/v [d, tk, hkv, b], out [d, hq, tq, b].
struct Dims {
    int64_t d, tq, hq, tk, hkv, b;
};

inline Dims dims_of(const ggml_tensor * node) {
    const ggml_tensor *q = node->src[0], *k = node->src[1];
    return {q->ne[0], q->ne[1], q->ne[2], k->ne[1], k->ne[2], q->ne[3]};
}

// Workspace of a Sage node: per kv head (b * hkv of them) the K codes (whole blocks), K block
// scales and V in F32; then the Q codes of every query head.
struct SageWorkspace {
    size_t kcodes, kscales, v32, qcodes, total;
    size_t kcodes_per, kscales_per, v32_per;  // elements per kv head
};

inline SageWorkspace sage_workspace(const Dims & s) {
    SageWorkspace w{};
    const int64_t groups = s.b * s.hkv, heads = s.b * s.hq;
    w.kcodes_per = size_t(blocks_of(s.tk, kSageBlock) * kSageBlock * s.d);
    w.kscales_per = size_t(blocks_of(s.tk, kSageBlock));
    w.v32_per = size_t(s.tk * s.d);
    size_t at = 0;
    w.kcodes = at;
    at += align64(w.kcodes_per * size_t(groups));
    w.kscales = at;
    at += align64(sizeof(float) * w.kscales_per * size_t(groups));
    w.v32 = at;
    at += align64(sizeof(float) * w.v32_per * size_t(groups));
    w.qcodes = at;
    at += align64(size_t(s.tq * s.d * heads));
    w.total = at;
    return w;
}

// Workspace of a Sol node: per head the tile means of K and V (F32) and one keep flag per
// (query block, tile).
struct SolWorkspace {
    size_t kbar, vbar, keep, total;
    size_t bar_per, keep_per;
};

inline SolWorkspace sol_workspace(const Dims & s) {
    SolWorkspace w{};
    const int64_t heads = s.b * s.hq, tiles = blocks_of(s.tk, kSolTile);
    w.bar_per = size_t(tiles * s.d);
    w.keep_per = size_t(blocks_of(s.tq, kSolTile) * tiles);
    size_t at = 0;
    w.kbar = at;
    at += align64(sizeof(float) * w.bar_per * size_t(heads));
    w.vbar = at;
    at += align64(sizeof(float) * w.bar_per * size_t(heads));
    w.keep = at;
    at += align64(w.keep_per * size_t(heads));
    w.total = at;
    return w;
}

// Items handed out one at a time to the pool's threads.
struct Job {
    const ggml_tensor * node;
    Dims s;
    char * ws;
    int64_t items;
    std::atomic<int64_t> next{0};
};

// Codes of n values x (round-half-even of x / scale, clamped to +-127) with scale = absmax / 127.
inline float quantize_block(const float * x, int64_t n, int8_t * codes) {
    float amax = 0.0f;
    for (int64_t i = 0; i < n; ++i)
        amax = std::max(amax, std::fabs(x[i]));
    const float scale = amax / 127.0f;
    const float inv = scale == 0.0f ? 0.0f : 1.0f / scale;
    for (int64_t i = 0; i < n; ++i)
        codes[i] = static_cast<int8_t>(std::nearbyint(std::clamp(x[i] * inv, -127.0f, 127.0f)));
    return scale;
}

// The mean over rows of n rows of d floats (row stride d), in double.
inline void mean_rows(const float * x, int64_t n, int64_t d, double * mean) {
    std::fill(mean, mean + d, 0.0);
    for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < d; ++c)
            mean[c] += x[r * d + c];
    for (int64_t c = 0; c < d; ++c)
        mean[c] /= static_cast<double>(n);
}

}  // namespace sd::attention::cpu
#endif  // SD_ATTENTION_CPU_SHARED

HWY_BEFORE_NAMESPACE();
namespace sd::attention::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out[n] = sum_i q[i] * k[n][i] over d codes, summed exactly in int32, for N keys at once.
template <int N>
HWY_INLINE void dots(const int8_t * HWY_RESTRICT q, const int8_t * const * k, int64_t d, float * out) {
    const hn::ScalableTag<int16_t> d16;
    const hn::Rebind<int8_t, decltype(d16)> d8;
    const hn::Repartition<int32_t, decltype(d16)> d32;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d16));
    hn::Vec<decltype(d32)> a0[N], a1[N];
    for (int n = 0; n < N; ++n)
        a0[n] = a1[n] = hn::Zero(d32);
    int64_t i = 0;
    for (; i + L <= d; i += L) {
        const auto qv = hn::PromoteTo(d16, hn::LoadU(d8, q + i));
        for (int n = 0; n < N; ++n)
            a0[n] = hn::ReorderWidenMulAccumulate(d32, qv, hn::PromoteTo(d16, hn::LoadU(d8, k[n] + i)), a0[n],
                                                  a1[n]);
    }
    for (int n = 0; n < N; ++n) {
        int32_t sum = hn::GetLane(hn::SumOfLanes(d32, hn::Add(a0[n], a1[n])));
        for (int64_t j = i; j < d; ++j)
            sum += int32_t(q[j]) * int32_t(k[n][j]);
        out[n] = static_cast<float>(sum);
    }
}

// out[n] = sum_i q[i] * k[n][i] over d floats, for N keys at once.
template <int N>
HWY_INLINE void dots(const float * HWY_RESTRICT q, const float * const * k, int64_t d, float * out) {
    const hn::ScalableTag<float> df;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    hn::Vec<decltype(df)> acc[N];
    for (int n = 0; n < N; ++n)
        acc[n] = hn::Zero(df);
    int64_t i = 0;
    for (; i + L <= d; i += L) {
        const auto qv = hn::LoadU(df, q + i);
        for (int n = 0; n < N; ++n)
            acc[n] = hn::MulAdd(qv, hn::LoadU(df, k[n] + i), acc[n]);
    }
    for (int n = 0; n < N; ++n) {
        float sum = hn::GetLane(hn::SumOfLanes(df, acc[n]));
        for (int64_t j = i; j < d; ++j)
            sum += q[j] * k[n][j];
        out[n] = sum;
    }
}

// The running softmax state of one query row.
struct Row {
    float max = -std::numeric_limits<float>::infinity();
    float sum = 0.0f;
    float * acc;  // d values

    Row(std::vector<float> & storage, int64_t d) : acc(storage.data()) { std::fill(acc, acc + d, 0.0f); }
};

// logits[j] = dot(q, keys[j]) * factor for the n keys (rows of d) at keys.
template <class T>
HWY_INLINE void block_logits(const T * q, const T * keys, int64_t n, int64_t d, float factor,
                             float * logits) {
    int64_t j = 0;
    float dot[4];
    for (; j + 4 <= n; j += 4) {
        const T * rows[4] = {keys + j * d, keys + (j + 1) * d, keys + (j + 2) * d, keys + (j + 3) * d};
        dots<4>(q, rows, d, dot);
        for (int u = 0; u < 4; ++u)
            logits[j + u] = dot[u] * factor;
    }
    for (; j < n; ++j) {
        const T * row = keys + j * d;
        dots<1>(q, &row, d, dot);
        logits[j] = dot[0] * factor;
    }
}

// Rescales the row for a new maximum m (>= the old one).
HWY_INLINE void rescale(Row & row, float m, int64_t d) {
    if (m <= row.max) return;
    const float c = std::exp(row.max - m);  // 0 for the first entries
    row.max = m;
    row.sum *= c;
    const hn::ScalableTag<float> df;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    const auto vc = hn::Set(df, c);
    int64_t i = 0;
    for (; i + L <= d; i += L)
        hn::StoreU(hn::Mul(hn::LoadU(df, row.acc + i), vc), df, row.acc + i);
    for (; i < d; ++i)
        row.acc[i] *= c;
}

// acc += p * v over d values.
HWY_INLINE void axpy(float * HWY_RESTRICT acc, const float * HWY_RESTRICT v, float p, int64_t d) {
    const hn::ScalableTag<float> df;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    const auto vp = hn::Set(df, p);
    int64_t i = 0;
    for (; i + L <= d; i += L)
        hn::StoreU(hn::MulAdd(vp, hn::LoadU(df, v + i), hn::LoadU(df, acc + i)), df, acc + i);
    for (; i < d; ++i)
        acc[i] += p * v[i];
}

// acc += sum_j p[j] * v[j] over n rows of d values: each vector of acc stays in a register while
// the block's rows stream past it.
HWY_INLINE void add_weighted_rows(float * HWY_RESTRICT acc, const float * HWY_RESTRICT p, const float * v,
                                  int64_t n, int64_t d) {
    const hn::ScalableTag<float> df;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    int64_t i = 0;
    for (; i + L <= d; i += L) {
        auto a = hn::LoadU(df, acc + i);
        for (int64_t j = 0; j < n; ++j)
            a = hn::MulAdd(hn::Set(df, p[j]), hn::LoadU(df, v + j * d + i), a);
        hn::StoreU(a, df, acc + i);
    }
    for (; i < d; ++i)
        for (int64_t j = 0; j < n; ++j)
            acc[i] += p[j] * v[j * d + i];
}

// Adds n logits s (overwritten with their probabilities) with values v (rows of d) to the row.
HWY_INLINE void add_block(Row & row, float * HWY_RESTRICT s, int64_t n, const float * v, int64_t d) {
    const hn::ScalableTag<float> df;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    float m = row.max;
    for (int64_t j = 0; j < n; ++j)
        m = std::max(m, s[j]);
    rescale(row, m, d);
    const auto vm = hn::Set(df, m);
    int64_t j = 0;
    for (; j + L <= n; j += L)
        hn::StoreU(hn::Exp(df, hn::Sub(hn::LoadU(df, s + j), vm)), df, s + j);
    for (; j < n; ++j)
        s[j] = std::exp(s[j] - m);
    for (j = 0; j < n; ++j)
        row.sum += s[j];
    add_weighted_rows(row.acc, s, v, n, d);
}

// out = acc / sum.
HWY_INLINE void finish(const Row & row, float * out, int64_t d) {
    const float inv = 1.0f / row.sum;
    for (int64_t i = 0; i < d; ++i)
        out[i] = row.acc[i] * inv;
}

// ---- Sage ------------------------------------------------------------------------------------

// Phase 1, item g = kv head (b * hkv + h): smoothing, K codes and scales, V in F32.
void SagePrepareKv(Job & job, int64_t g, std::vector<double> & mean, std::vector<float> & tmp) {
    const Dims & s = job.s;
    const SageWorkspace w = sage_workspace(s);
    const ggml_tensor *k = job.node->src[1], *v = job.node->src[2];
    const float * kg = static_cast<const float *>(k->data) + g * s.tk * s.d;
    mean.resize(size_t(s.d));
    tmp.resize(size_t(kSageBlock * s.d));
    mean_rows(kg, s.tk, s.d, mean.data());
    auto * codes = reinterpret_cast<int8_t *>(job.ws + w.kcodes) + size_t(g) * w.kcodes_per;
    auto * scales = reinterpret_cast<float *>(job.ws + w.kscales) + size_t(g) * w.kscales_per;
    for (int64_t kb = 0; kb * kSageBlock < s.tk; ++kb) {
        const int64_t n = std::min(kSageBlock, s.tk - kb * kSageBlock);
        for (int64_t r = 0; r < n; ++r)
            for (int64_t c = 0; c < s.d; ++c)
                tmp[size_t(r * s.d + c)] =
                    kg[(kb * kSageBlock + r) * s.d + c] - static_cast<float>(mean[size_t(c)]);
        scales[kb] = quantize_block(tmp.data(), n * s.d, codes + kb * kSageBlock * s.d);
    }
    auto * v32 = reinterpret_cast<float *>(job.ws + w.v32) + size_t(g) * w.v32_per;
    ggml_fp16_to_fp32_row(static_cast<const ggml_fp16_t *>(v->data) + g * s.tk * s.d, v32, s.tk * s.d);
}

// Phase 2, item = one block of up to 64 query rows of one query head.
void SageQueryBlock(Job & job, int64_t item, std::vector<float> & acc, std::vector<float> & logits) {
    const Dims & s = job.s;
    const SageWorkspace w = sage_workspace(s);
    const int64_t nqb = blocks_of(s.tq, kSageBlock);
    const int64_t head = item / nqb, qb = item % nqb;  // head = b * hq + h
    const int64_t b = head / s.hq, h = head % s.hq, g = b * s.hkv + h / (s.hq / s.hkv);
    const int64_t t0 = qb * kSageBlock, nq = std::min(kSageBlock, s.tq - t0);
    const float scale = sage_attrs_of(job.node).scale;

    const float * q = static_cast<const float *>(job.node->src[0]->data) + (head * s.tq + t0) * s.d;
    auto * qcodes = reinterpret_cast<int8_t *>(job.ws + w.qcodes) + (head * s.tq + t0) * s.d;
    const float qscale = quantize_block(q, nq * s.d, qcodes);

    const auto * kcodes = reinterpret_cast<const int8_t *>(job.ws + w.kcodes) + size_t(g) * w.kcodes_per;
    const auto * kscales = reinterpret_cast<const float *>(job.ws + w.kscales) + size_t(g) * w.kscales_per;
    const auto * v32 = reinterpret_cast<const float *>(job.ws + w.v32) + size_t(g) * w.v32_per;
    acc.resize(size_t(s.d));
    logits.resize(size_t(kSageBlock));
    auto * out = static_cast<float *>(job.node->data);
    for (int64_t i = 0; i < nq; ++i) {
        Row row(acc, s.d);
        const int8_t * qi = qcodes + i * s.d;
        for (int64_t kb = 0; kb * kSageBlock < s.tk; ++kb) {
            const int64_t j0 = kb * kSageBlock, n = std::min(kSageBlock, s.tk - j0);
            block_logits(qi, kcodes + j0 * s.d, n, s.d, qscale * kscales[kb] * scale, logits.data());
            add_block(row, logits.data(), n, v32 + j0 * s.d, s.d);
        }
        finish(row, out + s.d * (h + s.hq * (t0 + i + s.tq * b)), s.d);
    }
}

// ---- Sol -------------------------------------------------------------------------------------

// Phase 1, item = head (b * h): tile means of K and V, and the tile selection of every query block.
void SolPrepareHead(Job & job, int64_t head, std::vector<double> & kbar, std::vector<double> & qbar) {
    const Dims & s = job.s;
    const SolWorkspace w = sol_workspace(s);
    const SolAttrs attrs = sol_attrs_of(job.node);
    const int64_t tiles = blocks_of(s.tk, kSolTile), nqb = blocks_of(s.tq, kSolTile);
    const auto base = [&](int i) {
        return static_cast<const float *>(job.node->src[i]->data) + head * s.tk * s.d;
    };
    const float *q = base(0), *k = base(1), *v = base(2);
    auto * kbar32 = reinterpret_cast<float *>(job.ws + w.kbar) + size_t(head) * w.bar_per;
    auto * vbar32 = reinterpret_cast<float *>(job.ws + w.vbar) + size_t(head) * w.bar_per;
    auto * keep = reinterpret_cast<uint8_t *>(job.ws + w.keep) + size_t(head) * w.keep_per;
    kbar.resize(size_t(tiles * s.d));
    qbar.resize(size_t(s.d));
    std::vector<double> vmean(static_cast<size_t>(s.d)), score(static_cast<size_t>(tiles));
    for (int64_t t = 0; t < tiles; ++t) {
        const int64_t n = std::min(kSolTile, s.tk - t * kSolTile);
        mean_rows(k + t * kSolTile * s.d, n, s.d, kbar.data() + t * s.d);
        mean_rows(v + t * kSolTile * s.d, n, s.d, vmean.data());
        for (int64_t c = 0; c < s.d; ++c) {
            kbar32[t * s.d + c] = static_cast<float>(kbar[size_t(t * s.d + c)]);
            vbar32[t * s.d + c] = static_cast<float>(vmean[size_t(c)]);
        }
    }
    for (int64_t qb = 0; qb < nqb; ++qb) {
        uint8_t * flags = keep + qb * tiles;
        if (tiles <= kSolDenseTiles) {
            std::fill(flags, flags + tiles, uint8_t{1});
            continue;
        }
        mean_rows(q + qb * kSolTile * s.d, std::min(kSolTile, s.tq - qb * kSolTile), s.d, qbar.data());
        int64_t best = 0;
        for (int64_t t = 0; t < tiles; ++t) {
            double dot = 0.0;
            for (int64_t c = 0; c < s.d; ++c)
                dot += qbar[size_t(c)] * kbar[size_t(t * s.d + c)];
            score[size_t(t)] = static_cast<double>(attrs.scale) * dot;
            if (score[size_t(t)] > score[size_t(best)]) best = t;
        }
        double z = 0.0;
        for (int64_t t = 0; t < tiles; ++t)
            z += static_cast<double>(std::min(kSolTile, s.tk - t * kSolTile)) *
                 std::exp(score[size_t(t)] - score[size_t(best)]);
        for (int64_t t = 0; t < tiles; ++t) {
            const double share =
                static_cast<double>(s.tk) * std::exp(score[size_t(t)] - score[size_t(best)]) / z;
            flags[t] = t == best || share >= static_cast<double>(attrs.tau);
        }
    }
}

// Phase 2, item = one block of up to 64 query rows of one head.
void SolQueryBlock(Job & job, int64_t item, std::vector<float> & acc, std::vector<float> & logits) {
    const Dims & s = job.s;
    const SolWorkspace w = sol_workspace(s);
    const int64_t tiles = blocks_of(s.tk, kSolTile), nqb = blocks_of(s.tq, kSolTile);
    const int64_t head = item / nqb, qb = item % nqb, b = head / s.hq, h = head % s.hq;
    const int64_t t0 = qb * kSolTile, nq = std::min(kSolTile, s.tq - t0);
    const float scale = sol_attrs_of(job.node).scale;
    const auto base = [&](int i) {
        return static_cast<const float *>(job.node->src[i]->data) + head * s.tk * s.d;
    };
    const float *q = base(0), *k = base(1), *v = base(2);
    const auto * kbar = reinterpret_cast<const float *>(job.ws + w.kbar) + size_t(head) * w.bar_per;
    const auto * vbar = reinterpret_cast<const float *>(job.ws + w.vbar) + size_t(head) * w.bar_per;
    const auto * flags =
        reinterpret_cast<const uint8_t *>(job.ws + w.keep) + size_t(head) * w.keep_per + qb * tiles;
    acc.resize(size_t(s.d));
    logits.resize(size_t(kSolTile));
    auto * out = static_cast<float *>(job.node->data);
    for (int64_t i = 0; i < nq; ++i) {
        Row row(acc, s.d);
        const float * qi = q + (t0 + i) * s.d;
        for (int64_t t = 0; t < tiles; ++t) {
            const int64_t j0 = t * kSolTile, n = std::min(kSolTile, s.tk - j0);
            if (!flags[t]) {  // pooled: n tokens of the mean key and mean value
                const float * key = kbar + t * s.d;
                float dot;
                dots<1>(qi, &key, s.d, &dot);
                const float logit = dot * scale;
                rescale(row, std::max(row.max, logit), s.d);
                const float p = static_cast<float>(n) * std::exp(logit - row.max);
                row.sum += p;
                axpy(row.acc, vbar + t * s.d, p, s.d);
                continue;
            }
            block_logits(qi, k + j0 * s.d, n, s.d, scale, logits.data());
            add_block(row, logits.data(), n, v + j0 * s.d, s.d);
        }
        finish(row, out + s.d * (h + s.hq * (t0 + i + s.tq * b)), s.d);
    }
}

// The task bodies: items from the job's counter until none is left or the run should stop.
template <class F>
void drain(const ggml_ext_cpu_task * task, F f) {
    auto & job = *static_cast<Job *>(task->user_data);
    for (int64_t item; (item = job.next.fetch_add(1, std::memory_order_relaxed)) < job.items;) {
        if (g_parallel->should_stop(task)) return;
        f(job, item);
    }
}

void SagePrepareTask(const ggml_ext_cpu_task * task) {
    std::vector<double> mean;
    std::vector<float> tmp;
    drain(task, [&](Job & job, int64_t g) { SagePrepareKv(job, g, mean, tmp); });
}

void SageAttendTask(const ggml_ext_cpu_task * task) {
    std::vector<float> acc, logits;
    drain(task, [&](Job & job, int64_t item) { SageQueryBlock(job, item, acc, logits); });
}

void SolPrepareTask(const ggml_ext_cpu_task * task) {
    std::vector<double> kbar, qbar;
    drain(task, [&](Job & job, int64_t head) { SolPrepareHead(job, head, kbar, qbar); });
}

void SolAttendTask(const ggml_ext_cpu_task * task) {
    std::vector<float> acc, logits;
    drain(task, [&](Job & job, int64_t item) { SolQueryBlock(job, item, acc, logits); });
}

}  // namespace sd::attention::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace sd::attention::cpu {
namespace {

HWY_EXPORT(SagePrepareTask);
HWY_EXPORT(SageAttendTask);
HWY_EXPORT(SolPrepareTask);
HWY_EXPORT(SolAttendTask);

void sage_prepare_task(const ggml_ext_cpu_task * task) { HWY_DYNAMIC_DISPATCH(SagePrepareTask)(task); }
void sage_attend_task(const ggml_ext_cpu_task * task) { HWY_DYNAMIC_DISPATCH(SageAttendTask)(task); }
void sol_prepare_task(const ggml_ext_cpu_task * task) { HWY_DYNAMIC_DISPATCH(SolPrepareTask)(task); }
void sol_attend_task(const ggml_ext_cpu_task * task) { HWY_DYNAMIC_DISPATCH(SolAttendTask)(task); }

struct Phases {
    ggml_ext_cpu_task_fn prepare, attend;
};
constexpr Phases kSagePhases{sage_prepare_task, sage_attend_task};
constexpr Phases kSolPhases{sol_prepare_task, sol_attend_task};

ggml_status run_phase(ggml_backend_t backend, ggml_ext_cpu_task_fn fn, const ggml_tensor * node,
                      const Dims & s, char * ws, int64_t items) {
    Job job{node, s, ws, items};
    const int nth = static_cast<int>(std::min<int64_t>(items, std::max(1, g_parallel->n_threads(backend))));
    return g_parallel->run(backend, fn, &job, nth);
}

ggml_status run_node(const ggml_ext_execute_params * params, const Phases & phases, size_t need,
                     int64_t prepare_items, int64_t attend_items, const char * what) {
    if (params->workspace_size < need || (need && !params->workspace_data)) {
        ggml_ext_set_error((std::string(what) + ": workspace smaller than the node needs").c_str());
        return GGML_STATUS_FAILED;
    }
    const Dims s = dims_of(params->node);
    char * ws = static_cast<char *>(params->workspace_data);
    const ggml_status st = run_phase(params->backend, phases.prepare, params->node, s, ws, prepare_items);
    if (st != GGML_STATUS_SUCCESS) return st;
    return run_phase(params->backend, phases.attend, params->node, s, ws, attend_items);
}

bool is_op(const ggml_tensor * node, ggml_ext_op_t op) {
    return ggml_ext_node_op(node) == op && node->src[2];
}

bool sage_supports(ggml_backend_dev_t, const ggml_tensor * node, void *) {
    if (!is_op(node, sage_op())) return false;
    const ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2];
    return q->type == GGML_TYPE_F32 && k->type == GGML_TYPE_F32 && v->type == GGML_TYPE_F16 &&
           ggml_is_contiguous(q) && ggml_is_contiguous(k) && ggml_is_contiguous(v) &&
           node->type == GGML_TYPE_F32;
}

bool sol_supports(ggml_backend_dev_t, const ggml_tensor * node, void *) {
    if (!is_op(node, sol_op())) return false;
    for (int i = 0; i < 3; ++i)
        if (node->src[i]->type != GGML_TYPE_F32 || !ggml_is_contiguous(node->src[i])) return false;
    return node->type == GGML_TYPE_F32;
}

ggml_status sage_prepare(const ggml_ext_prepare_params * params, void ** state, size_t * workspace_bytes) {
    *state = nullptr;
    *workspace_bytes = sage_workspace(dims_of(params->node)).total;
    return GGML_STATUS_SUCCESS;
}

ggml_status sol_prepare(const ggml_ext_prepare_params * params, void ** state, size_t * workspace_bytes) {
    *state = nullptr;
    *workspace_bytes = sol_workspace(dims_of(params->node)).total;
    return GGML_STATUS_SUCCESS;
}

ggml_status sage_execute(const ggml_ext_execute_params * params) {
    const Dims s = dims_of(params->node);
    return run_node(params, kSagePhases, sage_workspace(s).total, s.b * s.hkv,
                    s.b * s.hq * blocks_of(s.tq, kSageBlock), "sd.sage_attn.cpu");
}

ggml_status sol_execute(const ggml_ext_execute_params * params) {
    const Dims s = dims_of(params->node);
    return run_node(params, kSolPhases, sol_workspace(s).total, s.b * s.hq,
                    s.b * s.hq * blocks_of(s.tq, kSolTile), "sd.sol_attn.cpu");
}

}  // namespace
}  // namespace sd::attention::cpu

namespace sd::attention {

const ggml_ext_kernel_desc * cpu_sage_kernel() {
    static const ggml_ext_kernel_desc kernel = custom_kernel_desc(
        "sd.sage_attn.cpu", sage_op(), cpu::sage_supports, cpu::sage_execute, cpu::sage_prepare);
    return &kernel;
}

const ggml_ext_kernel_desc * cpu_sol_kernel() {
    static const ggml_ext_kernel_desc kernel = custom_kernel_desc(
        "sd.sol_attn.cpu", sol_op(), cpu::sol_supports, cpu::sol_execute, cpu::sol_prepare);
    return &kernel;
}

bool register_cpu(ggml_backend_dev_t device) {
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(device);
    const auto * service = static_cast<const ggml_ext_cpu_parallel_v1 *>(
        reg ? ggml_backend_reg_get_proc_address(reg, GGML_EXT_CPU_PARALLEL_V1) : nullptr);
    if (!service || service->struct_size < sizeof(ggml_ext_cpu_parallel_v1) ||
        service->version < GGML_EXT_CPU_PARALLEL_V1_VERSION) {
        ggml_ext_set_error("sd.sage_attn.cpu: the CPU registry offers no ggml_ext_cpu_parallel_v1 service");
        return false;
    }
    cpu::g_parallel = service;
    return ggml_ext_register_kernel(device, cpu_sage_kernel()) &&
           ggml_ext_register_kernel(device, cpu_sol_kernel());
}

}  // namespace sd::attention
#endif  // HWY_ONCE
