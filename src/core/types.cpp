// Type traits, exact F16/BF16 conversions and row quantization (see the "Types" section of ggml.h).
//
// The single-value conversions below are the definition; the row functions run vectorised code
// (Highway, dispatched at run time to the best target the CPU supports) that produces the same bits
// for every input, NaN payloads included. This file is compiled once per Highway target through
// foreach_target.h: everything outside the per-target namespace is guarded to compile only once.
#ifndef GGX_CORE_TYPES_ONCE
#define GGX_CORE_TYPES_ONCE

#include <ggml.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/quant/format.h"

namespace {

struct TypeTraits {
    const char * name;
    int64_t blck_size;
    size_t type_size;
    bool is_quantized;
    bool is_float;
};

struct TypeEntry {
    ggml_type type;
    TypeTraits traits;
};

// ggml's block sizes and bytes per block, for every type; the conversions of the block formats are
// the format table's (core/quant/format.h).
constexpr int64_t kQK = 32;    // elements of a Q4_0/Q8_0-style block
constexpr int64_t kQKK = 256;  // elements of a K-quant (and i-quant) super-block
constexpr TypeEntry kTypeEntries[] = {
    {GGML_TYPE_F32, {"f32", 1, sizeof(float), false, true}},
    {GGML_TYPE_F16, {"f16", 1, sizeof(ggml_fp16_t), false, true}},
    {GGML_TYPE_Q4_0, {"q4_0", GGML_QK4_0, sizeof(ggml_block_q4_0), true, false}},
    {GGML_TYPE_Q4_1, {"q4_1", kQK, 20, true, false}},
    {GGML_TYPE_Q5_0, {"q5_0", kQK, 22, true, false}},
    {GGML_TYPE_Q5_1, {"q5_1", kQK, 24, true, false}},
    {GGML_TYPE_Q8_0, {"q8_0", GGML_QK8_0, sizeof(ggml_block_q8_0), true, false}},
    {GGML_TYPE_Q8_1, {"q8_1", kQK, 36, true, false}},
    {GGML_TYPE_Q2_K, {"q2_K", kQKK, 84, true, false}},
    {GGML_TYPE_Q3_K, {"q3_K", kQKK, 110, true, false}},
    {GGML_TYPE_Q4_K, {"q4_K", kQKK, 144, true, false}},
    {GGML_TYPE_Q5_K, {"q5_K", kQKK, 176, true, false}},
    {GGML_TYPE_Q6_K, {"q6_K", kQKK, 210, true, false}},
    {GGML_TYPE_Q8_K, {"q8_K", kQKK, 292, true, false}},
    {GGML_TYPE_IQ2_XXS, {"iq2_xxs", kQKK, 66, true, false}},
    {GGML_TYPE_IQ2_XS, {"iq2_xs", kQKK, 74, true, false}},
    {GGML_TYPE_IQ3_XXS, {"iq3_xxs", kQKK, 98, true, false}},
    {GGML_TYPE_IQ1_S, {"iq1_s", kQKK, 50, true, false}},
    {GGML_TYPE_IQ4_NL, {"iq4_nl", kQK, 18, true, false}},
    {GGML_TYPE_IQ3_S, {"iq3_s", kQKK, 110, true, false}},
    {GGML_TYPE_IQ2_S, {"iq2_s", kQKK, 82, true, false}},
    {GGML_TYPE_IQ4_XS, {"iq4_xs", kQKK, 136, true, false}},
    {GGML_TYPE_I8, {"i8", 1, sizeof(int8_t), false, false}},
    {GGML_TYPE_I16, {"i16", 1, sizeof(int16_t), false, false}},
    {GGML_TYPE_I32, {"i32", 1, sizeof(int32_t), false, false}},
    {GGML_TYPE_I64, {"i64", 1, sizeof(int64_t), false, false}},
    {GGML_TYPE_F64, {"f64", 1, sizeof(double), false, false}},
    {GGML_TYPE_IQ1_M, {"iq1_m", kQKK, 56, true, false}},
    {GGML_TYPE_BF16, {"bf16", 1, sizeof(ggml_bf16_t), false, true}},
    {GGML_TYPE_TQ1_0, {"tq1_0", kQKK, 54, true, false}},
    {GGML_TYPE_TQ2_0, {"tq2_0", kQKK, 66, true, false}},
    {GGML_TYPE_MXFP4, {"mxfp4", kQK, 17, true, false}},
    {GGML_TYPE_NVFP4, {"nvfp4", 64, 36, true, false}},
    {GGML_TYPE_Q1_0, {"q1_0", 128, 18, true, false}},
    {GGML_TYPE_Q2_0, {"q2_0", 64, 18, true, false}},
};

static_assert(sizeof(ggml_block_q8_0) == 34, "Q8_0 block must be 34 bytes");
static_assert(sizeof(ggml_block_q4_0) == 18, "Q4_0 block must be 18 bytes");
static_assert(sizeof(ggml_bf16_t) == 2, "ggml_bf16_t must be its 16 bits");

// Ids without a type (removed formats) and out-of-range values get neutral traits: a block of one
// element and zero bytes.
constexpr TypeTraits kUnknown = {"unknown", 1, 0, false, false};

constexpr std::array<TypeTraits, GGML_TYPE_COUNT> kTraits = [] {
    std::array<TypeTraits, GGML_TYPE_COUNT> table{};
    table.fill(kUnknown);
    for (const TypeEntry & entry : kTypeEntries)
        table[static_cast<size_t>(entry.type)] = entry.traits;
    return table;
}();

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
    // 2^digits is one past the largest value and exact as a double for every Int (INT64_MAX is not).
    constexpr auto limit = static_cast<double>(uint64_t{1} << std::numeric_limits<Int>::digits);
    // Rounding a float as a double is exact, and infinities stay infinite.
    const double r = round_half_even(static_cast<double>(x));
    if (r >= limit) return std::numeric_limits<Int>::max();
    if (r < -limit) return std::numeric_limits<Int>::min();
    return static_cast<Int>(r);
}

