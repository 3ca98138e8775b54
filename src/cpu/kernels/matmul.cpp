// Matrix product kernels. MUL_MAT: dst[m, n, i2, i3] = sum_k a[k, m, i2 / r2, i3 / r3] *
// b[k, n, i2, i3], accumulated in F32. MUL_MAT_ID (routed rows grouped per expert) and OUT_PROD
// (transposed views of its operands) are built on the same product, near the end of the file.
//
// Five paths, all compiled for every Highway target and chosen at run time:
//
//  * GEMM (any N; the only path for a without dense rows). A BLIS-style blocked product. Both
//    operands are packed into F32 panels in the workspace: a in panels of MR = 2 vectors of rows
//    stored k-major ([k][MR], loaded as vectors), b in panels of NR columns ([k][NR], broadcast);
//    MR x NR = 32 x 12 with AVX-512 (24 accumulators), 16 x 6 with AVX2. Packing converts
//    F16/BF16/Q8_0/Q4_0 and any strides to F32 (8 x 8 register transposes), so the micro-kernel only
//    sees dense F32. All threads first pack b for all of K (up to kBPackBytes of columns at a time),
//    one barrier, then take (m block, n chunk) tiles from a shared counter; per tile and k block of
//    KC, the a block (MC x KC) is packed privately while the next one's source rows are prefetched.
//    Many small independent batches are instead given whole to threads (private buffers, no
//    barriers).
//  * Small N (2..8, a with dense rows): dot products along k of R rows of a against all N columns
//    of b (converted to F32 once), a streamed once, no packing.
//  * Float matrix-vector (N == 1, F32/F16/BF16 a with dense rows). Memory bound: each row of a is
//    streamed once (software prefetch), four rows at a time, against b converted to F32 once.
//  * Quantized matrix-vector (N == 1, Q8_0/Q4_0 a). b is quantized per 32-block to int8 with an F32
//    scale (d = amax / 127, q = round(x / d)); each block product is an exact int32 dot product
//    (AVX2 maddubs/madd inside the AVX2/AVX-512 targets, portable loops elsewhere) scaled by
//    d_a * d_b. This adds the activation rounding error (at most d / 2 per element of b), so a
//    MUL_MAT with GGML_PREC_F32 takes the small-N path (dequantized a, F32 b) instead.
//  * Decoded matrix-vector (N == 1, the other block formats with an int8 decoder, K a multiple of
//    256): runs of 256 values of a are decoded into int8 codes with per-16 scales and offsets
//    (quant_decode.h), eight runs at a time, and multiplied with b's int8 blocks as above (vpdpbusd
//    with AVX-512 VNNI, vpmaddubsw with AVX2); four rows from distant parts of the range at a time.
//    The other formats, and K not a multiple of 256, take the small-N path.

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels/matmul.cpp"
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL  // the VNNI target (the decoded formats' matrix-vector product)
#endif
#include <hwy/foreach_target.h>
#include <hwy/highway.h>
#include <hwy/cache_control.h>
// clang-format on

#include <ggml.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/op_params.h"
#include "core/types.h"
#include "cpu/amx.h"
#include "cpu/kernels/common.h"
#include "cpu/kernels/exec.h"
#include "cpu/kernels/gemm.h"
#include "cpu/quant_decode.h"

#if HWY_ARCH_X86
#include <immintrin.h>
#endif

#ifndef GGX_CPU_MATMUL_SHARED
#define GGX_CPU_MATMUL_SHARED
namespace ggx::cpu::mm {

// Blocking parameters (elements). KC and MC are multiples of 32 (the quantization block) and of every
// x86 target's MR; kNCSolo is a multiple of every target's NR. A k block of a micro-panel of b (KC x NR
// floats, 24 KiB with AVX-512) stays in L1, an a block (MC x KC, 512 KiB) in L2.
inline constexpr int64_t kKC = 512;
inline constexpr int64_t kMC = 256;
inline constexpr int64_t kNCSolo = 240;                    // columns of b per private k block (solo mode)
inline constexpr int64_t kBPackBytes = int64_t(32) << 20;  // cap of packed b (shared mode)
// Software prefetch distance (bytes) of the row-streaming paths: the hardware prefetchers alone
// leave the quantized matrix-vector product at a third of DRAM bandwidth.
inline constexpr int64_t kRowPrefetch = 4096;

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
inline size_t align64(size_t x) { return (x + 63) & ~size_t(63); }

// b quantized to int8 per 32-block for the quantized matrix-vector paths, as separate arrays:
// qs[nb][32], d[nb] (scale), dsum8[nb] = -8 * d * sum(qs) (folds the Q4_0 offset into one term) and
// gsum[2 nb] = d * (sum of each half's 16 qs) (the decoded formats' offsets, quant_decode.h).
struct QuantVec {
    int8_t * qs;
    float * d;
    float * dsum8;
    float * gsum;

    static size_t bytes(int64_t nb) {
        return align64(32 * static_cast<size_t>(nb)) + 2 * align64(4 * static_cast<size_t>(nb)) +
               align64(8 * static_cast<size_t>(nb));
    }
    static QuantVec at(char * p, int64_t nb) {
        QuantVec q;
        q.qs = reinterpret_cast<int8_t *>(p);
        q.d = reinterpret_cast<float *>(p + align64(32 * static_cast<size_t>(nb)));
        q.dsum8 = q.d + align64(4 * static_cast<size_t>(nb)) / 4;
        q.gsum = q.dsum8 + align64(4 * static_cast<size_t>(nb)) / 4;
        return q;
    }
};

inline float fp16_to_f32(const void * p) {
    ggml_fp16_t h;
    std::memcpy(&h, p, sizeof h);
    return ggml_fp16_to_fp32(h);
}

// Where one batch's matrix of an operand starts, and how to reach its rows and elements.
struct Operand {
    const char * base;
    ggml_type type;
    size_t nb0, nb1;
    int64_t blck;

    const char * at(int64_t row, int64_t k) const { return base + row * nb1 + (k / blck) * nb0; }
    bool dense() const { return nb0 == ggml_type_size(type); }
};

}  // namespace ggx::cpu::mm
#endif

HWY_BEFORE_NAMESPACE();
namespace ggx::cpu::mm::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Register tile: MR = kVecs * lanes rows of a (vectors), NR columns of b (broadcasts).
constexpr int kVecs = 2;
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
constexpr int kNR = 12;  // 32 vector registers: 24 accumulators
#else
constexpr int kNR = 6;  // 16 vector registers: 12 accumulators
#endif

HWY_INLINE int64_t mr_of() { return kVecs * static_cast<int64_t>(hn::Lanes(DF())); }
constexpr int64_t kMaxMR = kVecs * HWY_MAX_BYTES / sizeof(float);  // bound of mr_of() for buffers
constexpr int64_t kMaxPanel = kMaxMR > kNR ? kMaxMR : kNR;         // rows of a packed panel

// ---------------------------------------------------------------------------------------------
// Conversion of one row segment of any type into dense F32.

// n values (a multiple of 256) of a decoded format: code * scale - offset per 16, the operations of
// the formats' own dequantization, so the same values.
HWY_INLINE void decoded_to_f32(ggml_type type, quant::DecodeRun decode, const char * src, int64_t n,
                               float * dst) {
    const DF df;
    const hn::Rebind<int8_t, DF> d8;
    const hn::Rebind<int32_t, DF> d32;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    const size_t run_bytes = ggml_row_size(type, quant::kRun);
    constexpr int64_t kRuns = 4;
    quant::DecodedRun runs[kRuns];
    for (int64_t r0 = 0; r0 < n / quant::kRun; r0 += kRuns) {
        const int64_t count = std::min(kRuns, n / quant::kRun - r0);
        decode(src + r0 * run_bytes, run_bytes, count, runs);
        for (int64_t r = 0; r < count; ++r)
            for (int64_t g = 0; g < quant::kGroups; ++g) {
                const VF scale = hn::Set(df, runs[r].scale[g]), offset = hn::Set(df, runs[r].offset[g]);
                for (int64_t i = 0; i < quant::kGroup; i += L) {
                    const int64_t at = g * quant::kGroup + i;
                    const VF q = hn::ConvertTo(df, hn::PromoteTo(d32, hn::LoadU(d8, runs[r].q + at)));
                    hn::StoreU(hn::Sub(hn::Mul(q, scale), offset), df, dst + (r0 + r) * quant::kRun + at);
                }
            }
    }
}

// n elements from src (elements nb0 bytes apart; quantized: dense blocks, n a multiple of the block
// size).
HWY_NOINLINE void convert_row(ggml_type type, const char * src, size_t nb0, int64_t n, float * dst) {
    const DF df;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    if (type == GGML_TYPE_Q8_0) {
        const hn::Rebind<int8_t, DF> d8;
        const hn::Rebind<int32_t, DF> d32;
        for (int64_t b = 0; b < n / 32; ++b) {
            const char * blk = src + b * sizeof(ggml_block_q8_0);
            const VF d = hn::Set(df, fp16_to_f32(blk));
            const int8_t * qs = reinterpret_cast<const int8_t *>(blk + 2);
            for (int64_t i = 0; i < 32; i += L) {
                const VF v = hn::ConvertTo(df, hn::PromoteTo(d32, hn::LoadU(d8, qs + i)));
                hn::StoreU(hn::Mul(v, d), df, dst + b * 32 + i);
            }
        }
        return;
    }
    if (type == GGML_TYPE_Q4_0) {
        const hn::Rebind<uint8_t, DF> d8;
        const hn::Rebind<int32_t, DF> d32;
        const auto low = hn::Set(d8, uint8_t{0x0F});
        const auto eight = hn::Set(d32, 8);
        for (int64_t b = 0; b < n / 32; ++b) {
            const char * blk = src + b * sizeof(ggml_block_q4_0);
            const VF d = hn::Set(df, fp16_to_f32(blk));
            const uint8_t * qs = reinterpret_cast<const uint8_t *>(blk + 2);
            float * out = dst + b * 32;
            // Byte j holds element j (low nibble) and element j + 16 (high nibble).
            for (int64_t j = 0; j < 16; j += L) {
                const auto q = hn::LoadU(d8, qs + j);
                const auto lo = hn::Sub(hn::PromoteTo(d32, hn::And(q, low)), eight);
                const auto hi = hn::Sub(hn::PromoteTo(d32, hn::ShiftRight<4>(q)), eight);
                hn::StoreU(hn::Mul(hn::ConvertTo(df, lo), d), df, out + j);
                hn::StoreU(hn::Mul(hn::ConvertTo(df, hi), d), df, out + 16 + j);
            }
        }
        return;
    }
    if (ggml_is_quantized(type)) {  // the other block formats: their decoder, or their row conversion
        const quant::DecodeRun decode = quant::decoder_of(type);
        if (decode && n % quant::kRun == 0)
            decoded_to_f32(type, decode, src, n, dst);
        else
            ggml_dequantize_row(type, src, dst, n);
        return;
    }
    if (nb0 != ggml_type_size(type)) {
        for (int64_t i = 0; i < n; ++i)
            dst[i] = load_float(type, src + i * nb0);
        return;
    }
    int64_t i = 0;
    switch (type) {
        case GGML_TYPE_F32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return;
        case GGML_TYPE_F16: {
            const hn::Rebind<hwy::float16_t, DF> dh;
            const hwy::float16_t * s = reinterpret_cast<const hwy::float16_t *>(src);
            for (; i + L <= n; i += L)
                hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, s + i)), df, dst + i);
            break;
        }
        case GGML_TYPE_BF16: {
            const hn::Rebind<uint16_t, DF> d16;
            const hn::Rebind<uint32_t, DF> du;
            const uint16_t * s = reinterpret_cast<const uint16_t *>(src);
            for (; i + L <= n; i += L) {
                const auto w = hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, s + i)));
                hn::StoreU(hn::BitCast(df, w), df, dst + i);
            }
            break;
        }
        default:
            break;
    }
    for (; i < n; ++i)
        dst[i] = load_float(type, src + i * nb0);
}

