// ggx-ops case table: normalisation (NORM, RMS_NORM, L2_NORM, GROUP_NORM, RMS_NORM_BACK) over odd and
// zero-row shapes, every input layout, two epsilons, in-place variants and uneven channel groups.
#include "ggx-ops/case.h"

namespace ggx::ops {

namespace {

const Shape kShapes[] = {{1, 1, 1, 1},  {3, 1, 1, 1},   {7, 3, 1, 1},    {16, 5, 3, 1},   {33, 2, 3, 2},
                         {65, 3, 1, 1}, {257, 2, 1, 1}, {1031, 3, 1, 1}, {4096, 2, 1, 1}, {5, 0, 2, 1}};

using NormFn = ggml_tensor * (*)(ggml_context *, ggml_tensor *, float);

void add_row_norm_cases(CaseList & list) {
    const std::pair<ggml_op, NormFn> ops[] = {
        {GGML_OP_NORM, ggml_norm}, {GGML_OP_RMS_NORM, ggml_rms_norm}, {GGML_OP_L2_NORM, ggml_l2_norm}};
    for (const auto & [op, fn] : ops) {
        for (const Shape & ne : kShapes) {
            for (Layout layout : kAllLayouts) {
                for (float eps : {1e-5f, 0.1f}) {
                    list.add(op, "f32 " + str(ne) + " " + layout_name(layout) + " eps " + str(eps),
                             [=, f = fn](Graph & g) {
                                 return f(g.ctx(), g.input(GGML_TYPE_F32, ne, layout), eps);
                             });
                }
            }
        }
    }
    const std::pair<ggml_op, NormFn> inplace[] = {{GGML_OP_NORM, ggml_norm_inplace},
                                                  {GGML_OP_RMS_NORM, ggml_rms_norm_inplace}};
    for (const auto & [op, fn] : inplace) {
        for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
            list.add(op, "f32 [33,2,3,2] " + std::string(layout_name(layout)) + " inplace",
                     [=, f = fn](Graph & g) {
                         return f(g.ctx(), g.input(GGML_TYPE_F32, {33, 2, 3, 2}, layout), 1e-6f);
                     });
        }
    }
}

void add_group_norm_cases(CaseList & list) {
    const std::pair<Shape, std::vector<int>> configs[] = {{{4, 3, 6, 1}, {1, 2, 3, 4, 6}},
                                                          {{5, 5, 7, 2}, {1, 3, 7}},
                                                          {{1, 1, 32, 1}, {8, 32}},
                                                          {{9, 1, 4, 3}, {2}},
                                                          {{3, 2, 5, 1}, {1, 2, 4, 5}},
                                                          {{16, 16, 12, 2}, {1, 5, 12}},
                                                          {{1, 1, 1, 1}, {1}},
                                                          {{7, 3, 13, 1}, {1, 4, 13}},
                                                          {{33, 1, 2, 4}, {1, 2}}};
    for (const auto & [ne, groups] : configs) {
        for (int n_groups : groups) {
            for (Layout layout : kAllLayouts) {
                list.add(GGML_OP_GROUP_NORM,
                         "f32 " + str(ne) + " groups " + std::to_string(n_groups) + " " + layout_name(layout),
                         [=, shape = ne](Graph & g) {
                             return ggml_group_norm(g.ctx(), g.input(GGML_TYPE_F32, shape, layout), n_groups,
                                                    1e-6f);
                         });
                if (layout != Layout::Contiguous) continue;
                list.add(GGML_OP_GROUP_NORM,
                         "f32 " + str(ne) + " groups " + std::to_string(n_groups) + " inplace eps 0.1",
                         [=, shape = ne](Graph & g) {
                             return ggml_group_norm_inplace(g.ctx(), g.input(GGML_TYPE_F32, shape), n_groups,
                                                            0.1f);
                         });
            }
        }
    }
}

// RMS_NORM_BACK(dy, x): every layout of x, dy contiguous or strided.
void add_rms_norm_back_cases(CaseList & list) {
    for (const Shape & ne : kShapes) {
        for (Layout layout : kAllLayouts) {
            for (Layout dy_layout : {Layout::Contiguous, Layout::Strided}) {
                for (float eps : {1e-5f, 0.1f}) {
                    list.add(GGML_OP_RMS_NORM_BACK,
                             "f32 " + str(ne) + " x:" + layout_name(layout) +
                                 " dy:" + layout_name(dy_layout) + " eps " + str(eps),
                             [=](Graph & g) {
                                 ggml_tensor * dy = g.input(GGML_TYPE_F32, ne, dy_layout);
                                 return ggml_rms_norm_back(g.ctx(), dy, g.input(GGML_TYPE_F32, ne, layout),
                                                           eps);
                             });
                }
            }
        }
    }
}

// Perf: F32 tensors of 64 MiB, well beyond the last-level cache.
void add_perf_cases(CaseList & list) {
    list.add_perf(GGML_OP_RMS_NORM, "perf f32 [4096,4096]", 3.0 * 4096 * 4096, [](Graph & g) {
        return ggml_rms_norm(g.ctx(), g.input(GGML_TYPE_F32, {4096, 4096, 1, 1}), 1e-6f);
    });
    list.add_perf(GGML_OP_NORM, "perf f32 [4096,4096]", 5.0 * 4096 * 4096, [](Graph & g) {
        return ggml_norm(g.ctx(), g.input(GGML_TYPE_F32, {4096, 4096, 1, 1}), 1e-6f);
    });
}

}  // namespace

void add_norm_cases(CaseList & list) {
    add_row_norm_cases(list);
    add_group_norm_cases(list);
    add_rms_norm_back_cases(list);
    add_perf_cases(list);
}

}  // namespace ggx::ops