template <class Int>
void quantize_int(const float * x, void * y, int64_t n) {
    auto * out = static_cast<Int *>(y);
    for (int64_t i = 0; i < n; ++i)
        out[i] = saturate_round<Int>(x[i]);
}

// The integer types and F64 to F32: exact where the value fits, else the nearest float (ties to even).
template <class T>
void dequantize_cast(const void * x, float * y, int64_t n) {
    const auto * in = static_cast<const T *>(x);
    for (int64_t i = 0; i < n; ++i)
        y[i] = static_cast<float>(in[i]);
}

void quantize_f64(const float * x, void * y, int64_t n) {
    auto * out = static_cast<double *>(y);
    for (int64_t i = 0; i < n; ++i)
        out[i] = x[i];
}

}  // namespace

#endif  // GGX_CORE_TYPES_ONCE

// ---- Vectorised rows (compiled once per Highway target) -----------------------------------------
//
// Exactness: every lane computes what the single-value function computes for it.
//  - F16 -> F32 and F32 -> F16 on x86 targets with F16C (AVX2 and up) use the hardware conversions:
//    vcvtph2ps is exact, quiets a NaN by setting bit 22 and keeps its payload (mantissa << 13), as
//    f16_to_f32_bits does; vcvtps2ph with an immediate rounding mode of nearest-even (which ignores
//    MXCSR.RC) rounds like f32_bits_to_f16, overflows to infinity at 65520, and turns a NaN into
//    sign | 0x7e00 | (mantissa >> 13), the quiet bit set and the top ten payload bits kept, which is
//    exactly the scalar NaN rule. Both were compared with the scalar functions over all 2^32 floats
//    and all 2^16 halves, also with MXCSR.FTZ and DAZ set (a float subnormal gives a signed zero
//    either way). Other targets (and Highway's own emulation, which truncates) use the integer code
//    below, which is the scalar algorithm lane by lane.
//  - BF16 both ways: integer arithmetic on the bit patterns, the scalar algorithm lane by lane.
//  - Q8_0 / Q4_0: the same IEEE operations on the same operands as the scalar block code, each
//    rounded once (the file is compiled with -ffp-contract=off, and x * id + 8.5 is an explicit Mul
//    then Add, never MulAdd): amax / 127, max / -8, 1 / d and x * id, for several blocks at a time.
//    Maxima use the scalar comparisons, so NaN elements are skipped the same way and Q4_0 keeps the
//    first element of largest magnitude. roundf (half away from zero) is rebuilt exactly from a
//    truncating conversion and the exact fraction |v| - trunc|v|; NaN lanes are zeroed before any
//    conversion and given the scalar results (0, or nibble 8) afterwards.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/types.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace ggx::core::convert_simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#undef GGX_CONVERT_F16C
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define GGX_CONVERT_F16C 1
#else
#define GGX_CONVERT_F16C 0
#endif

