// The ternary and low-bit formats: TQ1_0 and TQ2_0 (ternary weights of BitNet b1.58 and TriLMs, 256
// values a block) and Q1_0 and Q2_0 (sign bits and 2-bit codes, one F16 scale a block). Layouts,
// formulas and rounding rules: docs/quantization.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/quant/format.h"

namespace ggx::core::quant {
namespace {

constexpr int kTernaryBlock = 256;
constexpr size_t kTq1Bytes = 54, kTq1Scale = 52;
constexpr size_t kTq2Bytes = 66, kTq2Scale = 64;
constexpr int kQ1Block = 128, kQ2Block = 64;
constexpr size_t kQ1Bytes = 18, kQ2Bytes = 18;  // F16 scale first, then the codes

float load_scale(const unsigned char * p) {
    ggml_fp16_t h;
    std::memcpy(&h, p, sizeof h);
    return ggml_fp16_to_fp32(h);
}

void store_scale(unsigned char * p, float d) {
    const ggml_fp16_t h = ggml_fp32_to_fp16(d);
    std::memcpy(p, &h, sizeof h);
}

// Largest |x[i]|; NaN elements are skipped.
float abs_max(const float * x, int n) {
    float amax = 0.0f;
    for (int i = 0; i < n; ++i)
        amax = std::max(amax, std::fabs(x[i]));
    return amax;
}

// ---- 2-bit codes ----------------------------------------------------------------------------------
//
// Value = (code - 1) * d. Q2_0 keeps element j in bits 2 (j % 4) of byte j / 4; TQ2_0 keeps element
// 128 g + 32 l + m in bits 2 l of byte 32 g + m.

struct Q2Layout {
    static int byte(int j) { return j / 4; }
    static int shift(int j) { return 2 * (j % 4); }
};

struct Tq2Layout {
    static int byte(int j) { return j / 128 * 32 + j % 32; }
    static int shift(int j) { return 2 * (j % 128 / 32); }
};

template <class Layout, int kBlock>
void decode_crumbs(const unsigned char * qs, float d, float * y) {
    for (int j = 0; j < kBlock; ++j) {
        const int code = (qs[Layout::byte(j)] >> Layout::shift(j)) & 3;
        y[j] = static_cast<float>(code - 1) * d;
    }
}

template <class Layout, int kBlock>
void encode_crumbs(const uint8_t * codes, unsigned char * qs) {
    std::memset(qs, 0, kBlock / 4);
    for (int j = 0; j < kBlock; ++j)
        qs[Layout::byte(j)] |= static_cast<unsigned char>(codes[j] << Layout::shift(j));
}

// ---- Ternary digits ---------------------------------------------------------------------------------
//
// TQ1_0 packs 5 trits (digits 0, 1, 2 for -1, 0, +1) a byte as the base-3 number t0 t1 t2 t3 t4 (t0
// most significant) scaled to a fraction of 256, rounded up: byte = ceil(q * 256 / 243). Digit n
// then is the integer part of 3 * frac(byte * 3^n / 256). Each group of bytes holds the trits of
// consecutive elements column by column: element first + m + bytes * n is trit n of byte m.
struct TritGroup {
    size_t first_byte;
    int bytes;
    int trits;  // 5, or 4 with a zero fifth trit
};
constexpr TritGroup kTq1Groups[] = {{0, 32, 5}, {32, 16, 5}, {48, 4, 4}};
constexpr uint8_t kPow3[] = {1, 3, 9, 27, 81, 243};

int trit_digit(unsigned char byte, int n) {
    const auto shifted = static_cast<uint8_t>(byte * kPow3[n]);
    return (shifted * 3) >> 8;
}

unsigned char pack_trits(const uint8_t * digits, int stride, int trits) {
    unsigned q = 0;
    for (int n = 0; n < 5; ++n)
        q = q * 3 + (n < trits ? digits[n * stride] : 0u);
    return static_cast<unsigned char>((q * 256 + 242) / 243);
}

// The digit (0, 1, 2) of x * id rounded half away from zero. |x| <= amax keeps a finite product
// within [-1, 1]; a non-finite product (a NaN element, or an infinite one, whose scale makes id 0)
// gives digit 1, as ggml's lroundf does on x86.
uint8_t ternary_digit(float x, float id) {
    const float v = x * id;
    return std::isfinite(v) ? static_cast<uint8_t>(std::lround(v) + 1) : uint8_t{1};
}

// d = amax, id = 1 / d (0 for an all-zero block); every element's digit into digits.
float ternary_digits(const float * x, uint8_t * digits) {
    const float d = abs_max(x, kTernaryBlock);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kTernaryBlock; ++j)
        digits[j] = ternary_digit(x[j], id);
    return d;
}

// ---- TQ1_0 (54 bytes: qs[48], qh[4], F16 d) -------------------------------------------------------

void dequantize_tq1_0(const void * x, float * y, int64_t n) {
    const auto * block = static_cast<const unsigned char *>(x);
    for (int64_t b = 0; b < n / kTernaryBlock; ++b, block += kTq1Bytes) {
        const float d = load_scale(block + kTq1Scale);
        for (const TritGroup & g : kTq1Groups)
            for (int t = 0; t < g.trits; ++t)
                for (int m = 0; m < g.bytes; ++m)
                    *y++ = static_cast<float>(trit_digit(block[g.first_byte + m], t) - 1) * d;
    }
}

void quantize_tq1_0(const float * x, void * y, int64_t n) {
    auto * block = static_cast<unsigned char *>(y);
    for (int64_t b = 0; b < n / kTernaryBlock; ++b, block += kTq1Bytes, x += kTernaryBlock) {
        uint8_t digits[kTernaryBlock];
        store_scale(block + kTq1Scale, ternary_digits(x, digits));
        const uint8_t * group_digits = digits;
        for (const TritGroup & g : kTq1Groups) {
            for (int m = 0; m < g.bytes; ++m)
                block[g.first_byte + m] = pack_trits(group_digits + m, g.bytes, g.trits);
            group_digits += g.bytes * g.trits;
        }
    }
}

// ---- TQ2_0 (66 bytes: qs[64], F16 d) ----------------------------------------------------------------

void dequantize_tq2_0(const void * x, float * y, int64_t n) {
    const auto * block = static_cast<const unsigned char *>(x);
    for (int64_t b = 0; b < n / kTernaryBlock; ++b, block += kTq2Bytes, y += kTernaryBlock)
        decode_crumbs<Tq2Layout, kTernaryBlock>(block, load_scale(block + kTq2Scale), y);
}

void quantize_tq2_0(const float * x, void * y, int64_t n) {
    auto * block = static_cast<unsigned char *>(y);
    for (int64_t b = 0; b < n / kTernaryBlock; ++b, block += kTq2Bytes, x += kTernaryBlock) {
        uint8_t digits[kTernaryBlock];
        store_scale(block + kTq2Scale, ternary_digits(x, digits));
        encode_crumbs<Tq2Layout, kTernaryBlock>(digits, block);
    }
}

// ---- Q1_0 (18 bytes: F16 d, 16 bytes of sign bits) ---------------------------------------------------

void dequantize_q1_0(const void * x, float * y, int64_t n) {
    const auto * block = static_cast<const unsigned char *>(x);
    for (int64_t b = 0; b < n / kQ1Block; ++b, block += kQ1Bytes, y += kQ1Block) {
        const float d = load_scale(block);
        const unsigned char * bits = block + sizeof(ggml_fp16_t);
        for (int j = 0; j < kQ1Block; ++j)
            y[j] = (bits[j / 8] >> (j % 8)) & 1 ? d : -d;
    }
}

// d = the mean of |x| (summed in order, so a NaN element makes it NaN, as in ggml); bit j is set
// where x[j] >= 0 (NaN: clear).
void quantize_q1_0(const float * x, void * y, int64_t n) {
    auto * block = static_cast<unsigned char *>(y);
    for (int64_t b = 0; b < n / kQ1Block; ++b, block += kQ1Bytes, x += kQ1Block) {
        float sum = 0.0f;
        for (int j = 0; j < kQ1Block; ++j)
            sum += std::fabs(x[j]);
        store_scale(block, sum / kQ1Block);
        unsigned char * bits = block + sizeof(ggml_fp16_t);
        std::memset(bits, 0, kQ1Block / 8);
        for (int j = 0; j < kQ1Block; ++j)
            if (x[j] >= 0.0f) bits[j / 8] |= static_cast<unsigned char>(1u << (j % 8));
    }
}

// ---- Q2_0 (18 bytes: F16 d, 16 bytes of 2-bit codes) ---------------------------------------------

void dequantize_q2_0(const void * x, float * y, int64_t n) {
    const auto * block = static_cast<const unsigned char *>(x);
    for (int64_t b = 0; b < n / kQ2Block; ++b, block += kQ2Bytes, y += kQ2Block)
        decode_crumbs<Q2Layout, kQ2Block>(block + sizeof(ggml_fp16_t), load_scale(block), y);
}

// The code of x * id: roundf, plus 1, clamped to [0, 3]. A non-finite product (an infinite element,
// or 1 / d overflowing for a subnormal amax) gives code 0, as ggml's int conversion does on x86.
uint8_t q2_code(float x, float id) {
    const float v = x * id;
    if (!std::isfinite(v)) return 0;
    return static_cast<uint8_t>(std::clamp(std::round(v), -1.0f, 2.0f) + 1.0f);
}

// d = amax (NaN skipped), id = 1 / d (0 when d is 0).
void quantize_q2_0(const float * x, void * y, int64_t n) {
    auto * block = static_cast<unsigned char *>(y);
    for (int64_t b = 0; b < n / kQ2Block; ++b, block += kQ2Bytes, x += kQ2Block) {
        const float d = abs_max(x, kQ2Block);
        const float id = d > 0.0f ? 1.0f / d : 0.0f;
        store_scale(block, d);
        uint8_t codes[kQ2Block];
        for (int j = 0; j < kQ2Block; ++j)
            codes[j] = q2_code(x[j], id);
        encode_crumbs<Q2Layout, kQ2Block>(codes, block + sizeof(ggml_fp16_t));
    }
}

// ggml quantizes all four without importance weights (its quantize functions ignore an imatrix).
constexpr Format kTernary[] = {
    {GGML_TYPE_TQ1_0, dequantize_tq1_0, quantize_tq1_0, nullptr, first_bad_f16_scale<kTq1Bytes, kTq1Scale>,
     GGML_TYPE_Q8_K, false},
    {GGML_TYPE_TQ2_0, dequantize_tq2_0, quantize_tq2_0, nullptr, first_bad_f16_scale<kTq2Bytes, kTq2Scale>,
     GGML_TYPE_Q8_K, false},
    {GGML_TYPE_Q1_0, dequantize_q1_0, quantize_q1_0, nullptr, first_bad_f16_scale<kQ1Bytes, 0>,
     GGML_TYPE_Q8_0, false},
    {GGML_TYPE_Q2_0, dequantize_q2_0, quantize_q2_0, nullptr, first_bad_f16_scale<kQ2Bytes, 0>,
     GGML_TYPE_Q8_0, false},
};

}  // namespace

std::span<const Format> ternary_formats() { return kTernary; }

}  // namespace ggx::core::quant
