// Flash attention kernel (GGML_OP_FLASH_ATTN_EXT): for each query row t of head h in batch b,
// out[:, h, t, b] = softmax_j(s_j) * V with s_j = scale * q.k_j (or softcap * tanh(scale * q.k_j /
// softcap)) + slope(h) * mask[j, t]. Online softmax (running max and sum per query); no n_q x n_kv
// score matrix is ever stored. A query whose scores are all -inf outputs zeros. A sink (src[4], one
// value per head) is one more score without a value, folded into the final normalisation.
//
// Two paths, compiled for every Highway target and chosen at run time. Both use one register-tiled
// micro-kernel (C[n][0..MR) = beta * C + sum_k A[k][0..MR) * B[k][n], MR = two vectors, up to 12
// broadcast columns on AVX-512 and 6 on AVX2) for both products, with F32 accumulation.
//
//  * Tiles (n_q >= 16). Work units are tiles of up to kBq = 64 query rows of one head; threads take
//    them from per-thread ranges of a work queue (stealing when done), ordered so that consecutive
//    units share a kv head. K and V of that kv head are converted to F32 once per thread into a
//    cache (K transposed, both in panels of 12/6 keys resp. value columns) when they fit in
//    kCacheCap, else per key block. Per tile, q is packed pre-scaled as Q^T[d][i]. For each block of kBk = 96
//    keys: S^T[j][i] = sum_d Kt[d][j] Q^T[d][i] (queries in vector lanes, keys broadcast); the online softmax
//    runs down the key axis, updating the running max/sum of a whole vector of queries at once; then
//    O^T[c][i] = alpha[i] O^T[c][i] + sum_j V[j][c] P^T[j][i]. A key block whose mask is -inf for every query
//    of the tile is skipped (causal masks cost half).
//  * Rows (n_q < 16, e.g. decoding). Units are the query rows of one query index that share a kv
//    head (up to 12/6 heads of a GQA group), so K/V are read once per group: per chunk of 128 keys,
//    K is converted and transposed, S[r][j] = sum_d Q^T[d][r] Kt[d][j] (keys in lanes), the online
//    softmax runs along each row, and O[r][c] += sum_j P^T[j][r] V[j][c] (values in lanes).

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/attention.cpp"
#include <hwy/foreach_target.h>
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include <ggml.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/internal.h"
#include "cpu/kernels/common.h"
#include "cpu/kernels/exec.h"

#if HWY_ARCH_X86
#include <immintrin.h>
#endif

#ifndef GGX_CPU_ATTENTION_SHARED
#define GGX_CPU_ATTENTION_SHARED
namespace ggx::cpu::fa {

inline constexpr int64_t kBq = 64;        // queries per tile (a multiple of every target's MR)
inline constexpr int64_t kBk = 96;        // keys per block (a multiple of every target's NR)
inline constexpr int64_t kMinTileQ = 16;  // fewer query rows: vector path
inline constexpr int64_t kChunk = 128;    // keys per step of the row path (a multiple of every MR)
inline constexpr int64_t kMaxNR = 16;

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
inline size_t align64(size_t x) { return (x + 63) & ~size_t(63); }

// ALiBi slope of head h of H heads (1 when max_bias == 0), in double, then rounded once.
inline float alibi_slope(float max_bias, int64_t h, int64_t H) {
    if (!(max_bias > 0.0f)) return 1.0f;
    int64_t n = 1;
    while (n * 2 <= H)
        n *= 2;
    const double m0 = std::pow(2.0, -static_cast<double>(max_bias) / static_cast<double>(n));
    const double m1 = std::pow(2.0, -static_cast<double>(max_bias) / static_cast<double>(2 * n));
    return static_cast<float>(h < n ? std::pow(m0, static_cast<double>(h + 1))
                                    : std::pow(m1, static_cast<double>(2 * (h - n) + 1)));
}

// The node's operands and parameters.
struct Problem {
    const ggml_tensor *q, *k, *v, *mask, *sinks;
    ggml_tensor * dst;
    int64_t D, Dv, NQ, H, B, NKV, group, rk, rv;
    float scale, max_bias, softcap;

    explicit Problem(const ggml_tensor * node) {
        q = node->src[0];
        k = node->src[1];
        v = node->src[2];
        mask = node->src[3];
        sinks = node->src[4];
        dst = const_cast<ggml_tensor *>(node);
        D = q->ne[0];
        NQ = q->ne[1];
        H = q->ne[2];
        B = q->ne[3];
        NKV = k->ne[1];
        Dv = v->ne[0];
        group = H / k->ne[2];
        rk = B / k->ne[3];
        rv = B / v->ne[3];
        const auto p = ggx::core::params<ggml_ext_flash_attn_ext_params>(node);
        scale = p.scale;
        max_bias = p.max_bias;
        softcap = p.logit_softcap;
    }
    bool tiled() const { return NQ >= kMinTileQ; }
    const char * k_row(int64_t j, int64_t h, int64_t b) const {
        return static_cast<const char *>(k->data) + j * k->nb[1] + (h / group) * k->nb[2] +
               (b / rk) * k->nb[3];
    }
    const char * v_row(int64_t j, int64_t h, int64_t b) const {
        return static_cast<const char *>(v->data) + j * v->nb[1] + (h / group) * v->nb[2] +
               (b / rv) * v->nb[3];
    }
    const char * q_row(int64_t t, int64_t h, int64_t b) const {
        return static_cast<const char *>(q->data) + t * q->nb[1] + h * q->nb[2] + b * q->nb[3];
    }
    // Mask row of query t (elements along the keys), or nullptr.
    const char * mask_row(int64_t t, int64_t h, int64_t b) const {
        if (!mask) return nullptr;
        return static_cast<const char *>(mask->data) + t * mask->nb[1] + (h % mask->ne[2]) * mask->nb[2] +
               (b % mask->ne[3]) * mask->nb[3];
    }
    float * out_row(int64_t h, int64_t t, int64_t b) const {
        return reinterpret_cast<float *>(static_cast<char *>(dst->data) + h * dst->nb[1] + t * dst->nb[2] +
                                         b * dst->nb[3]);
    }
    // The factor of the unnormalised output of a query of head h whose scores have maximum m and
    // sum l of exp(s - m): 1 / l, or with a sink (one more score, without a value) exp(m - m') /
    // (l exp(m - m') + exp(sink - m')), m' = max(m, sink); 0 when every score was -inf.
    float inverse_sum(float m, float l, int64_t h) const {
        if (!(l > 0.0f)) return 0.0f;
        if (!sinks) return 1.0f / l;
        float sink;
        std::memcpy(&sink, static_cast<const char *>(sinks->data) + h * sinks->nb[0], sizeof sink);
        const float top = std::max(m, sink), keep = std::exp(m - top);
        return keep / (l * keep + std::exp(sink - top));
    }
};

}  // namespace ggx::cpu::fa
#endif

HWY_BEFORE_NAMESPACE();
namespace ggx::cpu::fa::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
constexpr int kNR = 12;
#else
constexpr int kNR = 6;
#endif

