// Type traits, exact F16/BF16 conversions and row quantization (see the "Types" section of ggml.h).
#include <ggml.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace {

struct TypeTraits {
    const char * name;
    int64_t blck_size;
    size_t type_size;
    bool is_quantized;
    bool is_float;
};

constexpr std::array<TypeTraits, GGML_TYPE_COUNT> kTraits = {{
    {"f32", 1, sizeof(float), false, true},
    {"f16", 1, sizeof(ggml_fp16_t), false, true},
    {"bf16", 1, sizeof(ggml_bf16_t), false, true},
    {"i8", 1, sizeof(int8_t), false, false},
    {"i16", 1, sizeof(int16_t), false, false},
    {"i32", 1, sizeof(int32_t), false, false},
    {"q8_0", GGML_QK8_0, sizeof(ggml_block_q8_0), true, false},
    {"q4_0", GGML_QK4_0, sizeof(ggml_block_q4_0), true, false},
}};

static_assert(sizeof(ggml_block_q8_0) == 34, "Q8_0 block must be 34 bytes");
static_assert(sizeof(ggml_block_q4_0) == 18, "Q4_0 block must be 18 bytes");

// Out-of-range types get neutral traits: a block of one element and zero bytes.
constexpr TypeTraits kUnknown = {"unknown", 1, 0, false, false};

const TypeTraits & traits(ggml_type type) {
    const auto index = static_cast<int>(type);
    if (index < 0 || index >= GGML_TYPE_COUNT) return kUnknown;
    return kTraits[static_cast<size_t>(index)];
}

// ---- F16 / BF16 ---------------------------------------------------------------------------------

constexpr uint32_t kF32AbsMask = 0x7fffffffu;
constexpr uint32_t kF32Inf = 0x7f800000u;
constexpr uint32_t kF32QuietBit = 0x00400000u;

// Rounds value >> shift to nearest, ties to even (shift >= 1).
constexpr uint32_t shift_right_rne(uint32_t value, int shift) {
    const uint32_t kept = value >> shift;
    const uint32_t rest = value & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

uint16_t f32_bits_to_f16(uint32_t bits) {
    const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t abs = bits & kF32AbsMask;
    if (abs > kF32Inf) {  // NaN: keep the top payload bits, force the quiet bit
        return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x03ffu));
    }
    // 65520 is the midpoint between 65504 (largest finite F16) and 2^16; the tie goes to the even
    // neighbour, which is infinity.
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
    if (abs >= 0x38800000u) {  // >= 2^-14: a normal F16; rebias the exponent by 127 - 15
        // A mantissa carry into the exponent yields the correct next binade.
        return static_cast<uint16_t>(sign | shift_right_rne(abs - 0x38000000u, 13));
    }
    // Subnormal F16 (or zero), in units of 2^-24. Anything up to 2^-25 (a tie with zero) gives zero.
    if (abs <= 0x33000000u) return sign;
    const int exponent = static_cast<int>(abs >> 23);  // 102..112 here
    const uint32_t mantissa = (abs & 0x007fffffu) | 0x00800000u;
    // A value just below 2^-14 may round up to 0x400, which is the correct (smallest normal) encoding.
    return static_cast<uint16_t>(sign | shift_right_rne(mantissa, 126 - exponent));
}

uint32_t f16_to_f32_bits(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu;
    const uint32_t mantissa = h & 0x03ffu;
    if (exponent == 0x1fu) {
        return sign | kF32Inf | (mantissa << 13) | (mantissa != 0 ? kF32QuietBit : 0u);
    }
    if (exponent == 0) {
        // Zero or subnormal: mantissa * 2^-24 is exact as a (normal) F32.
        return sign | std::bit_cast<uint32_t>(static_cast<float>(mantissa) * 0x1p-24f);
    }
    return sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
}

uint16_t f32_bits_to_bf16(uint32_t bits) {
    if ((bits & kF32AbsMask) > kF32Inf) {
        // Truncation alone could drop a payload held only in the low 16 bits and give infinity.
        return static_cast<uint16_t>((bits >> 16) | 0x0040u);
    }
    // Overflow rounds into the infinity encoding, and infinity maps to itself.
    return static_cast<uint16_t>(shift_right_rne(bits, 16));
}

uint32_t bf16_to_f32_bits(uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    return (bits & kF32AbsMask) > kF32Inf ? bits | kF32QuietBit : bits;
}

// ---- Integer types ------------------------------------------------------------------------------