// At most 16 lanes of float (512 bits): bounds the tail buffers, and 16 and 32 are multiples of it.
constexpr size_t kMaxLanes = 16;
using DF = hn::CappedTag<float, kMaxLanes>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;
using DU16 = hn::Rebind<uint16_t, DF>;
using VF = hn::Vec<DF>;
using VU = hn::Vec<DU>;
using VU16 = hn::Vec<DU16>;

HWY_INLINE VF F16ToF32(VU16 h) {
    const DF df;
#if GGX_CONVERT_F16C
    return hn::PromoteTo(df, hn::BitCast(hn::Rebind<hwy::float16_t, DF>(), h));
#else
    const DU du;
    const DI di;
    const VU h32 = hn::PromoteTo(du, h);
    const VU sign = hn::ShiftLeft<16>(hn::And(h32, hn::Set(du, 0x8000u)));
    const auto em = hn::BitCast(di, hn::And(h32, hn::Set(du, 0x7fffu)));  // exponent and mantissa
    const auto rebias = hn::Set(di, 0x38000000);                          // (127 - 15) << 23
    // Exponent 1..30: shift the fields into place and rebias the exponent.
    auto bits = hn::Add(hn::ShiftLeft<13>(em), rebias);
    // Exponent 31 gave 0x47800000 | mantissa << 13; adding the rebias again gives the F32 infinity
    // exponent with the mantissa kept; a NaN also gets the quiet bit.
    bits = hn::IfThenElse(hn::Gt(em, hn::Set(di, 0x7bff)), hn::Add(bits, rebias), bits);
    bits = hn::IfThenElse(hn::Gt(em, hn::Set(di, 0x7c00)), hn::Or(bits, hn::Set(di, 0x00400000)), bits);
    // Exponent 0: mantissa * 2^-24, exact (both factors and the product are normal floats).
    const auto subnormal = hn::BitCast(di, hn::Mul(hn::ConvertTo(df, em), hn::Set(df, 0x1p-24f)));
    bits = hn::IfThenElse(hn::Lt(em, hn::Set(di, 0x0400)), subnormal, bits);
    return hn::BitCast(df, hn::Or(hn::BitCast(du, bits), sign));
#endif
}