// ---------------------------------------------------------------------------------------------
// Packing.

// Panel of R interleaved rows r0 .. r0+rows-1 of op over k in [k0, k0 + kc): out[k * R + r]; rows
// beyond `rows` are zero. tmp holds rows * kc floats of conversion scratch.
HWY_NOINLINE void pack_panel(const Operand & op, int64_t r0, int64_t rows, int64_t R, int64_t k0, int64_t kc,
                             float * HWY_RESTRICT out, float * HWY_RESTRICT tmp) {
    if (op.blck == 1 && op.nb1 == ggml_type_size(op.type) && rows > 1) {
        // Rows adjacent in memory (a transposed view, OUT_PROD's operands): each k is a dense run.
        const size_t es = op.nb1;
        for (int64_t k = 0; k < kc; ++k) {
            const char * p = op.at(r0, k0 + k);
            float * o = out + k * R;
            if (op.type == GGML_TYPE_F32)
                std::memcpy(o, p, static_cast<size_t>(rows) * sizeof(float));
            else
                convert_row(op.type, p, es, rows, o);
            std::fill(o + rows, o + R, 0.0f);
        }
        return;
    }
    const float * src[kMaxPanel];
    const bool direct = op.type == GGML_TYPE_F32 && op.nb0 == sizeof(float);
    for (int64_t r = 0; r < rows; ++r) {
        const char * p = op.at(r0 + r, k0);
        if (direct) {
            src[r] = reinterpret_cast<const float *>(p);
        } else {
            convert_row(op.type, p, op.nb0, kc, tmp + r * kc);
            src[r] = tmp + r * kc;
        }
    }
    // Rows [0, rv) and k [0, kv) go through register transposes, the rest element by element.
    int64_t rv = 0, kv = 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
    kv = kc / 8 * 8;
    for (; rv + 8 <= rows; rv += 8) {
        const float *s0 = src[rv], *s1 = src[rv + 1], *s2 = src[rv + 2], *s3 = src[rv + 3];
        const float *s4 = src[rv + 4], *s5 = src[rv + 5], *s6 = src[rv + 6], *s7 = src[rv + 7];
        for (int64_t k = 0; k < kv; k += 8) {
            __m256 x0 = _mm256_loadu_ps(s0 + k), x1 = _mm256_loadu_ps(s1 + k);
            __m256 x2 = _mm256_loadu_ps(s2 + k), x3 = _mm256_loadu_ps(s3 + k);
            __m256 x4 = _mm256_loadu_ps(s4 + k), x5 = _mm256_loadu_ps(s5 + k);
            __m256 x6 = _mm256_loadu_ps(s6 + k), x7 = _mm256_loadu_ps(s7 + k);
            const __m256 t0 = _mm256_unpacklo_ps(x0, x1), t1 = _mm256_unpackhi_ps(x0, x1);
            const __m256 t2 = _mm256_unpacklo_ps(x2, x3), t3 = _mm256_unpackhi_ps(x2, x3);
            const __m256 t4 = _mm256_unpacklo_ps(x4, x5), t5 = _mm256_unpackhi_ps(x4, x5);
            const __m256 t6 = _mm256_unpacklo_ps(x6, x7), t7 = _mm256_unpackhi_ps(x6, x7);
            const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
            const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
            const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
            const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            x0 = _mm256_permute2f128_ps(u0, u4, 0x20);
            x1 = _mm256_permute2f128_ps(u1, u5, 0x20);
            x2 = _mm256_permute2f128_ps(u2, u6, 0x20);
            x3 = _mm256_permute2f128_ps(u3, u7, 0x20);
            x4 = _mm256_permute2f128_ps(u0, u4, 0x31);
            x5 = _mm256_permute2f128_ps(u1, u5, 0x31);
            x6 = _mm256_permute2f128_ps(u2, u6, 0x31);
            x7 = _mm256_permute2f128_ps(u3, u7, 0x31);
            float * o = out + k * R + rv;
            _mm256_storeu_ps(o + 0 * R, x0);
            _mm256_storeu_ps(o + 1 * R, x1);
            _mm256_storeu_ps(o + 2 * R, x2);
            _mm256_storeu_ps(o + 3 * R, x3);
            _mm256_storeu_ps(o + 4 * R, x4);
            _mm256_storeu_ps(o + 5 * R, x5);
            _mm256_storeu_ps(o + 6 * R, x6);
            _mm256_storeu_ps(o + 7 * R, x7);
        }
    }
    for (; rv + 4 <= rows; rv += 4) {
        const float *s0 = src[rv], *s1 = src[rv + 1], *s2 = src[rv + 2], *s3 = src[rv + 3];
        for (int64_t k = 0; k < kv; k += 4) {
            __m128 x0 = _mm_loadu_ps(s0 + k), x1 = _mm_loadu_ps(s1 + k);
            __m128 x2 = _mm_loadu_ps(s2 + k), x3 = _mm_loadu_ps(s3 + k);
            _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
            float * o = out + k * R + rv;
            _mm_storeu_ps(o + 0 * R, x0);
            _mm_storeu_ps(o + 1 * R, x1);
            _mm_storeu_ps(o + 2 * R, x2);
            _mm_storeu_ps(o + 3 * R, x3);
        }
    }
#endif
    for (int64_t r = 0; r < rv; ++r)
        for (int64_t k = kv; k < kc; ++k)
            out[k * R + r] = src[r][k];
    for (int64_t r = rv; r < rows; ++r)
        for (int64_t k = 0; k < kc; ++k)
            out[k * R + r] = src[r][k];
    for (int64_t r = rows; r < R; ++r)
        for (int64_t k = 0; k < kc; ++k)
            out[k * R + r] = 0.0f;
}

HWY_INLINE void prefetch_l2(const void * p) {
#if HWY_ARCH_X86
    _mm_prefetch(static_cast<const char *>(p), _MM_HINT_T1);
#else
    hwy::Prefetch(p);
#endif
}

// ---------------------------------------------------------------------------------------------
// Micro-kernel: C[j][i] (+)= sum_k A[k][i] * B[k][j] for i < MR, j < NR <= kNR (B panels hold kNR
// columns); C rows ldc floats apart. With next_b, the next b panel (kc * kNR floats) is brought into
// L2 along the way: panels come from the large packed b, and the first tile to read one would
// otherwise wait on L3 for all of it.

template <int NR, bool kPrefetchNext = false>
HWY_INLINE void micro(const float * HWY_RESTRICT A, const float * HWY_RESTRICT B, int64_t kc,
                      float * HWY_RESTRICT C, int64_t ldc, bool accumulate,
                      const float * HWY_RESTRICT next_b = nullptr) {
    const DF d;
    const size_t L = hn::Lanes(d);
    VF c0[NR], c1[NR];
    for (int j = 0; j < NR; ++j) {
        c0[j] = hn::Zero(d);
        c1[j] = hn::Zero(d);
        // The C tile is touched only after the k loop: start bringing it in now.
        hwy::Prefetch(C + j * ldc);
        hwy::Prefetch(C + j * ldc + 2 * L - 1);
    }
    for (int64_t k = 0; k < kc; ++k) {
        if constexpr (kPrefetchNext) prefetch_l2(next_b + k * kNR);
        const VF a0 = hn::Load(d, A);
        const VF a1 = hn::Load(d, A + L);
        A += 2 * L;
        for (int j = 0; j < NR; ++j) {
            const VF bj = hn::Set(d, B[j]);
            c0[j] = hn::MulAdd(a0, bj, c0[j]);
            c1[j] = hn::MulAdd(a1, bj, c1[j]);
        }
        B += kNR;
    }
    for (int j = 0; j < NR; ++j) {
        float * c = C + j * ldc;
        if (accumulate) {
            c0[j] = hn::Add(c0[j], hn::LoadU(d, c));
            c1[j] = hn::Add(c1[j], hn::LoadU(d, c + L));
        }
        hn::StoreU(c0[j], d, c);
        hn::StoreU(c1[j], d, c + L);
    }
}

// Full-height tile of nr <= kNR columns.
HWY_NOINLINE void micro_cols(const float * HWY_RESTRICT A, const float * HWY_RESTRICT B, int64_t kc,
                             float * HWY_RESTRICT C, int64_t ldc, bool accumulate, int64_t nr) {
    switch (nr) {
        case 1:
            micro<1>(A, B, kc, C, ldc, accumulate);
            break;
        case 2:
            micro<2>(A, B, kc, C, ldc, accumulate);
            break;
        case 3:
            micro<3>(A, B, kc, C, ldc, accumulate);
            break;
        case 4:
            micro<4>(A, B, kc, C, ldc, accumulate);
            break;
        case 5:
            micro<5>(A, B, kc, C, ldc, accumulate);
            break;
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
        case 6:
            micro<6>(A, B, kc, C, ldc, accumulate);
            break;
        case 7:
            micro<7>(A, B, kc, C, ldc, accumulate);
            break;
        case 8:
            micro<8>(A, B, kc, C, ldc, accumulate);
            break;
        case 9:
            micro<9>(A, B, kc, C, ldc, accumulate);
            break;
        case 10:
            micro<10>(A, B, kc, C, ldc, accumulate);
            break;
        case 11:
            micro<11>(A, B, kc, C, ldc, accumulate);
            break;
#endif
        default:
            micro<kNR>(A, B, kc, C, ldc, accumulate);
            break;
    }
}

// Edge tile: only mr (< MR) x nr of the tile is stored.
HWY_NOINLINE void micro_edge(const float * HWY_RESTRICT A, const float * HWY_RESTRICT B, int64_t kc,
                             float * HWY_RESTRICT C, int64_t ldc, bool accumulate, int64_t mr, int64_t nr) {
    const int64_t MR = mr_of();
    HWY_ALIGN float tile[kNR * kMaxMR];
    micro<kNR>(A, B, kc, tile, MR, false);
    for (int64_t j = 0; j < nr; ++j) {
        float * c = C + j * ldc;
        const float * t = tile + j * MR;
        if (accumulate)
            for (int64_t i = 0; i < mr; ++i)
                c[i] += t[i];
        else
            for (int64_t i = 0; i < mr; ++i)
                c[i] = t[i];
    }
}

// ---------------------------------------------------------------------------------------------
// GEMM driver.

struct Gemm {
    Operand a, b;
    float * c;  // dst of the batch: row n at c + n * ldc
    int64_t ldc;
    int64_t M, N, K;
    // An implicit a (gemm.h) packed by the caller instead of read through `a`.
    gemm::PackRows pack_a = nullptr;
    const void * a_context = nullptr;
    int64_t batch = 0;
};

// Spreads prefetches of the source rows of the next a block over the current block's computation,
// so that packing it finds them in cache instead of waiting for DRAM.
struct APrefetch {
    const Operand * a = nullptr;
    int64_t row0 = 0, k0 = 0;
    int64_t lines_per_row = 0, total = 0, next = 0;

    void start(const Operand & op, int64_t r0, int64_t rows, int64_t k, int64_t kc) {
        a = &op;
        row0 = r0;
        k0 = k;
        next = 0;
        const size_t bytes = static_cast<size_t>(kc / op.blck) * op.nb0;
        const bool dense = op.nb0 == ggml_type_size(op.type);
        lines_per_row = dense && kc > 0 ? static_cast<int64_t>((bytes + 63) / 64) : 0;
        total = rows * lines_per_row;
    }
    // Issues this step's share of the prefetches when `steps` steps remain.
    void step(int64_t steps) {
        if (next >= total || steps <= 0) return;
        const int64_t end = std::min(total, next + (total - next + steps - 1) / steps);
        for (; next < end; ++next) {
            const char * p = a->at(row0 + next / lines_per_row, k0) + (next % lines_per_row) * 64;
#if HWY_ARCH_X86
            _mm_prefetch(p, _MM_HINT_T1);  // into L2: the block being computed owns L1
#else
            hwy::Prefetch(p);
#endif
        }
    }
};

