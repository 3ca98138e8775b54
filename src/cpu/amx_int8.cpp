// MUL_MAT with Q8_0 / Q4_0 weights on AMX-INT8 tiles (tdpbssd: signed x signed int8, exact int32).
//
// Every 32-value block has its own scale on both sides, so each tile product covers one block
// (K = 32) and its int32 result is scaled and accumulated in F32 at once:
// acc[n][m] += float(C[n][m]) * (d_b[n] * d_a[m]).
//
// Tiles: A is 16 columns of b x one block (32 bytes), loaded straight from b quantized to int8 in
// the workspace (row-major, once per product by all threads); B is 16 weight rows x one block in the
// tile's "VNNI" layout (8 rows of 16 weight rows x 4 bytes), decoded from the blocks per task and
// K chunk (kChunk blocks of 4 weight groups, 16 KiB, in L1 while the task's column groups stream
// past it); C = A B is 16 columns x 16 weight rows of int32, so accumulator rows are output rows.
// Register blocking 2 x 2: C in tmm0-3, A in tmm4-5, B in tmm6-7. A step's tile stores are issued
// before the previous step's F32 epilogue, which then overlaps the tile unit's work. Weight rows
// past M decode as zeros and b's columns past N quantize to zeros, so edges need no special tiles.
#include <ggml-cpu.h>

#include <algorithm>
#include <cstring>

#include "cpu/amx.h"
#include "cpu/amx_tiles.h"

namespace ggx::cpu::amx {
namespace {

constexpr int64_t kRows = 16;   // rows of every tile: columns of b in A and C, weight rows in B
constexpr int64_t kBlock = 32;  // values per block (both operands' scale granularity)
constexpr int64_t kBTile = 512; // bytes of a decoded weight tile (8 rows of 64 bytes)
constexpr int64_t kTaskO = 4;   // weight groups (16 rows) per task
constexpr int64_t kTaskR = 16;  // column groups per task
constexpr int64_t kChunk = 8;   // blocks of K decoded at a time

size_t align64(size_t x) { return (x + 63) & ~size_t(63); }

// Sizes and workspace offsets of one product: b as int8 (xq: columns_r rows of K bytes), its block
// scales (xd: [block][column]), then per thread the decoded weight tiles, their scales, the task's
// F32 accumulators and two sets of C tiles.
struct Layout {
    int64_t blocks;             // K / 32
    int64_t groups_o, groups_r; // weight and column groups, each rounded up to even
    int64_t columns_r;          // groups_r * 16
    size_t xq, xd, wtiles, wscale, acc, cbuf, per_thread, shared;
};

Layout layout_of(int64_t M, int64_t N, int64_t K) {
    Layout l{};
    l.blocks = K / kBlock;
    l.groups_o = ((M + kRows - 1) / kRows + 1) / 2 * 2;
    l.groups_r = ((N + kRows - 1) / kRows + 1) / 2 * 2;
    l.columns_r = l.groups_r * kRows;
    l.xq = 0;
    l.xd = align64(size_t(l.columns_r * K));
    l.shared = l.xd + align64(size_t(l.blocks * l.columns_r) * 4);
    l.wtiles = 0;
    l.wscale = l.wtiles + size_t(kTaskO * kChunk * kBTile);
    l.acc = l.wscale + size_t(kTaskO * kChunk * kRows) * 4;
    l.cbuf = l.acc + size_t(kTaskO * kTaskR * kRows * kRows) * 4;
    l.per_thread = l.cbuf + 2 * 4 * size_t(kRows * kRows) * 4;
    return l;
}

}  // namespace

bool int8_weights(ggml_type type) { return type == GGML_TYPE_Q8_0 || type == GGML_TYPE_Q4_0; }

size_t int8_workspace(int64_t M, int64_t N, int64_t K, int nth) {
    const Layout l = layout_of(M, N, K);
    return l.shared + l.per_thread * size_t(std::max(nth, 1));
}

#if defined(__x86_64__)

bool int8_usable() { return ggml_cpu_has_amx_int8() != 0; }

namespace {

const TileConfig & tile_config() {
    static const TileConfig config = [] {
        TileConfig c;
        for (int t = 0; t < 4; ++t)
            c.set(t, kRows, kRows * 4);  // C: 16 x 16 int32
        c.set(4, kRows, kBlock);         // A: 16 columns x 32 codes
        c.set(5, kRows, kBlock);
        c.set(6, kBlock / 4, 64);        // B: 8 x (16 weight rows x 4 codes)
        c.set(7, kBlock / 4, 64);
        return c;
    }();
    return config;
}

struct Job {
    const Product & p;
    Layout l;
    char * ws;