HWY_INLINE int64_t lanes() { return static_cast<int64_t>(hn::Lanes(DF())); }
HWY_INLINE int64_t mr_of() { return 2 * lanes(); }

// n elements of an F32/F16 row (elements nb0 bytes apart) into dense F32.
HWY_NOINLINE void convert_row(ggml_type type, const char * src, size_t nb0, int64_t n, float * dst) {
    if (type == GGML_TYPE_F32 && nb0 == sizeof(float)) {
        std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
        return;
    }
    int64_t i = 0;
    if (type == GGML_TYPE_F16 && nb0 == sizeof(ggml_fp16_t)) {
        const DF df;
        const hn::Rebind<hwy::float16_t, DF> dh;
        const int64_t L = lanes();
        const hwy::float16_t * s = reinterpret_cast<const hwy::float16_t *>(src);
        for (; i + L <= n; i += L)
            hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, s + i)), df, dst + i);
    }
    for (; i < n; ++i)
        dst[i] = load_float(type, src + i * nb0);
}

// ---------------------------------------------------------------------------------------------
// Micro-kernel: C[n][0..MR) = beta * C[n][0..MR) + sum_k A[k * lda + (0..MR)] * B[k * ldb + n] for
// n < NR (beta: MR floats, or nullptr for 0).

template <int NR>
HWY_INLINE void micro(const float * HWY_RESTRICT A, int64_t lda, const float * HWY_RESTRICT B, int64_t ldb,
                      int64_t kc, float * HWY_RESTRICT C, int64_t ldc, const float * HWY_RESTRICT beta) {
    const DF d;
    const size_t L = hn::Lanes(d);
    VF c0[NR], c1[NR];
    for (int n = 0; n < NR; ++n) {
        c0[n] = hn::Zero(d);
        c1[n] = hn::Zero(d);
    }
    for (int64_t k = 0; k < kc; ++k) {
        const VF a0 = hn::LoadU(d, A);
        const VF a1 = hn::LoadU(d, A + L);
        A += lda;
        for (int n = 0; n < NR; ++n) {
            const VF b = hn::Set(d, B[n]);
            c0[n] = hn::MulAdd(a0, b, c0[n]);
            c1[n] = hn::MulAdd(a1, b, c1[n]);
        }
        B += ldb;
    }
    if (beta) {
        const VF b0 = hn::LoadU(d, beta), b1 = hn::LoadU(d, beta + L);
        for (int n = 0; n < NR; ++n) {
            c0[n] = hn::MulAdd(b0, hn::LoadU(d, C + n * ldc), c0[n]);
            c1[n] = hn::MulAdd(b1, hn::LoadU(d, C + n * ldc + L), c1[n]);
        }
    }
    for (int n = 0; n < NR; ++n) {
        hn::StoreU(c0[n], d, C + n * ldc);
        hn::StoreU(c1[n], d, C + n * ldc + L);
    }
}

// C rows [0, rows): B is stored in panels of kNR columns (ldb = kNR), panel q at B + q * bpanel;
// a last partial panel runs a narrower kernel.
HWY_NOINLINE void micro_rows(const float * A, int64_t lda, const float * B, int64_t bpanel, int64_t kc,
                             float * C, int64_t ldc, const float * beta, int64_t rows) {
    int64_t n = 0;
    for (; n + kNR <= rows; n += kNR, B += bpanel)
        micro<kNR>(A, lda, B, kNR, kc, C + n * ldc, ldc, beta);
    float * c = C + n * ldc;
    switch (rows - n) {
        case 0:
            break;
        case 1:
            micro<1>(A, lda, B, kNR, kc, c, ldc, beta);
            break;
        case 2:
            micro<2>(A, lda, B, kNR, kc, c, ldc, beta);
            break;
        case 3:
            micro<3>(A, lda, B, kNR, kc, c, ldc, beta);
            break;
        case 4:
            micro<4>(A, lda, B, kNR, kc, c, ldc, beta);
            break;
        case 5:
            micro<5>(A, lda, B, kNR, kc, c, ldc, beta);
            break;
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
        case 6:
            micro<6>(A, lda, B, kNR, kc, c, ldc, beta);
            break;
        case 7:
            micro<7>(A, lda, B, kNR, kc, c, ldc, beta);
            break;
        case 8:
            micro<8>(A, lda, B, kNR, kc, c, ldc, beta);
            break;
        case 9:
            micro<9>(A, lda, B, kNR, kc, c, ldc, beta);
            break;
        case 10:
            micro<10>(A, lda, B, kNR, kc, c, ldc, beta);
            break;
        case 11:
            micro<11>(A, lda, B, kNR, kc, c, ldc, beta);
            break;
#endif
        default:
            break;
    }
}

// dst[c][r] = src[r][c] for r < rows, c < cols (src rows ld_src apart, dst rows ld_dst apart).
HWY_NOINLINE void transpose(const float * HWY_RESTRICT src, int64_t ld_src, int64_t rows, int64_t cols,
                            float * HWY_RESTRICT dst, int64_t ld_dst) {
    // Rows [0, r8) x cols [0, c8) by 8 x 8 blocks, rows [r8, r4) x cols [0, c4) by 4 x 4 blocks, the
    // rest element by element.
    int64_t r8 = 0, c8 = 0, r4 = 0, c4 = 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
    c8 = cols / 8 * 8;
    for (; r8 + 8 <= rows; r8 += 8) {
        const float * s = src + r8 * ld_src;
        for (int64_t c = 0; c < c8; c += 8) {
            __m256 x0 = _mm256_loadu_ps(s + 0 * ld_src + c), x1 = _mm256_loadu_ps(s + 1 * ld_src + c);
            __m256 x2 = _mm256_loadu_ps(s + 2 * ld_src + c), x3 = _mm256_loadu_ps(s + 3 * ld_src + c);
            __m256 x4 = _mm256_loadu_ps(s + 4 * ld_src + c), x5 = _mm256_loadu_ps(s + 5 * ld_src + c);
            __m256 x6 = _mm256_loadu_ps(s + 6 * ld_src + c), x7 = _mm256_loadu_ps(s + 7 * ld_src + c);
            const __m256 t0 = _mm256_unpacklo_ps(x0, x1), t1 = _mm256_unpackhi_ps(x0, x1);
            const __m256 t2 = _mm256_unpacklo_ps(x2, x3), t3 = _mm256_unpackhi_ps(x2, x3);
            const __m256 t4 = _mm256_unpacklo_ps(x4, x5), t5 = _mm256_unpackhi_ps(x4, x5);
            const __m256 t6 = _mm256_unpacklo_ps(x6, x7), t7 = _mm256_unpackhi_ps(x6, x7);
            const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
            const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
            const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
            const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            float * o = dst + c * ld_dst + r8;
            _mm256_storeu_ps(o + 0 * ld_dst, _mm256_permute2f128_ps(u0, u4, 0x20));
            _mm256_storeu_ps(o + 1 * ld_dst, _mm256_permute2f128_ps(u1, u5, 0x20));
            _mm256_storeu_ps(o + 2 * ld_dst, _mm256_permute2f128_ps(u2, u6, 0x20));
            _mm256_storeu_ps(o + 3 * ld_dst, _mm256_permute2f128_ps(u3, u7, 0x20));
            _mm256_storeu_ps(o + 4 * ld_dst, _mm256_permute2f128_ps(u0, u4, 0x31));
            _mm256_storeu_ps(o + 5 * ld_dst, _mm256_permute2f128_ps(u1, u5, 0x31));
            _mm256_storeu_ps(o + 6 * ld_dst, _mm256_permute2f128_ps(u2, u6, 0x31));
            _mm256_storeu_ps(o + 7 * ld_dst, _mm256_permute2f128_ps(u3, u7, 0x31));
        }
    }
    c4 = cols / 4 * 4;
    for (r4 = r8; r4 + 4 <= rows; r4 += 4) {
        const float * s = src + r4 * ld_src;
        for (int64_t c = 0; c < c4; c += 4) {
            __m128 x0 = _mm_loadu_ps(s + c), x1 = _mm_loadu_ps(s + ld_src + c);
            __m128 x2 = _mm_loadu_ps(s + 2 * ld_src + c), x3 = _mm_loadu_ps(s + 3 * ld_src + c);
            _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
            float * o = dst + c * ld_dst + r4;
            _mm_storeu_ps(o, x0);
            _mm_storeu_ps(o + ld_dst, x1);
            _mm_storeu_ps(o + 2 * ld_dst, x2);
            _mm_storeu_ps(o + 3 * ld_dst, x3);
        }
    }
#endif
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t c0 = r < r8 ? c8 : (r < r4 ? c4 : 0);
        for (int64_t c = c0; c < cols; ++c)
            dst[c * ld_dst + r] = src[r * ld_src + c];
    }
}