HWY_INLINE VU16 F32ToF16(VF v) {
#if GGX_CONVERT_F16C
    return hn::BitCast(DU16(), hn::DemoteTo(hn::Rebind<hwy::float16_t, DF>(), v));
#else
    const DU du;
    const DI di;
    const VU one = hn::Set(du, 1u);
    const VU bits = hn::BitCast(du, v);
    const VU sign = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 0x8000u));
    const VU abs = hn::And(bits, hn::Set(du, kF32AbsMask));
    const auto abs_i = hn::BitCast(di, abs);  // at most 0x7fffffff: signed compares are exact
    // Normal result: (abs - rebias) >> 13 to nearest even. Adding half - 1 plus the lowest kept bit
    // carries into the kept bits exactly when the discarded part is above half, or is half and the
    // kept part is odd.
    const VU rebased = hn::Sub(abs, hn::Set(du, 0x38000000u));
    const VU normal = hn::ShiftRight<13>(
        hn::Add(hn::Add(rebased, hn::Set(du, 0x0fffu)), hn::And(hn::ShiftRight<13>(rebased), one)));
    // Subnormal result: (1.mantissa) >> (126 - exponent) to nearest even, the same way with a
    // per-lane shift. Clamping abs into [2^-25, 2^-14) keeps the shift in [14, 24] on every lane;
    // everything at or below 2^-25 gives zero from the clamped value, as in the scalar code.
    const VU clamped =
        hn::BitCast(du, hn::Min(hn::Max(abs_i, hn::Set(di, 0x33000000)), hn::Set(di, 0x387fffff)));
    const VU shift = hn::Sub(hn::Set(du, 126u), hn::ShiftRight<23>(clamped));
    const VU mantissa = hn::Or(hn::And(clamped, hn::Set(du, 0x007fffffu)), hn::Set(du, 0x00800000u));
    const VU half_minus_one = hn::Sub(one << hn::Sub(shift, one), one);
    const VU subnormal = hn::Add(hn::Add(mantissa, half_minus_one), hn::And(mantissa >> shift, one)) >> shift;
    VU r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(abs_i, hn::Set(di, 0x387fffff))), normal, subnormal);
    r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(abs_i, hn::Set(di, 0x477fefff))), hn::Set(du, 0x7c00u), r);
    const VU nan = hn::Or(hn::Set(du, 0x7e00u), hn::And(hn::ShiftRight<13>(abs), hn::Set(du, 0x03ffu)));
    r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(abs_i, hn::Set(di, 0x7f800000))), nan, r);
    return hn::DemoteTo(DU16(), hn::BitCast(di, hn::Or(r, sign)));  // every lane fits 16 bits
#endif
}

HWY_INLINE VF Bf16ToF32(VU16 h) {
    const DU du;
    const DI di;
    const VU bits = hn::ShiftLeft<16>(hn::PromoteTo(du, h));
    const auto is_nan =
        hn::Gt(hn::BitCast(di, hn::And(bits, hn::Set(du, kF32AbsMask))), hn::Set(di, 0x7f800000));
    return hn::BitCast(
        DF(), hn::IfThenElse(hn::RebindMask(du, is_nan), hn::Or(bits, hn::Set(du, kF32QuietBit)), bits));
}

HWY_INLINE VU16 F32ToBf16(VF v) {
    const DU du;
    const DI di;
    const VU bits = hn::BitCast(du, v);
    const VU high = hn::ShiftRight<16>(bits);
    // Nearest even as in F32ToF16 (wraps only for NaN lanes, which are replaced).
    const VU rounded =
        hn::ShiftRight<16>(hn::Add(hn::Add(bits, hn::Set(du, 0x7fffu)), hn::And(high, hn::Set(du, 1u))));
    const auto is_nan =
        hn::Gt(hn::BitCast(di, hn::And(bits, hn::Set(du, kF32AbsMask))), hn::Set(di, 0x7f800000));
    const VU r = hn::IfThenElse(hn::RebindMask(du, is_nan), hn::Or(high, hn::Set(du, 0x0040u)), rounded);
    return hn::DemoteTo(DU16(), hn::BitCast(di, r));  // every lane fits 16 bits
}

// Converts n elements N at a time; the last partial vector goes through a zero-padded buffer.
template <class Src, class Dst, class Convert>
HWY_INLINE void ConvertRow(const Src * x, Dst * y, int64_t n, Convert convert) {
    const auto N = static_cast<int64_t>(hn::Lanes(DF()));
    int64_t i = 0;
    for (; i + 2 * N <= n; i += 2 * N) {
        convert(x + i, y + i);
        convert(x + i + N, y + i + N);
    }
    for (; i + N <= n; i += N)
        convert(x + i, y + i);
    if (i < n) {
        const auto rest = static_cast<size_t>(n - i);
        Src in[kMaxLanes] = {};
        Dst out[kMaxLanes];
        std::memcpy(in, x + i, rest * sizeof(Src));
        convert(in, out);
        std::memcpy(y + i, out, rest * sizeof(Dst));
    }
}

