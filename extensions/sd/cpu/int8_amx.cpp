// The INT8 GEMM of sd.linear_i8.v1 on AMX tiles (tdpbssd: signed x signed int8, exact int32 sums).
//
// Tiles: A is 16 weight rows x 64 K bytes, loaded straight from the weight with its row stride, so
// the weight is never repacked; B is the activations in the tile's "VNNI" layout (16 rows of K/4 x
// 16 activation rows x 4 bytes: a 16 x 16 transpose of 32-bit groups), packed per call into the
// workspace (m x k bytes, cheap next to the m x n x k product); C = A B is 16 weight rows x 16
// activation rows of int32. Register blocking 2 x 2: C0..C3 in tmm0-3, A in tmm4-5, B in tmm6-7.
// Long K goes in chunks of 8 steps (512 bytes): a block row's weight chunk (16 KiB) stays in L1
// while the task's activation chunks stream past it from L2, partial C tiles waiting on the stack.
// Edges never read outside the weight: the last partial group of weight rows is copied zero-padded
// into the workspace, and so are the K-tail bytes of the other rows; an absent second weight group
// of a block reads a zero tile. The epilogue transposes each C tile back to activation-row order and
// applies sd-ops.md 3.4's F32 steps in order (this file is compiled with -ffp-contract=off).
#include "cpu/int8_amx.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#if defined(__x86_64__)
// GCC 12's AVX-512 shuffles and conversions take _mm512_undefined_* operands, which it reports as
// uninitialized inside functions that enable AVX-512 by target attribute.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace sd::int8::cpu::amx {
namespace {

std::atomic<bool> g_disabled{false};

bool cpu_reports_amx_int8() {
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("CPU");
    auto get = reinterpret_cast<ggml_backend_get_features_t>(
        reg ? ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features") : nullptr);
    for (const ggml_backend_feature * f = get ? get(reg) : nullptr; f && f->name; ++f)
        if (std::strcmp(f->name, "AMX_INT8") == 0) return std::strcmp(f->value, "0") != 0;
    return false;
}

}  // namespace

bool available() {
    static const bool reported = cpu_reports_amx_int8();
    return reported;
}

bool enabled() { return available() && !g_disabled.load(std::memory_order_relaxed); }

void set_enabled(bool on) { g_disabled.store(!on, std::memory_order_relaxed); }

namespace {

constexpr int64_t kRows = 16;    // rows of every tile
constexpr int64_t kBytes = 64;   // bytes per tile row: 64 K values of A, 16 int32 groups of B
constexpr int64_t kTile = 1024;  // bytes of a tile
constexpr int64_t kTaskO = 4;    // weight groups (16 rows) per task
constexpr int64_t kTaskR = 16;   // activation groups per task
constexpr int64_t kChunk = 8;    // K steps per chunk, when K has more than 2 chunks

size_t align64(size_t x) { return (x + 63) & ~size_t(63); }

// Sizes and workspace offsets of one product.
struct Layout {
    int64_t k64, kv, steps;    // K rounded up to 64, K's whole 64-byte steps, steps of k64
    int64_t groups_o, full_o;  // weight groups (16 rows), of which complete
    int64_t groups_r;          // activation groups, rounded up to even (2 x 2 blocks)
    size_t xpack, wedge, wtail, zero, total;
};

Layout layout_of(int64_t k, int64_t n, int64_t m) {
    Layout l{};
    l.k64 = (k + kBytes - 1) / kBytes * kBytes;
    l.kv = k / kBytes * kBytes;
    l.steps = l.k64 / kBytes;
    l.groups_o = (n + kRows - 1) / kRows;
    l.full_o = n / kRows;
    l.groups_r = ((m + kRows - 1) / kRows + 1) / 2 * 2;
    size_t at = 0;
    l.xpack = at;
    at += size_t(l.groups_r * l.steps * kTile);
    l.wedge = at;
    at += align64(size_t(kRows * l.k64));
    l.wtail = at;
    at += align64(size_t(l.full_o * kRows * kBytes));
    l.zero = at;
    at += size_t(kTile);
    l.total = at;
    return l;
}

}  // namespace

size_t workspace(int64_t k, int64_t n, int64_t m) { return layout_of(k, n, m).total; }

#if defined(__x86_64__)
namespace {

#define SD_AMX __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,amx-tile,amx-int8")))

struct alignas(64) TileConfig {
    uint8_t palette = 1, start_row = 0, reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};

// Every tile used (tmm0-7) is 16 rows of 64 bytes.
const TileConfig & tile_config() {
    static const TileConfig config = [] {
        TileConfig c;
        for (int t = 0; t < 8; ++t) {
            c.colsb[t] = kBytes;
            c.rows[t] = kRows;
        }
        return c;
    }();
    return config;
}

struct Job {
    const ggml_ext_cpu_parallel_v1 * pool;
    Gemm g;
    Layout l;
    char * ws;
};

// In-place transpose of a 16 x 16 matrix of 32-bit elements, one row per vector.
SD_AMX void transpose16(__m512i r[16]) {
    __m512i u[16];
    for (int q = 0; q < 4; ++q) {  // 4 x 4 transposes inside each 128-bit lane, per 4 rows
        const __m512i t0 = _mm512_unpacklo_epi32(r[4 * q], r[4 * q + 1]);
        const __m512i t1 = _mm512_unpackhi_epi32(r[4 * q], r[4 * q + 1]);
        const __m512i t2 = _mm512_unpacklo_epi32(r[4 * q + 2], r[4 * q + 3]);
        const __m512i t3 = _mm512_unpackhi_epi32(r[4 * q + 2], r[4 * q + 3]);
        u[4 * q] = _mm512_unpacklo_epi64(t0, t2);
        u[4 * q + 1] = _mm512_unpackhi_epi64(t0, t2);
        u[4 * q + 2] = _mm512_unpacklo_epi64(t1, t3);
        u[4 * q + 3] = _mm512_unpackhi_epi64(t1, t3);
    }
    for (int e = 0; e < 4; ++e) {  // then the 4 x 4 transpose of the lanes
        const __m512i v0 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0x44);
        const __m512i v1 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0xEE);
        const __m512i v2 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0x44);
        const __m512i v3 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0xEE);
        r[e] = _mm512_shuffle_i32x4(v0, v2, 0x88);
        r[4 + e] = _mm512_shuffle_i32x4(v0, v2, 0xDD);
        r[8 + e] = _mm512_shuffle_i32x4(v1, v3, 0x88);
        r[12 + e] = _mm512_shuffle_i32x4(v1, v3, 0xDD);
    }
}