// ---------------------------------------------------------------------------------------------
// Tile path.

struct TileBuffers {
    float * qt;            // Q^T: [D][kBq], pre-scaled, zero for missing queries
    float * kf;            // scratch: K rows converted, [kBk][max(D, Dv)]
    float * kt;            // Kt in panels of kNR keys (see convert_kv_block)
    float * vf;            // V in panels of kNR columns (see convert_kv_block)
    float * st;            // S^T / P^T: [kBk][kBq]
    float * ot;            // O^T: [Dvp][kBq]
    float * mt;            // mask^T * slope: [kBk][kBq]
    float * mrows;         // mask rows of the tile: [kBq][kBk]
    float *m, *l, *alpha;  // [kBq] each
    float * row;           // scratch row: max(kBk, D, Dv) floats
    // Whole-sequence K/V of one kv head, converted once per thread and reused by all its tiles
    // (nullptr when too large or not worth it): block jb at kcache + jb * D * kBk (Kt layout) and
    // vcache + jb * kBk * Dvp.
    float *kcache = nullptr, *vcache = nullptr;
};

HWY_INLINE int64_t dv_pad(int64_t Dv) { return round_up(std::max<int64_t>(Dv, 1), kNR); }

inline constexpr size_t kCacheCap = size_t(32) << 20;  // bytes of K/V cache per thread

HWY_INLINE size_t cache_bytes(const Problem & p) {
    const size_t blocks = static_cast<size_t>((p.NKV + kBk - 1) / kBk);
    const size_t D = static_cast<size_t>(std::max<int64_t>(p.D, 1)), Dvp = static_cast<size_t>(dv_pad(p.Dv));
    const size_t bytes =
        align64(sizeof(float) * blocks * D * kBk) + align64(sizeof(float) * blocks * kBk * Dvp);
    return p.NQ > kBq && bytes <= kCacheCap ? bytes : 0;
}

HWY_INLINE size_t tile_bytes(const Problem & p) {
    const size_t D = static_cast<size_t>(std::max<int64_t>(p.D, 1)), Dvp = static_cast<size_t>(dv_pad(p.Dv));
    const size_t f = sizeof(float);
    return align64(f * D * kBq) + align64(f * kBk * std::max<size_t>(D, Dvp)) + align64(f * D * kBk) +
           align64(f * kBk * Dvp) + align64(f * kBk * kBq) + align64(f * Dvp * kBq) +
           2 * align64(f * kBk * kBq) + 3 * align64(f * kBq) +
           align64(f * static_cast<size_t>(std::max<int64_t>({kBk, p.D, p.Dv}))) + cache_bytes(p);
}

HWY_INLINE TileBuffers tile_buffers(const Problem & p, char * base) {
    const size_t D = static_cast<size_t>(std::max<int64_t>(p.D, 1)), Dvp = static_cast<size_t>(dv_pad(p.Dv));
    const size_t f = sizeof(float);
    TileBuffers t;
    auto take = [&](size_t bytes) {
        float * r = reinterpret_cast<float *>(base);
        base += align64(bytes);
        return r;
    };
    t.qt = take(f * D * kBq);
    t.kf = take(f * kBk * std::max<size_t>(D, Dvp));
    t.kt = take(f * D * kBk);
    t.vf = take(f * kBk * Dvp);
    t.st = take(f * kBk * kBq);
    t.ot = take(f * Dvp * kBq);
    t.mt = take(f * kBk * kBq);
    t.mrows = take(f * kBq * kBk);
    t.m = take(f * kBq);
    t.l = take(f * kBq);
    t.alpha = take(f * kBq);
    t.row = take(f * static_cast<size_t>(std::max<int64_t>({kBk, p.D, p.Dv})));
    if (cache_bytes(p) > 0) {
        const size_t blocks = static_cast<size_t>((p.NKV + kBk - 1) / kBk);
        t.kcache = take(f * blocks * D * kBk);
        t.vcache = take(f * blocks * kBk * Dvp);
    }
    return t;
}

// K block [j0, j0 + bk) of (h, b) -> Kt in panels of kNR keys: kt[(j / kNR) * D * kNR + d * kNR +
// j % kNR], zero for keys beyond bk in the last panel. V block -> panels of kNR value columns:
// vf[(c / kNR) * kBk * kNR + j * kNR + c % kNR], zero for columns beyond Dv. kf: bk x max(D, Dv)
// floats of scratch.
HWY_NOINLINE void convert_kv_block(const Problem & p, int64_t h, int64_t b, int64_t j0, int64_t bk,
                                   float * kt, float * vf, float * kf) {
    const int64_t D = p.D, Dv = p.Dv;
    const bool kdirect = p.k->type == GGML_TYPE_F32 && p.k->nb[0] == sizeof(float) &&
                         (bk == 1 || p.k->nb[1] % sizeof(float) == 0);
    const float * ksrc = kf;
    int64_t ld = D;
    if (kdirect) {
        ksrc = reinterpret_cast<const float *>(p.k_row(j0, h, b));
        ld = static_cast<int64_t>(p.k->nb[1] / sizeof(float));
    } else {
        for (int64_t j = 0; j < bk; ++j)
            convert_row(p.k->type, p.k_row(j0 + j, h, b), p.k->nb[0], D, kf + j * D);
    }
    for (int64_t j = 0; j < bk; j += kNR) {
        const int64_t nr = std::min<int64_t>(kNR, bk - j);
        float * panel = kt + (j / kNR) * D * kNR;
        transpose(ksrc + j * ld, ld, nr, D, panel, kNR);
        for (int64_t c = 0; c < D; ++c)
            for (int64_t r = nr; r < kNR; ++r)
                panel[c * kNR + r] = 0.0f;
    }
    for (int64_t j = 0; j < bk; ++j) {
        convert_row(p.v->type, p.v_row(j0 + j, h, b), p.v->nb[0], Dv, kf);
        for (int64_t c0 = 0; c0 < Dv; c0 += kNR) {
            float * dst = vf + (c0 / kNR) * kBk * kNR + j * kNR;
            const int64_t nc = std::min<int64_t>(kNR, Dv - c0);
            std::memcpy(dst, kf + c0, static_cast<size_t>(nc) * sizeof(float));
            for (int64_t c = nc; c < kNR; ++c)
                dst[c] = 0.0f;
        }
    }
}

