// Block formats as int8 codes with scales, for the int8 matrix-vector product of MUL_MAT: a run of
// 256 values of a row decodes into int8 codes q and, per 16 values g, a scale and an offset with
// value[i] = scale[g] * q[i] - offset[g] (i in g). Every format whose values are small integers times
// per-16 (or coarser) scales, plus per-16 minima, has a decoder; the product with activations
// quantized to int8 is then one kernel for all of them. The decoded values equal the format's
// dequantization up to the rounding of scale * q - offset against its own F32 expression.
#pragma once

#include <ggml.h>

#include <cstdint>

namespace ggx::cpu::quant {

inline constexpr int64_t kRun = 256;    // values per decoded run (a multiple of every block size)
inline constexpr int64_t kGroup = 16;   // values per scale
inline constexpr int64_t kGroups = kRun / kGroup;

struct DecodedRun {
    int8_t q[kRun];  // no alignment is assumed: the kernels load it unaligned
    float scale[kGroups];
    float offset[kGroups];
};

// Decodes `runs` consecutive runs of 256 values, the first starting at blocks, run_bytes apart (the
// row size of 256 values), into out[0, runs).
using DecodeRun = void (*)(const char * blocks, size_t run_bytes, int64_t runs, DecodedRun * out);

// The decoder of type, or null.
DecodeRun decoder_of(ggml_type type);

}  // namespace ggx::cpu::quant