// C (+)= Ã * B̃ for the m panels [mp0, mp1) of g (packed consecutively in abuf) and the b panels
// [q0, q1) of a packed k block whose panel q starts at bk + q * kc * NR (panel 0 is column n0).
HWY_INLINE void macro_tile(const Gemm & g, const float * abuf, int64_t mp0, int64_t mp1, const float * bk,
                           int64_t n0, int64_t q0, int64_t q1, int64_t kc, bool accumulate,
                           APrefetch * prefetch) {
    const int64_t MR = mr_of();
    for (int64_t q = q0; q < q1; ++q) {
        if (prefetch) prefetch->step(q1 - q);
        const int64_t nn = n0 + q * kNR;
        const int64_t nr = std::min<int64_t>(kNR, g.N - nn);
        const float * bp = bk + q * kc * kNR;
        for (int64_t p = mp0; p < mp1; ++p) {
            const int64_t m0 = p * MR;
            const int64_t mr = std::min(MR, g.M - m0);
            float * c = g.c + nn * g.ldc + m0;
            const float * ap = abuf + (p - mp0) * MR * kc;
            if (mr == MR && nr == kNR && p == mp0 && q + 1 < q1)
                micro<kNR, true>(ap, bp, kc, c, g.ldc, accumulate, bp + kc * kNR);
            else if (mr == MR && nr == kNR)
                micro<kNR>(ap, bp, kc, c, g.ldc, accumulate);
            else if (mr == MR)
                micro_cols(ap, bp, kc, c, g.ldc, accumulate, nr);
            else
                micro_edge(ap, bp, kc, c, g.ldc, accumulate, mr, nr);
        }
    }
}

HWY_INLINE void pack_a_block(const Gemm & g, int64_t mp0, int64_t mp1, int64_t k0, int64_t kc, float * abuf,
                             float * tmp) {
    const int64_t MR = mr_of();
    for (int64_t p = mp0; p < mp1; ++p) {
        const int64_t m0 = p * MR;
        float * out = abuf + (p - mp0) * MR * kc;
        if (g.pack_a)
            g.pack_a(g.a_context, g.batch, m0, std::min(MR, g.M - m0), MR, k0, kc, out);
        else
            pack_panel(g.a, m0, std::min(MR, g.M - m0), MR, k0, kc, out, tmp);
    }
}

// Workspace layout. Shared mode: a work counter and b packed for all of K and nc columns, then per
// thread an a block and conversion scratch. Solo mode: per thread an a block, scratch and one packed
// k block of b (nc_solo columns).
struct Layout {
    bool solo;
    int64_t nc;  // columns of b packed at a time
    size_t shared, abuf, tmp, bsolo, per_thread;
    size_t total(int nth) const { return shared + per_thread * static_cast<size_t>(nth); }
};

HWY_INLINE Layout layout_for(int64_t M, int64_t N, int64_t K, int64_t nbatch, int nth) {
    const int64_t MR = mr_of();
    N = std::max<int64_t>(N, 1), K = std::max<int64_t>(K, 1);
    Layout l;
    // Threads take whole batches when there are plenty of them, or enough of them and each is small.
    const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
    l.solo =
        nth > 1 && (nbatch >= 4 * nth || (nbatch >= nth && nbatch % nth == 0 && work < 64.0 * 1024 * 1024));
    l.abuf = align64(sizeof(float) * kKC * kMC);
    l.tmp = align64(sizeof(float) * kKC * std::max<int64_t>(MR, kNR));
    if (l.solo) {
        l.nc = std::min(kNCSolo, round_up(N, kNR));
        l.bsolo = align64(sizeof(float) * kKC * l.nc);
        l.shared = 0;
    } else {
        const int64_t cap_cols = std::max<int64_t>(kNR, kBPackBytes / (sizeof(float) * K) / kNR * kNR);
        l.nc = std::min(round_up(N, kNR), cap_cols);
        l.bsolo = 0;
        l.shared = 64 + align64(sizeof(float) * static_cast<size_t>(K) * static_cast<size_t>(l.nc));
    }
    l.per_thread = l.abuf + l.tmp + l.bsolo;
    return l;
}

HWY_INLINE Layout layout_for(const ggml_tensor * a, const ggml_tensor * b, int64_t nbatch, int nth) {
    return layout_for(a->ne[1], b->ne[1], a->ne[0], nbatch, nth);
}

struct Batches {
    const ggml_tensor *a, *b;
    ggml_tensor * dst;
    int64_t nbatch, B2, r2, r3;
    bool exact = false;  // GGML_PREC_F32: no int8 rounding of the activations (quantized a)

    Gemm gemm(int64_t bi) const {
        const int64_t i2 = bi % B2, i3 = bi / B2;
        Gemm g;
        g.a = {static_cast<const char *>(a->data) + (i2 / r2) * a->nb[2] + (i3 / r3) * a->nb[3], a->type,
               a->nb[0], a->nb[1], ggml_blck_size(a->type)};
        g.b = {static_cast<const char *>(b->data) + i2 * b->nb[2] + i3 * b->nb[3], b->type, b->nb[0],
               b->nb[1], 1};
        g.c = reinterpret_cast<float *>(static_cast<char *>(dst->data) + i2 * dst->nb[2] + i3 * dst->nb[3]);
        g.ldc = static_cast<int64_t>(dst->nb[1] / sizeof(float));
        g.M = a->ne[1];
        g.N = b->ne[1];
        g.K = a->ne[0];
        return g;
    }
};

// All threads cooperate on each batch: they pack b (nc columns, all of K) together, then take
// (m block, n chunk) tiles from a shared counter, each computed over all of K. Source: Batches or
// ImplicitBatches (nbatch, gemm(bi)).
template <class Source>
HWY_NOINLINE void gemm_shared(const Exec & ex, const Source & bt, const Layout & l) {
    const int64_t MR = mr_of();
    char * ws = ex.workspace;
    std::atomic_ref<int64_t> counter(*reinterpret_cast<int64_t *>(ws));
    float * bpack = reinterpret_cast<float *>(ws + 64);
    char * mine = ws + l.shared + static_cast<size_t>(ex.ith) * l.per_thread;
    float * abuf = reinterpret_cast<float *>(mine);
    float * tmp = reinterpret_cast<float *>(mine + l.abuf);
    const int64_t mcp = kMC / MR;  // panels per m block

    for (int64_t bi = 0; bi < bt.nbatch; ++bi) {
        const Gemm g = bt.gemm(bi);
        const int64_t mpanels = (g.M + MR - 1) / MR;
        const int64_t mblocks = (mpanels + mcp - 1) / mcp;
        const int64_t kblocks = (g.K + kKC - 1) / kKC;
        for (int64_t n0 = 0; n0 < g.N; n0 += l.nc) {
            const int64_t nc = std::min(l.nc, g.N - n0);
            const int64_t nq = (nc + kNR - 1) / kNR;
            // Pack b: units (panel, k block).
            bool stop = ex.should_stop();
            if (!stop) {
                const auto [u0, u1] = chunk_range(nq * kblocks, ex.ith, ex.nth);
                for (int64_t u = u0; u < u1; ++u) {
                    const int64_t q = u % nq, k0 = (u / nq) * kKC;
                    const int64_t kc = std::min(kKC, g.K - k0), nn = n0 + q * kNR;
                    pack_panel(g.b, nn, std::min<int64_t>(kNR, g.N - nn), kNR, k0, kc,
                               bpack + k0 * nq * kNR + q * kc * kNR, tmp);
                }
            }
            if (ex.ith == 0) counter.store(0, std::memory_order_relaxed);
            ex.sync();
            // Tiles: split n into chunks when there are too few m blocks to share.
            const int64_t nchunks = std::min<int64_t>(nq, (3 * ex.nth + mblocks - 1) / mblocks);
            const int64_t tiles = mblocks * nchunks;
            for (;;) {
                const int64_t t = counter.fetch_add(1, std::memory_order_relaxed);
                if (t >= tiles || stop) break;
                const int64_t mb = t / nchunks, nchunk = t % nchunks;
                const int64_t mp0 = mb * mcp, mp1 = std::min(mpanels, mp0 + mcp);
                const auto [q0, q1] = chunk_range(nq, static_cast<int>(nchunk), static_cast<int>(nchunks));
                APrefetch prefetch;
                for (int64_t k0 = 0; k0 < g.K; k0 += kKC) {
                    const int64_t kc = std::min(kKC, g.K - k0);
                    pack_a_block(g, mp0, mp1, k0, kc, abuf, tmp);
                    const int64_t k1 = k0 + kKC;
                    if (!g.pack_a)
                        prefetch.start(g.a, mp0 * MR, std::min(g.M, mp1 * MR) - mp0 * MR, k1,
                                       std::max<int64_t>(0, std::min(kKC, g.K - k1)));
                    macro_tile(g, abuf, mp0, mp1, bpack + k0 * nq * kNR, n0, q0, q1, kc, k0 > 0,
                               g.pack_a ? nullptr : &prefetch);
                }
                stop = ex.should_stop();
            }
            const bool last = bi + 1 == bt.nbatch && n0 + l.nc >= g.N;
            if (!last) ex.sync();
        }
    }
}

// Each thread computes whole batches alone.
template <class Source>
HWY_NOINLINE void gemm_solo(const Exec & ex, const Source & bt, const Layout & l) {
    const int64_t MR = mr_of();
    char * mine = ex.workspace + l.shared + static_cast<size_t>(ex.ith) * l.per_thread;
    float * abuf = reinterpret_cast<float *>(mine);
    float * tmp = reinterpret_cast<float *>(mine + l.abuf);
    float * bblock = reinterpret_cast<float *>(mine + l.abuf + l.tmp);
    const int64_t mcp = kMC / MR;
    const auto [b0, b1] = chunk_range(bt.nbatch, ex.ith, ex.nth);
    for (int64_t bi = b0; bi < b1; ++bi) {
        if (ex.should_stop()) return;
        const Gemm g = bt.gemm(bi);
        const int64_t mpanels = (g.M + MR - 1) / MR;
        for (int64_t n0 = 0; n0 < g.N; n0 += l.nc) {
            const int64_t nq = (std::min(l.nc, g.N - n0) + kNR - 1) / kNR;
            for (int64_t k0 = 0; k0 < g.K; k0 += kKC) {
                const int64_t kc = std::min(kKC, g.K - k0);
                for (int64_t q = 0; q < nq; ++q) {
                    const int64_t nn = n0 + q * kNR;
                    pack_panel(g.b, nn, std::min<int64_t>(kNR, g.N - nn), kNR, k0, kc, bblock + q * kc * kNR,
                               tmp);
                }
                for (int64_t mp0 = 0; mp0 < mpanels; mp0 += mcp) {
                    const int64_t mp1 = std::min(mpanels, mp0 + mcp);
                    pack_a_block(g, mp0, mp1, k0, kc, abuf, tmp);
                    macro_tile(g, abuf, mp0, mp1, bblock, n0, 0, nq, kc, k0 > 0, nullptr);
                }
            }
        }
    }
}

// The batches of a gemm::Problem.
struct ImplicitBatches {
    const gemm::Problem * p;
    int64_t nbatch;

    Gemm gemm(int64_t bi) const {
        Gemm g;
        g.a = {nullptr, GGML_TYPE_F32, sizeof(float), 0, 1};
        g.b = {p->b, p->b_type, p->b_nb0, p->b_nb1, 1};
        g.c = p->c + bi * p->c_batch;
        g.ldc = p->ldc;
        g.M = p->M, g.N = p->N, g.K = p->K;
        g.pack_a = p->pack_a, g.a_context = p->a_context, g.batch = bi;
        return g;
    }
};

size_t ImplicitWorkspace(const gemm::Problem & p, int n_threads) {
    return layout_for(p.M, p.N, p.K, p.batches, n_threads).total(n_threads) + 64;
}

