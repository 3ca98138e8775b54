// ggx-ops case table: reductions (SUM, SUM_ROWS, MEAN, ARGMAX) over every float dtype, odd and
// zero-size shapes and every input layout; ARGMAX also with ties (the first maximum wins).
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

}  // namespace

void add_reduce_cases(CaseList & list) {
    add_sum_cases(list);
    add_argmax_cases(list);
}

}  // namespace ggx::ops
