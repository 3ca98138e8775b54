// ggx-ops case table: the shape family (REPEAT(_BACK), CONCAT, PAD, PAD_REFLECT_1D, ROLL, UPSCALE, ARANGE,
// TIMESTEP_EMBEDDING, WIN_PART/UNPART, GET_REL_POS, ADD_REL_POS, TRI, DIAG, SOLVE_TRI), over their dtypes,
// modes, odd and zero-size shapes and every input layout their constructors accept.
#include <cstdlib>
#include <tuple>

#include "ggx-ops/case.h"

namespace ggx::ops {

namespace {

constexpr ggml_type kFloatAndI32[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32};
// The layouts with dense rows (constructors that require nb0 = the type size).
constexpr Layout kDenseRowLayouts[] = {Layout::Contiguous, Layout::Strided};

// The types ROLL and DIAG copy: every unquantized type of 1, 2 or 4 bytes.
constexpr ggml_type kCopiedTypes[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16,
                                      GGML_TYPE_I8,  GGML_TYPE_I16, GGML_TYPE_I32};

Gen gen_for(ggml_type type) {
    switch (type) {
        case GGML_TYPE_I8:
            return Gen::integer(-100, 100);
        case GGML_TYPE_I16:
        case GGML_TYPE_I32:
            return Gen::integer(-1000, 1000);
        default:
            return Gen{};
    }
}

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

void add_circular_pad_cases(CaseList & list) {
    using Pads = std::array<int, 8>;  // lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3; each <= ne
    const Pads pads[] = {{1, 2, 0, 0, 0, 0, 0, 0},
                         {3, 3, 1, 2, 0, 0, 0, 0},
                         {0, 1, 3, 0, 2, 1, 1, 0},
                         {0, 0, 0, 0, 0, 0, 0, 0}};
    for (ggml_type type : kFloatTypes) {
        for (const Pads & p : pads) {
            for (Layout layout : kAllLayouts) {
                const Shape ne = {5, 3, 2, 1};
                const std::string detail =
                    "circular " + str(type) + " " + str(ne) +
                    format(" pads %d %d %d %d %d %d %d %d ", p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
                list.add(GGML_OP_PAD, detail + layout_name(layout), [=](Graph & g) {
                    ggml_tensor * a = g.input(type, ne, layout);
                    return ggml_pad_ext_circular(g.ctx(), a, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
                });
            }
        }
        list.add(GGML_OP_PAD, "circular plain " + str(type) + " [4,3,2,1] pads 4 1 2 0", [=](Graph & g) {
            return ggml_pad_circular(g.ctx(), g.input(type, {4, 3, 2, 1}), 4, 1, 2, 0);
        });
        list.add(GGML_OP_PAD, "circular " + str(type) + " empty [0,3,1,1]", [=](Graph & g) {
            return ggml_pad_circular(g.ctx(), g.input(type, {0, 3, 1, 1}), 0, 2, 0, 0);
        });
    }
}

// Every pair of pads below ne0: none, one side, both, and (but for ne0 = 7) the whole row but its edge.
void add_pad_reflect_cases(CaseList & list) {
    const Shape shapes[] = {{5, 3, 1, 1}, {16, 2, 3, 2}, {1, 4, 1, 1},  {9, 0, 1, 1}, {2, 3, 1, 1},
                            {7, 5, 2, 1}, {31, 3, 1, 2}, {64, 1, 1, 1}, {3, 2, 2, 3}, {129, 2, 1, 1}};
    const int pads[] = {0, 1, 2, 4, 7, 8, 15, 30, 63, 128};
    for (const Shape & ne : shapes) {
        for (int p0 : pads) {
            for (int p1 : pads) {
                if (p0 >= ne[0] || p1 >= ne[0]) continue;
                list.add(GGML_OP_PAD_REFLECT_1D, str(ne) + format(" p %d %d", p0, p1), [=](Graph & g) {
                    return ggml_pad_reflect_1d(g.ctx(), g.input(GGML_TYPE_F32, ne), p0, p1);
                });
            }
        }
    }
}

void add_roll_cases(CaseList & list) {
    const std::array<int, 4> shifts[] = {
        {1, 0, 0, 0}, {-2, 1, 0, 0}, {4, -2, 1, 1}, {0, 0, -1, 0}, {0, 0, 0, 0}};
    for (ggml_type type : kCopiedTypes) {
        for (const Shape & ne : {Shape{5, 3, 2, 2}, Shape{17, 4, 1, 1}}) {
            for (const auto & s : shifts) {
                if (std::abs(s[2]) >= ne[2] || std::abs(s[3]) >= ne[3]) continue;
                for (Layout layout : kDenseRowLayouts) {
                    list.add(GGML_OP_ROLL,
                             str(type) + " " + str(ne) +
                                 format(" shift %d %d %d %d ", s[0], s[1], s[2], s[3]) + layout_name(layout),
                             [=](Graph & g) {
                                 ggml_tensor * a = g.input(type, ne, layout, gen_for(type));
                                 return ggml_roll(g.ctx(), a, s[0], s[1], s[2], s[3]);
                             });
                }
            }
        }
        list.add(GGML_OP_ROLL, str(type) + " empty [3,0,2,1]", [=](Graph & g) {
            return ggml_roll(g.ctx(), g.input(type, {3, 0, 2, 1}, Layout::Contiguous, gen_for(type)), 2, 0, 1,
                             0);
        });
    }
}

void add_repeat_back_cases(CaseList & list) {
    const std::pair<Shape, Shape> sums[] = {{{5, 3, 2, 1}, {1, 1, 1, 1}}, {{9, 2, 1, 1}, {3, 1, 1, 1}},
                                            {{7, 6, 2, 2}, {7, 3, 1, 1}}, {{4, 3, 4, 1}, {1, 3, 2, 1}},
                                            {{5, 2, 3, 2}, {5, 2, 3, 2}}, {{4, 0, 2, 1}, {2, 0, 1, 1}}};
    for (ggml_type type : kFloatTypes) {
        for (const auto & [from, to] : sums) {
            for (Layout layout : kAllLayouts) {
                list.add(GGML_OP_REPEAT_BACK,
                         str(type) + " " + str(from) + "->" + str(to) + " " + layout_name(layout),
                         [=, a_ne = from, b_ne = to](Graph & g) {
                             ggml_tensor * a = g.input(type, a_ne, layout);
                             return ggml_repeat_back(g.ctx(), a, g.input(type, b_ne));
                         });
            }
        }
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

// ggml_interpolate's filtering modes and flags over float types, growing, shrinking and unit dims.
void add_interpolate_cases(CaseList & list) {
    constexpr uint32_t nearest = GGML_SCALE_MODE_NEAREST, bilinear = GGML_SCALE_MODE_BILINEAR,
                       bicubic = GGML_SCALE_MODE_BICUBIC, align = GGML_SCALE_FLAG_ALIGN_CORNERS,
                       antialias = GGML_SCALE_FLAG_ANTIALIAS;
    const std::pair<uint32_t, const char *> modes[] = {
        {nearest | align, "nearest-align"},
        {bilinear, "bilinear"},
        {bilinear | align, "bilinear-align"},
        {bilinear | antialias, "bilinear-antialias"},
        {bilinear | antialias | align, "bilinear-antialias-align"},
        {bicubic, "bicubic"},
        {bicubic | align, "bicubic-align"}};
    const std::pair<Shape, Shape> resizes[] = {{{5, 3, 2, 1}, {10, 6, 2, 1}}, {{5, 3, 2, 1}, {7, 4, 3, 2}},
                                               {{9, 8, 1, 1}, {4, 3, 1, 1}},  {{16, 5, 1, 1}, {5, 9, 1, 1}},
                                               {{1, 4, 2, 1}, {3, 1, 2, 1}},  {{6, 6, 2, 1}, {6, 6, 1, 1}}};
    for (const auto & [mode, name] : modes) {
        for (ggml_type type : kFloatTypes) {
            for (const auto & [from, to] : resizes) {
                for (Layout layout : kAllLayouts) {
                    if (type != GGML_TYPE_F32 && layout != Layout::Contiguous && layout != Layout::Permuted)
                        continue;
                    list.add(GGML_OP_UPSCALE,
                             std::string(name) + " " + str(type) + " " + str(from) + "->" + str(to) + " " +
                                 layout_name(layout),
                             [=, a_ne = from, ne = to, m = mode](Graph & g) {
                                 ggml_tensor * a = g.input(type, a_ne, layout);
                                 return ggml_interpolate(g.ctx(), a, ne[0], ne[1], ne[2], ne[3], m);
                             });
                }
            }
        }
    }
    for (auto mode : {GGML_SCALE_MODE_BILINEAR, GGML_SCALE_MODE_BICUBIC}) {
        list.add(GGML_OP_UPSCALE, format("ext mode %d x2 f32 [6,4,3,1]", mode), [=](Graph & g) {
            return ggml_upscale(g.ctx(), g.input(GGML_TYPE_F32, {6, 4, 3, 1}), 2, mode);
        });
    }
}

// A VAE decoder's 2x upsampling of a 512-channel 64x64 feature map.
void add_upscale_perf_cases(CaseList & list) {
    for (auto [mode, name] :
         {std::pair{GGML_SCALE_MODE_NEAREST, "nearest"}, {GGML_SCALE_MODE_BILINEAR, "bilinear"}}) {
        list.add_perf(GGML_OP_UPSCALE, std::string("perf ") + name + " x2 f32 [64,64,512,1]", 0.0,
                      [=](Graph & g) {
                          return ggml_upscale(g.ctx(), g.input(GGML_TYPE_F32, {64, 64, 512, 1}), 2, mode);
                      });
    }
}

void add_arange_cases(CaseList & list) {
    // The constructor requires stop > start and step > 0 (as ggml does): no descending ranges.
    for (auto [start, stop, step] : {std::tuple{0.0f, 10.0f, 1.0f},
                                     {-3.5f, 4.0f, 0.25f},
                                     {1.0f, 2.0f, 3.0f},
                                     {0.0f, 1000.0f, 0.1f},
                                     {-10.0f, -1.0f, 1.0f},
                                     {-1.0f, 1.0f, 0.3f},
                                     {0.0f, 1.0f, 1.0f},
                                     {0.5f, 0.6f, 0.01f},
                                     {-1000.0f, 1000.0f, 7.0f},
                                     {0.0f, 64.0f, 1.0f},
                                     {0.0f, 65.0f, 1.0f},
                                     {3.0f, 4.5f, 0.5f},
                                     {100.0f, 10000.0f, 3.3f},
                                     {-0.75f, 0.0f, 0.125f}}) {
        list.add(GGML_OP_ARANGE, "from " + str(start) + " to " + str(stop) + " by " + str(step),
                 [=](Graph & g) { return ggml_arange(g.ctx(), start, stop, step); });
    }
}

void add_window_cases(CaseList & list) {
    const Shape shapes[] = {{8, 10, 7, 1},  {3, 4, 4, 1}, {5, 1, 6, 1},  {1, 9, 9, 1},
                            {7, 14, 14, 1}, {2, 3, 5, 1}, {16, 6, 6, 1}, {4, 1, 1, 1}};
    for (const Shape & ne : shapes) {
        for (int w : {1, 2, 3, 4, 5, 7, 14}) {
            for (Layout layout : kAllLayouts) {
                const std::string detail = str(ne) + format(" w %d ", w) + layout_name(layout);
                list.add(GGML_OP_WIN_PART, detail, [=](Graph & g) {
                    return ggml_win_part(g.ctx(), g.input(GGML_TYPE_F32, ne, layout), w);
                });
                const int64_t windows = (ne[1] + w - 1) / w * ((ne[2] + w - 1) / w);
                list.add(GGML_OP_WIN_UNPART, detail, [=](Graph & g) {
                    ggml_tensor * a = g.input(GGML_TYPE_F32, {ne[0], w, w, windows}, layout);
                    return ggml_win_unpart(g.ctx(), a, static_cast<int>(ne[1]), static_cast<int>(ne[2]), w);
                });
            }
        }
    }
}

void add_rel_pos_cases(CaseList & list) {
    for (ggml_type type : kFloatTypes) {
        for (int64_t c : {1, 6, 17}) {
            for (int kh : {1, 2, 3, 4, 7, 14}) {
                for (Layout layout : kAllLayouts) {
                    list.add(GGML_OP_GET_REL_POS,
                             str(type) + format(" C %lld kh %d ", static_cast<long long>(c), kh) +
                                 layout_name(layout),
                             [=](Graph & g) {
                                 ggml_tensor * a = g.input(type, {c, 2 * kh - 1, 1, 1}, layout);
                                 return ggml_get_rel_pos(g.ctx(), a, kh, kh);
                             });
                }
            }
        }
    }
    for (auto [w, h, b] : {std::tuple{3, 2, 2},
                           {4, 4, 1},
                           {1, 3, 3},
                           {5, 1, 2},
                           {1, 1, 1},
                           {7, 3, 1},
                           {2, 5, 3},
                           {8, 8, 2},
                           {6, 2, 4},
                           {3, 7, 1}}) {
        for (bool inplace : {false, true}) {
            list.add(GGML_OP_ADD_REL_POS, format("W %d H %d B %d%s", w, h, b, inplace ? " inplace" : ""),
                     [=](Graph & g) {
                         ggml_tensor * a = g.input(GGML_TYPE_F32, {w * w, h * w, b, 1});
                         ggml_tensor * pw = g.input(GGML_TYPE_F32, {w, h, w, b});
                         ggml_tensor * ph = g.input(GGML_TYPE_F32, {w, h, w, b});
                         return inplace ? ggml_add_rel_pos_inplace(g.ctx(), a, pw, ph)
                                        : ggml_add_rel_pos(g.ctx(), a, pw, ph);
                     });
        }
    }
}

void add_triangle_cases(CaseList & list) {
    for (auto type :
         {GGML_TRI_TYPE_UPPER_DIAG, GGML_TRI_TYPE_UPPER, GGML_TRI_TYPE_LOWER_DIAG, GGML_TRI_TYPE_LOWER}) {
        for (const Shape & ne :
             {Shape{5, 5, 3, 2}, Shape{1, 1, 1, 1}, Shape{16, 16, 1, 1}, Shape{0, 0, 2, 1}}) {
            for (Layout layout : kAllLayouts) {
                list.add(
                    GGML_OP_TRI, format("type %d ", type) + str(ne) + " " + layout_name(layout),
                    [=](Graph & g) { return ggml_tri(g.ctx(), g.input(GGML_TYPE_F32, ne, layout), type); });
            }
        }
    }
    for (ggml_type type : kCopiedTypes) {
        for (const Shape & ne : {Shape{5, 1, 3, 2}, Shape{1, 1, 1, 1}, Shape{0, 1, 2, 1}}) {
            for (Layout layout : kAllLayouts) {
                list.add(GGML_OP_DIAG, str(type) + " " + str(ne) + " " + layout_name(layout), [=](Graph & g) {
                    return ggml_diag(g.ctx(), g.input(type, ne, layout, gen_for(type)));
                });
            }
        }
    }
}

// a = a random lower part (the kernel reads only it) plus a diagonal in [1, 2], well conditioned.
void add_solve_tri(CaseList & list, int n, int k, int b2, int b3) {
    list.add(GGML_OP_SOLVE_TRI, format("n %d k %d batch %d,%d", n, k, b2, b3), [=](Graph & g) {
        const double spread = 0.5 / n;
        ggml_tensor * lower =
            g.input(GGML_TYPE_F32, {n, n, b2, b3}, Layout::Contiguous, Gen::uniform(-spread, spread));
        ggml_tensor * diagonal =
            g.input(GGML_TYPE_F32, {n, 1, b2, b3}, Layout::Contiguous, Gen::uniform(1, 2));
        ggml_tensor * a = ggml_add(g.ctx(), lower, ggml_diag(g.ctx(), diagonal));
        return ggml_solve_tri(g.ctx(), a, g.input(GGML_TYPE_F32, {k, n, b2, b3}), true, true, false);
    });
}

// Sizes around the kernel's blocks (powers of two and one either side), right-hand sides from none to
// many, one system or a batch over both outer dims.
void add_solve_tri_cases(CaseList & list) {
    for (int n : {1, 2, 3, 4, 5, 7, 8, 16, 17, 31, 32, 33, 64, 65}) {
        for (int k : {0, 1, 2, 5, 17, 64}) {
            for (auto [b2, b3] : {std::pair{1, 1}, {3, 2}})
                add_solve_tri(list, n, k, b2, b3);
        }
    }
    add_solve_tri(list, 8, 131, 2, 1);
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
    add_circular_pad_cases(list);
    add_pad_reflect_cases(list);
    add_roll_cases(list);
    add_repeat_back_cases(list);
    add_upscale_cases(list);
    add_interpolate_cases(list);
    add_upscale_perf_cases(list);
    add_arange_cases(list);
    add_timestep_cases(list);
    add_window_cases(list);
    add_rel_pos_cases(list);
    add_triangle_cases(list);
    add_solve_tri_cases(list);
}

}  // namespace ggx::ops