void Fp16ToFp32Row(const uint16_t * x, float * y, int64_t n) {
    ConvertRow(x, y, n, [](const uint16_t * in, float * out) {
        hn::StoreU(F16ToF32(hn::LoadU(DU16(), in)), DF(), out);
    });
}

void Fp32ToFp16Row(const float * x, uint16_t * y, int64_t n) {
    ConvertRow(x, y, n, [](const float * in, uint16_t * out) {
        hn::StoreU(F32ToF16(hn::LoadU(DF(), in)), DU16(), out);
    });
}

void Bf16ToFp32Row(const uint16_t * x, float * y, int64_t n) {
    ConvertRow(x, y, n, [](const uint16_t * in, float * out) {
        hn::StoreU(Bf16ToF32(hn::LoadU(DU16(), in)), DF(), out);
    });
}

void Fp32ToBf16Row(const float * x, uint16_t * y, int64_t n) {
    ConvertRow(x, y, n, [](const float * in, uint16_t * out) {
        hn::StoreU(F32ToBf16(hn::LoadU(DF(), in)), DU16(), out);
    });
}

// Largest |x[i]| of a block, skipping NaN like std::max(amax, std::fabs(x)) from amax = 0: a lane
// is replaced only when the new magnitude compares greater. The result holds no NaN, so the order
// of the lane reduction does not matter.
template <int kBlock>
HWY_INLINE float BlockAbsMax(const float * x) {
    const DF df;
    const size_t N = hn::Lanes(df);
    VF amax = hn::Zero(df);
    for (size_t i = 0; i < kBlock; i += N) {
        const VF a = hn::Abs(hn::LoadU(df, x + i));
        amax = hn::IfThenElse(hn::Gt(a, amax), a, amax);
    }
    return hn::GetLane(hn::MaxOfLanes(df, amax));
}

// q8_value(x * id) on N lanes: NaN gives 0, else roundf of the value clamped to [-127, 127].
HWY_INLINE hn::Vec<DI> Q8Values(VF x, VF id) {
    const DF df;
    const DI di;
    const VF v = hn::Mul(x, id);
    const VF clamped =
        hn::Min(hn::Max(hn::IfThenZeroElse(hn::IsNaN(v), v), hn::Set(df, -127.0f)), hn::Set(df, 127.0f));
    // roundf: half away from zero. For |v| <= 127 the fraction |v| - trunc|v| is exact.
    const VF a = hn::Abs(clamped);
    auto q = hn::ConvertTo(di, a);  // truncates
    const VF fraction = hn::Sub(a, hn::ConvertTo(df, q));
    q = hn::Add(q,
                hn::IfThenElseZero(hn::RebindMask(di, hn::Ge(fraction, hn::Set(df, 0.5f))), hn::Set(di, 1)));
    return hn::IfThenElse(hn::RebindMask(di, hn::Lt(clamped, hn::Zero(df))), hn::Neg(q), q);
}

// Blocks whose scales are computed together, as vectors (a multiple of the lane count).
constexpr int64_t kGroup = static_cast<int64_t>(kMaxLanes);

// For kGroup blocks: d = m / divisor, id = d != 0 ? 1 / d : 0 and the F16 code of d, with the
// scalar expressions' operations (d == 0 lanes divide 1 by 1 instead, then take 0).
HWY_INLINE void BlockScales(const float * m, float divisor, float * id, uint16_t * d16) {
    const DF df;
    const size_t N = hn::Lanes(df);
    for (size_t k = 0; k < static_cast<size_t>(kGroup); k += N) {
        const VF d = hn::Div(hn::LoadU(df, m + k), hn::Set(df, divisor));
        const auto is_zero = hn::Eq(d, hn::Zero(df));
        const VF inverse = hn::Div(hn::Set(df, 1.0f), hn::IfThenElse(is_zero, hn::Set(df, 1.0f), d));
        hn::StoreU(hn::IfThenZeroElse(is_zero, inverse), df, id + k);
        hn::StoreU(F32ToF16(d), DU16(), d16 + k);
    }
}