// Online softmax update of the tile's scores S^T (bk keys x nqp queries): scores finished (softcap,
// mask), running max m and sum l updated, S^T replaced by P^T = exp(s - m), alpha = exp(m_old - m).
HWY_NOINLINE void softmax_update(const Problem & p, const TileBuffers & w, int64_t nqp, int64_t bk) {
    const DF df;
    const int64_t L = lanes();
    const float inf = std::numeric_limits<float>::infinity();
    const bool capped = p.softcap != 0.0f;
    for (int64_t i0 = 0; i0 < nqp; i0 += L) {
        VF mx = hn::Set(df, -inf);
        for (int64_t j = 0; j < bk; ++j) {
            VF s = hn::LoadU(df, w.st + j * kBq + i0);
            if (capped) s = hn::Mul(hn::Set(df, p.softcap), hn::Tanh(df, s));
            if (p.mask) s = hn::Add(s, hn::LoadU(df, w.mt + j * kBq + i0));
            hn::StoreU(s, df, w.st + j * kBq + i0);
            mx = hn::Max(mx, s);
        }
        const VF mold = hn::LoadU(df, w.m + i0);
        const VF mnew = hn::Max(mold, mx);
        // Where every score so far is -inf, subtract 0 instead: exp gives 0, not NaN.
        const VF msafe = hn::IfThenZeroElse(hn::Eq(mnew, hn::Set(df, -inf)), mnew);
        const VF alpha = hn::Exp(df, hn::Sub(mold, msafe));
        VF sum = hn::Zero(df);
        for (int64_t j = 0; j < bk; ++j) {
            const VF e = hn::Exp(df, hn::Sub(hn::LoadU(df, w.st + j * kBq + i0), msafe));
            hn::StoreU(e, df, w.st + j * kBq + i0);
            sum = hn::Add(sum, e);
        }
        hn::StoreU(mnew, df, w.m + i0);
        hn::StoreU(hn::MulAdd(hn::LoadU(df, w.l + i0), alpha, sum), df, w.l + i0);
        hn::StoreU(alpha, df, w.alpha + i0);
    }
}

// One tile: queries [t0, t0 + nq) of head h, batch b.
HWY_NOINLINE void tile(const Problem & p, int64_t h, int64_t b, int64_t t0, int64_t nq, const TileBuffers & w,
                       const Exec & ex) {
    const int64_t MR = mr_of();
    const int64_t D = p.D, Dv = p.Dv, Dvp = dv_pad(Dv);
    const int64_t nqp = round_up(nq, MR);  // query columns computed
    const float inf = std::numeric_limits<float>::infinity();
    const bool capped = p.softcap != 0.0f;
    const float qscale = capped ? p.scale / p.softcap : p.scale;
    const float slope = alibi_slope(p.max_bias, h, p.H);

    // Q^T, pre-scaled (1/l is applied at the end, so O^T may start unscaled); running state.
    const bool qdirect = p.q->nb[0] == sizeof(float) && p.q->nb[1] % sizeof(float) == 0;
    if (qdirect) {
        transpose(reinterpret_cast<const float *>(p.q_row(t0, h, b)),
                  static_cast<int64_t>(p.q->nb[1] / sizeof(float)), nq, D, w.qt, kBq);
    } else {
        for (int64_t i = 0; i < nq; ++i) {
            convert_row(p.q->type, p.q_row(t0 + i, h, b), p.q->nb[0], D, w.row);
            for (int64_t c = 0; c < D; ++c)
                w.qt[c * kBq + i] = w.row[c];
        }
    }
    {
        const DF df;
        const int64_t L = lanes();
        const VF vs = hn::Set(df, qscale);
        for (int64_t c = 0; c < D; ++c) {
            float * row = w.qt + c * kBq;
            for (int64_t i = nq; i < nqp; ++i)
                row[i] = 0.0f;
            for (int64_t i = 0; i < nqp; i += L)
                hn::StoreU(hn::Mul(hn::LoadU(df, row + i), vs), df, row + i);
        }
    }
    for (int64_t i = 0; i < nqp; ++i) {
        w.m[i] = -inf;
        w.l[i] = 0.0f;
    }
    std::fill(w.ot, w.ot + Dvp * kBq, 0.0f);

    for (int64_t j0 = 0; j0 < p.NKV; j0 += kBk) {
        const int64_t bk = std::min(kBk, p.NKV - j0);
        const int64_t bkp = round_up(bk, kNR);
        // Mask (times slope), transposed; a block masked out for every query is skipped.
        if (p.mask) {
            const DF df;
            const int64_t L = lanes();
            VF mx = hn::Set(df, -inf);
            for (int64_t i = 0; i < nq; ++i) {
                float * mrow = w.mrows + i * kBk;
                convert_row(p.mask->type, p.mask_row(t0 + i, h, b) + j0 * p.mask->nb[0], p.mask->nb[0], bk,
                            mrow);
                int64_t j = 0;
                for (; j + L <= bk; j += L)
                    mx = hn::Max(mx, hn::LoadU(df, mrow + j));
                for (; j < bk; ++j)
                    mx = hn::Max(mx, hn::Set(df, mrow[j]));
            }
            // The slope is positive: -inf stays -inf.
            if (hn::GetLane(hn::MaxOfLanes(df, mx)) == -inf) continue;
            transpose(w.mrows, kBk, nq, bk, w.mt, kBq);
            const VF vs = hn::Set(df, slope);
            for (int64_t j = 0; j < bk; ++j) {
                float * row = w.mt + j * kBq;
                for (int64_t i = nq; i < nqp; ++i)
                    row[i] = 0.0f;
                if (slope != 1.0f)
                    for (int64_t i = 0; i < nqp; i += L)
                        hn::StoreU(hn::Mul(hn::LoadU(df, row + i), vs), df, row + i);
            }
        }
        const float * kt = w.kt;
        const float * vf = w.vf;
        if (w.kcache) {
            kt = w.kcache + (j0 / kBk) * D * kBk;
            vf = w.vcache + (j0 / kBk) * kBk * Dvp;
        } else {
            convert_kv_block(p, h, b, j0, bk, w.kt, w.vf, w.kf);
        }
        // S^T[j][i] = sum_d Kt[d][j] Q^T[d][i].
        for (int64_t i0 = 0; i0 < nqp; i0 += MR)
            micro_rows(w.qt + i0, kBq, kt, D * kNR, D, w.st + i0, kBq, nullptr, bkp);
        softmax_update(p, w, nqp, bk);
        // O^T[c][i] = alpha[i] O^T[c][i] + sum_j V[j][c] P^T[j][i].
        for (int64_t i0 = 0; i0 < nqp; i0 += MR)
            micro_rows(w.st + i0, kBq, vf, kBk * kNR, bk, w.ot + i0, kBq, w.alpha + i0, Dv);
        if (ex.should_stop()) return;
    }
    // out[c, h, t0 + i, b] = O^T[c][i] / l[i] (zeros where every score was -inf).
    const int64_t ld_out = static_cast<int64_t>(p.dst->nb[2] / sizeof(float));
    float * out0 = p.out_row(h, t0, b);
    transpose(w.ot, kBq, Dv, nq, out0, ld_out);
    const DF df;
    const int64_t L = lanes();
    for (int64_t i = 0; i < nq; ++i) {
        float * out = out0 + i * ld_out;
        const VF inv = hn::Set(df, p.inverse_sum(w.m[i], w.l[i], h));
        int64_t c = 0;
        for (; c + L <= Dv; c += L)
            hn::StoreU(hn::Mul(hn::LoadU(df, out + c), inv), df, out + c);
        for (; c < Dv; ++c)
            out[c] *= hn::GetLane(inv);
    }
}

