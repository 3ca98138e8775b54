// Compile-time check of tables indexed by an enum (op names, device kernel tables, sub-op tables).
#pragma once

#include <cstddef>

namespace ggx {

// Whether entries (each with an `op` member) lists every value 0 .. count - 1 of an enum once, in
// order, so that entries[v] is the entry of value v.
template <class Entry, size_t N>
constexpr bool lists_every_value_in_order(const Entry (&entries)[N], int count) {
    if (N != static_cast<size_t>(count)) return false;
    for (size_t i = 0; i < N; ++i)
        if (static_cast<int>(entries[i].op) != static_cast<int>(i)) return false;
    return true;
}

}  // namespace ggx