    int8_t * xq() const { return reinterpret_cast<int8_t *>(ws + l.xq); }
    float * xd() const { return reinterpret_cast<float *>(ws + l.xd); }
};

struct Thread {
    char * wtiles;
    float * wscale, * acc;
    int32_t * cbuf;

    Thread(const Job & j, int ith) {
        char * base = j.ws + j.l.shared + j.l.per_thread * size_t(ith);
        wtiles = base + j.l.wtiles;
        wscale = reinterpret_cast<float *>(base + j.l.wscale);
        acc = reinterpret_cast<float *>(base + j.l.acc);
        cbuf = reinterpret_cast<int32_t *>(base + j.l.cbuf);
    }
    char * tile(int64_t oi, int64_t jj) const { return wtiles + (oi * kChunk + jj) * kBTile; }
    float * scales(int64_t oi, int64_t jj) const { return wscale + (oi * kChunk + jj) * kRows; }
    float * accumulators(int64_t oi, int64_t ri) const { return acc + (oi * kTaskR + ri) * kRows * kRows; }
};

// Column n of b quantized per block: codes into xq's row n, scales into xd[block][n]; columns past
// N are zeros.
GGX_AMX void quantize_column(const Job & j, int64_t n) {
    const Product & p = j.p;
    int8_t * q = j.xq() + n * p.K;
    float * d = j.xd() + n;
    if (n >= p.N) {
        std::memset(q, 0, size_t(p.K));
        for (int64_t b = 0; b < j.l.blocks; ++b)
            d[b * j.l.columns_r] = 0.0f;
        return;
    }
    const char * row = p.b + n * p.b_nb1;
    for (int64_t b = 0; b < j.l.blocks; ++b) {
        const __m512 lo = load16(p.b_type, row, b * kBlock, 16), hi = load16(p.b_type, row, b * kBlock + 16, 16);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi)));
        const float db = amax / 127.0f;
        const __m512 id = _mm512_set1_ps(db != 0.0f ? 1.0f / db : 0.0f);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(q + b * kBlock),
                         _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(lo, id))));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(q + b * kBlock + 16),
                         _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(hi, id))));
        d[b * j.l.columns_r] = db;
    }
}

// The 32 signed codes of block b of weight row m and its scale.
GGX_AMX __m256i block_codes(const Product & p, int64_t m, int64_t b, float * scale) {
    const size_t block_bytes = p.a_type == GGML_TYPE_Q8_0 ? 34 : 18;
    const char * blk = p.a + m * p.lda + size_t(b) * block_bytes;
    uint16_t h;
    std::memcpy(&h, blk, 2);
    *scale = _cvtsh_ss(h);
    if (p.a_type == GGML_TYPE_Q8_0) return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(blk + 2));
    // Q4_0: low nibbles are values 0..15, high nibbles 16..31, both offset by 8.
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i *>(blk + 2));
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(packed, nibble), hi = _mm_and_si128(_mm_srli_epi16(packed, 4), nibble);
    return _mm256_sub_epi8(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(8));
}