// ---------------------------------------------------------------------------------------------
// Row path (n_q < 16, e.g. decoding): the query rows of one query index that share a kv head (up to
// kNR of a GQA group) are processed together, keys in vector lanes. Per chunk of kChunk keys: K is
// converted and transposed to Kt[d][j], S[r][j] = sum_d Q^T[d][r] Kt[d][j] (micro-kernel, keys in
// lanes), the online softmax runs along each row, then O[r][c] += sum_j P^T[j][r] V[j][c] (values in
// lanes). K/V are read once per group instead of once per head.

struct RowBuffers {
    float * qt;    // Q^T: [D][kNR], pre-scaled
    float * kf;    // scratch: converted K rows [kChunk][D] / one V row
    float * kt;    // Kt: [D][kChunk]
    float * vf;    // V rows: [kChunk][Dvm], zero beyond Dv
    float * s;     // S / P: [kNR][kChunk]
    float * pt;    // P^T: [kChunk][kNR]
    float * mk;    // mask * slope: [kNR][kChunk]
    float * o;     // O: [kNR][Dvm]
    float * ones;  // Dvm ones (accumulating beta)
};

HWY_INLINE int64_t dv_lanes(int64_t Dv) { return round_up(std::max<int64_t>(Dv, 1), mr_of()); }

HWY_INLINE size_t row_bytes(const Problem & p) {
    const size_t f = sizeof(float), D = static_cast<size_t>(std::max<int64_t>(p.D, 1));
    const size_t Dvm = static_cast<size_t>(dv_lanes(p.Dv));
    return align64(f * D * kNR) + align64(f * kChunk * std::max(D, Dvm)) + align64(f * D * kChunk) +
           align64(f * kChunk * Dvm) + 3 * align64(f * kNR * kChunk) + align64(f * kNR * Dvm) +
           align64(f * Dvm);
}

HWY_INLINE RowBuffers row_buffers(const Problem & p, char * base) {
    const size_t f = sizeof(float), D = static_cast<size_t>(std::max<int64_t>(p.D, 1));
    const size_t Dvm = static_cast<size_t>(dv_lanes(p.Dv));
    auto take = [&](size_t bytes) {
        float * r = reinterpret_cast<float *>(base);
        base += align64(bytes);
        return r;
    };
    RowBuffers w;
    w.qt = take(f * D * kNR);
    w.kf = take(f * kChunk * std::max(D, Dvm));
    w.kt = take(f * D * kChunk);
    w.vf = take(f * kChunk * Dvm);
    w.s = take(f * kNR * kChunk);
    w.pt = take(f * kChunk * kNR);
    w.mk = take(f * kNR * kChunk);
    w.o = take(f * kNR * Dvm);
    w.ones = take(f * Dvm);
    return w;
}

// micro<nr> for a run-time nr in [1, kNR].
HWY_INLINE void micro_n(int64_t nr, const float * A, int64_t lda, const float * B, int64_t ldb, int64_t kc,
                        float * C, int64_t ldc, const float * beta) {
    switch (nr) {
        case 1:
            micro<1>(A, lda, B, ldb, kc, C, ldc, beta);
            break;
        case 2:
            micro<2>(A, lda, B, ldb, kc, C, ldc, beta);
            break;
        case 3:
            micro<3>(A, lda, B, ldb, kc, C, ldc, beta);
            break;
        case 4:
            micro<4>(A, lda, B, ldb, kc, C, ldc, beta);
            break;
        case 5:
            micro<5>(A, lda, B, ldb, kc, C, ldc, beta);
            break;
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
        case 6:
            micro<6>(A, lda, B, ldb, kc, C, ldc, beta);
            break;
        case 7:
            micro<7>(A, lda, B, ldb, kc, C, ldc, beta);
            break;
        case 8:
            micro<8>(A, lda, B, ldb, kc, C, ldc, beta);
            break;
        case 9:
            micro<9>(A, lda, B, ldb, kc, C, ldc, beta);
            break;
        case 10:
            micro<10>(A, lda, B, ldb, kc, C, ldc, beta);
            break;
        case 11:
            micro<11>(A, lda, B, ldb, kc, C, ldc, beta);
            break;
#endif
        default:
            micro<kNR>(A, lda, B, ldb, kc, C, ldc, beta);
            break;
    }
}