// Nearest integer, ties to even, independent of the current floating-point rounding mode.
double round_half_even(double x) {
    const double lower = std::floor(x);
    const double diff = x - lower;
    if (diff < 0.5) return lower;
    if (diff > 0.5) return lower + 1.0;
    return std::fmod(lower, 2.0) == 0.0 ? lower : lower + 1.0;
}

template <class Int>
Int saturate_round(float x) {
    if (std::isnan(x)) return 0;
    constexpr auto lo = static_cast<double>(std::numeric_limits<Int>::min());
    constexpr auto hi = static_cast<double>(std::numeric_limits<Int>::max());
    // The limits are integers, so clamping before rounding equals clamping after, and keeps
    // infinities out of the rounding.
    return static_cast<Int>(round_half_even(std::clamp(static_cast<double>(x), lo, hi)));
}

template <class Int>
void quantize_int(const float * x, void * y, int64_t n) {
    auto * out = static_cast<Int *>(y);
    for (int64_t i = 0; i < n; ++i)
        out[i] = saturate_round<Int>(x[i]);
}

template <class Int>
void dequantize_int(const void * x, float * y, int64_t n) {
    const auto * in = static_cast<const Int *>(x);
    for (int64_t i = 0; i < n; ++i)
        y[i] = static_cast<float>(in[i]);
}

// ---- Q8_0 / Q4_0 --------------------------------------------------------------------------------

// roundf(v) limited to [-127, 127]; NaN (from inf * 0 or a NaN input) gives 0. For finite input
// and a finite scale the limit never binds.
int8_t q8_value(float v) {
    if (std::isnan(v)) return 0;
    return static_cast<int8_t>(std::roundf(std::clamp(v, -127.0f, 127.0f)));
}

void quantize_block_q8_0(const float * x, ggml_block_q8_0 * block) {
    float amax = 0.0f;
    for (int i = 0; i < GGML_QK8_0; ++i)
        amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block->d = ggml_fp32_to_fp16(d);
    for (int i = 0; i < GGML_QK8_0; ++i)
        block->qs[i] = q8_value(x[i] * id);
}

// min(15, trunc(v)) clamped below at 0; NaN gives 8, the nibble of value zero.
uint8_t q4_nibble(float v) {
    if (std::isnan(v)) return 8;
    return static_cast<uint8_t>(std::clamp(v, 0.0f, 15.0f));
}

