// The oracle of the sd extension pack's operators (../shared/spec/sd-ops.md; the pack's header
// extensions/sd/include/sd-ggml-ext.h): sd.rope_apply.v1, sd.quantize_i8_convrot.v1 and
// sd.linear_i8.v1, sd.sage_attn.v1 and sd.sol_attn.v1, as plain scalar code written from the spec
// (and docs/sd-pack.md for Sol's tile selection), independent of the pack's kernels.
//
// RoPE is evaluated in double precision. The INT8 path is integer-exact by contract, so its
// quantization repeats the spec's F32 steps exactly (1/sqrt(G) first, radix-4 butterflies each
// output left to right, whole-row absmax, scale = amax / 127, inv = 1 / scale, half-even rounding
// of v * inv clamped to +-127) and the product sums exactly before the F32 epilogue
// float(acc) * x_scale * w_scale + bias, each step rounded to F32.
//
// Sage is evaluated as exact softmax attention in double (its contract is a bound against that);
// Sol as the same tile selection and pooling as docs/sd-pack.md describes, all in double.
#pragma once

#include <ggml.h>

#include <cstdint>
#include <span>
#include <vector>

namespace ggx::ref::sd {

inline constexpr const char * kRopeApply = "sd.rope_apply.v1";
inline constexpr const char * kQuantize = "sd.quantize_i8_convrot.v1";
inline constexpr const char * kLinear = "sd.linear_i8.v1";
inline constexpr const char * kSage = "sd.sage_attn.v1";
inline constexpr const char * kSol = "sd.sol_attn.v1";

// Teaches the oracle (register_extension) the five operators; harmless when called again.
void register_ops();

// The ConvRot rotation of one row of k values (k a multiple of g; g in {1, 4, 16, 64, 256}) in
// place, in F32 as the spec orders it.
void convrot_row(float * row, int64_t k, int64_t g);

// One quantized row: the codes and the F32 row scale of `row` (rotated first with group g).
struct QuantizedRow {
    std::vector<int8_t> codes;
    float scale = 0.0f;
};
QuantizedRow quantize_row(std::span<const float> row, int64_t g);

// The packed layout of sd.quantize_i8_convrot.v1 for rows quantized rows of k codes: code rows,
// zero padding rows to a multiple of 4, the F32 scales, zeros to the end of the last row.
std::vector<uint8_t> pack(const std::vector<QuantizedRow> & rows, int64_t k);

// A packed sd.quantize_i8_convrot.v1 result (its logical values, one byte each as int8, as the
// oracle and ggx::ref::read_tensor give them) decoded to the dequantized activations code * scale,
// rows x k values; for comparing packed results whose inputs carry rounding error.
std::vector<double> dequantize_packed(const ggml_tensor * node, std::span<const double> bytes);

// The oracle's result for a sd.sage_attn.v1 or sd.sol_attn.v1 node from its inputs' logical values
// (what register_ops teaches the oracle; for ggml_ext_check_kernel references).
std::vector<double> attention(const ggml_tensor * node, std::span<const std::vector<double>> inputs);

}  // namespace ggx::ref::sd
