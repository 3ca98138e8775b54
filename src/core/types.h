// What ggx does with each ggml_type, for the layers above the core. Every value of enum ggml_type
// has its traits (types.cpp); only the types below have conversions and kernels.
#pragma once

#include <ggml.h>

namespace ggx::core {

// A value of enum ggml_type: not a removed id and not out of range.
inline bool is_known_type(ggml_type type) { return ggml_type_size(type) != 0; }

// The block-quantized types ggx converts and computes with.
constexpr bool is_computed_quantized(ggml_type type) {
    return type == GGML_TYPE_Q8_0 || type == GGML_TYPE_Q4_0;
}

// The types ggml_quantize_row / ggml_dequantize_row convert, which the kernels read and write.
constexpr bool has_conversion(ggml_type type) {
    switch (type) {
        case GGML_TYPE_F32:
        case GGML_TYPE_F16:
        case GGML_TYPE_BF16:
        case GGML_TYPE_I8:
        case GGML_TYPE_I16:
        case GGML_TYPE_I32:
            return true;
        default:
            return is_computed_quantized(type);
    }
}

}  // namespace ggx::core