void quantize_block_q4_0(const float * x, ggml_block_q4_0 * block) {
    // Starting from +0 and replacing only on a strictly larger magnitude keeps the first of equal
    // maxima; an all-zero block gives d = +0 / -8 = -0, which like any zero scale yields id = 0.
    float amax = 0.0f;
    float max = 0.0f;
    for (int i = 0; i < GGML_QK4_0; ++i) {
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block->d = ggml_fp32_to_fp16(d);
    constexpr int half = GGML_QK4_0 / 2;
    for (int j = 0; j < half; ++j) {
        const uint8_t lo = q4_nibble(x[j] * id + 8.5f);
        const uint8_t hi = q4_nibble(x[j + half] * id + 8.5f);
        block->qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
}

void dequantize_block_q8_0(const ggml_block_q8_0 * block, float * y) {
    const float d = ggml_fp16_to_fp32(block->d);
    for (int i = 0; i < GGML_QK8_0; ++i)
        y[i] = d * static_cast<float>(block->qs[i]);
}

void dequantize_block_q4_0(const ggml_block_q4_0 * block, float * y) {
    const float d = ggml_fp16_to_fp32(block->d);
    constexpr int half = GGML_QK4_0 / 2;
    for (int j = 0; j < half; ++j) {
        y[j] = d * static_cast<float>((block->qs[j] & 0x0f) - 8);
        y[j + half] = d * static_cast<float>((block->qs[j] >> 4) - 8);
    }
}

template <class Block, void (*quantize_block)(const float *, Block *), int64_t kBlock>
void quantize_blocks(const float * x, void * y, int64_t n) {
    auto * blocks = static_cast<Block *>(y);
    for (int64_t b = 0; b < n / kBlock; ++b)
        quantize_block(x + b * kBlock, blocks + b);
}

template <class Block, void (*dequantize_block)(const Block *, float *), int64_t kBlock>
void dequantize_blocks(const void * x, float * y, int64_t n) {
    const auto * blocks = static_cast<const Block *>(x);
    for (int64_t b = 0; b < n / kBlock; ++b)
        dequantize_block(blocks + b, y + b * kBlock);
}

}  // namespace

extern "C" {

const char * ggml_type_name(enum ggml_type type) { return traits(type).name; }

int64_t ggml_blck_size(enum ggml_type type) { return traits(type).blck_size; }

size_t ggml_type_size(enum ggml_type type) { return traits(type).type_size; }

bool ggml_is_quantized(enum ggml_type type) { return traits(type).is_quantized; }

bool ggml_is_float_type(enum ggml_type type) { return traits(type).is_float; }

size_t ggml_row_size(enum ggml_type type, int64_t ne) {
    const TypeTraits & t = traits(type);
    return static_cast<size_t>(ne / t.blck_size) * t.type_size;
}

float ggml_fp16_to_fp32(ggml_fp16_t h) { return std::bit_cast<float>(f16_to_f32_bits(h)); }

ggml_fp16_t ggml_fp32_to_fp16(float f) { return f32_bits_to_f16(std::bit_cast<uint32_t>(f)); }

float ggml_bf16_to_fp32(ggml_bf16_t h) { return std::bit_cast<float>(bf16_to_f32_bits(h)); }

ggml_bf16_t ggml_fp32_to_bf16(float f) { return f32_bits_to_bf16(std::bit_cast<uint32_t>(f)); }

void ggml_fp16_to_fp32_row(const ggml_fp16_t * x, float * y, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        y[i] = ggml_fp16_to_fp32(x[i]);
}

void ggml_fp32_to_fp16_row(const float * x, ggml_fp16_t * y, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        y[i] = ggml_fp32_to_fp16(x[i]);
}

void ggml_bf16_to_fp32_row(const ggml_bf16_t * x, float * y, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        y[i] = ggml_bf16_to_fp32(x[i]);
}

void ggml_fp32_to_bf16_row(const float * x, ggml_bf16_t * y, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        y[i] = ggml_fp32_to_bf16(x[i]);
}

size_t ggml_quantize_row(enum ggml_type type, const float * x, void * y, int64_t n) {
    if (n <= 0) return 0;
    switch (type) {
        case GGML_TYPE_F32:
            std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
            break;
        case GGML_TYPE_F16:
            ggml_fp32_to_fp16_row(x, static_cast<ggml_fp16_t *>(y), n);
            break;
        case GGML_TYPE_BF16:
            ggml_fp32_to_bf16_row(x, static_cast<ggml_bf16_t *>(y), n);
            break;
        case GGML_TYPE_I8:
            quantize_int<int8_t>(x, y, n);
            break;
        case GGML_TYPE_I16:
            quantize_int<int16_t>(x, y, n);
            break;
        case GGML_TYPE_I32:
            quantize_int<int32_t>(x, y, n);
            break;
        case GGML_TYPE_Q8_0:
            quantize_blocks<ggml_block_q8_0, quantize_block_q8_0, GGML_QK8_0>(x, y, n);
            break;
        case GGML_TYPE_Q4_0:
            quantize_blocks<ggml_block_q4_0, quantize_block_q4_0, GGML_QK4_0>(x, y, n);
            break;
        default:
            return 0;
    }
    return ggml_row_size(type, n);
}

void ggml_dequantize_row(enum ggml_type type, const void * x, float * y, int64_t n) {
    if (n <= 0) return;
    switch (type) {
        case GGML_TYPE_F32:
            std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
            break;
        case GGML_TYPE_F16:
            ggml_fp16_to_fp32_row(static_cast<const ggml_fp16_t *>(x), y, n);
            break;
        case GGML_TYPE_BF16:
            ggml_bf16_to_fp32_row(static_cast<const ggml_bf16_t *>(x), y, n);
            break;
        case GGML_TYPE_I8:
            dequantize_int<int8_t>(x, y, n);
            break;
        case GGML_TYPE_I16:
            dequantize_int<int16_t>(x, y, n);
            break;
        case GGML_TYPE_I32:
            dequantize_int<int32_t>(x, y, n);
            break;
        case GGML_TYPE_Q8_0:
            dequantize_blocks<ggml_block_q8_0, dequantize_block_q8_0, GGML_QK8_0>(x, y, n);
            break;
        case GGML_TYPE_Q4_0:
            dequantize_blocks<ggml_block_q4_0, dequantize_block_q4_0, GGML_QK4_0>(x, y, n);
            break;
        default:
            break;
    }
}

}  // extern "C"