void ImplicitCompute(const Exec & ex, const gemm::Problem & p) {
    if (p.K == 0) {  // empty sums
        const auto [r0, r1] = chunk_range(p.N * p.batches, ex.ith, ex.nth);
        for (int64_t r = r0; r < r1; ++r)
            std::memset(p.c + r / p.N * p.c_batch + r % p.N * p.ldc, 0,
                        static_cast<size_t>(p.M) * sizeof(float));
    } else if (p.M > 0 && p.N > 0 && p.batches > 0) {
        const Layout l = layout_for(p.M, p.N, p.K, p.batches, ex.nth);
        if (l.solo)
            gemm_solo(ex, ImplicitBatches{&p, p.batches}, l);
        else
            gemm_shared(ex, ImplicitBatches{&p, p.batches}, l);
    }
    ex.sync();
}

// ---------------------------------------------------------------------------------------------
// Float matrix-vector: y[m] = dot(a row m, x), rows dense.

template <ggml_type T>
HWY_INLINE VF load_as_f32(const char * p) {
    const DF df;
    if constexpr (T == GGML_TYPE_F32) {
        return hn::LoadU(df, reinterpret_cast<const float *>(p));
    } else if constexpr (T == GGML_TYPE_F16) {
        const hn::Rebind<hwy::float16_t, DF> dh;
        return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t *>(p)));
    } else {
        const hn::Rebind<uint16_t, DF> d16;
        const hn::Rebind<uint32_t, DF> du;
        return hn::BitCast(
            df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const uint16_t *>(p)))));
    }
}

template <ggml_type T>
HWY_NOINLINE void gemv_float_rows(const Operand & a, int64_t m0, int64_t m1, int64_t K, const float * x,
                                  float * y) {
    const DF df;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    constexpr size_t es = T == GGML_TYPE_F32 ? 4 : 2;
    const int64_t kv = K / L * L;
    int64_t m = m0;
    for (; m + 4 <= m1; m += 4) {
        const char * r0 = a.at(m, 0);
        const char * r1 = a.at(m + 1, 0);
        const char * r2 = a.at(m + 2, 0);
        const char * r3 = a.at(m + 3, 0);
        VF s0 = hn::Zero(df), s1 = s0, s2 = s0, s3 = s0;
        for (int64_t k = 0; k < kv; k += L) {
            // Prefetch ahead in each row (harmless past the end: prefetches do not fault).
            hwy::Prefetch(r0 + k * es + kRowPrefetch);
            hwy::Prefetch(r1 + k * es + kRowPrefetch);
            hwy::Prefetch(r2 + k * es + kRowPrefetch);
            hwy::Prefetch(r3 + k * es + kRowPrefetch);
            const VF xv = hn::LoadU(df, x + k);
            s0 = hn::MulAdd(load_as_f32<T>(r0 + k * es), xv, s0);
            s1 = hn::MulAdd(load_as_f32<T>(r1 + k * es), xv, s1);
            s2 = hn::MulAdd(load_as_f32<T>(r2 + k * es), xv, s2);
            s3 = hn::MulAdd(load_as_f32<T>(r3 + k * es), xv, s3);
        }
        float t[4] = {hn::GetLane(hn::SumOfLanes(df, s0)), hn::GetLane(hn::SumOfLanes(df, s1)),
                      hn::GetLane(hn::SumOfLanes(df, s2)), hn::GetLane(hn::SumOfLanes(df, s3))};
        const char * rows[4] = {r0, r1, r2, r3};
        for (int r = 0; r < 4; ++r)
            for (int64_t k = kv; k < K; ++k)
                t[r] += load_float(T, rows[r] + k * es) * x[k];
        for (int r = 0; r < 4; ++r)
            y[m + r] = t[r];
    }
    for (; m < m1; ++m) {
        const char * r0 = a.at(m, 0);
        VF s0 = hn::Zero(df);
        for (int64_t k = 0; k < kv; k += L)
            s0 = hn::MulAdd(load_as_f32<T>(r0 + k * es), hn::LoadU(df, x + k), s0);
        float t = hn::GetLane(hn::SumOfLanes(df, s0));
        for (int64_t k = kv; k < K; ++k)
            t += load_float(T, r0 + k * es) * x[k];
        y[m] = t;
    }
}

// ---------------------------------------------------------------------------------------------
// Quantized matrix-vector: y[m] = sum over blocks of d_a * d_x * (int dot), rows of dense blocks.

// Quantizes n F32 values (n a multiple of 32) into blocks [b0, b0 + n / 32) of q: per block
// d = amax / 127, q = round-to-nearest-even(x / d).
HWY_NOINLINE void quantize_q8(const float * HWY_RESTRICT x, int64_t n, const QuantVec & q, int64_t b0) {
    const DF df;
    const hn::Rebind<int8_t, DF> d8;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    for (int64_t b = 0; b < n / 32; ++b) {
        const float * xb = x + b * 32;
        VF mx = hn::Zero(df);
        for (int64_t i = 0; i < 32; i += L)
            mx = hn::Max(mx, hn::Abs(hn::LoadU(df, xb + i)));
        const float amax = hn::GetLane(hn::MaxOfLanes(df, mx));
        const float d = amax / 127.0f;
        const VF id = hn::Set(df, d != 0.0f ? 1.0f / d : 0.0f);
        int8_t * out = q.qs + (b0 + b) * 32;
        int32_t half_sums[2] = {0, 0};
        for (int64_t i = 0; i < 32; i += L) {
            const auto v = hn::NearestInt(hn::Mul(hn::LoadU(df, xb + i), id));
            hn::StoreU(hn::DemoteTo(d8, v), d8, out + i);
        }
        for (int64_t i = 0; i < 32; ++i)
            half_sums[i / 16] += out[i];
        q.d[b0 + b] = d;
        q.dsum8[b0 + b] = -8.0f * d * static_cast<float>(half_sums[0] + half_sums[1]);
        q.gsum[2 * (b0 + b)] = d * static_cast<float>(half_sums[0]);
        q.gsum[2 * (b0 + b) + 1] = d * static_cast<float>(half_sums[1]);
    }
}

// Portable block dot products.
HWY_INLINE int32_t dot_q8_block(const int8_t * a, const int8_t * x) {
    int32_t s = 0;
    for (int i = 0; i < 32; ++i)
        s += static_cast<int32_t>(a[i]) * x[i];
    return s;
}
HWY_INLINE int32_t dot_q4_block(const uint8_t * a, const int8_t * x) {  // unsigned nibbles, no -8
    int32_t s = 0;
    for (int j = 0; j < 16; ++j)
        s += static_cast<int32_t>(a[j] & 0x0F) * x[j] + static_cast<int32_t>(a[j] >> 4) * x[j + 16];
    return s;
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
// acc + (sum of the 32 products of one weight block and one int8 block of x) * scale[0]; Q4_0
// nibbles are used as unsigned 0..15 (the -8 is folded into dsum8). Prefetches the row ahead.
template <ggml_type T>
HWY_INLINE __m256 block_dot(const char * blk, const int8_t * xqs, const float * scale, __m256 acc) {
    _mm_prefetch(blk + kRowPrefetch, _MM_HINT_T0);
    const __m256i xq = _mm256_load_si256(reinterpret_cast<const __m256i *>(xqs));
    __m256i p16;
    if constexpr (T == GGML_TYPE_Q8_0) {
        const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(blk + 2));
        p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(aq, aq), _mm256_sign_epi8(xq, aq));
    } else {
        const __m256i q2 =
            _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(blk + 2)));
        const __m256i nib =
            _mm256_and_si256(_mm256_srlv_epi64(q2, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
        p16 = _mm256_maddubs_epi16(nib, xq);
    }
    const __m256 pf = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
    return _mm256_fmadd_ps(pf, _mm256_broadcast_ss(scale), acc);
}
#endif

template <ggml_type T>
HWY_NOINLINE void gemv_quant_rows(const Operand & a, int64_t m0, int64_t m1, int64_t K, const QuantVec & x,
                                  float * y) {
    const int64_t nb = K / 32;
    constexpr size_t bs = T == GGML_TYPE_Q8_0 ? sizeof(ggml_block_q8_0) : sizeof(ggml_block_q4_0);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
    // R rows at a time, taken from the R quarters of the thread's range (R memory streams far apart
    // keep more DRAM pages busy than one), in chunks of kCh blocks: first the chunk's scales
    // d_a * d_x (eight blocks per vector), then the int8 dot products.
    constexpr int R = 4;
    constexpr int NA = R >= 4 ? 1 : 4 / R;  // independent accumulators per row
    constexpr int64_t kCh = 64;
    HWY_ALIGN float scale[R][kCh];
    // Row r of a step comes from the r-th quarter of the range: R streams far apart.
    const int64_t Q = (m1 - m0) / R;
    for (int64_t i = 0; i < Q; ++i) {
        const char * rows[R];
        int64_t ri[R];
        for (int r = 0; r < R; ++r) {
            ri[r] = m0 + r * Q + i;
            rows[r] = a.at(ri[r], 0);
        }
        __m256 acc[R][NA], corr[R];
        for (int r = 0; r < R; ++r) {
            corr[r] = _mm256_setzero_ps();
            for (int u = 0; u < NA; ++u)
                acc[r][u] = _mm256_setzero_ps();
        }
        for (int64_t c0 = 0; c0 < nb; c0 += kCh) {
            const int64_t nc = std::min(kCh, nb - c0);
            const int64_t nc8 = nc / 8 * 8;
            for (int r = 0; r < R; ++r) {
                const char * p = rows[r] + c0 * bs;
                int64_t b = 0;
                for (; b < nc8; b += 8) {
                    uint16_t h[8];
                    for (int j = 0; j < 8; ++j)
                        std::memcpy(&h[j], p + (b + j) * bs, 2);
                    const __m256 da = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(h)));
                    _mm256_store_ps(scale[r] + b, _mm256_mul_ps(da, _mm256_loadu_ps(x.d + c0 + b)));
                    if constexpr (T == GGML_TYPE_Q4_0)
                        corr[r] = _mm256_fmadd_ps(da, _mm256_loadu_ps(x.dsum8 + c0 + b), corr[r]);
                }
                for (; b < nc; ++b) {
                    const float da = fp16_to_f32(p + b * bs);
                    scale[r][b] = da * x.d[c0 + b];
                    if constexpr (T == GGML_TYPE_Q4_0)
                        corr[r] =
                            _mm256_add_ps(corr[r], _mm256_setr_ps(da * x.dsum8[c0 + b], 0, 0, 0, 0, 0, 0, 0));
                }
            }
            int64_t b = 0;
            for (; b + NA <= nc; b += NA)
                for (int u = 0; u < NA; ++u)
                    for (int r = 0; r < R; ++r)
                        acc[r][u] = block_dot<T>(rows[r] + (c0 + b + u) * bs, x.qs + (c0 + b + u) * 32,
                                                 scale[r] + b + u, acc[r][u]);
            for (; b < nc; ++b)
                for (int r = 0; r < R; ++r)
                    acc[r][0] =
                        block_dot<T>(rows[r] + (c0 + b) * bs, x.qs + (c0 + b) * 32, scale[r] + b, acc[r][0]);
        }
        for (int r = 0; r < R; ++r) {
            __m256 v = corr[r];
            for (int u = 0; u < NA; ++u)
                v = _mm256_add_ps(v, acc[r][u]);
            __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
            s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            s = _mm_add_ss(s, _mm_movehdup_ps(s));
            y[ri[r]] = _mm_cvtss_f32(s);
        }
    }
    m0 += R * Q;
