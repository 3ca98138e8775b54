// ggx-ops case table: SOFT_MAX plain, in-place, with masks (F32/F16, -inf entries, per-row and
// per-head masks with padded rows) and sinks, scales and ALiBi slopes; SOFT_MAX_BACK with scales
// and max_bias; DIAG_MASK_INF/ZERO for every float type; over odd and zero-size shapes.
#include <tuple>

#include "ggx-ops/case.h"

namespace ggx::ops {

namespace {

const Shape kShapes[] = {{1, 1, 1, 1},  {7, 3, 1, 1},    {16, 5, 3, 1}, {33, 2, 4, 2},
                         {65, 3, 5, 1}, {1031, 2, 2, 1}, {0, 3, 1, 1},  {5, 0, 2, 1}};
const Gen kScores = Gen::uniform(-4.0, 4.0);

// Mask shapes for a: one row per query shared by every head, or one per head with spare rows.
Shape mask_shape(const Shape & a, bool per_head) {
    return per_head ? Shape{a[0], a[1] + 3, a[2], a[3]} : Shape{a[0], a[1], 1, 1};
}

void add_plain_cases(CaseList & list, const Shape & ne) {
    for (Layout layout : kAllLayouts) {
        list.add(GGML_OP_SOFT_MAX, "f32 " + str(ne) + " " + layout_name(layout), [=](Graph & g) {
            return ggml_soft_max(g.ctx(), g.input(GGML_TYPE_F32, ne, layout, kScores));
        });
    }
    for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
        list.add(GGML_OP_SOFT_MAX, "f32 " + str(ne) + " " + layout_name(layout) + " inplace", [=](Graph & g) {
            return ggml_soft_max_inplace(g.ctx(), g.input(GGML_TYPE_F32, ne, layout, kScores));
        });
    }
}

void add_ext_case(CaseList & list, const Shape & ne, Layout layout, ggml_type mask_type, bool per_head,
                  float scale, float max_bias) {
    const bool masked = mask_type != GGML_TYPE_COUNT;
    const std::string mask = masked ? str(mask_type) + (per_head ? " per-head" : " per-row") : "none";
    list.add(GGML_OP_SOFT_MAX,
             "ext f32 " + str(ne) + " " + layout_name(layout) + " mask " + mask + " scale " + str(scale) +
                 " max_bias " + str(max_bias),
             [=](Graph & g) {
                 ggml_tensor * a = g.input(GGML_TYPE_F32, ne, layout, kScores);
                 ggml_tensor * m =
                     masked ? g.input(mask_type, mask_shape(ne, per_head), Layout::Contiguous, Gen::mask())
                            : nullptr;
                 return ggml_soft_max_ext(g.ctx(), a, m, scale, max_bias);
             });
}

void add_ext_cases(CaseList & list, const Shape & ne) {
    const std::pair<ggml_type, bool> masks[] = {{GGML_TYPE_COUNT, false},
                                                {GGML_TYPE_F32, false},
                                                {GGML_TYPE_F32, true},
                                                {GGML_TYPE_F16, false},
                                                {GGML_TYPE_F16, true}};
    for (Layout layout : {Layout::Contiguous, Layout::Permuted}) {
        for (const auto & [type, per_head] : masks) {
            for (float scale : {1.0f, 0.125f}) {
                for (float max_bias : {0.0f, 8.0f})
                    add_ext_case(list, ne, layout, type, per_head, scale, max_bias);
            }
        }
    }
}

// Sinks (one logit per head), alone and with masks and ALiBi slopes.
void add_sinks_cases(CaseList & list, const Shape & ne) {
    for (Layout layout : {Layout::Contiguous, Layout::Permuted}) {
        for (ggml_type mask_type : {GGML_TYPE_COUNT, GGML_TYPE_F16, GGML_TYPE_F32}) {
            for (float max_bias : {0.0f, 8.0f}) {
                const bool masked = mask_type != GGML_TYPE_COUNT;
                list.add(GGML_OP_SOFT_MAX,
                         "sinks f32 " + str(ne) + " " + layout_name(layout) + " mask " +
                             (masked ? str(mask_type) : std::string("none")) + " max_bias " + str(max_bias),
                         [=](Graph & g) {
                             ggml_tensor * a = g.input(GGML_TYPE_F32, ne, layout, kScores);
                             ggml_tensor * m = masked ? g.input(mask_type, mask_shape(ne, true),
                                                                Layout::Contiguous, Gen::mask())
                                                      : nullptr;
                             ggml_tensor * r = ggml_soft_max_ext(g.ctx(), a, m, 0.5f, max_bias);
                             ggml_soft_max_add_sinks(
                                 r, g.input(GGML_TYPE_F32, {ne[2], 1, 1, 1}, Layout::Contiguous, kScores));
                             return r;
                         });
            }
        }
    }
}

// SOFT_MAX_BACK(dy, y): y positive like a softmax result; max_bias changes nothing computed.
void add_back_cases(CaseList & list, const Shape & ne) {
    for (Layout layout : kAllLayouts) {
        for (float scale : {1.0f, 0.125f}) {
            for (float max_bias : {0.0f, 8.0f}) {
                list.add(GGML_OP_SOFT_MAX_BACK,
                         "f32 " + str(ne) + " " + layout_name(layout) + " scale " + str(scale) +
                             " max_bias " + str(max_bias),
                         [=](Graph & g) {
                             ggml_tensor * dy = g.input(GGML_TYPE_F32, ne, layout);
                             ggml_tensor * y =
                                 g.input(GGML_TYPE_F32, ne, Layout::Contiguous, Gen::uniform(0.0, 1.0));
                             return ggml_soft_max_ext_back(g.ctx(), dy, y, scale, max_bias);
                         });
            }
        }
    }
    list.add(GGML_OP_SOFT_MAX_BACK, "f32 " + str(ne) + " inplace", [=](Graph & g) {
        ggml_tensor * y = g.input(GGML_TYPE_F32, ne, Layout::Strided, Gen::uniform(0.0, 1.0));
        return ggml_soft_max_ext_back_inplace(g.ctx(), g.input(GGML_TYPE_F32, ne), y, 0.5f, 0.0f);
    });
}

using DiagMaskFn = ggml_tensor * (*)(ggml_context *, ggml_tensor *, int);

void add_diag_mask_cases(CaseList & list, const Shape & ne) {
    const std::tuple<ggml_op, const char *, DiagMaskFn> fns[] = {
        {GGML_OP_DIAG_MASK_INF, "", ggml_diag_mask_inf},
        {GGML_OP_DIAG_MASK_INF, " inplace", ggml_diag_mask_inf_inplace},
        {GGML_OP_DIAG_MASK_ZERO, "", ggml_diag_mask_zero},
        {GGML_OP_DIAG_MASK_ZERO, " inplace", ggml_diag_mask_zero_inplace}};
    for (const auto & [op, suffix, fn] : fns) {
        for (ggml_type type : kFloatTypes) {
            for (Layout layout : kAllLayouts) {
                for (int n_past : {0, 2, 100}) {
                    list.add(
                        op,
                        str(type) + " " + str(ne) + " " + layout_name(layout) + " n_past " +
                            std::to_string(n_past) + suffix,
                        [=, f = fn](Graph & g) { return f(g.ctx(), g.input(type, ne, layout), n_past); });
                }
            }
        }
    }
}

void add_perf_cases(CaseList & list) {
    const Shape ne = {4096, 512, 8, 1};
    const double n = 4096.0 * 512 * 8;
    list.add_perf(GGML_OP_SOFT_MAX, "perf f32 [4096,512,8,1]", 4 * n, [=](Graph & g) {
        return ggml_soft_max(g.ctx(), g.input(GGML_TYPE_F32, ne, Layout::Contiguous, kScores));
    });
    list.add_perf(GGML_OP_SOFT_MAX, "perf ext f32 [4096,512,8,1] mask f16 [4096,512]", 6 * n, [=](Graph & g) {
        ggml_tensor * mask = g.input(GGML_TYPE_F16, {4096, 512, 1, 1}, Layout::Contiguous, Gen::mask());
        return ggml_soft_max_ext(g.ctx(), g.input(GGML_TYPE_F32, ne, Layout::Contiguous, kScores), mask,
                                 0.125f, 0.0f);
    });
}

}  // namespace

void add_softmax_cases(CaseList & list) {
    for (const Shape & ne : kShapes) {
        add_plain_cases(list, ne);
        add_ext_cases(list, ne);
        add_sinks_cases(list, ne);
        add_back_cases(list, ne);
        add_diag_mask_cases(list, ne);
    }
    add_perf_cases(list);
}

}  // namespace ggx::ops
