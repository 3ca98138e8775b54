// CPU kernels of sd.quantize_i8_convrot.v1 and sd.linear_i8.v1 (sd-ops.md section 3).
//
// Quantization (both ops): per row, every group of G values is rotated (multiplied by 1/sqrt(G),
// an exact power of two, then radix-4 butterflies with strides 1, 4, 16, 64 in that order, each
// output evaluated left to right as written in the spec), amax = max |rotated| over the whole row,
// scale = amax / 127, inv = scale == 0 ? 0 : 1 / scale, q = round_half_even(clamp(v * inv, ±127))
// (clamping to integer bounds before rounding equals clamping after). Rows whose rotated copy fits
// a 16 KiB stack buffer are rotated once; longer rows are rotated twice, chunk by chunk (once for
// amax, once to quantize), which gives bit-identical values and needs no scratch. AVX-512 rotates
// each group in registers in one pass (amax folded in), other targets stage by stage in the buffer;
// then one quantizing pass reads the buffer.
//
// GEMM: y[r, o] = float(sum_k W[o, k] * X[r, k]) * s_x[r] * s_w[o] + b[o], each step an F32 op in
// that order (this file is compiled with -ffp-contract=off). The int32 sums are exact:
//  * AMX (on the AVX3_DL target where the CPU backend reports AMX_INT8): tdpbssd tiles, in
//    cpu/int8_amx.cpp.
//  * AVX3_DL (AVX-512 VNNI): vpdpbusd with the weight as the unsigned operand, w + 128 (w ^ 0x80),
//    which sums sum_k (w + 128) x exactly in int32 (modular, exact once corrected); the correction
//    128 * sum_k x[r, k] per activation row is computed once per product in a separate phase.
//  * AVX3 (AVX-512BW) and AVX2: vpmaddubsw(|w|, sign(x, w)) then vpmaddwd with ones. vpmaddubsw
//    saturates each pair sum to int16, which cannot happen for codes in [-127, 127]:
//    2 * 127 * 127 = 32258 < 32767. (Codes are symmetric by the format; -128 is never produced.)
//  * Other targets: widening int16 multiply-accumulate (ReorderWidenMulAccumulate) - exact for any
//    int8 value.
// Register blocking: tiles of MR weight rows x NR activation rows (4 x 4 with AVX-512, 4 x 2 with
// AVX2, 2 x 2 portable) over the whole K, the K tail (K % vector bytes) in scalar code. Cache
// blocking: tasks of kWBlock weight rows x kXBlock activation rows; inside a task each activation
// tile stays in L1 while the weight block streams from L2. Tasks go round-robin to the pool's
// threads through ggml_ext_cpu_parallel_v1; every phase (quantize, row sums, GEMM) is one run, and
// a stop (abort callback or failure) ends the op between phases with the run's status.
// Outputs that overlap an input (allocator in-place reuse) are computed into the workspace and then
// copied over.

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/int8.cpp"
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL  // the VNNI target
#endif
#include <hwy/foreach_target.h>
#include <hwy/highway.h>
// clang-format on

#include <ggml-cpu.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "common/int8.h"
#include "common/pack.h"
#include "cpu/int8_amx.h"

#if HWY_ARCH_X86
#include <immintrin.h>
#endif

#ifndef SD_INT8_CPU_SHARED
#define SD_INT8_CPU_SHARED
namespace sd::int8::cpu {

inline const ggml_ext_cpu_parallel_v1 * g_parallel = nullptr;

inline constexpr int64_t kRowBuf = 4096;  // floats of a row rotated once on the stack
inline constexpr int64_t kWBlock = 48;    // weight rows per GEMM task
inline constexpr int64_t kXBlock = 64;    // activation rows per GEMM task

inline size_t align64(size_t x) { return (x + 63) & ~size_t(63); }

inline bool overlaps(const void * a, size_t na, const void * b, size_t nb) {
    const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
    return na && nb && pa < pb + nb && pb < pa + na;
}

// Workspace layout of a linear node: quantized codes (F32 input), their scales, the VNNI row sums,
// room for the whole output (used when it overlaps an input), then the AMX path's packed tiles
// where AMX is available.
struct LinearWorkspace {
    size_t codes = 0, scales = 0, sums = 0, alias = 0, amx = 0, total = 0;
};

inline LinearWorkspace linear_workspace(const LinearShape & s, const ggml_tensor * node) {
    LinearWorkspace l;
    size_t at = 0;
    if (s.attrs.kind == kInputF32) {
        l.codes = at;
        at += align64(size_t(s.k) * size_t(packed_rows_pad(s.rows)));
        l.scales = at;
        at += align64(sizeof(float) * size_t(s.rows));
    }
    l.sums = at;
    at += align64(sizeof(int32_t) * size_t(s.rows));
    l.alias = at;
    at += align64(ggml_nbytes(node));
    l.amx = at;
    if (amx::available()) at += align64(amx::workspace(s.k, s.n, s.rows));
    l.total = at;
    return l;
}

}  // namespace sd::int8::cpu
#endif  // SD_INT8_CPU_SHARED

HWY_BEFORE_NAMESPACE();
namespace sd::int8::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- ConvRot and row quantization -----------------------------------------------------------

