// ggx-ops case table: reductions (SUM, SUM_ROWS, MEAN, ARGMAX, CUMSUM, COUNT_EQUAL, ARGSORT, TOP_K,
// CROSS_ENTROPY_LOSS(_BACK)) over every float dtype, odd and zero-size shapes and every input layout;
// ARGMAX, ARGSORT and TOP_K also with ties (the first maximum wins; sorts keep index order).
#include <iterator>
#include <set>
#include <vector>

#include "ggx-ops/case.h"

namespace ggx::ops {

namespace {

const Shape kShapes[] = {{1, 1, 1, 1},  {3, 1, 1, 1},   {7, 3, 1, 1},    {16, 5, 3, 1}, {33, 2, 3, 2},
                         {65, 3, 1, 1}, {257, 2, 1, 1}, {1031, 3, 1, 1}, {0, 3, 1, 1},  {5, 0, 2, 1}};

// Mostly positive values keep sums away from zero, where a relative error bound means little.
const Gen kReduceGen = Gen::uniform(-0.5, 1.0);

using ReduceFn = ggml_tensor * (*)(ggml_context *, ggml_tensor *);

void add_sum_cases(CaseList & list) {
    const std::pair<ggml_op, ReduceFn> ops[] = {
        {GGML_OP_SUM, ggml_sum}, {GGML_OP_SUM_ROWS, ggml_sum_rows}, {GGML_OP_MEAN, ggml_mean}};
    for (const auto & [op, fn] : ops) {
        for (ggml_type type : kFloatTypes) {
            for (const Shape & ne : kShapes) {
                for (Layout layout : kAllLayouts) {
                    list.add(
                        op, str(type) + " " + str(ne) + " " + layout_name(layout),
                        [=, f = fn](Graph & g) { return f(g.ctx(), g.input(type, ne, layout, kReduceGen)); });
                }
            }
        }
    }
}

void add_argmax_cases(CaseList & list) {
    const std::pair<const char *, Gen> gens[] = {{"", Gen::uniform(-1.0, 1.0)},
                                                 {" ties", Gen::integer(0, 3)}};
    for (int64_t ne0 : {1, 3, 7, 16, 33, 65, 200}) {
        for (int64_t ne1 : {1, 5, 0}) {
            for (Layout layout : kAllLayouts) {
                for (const auto & [tag, gen] : gens) {
                    const Shape ne = {ne0, ne1, 1, 1};
                    list.add(GGML_OP_ARGMAX, "f32 " + str(ne) + " " + layout_name(layout) + tag,
                             [=, gen_ = gen](Graph & g) {
                                 return ggml_argmax(g.ctx(), g.input(GGML_TYPE_F32, ne, layout, gen_));
                             });
                }
            }
        }
    }
}

void add_cumsum_cases(CaseList & list) {
    std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
    shapes.push_back({20000, 2, 1, 1});  // rows of many workgroup tiles
    for (ggml_type type : kFloatTypes) {
        for (const Shape & ne : shapes) {
            for (Layout layout : kAllLayouts) {
                list.add(
                    GGML_OP_CUMSUM, str(type) + " " + str(ne) + " " + layout_name(layout),
                    [=](Graph & g) { return ggml_cumsum(g.ctx(), g.input(type, ne, layout, kReduceGen)); });
            }
        }
    }
}

// Small integers, so that about a third of the positions are equal.
void add_count_equal_cases(CaseList & list) {
    std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
    shapes.push_back({10000, 2, 1, 1});  // more elements than one workgroup's chunk
    for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32}) {
        for (const Shape & ne : shapes) {
            for (auto [la, lb] : {std::pair{Layout::Contiguous, Layout::Contiguous},
                                  std::pair{Layout::Transposed, Layout::Strided}}) {
                list.add(GGML_OP_COUNT_EQUAL,
                         str(type) + " " + str(ne) + " a:" + layout_name(la) + " b:" + layout_name(lb),
                         [=](Graph & g) {
                             return ggml_count_equal(g.ctx(), g.input(type, ne, la, Gen::integer(0, 3)),
                                                     g.input(type, ne, lb, Gen::integer(0, 3)));
                         });
            }
        }
    }
}