__mmask64 byte_mask(int64_t bytes) { return bytes >= 64 ? ~__mmask64(0) : (__mmask64(1) << bytes) - 1; }

// The B tiles of activation group grp: rows past m and bytes past k are zero.
SD_AMX void pack_group(const Job & j, int64_t grp) {
    const Gemm & g = j.g;
    char * out = j.ws + j.l.xpack + grp * j.l.steps * kTile;
    for (int64_t s = 0; s < j.l.steps; ++s, out += kTile) {
        const __mmask64 mask = byte_mask(g.k - s * kBytes);
        __m512i rows[16];
        for (int64_t i = 0; i < kRows; ++i) {
            const int64_t r = grp * kRows + i;
            rows[i] =
                r < g.m ? _mm512_maskz_loadu_epi8(mask, g.x + r * g.k + s * kBytes) : _mm512_setzero_si512();
        }
        transpose16(rows);
        for (int64_t i = 0; i < kRows; ++i)
            _mm512_store_si512(out + i * kBytes, rows[i]);
    }
}

// The zero-padded copies that keep A loads inside the weight, and the zero tile.
void pack_weight_edges(const Job & j) {
    const Gemm & g = j.g;
    const Layout & l = j.l;
    char * wedge = j.ws + l.wedge;
    std::memset(wedge, 0, size_t(kRows * l.k64));
    for (int64_t o = l.full_o * kRows; o < g.n; ++o)
        std::memcpy(wedge + (o - l.full_o * kRows) * l.k64, g.w + o * g.k, size_t(g.k));
    if (l.kv < g.k) {
        char * tail = j.ws + l.wtail;
        for (int64_t o = 0; o < l.full_o * kRows; ++o) {
            std::memset(tail + o * kBytes, 0, kBytes);
            std::memcpy(tail + o * kBytes, g.w + o * g.k + l.kv, size_t(g.k - l.kv));
        }
    }
    std::memset(j.ws + l.zero, 0, kTile);
}