void QuantizeRowQ8_0(const float * x, ggml_block_q8_0 * y, int64_t blocks) {
    const DF df;
    const hn::Rebind<int8_t, DF> d8;
    const size_t N = hn::Lanes(df);
    for (int64_t b0 = 0; b0 < blocks; b0 += kGroup) {
        const int64_t group = std::min(kGroup, blocks - b0);
        float amax[kGroup] = {};
        float id[kGroup];
        uint16_t d16[kGroup];
        for (int64_t k = 0; k < group; ++k)
            amax[k] = BlockAbsMax<GGML_QK8_0>(x + (b0 + k) * GGML_QK8_0);
        BlockScales(amax, 127.0f, id, d16);
        for (int64_t k = 0; k < group; ++k) {
            const float * xb = x + (b0 + k) * GGML_QK8_0;
            ggml_block_q8_0 & block = y[b0 + k];
            block.d = d16[k];
            const VF vid = hn::Set(df, id[k]);
            for (size_t i = 0; i < GGML_QK8_0; i += N)
                hn::StoreU(hn::DemoteTo(d8, Q8Values(hn::LoadU(df, xb + i), vid)), d8, block.qs + i);
        }
    }
}

void DequantizeRowQ8_0(const ggml_block_q8_0 * x, float * y, int64_t blocks) {
    const DF df;
    const DI di;
    const hn::Rebind<int8_t, DF> d8;
    const size_t N = hn::Lanes(df);
    for (int64_t b = 0; b < blocks; ++b, y += GGML_QK8_0) {
        const VF d = hn::Set(df, std::bit_cast<float>(f16_to_f32_bits(x[b].d)));
        for (size_t i = 0; i < GGML_QK8_0; i += N) {
            const VF q = hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, x[b].qs + i)));
            hn::StoreU(hn::Mul(d, q), df, y + i);
        }
    }
}

// q4_nibble(x * id + 8.5f) on N lanes: NaN gives 8, else the value clamped to [0, 15], truncated.
HWY_INLINE hn::Vec<DI> Q4Nibbles(VF x, VF id) {
    const DF df;
    const DI di;
    const VF v = hn::Add(hn::Mul(x, id), hn::Set(df, 8.5f));  // two roundings, as in the scalar code
    const auto is_nan = hn::IsNaN(v);
    const VF clamped = hn::Min(hn::Max(hn::IfThenZeroElse(is_nan, v), hn::Zero(df)), hn::Set(df, 15.0f));
    return hn::IfThenElse(hn::RebindMask(di, is_nan), hn::Set(di, 8), hn::ConvertTo(di, clamped));
}

// The scalar loop keeps the first element of largest magnitude (strictly-greater updates from +0):
// the first element whose magnitude equals amax, or +0 when amax is 0 (a -0 element or a block of
// NaN must not replace it).
template <int kBlock>
HWY_INLINE float BlockFirstMax(const float * x, float amax) {
    static_assert(kBlock <= 32);
    const DF df;
    const size_t N = hn::Lanes(df);
    const VF vamax = hn::Set(df, amax);
    // Bit i set where |x[i]| == amax, gathered without branches; bit 32 ends an empty search.
    uint64_t matches = uint64_t{1} << 32;
    for (size_t i = 0; i < kBlock; i += N) {
        uint8_t bytes[8] = {};
        hn::StoreMaskBits(df, hn::Eq(hn::Abs(hn::LoadU(df, x + i)), vamax), bytes);
        uint64_t bits = 0;
        std::memcpy(&bits, bytes, sizeof(bits));
        matches |= (bits & ((uint64_t{1} << N) - 1)) << i;
    }
    const float first = x[std::countr_zero(matches) & (kBlock - 1)];
    return amax != 0.0f ? first : 0.0f;
}