// Query index t of batch b, heads h0 .. h0 + R - 1 (all sharing one kv head), R <= kNR.
HWY_NOINLINE void rows(const Problem & p, int64_t b, int64_t h0, int64_t R, int64_t t, const RowBuffers & w,
                       const Exec & ex) {
    const DF df;
    const int64_t L = lanes(), MR = mr_of();
    const int64_t D = p.D, Dv = p.Dv, Dvm = dv_lanes(Dv);
    const float inf = std::numeric_limits<float>::infinity();
    const bool capped = p.softcap != 0.0f;
    const float qscale = capped ? p.scale / p.softcap : p.scale;
    float m[kMaxNR], l[kMaxNR], slope[kMaxNR];
    for (int64_t r = 0; r < R; ++r) {
        convert_row(p.q->type, p.q_row(t, h0 + r, b), p.q->nb[0], D, w.kf);
        for (int64_t c = 0; c < D; ++c)
            w.qt[c * kNR + r] = w.kf[c] * qscale;
        m[r] = -inf;
        l[r] = 0.0f;
        slope[r] = alibi_slope(p.max_bias, h0 + r, p.H);
    }
    std::fill(w.o, w.o + R * Dvm, 0.0f);
    std::fill(w.ones, w.ones + Dvm, 1.0f);
    const bool kdirect =
        p.k->type == GGML_TYPE_F32 && p.k->nb[0] == sizeof(float) && p.k->nb[1] % sizeof(float) == 0;

    for (int64_t j0 = 0; j0 < p.NKV; j0 += kChunk) {
        const int64_t nk = std::min(kChunk, p.NKV - j0);
        const int64_t nkp = round_up(nk, MR);
        if (p.mask) {
            bool any = false;
            for (int64_t r = 0; r < R; ++r) {
                float * mr = w.mk + r * kChunk;
                convert_row(p.mask->type, p.mask_row(t, h0 + r, b) + j0 * p.mask->nb[0], p.mask->nb[0], nk,
                            mr);
                for (int64_t j = 0; j < nk; ++j) {
                    mr[j] *= slope[r];
                    any |= mr[j] != -inf;
                }
            }
            if (!any) continue;
        }
        // Kt[d][j], zero for j in [nk, nkp).
        if (kdirect && nk > 1) {
            transpose(reinterpret_cast<const float *>(p.k_row(j0, h0, b)),
                      static_cast<int64_t>(p.k->nb[1] / sizeof(float)), nk, D, w.kt, kChunk);
        } else {
            for (int64_t j = 0; j < nk; ++j)
                convert_row(p.k->type, p.k_row(j0 + j, h0, b), p.k->nb[0], D, w.kf + j * D);
            transpose(w.kf, D, nk, D, w.kt, kChunk);
        }
        if (nkp > nk)
            for (int64_t c = 0; c < D; ++c)
                std::fill(w.kt + c * kChunk + nk, w.kt + c * kChunk + nkp, 0.0f);
        // S[r][j] for the key panels.
        for (int64_t jp = 0; jp < nkp; jp += MR)
            micro_n(R, w.kt + jp, kChunk, w.qt, kNR, D, w.s + jp, kChunk, nullptr);
        // Online softmax along each row; P^T[j][r].
        for (int64_t r = 0; r < R; ++r) {
            float * s = w.s + r * kChunk;
            const float * mk = w.mk + r * kChunk;
            VF mx = hn::Set(df, -inf);
            int64_t j = 0;
            for (; j + L <= nk; j += L) {
                VF v = hn::LoadU(df, s + j);
                if (capped) v = hn::Mul(hn::Set(df, p.softcap), hn::Tanh(df, v));
                if (p.mask) v = hn::Add(v, hn::LoadU(df, mk + j));
                hn::StoreU(v, df, s + j);
                mx = hn::Max(mx, v);
            }
            float mxs = hn::GetLane(hn::MaxOfLanes(df, mx));
            for (; j < nk; ++j) {
                float v = s[j];
                if (capped) v = p.softcap * std::tanh(v);
                if (p.mask) v += mk[j];
                s[j] = v;
                mxs = std::max(mxs, v);
            }
            const float mnew = std::max(m[r], mxs);
            const float msafe = mnew == -inf ? 0.0f : mnew;
            const float alpha = std::exp(m[r] - msafe);
            VF sum = hn::Zero(df);
            const VF vm = hn::Set(df, msafe);
            for (j = 0; j + L <= nk; j += L) {
                const VF e = hn::Exp(df, hn::Sub(hn::LoadU(df, s + j), vm));
                hn::StoreU(e, df, s + j);
                sum = hn::Add(sum, e);
            }
            float sums = hn::GetLane(hn::SumOfLanes(df, sum));
            for (; j < nk; ++j) {
                s[j] = std::exp(s[j] - msafe);
                sums += s[j];
            }
            for (j = 0; j < nk; ++j)
                w.pt[j * kNR + r] = s[j];
            m[r] = mnew;
            l[r] = l[r] * alpha + sums;
            if (alpha != 1.0f) {
                float * o = w.o + r * Dvm;
                for (int64_t c = 0; c < Dvm; c += L)
                    hn::StoreU(hn::Mul(hn::LoadU(df, o + c), hn::Set(df, alpha)), df, o + c);
            }
        }
        // V rows, zero beyond Dv.
        for (int64_t j = 0; j < nk; ++j) {
            float * vr = w.vf + j * Dvm;
            convert_row(p.v->type, p.v_row(j0 + j, h0, b), p.v->nb[0], Dv, vr);
            std::fill(vr + Dv, vr + Dvm, 0.0f);
        }
        // O[r][c] += sum_j P^T[j][r] V[j][c].
        for (int64_t c0 = 0; c0 < Dvm; c0 += MR)
            micro_n(R, w.vf + c0, Dvm, w.pt, kNR, nk, w.o + c0, Dvm, w.ones + c0);
        if (ex.should_stop()) return;
    }
    for (int64_t r = 0; r < R; ++r) {
        float * out = p.out_row(h0 + r, t, b);
        const float inv = p.inverse_sum(m[r], l[r], h0 + r);
        for (int64_t c = 0; c < Dv; ++c)
            out[c] = w.o[r * Dvm + c] * inv;
    }
}

// ---------------------------------------------------------------------------------------------
// Entry points.

// Units are dealt out in nth contiguous ranges, one per thread (so a thread keeps to few kv heads
// and converts few K/V caches); a thread that finishes its range takes units from the others'.
class WorkQueue {
public:
    WorkQueue(char * slots, int64_t units, int ith, int nth)
        : slots_(slots), units_(units), ith_(ith), nth_(nth) {}
    static size_t bytes(int nth) { return 64 * static_cast<size_t>(nth); }
    void reset() {
        for (int j = 0; j < nth_; ++j)
            counter(j).store(0, std::memory_order_relaxed);
    }
    // The next unit, or -1 when none is left.
    int64_t next() {
        for (int k = 0; k < nth_; ++k) {
            const int j = (ith_ + k) % nth_;
            const auto [begin, end] = chunk_range(units_, j, nth_);
            if (begin + counter(j).load(std::memory_order_relaxed) >= end) continue;
            const int64_t u = begin + counter(j).fetch_add(1, std::memory_order_relaxed);
            if (u < end) return u;
        }
        return -1;
    }

private:
    std::atomic_ref<int64_t> counter(int j) const {
        return std::atomic_ref<int64_t>(*reinterpret_cast<int64_t *>(slots_ + 64 * j));
    }
    char * slots_;
    int64_t units_;
    int ith_, nth_;
};

size_t Workspace(const ggml_tensor * node, int n_threads) {
    const Problem p(node);
    const size_t per = p.tiled() ? tile_bytes(p) : row_bytes(p);
    const int nth = std::max(n_threads, 1);
    return WorkQueue::bytes(nth) + per * static_cast<size_t>(nth) + 64;
}