HWY_INLINE float absmax(const float * HWY_RESTRICT v, int64_t n, float m) {
    const hn::ScalableTag<float> df;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    auto acc = hn::Zero(df);
    int64_t i = 0;
    for (; i + L <= n; i += L)
        acc = hn::Max(acc, hn::Abs(hn::LoadU(df, v + i)));
    m = std::max(m, hn::GetLane(hn::MaxOfLanes(df, acc)));
    for (; i < n; ++i)
        m = std::max(m, std::fabs(v[i]));
    return m;
}

#if HWY_TARGET <= HWY_AVX3
// 16-lane targets: one pass per group, in registers. A group of G >= 16 values is G / 16 vectors (a
// vector holds four groups of G = 4); the strides 1 and 4 are within a vector (the lanes of each
// 128-bit block, then the blocks), the larger strides across vectors.
using V16 = hn::Vec512<float>;

// The four units (lanes of each block, or blocks) of v rearranged as units i0, i1, i2, i3.
template <bool kBlocks, int i0, int i1, int i2, int i3>
HWY_INLINE V16 units(V16 v) {
    constexpr int imm = i0 | i1 << 2 | i2 << 4 | i3 << 6;
    if constexpr (kBlocks)  // (masked: GCC 12's unmasked form trips -Wmaybe-uninitialized)
        return V16{_mm512_maskz_shuffle_f32x4(0xFFFF, v.raw, v.raw, imm)};
    else
        return V16{_mm512_shuffle_ps(v.raw, v.raw, imm)};
}

// The signs of the multiply-adds below, per unit.
struct Signs {
    V16 pq, c, d;
};

template <bool kBlocks>
HWY_INLINE Signs unit_signs() {
    const hn::ScalableTag<float> df;
    const auto per_unit = [&](const float(&s)[4]) {
        HWY_ALIGN float lanes[16];
        for (int i = 0; i < 16; ++i)
            lanes[i] = s[kBlocks ? i / 4 : i % 4];
        return hn::Load(df, lanes);
    };
    return {per_unit({1, 1, -1, -1}), per_unit({1, -1, 1, 1}), per_unit({-1, 1, 1, 1})};
}

// The butterfly over the units a, b, c, d of v, each output in the spec's order: (a+b, a+b, a-b, b-a) =
// (a, a, a, b) + (1, 1, -1, -1) * (b, b, b, a), then +-c, then +-d. A multiply-add by +-1 rounds once,
// exactly like the addition or subtraction it stands for.
template <bool kBlocks>
HWY_INLINE V16 butterfly_within(V16 v, const Signs & s) {
    const V16 t = hn::MulAdd(units<kBlocks, 1, 1, 1, 0>(v), s.pq, units<kBlocks, 0, 0, 0, 1>(v));
    return hn::MulAdd(units<kBlocks, 3, 3, 3, 3>(v), s.d, hn::MulAdd(units<kBlocks, 2, 2, 2, 2>(v), s.c, t));
}

// The butterfly over four vectors, as written in the spec.
HWY_INLINE void butterfly_across(V16 & a, V16 & b, V16 & c, V16 & e) {
    const V16 ab = hn::Add(a, b), p0 = hn::Sub(hn::Add(ab, c), e), p1 = hn::Add(hn::Sub(ab, c), e);
    const V16 p2 = hn::Add(hn::Add(hn::Sub(a, b), c), e), p3 = hn::Add(hn::Add(hn::Sub(b, a), c), e);
    a = p0, b = p1, c = p2, e = p3;
}

// f(0), ..., f(n - 1), unrolled.
template <int n, class F>
HWY_INLINE void unrolled(F f) {
    [&]<int... i>(std::integer_sequence<int, i...>) { (f(i), ...); }
    (std::make_integer_sequence<int, n>());
}

// Rotates the max(G, 16) values at src into dst (scale: 1/sqrt(G)); returns max(m, |rotated|) lane-wise.
template <int G>
HWY_INLINE V16 rotate_vectors(const float * HWY_RESTRICT src, float * HWY_RESTRICT dst, V16 scale,
                              const Signs & lanes, const Signs & blocks, V16 m) {
    constexpr int kN = G < 16 ? 1 : G / 16, kAcross = G < 64 ? 0 : G == 64 ? 1 : 2;
    const hn::ScalableTag<float> df;
    V16 v[kN];  // in registers: every index below is a constant
    unrolled<kN>([&](int i) {
        v[i] = butterfly_within<false>(hn::Mul(hn::LoadU(df, src + 16 * i), scale), lanes);
        if constexpr (G >= 16) v[i] = butterfly_within<true>(v[i], blocks);
    });
    unrolled<kAcross>([&](int t) {
        const int s = t == 0 ? 1 : 4;  // stride in vectors
        unrolled<kN / 4>([&](int q) {
            const int j = q / s * 4 * s + q % s;
            butterfly_across(v[j], v[j + s], v[j + 2 * s], v[j + 3 * s]);
        });
    });
    unrolled<kN>([&](int i) {
        hn::StoreU(v[i], df, dst + 16 * i);
        m = hn::Max(m, hn::Abs(v[i]));
    });
    return m;
}