void QuantizeRowQ4_0(const float * x, ggml_block_q4_0 * y, int64_t blocks) {
    const DF df;
    const hn::Rebind<uint8_t, DF> d8;
    const size_t N = hn::Lanes(df);
    constexpr int kHalf = GGML_QK4_0 / 2;
    for (int64_t b0 = 0; b0 < blocks; b0 += kGroup) {
        const int64_t group = std::min(kGroup, blocks - b0);
        float max[kGroup] = {};
        float id[kGroup];
        uint16_t d16[kGroup];
        for (int64_t k = 0; k < group; ++k) {
            const float * xb = x + (b0 + k) * GGML_QK4_0;
            max[k] = BlockFirstMax<GGML_QK4_0>(xb, BlockAbsMax<GGML_QK4_0>(xb));
        }
        BlockScales(max, -8.0f, id, d16);
        for (int64_t k = 0; k < group; ++k) {
            const float * xb = x + (b0 + k) * GGML_QK4_0;
            ggml_block_q4_0 & block = y[b0 + k];
            block.d = d16[k];
            const VF vid = hn::Set(df, id[k]);
            for (size_t j = 0; j < kHalf; j += N) {
                const auto lo = Q4Nibbles(hn::LoadU(df, xb + j), vid);
                const auto hi = Q4Nibbles(hn::LoadU(df, xb + j + kHalf), vid);
                hn::StoreU(hn::DemoteTo(d8, hn::Or(lo, hn::ShiftLeft<4>(hi))), d8, block.qs + j);
            }
        }
    }
}

void DequantizeRowQ4_0(const ggml_block_q4_0 * x, float * y, int64_t blocks) {
    const DF df;
    const DI di;
    const hn::Rebind<uint8_t, DF> d8;
    const size_t N = hn::Lanes(df);
    constexpr int kHalf = GGML_QK4_0 / 2;
    for (int64_t b = 0; b < blocks; ++b, y += GGML_QK4_0) {
        const VF d = hn::Set(df, std::bit_cast<float>(f16_to_f32_bits(x[b].d)));
        const auto eight = hn::Set(di, 8);
        for (size_t j = 0; j < kHalf; j += N) {
            const auto bytes = hn::PromoteTo(di, hn::LoadU(d8, x[b].qs + j));
            const VF lo = hn::ConvertTo(df, hn::Sub(hn::And(bytes, hn::Set(di, 0x0f)), eight));
            const VF hi = hn::ConvertTo(df, hn::Sub(hn::ShiftRight<4>(bytes), eight));
            hn::StoreU(hn::Mul(d, lo), df, y + j);
            hn::StoreU(hn::Mul(d, hi), df, y + j + kHalf);
        }
    }
}

// The HWY_TARGET of the code that runs (for tests that select targets).
int64_t Target() { return HWY_TARGET; }

}  // namespace ggx::core::convert_simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace ggx::core {
namespace convert_simd {
HWY_EXPORT(Fp16ToFp32Row);
HWY_EXPORT(Fp32ToFp16Row);
HWY_EXPORT(Bf16ToFp32Row);
HWY_EXPORT(Fp32ToBf16Row);
HWY_EXPORT(QuantizeRowQ8_0);
HWY_EXPORT(DequantizeRowQ8_0);
HWY_EXPORT(QuantizeRowQ4_0);
HWY_EXPORT(DequantizeRowQ4_0);
HWY_EXPORT(Target);
}  // namespace convert_simd

// Not in a header: for tests only. The Highway target (HWY_AVX2, HWY_SCALAR, ...) whose code the row
// conversions dispatch to now (which hwy::SetSupportedTargetsForTest changes).
int64_t convert_dispatch_target() { return HWY_DYNAMIC_DISPATCH(convert_simd::Target)(); }

