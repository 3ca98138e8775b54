// MUL_MAT with BF16 weights on AMX-BF16 tiles (tdpbf16ps: BF16 pairs, F32 accumulation).
//
// Tiles: A is 16 weight rows x 32 K values (64 bytes), loaded straight from the weight with its row
// stride, so the weight is never repacked; B is 16 columns of b rounded to BF16 in the tile's pair
// layout (16 rows of K/2 pairs x 16 columns: a 16 x 16 transpose of 32-bit pairs), packed once per
// product into the workspace by all threads; C = A B is 16 weight rows x 16 columns of F32.
// Register blocking 2 x 2 (C in tmm0-3, A in tmm4-5, B in tmm6-7); long K in chunks of 8 steps (256
// values), whose weight chunk stays in L1 while a task's column chunks stream past it, partial C
// tiles waiting on the stack. Edges never read outside the weight: the last partial group of weight
// rows is copied zero-padded into the workspace, and so are the K-tail values of the other rows; an
// absent second weight group of a block reads a zero tile. The epilogue transposes each C tile to
// column order and stores it; the previous block's epilogue runs halfway through the next block's
// tile loop, while the tile unit works.
#include "cpu/amx.h"

#include <algorithm>
#include <cstring>

#include "cpu/amx_tiles.h"
#include "cpu/backend.h"

namespace ggx::cpu::amx {
namespace {

constexpr int64_t kRows = 16;    // rows of every tile
constexpr int64_t kValues = 32;  // K values per tile row (64 bytes of BF16)
constexpr int64_t kTile = 1024;  // bytes of a tile
constexpr int64_t kTaskO = 4;    // weight groups (16 rows) per task
constexpr int64_t kTaskR = 16;   // column groups per task
constexpr int64_t kChunk = 8;    // K steps per chunk, when K has more than 2 chunks

size_t align64(size_t x) { return (x + 63) & ~size_t(63); }

struct Layout {
    int64_t k32, kv, steps;    // K rounded up to 32, K's whole 32-value steps, steps of k32
    int64_t groups_o, full_o;  // weight groups (16 rows), of which complete
    int64_t groups_r;          // column groups, rounded up to even (2 x 2 blocks)
    size_t bpack, wedge, wtail, zero, total;
};

Layout layout_of(int64_t M, int64_t N, int64_t K) {
    Layout l{};
    l.k32 = (K + kValues - 1) / kValues * kValues;
    l.kv = K / kValues * kValues;
    l.steps = l.k32 / kValues;
    l.groups_o = (M + kRows - 1) / kRows;
    l.full_o = M / kRows;
    l.groups_r = ((N + kRows - 1) / kRows + 1) / 2 * 2;
    size_t at = 0;
    l.bpack = at;
    at += size_t(l.groups_r * l.steps * kTile);
    l.wedge = at;
    at += align64(size_t(kRows * l.k32 * 2));
    l.wtail = at;
    at += align64(size_t(l.full_o * kRows * kValues * 2));
    l.zero = at;
    at += size_t(kTile);
    l.total = at;
    return l;
}

}  // namespace

bool bf16_usable() { return has_amx_bf16(); }

size_t bf16_workspace(int64_t M, int64_t N, int64_t K) { return layout_of(M, N, K).total; }

#if defined(__x86_64__)
namespace {

const TileConfig & tile_config() {
    static const TileConfig config = [] {
        TileConfig c;
        for (int t = 0; t < 8; ++t)
            c.set(t, kRows, 64);
        return c;
    }();
    return config;
}

struct Job {
    const Product & p;
    Layout l;
    char * ws;
};

// The B tiles of column group grp: columns past N and values past K are zero.
GGX_AMX void pack_group(const Job & j, int64_t grp) {
    const Product & p = j.p;
    char * out = j.ws + j.l.bpack + grp * j.l.steps * kTile;
    for (int64_t s = 0; s < j.l.steps; ++s, out += kTile) {
        const int64_t k = s * kValues, left = p.K - k;
        __m512i rows[16];
        for (int64_t i = 0; i < kRows; ++i) {
            const int64_t n = grp * kRows + i;
            if (n >= p.N) {
                rows[i] = _mm512_setzero_si512();
                continue;
            }
            const char * row = p.b + n * p.b_nb1;
            const __m512 lo = load16(p.b_type, row, k, left), hi = load16(p.b_type, row, k + 16, left - 16);
            rows[i] = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));  // values k..k+31 in order
        }
        transpose16(rows);
        for (int64_t i = 0; i < kRows; ++i)
            _mm512_store_si512(out + i * 64, rows[i]);
    }
}

void pack_weight_edges(const Job & j) {
    const Product & p = j.p;
    const Layout & l = j.l;
    char * wedge = j.ws + l.wedge;
    std::memset(wedge, 0, size_t(kRows * l.k32 * 2));
    for (int64_t m = l.full_o * kRows; m < p.M; ++m)
        std::memcpy(wedge + (m - l.full_o * kRows) * l.k32 * 2, p.a + m * p.lda, size_t(p.K * 2));
    if (l.kv < p.K) {
        char * tail = j.ws + l.wtail;
        for (int64_t m = 0; m < l.full_o * kRows; ++m) {
            std::memset(tail + m * 64, 0, 64);
            std::memcpy(tail + m * 64, p.a + m * p.lda + l.kv * 2, size_t((p.K - l.kv) * 2));
        }
    }
    std::memset(j.ws + l.zero, 0, kTile);
}

struct ATile {
    const void * ptr;
    int64_t stride;
};