template <int G>
HWY_INLINE float rotate_groups(const float * HWY_RESTRICT src, float * HWY_RESTRICT v, int64_t n, float m) {
    const hn::ScalableTag<float> df;
    const Signs lanes = unit_signs<false>(), blocks = unit_signs<true>();
    const V16 scale = hn::Set(df, G == 4 ? 0.5f : G == 16 ? 0.25f : G == 64 ? 0.125f : 0.0625f);
    constexpr int64_t kStep = G < 16 ? 16 : G;
    auto acc = hn::Zero(df);
    int64_t i = 0;
    for (; i + kStep <= n; i += kStep)
        acc = rotate_vectors<G>(src + i, v + i, scale, lanes, blocks, acc);
    if (i < n) {  // G = 4: the last n - i < 16 values
        const auto mask = hn::FirstN(df, static_cast<size_t>(n - i));
        const auto x = butterfly_within<false>(hn::Mul(hn::MaskedLoad(mask, df, src + i), scale), lanes);
        hn::BlendedStore(x, mask, df, v + i);
        acc = hn::Max(acc, hn::Abs(x));
    }
    return std::max(m, hn::GetLane(hn::MaxOfLanes(df, acc)));
}

// Rotates the n values at src into v (n a multiple of G > 1); returns max(m, max |v|).
HWY_NOINLINE float rotate_chunk(const float * HWY_RESTRICT src, float * HWY_RESTRICT v, int64_t n, int group,
                                float m) {
    switch (group) {
        case 4:
            return rotate_groups<4>(src, v, n, m);
        case 16:
            return rotate_groups<16>(src, v, n, m);
        case 64:
            return rotate_groups<64>(src, v, n, m);
        default:
            return rotate_groups<256>(src, v, n, m);
    }
}
#else
// One radix-4 stage of stride s (s a multiple of Lanes(d)) over a chunk of n values.
template <class D>
HWY_INLINE void stage_vec(D d, float * HWY_RESTRICT v, int64_t n, int64_t s) {
    const size_t L = hn::Lanes(d);
    for (int64_t base = 0; base < n; base += 4 * s)
        for (int64_t j = 0; j < s; j += static_cast<int64_t>(L)) {
            float * p = v + base + j;
            const auto a = hn::LoadU(d, p), b = hn::LoadU(d, p + s);
            const auto c = hn::LoadU(d, p + 2 * s), e = hn::LoadU(d, p + 3 * s);
            const auto ab = hn::Add(a, b);
            hn::StoreU(hn::Sub(hn::Add(ab, c), e), d, p);
            hn::StoreU(hn::Add(hn::Sub(ab, c), e), d, p + s);
            hn::StoreU(hn::Add(hn::Add(hn::Sub(a, b), c), e), d, p + 2 * s);
            hn::StoreU(hn::Add(hn::Add(hn::Sub(b, a), c), e), d, p + 3 * s);
        }
}

// The stride-1 stage over n values (n a multiple of 4 * Lanes(d)): de-interleave quadruples.
template <class D>
HWY_INLINE void stage1_vec(D d, float * HWY_RESTRICT v, int64_t n) {
    const size_t L = hn::Lanes(d);
    for (int64_t i = 0; i < n; i += 4 * static_cast<int64_t>(L)) {
        hn::Vec<D> a, b, c, e;
        hn::LoadInterleaved4(d, v + i, a, b, c, e);
        const auto ab = hn::Add(a, b);
        hn::StoreInterleaved4(hn::Sub(hn::Add(ab, c), e), hn::Add(hn::Sub(ab, c), e),
                              hn::Add(hn::Add(hn::Sub(a, b), c), e), hn::Add(hn::Add(hn::Sub(b, a), c), e), d,
                              v + i);
    }
}

HWY_INLINE void stage_scalar(float * v, int64_t n, int64_t s) {
    for (int64_t base = 0; base < n; base += 4 * s)
        for (int64_t j = 0; j < s; ++j) {
            float * p = v + base + j;
            const float a = p[0], b = p[s], c = p[2 * s], e = p[3 * s];
            p[0] = a + b + c - e;
            p[s] = a + b - c + e;
            p[2 * s] = a - b + c + e;
            p[3 * s] = -a + b + c + e;
        }
}

// Rotates the n values at src into v (n a multiple of G > 1) group by group: scale by 1/sqrt(G) (an
// exact power of two), then the stages of strides 1, 4, ..., G/4 (each stage over all groups of the chunk
// at once: groups are independent and the order within a group is the spec's).
HWY_INLINE void rotate_values(const float * HWY_RESTRICT src, float * HWY_RESTRICT v, int64_t n, int group) {
    const hn::ScalableTag<float> df;
    const hn::CappedTag<float, 4> d4;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df)), L4 = static_cast<int64_t>(hn::Lanes(d4));
    int log4 = 0;
    for (int g = group; g > 1; g /= 4)
        ++log4;
    const float inv_sqrt = 1.0f / static_cast<float>(1 << log4);
    int64_t i = 0;
    const auto vs = hn::Set(df, inv_sqrt);
    for (; i + L <= n; i += L)  // the copy into v and the scaling in one pass
        hn::StoreU(hn::Mul(hn::LoadU(df, src + i), vs), df, v + i);
    for (; i < n; ++i)
        v[i] = src[i] * inv_sqrt;
    if (group % (4 * L) == 0)
        stage1_vec(df, v, n);
    else if (group % (4 * L4) == 0)
        stage1_vec(d4, v, n);
    else
        stage_scalar(v, n, 1);
    for (int64_t s = 4; s < group; s *= 4) {
        if (s % L == 0)
            stage_vec(df, v, n, s);
        else
            stage_vec(d4, v, n, s);  // s is a multiple of 4 >= L4
    }
}