namespace quant {
namespace {

void quantize_q8_0(const float * x, void * y, int64_t n) {
    HWY_DYNAMIC_DISPATCH(convert_simd::QuantizeRowQ8_0)(x, static_cast<ggml_block_q8_0 *>(y), n / GGML_QK8_0);
}
void dequantize_q8_0(const void * x, float * y, int64_t n) {
    HWY_DYNAMIC_DISPATCH(convert_simd::DequantizeRowQ8_0)(static_cast<const ggml_block_q8_0 *>(x), y, n / GGML_QK8_0);
}
void quantize_q4_0(const float * x, void * y, int64_t n) {
    HWY_DYNAMIC_DISPATCH(convert_simd::QuantizeRowQ4_0)(x, static_cast<ggml_block_q4_0 *>(y), n / GGML_QK4_0);
}
void dequantize_q4_0(const void * x, float * y, int64_t n) {
    HWY_DYNAMIC_DISPATCH(convert_simd::DequantizeRowQ4_0)(static_cast<const ggml_block_q4_0 *>(x), y, n / GGML_QK4_0);
}

// Both have one F16 scale at the start of a block and no importance-weighted rounding.
constexpr Format kVectorised[] = {
    {GGML_TYPE_Q8_0, dequantize_q8_0, quantize_q8_0, nullptr,
     first_bad_f16_scale<sizeof(ggml_block_q8_0), 0>, GGML_TYPE_Q8_0, false},
    {GGML_TYPE_Q4_0, dequantize_q4_0, quantize_q4_0, nullptr,
     first_bad_f16_scale<sizeof(ggml_block_q4_0), 0>, GGML_TYPE_Q8_0, false},
};

}  // namespace

std::span<const Format> vectorised_formats() { return kVectorised; }

}  // namespace quant

}  // namespace ggx::core

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

float ggml_bf16_to_fp32(ggml_bf16_t h) { return std::bit_cast<float>(bf16_to_f32_bits(h.bits)); }

ggml_bf16_t ggml_fp32_to_bf16(float f) { return {f32_bits_to_bf16(std::bit_cast<uint32_t>(f))}; }

void ggml_fp16_to_fp32_row(const ggml_fp16_t * x, float * y, int64_t n) {
    if (n > 0) HWY_DYNAMIC_DISPATCH(ggx::core::convert_simd::Fp16ToFp32Row)(x, y, n);
}

void ggml_fp32_to_fp16_row(const float * x, ggml_fp16_t * y, int64_t n) {
    if (n > 0) HWY_DYNAMIC_DISPATCH(ggx::core::convert_simd::Fp32ToFp16Row)(x, y, n);
}

// ggml_bf16_t is a struct of its 16 bits; the vector code reads and writes the bits directly.
void ggml_bf16_to_fp32_row(const ggml_bf16_t * x, float * y, int64_t n) {
    if (n > 0)
        HWY_DYNAMIC_DISPATCH(ggx::core::convert_simd::Bf16ToFp32Row)
        (reinterpret_cast<const uint16_t *>(x), y, n);
}

void ggml_fp32_to_bf16_row(const float * x, ggml_bf16_t * y, int64_t n) {
    if (n > 0)
        HWY_DYNAMIC_DISPATCH(ggx::core::convert_simd::Fp32ToBf16Row)(x, reinterpret_cast<uint16_t *>(y), n);
}

void ggml_fp32_to_bf16_row_ref(const float * x, ggml_bf16_t * y, int64_t n) {
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
        case GGML_TYPE_I64:
            quantize_int<int64_t>(x, y, n);
            break;
        case GGML_TYPE_F64:
            quantize_f64(x, y, n);
            break;
        default: {
            const ggx::core::quant::Format * format = ggx::core::quant::format_of(type);
            if (!format) return 0;
            format->quantize(x, y, n);
        }
    }
    return ggml_row_size(type, n);
}

bool ggml_dequantize_row(enum ggml_type type, const void * x, float * y, int64_t n) {
    if (n <= 0) return true;
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
            dequantize_cast<int8_t>(x, y, n);
            break;
        case GGML_TYPE_I16:
            dequantize_cast<int16_t>(x, y, n);
            break;
        case GGML_TYPE_I32:
            dequantize_cast<int32_t>(x, y, n);
            break;
        case GGML_TYPE_I64:
            dequantize_cast<int64_t>(x, y, n);
            break;
        case GGML_TYPE_F64:
            dequantize_cast<double>(x, y, n);
            break;
        default: {
            const ggx::core::quant::Format * format = ggx::core::quant::format_of(type);
            if (!format) return false;
            format->dequantize(x, y, n);
        }
    }
    return true;
}

}  // extern "C"

#endif  // HWY_ONCE