#endif
    for (int64_t m = m0; m < m1; ++m) {
        const char * row = a.at(m, 0);
        float s = 0.0f;
        for (int64_t b = 0; b < nb; ++b) {
            const char * blk = row + b * bs;
            const float da = fp16_to_f32(blk);
            const int8_t * xq = x.qs + b * 32;
            if constexpr (T == GGML_TYPE_Q8_0) {
                s += da * x.d[b] *
                     static_cast<float>(dot_q8_block(reinterpret_cast<const int8_t *>(blk + 2), xq));
            } else {
                s += da * (x.d[b] * static_cast<float>(
                                        dot_q4_block(reinterpret_cast<const uint8_t *>(blk + 2), xq)) +
                           x.dsum8[b]);
            }
        }
        y[m] = s;
    }
}

// The decoded formats (quant_decode.h): each run of 256 values of a row is decoded into int8 codes
// with per-16 scales and offsets, then multiplied with the int8 blocks of x:
// sum over groups g of scale[g] * d_x * (int dot of g) - offset[g] * gsum[g]. With AVX-512 VNNI the
// codes are biased to unsigned (q + 128, vpdpbusd), the bias taken out with the offsets; with AVX2
// |q| times x with q's sign (vpmaddubsw, exact: at most 128 * 127 * 2 per pair); elsewhere scalar.

#undef GGX_MM_VNNI
#if HWY_TARGET == HWY_AVX3_DL
#define GGX_MM_VNNI __attribute__((target("avx512vnni")))
#else
#define GGX_MM_VNNI
#endif

struct DecodedDot {
#if HWY_TARGET == HWY_AVX3_DL
    // (Masked forms throughout: GCC 12's unmasked ones trip -Wmaybe-uninitialized.)
    static constexpr __mmask16 kAll = 0xFFFF;
    __m512 acc[4], offsets;

    GGX_MM_VNNI HWY_INLINE DecodedDot() {
        for (__m512 & a : acc)
            a = _mm512_setzero_ps();
        offsets = _mm512_setzero_ps();
    }

    // Run r of the row: its 16 group scales times x's block scales, then 64 codes per step.
    GGX_MM_VNNI HWY_INLINE void add(const quant::DecodedRun & run, const QuantVec & x, int64_t b0) {
        const __m512i pairs = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
        const __m512 dx = _mm512_maskz_permutexvar_ps(kAll, pairs, _mm512_maskz_loadu_ps(0x00FF, x.d + b0));
        const __m512 raw = _mm512_loadu_ps(run.scale);
        const __m512 scale = _mm512_mul_ps(raw, dx);
        const __m512 bias = _mm512_fmadd_ps(raw, _mm512_set1_ps(128.0f), _mm512_loadu_ps(run.offset));
        offsets = _mm512_fmadd_ps(bias, _mm512_loadu_ps(x.gsum + 2 * b0), offsets);
        const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
        const __m512i quarter = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
        for (int k = 0; k < 4; ++k) {
            const __m512i q = _mm512_xor_si512(_mm512_loadu_si512(run.q + 64 * k), flip);
            const __m512i xq = _mm512_loadu_si512(x.qs + (b0 + 2 * k) * 32);
            const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, xq);
            // Lane l sums values 4l..4l+3 of the 64: group 4k + l / 4.
            const __m512i groups = _mm512_add_epi32(_mm512_set1_epi32(4 * k), quarter);
            acc[k] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(kAll, p),
                                     _mm512_maskz_permutexvar_ps(kAll, groups, scale), acc[k]);
        }
    }
    GGX_MM_VNNI HWY_INLINE float result() const {
        const __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
        HWY_ALIGN float lanes[16];
        _mm512_store_ps(lanes, _mm512_sub_ps(sum, offsets));
        float total = 0.0f;
        for (float v : lanes)
            total += v;
        return total;
    }
#elif HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
    __m256 acc[4];
    float offsets = 0.0f;

    HWY_INLINE DecodedDot() {
        for (__m256 & a : acc)
            a = _mm256_setzero_ps();
    }

    HWY_INLINE void add(const quant::DecodedRun & run, const QuantVec & x, int64_t b0) {
        HWY_ALIGN float scale[quant::kGroups];
        for (int64_t g = 0; g < quant::kGroups; ++g) {
            scale[g] = run.scale[g] * x.d[b0 + g / 2];
            offsets += run.offset[g] * x.gsum[2 * b0 + g];
        }
        const __m256i halves = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
        for (int k = 0; k < 8; ++k) {
            const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(run.q + 32 * k));
            const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x.qs + (b0 + k) * 32));
            const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(xq, q));
            const __m256 p = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
            // Lanes 0..3 sum values 0..15 of the block (group 2k), lanes 4..7 values 16..31.
            // (Through __m128i, which may alias: a double load of the floats would break strict aliasing.)
            const __m128 two =
                _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(scale + 2 * k)));
            const __m256 sv = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(two), halves);
            acc[k % 4] = _mm256_fmadd_ps(p, sv, acc[k % 4]);
        }
    }
    HWY_INLINE float result() const {
        const __m256 v = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s) - offsets;
    }
#else
    float products = 0.0f, offsets = 0.0f;

    HWY_INLINE void add(const quant::DecodedRun & run, const QuantVec & x, int64_t b0) {
        for (int64_t g = 0; g < quant::kGroups; ++g) {
            int32_t dot = 0;
            for (int64_t i = g * quant::kGroup; i < (g + 1) * quant::kGroup; ++i)
                dot += static_cast<int32_t>(run.q[i]) * x.qs[b0 * 32 + i];
            products += run.scale[g] * x.d[b0 + g / 2] * static_cast<float>(dot);
            offsets += run.offset[g] * x.gsum[2 * b0 + g];
        }
    }
    HWY_INLINE float result() const { return products - offsets; }
#endif
};

// Rows decode kChunkRuns runs at a time (3 KiB, in L1), so the product loop makes no calls; kStreams
// rows from as many parts of the range go together (memory streams far apart keep more DRAM pages
// busy than one).
inline constexpr int64_t kChunkRuns = 8;
inline constexpr int kStreams = 4;

template <int R>
GGX_MM_VNNI HWY_INLINE void gemv_decoded_step(const Operand & a, quant::DecodeRun decode,
                                              const int64_t * rows, int64_t runs, const QuantVec & x,
                                              quant::DecodedRun * chunk, float * y) {
    const size_t run_bytes = ggml_row_size(a.type, quant::kRun);
    DecodedDot dots[R];
    for (int64_t r0 = 0; r0 < runs; r0 += kChunkRuns) {
        const int64_t n = std::min(kChunkRuns, runs - r0);
        for (int i = 0; i < R; ++i) {
            const char * blocks = a.at(rows[i], 0) + r0 * run_bytes;
            decode(blocks, run_bytes, n, chunk);
            for (int64_t r = 0; r < n; ++r) {
                // The lines kRowPrefetch ahead of this run, spread over the products.
                for (size_t line = 0; line < run_bytes; line += 64)
                    hwy::Prefetch(blocks + r * run_bytes + kRowPrefetch + line);
                dots[i].add(chunk[r], x, (r0 + r) * (quant::kRun / 32));
            }
        }
    }
    for (int i = 0; i < R; ++i)
        y[rows[i]] = dots[i].result();
}

GGX_MM_VNNI HWY_NOINLINE void gemv_decoded_rows(const Operand & a, quant::DecodeRun decode, int64_t m0,
                                                int64_t m1, int64_t K, const QuantVec & x, float * y) {
    const int64_t runs = K / quant::kRun;
    quant::DecodedRun chunk[kChunkRuns];
    const int64_t part = (m1 - m0) / kStreams;
    for (int64_t i = 0; i < part; ++i) {
        int64_t rows[kStreams];
        for (int r = 0; r < kStreams; ++r)
            rows[r] = m0 + r * part + i;
        gemv_decoded_step<kStreams>(a, decode, rows, runs, x, chunk, y);
    }
    for (int64_t m = m0 + kStreams * part; m < m1; ++m)
        gemv_decoded_step<1>(a, decode, &m, runs, x, chunk, y);
}

// Column n of b (K values of any float type) as int8 blocks of 32 (quantize_q8), converted kKC
// values at a time.
HWY_INLINE void quantize_column(const Operand & b, int64_t n, int64_t K, const QuantVec & xq) {
    HWY_ALIGN float piece[kKC];
    for (int64_t k = 0; k < K; k += kKC) {
        const int64_t count = std::min(kKC, K - k);
        const float * src = piece;
        if (b.type == GGML_TYPE_F32 && b.nb0 == sizeof(float))
            src = reinterpret_cast<const float *>(b.at(n, k));
        else
            convert_row(b.type, b.at(n, k), b.nb0, count, piece);
        quantize_q8(src, count, xq, k / 32);
    }
}

HWY_INLINE size_t gemv_per_thread(const ggml_tensor * a) {
    const int64_t K = a->ne[0];
    if (ggml_is_quantized(a->type)) return QuantVec::bytes(K / 32);
    return align64(sizeof(float) * static_cast<size_t>(K));
}

HWY_INLINE bool dense_rows(const ggml_tensor * a) {
    return a->ne[0] > 0 && (ggml_is_quantized(a->type) || a->nb[0] == ggml_type_size(a->type));
}

// The block formats with an int8 matrix-vector product: Q8_0 and Q4_0 (their own kernel) and the
// decoded ones with whole runs per row; the others take the small-N path.
HWY_INLINE bool has_int8_gemv(const ggml_tensor * a) {
    if (a->type == GGML_TYPE_Q8_0 || a->type == GGML_TYPE_Q4_0) return true;
    return quant::decoder_of(a->type) != nullptr && a->ne[0] % quant::kRun == 0;
}

HWY_INLINE bool use_gemv(const Batches & bt) {
    if (bt.b->ne[1] != 1 || !dense_rows(bt.a)) return false;
    return !ggml_is_quantized(bt.a->type) || (has_int8_gemv(bt.a) && !bt.exact);
}

HWY_NOINLINE void gemv(const Exec & ex, const Batches & bt) {
    const ggml_tensor * a = bt.a;
    const int64_t M = a->ne[1], K = a->ne[0];
    const int64_t total = M * bt.nbatch;
    const auto [r0, r1] = chunk_range(total, ex.ith, ex.nth);
    char * mine = ex.workspace + static_cast<size_t>(ex.ith) * gemv_per_thread(a);
    int64_t cur = -1;
    constexpr int64_t kChunk = 256;
    for (int64_t r = r0; r < r1;) {
        if (ex.should_stop()) return;
        const int64_t bi = r / M;
        const int64_t m0 = r % M;
        const int64_t m1 = std::min(M, m0 + std::min(kChunk, r1 - r));
        const Gemm g = bt.gemm(bi);
        if (bi != cur) {
            cur = bi;
            if (ggml_is_quantized(a->type))
                quantize_column(g.b, 0, K, QuantVec::at(mine, K / 32));
            else
                convert_row(g.b.type, g.b.at(0, 0), g.b.nb0, K, reinterpret_cast<float *>(mine));
        }
        float * y = g.c;
        switch (a->type) {
            case GGML_TYPE_F32:
                gemv_float_rows<GGML_TYPE_F32>(g.a, m0, m1, K, reinterpret_cast<float *>(mine), y);
                break;
            case GGML_TYPE_F16:
                gemv_float_rows<GGML_TYPE_F16>(g.a, m0, m1, K, reinterpret_cast<float *>(mine), y);
                break;
            case GGML_TYPE_BF16:
                gemv_float_rows<GGML_TYPE_BF16>(g.a, m0, m1, K, reinterpret_cast<float *>(mine), y);
                break;
            case GGML_TYPE_Q8_0:
                gemv_quant_rows<GGML_TYPE_Q8_0>(g.a, m0, m1, K, QuantVec::at(mine, K / 32), y);
                break;
            case GGML_TYPE_Q4_0:
                gemv_quant_rows<GGML_TYPE_Q4_0>(g.a, m0, m1, K, QuantVec::at(mine, K / 32), y);
                break;
            default:
                gemv_decoded_rows(g.a, quant::decoder_of(a->type), m0, m1, K, QuantVec::at(mine, K / 32), y);
                break;
        }
        r += m1 - m0;
    }
}