HWY_NOINLINE float rotate_chunk(const float * HWY_RESTRICT src, float * HWY_RESTRICT v, int64_t n, int group,
                                float m) {
    rotate_values(src, v, n, group);
    return absmax(v, n, m);
}
#endif

HWY_INLINE void quantize_values(const float * HWY_RESTRICT v, int64_t n, float inv, int8_t * HWY_RESTRICT q) {
    const hn::ScalableTag<float> df;
    const hn::Rebind<int8_t, decltype(df)> d8;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    const auto vinv = hn::Set(df, inv), lo = hn::Set(df, -127.0f), hi = hn::Set(df, 127.0f);
    int64_t i = 0;
#if HWY_TARGET <= HWY_AVX3
    // Four vectors at a time: the clamped values convert without overflow, and the saturating packs
    // leave them as they are; they interleave the four vectors per 128-bit block, which one dword
    // permute undoes. (Masked forms: GCC 12's unmasked ones trip -Wmaybe-uninitialized.)
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (; i + 4 * L <= n; i += 4 * L) {
        __m512i c[4];
        for (int j = 0; j < 4; ++j)
            c[j] = _mm512_maskz_cvtps_epi32(
                0xFFFF, hn::Min(hn::Max(hn::Mul(hn::LoadU(df, v + i + j * L), vinv), lo), hi).raw);
        const __m512i packed =
            _mm512_packs_epi16(_mm512_packs_epi32(c[0], c[1]), _mm512_packs_epi32(c[2], c[3]));
        _mm512_storeu_si512(q + i, _mm512_maskz_permutexvar_epi32(0xFFFF, order, packed));
    }
#endif
    for (; i + L <= n; i += L) {
        const auto x = hn::Min(hn::Max(hn::Mul(hn::LoadU(df, v + i), vinv), lo), hi);
        hn::StoreU(hn::DemoteTo(d8, hn::NearestInt(x)), d8, q + i);
    }
    for (; i < n; ++i) {
        const float x = std::min(std::max(v[i] * inv, -127.0f), 127.0f);
        q[i] = static_cast<int8_t>(std::nearbyint(x));  // default rounding: half to even
    }
}

// Quantizes one row of K values (src) into K codes and its scale.
HWY_NOINLINE void quantize_row(const float * HWY_RESTRICT src, int64_t k, int group,
                               int8_t * HWY_RESTRICT codes, float * scale_out) {
    if (group <= 1) {  // no rotation: straight from the source
        const float scale = absmax(src, k, 0.0f) / 127.0f;
        *scale_out = scale;
        quantize_values(src, k, scale == 0.0f ? 0.0f : 1.0f / scale, codes);
        return;
    }
    HWY_ALIGN float buf[kRowBuf];
    const int64_t chunk = std::min<int64_t>(k, kRowBuf / group * group);
    float amax = 0.0f;
    for (int64_t c = 0; c < k; c += chunk) {
        const int64_t n = std::min(chunk, k - c);
        amax = rotate_chunk(src + c, buf, n, group, amax);
    }
    const float scale = amax / 127.0f;
    *scale_out = scale;
    const float inv = scale == 0.0f ? 0.0f : 1.0f / scale;
    if (chunk == k) {  // the rotated row is still in buf
        quantize_values(buf, k, inv, codes);
        return;
    }
    for (int64_t c = 0; c < k; c += chunk) {
        const int64_t n = std::min(chunk, k - c);
        rotate_chunk(src + c, buf, n, group, 0.0f);
        quantize_values(buf, n, inv, codes + c);
    }
}

// The rows of a into codes (row stride k) and scales. Threads take `chunk` rows at a time, so one
// slowed down by other load on its core does fewer.
struct QuantizeJob {
    const ggml_tensor * a;  // F32 [k, ...] with contiguous rows
    int64_t k, rows, chunk;
    int group;
    int8_t * codes;
    float * scales;
    std::atomic<int64_t> next{0};  // first row not taken yet
};

void quantize_task(const ggml_ext_cpu_task * task) {
    auto * job = static_cast<QuantizeJob *>(task->user_data);
    const ggml_tensor * a = job->a;
    for (int64_t r0; (r0 = job->next.fetch_add(job->chunk, std::memory_order_relaxed)) < job->rows;) {
        if (g_parallel->should_stop(task)) return;
        for (int64_t r = r0; r < std::min(job->rows, r0 + job->chunk); ++r) {
            const int64_t i1 = r % a->ne[1], i2 = r / a->ne[1] % a->ne[2], i3 = r / (a->ne[1] * a->ne[2]);
            const auto * src = reinterpret_cast<const float *>(static_cast<const char *>(a->data) +
                                                               i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3]);
            quantize_row(src, job->k, job->group, job->codes + r * job->k, job->scales + r);
        }
    }
}

