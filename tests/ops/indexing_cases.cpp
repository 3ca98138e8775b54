// ggx-ops case table: GET_ROWS, GET_ROWS_BACK and SET_ROWS for every documented dtype (every block
// format ggx converts included), odd row lengths, empty index lists, batched and broadcast indices, strided sources, destinations
// and index tensors.
#include <span>

#include "ggx-ops/case.h"

namespace ggx::ops {

namespace {

constexpr ggml_type kGetTypes[] = {GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16,
                                   GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_I32};
constexpr int64_t kFloatRows[] = {1, 7, 33, 65};
constexpr int64_t kBlockRows[] = {32, 64};

std::span<const int64_t> row_lengths(ggml_type type) {
    return ggml_is_quantized(type) ? std::span<const int64_t>(kBlockRows)
                                   : std::span<const int64_t>(kFloatRows);
}

struct Rows {
    int64_t r, n, b2, b3, c2, c3;  // source rows, indices, batch dims of a/b, batch dims of the indices
};
const Rows kGetRows[] = {
    {5, 3, 1, 1, 1, 1}, {1, 4, 1, 1, 1, 1}, {9, 9, 2, 3, 2, 3}, {6, 0, 1, 1, 1, 1}, {4, 7, 2, 1, 2, 1}};
const Rows kSetRows[] = {
    {5, 3, 1, 1, 1, 1}, {9, 9, 2, 3, 2, 3}, {7, 2, 4, 1, 2, 1}, {4, 0, 1, 1, 1, 1}, {6, 1, 2, 2, 1, 1}};

std::string describe(ggml_type type, int64_t e, const Rows & s, Layout la, Layout li) {
    return str(type) + " e " + std::to_string(e) + " rows " + std::to_string(s.r) + " n " +
           std::to_string(s.n) + " batch " + std::to_string(s.b2) + "x" + std::to_string(s.b3) +
           " idx-batch " + std::to_string(s.c2) + "x" + std::to_string(s.c3) + " a:" + layout_name(la) +
           " idx:" + layout_name(li);
}

void add_get_rows_cases(CaseList & list) {
    for (ggml_type type : kGetTypes) {
        const Gen values = type == GGML_TYPE_I32 ? Gen::integer(-1000, 1000) : Gen{};
        const Layout odd = ggml_is_quantized(type) ? Layout::Strided : Layout::Transposed;
        for (int64_t e : row_lengths(type)) {
            for (const Rows & s : kGetRows) {
                for (auto [la, li] :
                     {std::pair{Layout::Contiguous, Layout::Contiguous}, std::pair{odd, Layout::Strided}}) {
                    list.add(GGML_OP_GET_ROWS, describe(type, e, s, la, li), [=](Graph & g) {
                        ggml_tensor * a = g.input(type, {e, s.r, s.b2, s.b3}, la, values);
                        ggml_tensor * idx =
                            g.input(GGML_TYPE_I32, {s.n, s.b2, s.b3, 1}, li, Gen::integer(0, s.r));
                        return ggml_get_rows(g.ctx(), a, idx);
                    });
                }
            }
        }
    }
}

// Indices are distinct within each index row, so no row is written twice.
void add_set_rows_cases(CaseList & list) {
    for (ggml_type type : kWeightTypes) {
        for (int64_t e : row_lengths(type)) {
            for (const Rows & s : kSetRows) {
                for (auto [la, li] : {std::pair{Layout::Contiguous, Layout::Contiguous},
                                      std::pair{Layout::Strided, Layout::Strided}}) {
                    const Layout lb = la == Layout::Contiguous ? Layout::Contiguous : Layout::Permuted;
                    list.add(GGML_OP_SET_ROWS, describe(type, e, s, la, li) + " b:" + layout_name(lb),
                             [=](Graph & g) {
                                 ggml_tensor * a = g.input(type, {e, s.r, s.b2, s.b3}, la);
                                 ggml_tensor * b = g.input(GGML_TYPE_F32, {e, s.n, s.b2, s.b3}, lb);
                                 ggml_tensor * idx =
                                     g.input(GGML_TYPE_I32, {s.n, s.c2, s.c3, 1}, li, Gen::distinct(s.r));
                                 return ggml_set_rows(g.ctx(), a, b, idx);
                             });
                }
            }
        }
    }
}

// The other block formats: rows of kFormatRow elements gathered and scattered, dense and strided.
void add_format_cases(CaseList & list) {
    for (ggml_type type : more_block_types()) {
        for (Layout la : {Layout::Contiguous, Layout::Strided}) {
            for (const Rows & s : {kGetRows[0], kGetRows[2]}) {
                list.add(GGML_OP_GET_ROWS, describe(type, kFormatRow, s, la, la), [=](Graph & g) {
                    ggml_tensor * a = g.input(type, {kFormatRow, s.r, s.b2, s.b3}, la);
                    ggml_tensor * idx = g.input(GGML_TYPE_I32, {s.n, s.b2, s.b3, 1}, la, Gen::integer(0, s.r));
                    return ggml_get_rows(g.ctx(), a, idx);
                });
            }
            for (const Rows & s : {kSetRows[0], kSetRows[2]}) {
                list.add(GGML_OP_SET_ROWS, describe(type, kFormatRow, s, la, la), [=](Graph & g) {
                    ggml_tensor * a = g.input(type, {kFormatRow, s.r, s.b2, s.b3}, la);
                    ggml_tensor * b = g.input(GGML_TYPE_F32, {kFormatRow, s.n, s.b2, s.b3}, la);
                    ggml_tensor * idx = g.input(GGML_TYPE_I32, {s.n, s.c2, s.c3, 1}, la, Gen::distinct(s.r));
                    return ggml_set_rows(g.ctx(), a, b, idx);
                });
            }
        }
    }
}

// Repeated indices add up; rows no index names stay zero.
void add_get_rows_back_cases(CaseList & list) {
    struct Back {
        int64_t e, n, r;  // row length, gradient rows (indices), result rows
    };
    const Back cases[] = {{1, 1, 1}, {7, 5, 3},   {33, 9, 12}, {65, 20, 4}, {6, 0, 5},
                          {2, 8, 1}, {128, 3, 3}, {3, 17, 17}, {16, 1, 40}, {5, 33, 2}};
    for (const Back & s : cases) {
        for (auto [la, li] : {std::pair{Layout::Contiguous, Layout::Contiguous},
                              {Layout::Transposed, Layout::Strided},
                              {Layout::Strided, Layout::Contiguous},
                              {Layout::Contiguous, Layout::Strided}}) {
            list.add(GGML_OP_GET_ROWS_BACK,
                     "f32 e " + std::to_string(s.e) + " n " + std::to_string(s.n) + " rows " +
                         std::to_string(s.r) + " a:" + layout_name(la) + " idx:" + layout_name(li),
                     [=](Graph & g) {
                         ggml_tensor * a = g.input(GGML_TYPE_F32, {s.e, s.n, 1, 1}, la);
                         ggml_tensor * idx = g.input(GGML_TYPE_I32, {s.n, 1, 1, 1}, li, Gen::integer(0, s.r));
                         return ggml_get_rows_back(g.ctx(), a, idx, g.input(GGML_TYPE_F32, {s.e, s.r, 1, 1}));
                     });
        }
    }
}

}  // namespace

void add_indexing_cases(CaseList & list) {
    add_get_rows_cases(list);
    add_get_rows_back_cases(list);
    add_set_rows_cases(list);
    add_format_cases(list);
}

}  // namespace ggx::ops
