// ggx-ops case table: shape ops (REPEAT, CONCAT, PAD, UPSCALE) and TIMESTEP_EMBEDDING, over their
// dtypes, odd and zero-size shapes and every input layout.
#include "ggx-ops/case.h"

namespace ggx::ops {

namespace {

constexpr ggml_type kFloatAndI32[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32};

Gen gen_for(ggml_type type) { return type == GGML_TYPE_I32 ? Gen::integer(-1000, 1000) : Gen{}; }

void add_repeat_cases(CaseList & list) {
    const std::pair<Shape, Shape> tilings[] = {{{1, 1, 1, 1}, {5, 3, 2, 1}}, {{3, 1, 1, 1}, {9, 2, 1, 1}},
                                               {{7, 3, 1, 1}, {7, 6, 2, 2}}, {{1, 3, 2, 1}, {4, 3, 4, 1}},
                                               {{5, 2, 3, 2}, {5, 2, 3, 2}}, {{2, 0, 1, 1}, {4, 0, 2, 1}}};
    for (ggml_type type : kFloatAndI32) {
        for (const auto & [from, to] : tilings) {
            for (Layout layout : kAllLayouts) {
                list.add(GGML_OP_REPEAT,
                         str(type) + " " + str(from) + "->" + str(to) + " " + layout_name(layout),
                         [=, a_ne = from, b_ne = to](Graph & g) {
                             ggml_tensor * a = g.input(type, a_ne, layout, gen_for(type));
                             return ggml_repeat(g.ctx(), a, g.input(type, b_ne));
                         });
            }
        }
    }
}

void add_concat_cases(CaseList & list) {
    const Shape a_ne = {7, 3, 2, 2};
    const std::pair<Layout, Layout> layouts[] = {{Layout::Contiguous, Layout::Contiguous},
                                                 {Layout::Permuted, Layout::Strided},
                                                 {Layout::Transposed, Layout::Contiguous}};
    for (ggml_type type : kFloatAndI32) {
        for (int dim = 0; dim < 4; ++dim) {
            for (int64_t extent : {5, 1, 0}) {
                Shape b_ne = a_ne;
                b_ne[dim] = extent;
                for (auto [la, lb] : layouts) {
                    list.add(GGML_OP_CONCAT,
                             str(type) + " dim" + std::to_string(dim) + " " + str(a_ne) + "+" + str(b_ne) +
                                 " a:" + layout_name(la) + " b:" + layout_name(lb),
                             [=](Graph & g) {
                                 ggml_tensor * a = g.input(type, a_ne, la, gen_for(type));
                                 return ggml_concat(g.ctx(), a, g.input(type, b_ne, lb, gen_for(type)), dim);
                             });
                }
            }
        }
    }
}

void add_pad_cases(CaseList & list) {
    using Pads = std::array<int, 8>;  // lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3
    const Pads pads[] = {{0, 1, 0, 0, 0, 0, 0, 0},
                         {0, 2, 0, 1, 0, 1, 0, 0},
                         {1, 2, 0, 0, 0, 0, 0, 0},
                         {2, 1, 3, 0, 1, 1, 0, 2},
                         {0, 0, 0, 0, 0, 0, 0, 0}};
    for (ggml_type type : kFloatTypes) {
        for (const Shape & ne : {Shape{7, 3, 1, 1}, Shape{16, 5, 3, 1}, Shape{0, 2, 1, 1}}) {
            for (const Pads & p : pads) {
                for (Layout layout : kAllLayouts) {
                    const std::string detail = str(type) + " " + str(ne) +
                                               format(" pads %d %d %d %d %d %d %d %d ", p[0], p[1], p[2],
                                                      p[3], p[4], p[5], p[6], p[7]);
                    list.add(GGML_OP_PAD, detail + layout_name(layout), [=](Graph & g) {
                        ggml_tensor * a = g.input(type, ne, layout);
                        return ggml_pad_ext(g.ctx(), a, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
                    });
                }
            }
        }
        list.add(GGML_OP_PAD, "plain " + str(type) + " [7,3,2,1] pads 1 2 0 3", [=](Graph & g) {
            return ggml_pad(g.ctx(), g.input(type, {7, 3, 2, 1}), 1, 2, 0, 3);
        });
    }
}

void add_upscale_cases(CaseList & list) {
    const Shape targets[] = {{10, 6, 2, 1}, {7, 4, 3, 2}, {3, 2, 1, 1}, {5, 3, 2, 1}, {11, 3, 4, 1}};
    for (const Shape & ne : {Shape{5, 3, 2, 1}, Shape{4, 1, 1, 2}}) {
        for (Layout layout : kAllLayouts) {
            const std::string tail = format(" %s %s", str(ne).c_str(), layout_name(layout));
            for (const Shape & to : targets) {
                list.add(GGML_OP_UPSCALE, "ext f32 ->" + str(to) + tail, [=](Graph & g) {
                    ggml_tensor * a = g.input(GGML_TYPE_F32, ne, layout);
                    return ggml_upscale_ext(g.ctx(), a, to[0], to[1], to[2], to[3], GGML_SCALE_MODE_NEAREST);
                });
            }
            for (int factor : {1, 2, 3}) {
                list.add(GGML_OP_UPSCALE, format("x%d f32", factor) + tail, [=](Graph & g) {
                    return ggml_upscale(g.ctx(), g.input(GGML_TYPE_F32, ne, layout), factor,
                                        GGML_SCALE_MODE_NEAREST);
                });
            }
        }
    }
}

void add_timestep_cases(CaseList & list) {
    for (int dim : {2, 3, 7, 16, 33, 64, 65, 320}) {
        for (int64_t n : {1, 3, 7}) {
            for (int period : {10000, 100}) {
                for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
                    list.add(GGML_OP_TIMESTEP_EMBEDDING,
                             "dim " + std::to_string(dim) + " n " + std::to_string(n) + " period " +
                                 std::to_string(period) + " " + layout_name(layout),
                             [=](Graph & g) {
                                 ggml_tensor * t =
                                     g.input(GGML_TYPE_F32, {n, 1, 1, 1}, layout, Gen::uniform(0, 1000));
                                 return ggml_timestep_embedding(g.ctx(), t, dim, period);
                             });
                }
            }
        }
    }
}

}  // namespace

void add_shape_cases(CaseList & list) {
    add_repeat_cases(list);
    add_concat_cases(list);
    add_pad_cases(list);
    add_upscale_cases(list);
    add_timestep_cases(list);
}

}  // namespace ggx::ops