ggml_status run_quantize(ggml_backend_t backend, const ggml_tensor * a, int64_t k, int64_t rows, int group,
                         int8_t * codes, float * scales) {
    if (rows == 0) return GGML_STATUS_SUCCESS;
    const int nth = static_cast<int>(std::min<int64_t>(rows, std::max(1, g_parallel->n_threads(backend))));
    QuantizeJob job{a, k, rows, std::clamp<int64_t>(rows / (4 * nth), 1, 16), group, codes, scales};
    return g_parallel->run(backend, quantize_task, &job, nth);
}

ggml_status ExecuteQuantize(const ggml_ext_execute_params * params) {
    ggml_tensor * node = params->node;
    const ggml_tensor * a = node->src[0];
    const int group = quantize_attrs_of(node).group;
    const int64_t k = a->ne[0], rows = a->ne[1] * a->ne[2] * a->ne[3];
    const int64_t rows_pad = packed_rows_pad(rows);
    const size_t out_bytes = ggml_nbytes(node);
    const bool alias = overlaps(node->data, out_bytes, a->data, ggml_nbytes(a));
    if (alias && params->workspace_size < out_bytes) {
        ggml_ext_set_error("sd.quantize_i8_convrot.cpu: workspace smaller than the output it needs");
        return GGML_STATUS_FAILED;
    }
    auto * out = static_cast<int8_t *>(alias ? params->workspace_data : node->data);
    auto * scales = reinterpret_cast<float *>(out + k * rows_pad);
    const ggml_status st = run_quantize(params->backend, a, k, rows, group, out, scales);
    if (st != GGML_STATUS_SUCCESS) return st;
    zero_packed_padding(out, k, rows, out_bytes);
    if (alias) std::memmove(node->data, out, out_bytes);
    return GGML_STATUS_SUCCESS;
}

// ---- INT8 GEMM -------------------------------------------------------------------------------

#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3
// (GCC 12's _mm512_reduce_add_epi32 trips -Wmaybe-uninitialized.)
HWY_INLINE int32_t hsum512(__m512i v) {
    alignas(64) int32_t lanes[16];
    _mm512_store_si512(lanes, v);
    int32_t s = 0;
    for (int32_t x : lanes)
        s += x;
    return s;
}
#endif

#if HWY_TARGET == HWY_AVX3_DL
inline constexpr int kMR = 4, kNR = 4;
inline constexpr int64_t kStep = 64;
inline constexpr bool kNeedsSums = true;
// Highway 1.0.3's AVX3_DL target string names VEX avxvnni; its CPU check requires AVX512-VNNI,
// which these functions state themselves.
#define SD_VNNI __attribute__((target("avx512vnni")))

SD_VNNI HWY_NOINLINE void tile(const int8_t * const * wp, const int8_t * const * xp, int64_t kv,
                               int32_t acc_out[kMR][kNR]) {
    __m512i acc[kMR][kNR];
    for (int i = 0; i < kMR; ++i)
        for (int j = 0; j < kNR; ++j)
            acc[i][j] = _mm512_setzero_si512();
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int64_t k = 0; k < kv; k += kStep) {
        __m512i xv[kNR];
        for (int j = 0; j < kNR; ++j)
            xv[j] = _mm512_loadu_si512(xp[j] + k);
        for (int i = 0; i < kMR; ++i) {
            const __m512i wu = _mm512_xor_si512(_mm512_loadu_si512(wp[i] + k), bias);  // w + 128, unsigned
            for (int j = 0; j < kNR; ++j)
                acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], wu, xv[j]);
        }
    }
    for (int i = 0; i < kMR; ++i)
        for (int j = 0; j < kNR; ++j)
            acc_out[i][j] = hsum512(acc[i][j]);
}

SD_VNNI HWY_NOINLINE int32_t row_sum(const int8_t * x, int64_t kv) {
    __m512i acc = _mm512_setzero_si512();
    const __m512i ones = _mm512_set1_epi8(1);
    for (int64_t k = 0; k < kv; k += kStep)
        acc = _mm512_dpbusd_epi32(acc, ones, _mm512_loadu_si512(x + k));
    return hsum512(acc);
}

#elif HWY_TARGET == HWY_AVX3
inline constexpr int kMR = 4, kNR = 4;
inline constexpr int64_t kStep = 64;
inline constexpr bool kNeedsSums = false;

