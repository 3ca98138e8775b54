// What ggx does with each ggml_type, for the layers above the core. Every value of enum ggml_type
// has its traits (types.cpp); only the types below have conversions and kernels.
#pragma once

#include <ggml.h>

#include "core/quant/format.h"

namespace ggx::core {

// A value of enum ggml_type: not a removed id and not out of range.
inline bool is_known_type(ggml_type type) { return ggml_type_size(type) != 0; }

// The block-quantized types ggx converts and computes with: those with a format (core/quant).
inline bool is_computed_quantized(ggml_type type) { return quant::format_of(type) != nullptr; }

// The types ggml_quantize_row / ggml_dequantize_row convert, which the kernels read and write.
inline bool has_conversion(ggml_type type) {
    switch (type) {
        case GGML_TYPE_F32:
        case GGML_TYPE_F16:
        case GGML_TYPE_BF16:
        case GGML_TYPE_I8:
        case GGML_TYPE_I16:
        case GGML_TYPE_I32:
        case GGML_TYPE_I64:
        case GGML_TYPE_F64:
            return true;
        default:
            return is_computed_quantized(type);
    }
}

// The copies between F64 and another type: to and from F32 only (widening is exact, narrowing rounds
// once; through F32 to F16 or a block format it would round twice).
inline bool is_f64_conversion(ggml_type from, ggml_type to) {
    return (from == GGML_TYPE_F64 && to == GGML_TYPE_F32) || (from == GGML_TYPE_F32 && to == GGML_TYPE_F64);
}

}  // namespace ggx::core
