// ggml.h's per-type API over ggx's conversions: type traits, file types, row validation and
// chunked quantization.
#include <ggml.h>

#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/log.h"
#include "core/quant/format.h"
#include "core/types.h"

namespace {

using ggx::core::log;

template <ggml_type T>
void to_float(const void * x, float * y, int64_t n) {
    ggml_dequantize_row(T, x, y, n);
}

template <ggml_type T>
void from_float(const float * x, void * y, int64_t n) {
    ggml_quantize_row(T, x, y, n);
}

// to_float and from_float_ref are NULL for a type ggx has no conversion for, as in ggml.
template <ggml_type T>
ggml_type_traits traits_of() {
    const bool converts = ggx::core::has_conversion(T);
    return {ggml_type_name(T),
            ggml_blck_size(T),
            0,
            ggml_type_size(T),
            ggml_is_quantized(T),
            converts ? &to_float<T> : nullptr,
            converts ? &from_float<T> : nullptr};
}

template <size_t... I>
std::array<ggml_type_traits, sizeof...(I)> all_traits(std::index_sequence<I...>) {
    return {traits_of<static_cast<ggml_type>(I)>()...};
}

const std::array<ggml_type_traits, GGML_TYPE_COUNT> & type_traits_table() {
    static const auto table = all_traits(std::make_index_sequence<GGML_TYPE_COUNT>{});
    return table;
}

bool valid_type(ggml_type type) { return type >= 0 && type < GGML_TYPE_COUNT; }

// Index of the first value of n that is not finite, or -1.
template <class Value, class ToFloat>
int64_t first_non_finite(const void * data, int64_t n, size_t stride, ToFloat to_f32) {
    const auto * bytes = static_cast<const unsigned char *>(data);
    for (int64_t i = 0; i < n; ++i) {
        Value v;
        std::memcpy(&v, bytes + static_cast<size_t>(i) * stride, sizeof v);
        if (!std::isfinite(to_f32(v))) return i;
    }
    return -1;
}

// The first value (or block) of a row that is NaN or infinite (holds an invalid scale), or -1.
int64_t first_bad_value(ggml_type type, const void * data, int64_t n_units) {
    switch (type) {
        case GGML_TYPE_F32: return first_non_finite<float>(data, n_units, 4, [](float v) { return v; });
        case GGML_TYPE_F16: return first_non_finite<ggml_fp16_t>(data, n_units, 2, ggml_fp16_to_fp32);
        case GGML_TYPE_BF16: return first_non_finite<ggml_bf16_t>(data, n_units, 2, ggml_bf16_to_fp32);
        case GGML_TYPE_F64: return first_non_finite<double>(data, n_units, 8, [](double v) { return v; });
        default: {
            // Integer types: every bit pattern is a value. A block format without conversions is
            // not checked beyond its size.
            const ggx::core::quant::Format * format = ggx::core::quant::format_of(type);
            return format && format->first_invalid_block ? format->first_invalid_block(data, n_units) : -1;
        }
    }
}

}  // namespace