// ---------------------------------------------------------------------------------------------
// Small N (2 <= N <= kSmallN, a with dense rows): dot products along k, R rows of a against G of
// the N columns of b at once in R x G vector accumulators; a is read once, converted kSmallChunk elements
// at a time (F32 rows are used in place), b converted to F32 once per batch. No packing: for so few
// columns the GEMM's transposing packs of a cost more than the products.

inline constexpr int64_t kSmallN = 8;
inline constexpr int64_t kSmallChunk = 256;  // a multiple of every block size (see weights_ok)

#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
constexpr int kSmallAcc = 24;  // accumulators that fit in 32 registers with the operands
#else
constexpr int kSmallAcc = 12;
#endif

// Columns per group of accumulators and rows per block of small_n_rows: a block's R x G accumulators
// and its R rows of a fit in the registers with one column of b. Where all N columns do not fit
// beside 3 rows (AVX2, N > 4), the columns are taken G at a time over each L1-resident chunk of the
// block's rows, rather than one row against all N columns: one row reloads b for every 8-lane step,
// and b (N x K floats) then streams from L2 at one vector per FMA.
template <int N>
inline constexpr int kSmallGroup = std::min(N, kSmallAcc / 3);
template <int N>
inline constexpr int kSmallRows = std::max(1, std::min(4, kSmallAcc / kSmallGroup<N>));

// acc[r][w] += a row r (ar[r][0, kv)) . b column w (x + w * K, kv floats), W columns at a time.
template <int R, int W>
HWY_INLINE void dot_group(const float * const * ar, const float * HWY_RESTRICT x, int64_t K, int64_t kv,
                          VF * part) {
    const DF df;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    VF acc[R][W];
    for (int r = 0; r < R; ++r)
        for (int w = 0; w < W; ++w)
            acc[r][w] = hn::Zero(df);
    for (int64_t k = 0; k < kv; k += L) {
        VF av[R];
        for (int r = 0; r < R; ++r)
            av[r] = hn::LoadU(df, ar[r] + k);
        for (int w = 0; w < W; ++w) {
            const VF bv = hn::LoadU(df, x + w * K + k);
            for (int r = 0; r < R; ++r)
                acc[r][w] = hn::MulAdd(av[r], bv, acc[r][w]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int w = 0; w < W; ++w)
            part[r * kSmallN + w] = hn::Add(part[r * kSmallN + w], acc[r][w]);
}

// Rows [m0, m1) of y (columns n at y + n * ldy), R rows at a time over all of K (b, N x K floats,
// stays in L2), in chunks of kSmallChunk.
template <int N>
HWY_NOINLINE void small_n_rows(const Operand & a, int64_t m0, int64_t m1, int64_t K,
                               const float * HWY_RESTRICT x, float * y, int64_t ldy,
                               float * HWY_RESTRICT buf) {
    constexpr int R = kSmallRows<N>, G = kSmallGroup<N>;
    const DF df;
    const int64_t L = static_cast<int64_t>(hn::Lanes(df));
    const bool direct = a.type == GGML_TYPE_F32 && a.nb0 == sizeof(float);
    for (int64_t m = m0; m < m1; m += R) {
        const int64_t rows = std::min<int64_t>(R, m1 - m);
        VF part[R * kSmallN];
        for (VF & v : part)
            v = hn::Zero(df);
        float tail[R][N] = {};
        for (int64_t k0 = 0; k0 < K; k0 += kSmallChunk) {
            const int64_t kc = std::min(kSmallChunk, K - k0);
            const float * ar[R];
            for (int r = 0; r < R; ++r) {
                const int64_t row = m + std::min<int64_t>(r, rows - 1);  // missing rows repeat the last
                const char * p = a.at(row, k0);
                if (direct) {
                    ar[r] = reinterpret_cast<const float *>(p);
                    hwy::Prefetch(p + kRowPrefetch);
                } else {
                    convert_row(a.type, p, a.nb0, kc, buf + r * kSmallChunk);
                    ar[r] = buf + r * kSmallChunk;
                }
            }
            const int64_t kv = kc / L * L;
            for (int g = 0; g + G <= N; g += G)
                dot_group<R, G>(ar, x + g * K + k0, K, kv, part + g);
            if constexpr (N % G != 0)
                dot_group<R, N % G>(ar, x + (N - N % G) * K + k0, K, kv, part + (N - N % G));
            for (int64_t k = kv; k < kc; ++k)
                for (int r = 0; r < R; ++r)
                    for (int n = 0; n < N; ++n)
                        tail[r][n] += ar[r][k] * x[n * K + k0 + k];
        }
        for (int r = 0; r < rows; ++r)
            for (int n = 0; n < N; ++n)
                y[n * ldy + m + r] = hn::GetLane(hn::SumOfLanes(df, part[r * kSmallN + n])) + tail[r][n];
    }
}

// The dot products of one decoded weight row with N int8 columns, run by run. With VNNI the run's
// codes and scales are loaded once for all columns, and each column keeps one accumulator and one
// offset sum in registers; elsewhere one DecodedDot per column.
template <int N>
struct ColumnDots {
#if HWY_TARGET == HWY_AVX3_DL
    // A run's 16 groups of 16 codes, regrouped so that lane g of vector k holds codes 4k..4k+3 of
    // group g: vpdpbusd over the 4 vectors then sums each group in its own lane, and the group
    // scales apply once per run and column instead of once per 4 codes. Columns are regrouped the
    // same way once (prepare), each run's codes once for all columns.
    GGX_MM_VNNI static HWY_INLINE void regroup(__m512i v[4]) {
        // Stage 1: codes 0..7 (quads 0, 1) and 8..15 (quads 2, 3) of groups 0..7 from v0, v1; the
        // same for groups 8..15 from v2, v3. Lane 8h + j: quad 2s + h of group j (of the pair).
        alignas(64) static constexpr int32_t kLow[16] = {0, 4, 8, 12, 16, 20, 24, 28,
                                                         1, 5, 9, 13, 17, 21, 25, 29};
        alignas(64) static constexpr int32_t kHigh[16] = {2, 6, 10, 14, 18, 22, 26, 30,
                                                          3, 7, 11, 15, 19, 23, 27, 31};
        const __m512i low = _mm512_load_si512(kLow), high = _mm512_load_si512(kHigh);
        const __m512i a0 = _mm512_permutex2var_epi32(v[0], low, v[1]),
                      a1 = _mm512_permutex2var_epi32(v[0], high, v[1]);
        const __m512i b0 = _mm512_permutex2var_epi32(v[2], low, v[3]),
                      b1 = _mm512_permutex2var_epi32(v[2], high, v[3]);
        // Stage 2: quad k of all 16 groups.
        v[0] = _mm512_maskz_shuffle_i64x2(0xFF, a0, b0, 0x44);
        v[1] = _mm512_maskz_shuffle_i64x2(0xFF, a0, b0, 0xEE);
        v[2] = _mm512_maskz_shuffle_i64x2(0xFF, a1, b1, 0x44);
        v[3] = _mm512_maskz_shuffle_i64x2(0xFF, a1, b1, 0xEE);
    }

    // Regroups a quantized column's codes run by run (K a multiple of kRun).
    GGX_MM_VNNI static HWY_NOINLINE void prepare(const QuantVec & x, int64_t K) {
        for (int64_t r = 0; r < K / quant::kRun; ++r) {
            int8_t * q = x.qs + r * quant::kRun;
            __m512i v[4];
            for (int k = 0; k < 4; ++k)
                v[k] = _mm512_loadu_si512(q + 64 * k);
            regroup(v);
            for (int k = 0; k < 4; ++k)
                _mm512_storeu_si512(q + 64 * k, v[k]);
        }
    }

    __m512 acc[N];  // per group lane: products minus offsets

    GGX_MM_VNNI HWY_INLINE ColumnDots() {
        for (int n = 0; n < N; ++n)
            acc[n] = _mm512_setzero_ps();
    }

    GGX_MM_VNNI HWY_INLINE void add(const quant::DecodedRun & run, const QuantVec * x, int64_t b0) {
        constexpr __mmask16 kAll = DecodedDot::kAll;
        const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
        __m512i q[4];
        for (int k = 0; k < 4; ++k)
            q[k] = _mm512_xor_si512(_mm512_loadu_si512(run.q + 64 * k), flip);
        regroup(q);
        const __m512 raw = _mm512_loadu_ps(run.scale);
        const __m512 bias = _mm512_fmadd_ps(raw, _mm512_set1_ps(128.0f), _mm512_loadu_ps(run.offset));
        const __m512i pairs = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
#pragma GCC unroll 8
        for (int n = 0; n < N; ++n) {
            const int8_t * xq = x[n].qs + b0 * 32;
            __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[0], _mm512_loadu_si512(xq));
            for (int k = 1; k < 4; ++k)
                p = _mm512_dpbusd_epi32(p, q[k], _mm512_loadu_si512(xq + 64 * k));
            const __m512 dx =
                _mm512_maskz_permutexvar_ps(kAll, pairs, _mm512_maskz_loadu_ps(0x00FF, x[n].d + b0));
            const __m512 products = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(kAll, p), _mm512_mul_ps(raw, dx));
            acc[n] =
                _mm512_add_ps(acc[n], _mm512_fnmadd_ps(bias, _mm512_loadu_ps(x[n].gsum + 2 * b0), products));
        }
    }
    GGX_MM_VNNI HWY_INLINE float result(int n) const {
        HWY_ALIGN float lanes[16];
        _mm512_store_ps(lanes, acc[n]);
        float total = 0.0f;
        for (float v : lanes)
            total += v;
        return total;
    }
#else
    DecodedDot dots[N];

    static HWY_INLINE void prepare(const QuantVec &, int64_t) {}
    HWY_INLINE ColumnDots() {}  // (an implicit one would lack the target's attributes)
    HWY_INLINE void add(const quant::DecodedRun & run, const QuantVec * x, int64_t b0) {
        for (int n = 0; n < N; ++n)
            dots[n].add(run, x[n], b0);
    }
    HWY_INLINE float result(int n) const { return dots[n].result(); }
#endif
};

// Rows [m0, m1) of y (column n at y + n * ldy) against the N int8 columns x: each row is decoded
// kChunkRuns runs at a time (in L1) and each run dotted with every column.
template <int N>
GGX_MM_VNNI HWY_NOINLINE void small_n_decoded_rows(const Operand & a, quant::DecodeRun decode, int64_t m0,
                                                   int64_t m1, int64_t K, const QuantVec * x, float * y,
                                                   int64_t ldy) {
    const int64_t runs = K / quant::kRun;
    const size_t run_bytes = ggml_row_size(a.type, quant::kRun);
    quant::DecodedRun chunk[kChunkRuns];
    for (int64_t m = m0; m < m1; ++m) {
        ColumnDots<N> dots;
        for (int64_t r0 = 0; r0 < runs; r0 += kChunkRuns) {
            const int64_t count = std::min(kChunkRuns, runs - r0);
            const char * blocks = a.at(m, 0) + r0 * run_bytes;
            decode(blocks, run_bytes, count, chunk);
            for (int64_t r = 0; r < count; ++r) {
                for (size_t line = 0; line < run_bytes; line += 64)  // spread over the products
                    hwy::Prefetch(blocks + r * run_bytes + kRowPrefetch + line);
                dots.add(chunk[r], x, (r0 + r) * (quant::kRun / 32));
            }
        }
        for (int n = 0; n < N; ++n)
            y[n * ldy + m] = dots.result(n);
    }
}

