// ggml-cpu.h's element access to host tensors, row conversions and per-type CPU traits.
#include <ggml-cpu.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/log.h"
#include "core/types.h"

namespace {

using Index = std::array<int64_t, GGML_MAX_DIMS>;

// C-cast conversion to an integer type, saturating (NaN gives 0) instead of undefined.
template <class Int>
Int saturate(double v) {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<double>(std::numeric_limits<Int>::min())) return std::numeric_limits<Int>::min();
    if (v >= static_cast<double>(std::numeric_limits<Int>::max())) return std::numeric_limits<Int>::max();
    return static_cast<Int>(v);
}

// The tensor must be of a type ggx converts, have host data and i must lie inside it; a violation aborts with a message, as a
// misused accessor would crash otherwise.
void check_access(const char * what, const ggml_tensor * t, const Index & i) {
    if (!ggx::core::has_conversion(t->type)) {
        ggx::core::fatal(std::string(what) + ": tensor '" + t->name + "' is " + ggml_type_name(t->type) +
                         ", a type ggx has no element conversion for");
    }
    if (!t->data || (t->buffer && !ggml_backend_buffer_is_host(t->buffer))) {
        ggx::core::fatal(std::string(what) + ": tensor '" + t->name + "' has no data in host memory");
    }
    for (int d = 0; d < GGML_MAX_DIMS; ++d) {
        if (i[d] < 0 || i[d] >= t->ne[d]) {
            ggx::core::fatal(std::string(what) + ": index " + std::to_string(i[d]) + " of dimension " +
                             std::to_string(d) + " outside tensor '" + t->name + "' (ne " + std::to_string(t->ne[d]) +
                             ")");
        }
    }
}

// The element's bytes; for block types the bytes of its block.
char * address_of(const ggml_tensor * t, const Index & i) {
    size_t offset = static_cast<size_t>(i[0] / ggml_blck_size(t->type)) * t->nb[0];
    for (int d = 1; d < GGML_MAX_DIMS; ++d)
        offset += static_cast<size_t>(i[d]) * t->nb[d];
    return static_cast<char *>(t->data) + offset;
}

template <class T>
T read(const char * p) {
    T value;
    std::memcpy(&value, p, sizeof value);
    return value;
}

template <class T>
void write(char * p, T value) {
    std::memcpy(p, &value, sizeof value);
}

// Every value of every type ggx has is exact as a double, but for I64 values beyond 2^53 (rounded to
// the nearest double first).
double load(const char * what, const ggml_tensor * t, const Index & i) {
    check_access(what, t, i);
    const char * p = address_of(t, i);
    switch (t->type) {
        case GGML_TYPE_F32: return read<float>(p);
        case GGML_TYPE_F16: return ggml_fp16_to_fp32(read<ggml_fp16_t>(p));
        case GGML_TYPE_BF16: return ggml_bf16_to_fp32(read<ggml_bf16_t>(p));
        case GGML_TYPE_I8: return read<int8_t>(p);
        case GGML_TYPE_I16: return read<int16_t>(p);
        case GGML_TYPE_I32: return read<int32_t>(p);
        case GGML_TYPE_I64: return static_cast<double>(read<int64_t>(p));
        case GGML_TYPE_F64: return read<double>(p);
        default: {
            std::vector<float> block(static_cast<size_t>(ggml_blck_size(t->type)));
            ggml_dequantize_row(t->type, p, block.data(), ggml_blck_size(t->type));
            return block[static_cast<size_t>(i[0] % ggml_blck_size(t->type))];
        }
    }
}

void store(const char * what, const ggml_tensor * t, const Index & i, double v) {
    check_access(what, t, i);
    char * p = address_of(t, i);
    switch (t->type) {
        case GGML_TYPE_F32: return write(p, static_cast<float>(v));
        case GGML_TYPE_F16: return write(p, ggml_fp32_to_fp16(static_cast<float>(v)));
        case GGML_TYPE_BF16: return write(p, ggml_fp32_to_bf16(static_cast<float>(v)));
        case GGML_TYPE_I8: return write(p, saturate<int8_t>(v));
        case GGML_TYPE_I16: return write(p, saturate<int16_t>(v));
        case GGML_TYPE_I32: return write(p, saturate<int32_t>(v));
        case GGML_TYPE_I64: return write(p, saturate<int64_t>(v));
        case GGML_TYPE_F64: return write(p, v);
        default: {
            const int64_t n = ggml_blck_size(t->type);
            std::vector<float> block(static_cast<size_t>(n));
            ggml_dequantize_row(t->type, p, block.data(), n);
            block[static_cast<size_t>(i[0] % n)] = static_cast<float>(v);
            ggml_quantize_row(t->type, block.data(), p, n);
        }
    }
}

Index unravel(const ggml_tensor * t, int64_t flat) {
    Index i{};
    ggml_unravel_index(t, flat, &i[0], &i[1], &i[2], &i[3]);
    return i;
}

void store_all(const char * what, ggml_tensor * t, double v) {
    const int64_t n = ggml_nelements(t);
    for (int64_t flat = 0; flat < n; ++flat)
        store(what, t, unravel(t, flat), v);
}

// A one-element tensor with data in ctx, also when ctx is no-alloc.
ggml_tensor * new_scalar(ggml_context * ctx, ggml_type type) {
    const bool no_alloc = ggml_get_no_alloc(ctx);
    ggml_set_no_alloc(ctx, false);
    ggml_tensor * t = ggml_new_tensor_1d(ctx, type, 1);
    ggml_set_no_alloc(ctx, no_alloc);
    return t;
}