// Weight group go's blocks [b0, b0 + 2) (b0 + 1 only if below b1) into tiles jj, jj + 1 of the
// thread's chunk: 16 rows of two blocks' codes, transposed in 4-byte groups into the VNNI layout.
GGX_AMX void decode_pair(const Job & j, const Thread & t, int64_t go, int64_t oi, int64_t b0, int64_t b1,
                         int64_t jj) {
    const Product & p = j.p;
    __m512i rows[16];
    float s0[16], s1[16];
    for (int64_t r = 0; r < kRows; ++r) {
        const int64_t m = go * kRows + r;
        s0[r] = s1[r] = 0.0f;
        if (m >= p.M) {
            rows[r] = _mm512_setzero_si512();
            continue;
        }
        const __m256i first = block_codes(p, m, b0, &s0[r]);
        const __m256i second = b0 + 1 < b1 ? block_codes(p, m, b0 + 1, &s1[r]) : _mm256_setzero_si256();
        rows[r] = _mm512_inserti64x4(_mm512_castsi256_si512(first), second, 1);
    }
    transpose16(rows);  // rows[g]: group g of 4 codes of every weight row; blocks b0 then b0 + 1
    for (int64_t g = 0; g < 8; ++g) {
        _mm512_store_si512(t.tile(oi, jj) + g * 64, rows[g]);
        _mm512_store_si512(t.tile(oi, jj + 1) + g * 64, rows[8 + g]);
    }
    std::memcpy(t.scales(oi, jj), s0, sizeof s0);
    std::memcpy(t.scales(oi, jj + 1), s1, sizeof s1);
}

// acc[n][m] += float(C[n][m]) * (d_b[n] * d_a[m]) for one C tile.
GGX_AMX void accumulate(const int32_t * c, const float * db, __m512 da, float * acc) {
    for (int64_t n = 0; n < kRows; ++n) {
        const __m512 v = _mm512_cvtepi32_ps(_mm512_load_si512(c + n * kRows));
        const __m512 s = _mm512_mul_ps(_mm512_set1_ps(db[n]), da);
        _mm512_store_ps(acc + n * kRows, _mm512_fmadd_ps(v, s, _mm512_load_ps(acc + n * kRows)));
    }
}

struct Step {
    int64_t b, jj;  // block, and its index in the chunk
    const int32_t * c;
};

// The epilogue of a 2 x 2 block's step: C tiles (columns gr, gr + 1) x (weights oi, oi + 1).
GGX_AMX void epilogue(const Job & j, const Thread & t, int64_t gr, int64_t ri, int64_t oi, const Step & s) {
    const float * db = j.xd() + s.b * j.l.columns_r + gr * kRows;
    const __m512 da0 = _mm512_load_ps(t.scales(oi, s.jj)), da1 = _mm512_load_ps(t.scales(oi + 1, s.jj));
    constexpr int64_t kC = kRows * kRows;
    accumulate(s.c, db, da0, t.accumulators(oi, ri));
    accumulate(s.c + kC, db, da1, t.accumulators(oi + 1, ri));
    accumulate(s.c + 2 * kC, db + kRows, da0, t.accumulators(oi, ri + 1));
    accumulate(s.c + 3 * kC, db + kRows, da1, t.accumulators(oi + 1, ri + 1));
}

