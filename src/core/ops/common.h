// What every operator constructor (src/core/ops/<family>.cpp, one file per op family of docs/ops.md)
// builds on: type predicates, the node factory and parameter recording.
#pragma once

#include <array>
#include <initializer_list>

#include "core/internal.h"
#include "core/op_params.h"
#include "core/types.h"

namespace ggx::core {

inline bool is_float(const ggml_tensor * t) { return ggml_is_float_type(t->type); }
inline bool is_float_or_quantized(const ggml_tensor * t) { return is_float(t) || ggml_is_quantized(t->type); }
// Quantized data is read a row of whole blocks at a time.
inline bool has_dense_blocks(const ggml_tensor * t) {
    return !ggml_is_quantized(t->type) ||
           (t->ne[0] % ggml_blck_size(t->type) == 0 && t->nb[0] == ggml_type_size(t->type));
}

inline std::array<int64_t, 4> shape_of(const ggml_tensor * t) { return {t->ne[0], t->ne[1], t->ne[2], t->ne[3]}; }

// A new tensor computed by op from srcs or, when over is given, a view of over's storage with over's
// shape and strides that op writes in place.
ggml_tensor * make_node(ggml_context * ctx, const char * op_name, ggml_op op, ggml_type type,
                        const std::array<int64_t, 4> & ne, std::initializer_list<ggml_tensor *> srcs,
                        ggml_tensor * over = nullptr);

// result with params recorded (NULL stays NULL: its constructor failed and reported why).
template <class P>
ggml_tensor * with_params(ggml_tensor * result, const P & params) {
    if (result) set_params(result, params);
    return result;
}

}  // namespace ggx::core