extern "C" {

double ggml_type_sizef(enum ggml_type type) {
    return static_cast<double>(ggml_type_size(type)) / static_cast<double>(ggml_blck_size(type));
}

enum ggml_type ggml_ftype_to_ggml_type(enum ggml_ftype ftype) {
    switch (ftype) {
        case GGML_FTYPE_ALL_F32: return GGML_TYPE_F32;
        case GGML_FTYPE_MOSTLY_F16: return GGML_TYPE_F16;
        case GGML_FTYPE_MOSTLY_Q4_0: return GGML_TYPE_Q4_0;
        case GGML_FTYPE_MOSTLY_Q4_1:
        case GGML_FTYPE_MOSTLY_Q4_1_SOME_F16: return GGML_TYPE_Q4_1;
        case GGML_FTYPE_MOSTLY_Q8_0: return GGML_TYPE_Q8_0;
        case GGML_FTYPE_MOSTLY_Q5_0: return GGML_TYPE_Q5_0;
        case GGML_FTYPE_MOSTLY_Q5_1: return GGML_TYPE_Q5_1;
        case GGML_FTYPE_MOSTLY_Q2_K: return GGML_TYPE_Q2_K;
        case GGML_FTYPE_MOSTLY_Q3_K: return GGML_TYPE_Q3_K;
        case GGML_FTYPE_MOSTLY_Q4_K: return GGML_TYPE_Q4_K;
        case GGML_FTYPE_MOSTLY_Q5_K: return GGML_TYPE_Q5_K;
        case GGML_FTYPE_MOSTLY_Q6_K: return GGML_TYPE_Q6_K;
        case GGML_FTYPE_MOSTLY_IQ2_XXS: return GGML_TYPE_IQ2_XXS;
        case GGML_FTYPE_MOSTLY_IQ2_XS: return GGML_TYPE_IQ2_XS;
        case GGML_FTYPE_MOSTLY_IQ3_XXS: return GGML_TYPE_IQ3_XXS;
        case GGML_FTYPE_MOSTLY_IQ1_S: return GGML_TYPE_IQ1_S;
        case GGML_FTYPE_MOSTLY_IQ4_NL: return GGML_TYPE_IQ4_NL;
        case GGML_FTYPE_MOSTLY_IQ3_S: return GGML_TYPE_IQ3_S;
        case GGML_FTYPE_MOSTLY_IQ2_S: return GGML_TYPE_IQ2_S;
        case GGML_FTYPE_MOSTLY_IQ4_XS: return GGML_TYPE_IQ4_XS;
        case GGML_FTYPE_MOSTLY_IQ1_M: return GGML_TYPE_IQ1_M;
        case GGML_FTYPE_MOSTLY_BF16: return GGML_TYPE_BF16;
        case GGML_FTYPE_MOSTLY_MXFP4: return GGML_TYPE_MXFP4;
        case GGML_FTYPE_MOSTLY_NVFP4: return GGML_TYPE_NVFP4;
        case GGML_FTYPE_MOSTLY_Q1_0: return GGML_TYPE_Q1_0;
        case GGML_FTYPE_MOSTLY_Q2_0: return GGML_TYPE_Q2_0;
        default: return GGML_TYPE_COUNT;
    }
}

bool ggml_validate_row_data(enum ggml_type type, const void * data, size_t nbytes) {
    if (!valid_type(type)) {
        log(GGML_LOG_LEVEL_ERROR, "ggml_validate_row_data: invalid type %d\n", static_cast<int>(type));
        return false;
    }
    const size_t unit = ggml_type_size(type);
    if (nbytes % unit != 0) {
        log(GGML_LOG_LEVEL_ERROR, "ggml_validate_row_data: %zu bytes is not a multiple of the %s size %zu\n",
            nbytes, ggml_type_name(type), unit);
        return false;
    }
    const int64_t bad = first_bad_value(type, data, static_cast<int64_t>(nbytes / unit));
    if (bad >= 0) {
        log(GGML_LOG_LEVEL_ERROR, "ggml_validate_row_data: %s %s %lld is not finite\n", ggml_type_name(type),
            ggml_is_quantized(type) ? "block scale" : "value", static_cast<long long>(bad));
        return false;
    }
    return true;
}

const struct ggml_type_traits * ggml_get_type_traits(enum ggml_type type) {
    return valid_type(type) ? &type_traits_table()[type] : nullptr;
}

void ggml_quantize_init(enum ggml_type) {}
void ggml_quantize_free(void) {}

bool ggml_quantize_requires_imatrix(enum ggml_type type) {
    const ggx::core::quant::Format * format = ggx::core::quant::format_of(type);
    return format && format->requires_importance;
}

size_t ggml_quantize_chunk(enum ggml_type type, const float * src, void * dst, int64_t start, int64_t nrows,
                           int64_t n_per_row, const float * imatrix) {
    if (!valid_type(type) || !ggx::core::has_conversion(type) || n_per_row <= 0 ||
        n_per_row % ggml_blck_size(type) != 0 || start % n_per_row != 0) {
        log(GGML_LOG_LEVEL_ERROR,
            "ggml_quantize_chunk: cannot write type %d rows of %lld values from element %lld\n",
            static_cast<int>(type), static_cast<long long>(n_per_row), static_cast<long long>(start));
        return 0;
    }
    const ggx::core::quant::Format * format = ggx::core::quant::format_of(type);
    if (format && format->requires_importance && !imatrix) {
        log(GGML_LOG_LEVEL_ERROR, "ggml_quantize_chunk: %s needs an importance matrix\n", ggml_type_name(type));
        return 0;
    }
    const bool weighted = format && format->quantize_weighted && imatrix;
    const size_t row_bytes = ggml_row_size(type, n_per_row);
    auto * out = static_cast<char *>(dst) + static_cast<size_t>(start / n_per_row) * row_bytes;
    for (int64_t r = 0; r < nrows; ++r) {
        const float * x = src + start + r * n_per_row;
        void * y = out + static_cast<size_t>(r) * row_bytes;
        if (weighted)
            format->quantize_weighted(x, y, n_per_row, imatrix);
        else
            ggml_quantize_row(type, x, y, n_per_row);
    }
    return static_cast<size_t>(nrows) * row_bytes;
}

}  // extern "C"