HWY_INLINE void tile(const int8_t * const * wp, const int8_t * const * xp, int64_t kv,
                     int32_t acc_out[kMR][kNR]) {
    __m512i acc[kMR][kNR];
    for (int i = 0; i < kMR; ++i)
        for (int j = 0; j < kNR; ++j)
            acc[i][j] = _mm512_setzero_si512();
    const __m512i ones = _mm512_set1_epi16(1);
    const __m512i zero = _mm512_setzero_si512();
    for (int64_t k = 0; k < kv; k += kStep) {
        __m512i xv[kNR];
        for (int j = 0; j < kNR; ++j)
            xv[j] = _mm512_loadu_si512(xp[j] + k);
        for (int i = 0; i < kMR; ++i) {
            const __m512i w = _mm512_loadu_si512(wp[i] + k);
            const __m512i aw = _mm512_abs_epi8(w);
            const __mmask64 neg = _mm512_movepi8_mask(w);
            for (int j = 0; j < kNR; ++j) {
                const __m512i xs =
                    _mm512_mask_sub_epi8(xv[j], neg, zero, xv[j]);  // x * sign(w) (w = 0: |w| = 0)
                acc[i][j] =
                    _mm512_add_epi32(acc[i][j], _mm512_madd_epi16(_mm512_maddubs_epi16(aw, xs), ones));
            }
        }
    }
    for (int i = 0; i < kMR; ++i)
        for (int j = 0; j < kNR; ++j)
            acc_out[i][j] = hsum512(acc[i][j]);
}

#elif HWY_TARGET == HWY_AVX2
inline constexpr int kMR = 4, kNR = 2;
inline constexpr int64_t kStep = 32;
inline constexpr bool kNeedsSums = false;

HWY_INLINE int32_t hsum256(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

HWY_INLINE void tile(const int8_t * const * wp, const int8_t * const * xp, int64_t kv,
                     int32_t acc_out[kMR][kNR]) {
    __m256i acc[kMR][kNR];
    for (int i = 0; i < kMR; ++i)
        for (int j = 0; j < kNR; ++j)
            acc[i][j] = _mm256_setzero_si256();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t k = 0; k < kv; k += kStep) {
        __m256i xv[kNR];
        for (int j = 0; j < kNR; ++j)
            xv[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xp[j] + k));
        for (int i = 0; i < kMR; ++i) {
            const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(wp[i] + k));
            const __m256i aw = _mm256_sign_epi8(w, w);  // |w|
            for (int j = 0; j < kNR; ++j)
                acc[i][j] = _mm256_add_epi32(
                    acc[i][j], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(xv[j], w)), ones));
        }
    }
    for (int i = 0; i < kMR; ++i)
        for (int j = 0; j < kNR; ++j)
            acc_out[i][j] = hsum256(acc[i][j]);
}

#else  // portable: widening int16 products
inline constexpr int kMR = 2, kNR = 2;
inline constexpr bool kNeedsSums = false;
using D16 = hn::ScalableTag<int16_t>;
using D8 = hn::Rebind<int8_t, D16>;
using D32 = hn::Repartition<int32_t, D16>;

HWY_INLINE int64_t step() { return static_cast<int64_t>(hn::Lanes(D16())); }

HWY_INLINE void tile(const int8_t * const * wp, const int8_t * const * xp, int64_t kv,
                     int32_t acc_out[kMR][kNR]) {
    const D16 d16;
    const D8 d8;
    const D32 d32;
    const int64_t st = step();
    hn::Vec<D32> a0[kMR][kNR], a1[kMR][kNR];
    for (int i = 0; i < kMR; ++i)
        for (int j = 0; j < kNR; ++j)
            a0[i][j] = a1[i][j] = hn::Zero(d32);
    for (int64_t k = 0; k < kv; k += st) {
        hn::Vec<D16> xv[kNR];
        for (int j = 0; j < kNR; ++j)
            xv[j] = hn::PromoteTo(d16, hn::LoadU(d8, xp[j] + k));
        for (int i = 0; i < kMR; ++i) {
            const auto w = hn::PromoteTo(d16, hn::LoadU(d8, wp[i] + k));
            for (int j = 0; j < kNR; ++j)
                a0[i][j] = hn::ReorderWidenMulAccumulate(d32, w, xv[j], a0[i][j], a1[i][j]);
        }
    }
    for (int i = 0; i < kMR; ++i)
        for (int j = 0; j < kNR; ++j)
            acc_out[i][j] = hn::GetLane(hn::SumOfLanes(d32, hn::Add(a0[i][j], a1[i][j])));
}
#endif

#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
HWY_INLINE int64_t step() { return kStep; }
#endif

#if HWY_TARGET != HWY_AVX3_DL
HWY_INLINE int32_t row_sum(const int8_t *, int64_t) { return 0; }
#endif

// The epilogue of one output: each step an F32 operation, in the spec's order.
HWY_INLINE float epilogue(const Gemm & g, int32_t acc, int64_t r, int64_t o) {
    float y = static_cast<float>(acc);
    if (g.sx) y = y * g.sx[r];
    if (g.sw) y = y * g.sw[o];
    if (g.bias) y = y + g.bias[o];
    return y;
}