void Compute(const Exec & ex, ggml_tensor * node) {
    const Problem p(node);
    const size_t need = Workspace(node, ex.nth);
    if (ex.workspace_size < need || ex.workspace == nullptr) {
        if (ex.ith == 0) ex.fail("flash_attn_ext: workspace smaller than Kernel::workspace asked for");
        return;
    }
    if (p.NQ == 0 || p.H == 0 || p.B == 0 || p.Dv == 0) return;
    const size_t per = p.tiled() ? tile_bytes(p) : row_bytes(p);
    char * mine = ex.workspace + WorkQueue::bytes(ex.nth) + per * static_cast<size_t>(ex.ith);
    const int64_t hkv = p.k->ne[2];
    const int64_t tiles_per_head = (p.NQ + kBq - 1) / kBq;
    const int64_t chunks = (p.group + kNR - 1) / kNR;  // row path: heads of a group per unit, kNR at a time
    const int64_t units = p.tiled() ? tiles_per_head * p.H * p.B : chunks * hkv * p.NQ * p.B;
    WorkQueue queue(ex.workspace, units, ex.ith, ex.nth);
    if (ex.ith == 0) queue.reset();
    ex.sync();
    if (p.tiled()) {
        const TileBuffers w = tile_buffers(p, mine);
        int64_t cached = -1;  // (b, kv head) whose K/V the cache holds
        for (;;) {
            const int64_t u = queue.next();
            if (u < 0 || ex.should_stop()) break;
            // Unit order: batch, kv head, tile, head within the kv head's group; consecutive units
            // share K/V.
            const int64_t g = u % p.group, tile_index = u / p.group % tiles_per_head;
            const int64_t hk = u / (p.group * tiles_per_head) % hkv, b = u / (p.group * tiles_per_head * hkv);
            const int64_t h = hk * p.group + g, t0 = tile_index * kBq;
            if (w.kcache && cached != b * hkv + hk) {
                cached = b * hkv + hk;
                for (int64_t j0 = 0; j0 < p.NKV; j0 += kBk)
                    convert_kv_block(p, h, b, j0, std::min(kBk, p.NKV - j0),
                                     w.kcache + (j0 / kBk) * p.D * kBk,
                                     w.vcache + (j0 / kBk) * kBk * dv_pad(p.Dv), w.kf);
            }
            tile(p, h, b, t0, std::min(kBq, p.NQ - t0), w, ex);
        }
    } else {
        const RowBuffers w = row_buffers(p, mine);
        // Units: (batch, query index, kv head, chunk of up to kNR heads of its group).
        for (;;) {
            const int64_t u = queue.next();
            if (u < 0 || ex.should_stop()) break;
            const int64_t chunk = u % chunks, hk = u / chunks % hkv, t = u / (chunks * hkv) % p.NQ;
            const int64_t b = u / (chunks * hkv * p.NQ);
            const int64_t g0 = chunk * kNR;
            rows(p, b, hk * p.group + g0, std::min<int64_t>(kNR, p.group - g0), t, w, ex);
        }
    }
}

}  // namespace ggx::cpu::fa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ggx::cpu {
namespace fa {
HWY_EXPORT(Workspace);
HWY_EXPORT(Compute);

static bool supports(const ggml_tensor * node) {
    if (node->op != GGML_OP_FLASH_ATTN_EXT || node->type != GGML_TYPE_F32) return false;
    const ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2], *mask = node->src[3];
    if (!q || !k || !v) return false;
    const ggml_tensor * sinks = node->src[4];
    if (sinks && (sinks->type != GGML_TYPE_F32 || ggml_nelements(sinks) != q->ne[2])) return false;
    auto kv_type = [](const ggml_tensor * t) { return t->type == GGML_TYPE_F32 || t->type == GGML_TYPE_F16; };
    if (q->type != GGML_TYPE_F32 || !kv_type(k) || !kv_type(v)) return false;
    if (q->ne[0] != k->ne[0] || k->ne[1] != v->ne[1] || k->ne[2] != v->ne[2] || k->ne[3] != v->ne[3])
        return false;
    if (k->ne[2] <= 0 || q->ne[2] % k->ne[2] != 0 || k->ne[3] <= 0 || q->ne[3] % k->ne[3] != 0) return false;
    if (mask) {
        if (mask->type != GGML_TYPE_F32 && mask->type != GGML_TYPE_F16) return false;
        if (mask->ne[0] != k->ne[1] || mask->ne[1] < q->ne[1] || mask->ne[2] <= 0 || mask->ne[3] <= 0)
            return false;
        if (q->ne[2] % mask->ne[2] != 0 || q->ne[3] % mask->ne[3] != 0) return false;
    }
    return node->ne[0] == v->ne[0] && node->ne[1] == q->ne[2] && node->ne[2] == q->ne[1] &&
           node->ne[3] == q->ne[3] && node->nb[0] == sizeof(float);
}

static size_t workspace(const ggml_tensor * node, int n_threads) {
    return HWY_DYNAMIC_DISPATCH(Workspace)(node, std::max(n_threads, 1));
}

static void compute(const ComputeParams & params, ggml_tensor * node) {
    HWY_DYNAMIC_DISPATCH(Compute)(Exec::of(params), node);
}
}  // namespace fa