// The dot product of n values of rows x (of type X) and y (of type Y), accumulated in double.
void dot_rows(ggml_type X, ggml_type Y, int n, float * s, const void * x, const void * y) {
    std::vector<float> xs(static_cast<size_t>(n)), ys(static_cast<size_t>(n));
    ggml_dequantize_row(X, x, xs.data(), n);
    ggml_dequantize_row(Y, y, ys.data(), n);
    double sum = 0;
    for (size_t k = 0; k < xs.size(); ++k)
        sum += static_cast<double>(xs[k]) * ys[k];
    *s = static_cast<float>(sum);
}

template <ggml_type X, ggml_type Y>
void vec_dot(int n, float * s, size_t, const void * x, size_t, const void * y, size_t, int) {
    dot_rows(X, Y, n, s, x, y);
}

// Rows of a block format are multiplied with rows of its dot type (the activations' format), float
// rows with their own type; integer types have no dot product.
template <ggml_type T>
void vec_dot_quantized(int n, float * s, size_t, const void * x, size_t, const void * y, size_t, int) {
    dot_rows(T, ggx::core::quant::format_of(T)->dot_type, n, s, x, y);
}

template <ggml_type T>
ggml_type_traits_cpu cpu_traits_of() {
    const ggml_from_float_t from_float = ggml_get_type_traits(T)->from_float_ref;
    if constexpr (T == GGML_TYPE_F32 || T == GGML_TYPE_F16 || T == GGML_TYPE_BF16) {
        return {from_float, &vec_dot<T, T>, T, 1};
    } else {
        if (const ggx::core::quant::Format * format = ggx::core::quant::format_of(T))
            return {from_float, &vec_dot_quantized<T>, format->dot_type, 1};
        return {from_float, nullptr, T, 1};
    }
}

template <size_t... I>
std::array<ggml_type_traits_cpu, sizeof...(I)> all_cpu_traits(std::index_sequence<I...>) {
    return {cpu_traits_of<static_cast<ggml_type>(I)>()...};
}

}  // namespace

extern "C" {

ggml_tensor * ggml_new_i32(ggml_context * ctx, int32_t value) {
    ggml_tensor * t = new_scalar(ctx, GGML_TYPE_I32);
    return t ? ggml_set_i32(t, value) : nullptr;
}

ggml_tensor * ggml_new_f32(ggml_context * ctx, float value) {
    ggml_tensor * t = new_scalar(ctx, GGML_TYPE_F32);
    return t ? ggml_set_f32(t, value) : nullptr;
}

ggml_tensor * ggml_set_i32(ggml_tensor * tensor, int32_t value) {
    store_all("ggml_set_i32", tensor, value);
    return tensor;
}

ggml_tensor * ggml_set_f32(ggml_tensor * tensor, float value) {
    store_all("ggml_set_f32", tensor, value);
    return tensor;
}

int32_t ggml_get_i32_1d(const ggml_tensor * tensor, int i) {
    return saturate<int32_t>(load("ggml_get_i32_1d", tensor, unravel(tensor, i)));
}
void ggml_set_i32_1d(const ggml_tensor * tensor, int i, int32_t value) {
    store("ggml_set_i32_1d", tensor, unravel(tensor, i), value);
}
int32_t ggml_get_i32_nd(const ggml_tensor * tensor, int i0, int i1, int i2, int i3) {
    return saturate<int32_t>(load("ggml_get_i32_nd", tensor, {i0, i1, i2, i3}));
}
void ggml_set_i32_nd(const ggml_tensor * tensor, int i0, int i1, int i2, int i3, int32_t value) {
    store("ggml_set_i32_nd", tensor, {i0, i1, i2, i3}, value);
}
float ggml_get_f32_1d(const ggml_tensor * tensor, int i) {
    return static_cast<float>(load("ggml_get_f32_1d", tensor, unravel(tensor, i)));
}
void ggml_set_f32_1d(const ggml_tensor * tensor, int i, float value) {
    store("ggml_set_f32_1d", tensor, unravel(tensor, i), value);
}
float ggml_get_f32_nd(const ggml_tensor * tensor, int i0, int i1, int i2, int i3) {
    return static_cast<float>(load("ggml_get_f32_nd", tensor, {i0, i1, i2, i3}));
}
void ggml_set_f32_nd(const ggml_tensor * tensor, int i0, int i1, int i2, int i3, float value) {
    store("ggml_set_f32_nd", tensor, {i0, i1, i2, i3}, value);
}

void ggml_cpu_fp32_to_fp32(const float * x, float * y, int64_t n) {
    std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
}
void ggml_cpu_fp32_to_i32(const float * x, int32_t * y, int64_t n) {
    for (int64_t k = 0; k < n; ++k)
        y[k] = saturate<int32_t>(x[k]);
}
void ggml_cpu_fp32_to_fp16(const float * x, ggml_fp16_t * y, int64_t n) { ggml_fp32_to_fp16_row(x, y, n); }
void ggml_cpu_fp16_to_fp32(const ggml_fp16_t * x, float * y, int64_t n) { ggml_fp16_to_fp32_row(x, y, n); }
void ggml_cpu_fp32_to_bf16(const float * x, ggml_bf16_t * y, int64_t n) { ggml_fp32_to_bf16_row(x, y, n); }
void ggml_cpu_bf16_to_fp32(const ggml_bf16_t * x, float * y, int64_t n) { ggml_bf16_to_fp32_row(x, y, n); }

const ggml_type_traits_cpu * ggml_get_type_traits_cpu(enum ggml_type type) {
    static const auto table = all_cpu_traits(std::make_index_sequence<GGML_TYPE_COUNT>{});
    return type >= 0 && type < GGML_TYPE_COUNT ? &table[type] : nullptr;
}

}  // extern "C"