// Weight rows [w0, w1) x activation rows [x0, x1).
HWY_NOINLINE void gemm_block(const Gemm & g, int64_t w0, int64_t w1, int64_t x0, int64_t x1) {
    const int64_t k = g.k, kv = k / step() * step();
    const int8_t * wp[kMR];
    const int8_t * xp[kNR];
    int32_t acc[kMR][kNR];
    for (int64_t xr = x0; xr < x1; xr += kNR) {
        const int64_t nr = std::min<int64_t>(kNR, x1 - xr);
        for (int j = 0; j < kNR; ++j)
            xp[j] = g.x + (xr + std::min<int64_t>(j, nr - 1)) * k;  // edge: repeat the last row
        for (int64_t wr = w0; wr < w1; wr += kMR) {
            const int64_t mr = std::min<int64_t>(kMR, w1 - wr);
            for (int i = 0; i < kMR; ++i)
                wp[i] = g.w + (wr + std::min<int64_t>(i, mr - 1)) * k;
            tile(wp, xp, kv, acc);
            for (int64_t i = 0; i < mr; ++i)
                for (int64_t j = 0; j < nr; ++j) {
                    int32_t a = acc[i][j];
                    if (kNeedsSums) a -= 128 * g.xsum[xr + j];  // exact modulo 2^32
                    for (int64_t kk = kv; kk < k; ++kk)
                        a += int32_t(wp[i][kk]) * int32_t(xp[j][kk]);
                    g.y[(xr + j) * g.n + wr + i] = epilogue(g, a, xr + j, wr + i);
                }
        }
    }
}

void gemm_task(const ggml_ext_cpu_task * task) {
    const auto & g = *static_cast<const Gemm *>(task->user_data);
    const int64_t nwb = (g.n + kWBlock - 1) / kWBlock, nxb = (g.m + kXBlock - 1) / kXBlock;
    for (int64_t t = task->ith; t < nwb * nxb; t += task->nth) {
        if (g_parallel->should_stop(task)) return;
        const int64_t xb = t / nwb, wb = t % nwb;
        gemm_block(g, wb * kWBlock, std::min(g.n, (wb + 1) * kWBlock), xb * kXBlock,
                   std::min(g.m, (xb + 1) * kXBlock));
    }
}

struct SumJob {
    const int8_t * x;
    int64_t k, m;
    int32_t * sums;
};

void sums_task(const ggml_ext_cpu_task * task) {
    const auto & j = *static_cast<const SumJob *>(task->user_data);
    const int64_t kv = j.k / step() * step();
    const int64_t per = (j.m + task->nth - 1) / task->nth;
    for (int64_t r = task->ith * per; r < std::min(j.m, (task->ith + 1) * per); ++r)
        j.sums[r] = row_sum(j.x + r * j.k, kv);
}

ggml_status ExecuteLinear(const ggml_ext_execute_params * params) {
    ggml_tensor * node = params->node;
    const LinearShape s = linear_shape(node);
    const LinearWorkspace l = linear_workspace(s, node);
    if (params->workspace_size < l.total) {
        ggml_ext_set_error("sd.linear_i8.cpu: workspace smaller than prepare requested");
        return GGML_STATUS_FAILED;
    }
    auto * ws = static_cast<char *>(params->workspace_data);
    ggml_backend_t backend = params->backend;
    const int nth = std::max(1, g_parallel->n_threads(backend));
    Gemm g{};
    g.w = static_cast<const int8_t *>(s.w->data);
    g.k = s.k;
    g.n = s.n;
    g.m = s.rows;
    g.sw = s.ws ? static_cast<const float *>(s.ws->data) : nullptr;
    g.bias = s.bias ? static_cast<const float *>(s.bias->data) : nullptr;
    // Phase 1: the activation codes and scales.
    switch (s.attrs.kind) {
        case kInputF32: {
            auto * codes = reinterpret_cast<int8_t *>(ws + l.codes);
            auto * scales = reinterpret_cast<float *>(ws + l.scales);
            const ggml_status st =
                run_quantize(backend, s.x, s.k, s.rows, std::max(1, s.attrs.group), codes, scales);
            if (st != GGML_STATUS_SUCCESS) return st;
            g.x = codes;
            g.sx = scales;
            break;
        }
        case kInputPacked:
            g.x = static_cast<const int8_t *>(s.x->data);
            g.sx = reinterpret_cast<const float *>(g.x + s.k * packed_rows_pad(s.rows));
            break;
        default:
            g.x = static_cast<const int8_t *>(s.x->data);
            g.sx = s.xs ? static_cast<const float *>(s.xs->data) : nullptr;
            break;
    }
    if (s.rows == 0 || s.n == 0) return GGML_STATUS_SUCCESS;
    const bool on_amx = HWY_TARGET == HWY_AVX3_DL && amx::enabled();
    // Phase 2 (VNNI): the activation row sums of the correction.
    if (kNeedsSums && !on_amx) {
        SumJob job{g.x, s.k, s.rows, reinterpret_cast<int32_t *>(ws + l.sums)};
        const ggml_status st = g_parallel->run(backend, sums_task, &job, int(std::min<int64_t>(nth, s.rows)));
        if (st != GGML_STATUS_SUCCESS) return st;
        g.xsum = job.sums;
    }
    // Phase 3: the product, into the workspace when the output overlaps an input it still reads.
    const size_t out_bytes = ggml_nbytes(node);
    bool alias = false;
    for (int i = 0; i < GGML_MAX_SRC && node->src[i]; ++i) {
        if (i == 1 && s.attrs.kind == kInputF32) continue;  // already consumed by phase 1
        alias = alias || overlaps(node->data, out_bytes, node->src[i]->data, ggml_nbytes(node->src[i]));
    }
    g.y = reinterpret_cast<float *>(alias ? ws + l.alias : static_cast<char *>(node->data));
    const int64_t tasks = ((s.n + kWBlock - 1) / kWBlock) * ((s.rows + kXBlock - 1) / kXBlock);
    const ggml_status st = on_amx ? amx::run(g_parallel, backend, g, ws + l.amx, nth)
                                  : g_parallel->run(backend, gemm_task, &g, int(std::min<int64_t>(nth, tasks)));
    if (st != GGML_STATUS_SUCCESS) return st;
    if (alias) std::memcpy(node->data, g.y, out_bytes);
    return GGML_STATUS_SUCCESS;
}

}  // namespace sd::int8::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace sd::int8::cpu {
HWY_EXPORT(ExecuteQuantize);
HWY_EXPORT(ExecuteLinear);
HWY_EXPORT(quantize_row);