ATile a_tile(const Job & j, int64_t grp, int64_t s) {
    const Layout & l = j.l;
    if (grp >= l.groups_o) return {j.ws + l.zero, 64};
    if (grp == l.full_o) return {j.ws + l.wedge + s * 64, l.k32 * 2};
    if (s * kValues >= l.kv) return {j.ws + l.wtail + grp * kRows * 64, 64};
    return {j.p.a + grp * kRows * j.p.lda + s * 64, static_cast<int64_t>(j.p.lda)};
}

struct Finished {
    int64_t go = -1, gr = 0;
    alignas(64) float c[4][16 * 16];
};

// C (c[m][n], 16 x 16) of weight group go and column group gr into the output.
GGX_AMX void epilogue(const Product & p, const float * c, int64_t go, int64_t gr) {
    const int64_t m0 = go * kRows, n0 = gr * kRows;
    if (m0 >= p.M || n0 >= p.N) return;
    const int64_t mv = std::min(kRows, p.M - m0), nv = std::min(kRows, p.N - n0);
    const __mmask16 mask = static_cast<__mmask16>((1u << mv) - 1);
    __m512i t[16];
    for (int i = 0; i < 16; ++i)
        t[i] = _mm512_load_si512(c + i * 16);
    transpose16(t);
    for (int64_t n = 0; n < nv; ++n)
        _mm512_mask_storeu_ps(p.c + (n0 + n) * p.ldc + m0, mask, _mm512_castsi512_ps(t[n]));
}

GGX_AMX void finish(const Product & p, const Finished & f) {
    if (f.go < 0) return;
    epilogue(p, f.c[0], f.go, f.gr);
    epilogue(p, f.c[1], f.go, f.gr + 1);
    epilogue(p, f.c[2], f.go + 1, f.gr);
    epilogue(p, f.c[3], f.go + 1, f.gr + 1);
}

// Steps [s0, s1) of the 2 x 2 block of weight groups go, go + 1 and column groups gr, gr + 1: C
// starts from zero (s0 == 0) or from c and is stored back to c.
GGX_AMX void block(const Job & j, int64_t go, int64_t gr, int64_t s0, int64_t s1, float (*c)[256],
                   const Finished & previous) {
    if (s0 == 0) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    } else {
        _tile_loadd(0, c[0], 64);
        _tile_loadd(1, c[1], 64);
        _tile_loadd(2, c[2], 64);
        _tile_loadd(3, c[3], 64);
    }
    const char * b = j.ws + j.l.bpack + (gr * j.l.steps + s0) * kTile;
    const int64_t next_b = j.l.steps * kTile;
    for (int64_t s = s0; s < s1; ++s, b += kTile) {
        const ATile a0 = a_tile(j, go, s), a1 = a_tile(j, go + 1, s);
        _tile_loadd(4, a0.ptr, a0.stride);
        _tile_loadd(5, a1.ptr, a1.stride);
        _tile_loadd(6, b, 64);
        _tile_loadd(7, b + next_b, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        if (s == (s0 + s1) / 2) finish(j.p, previous);
    }
    _tile_stored(0, c[0], 64);
    _tile_stored(1, c[1], 64);
    _tile_stored(2, c[2], 64);
    _tile_stored(3, c[3], 64);
}

GGX_AMX void gemm(const Exec & ex, const Job & j) {
    const int64_t per_o = (j.l.groups_o + kTaskO - 1) / kTaskO, per_r = (j.l.groups_r + kTaskR - 1) / kTaskR;
    const int64_t chunk = j.l.steps > 2 * kChunk ? kChunk : j.l.steps;
    _tile_loadconfig(&tile_config());
    Finished done[2];
    int cur = 0;
    alignas(64) float acc[kTaskO / 2 * kTaskR / 2][4][256];  // 64 KiB
    for (int64_t i = ex.ith; i < per_o * per_r; i += ex.nth) {
        if (ex.should_stop()) break;
        const int64_t o0 = (i % per_o) * kTaskO, r0 = (i / per_o) * kTaskR;
        const int64_t o1 = std::min(j.l.groups_o, o0 + kTaskO), r1 = std::min(j.l.groups_r, r0 + kTaskR);
        for (int64_t s0 = 0; s0 < j.l.steps; s0 += chunk) {
            const int64_t s1 = std::min(j.l.steps, s0 + chunk);
            const bool last = s1 == j.l.steps;
            for (int64_t go = o0; go < o1; go += 2)
                for (int64_t gr = r0; gr < r1; gr += 2) {
                    float(*partial)[256] = acc[(go - o0) / 2 * (kTaskR / 2) + (gr - r0) / 2];
                    float(*c)[256] = last ? done[cur].c : partial;
                    if (last && s0 > 0) std::memcpy(c, partial, sizeof acc[0]);
                    block(j, go, gr, s0, s1, c, done[cur ^ 1]);
                    done[cur ^ 1].go = -1;
                    if (!last) continue;
                    done[cur].go = go;
                    done[cur].gr = gr;
                    cur ^= 1;
                }
        }
    }
    finish(j.p, done[cur ^ 1]);
    _tile_release();
}

}  // namespace

void bf16_compute(const Exec & ex, const Product & p) {
    const Job job{p, layout_of(p.M, p.N, p.K), ex.workspace};
    for (int64_t t = ex.ith; t <= job.l.groups_r; t += ex.nth) {
        if (t == job.l.groups_r)
            pack_weight_edges(job);
        else
            pack_group(job, t);
    }
    ex.sync();
    gemm(ex, job);
    ex.sync();  // the next product's packing reuses the workspace
}

#else  // no AMX outside x86-64: bf16_usable() is false there

void bf16_compute(const Exec &, const Product &) {}

#endif

}  // namespace ggx::cpu::amx