// small_n_decoded_rows for a run-time N in [1, kSmallN].
HWY_INLINE void small_n_decoded(const Operand & a, quant::DecodeRun decode, int64_t m0, int64_t m1, int64_t K,
                                const QuantVec * x, int64_t N, float * y, int64_t ldy) {
    using Rows = void (*)(const Operand &, quant::DecodeRun, int64_t, int64_t, int64_t, const QuantVec *,
                          float *, int64_t);
    static constexpr Rows kRows[kSmallN] = {
        small_n_decoded_rows<1>, small_n_decoded_rows<2>, small_n_decoded_rows<3>, small_n_decoded_rows<4>,
        small_n_decoded_rows<5>, small_n_decoded_rows<6>, small_n_decoded_rows<7>, small_n_decoded_rows<8>};
    kRows[N - 1](a, decode, m0, m1, K, x, y, ldy);
}

// N == 1 comes here for a quantized a without an int8 matrix-vector product, or an exact
// (GGML_PREC_F32) product of one.
HWY_INLINE bool use_small_n(const Batches & bt) {
    return bt.b->ne[1] >= 1 && bt.b->ne[1] <= kSmallN && dense_rows(bt.a) && !use_gemv(bt);
}

// Quantized a with an int8 decoder and b's columns as int8 blocks (not for exact products).
HWY_INLINE bool small_n_int8(const Batches & bt) {
    return ggml_is_quantized(bt.a->type) && !bt.exact && quant::decoder_of(bt.a->type) != nullptr &&
           bt.a->ne[0] % quant::kRun == 0;
}

HWY_INLINE size_t small_n_per_thread(int64_t K, int64_t N) {
    const size_t floats =
        align64(sizeof(float) * static_cast<size_t>(K * N)) + align64(sizeof(float) * 4 * kSmallChunk);
    return std::max(floats, static_cast<size_t>(N) * QuantVec::bytes(K / 32));
}

HWY_NOINLINE void small_n(const Exec & ex, const Batches & bt) {
    const ggml_tensor * a = bt.a;
    const int64_t M = a->ne[1], K = a->ne[0], N = bt.b->ne[1];
    const auto [r0, r1] = chunk_range(M * bt.nbatch, ex.ith, ex.nth);
    char * mine = ex.workspace + static_cast<size_t>(ex.ith) * small_n_per_thread(K, N);
    float * x = reinterpret_cast<float *>(mine);
    float * buf = reinterpret_cast<float *>(mine + align64(sizeof(float) * static_cast<size_t>(K * N)));
    int64_t cur = -1;
    const bool int8 = small_n_int8(bt);
    QuantVec xq[kSmallN];
    constexpr int64_t kRows = 192;  // rows between stop polls
    for (int64_t r = r0; r < r1;) {
        if (ex.should_stop()) return;
        const int64_t bi = r / M, m0 = r % M;
        const int64_t m1 = std::min(M, m0 + std::min(kRows, r1 - r));
        const Gemm g = bt.gemm(bi);
        if (int8) {
            if (bi != cur) {
                cur = bi;
                for (int64_t n = 0; n < N; ++n) {
                    xq[n] = QuantVec::at(mine + static_cast<size_t>(n) * QuantVec::bytes(K / 32), K / 32);
                    quantize_column(g.b, n, K, xq[n]);
                    ColumnDots<1>::prepare(xq[n], K);
                }
            }
            small_n_decoded(g.a, quant::decoder_of(a->type), m0, m1, K, xq, N, g.c, g.ldc);
            r += m1 - m0;
            continue;
        }
        if (bi != cur) {
            cur = bi;
            for (int64_t n = 0; n < N; ++n)
                convert_row(g.b.type, g.b.at(n, 0), g.b.nb0, K, x + n * K);
        }
        switch (N) {
            case 1:
                small_n_rows<1>(g.a, m0, m1, K, x, g.c, g.ldc, buf);
                break;
            case 2:
                small_n_rows<2>(g.a, m0, m1, K, x, g.c, g.ldc, buf);
                break;
            case 3:
                small_n_rows<3>(g.a, m0, m1, K, x, g.c, g.ldc, buf);
                break;
            case 4:
                small_n_rows<4>(g.a, m0, m1, K, x, g.c, g.ldc, buf);
                break;
            case 5:
                small_n_rows<5>(g.a, m0, m1, K, x, g.c, g.ldc, buf);
                break;
            case 6:
                small_n_rows<6>(g.a, m0, m1, K, x, g.c, g.ldc, buf);
                break;
            case 7:
                small_n_rows<7>(g.a, m0, m1, K, x, g.c, g.ldc, buf);
                break;
            default:
                small_n_rows<8>(g.a, m0, m1, K, x, g.c, g.ldc, buf);
                break;
        }
        r += m1 - m0;
    }
}

// ---------------------------------------------------------------------------------------------
// One product of a [K, M, A2, A3] and b [K, N, B2, B3] into dst [M, N, B2, B3] (F32, dense rows).

HWY_INLINE Batches batches_of(const ggml_tensor * a, const ggml_tensor * b, ggml_tensor * dst) {
    Batches bt;
    bt.a = a;
    bt.b = b;
    bt.dst = dst;
    bt.B2 = dst->ne[2];
    bt.nbatch = dst->ne[2] * dst->ne[3];
    bt.r2 = dst->ne[2] / a->ne[2];
    bt.r3 = dst->ne[3] / a->ne[3];
    return bt;
}

// 16 columns or more at default precision on AMX tiles (cpu/amx.h): BF16 weights on AMX-BF16,
// Q8_0 / Q4_0 weights on AMX-INT8 (b quantized to int8 blocks as the matrix-vector path does). With
// the AVX3_DL target only, so that forcing another target tests its own path.
enum class AmxPath { kNone, kBf16, kInt8 };

HWY_INLINE AmxPath amx_path(const Batches & bt) {
    if (HWY_TARGET != HWY_AVX3_DL) return AmxPath::kNone;
    const ggml_tensor *a = bt.a, *b = bt.b;
    const bool b_float = b->type == GGML_TYPE_F32 || b->type == GGML_TYPE_F16 || b->type == GGML_TYPE_BF16;
    if (!b_float || b->nb[0] != ggml_type_size(b->type) || a->nb[0] != ggml_type_size(a->type) ||
        b->ne[1] < 16 || bt.exact)
        return AmxPath::kNone;
    if (a->type == GGML_TYPE_BF16 && amx::bf16_usable()) return AmxPath::kBf16;
    if (amx::int8_weights(a->type) && amx::int8_usable()) return AmxPath::kInt8;
    return AmxPath::kNone;
}

HWY_NOINLINE void amx_products(const Exec & ex, const Batches & bt, AmxPath path) {
    for (int64_t bi = 0; bi < bt.nbatch; ++bi) {
        if (ex.should_stop()) return;
        const Gemm g = bt.gemm(bi);
        const amx::Product p{g.a.base, g.a.type, g.a.nb1, g.b.base, g.b.type, g.b.nb1,
                             g.c,      g.ldc,    g.M,     g.N,      g.K};
        if (path == AmxPath::kBf16)
            amx::bf16_compute(ex, p);
        else
            amx::int8_compute(ex, p);
    }
}

HWY_INLINE size_t amx_workspace(const Batches & bt, AmxPath path, int nth) {
    const int64_t M = bt.a->ne[1], N = bt.b->ne[1], K = bt.a->ne[0];
    return (path == AmxPath::kBf16 ? amx::bf16_workspace(M, N, K) : amx::int8_workspace(M, N, K, nth)) + 64;
}

HWY_INLINE size_t product_workspace(const Batches & bt, int nth) {
    const size_t n = static_cast<size_t>(nth);
    if (const AmxPath path = amx_path(bt); path != AmxPath::kNone) return amx_workspace(bt, path, nth);
    if (use_gemv(bt)) return gemv_per_thread(bt.a) * n + 64;
    if (use_small_n(bt)) return small_n_per_thread(bt.a->ne[0], bt.b->ne[1]) * n + 64;
    return layout_for(bt.a, bt.b, bt.nbatch, nth).total(nth) + 64;
}

// Every thread calls this; the workspace holds product_workspace(bt, ex.nth) bytes.
HWY_NOINLINE void product(const Exec & ex, const Batches & bt) {
    const int64_t M = bt.a->ne[1], N = bt.b->ne[1], K = bt.a->ne[0];
    if (M == 0 || N == 0 || bt.nbatch == 0) return;
    if (K == 0) {
        const auto [r0, r1] = chunk_range(N * bt.nbatch, ex.ith, ex.nth);
        for (int64_t r = r0; r < r1; ++r) {
            const int64_t n = r % N, bi = r / N;
            std::memset(row_at(bt.dst, n, bi % bt.B2, bi / bt.B2), 0, static_cast<size_t>(M) * sizeof(float));
        }
        return;
    }
    if (use_gemv(bt)) {
        gemv(ex, bt);
        return;
    }
    if (use_small_n(bt)) {
        small_n(ex, bt);
        return;
    }
    if (const AmxPath path = amx_path(bt); path != AmxPath::kNone) {
        amx_products(ex, bt, path);
        return;
    }
    const Layout l = layout_for(bt.a, bt.b, bt.nbatch, ex.nth);
    if (l.solo)
        gemm_solo(ex, bt, l);
    else
        gemm_shared(ex, bt, l);
}

// A tensor header describing other memory (a sub-matrix, a transposed view, a workspace buffer);
// only type, ne, nb and data are read.
HWY_INLINE ggml_tensor dense_f32(void * data, int64_t ne0, int64_t ne1, int64_t ne2 = 1, int64_t ne3 = 1) {
    ggml_tensor t{};
    t.type = GGML_TYPE_F32;
    t.data = data;
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    size_t nb = sizeof(float);
    for (int d = 0; d < 4; ++d) {
        t.ne[d] = ne[d];
        t.nb[d] = nb;
        nb *= static_cast<size_t>(ne[d]);
    }
    return t;
}

HWY_INLINE ggml_tensor transposed(const ggml_tensor & t) {
    ggml_tensor v = t;
    std::swap(v.ne[0], v.ne[1]);
    std::swap(v.nb[0], v.nb[1]);
    return v;
}

HWY_INLINE Exec after(const Exec & ex, size_t used) {
    Exec inner = ex;
    inner.workspace += used;
    inner.workspace_size -= std::min(used, ex.workspace_size);
    return inner;
}

// ---------------------------------------------------------------------------------------------
// MUL_MAT_ID: dst[:, e, t] = as[ids[e, t]] * b[:, e mod n_b, t]. The rows of b routed to each expert
// are gathered (as F32) into one matrix, at most kRoutedRows at a time, multiplied by the expert's
// weights with the paths above (so a group of one row is a matrix-vector product), and the results
// scattered to dst.

inline constexpr int64_t kRoutedRows = 512;  // rows per product: bounds the gathered b and its result

struct Routing {
    int64_t n_as, n_used, n_tokens, rows, chunk, K, M;
    // In the workspace: the first row of each expert's group (n_as + 1 entries), the slot
    // (e + n_used * t) of each row in expert order, a flag for an id out of range, one chunk of
    // gathered rows of b and their products.
    size_t start_off, slot_off, flag_off, b_off, c_off, inner_off;

    explicit Routing(const ggml_tensor * node) {
        n_as = node->src[0]->ne[2];
        n_used = node->src[2]->ne[0];
        n_tokens = node->src[2]->ne[1];
        rows = n_used * n_tokens;
        chunk = std::min(rows, kRoutedRows);
        K = node->src[0]->ne[0];
        M = node->src[0]->ne[1];
        start_off = 0;
        slot_off = start_off + align64(sizeof(int64_t) * static_cast<size_t>(n_as + 1));
        flag_off = slot_off + align64(sizeof(int32_t) * static_cast<size_t>(rows));
        b_off = flag_off + 64;
        c_off = b_off + align64(sizeof(float) * static_cast<size_t>(chunk * K));
        inner_off = c_off + align64(sizeof(float) * static_cast<size_t>(chunk * M));
    }
    template <class T>
    T * at(char * ws, size_t off) const {
        return reinterpret_cast<T *>(ws + off);
    }
    // Expert e's weights as one matrix.
    ggml_tensor expert(const ggml_tensor * as, int64_t e) const {
        ggml_tensor v = *as;
        v.ne[2] = 1;
        v.data = static_cast<char *>(as->data) + e * as->nb[2];
        return v;
    }
};