void convrot_row(const float * src, int64_t k, int group, int8_t * codes, float * scale) {
    HWY_DYNAMIC_DISPATCH(quantize_row)(src, k, group, codes, scale);
}

namespace {

bool quantize_supports(ggml_backend_dev_t, const ggml_tensor * node, void *) {
    if (ggml_ext_node_op(node) != quantize_op() || node->type != GGML_TYPE_I8) return false;
    const ggml_tensor * a = node->src[0];
    return a && a->type == GGML_TYPE_F32 && ggml_is_contiguous(a);
}

ggml_status quantize_prepare(const ggml_ext_prepare_params * params, void ** state,
                             size_t * workspace_bytes) {
    *state = nullptr;
    *workspace_bytes = ggml_nbytes(params->node);  // room for an output that overlaps the input
    return GGML_STATUS_SUCCESS;
}

ggml_status quantize_execute(const ggml_ext_execute_params * params) {
    return HWY_DYNAMIC_DISPATCH(ExecuteQuantize)(params);
}

bool linear_supports(ggml_backend_dev_t, const ggml_tensor * node, void *) {
    if (ggml_ext_node_op(node) != linear_op() || node->type != GGML_TYPE_F32) return false;
    const LinearShape s = linear_shape(node);
    // The schema's layout rules; F32 activations may have strided rows (read through nb).
    if (!ggml_is_contiguous(s.w) || s.w->type != GGML_TYPE_I8) return false;
    if (s.attrs.kind == kInputF32) return s.x->type == GGML_TYPE_F32 && s.x->nb[0] == sizeof(float);
    return s.x->type == GGML_TYPE_I8 && ggml_is_contiguous(s.x);
}

ggml_status linear_prepare(const ggml_ext_prepare_params * params, void ** state, size_t * workspace_bytes) {
    *state = nullptr;
    *workspace_bytes = linear_workspace(linear_shape(params->node), params->node).total;
    return GGML_STATUS_SUCCESS;
}

ggml_status linear_execute(const ggml_ext_execute_params * params) {
    return HWY_DYNAMIC_DISPATCH(ExecuteLinear)(params);
}

bool ensure_service() {
    if (g_parallel) return true;
    const auto * p = static_cast<const ggml_ext_cpu_parallel_v1 *>(
        ggml_backend_reg_get_proc_address(ggml_backend_reg_by_name("CPU"), GGML_EXT_CPU_PARALLEL_V1));
    if (!p || p->struct_size < sizeof(ggml_ext_cpu_parallel_v1) ||
        p->version < GGML_EXT_CPU_PARALLEL_V1_VERSION) {
        ggml_ext_set_error("sd int8: the CPU registry offers no ggml_ext_cpu_parallel_v1 service");
        return false;
    }
    g_parallel = p;
    return true;
}

}  // namespace

const ggml_ext_kernel_desc * cpu_quantize_kernel() {
    if (!ensure_service() || !quantize_op()) return nullptr;
    static const ggml_ext_kernel_desc desc = custom_kernel_desc(
        "sd.quantize_i8_convrot.cpu", quantize_op(), quantize_supports, quantize_execute, quantize_prepare);
    return &desc;
}

const ggml_ext_kernel_desc * cpu_linear_kernel() {
    if (!ensure_service() || !linear_op()) return nullptr;
    static const ggml_ext_kernel_desc desc =
        custom_kernel_desc("sd.linear_i8.cpu", linear_op(), linear_supports, linear_execute, linear_prepare);
    return &desc;
}

}  // namespace sd::int8::cpu

namespace sd::int8 {

const ggml_ext_kernel_desc * cpu_quantize_kernel() { return cpu::cpu_quantize_kernel(); }
const ggml_ext_kernel_desc * cpu_linear_kernel() { return cpu::cpu_linear_kernel(); }

bool register_cpu(ggml_backend_dev_t device) {
    const ggml_ext_kernel_desc * q = cpu_quantize_kernel();
    const ggml_ext_kernel_desc * l = cpu_linear_kernel();
    return q && l && ggml_ext_register_kernel(device, q) && ggml_ext_register_kernel(device, l);
}

}  // namespace sd::int8
#endif  // HWY_ONCE