// ---------------------------------------------------------------------------------------------
// DeepSeek's model-specific attention ops (docs/ops.md): LIGHTNING_INDEXER and the hyper-connection
// ops DSV4_HC_COMB, DSV4_HC_PRE, DSV4_HC_POST. All inputs are F32 (the indexer's keys F16 too) and
// may be strided; the results are contiguous F32.
namespace deepseek {

float f32_value(const ggml_tensor * t, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) {
    return load_float(t->type, element_at(t, i0, i1, i2, i3));
}
float * out_at(const ggml_tensor * t, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) {
    return reinterpret_cast<float *>(element_at(t, i0, i1, i2, i3));
}

bool f32_node(const ggml_tensor * node, ggml_op op) {
    return node->op == op && node->type == GGML_TYPE_F32 && ggml_is_contiguous(node);
}

// LIGHTNING_INDEXER: r[j, t, 0, b] = sum_h w[h, t, 0, b] * relu(q[:, h, t, b] . k[:, 0, j, b]) +
// mask[j, t, 0, b mod B']. Units are blocks of kKeyBlock keys of one batch, converted to F32 once.
constexpr int64_t kKeyBlock = 64;

bool indexer_supports(const ggml_tensor * node) {
    if (!f32_node(node, GGML_OP_LIGHTNING_INDEXER)) return false;
    const ggml_tensor *q = node->src[0], *k = node->src[1], *w = node->src[2], *mask = node->src[3];
    return q && k && w && mask && q->type == GGML_TYPE_F32 && w->type == GGML_TYPE_F32 &&
           (k->type == GGML_TYPE_F32 || k->type == GGML_TYPE_F16) && mask->type == GGML_TYPE_F16;
}

int64_t indexer_floats(const ggml_tensor * node) { return (kKeyBlock + 1) * node->src[0]->ne[0]; }

size_t indexer_workspace(const ggml_tensor * node, int n_threads) {
    return fa::align64(static_cast<size_t>(indexer_floats(node)) * sizeof(float)) *
           static_cast<size_t>(n_threads);
}

void indexer_compute(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *q = node->src[0], *k = node->src[1], *w = node->src[2], *mask = node->src[3];
    const int64_t E = q->ne[0], H = q->ne[1], n_batch = q->ne[2], B = q->ne[3], n_kv = k->ne[2];
    float * keys =
        reinterpret_cast<float *>(static_cast<char *>(params.workspace) +
                                  fa::align64(static_cast<size_t>(indexer_floats(node)) * sizeof(float)) *
                                      static_cast<size_t>(params.ith()));
    float * query = keys + kKeyBlock * E;
    const int64_t blocks = (n_kv + kKeyBlock - 1) / kKeyBlock;
    const auto [begin, end] = params.thread.chunk(blocks * B);
    for (int64_t unit = begin; unit < end && !params.should_stop(); ++unit) {
        const int64_t b = unit / blocks, j0 = unit % blocks * kKeyBlock, nk = std::min(kKeyBlock, n_kv - j0);
        for (int64_t j = 0; j < nk; ++j)
            load_row(k->type, element_at(k, 0, 0, j0 + j, b), k->nb[0], E, keys + j * E);
        for (int64_t t = 0; t < n_batch; ++t) {
            float * out = out_at(node, j0, t, 0, b);
            for (int64_t j = 0; j < nk; ++j)
                out[j] = f32_value(mask, j0 + j, t, 0, b % mask->ne[3]);
            for (int64_t h = 0; h < H; ++h) {
                load_row(q->type, element_at(q, 0, h, t, b), q->nb[0], E, query);
                const float weight = f32_value(w, h, t, 0, b);
                for (int64_t j = 0; j < nk; ++j)
                    out[j] += weight * std::max(dot_f32(query, keys + j * E, E), 0.0f);
            }
        }
    }
}

// DSV4_HC_COMB: per token, M[a][c] = mixes[2 hc + a + hc c] * scale[2] + base[2 hc + a + hc c]; a
// softmax over a for each c, plus eps; then n_iter column normalisations (divide M[a][c] by
// sum_c M[a][c] + eps) with a row normalisation (divide by sum_a M[a][c] + eps) before each but the first.
bool comb_supports(const ggml_tensor * node) {
    if (!f32_node(node, GGML_OP_DSV4_HC_COMB)) return false;
    for (int i = 0; i < 3; ++i)
        if (!node->src[i] || node->src[i]->type != GGML_TYPE_F32) return false;
    return true;
}

// Divides each of the hc lines of m (elements `along` apart, lines `across` apart) by its sum + eps.
void normalise_lines(float * m, int64_t hc, int64_t along, int64_t across, float eps) {
    for (int64_t line = 0; line < hc; ++line) {
        float sum = eps;
        for (int64_t i = 0; i < hc; ++i)
            sum += m[line * across + i * along];
        for (int64_t i = 0; i < hc; ++i)
            m[line * across + i * along] /= sum;
    }
}

void comb_compute(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *mixes = node->src[0], *scale = node->src[1], *base = node->src[2];
    const int64_t hc = node->ne[0];
    const auto p = core::params<ggml_ext_dsv4_hc_comb_params>(node);
    const float comb_scale = f32_value(scale, 2);
    const auto [begin, end] = params.thread.chunk(node->ne[2]);
    for (int64_t t = begin; t < end; ++t) {
        float * m = out_at(node, 0, 0, t);  // m[a + hc c]
        for (int64_t i = 0; i < hc * hc; ++i)
            m[i] = f32_value(mixes, 2 * hc + i, t) * comb_scale + f32_value(base, 2 * hc + i);
        for (int64_t c = 0; c < hc; ++c) {
            float * col = m + c * hc;
            const float top = *std::max_element(col, col + hc);
            float sum = 0.0f;
            for (int64_t a = 0; a < hc; ++a)
                sum += (col[a] = std::exp(col[a] - top));
            for (int64_t a = 0; a < hc; ++a)
                col[a] = col[a] / sum + p.eps;
        }
        for (int32_t it = 0; it < p.n_iter; ++it) {
            if (it > 0) normalise_lines(m, hc, 1, hc, p.eps);
            normalise_lines(m, hc, hc, 1, p.eps);
        }
    }
}

// DSV4_HC_PRE: r[e, t] = sum_s x[e, s, t] * w[s, t].
bool pre_supports(const ggml_tensor * node) {
    return f32_node(node, GGML_OP_DSV4_HC_PRE) && node->src[0] && node->src[0]->type == GGML_TYPE_F32 &&
           node->src[1] && node->src[1]->type == GGML_TYPE_F32;
}

void pre_compute(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *x = node->src[0], *w = node->src[1];
    const int64_t E = x->ne[0], hc = x->ne[1];
    const auto [begin, end] = params.thread.chunk(x->ne[2]);
    for (int64_t t = begin; t < end; ++t) {
        float * out = out_at(node, 0, t);
        std::fill(out, out + E, 0.0f);
        for (int64_t s = 0; s < hc; ++s) {
            const float weight = f32_value(w, s, t);
            for (int64_t e = 0; e < E; ++e)
                out[e] += f32_value(x, e, s, t) * weight;
        }
    }
}

// DSV4_HC_POST: r[e, d, t] = x[e, t] * post[d, t] + sum_s residual[e, s, t] * comb[d, s, t].
bool post_supports(const ggml_tensor * node) {
    if (!f32_node(node, GGML_OP_DSV4_HC_POST)) return false;
    for (int i = 0; i < 4; ++i)
        if (!node->src[i] || node->src[i]->type != GGML_TYPE_F32) return false;
    return true;
}

void post_compute(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *x = node->src[0], *residual = node->src[1], *post = node->src[2], *comb = node->src[3];
    const int64_t E = residual->ne[0], hc = residual->ne[1];
    const auto [begin, end] = params.thread.chunk(hc * residual->ne[2]);
    for (int64_t row = begin; row < end; ++row) {
        const int64_t d = row % hc, t = row / hc;
        float * out = out_at(node, 0, d, t);
        const float gain = f32_value(post, d, t);
        for (int64_t e = 0; e < E; ++e)
            out[e] = f32_value(x, e, t) * gain;
        for (int64_t s = 0; s < hc; ++s) {
            const float weight = f32_value(comb, d, s, t);
            for (int64_t e = 0; e < E; ++e)
                out[e] += f32_value(residual, e, s, t) * weight;
        }
    }
}

}  // namespace deepseek

namespace kernels {
const Kernel flash_attn_ext = cpu_kernel<fa::supports, fa::workspace, fa::compute>("cpu.flash_attn_ext");
const Kernel lightning_indexer =
    cpu_kernel<deepseek::indexer_supports, deepseek::indexer_workspace, deepseek::indexer_compute>(
        "cpu.lightning_indexer");
const Kernel dsv4_hc_comb =
    cpu_kernel<deepseek::comb_supports, nullptr, deepseek::comb_compute>("cpu.dsv4_hc_comb");
const Kernel dsv4_hc_pre =
    cpu_kernel<deepseek::pre_supports, nullptr, deepseek::pre_compute>("cpu.dsv4_hc_pre");
const Kernel dsv4_hc_post =
    cpu_kernel<deepseek::post_supports, nullptr, deepseek::post_compute>("cpu.dsv4_hc_post");
}  // namespace kernels
}  // namespace ggx::cpu
#endif  // HWY_ONCE