// Blocks [b0, b1) of the 2 x 2 block of column groups gr, gr + 1 and weight groups oi, oi + 1 (task
// indices; ri is gr's) into the accumulators.
GGX_AMX void block(const Job & j, const Thread & t, int64_t gr, int64_t ri, int64_t oi, int64_t b0, int64_t b1) {
    const int64_t K = j.p.K;
    const int8_t * x0 = j.xq() + gr * kRows * K;
    const int8_t * x1 = x0 + kRows * K;
    constexpr int64_t kC = kRows * kRows;
    Step previous{-1, 0, nullptr};
    for (int64_t b = b0; b < b1; ++b) {
        const int64_t jj = b - b0;
        int32_t * c = t.cbuf + (jj & 1) * 4 * kC;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        _tile_loadd(4, x0 + b * kBlock, K);
        _tile_loadd(5, x1 + b * kBlock, K);
        _tile_loadd(6, t.tile(oi, jj), 64);
        _tile_loadd(7, t.tile(oi + 1, jj), 64);
        _tile_dpbssd(0, 4, 6);
        _tile_dpbssd(1, 4, 7);
        _tile_dpbssd(2, 5, 6);
        _tile_dpbssd(3, 5, 7);
        _tile_stored(0, c, 64);
        _tile_stored(1, c + kC, 64);
        _tile_stored(2, c + 2 * kC, 64);
        _tile_stored(3, c + 3 * kC, 64);
        if (previous.c) epilogue(j, t, gr, ri, oi, previous);
        previous = {b, jj, c};
    }
    epilogue(j, t, gr, ri, oi, previous);
}

// The task's accumulators into the output (rows past N and weight rows past M are dropped).
GGX_AMX void store(const Job & j, const Thread & t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
    const Product & p = j.p;
    for (int64_t go = o0; go < o1; ++go) {
        const int64_t m0 = go * kRows;
        if (m0 >= p.M) break;
        const __mmask16 mask = static_cast<__mmask16>((1u << std::min(kRows, p.M - m0)) - 1);
        for (int64_t gr = r0; gr < r1; ++gr) {
            const float * acc = t.accumulators(go - o0, gr - r0);
            for (int64_t r = 0; r < kRows && gr * kRows + r < p.N; ++r)
                _mm512_mask_storeu_ps(p.c + (gr * kRows + r) * p.ldc + m0, mask, _mm512_load_ps(acc + r * kRows));
        }
    }
}

GGX_AMX void task(const Job & j, const Thread & t, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
    for (int64_t oi = 0; oi < o1 - o0; ++oi)
        std::memset(t.accumulators(oi, 0), 0, size_t((r1 - r0) * kRows * kRows) * 4);
    for (int64_t b0 = 0; b0 < j.l.blocks; b0 += kChunk) {
        const int64_t b1 = std::min(j.l.blocks, b0 + kChunk);
        for (int64_t go = o0; go < o1; ++go)
            for (int64_t b = b0; b < b1; b += 2)
                decode_pair(j, t, go, go - o0, b, b1, b - b0);
        for (int64_t go = o0; go < o1; go += 2)
            for (int64_t gr = r0; gr < r1; gr += 2)
                block(j, t, gr, gr - r0, go - o0, b0, b1);
    }
    store(j, t, o0, o1, r0, r1);
}

GGX_AMX void gemm(const Exec & ex, const Job & j) {
    const Thread t(j, ex.ith);
    const int64_t per_o = (j.l.groups_o + kTaskO - 1) / kTaskO, per_r = (j.l.groups_r + kTaskR - 1) / kTaskR;
    _tile_loadconfig(&tile_config());
    for (int64_t i = ex.ith; i < per_o * per_r; i += ex.nth) {
        if (ex.should_stop()) break;
        const int64_t o0 = (i % per_o) * kTaskO, r0 = (i / per_o) * kTaskR;
        task(j, t, o0, std::min(j.l.groups_o, o0 + kTaskO), r0, std::min(j.l.groups_r, r0 + kTaskR));
    }
    _tile_release();
}

}  // namespace

void int8_compute(const Exec & ex, const Product & p) {
    const Job job{p, layout_of(p.M, p.N, p.K), ex.workspace};
    for (int64_t n = ex.ith; n < job.l.columns_r; n += ex.nth)
        quantize_column(job, n);
    ex.sync();
    gemm(ex, job);
    ex.sync();  // the next product's quantization reuses the workspace
}

#else  // no AMX outside x86-64

bool int8_usable() { return false; }

void int8_compute(const Exec &, const Product &) {}

#endif

}  // namespace ggx::cpu::amx