void pack_task(const ggml_ext_cpu_task * task) {
    const Job & j = *static_cast<const Job *>(task->user_data);
    for (int64_t t = task->ith; t <= j.l.groups_r; t += task->nth) {
        if (j.pool->should_stop(task)) return;
        if (t == j.l.groups_r)
            pack_weight_edges(j);
        else
            pack_group(j, t);
    }
}

struct ATile {
    const void * p;
    int64_t stride;
};

ATile a_tile(const Job & j, int64_t grp, int64_t s) {
    const Layout & l = j.l;
    if (grp >= l.groups_o) return {j.ws + l.zero, kBytes};
    if (grp == l.full_o) return {j.ws + l.wedge + s * kBytes, l.k64};
    if (s * kBytes >= l.kv) return {j.ws + l.wtail + grp * kRows * kBytes, kBytes};
    return {j.g.w + grp * kRows * j.g.k + s * kBytes, j.g.k};
}

// C (c[o][r], 16 x 16 int32) of weight group go and activation group gr into y.
SD_AMX void epilogue(const Gemm & g, const int32_t * c, int64_t go, int64_t gr) {
    const int64_t o0 = go * kRows, r0 = gr * kRows;
    if (o0 >= g.n || r0 >= g.m) return;
    const int64_t ov = std::min(kRows, g.n - o0), rv = std::min(kRows, g.m - r0);
    const __mmask16 omask = static_cast<__mmask16>((1u << ov) - 1);
    __m512i t[16];
    for (int i = 0; i < 16; ++i)
        t[i] = _mm512_load_si512(c + i * 16);
    transpose16(t);
    const __m512 sw = g.sw ? _mm512_maskz_loadu_ps(omask, g.sw + o0) : _mm512_setzero_ps();
    const __m512 bias = g.bias ? _mm512_maskz_loadu_ps(omask, g.bias + o0) : _mm512_setzero_ps();
    for (int64_t r = 0; r < rv; ++r) {
        __m512 y = _mm512_cvtepi32_ps(t[r]);
        if (g.sx) y = _mm512_mul_ps(y, _mm512_set1_ps(g.sx[r0 + r]));
        if (g.sw) y = _mm512_mul_ps(y, sw);
        if (g.bias) y = _mm512_add_ps(y, bias);
        _mm512_mask_storeu_ps(g.y + (r0 + r) * g.n + o0, omask, y);
    }
}

// C tiles of a finished 2 x 2 block, waiting for their epilogue.
struct Finished {
    int64_t go = -1, gr = 0;
    alignas(64) int32_t c[4][16 * 16];
};

SD_AMX void finish(const Gemm & g, const Finished & f) {
    if (f.go < 0) return;
    epilogue(g, f.c[0], f.go, f.gr);
    epilogue(g, f.c[1], f.go, f.gr + 1);
    epilogue(g, f.c[2], f.go + 1, f.gr);
    epilogue(g, f.c[3], f.go + 1, f.gr + 1);
}

