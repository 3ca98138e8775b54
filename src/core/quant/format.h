// The block-quantized formats ggx converts. Each format gives the row conversions behind
// ggml_quantize_row, ggml_dequantize_row, ggml_quantize_chunk and ggml_validate_row_data; a type
// without a Format here (and not one of the plain types of core/types.h) has no conversion, so no
// kernel reads or writes it. Each family of formats lives in its own file and lists its formats;
// formats.cpp gathers the lists into one table indexed by type.
#pragma once

#include <ggml.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace ggx::core::quant {

struct Format {
    ggml_type type;
    // n values (a multiple of the block size) from the blocks at x into y.
    void (*dequantize)(const void * x, float * y, int64_t n);
    // n values into blocks at y without importance weights: ggml's reference quantization (its
    // from_float_ref), deterministic and the same bits on every SIMD target.
    void (*quantize)(const float * x, void * y, int64_t n);
    // One row of n values with per-column importance weights (n of them, never null); null when the
    // format has no importance-weighted quantization, and ggml_quantize_chunk uses quantize.
    void (*quantize_weighted)(const float * x, void * y, int64_t n, const float * importance);
    // Index of the first of n_blocks blocks at x holding a value no row of the format may hold (a NaN
    // or infinite scale), or -1.
    int64_t (*first_invalid_block)(const void * x, int64_t n_blocks);
    // The type the activations of a dot product with rows of this format are quantized to
    // (ggml_type_traits_cpu::vec_dot_type).
    ggml_type dot_type;
    // ggml_quantize_requires_imatrix: ggml quantizes this format only with importance weights.
    bool requires_importance;
};

// The format of type, or null when type is not a block format ggx converts.
const Format * format_of(ggml_type type);

// Index of the first of n_blocks blocks of Bytes bytes whose F16 scales at byte Offsets... are not
// all finite, or -1: the validity rule of every format whose only non-values are its F16 scales.
template <size_t Bytes, size_t... Offsets>
int64_t first_bad_f16_scale(const void * x, int64_t n_blocks) {
    const auto * bytes = static_cast<const unsigned char *>(x);
    auto finite = [](const unsigned char * p) {
        ggml_fp16_t h;
        std::memcpy(&h, p, sizeof h);
        return (h & 0x7c00u) != 0x7c00u;  // exponent all ones: infinity or NaN
    };
    for (int64_t b = 0; b < n_blocks; ++b) {
        const unsigned char * block = bytes + static_cast<size_t>(b) * Bytes;
        if (!(finite(block + Offsets) && ...)) return b;
    }
    return -1;
}

// The families, one file each.
std::span<const Format> vectorised_formats();  // Q8_0 Q4_0 (core/types.cpp, Highway)
std::span<const Format> ternary_formats();     // TQ1_0 TQ2_0 Q1_0 Q2_0 (core/quant/ternary.cpp)
std::span<const Format> k_quant_formats();     // Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K (k_quants.cpp)
std::span<const Format> legacy_formats();      // Q4_1 Q5_0 Q5_1 Q8_1
std::span<const Format> nonlinear_formats();   // IQ4_NL IQ4_XS MXFP4 NVFP4
std::span<const Format> i_quant_formats();     // IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ1_S IQ1_M (i_quants.cpp)

}  // namespace ggx::core::quant
