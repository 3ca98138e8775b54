// What the AMX products (amx_bf16.cpp, amx_int8.cpp) share: the target attribute, the tile
// configuration, a 16 x 16 transpose of 32-bit elements and loads of b's float rows. x86-64 only.
#pragma once

#if defined(__x86_64__)

#include <ggml.h>

#include <cstdint>

// GCC 12's AVX-512 shuffles and conversions take _mm512_undefined_* operands, which it reports as
// uninitialized inside functions that enable AVX-512 by target attribute.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#define GGX_AMX \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,f16c,fma,amx-tile,amx-bf16,amx-int8")))

namespace ggx::cpu::amx {

// The 64-byte operand of ldtilecfg (palette 1).
struct alignas(64) TileConfig {
    uint8_t palette = 1, start_row = 0, reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};

    constexpr void set(int tile, int n_rows, int bytes_per_row) {
        rows[tile] = static_cast<uint8_t>(n_rows);
        colsb[tile] = static_cast<uint16_t>(bytes_per_row);
    }
};

// In-place transpose of a 16 x 16 matrix of 32-bit elements, one row per vector.
GGX_AMX inline void transpose16(__m512i r[16]) {
    __m512i u[16];
    for (int q = 0; q < 4; ++q) {
        const __m512i t0 = _mm512_unpacklo_epi32(r[4 * q], r[4 * q + 1]);
        const __m512i t1 = _mm512_unpackhi_epi32(r[4 * q], r[4 * q + 1]);
        const __m512i t2 = _mm512_unpacklo_epi32(r[4 * q + 2], r[4 * q + 3]);
        const __m512i t3 = _mm512_unpackhi_epi32(r[4 * q + 2], r[4 * q + 3]);
        u[4 * q] = _mm512_unpacklo_epi64(t0, t2);
        u[4 * q + 1] = _mm512_unpackhi_epi64(t0, t2);
        u[4 * q + 2] = _mm512_unpacklo_epi64(t1, t3);
        u[4 * q + 3] = _mm512_unpackhi_epi64(t1, t3);
    }
    for (int e = 0; e < 4; ++e) {
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

// 16 values of a dense F32 / F16 / BF16 row from element k (count of them valid, the rest 0) as F32.
GGX_AMX inline __m512 load16(ggml_type type, const char * row, int64_t k, int64_t count) {
    const __mmask16 mask = count >= 16  ? __mmask16(0xFFFF)
                           : count <= 0 ? __mmask16(0)
                                        : __mmask16((1u << count) - 1);
    switch (type) {
        case GGML_TYPE_F32:
            return _mm512_maskz_loadu_ps(mask, row + 4 * k);
        case GGML_TYPE_F16:
            return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, row + 2 * k));
        default:  // BF16
            return _mm512_castsi512_ps(
                _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, row + 2 * k)), 16));
    }
}

}  // namespace ggx::cpu::amx

#endif