// Distinct values, and ties (equal values keep their index order). Rows of 3000 are longer than a
// device's shared-memory sort (Vulkan: 2048 keys).
void add_sort_cases(CaseList & list) {
    const Shape shapes[] = {{1, 1, 1, 1},  {3, 1, 1, 1},   {7, 3, 1, 1},    {16, 5, 3, 1}, {33, 2, 3, 2},
                            {65, 3, 1, 1}, {200, 2, 1, 1}, {3000, 2, 1, 1}, {0, 3, 1, 1},  {5, 0, 2, 1}};
    for (ggml_type type : kFloatTypes) {
        for (const Shape & ne : shapes) {
            const std::pair<const char *, Gen> gens[] = {{"", Gen::distinct(ne[0])},
                                                         {" ties", Gen::integer(0, 4)}};
            for (Layout layout : kAllLayouts) {
                for (const auto & [tag, gen] : gens) {
                    const std::string detail = str(type) + " " + str(ne) + " " + layout_name(layout) + tag;
                    for (ggml_sort_order order : {GGML_SORT_ORDER_ASC, GGML_SORT_ORDER_DESC}) {
                        list.add(GGML_OP_ARGSORT, (order == GGML_SORT_ORDER_ASC ? "asc " : "desc ") + detail,
                                 [=, gen_ = gen](Graph & g) {
                                     return ggml_argsort(g.ctx(), g.input(type, ne, layout, gen_), order);
                                 });
                    }
                    if (ne[0] == 0) continue;  // k must be in 1..ne0
                    for (int64_t k : std::set<int64_t>{1, (ne[0] + 1) / 2, ne[0]}) {
                        list.add(GGML_OP_TOP_K, "k " + std::to_string(k) + " " + detail,
                                 [=, gen_ = gen](Graph & g) {
                                     return ggml_top_k(g.ctx(), g.input(type, ne, layout, gen_),
                                                       static_cast<int>(k));
                                 });
                    }
                    list.add(GGML_OP_ARGSORT, "argsort_top_k " + detail, [=, gen_ = gen](Graph & g) {
                        return ggml_argsort_top_k(g.ctx(), g.input(type, ne, layout, gen_),
                                                  static_cast<int>((ne[0] + 1) / 2));
                    });
                }
            }
        }
    }
}

// Labels are a probability per row only in spirit: any weights exercise the formula.
void add_cross_entropy_cases(CaseList & list) {
    const Shape shapes[] = {{1, 1, 1, 1},   {2, 1, 1, 1},    {7, 3, 1, 1},   {33, 2, 3, 1},
                            {130, 4, 1, 1}, {1031, 2, 1, 1}, {1, 5, 1, 1},   {16, 16, 1, 1},
                            {5, 3, 2, 2},   {64, 1, 1, 1},   {257, 3, 1, 1}, {9, 2, 1, 3}};
    for (ggml_type type : kFloatTypes) {
        for (const Shape & ne : shapes) {
            for (auto [la, lb] : {std::pair{Layout::Contiguous, Layout::Contiguous},
                                  {Layout::Transposed, Layout::Strided},
                                  {Layout::Strided, Layout::Transposed},
                                  {Layout::Permuted, Layout::Contiguous},
                                  {Layout::Contiguous, Layout::Permuted}}) {
                const std::string detail =
                    str(type) + " " + str(ne) + " logits:" + layout_name(la) + " labels:" + layout_name(lb);
                list.add(GGML_OP_CROSS_ENTROPY_LOSS, detail, [=](Graph & g) {
                    return ggml_cross_entropy_loss(g.ctx(), g.input(type, ne, la, Gen::uniform(-4.0, 4.0)),
                                                   g.input(type, ne, lb, Gen::uniform(0.0, 1.0)));
                });
                list.add(GGML_OP_CROSS_ENTROPY_LOSS_BACK, detail, [=](Graph & g) {
                    return ggml_cross_entropy_loss_back(
                        g.ctx(), g.input(type, {1, 1, 1, 1}, Layout::Contiguous, Gen::uniform(0.5, 2.0)),
                        g.input(type, ne, la, Gen::uniform(-4.0, 4.0)),
                        g.input(type, ne, lb, Gen::uniform(0.0, 1.0)));
                });
            }
        }
    }
}

// Perf: a vocabulary-wide loss and its gradient, and a sort of long rows.
void add_reduce_perf_cases(CaseList & list) {
    const Shape logits = {32000, 64, 1, 1};
    const double n = 32000.0 * 64.0;
    list.add_perf(GGML_OP_CROSS_ENTROPY_LOSS, "perf f32 [32000,64]", 10 * n, [logits](Graph & g) {
        return ggml_cross_entropy_loss(g.ctx(), g.input(GGML_TYPE_F32, logits),
                                       g.input(GGML_TYPE_F32, logits));
    });
    list.add_perf(GGML_OP_CROSS_ENTROPY_LOSS_BACK, "perf f32 [32000,64]", 12 * n, [logits](Graph & g) {
        return ggml_cross_entropy_loss_back(g.ctx(), g.input(GGML_TYPE_F32, {1, 1, 1, 1}),
                                            g.input(GGML_TYPE_F32, logits), g.input(GGML_TYPE_F32, logits));
    });
    list.add_perf(GGML_OP_ARGSORT, "perf f32 [4096,256] desc", 0, [](Graph & g) {
        return ggml_argsort(g.ctx(), g.input(GGML_TYPE_F32, {4096, 256, 1, 1}), GGML_SORT_ORDER_DESC);
    });
}

}  // namespace

void add_reduce_cases(CaseList & list) {
    add_sum_cases(list);
    add_argmax_cases(list);
    add_cumsum_cases(list);
    add_count_equal_cases(list);
    add_sort_cases(list);
    add_cross_entropy_cases(list);
    add_reduce_perf_cases(list);
}

}  // namespace ggx::ops