// Steps [s0, s1) of the 2 x 2 block of weight groups go, go + 1 and activation groups gr, gr + 1:
// C starts from zero (s0 == 0) or from c, and is stored back to c; halfway, the previous block's
// epilogue runs while the tile unit works on this one.
SD_AMX void block(const Job & j, int64_t go, int64_t gr, int64_t s0, int64_t s1, int32_t (*c)[256],
                  const Finished & previous) {
    if (s0 == 0) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    } else {
        _tile_loadd(0, c[0], kBytes);
        _tile_loadd(1, c[1], kBytes);
        _tile_loadd(2, c[2], kBytes);
        _tile_loadd(3, c[3], kBytes);
    }
    const char * b = j.ws + j.l.xpack + (gr * j.l.steps + s0) * kTile;
    const int64_t next_b = j.l.steps * kTile;  // from group gr to gr + 1
    for (int64_t s = s0; s < s1; ++s, b += kTile) {
        const ATile a0 = a_tile(j, go, s), a1 = a_tile(j, go + 1, s);
        _tile_loadd(4, a0.p, a0.stride);
        _tile_loadd(5, a1.p, a1.stride);
        _tile_loadd(6, b, kBytes);
        _tile_loadd(7, b + next_b, kBytes);
        _tile_dpbssd(0, 4, 6);
        _tile_dpbssd(1, 4, 7);
        _tile_dpbssd(2, 5, 6);
        _tile_dpbssd(3, 5, 7);
        if (s == (s0 + s1) / 2) finish(j.g, previous);
    }
    _tile_stored(0, c[0], kBytes);
    _tile_stored(1, c[1], kBytes);
    _tile_stored(2, c[2], kBytes);
    _tile_stored(3, c[3], kBytes);
}

struct Tasks {
    int64_t per_o, per_r, count;  // task grid: weight-group blocks x activation-group blocks
};

Tasks tasks_of(const Layout & l) {
    Tasks t;
    t.per_o = (l.groups_o + kTaskO - 1) / kTaskO;
    t.per_r = (l.groups_r + kTaskR - 1) / kTaskR;
    t.count = t.per_o * t.per_r;
    return t;
}

// A task's blocks, K chunk by K chunk (kChunk steps): each weight chunk of a block row stays in L1
// while the activation chunks stream past it; partial C tiles wait in acc between chunks.
SD_AMX void gemm_task(const ggml_ext_cpu_task * task) {
    const Job & j = *static_cast<const Job *>(task->user_data);
    const Tasks t = tasks_of(j.l);
    _tile_loadconfig(&tile_config());
    Finished done[2];
    int cur = 0;
    alignas(64) int32_t acc[kTaskO / 2 * kTaskR / 2][4][256];  // 64 KiB
    const int64_t chunk = j.l.steps > 2 * kChunk ? kChunk : j.l.steps;
    for (int64_t i = task->ith; i < t.count; i += task->nth) {
        if (j.pool->should_stop(task)) break;
        const int64_t o0 = (i % t.per_o) * kTaskO, r0 = (i / t.per_o) * kTaskR;
        const int64_t o1 = std::min(j.l.groups_o, o0 + kTaskO), r1 = std::min(j.l.groups_r, r0 + kTaskR);
        for (int64_t s0 = 0; s0 < j.l.steps; s0 += chunk) {
            const int64_t s1 = std::min(j.l.steps, s0 + chunk);
            for (int64_t go = o0; go < o1; go += 2)
                for (int64_t gr = r0; gr < r1; gr += 2) {
                    const bool last = s1 == j.l.steps;
                    int32_t(*partial)[256] = acc[(go - o0) / 2 * (kTaskR / 2) + (gr - r0) / 2];
                    int32_t(*c)[256] = last ? done[cur].c : partial;
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
    finish(j.g, done[cur ^ 1]);
    _tile_release();
}

}  // namespace

ggml_status run(const ggml_ext_cpu_parallel_v1 * pool, ggml_backend_t backend, const Gemm & g,
                void * workspace, int nth) {
    Job job{pool, g, layout_of(g.k, g.n, g.m), static_cast<char *>(workspace)};
    ggml_status st = pool->run(backend, pack_task, &job, int(std::min<int64_t>(nth, job.l.groups_r + 1)));
    if (st != GGML_STATUS_SUCCESS) return st;
    return pool->run(backend, gemm_task, &job, int(std::min<int64_t>(nth, tasks_of(job.l).count)));
}

#else  // no AMX outside x86-64: enabled() is false and run is never reached

ggml_status run(const ggml_ext_cpu_parallel_v1 *, ggml_backend_t, const Gemm &, void *, int) {
    ggml_ext_set_error("sd.linear_i8.cpu: AMX is x86-64 only");
    return GGML_STATUS_FAILED;
}

#endif

}  // namespace sd::int8::cpu::amx
