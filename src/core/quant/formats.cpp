// The table of block formats, indexed by type, from the families' lists.
#include "core/quant/format.h"

#include <array>

namespace ggx::core::quant {

namespace {

std::array<const Format *, GGML_TYPE_COUNT> build_table() {
    std::array<const Format *, GGML_TYPE_COUNT> table{};
    for (std::span<const Format> family : {vectorised_formats(), ternary_formats(), k_quant_formats(),
                                           legacy_formats(), nonlinear_formats(), i_quant_formats()})
        for (const Format & format : family)
            table[static_cast<size_t>(format.type)] = &format;
    return table;
}

}  // namespace

const Format * format_of(ggml_type type) {
    static const std::array<const Format *, GGML_TYPE_COUNT> table = build_table();
    const auto index = static_cast<int>(type);
    return index >= 0 && index < GGML_TYPE_COUNT ? table[static_cast<size_t>(index)] : nullptr;
}

}  // namespace ggx::core::quant