// The largest product workspace any grouping of the rows can need.
HWY_INLINE size_t routed_product_bound(const ggml_tensor * node, const Routing & rt, int nth) {
    const ggml_tensor a = rt.expert(node->src[0], 0);
    size_t bound = 0;
    for (int64_t n : {int64_t{1}, std::min(rt.chunk, kSmallN), rt.chunk}) {
        ggml_tensor b = dense_f32(nullptr, rt.K, n), c = dense_f32(nullptr, rt.M, n);
        bound = std::max(bound, product_workspace(batches_of(&a, &b, &c), nth));
    }
    return bound;
}

HWY_INLINE size_t mul_mat_id_workspace(const ggml_tensor * node, int nth) {
    const Routing rt(node);
    return rt.inner_off + routed_product_bound(node, rt, nth);
}

// Thread 0: lists the rows grouped by expert (a counting sort of the slots by id); false for a bad id.
HWY_INLINE bool route(const ggml_tensor * ids, const Routing & rt, int64_t * start, int32_t * slot) {
    const auto id = [&](int64_t s) {
        return *reinterpret_cast<const int32_t *>(element_at(ids, s % rt.n_used, s / rt.n_used));
    };
    std::fill(start, start + rt.n_as + 1, int64_t{0});
    for (int64_t s = 0; s < rt.rows; ++s) {
        const int32_t e = id(s);
        if (e < 0 || e >= rt.n_as) return false;
        ++start[e + 1];
    }
    for (int64_t e = 0; e < rt.n_as; ++e)
        start[e + 1] += start[e];
    for (int64_t s = 0; s < rt.rows; ++s)
        slot[start[id(s)]++] = static_cast<int32_t>(s);  // start[e] ends at the next group's start
    for (int64_t e = rt.n_as; e > 0; --e)
        start[e] = start[e - 1];
    start[0] = 0;
    return true;
}

HWY_NOINLINE void mul_mat_id(const Exec & ex, ggml_tensor * dst) {
    const ggml_tensor *as = dst->src[0], *b = dst->src[1], *ids = dst->src[2];
    const Routing rt(dst);
    if (rt.rows == 0 || rt.M == 0) return;
    char * ws = ex.workspace;
    int64_t * start = rt.at<int64_t>(ws, rt.start_off);
    int32_t * slot = rt.at<int32_t>(ws, rt.slot_off);
    int32_t * bad = rt.at<int32_t>(ws, rt.flag_off);
    float * bg = rt.at<float>(ws, rt.b_off);
    float * cg = rt.at<float>(ws, rt.c_off);
    if (ex.ith == 0) *bad = route(ids, rt, start, slot) ? 0 : 1;
    ex.sync();
    if (*bad) {
        if (ex.ith == 0) ex.fail("mul_mat_id: an expert id is outside [0, as.ne2)");
        return;
    }
    const Exec inner = after(ex, rt.inner_off);
    for (int64_t e = 0; e < rt.n_as; ++e) {
        const ggml_tensor a = rt.expert(as, e);
        for (int64_t r0 = start[e]; r0 < start[e + 1]; r0 += rt.chunk) {
            const int64_t n = std::min(rt.chunk, start[e + 1] - r0);
            const auto [g0, g1] = chunk_range(n, ex.ith, ex.nth);
            for (int64_t r = g0; r < g1; ++r) {
                const int64_t s = slot[r0 + r];
                convert_row(b->type, row_at(b, (s % rt.n_used) % b->ne[1], s / rt.n_used), b->nb[0], rt.K,
                            bg + r * rt.K);
            }
            ex.sync();  // also: every thread has scattered the previous product
            ggml_tensor bm = dense_f32(bg, rt.K, n), cm = dense_f32(cg, rt.M, n);
            product(inner, batches_of(&a, &bm, &cm));
            ex.sync();
            for (int64_t r = g0; r < g1; ++r) {
                const int64_t s = slot[r0 + r];
                std::memcpy(row_at(dst, s % rt.n_used, s / rt.n_used), cg + r * rt.M,
                            static_cast<size_t>(rt.M) * sizeof(float));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// OUT_PROD: dst[m, p] = sum_n a[m, n] * b[p, n], the product of transposed views of a and b; a
// quantized a is first dequantized into the workspace (a transposed view has no dense blocks).

HWY_INLINE size_t dequantized_bytes(const ggml_tensor * a) {
    return ggml_is_quantized(a->type) ? align64(sizeof(float) * static_cast<size_t>(ggml_nelements(a))) : 0;
}

HWY_INLINE ggml_tensor out_prod_a(const ggml_tensor * a, char * workspace) {
    if (!ggml_is_quantized(a->type)) return transposed(*a);
    return transposed(dense_f32(workspace, a->ne[0], a->ne[1], a->ne[2], a->ne[3]));
}

HWY_INLINE size_t out_prod_workspace(const ggml_tensor * node, int nth) {
    const ggml_tensor a = out_prod_a(node->src[0], nullptr), b = transposed(*node->src[1]);
    return dequantized_bytes(node->src[0]) +
           product_workspace(batches_of(&a, &b, const_cast<ggml_tensor *>(node)), nth);
}

HWY_NOINLINE void out_prod(const Exec & ex, ggml_tensor * dst) {
    const ggml_tensor * a = dst->src[0];
    if (ggml_is_quantized(a->type)) {
        float * af = reinterpret_cast<float *>(ex.workspace);
        const int64_t n1 = a->ne[1], n2 = a->ne[2];
        const auto [r0, r1] = chunk_range(n1 * n2 * a->ne[3], ex.ith, ex.nth);
        for (int64_t r = r0; r < r1; ++r)
            convert_row(a->type, row_at(a, r % n1, r / n1 % n2, r / (n1 * n2)), a->nb[0], a->ne[0],
                        af + r * a->ne[0]);
        ex.sync();
    }
    const ggml_tensor at = out_prod_a(a, ex.workspace), bt = transposed(*dst->src[1]);
    product(after(ex, dequantized_bytes(a)), batches_of(&at, &bt, dst));
}

// ---------------------------------------------------------------------------------------------
// Entry points.

HWY_INLINE Batches mul_mat_batches(const ggml_tensor * node) {
    Batches bt = batches_of(node->src[0], node->src[1], const_cast<ggml_tensor *>(node));
    bt.exact = core::params<ggml_ext_mul_mat_params>(node).prec == GGML_PREC_F32;
    return bt;
}

size_t Workspace(const ggml_tensor * node, int n_threads) {
    switch (node->op) {
        case GGML_OP_MUL_MAT_ID:
            return mul_mat_id_workspace(node, n_threads);
        case GGML_OP_OUT_PROD:
            return out_prod_workspace(node, n_threads);
        default:
            return product_workspace(mul_mat_batches(node), n_threads);
    }
}

void Compute(const Exec & ex, ggml_tensor * dst) {
    const size_t need = Workspace(dst, ex.nth);
    if (ex.workspace_size < need || (need > 0 && ex.workspace == nullptr)) {
        if (ex.ith == 0) ex.fail("mul_mat: workspace smaller than Kernel::workspace asked for");
        return;
    }
    switch (dst->op) {
        case GGML_OP_MUL_MAT_ID:
            mul_mat_id(ex, dst);
            break;
        case GGML_OP_OUT_PROD:
            out_prod(ex, dst);
            break;
        default:
            product(ex, mul_mat_batches(dst));
            break;
    }
}

}  // namespace ggx::cpu::mm::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ggx::cpu {
namespace mm {
HWY_EXPORT(Workspace);
HWY_EXPORT(Compute);
HWY_EXPORT(ImplicitWorkspace);
HWY_EXPORT(ImplicitCompute);

// A weight type the products read: float, or rows of whole dense blocks of a block format ggx
// converts (every block size divides the k blocks, kKC and kSmallChunk).
static bool weights_ok(const ggml_tensor * a) {
    if (ggml_is_float_type(a->type)) return true;
    static_assert(kKC % 256 == 0);
    return core::is_computed_quantized(a->type) && a->nb[0] == ggml_type_size(a->type) &&
           a->ne[0] % ggml_blck_size(a->type) == 0 && 256 % ggml_blck_size(a->type) == 0;
}

static bool broadcasts(const ggml_tensor * a, const ggml_tensor * b) {
    return a->ne[2] > 0 && a->ne[3] > 0 && b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0;
}

static bool supports(const ggml_tensor * node) {
    if (node->op != GGML_OP_MUL_MAT || node->type != GGML_TYPE_F32) return false;
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * b = node->src[1];
    if (!a || !b || !weights_ok(a) || !ggml_is_float_type(b->type)) return false;
    if (a->ne[0] != b->ne[0] || !broadcasts(a, b)) return false;
    return node->ne[0] == a->ne[1] && node->ne[1] == b->ne[1] && node->ne[2] == b->ne[2] &&
           node->ne[3] == b->ne[3] && node->nb[0] == sizeof(float);
}

static bool supports_id(const ggml_tensor * node) {
    if (node->op != GGML_OP_MUL_MAT_ID || node->type != GGML_TYPE_F32) return false;
    const ggml_tensor *as = node->src[0], *b = node->src[1], *ids = node->src[2];
    if (!as || !b || !ids || !weights_ok(as) || !ggml_is_float_type(b->type) || ids->type != GGML_TYPE_I32)
        return false;
    return as->ne[3] == 1 && b->ne[3] == 1 && ids->ne[2] == 1 && ids->ne[3] == 1 && as->ne[0] == b->ne[0] &&
           b->ne[1] > 0 && ids->ne[0] % b->ne[1] == 0 && ids->ne[1] == b->ne[2] && node->ne[0] == as->ne[1] &&
           node->ne[1] == ids->ne[0] && node->ne[2] == ids->ne[1] && node->ne[3] == 1 &&
           node->nb[0] == sizeof(float) && ids->ne[0] * ids->ne[1] <= INT32_MAX;
}

static bool supports_out_prod(const ggml_tensor * node) {
    if (node->op != GGML_OP_OUT_PROD || node->type != GGML_TYPE_F32) return false;
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * b = node->src[1];
    if (!a || !b || !weights_ok(a) || !ggml_is_float_type(b->type)) return false;
    return a->ne[1] == b->ne[1] && broadcasts(a, b) && node->ne[0] == a->ne[0] && node->ne[1] == b->ne[0] &&
           node->ne[2] == b->ne[2] && node->ne[3] == b->ne[3] && node->nb[0] == sizeof(float);
}

static size_t workspace(const ggml_tensor * node, int n_threads) {
    return HWY_DYNAMIC_DISPATCH(Workspace)(node, std::max(n_threads, 1));
}

static void compute(const ComputeParams & params, ggml_tensor * node) {
    HWY_DYNAMIC_DISPATCH(Compute)(Exec::of(params), node);
}
}  // namespace mm

namespace gemm {
size_t workspace(const Problem & problem, int n_threads) {
    return HWY_DYNAMIC_DISPATCH(mm::ImplicitWorkspace)(problem, std::max(n_threads, 1));
}
void compute(const Exec & ex, const Problem & problem) {
    HWY_DYNAMIC_DISPATCH(mm::ImplicitCompute)(ex, problem);
}
}  // namespace gemm

namespace kernels {
const Kernel mul_mat = cpu_kernel<mm::supports, mm::workspace, mm::compute>("cpu.mul_mat");
const Kernel mul_mat_id = cpu_kernel<mm::supports_id, mm::workspace, mm::compute>("cpu.mul_mat_id");
const Kernel out_prod = cpu_kernel<mm::supports_out_prod, mm::workspace, mm::compute>("cpu.out_prod");
}  // namespace kernels
}  // namespace ggx::cpu
#endif  // HWY_ONCE
