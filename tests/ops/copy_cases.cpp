// ggx-ops case table: copies and layouts (CPY, DUP, CONT, VIEW, RESHAPE, PERMUTE, TRANSPOSE): every
// documented conversion (every block format ggx converts), odd and zero-size shapes, every source layout and strided destinations.
#include <algorithm>
#include <numeric>

#include "ggx-ops/case.h"

namespace ggx::ops {

namespace {

const Shape kShapes[] = {{1, 1, 1, 1},  {3, 1, 1, 1},    {7, 3, 1, 1}, {16, 5, 3, 1}, {33, 2, 3, 2},
                         {65, 3, 1, 1}, {1031, 2, 1, 1}, {0, 3, 1, 1}, {5, 0, 2, 1}};
// ne0 a multiple of the Q8_0/Q4_0 block.
const Shape kBlockShapes[] = {{32, 1, 1, 1}, {64, 3, 1, 1}, {96, 2, 3, 1}, {32, 0, 1, 1}};

// Where a copy lands: a new tensor (ggml_cast), a dense tensor of another shape with the same
// element count (flat order), or a strided view of a larger destination leaf.
enum class Dest { Cast, Flat, View };
const char * dest_name(Dest d) {
    return d == Dest::Cast ? "cast" : d == Dest::Flat ? "into-flat" : "into-view";
}

Gen gen_for(ggml_type type) {
    if (type == GGML_TYPE_I8) return Gen::integer(-128, 128);
    if (type == GGML_TYPE_I16) return Gen::integer(-32768, 32768);
    if (type == GGML_TYPE_I32) return Gen::integer(-100000, 100000);
    return Gen::uniform(-2.0, 2.0);
}

ggml_tensor * copy_to(Graph & g, ggml_tensor * src, ggml_type dst, const Shape & ne, Dest dest) {
    switch (dest) {
        case Dest::Cast:
            return ggml_cast(g.ctx(), src, dst);
        case Dest::Flat:
            return ggml_cpy(g.ctx(), src, g.input(dst, {ne[0] * ne[1], ne[2], ne[3], 1}));
        case Dest::View:
            return ggml_cpy(g.ctx(), src, g.input(dst, ne, Layout::Strided, gen_for(dst)));
    }
    return nullptr;
}

void add_cpy(CaseList & list, ggml_type from, ggml_type to, const Shape & ne, Layout layout, Dest dest,
             Gen gen, const std::string & tag = "") {
    const std::string detail =
        str(from) + "->" + str(to) + " " + str(ne) + " " + layout_name(layout) + " " + dest_name(dest) + tag;
    list.add(GGML_OP_CPY, detail,
             [=](Graph & g) { return copy_to(g, g.input(from, ne, layout, gen), to, ne, dest); });
}

// Source layouts paired with destinations so that every layout meets every destination kind.
void add_cpy_layouts(CaseList & list, ggml_type from, ggml_type to, const Shape & ne) {
    const bool dense_dst = ggml_is_quantized(to);  // a quantized destination cannot be reshaped by block
    for (Layout layout : layouts_for(from)) {
        add_cpy(list, from, to, ne, layout, Dest::Cast, gen_for(from));
        const bool flat = (layout == Layout::Contiguous || layout == Layout::Permuted) && !dense_dst;
        add_cpy(list, from, to, ne, layout, flat ? Dest::Flat : Dest::View, gen_for(from));
    }
}

void add_cpy_cases(CaseList & list) {
    for (ggml_type from : kFloatTypes) {
        for (ggml_type to : kFloatTypes) {
            for (const Shape & ne : kShapes)
                add_cpy_layouts(list, from, to, ne);
            add_cpy(list, from, to, {33, 2, 3, 2}, Layout::Contiguous, Dest::Cast, Gen::special(-3e5, 3e5),
                    " specials");
        }
        for (ggml_type to : kQuantTypes) {
            for (const Shape & ne : kBlockShapes)
                add_cpy_layouts(list, from, to, ne);
        }
    }
    for (ggml_type from : kQuantTypes) {
        for (const Shape & ne : kBlockShapes)
            add_cpy_layouts(list, from, GGML_TYPE_F32, ne);
    }
    for (ggml_type type : {GGML_TYPE_I32, GGML_TYPE_I8}) {
        for (const Shape & ne : kShapes)
            add_cpy_layouts(list, type, type, ne);
    }
    // The other block formats: quantized from F32 and F16, dequantized to F32, and copied as they are.
    const Shape format_shapes[] = {{kFormatRow, 3, 1, 1}, {2 * kFormatRow, 2, 3, 1}};
    for (ggml_type type : more_block_types()) {
        for (const Shape & ne : format_shapes) {
            for (ggml_type from : {GGML_TYPE_F32, GGML_TYPE_F16})
                add_cpy_layouts(list, from, type, ne);
            add_cpy_layouts(list, type, GGML_TYPE_F32, ne);
            add_cpy(list, type, type, ne, Layout::Strided, Dest::Cast, gen_for(type));
        }
    }
}

constexpr ggml_type kPlainTypes[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16,
                                     GGML_TYPE_I32, GGML_TYPE_I16, GGML_TYPE_I8};

void add_dup_cont_cases(CaseList & list) {
    for (ggml_type type : kPlainTypes) {
        for (const Shape & ne : kShapes) {
            for (Layout layout : kAllLayouts) {
                const std::string detail = str(type) + " " + str(ne) + " " + layout_name(layout);
                list.add(GGML_OP_DUP, detail, [=](Graph & g) {
                    return ggml_dup(g.ctx(), g.input(type, ne, layout, gen_for(type)));
                });
                list.add(GGML_OP_CONT, detail, [=](Graph & g) {
                    return ggml_cont(g.ctx(), g.input(type, ne, layout, gen_for(type)));
                });
            }
        }
    }
    for (ggml_type type : kFloatTypes) {
        for (Layout layout : kAllLayouts) {
            for (const Shape & to : {Shape{6, 5, 1, 11}, Shape{330, 1, 1, 1}}) {
                list.add(GGML_OP_CONT,
                         "4d " + str(type) + " [33,2,5,1]->" + str(to) + " " + layout_name(layout),
                         [=](Graph & g) {
                             ggml_tensor * a = g.input(type, {33, 2, 5, 1}, layout, gen_for(type));
                             return ggml_cont_4d(g.ctx(), a, to[0], to[1], to[2], to[3]);
                         });
            }
        }
    }
}

// Every permutation of four axes, materialised by ggml_cont.
void add_permute_cases(CaseList & list) {
    std::array<int, 4> axes = {0, 1, 2, 3};
    do {
        const std::string perm = format("(%d,%d,%d,%d)", axes[0], axes[1], axes[2], axes[3]);
        for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_I32}) {
            for (const Shape & ne : {Shape{7, 3, 5, 2}, Shape{3, 0, 2, 4}}) {
                for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
                    list.add(GGML_OP_PERMUTE,
                             perm + " " + str(type) + " " + str(ne) + " " + layout_name(layout),
                             [=](Graph & g) {
                                 ggml_tensor * a = g.input(type, ne, layout, gen_for(type));
                                 return ggml_cont(
                                     g.ctx(), ggml_permute(g.ctx(), a, axes[0], axes[1], axes[2], axes[3]));
                             });
                }
            }
        }
    } while (std::next_permutation(axes.begin(), axes.end()));
}

void add_transpose_cases(CaseList & list) {
    for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32}) {
        for (const Shape & ne : kShapes) {
            for (Layout layout : kAllLayouts) {
                list.add(GGML_OP_TRANSPOSE, str(type) + " " + str(ne) + " " + layout_name(layout),
                         [=](Graph & g) {
                             return ggml_cont(
                                 g.ctx(), ggml_transpose(g.ctx(), g.input(type, ne, layout, gen_for(type))));
                         });
            }
        }
    }
}

// Views with explicit offsets and strides into a [12, 5, 4, 3] leaf, materialised by ggml_cont.
void add_view_cases(CaseList & list) {
    using ViewFn = ggml_tensor * (*)(ggml_context *, ggml_tensor *);
    const std::pair<const char *, ViewFn> views[] = {
        {"1d", [](ggml_context * c, ggml_tensor * a) { return ggml_view_1d(c, a, 37, 5 * a->nb[0]); }},
        {"2d",
         [](ggml_context * c, ggml_tensor * a) { return ggml_view_2d(c, a, 7, 9, a->nb[1], 3 * a->nb[0]); }},
        {"2d-overlap",
         [](ggml_context * c, ggml_tensor * a) { return ggml_view_2d(c, a, 10, 6, 3 * a->nb[0], 0); }},
        {"3d",
         [](ggml_context * c, ggml_tensor * a) {
             return ggml_view_3d(c, a, 5, 3, 4, 2 * a->nb[1], a->nb[2], a->nb[1] + a->nb[0]);
         }},
        {"4d",
         [](ggml_context * c, ggml_tensor * a) {
             return ggml_view_4d(c, a, 6, 2, 2, 3, a->nb[1], 2 * a->nb[2], a->nb[3], 2 * a->nb[0]);
         }},
        {"tensor", [](ggml_context * c, ggml_tensor * a) { return ggml_view_tensor(c, a); }},
    };
    for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32, GGML_TYPE_I8}) {
        for (const auto & [name, fn] : views) {
            list.add(GGML_OP_VIEW, std::string(name) + " " + str(type), [=, f = fn](Graph & g) {
                return ggml_cont(g.ctx(),
                                 f(g.ctx(), g.input(type, {12, 5, 4, 3}, Layout::Contiguous, gen_for(type))));
            });
        }
    }
    // Rows of quantized data, read back through a conversion to F32.
    for (ggml_type type : kQuantTypes) {
        list.add(GGML_OP_VIEW, "rows " + str(type), [=](Graph & g) {
            ggml_tensor * a = g.input(type, {64, 6, 2, 1});
            return ggml_cast(g.ctx(),
                             ggml_view_3d(g.ctx(), a, 32, 2, 2, 2 * a->nb[1], a->nb[2], a->nb[1] + a->nb[0]),
                             GGML_TYPE_F32);
        });
    }
}

void add_reshape_cases(CaseList & list) {
    using ReshapeFn = ggml_tensor * (*)(ggml_context *, ggml_tensor *);
    const std::pair<const char *, ReshapeFn> reshapes[] = {
        {"1d", [](ggml_context * c, ggml_tensor * a) { return ggml_reshape_1d(c, a, 210); }},
        {"2d", [](ggml_context * c, ggml_tensor * a) { return ggml_reshape_2d(c, a, 14, 15); }},
        {"3d", [](ggml_context * c, ggml_tensor * a) { return ggml_reshape_3d(c, a, 5, 6, 7); }},
        {"4d", [](ggml_context * c, ggml_tensor * a) { return ggml_reshape_4d(c, a, 3, 5, 7, 2); }},
        {"like", [](ggml_context * c,
                    ggml_tensor * a) { return ggml_reshape(c, a, ggml_new_tensor_2d(c, a->type, 35, 6)); }},
    };
    for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32}) {
        for (const auto & [name, fn] : reshapes) {
            // Reshaped, then transposed so the copy has to follow the new shape.
            list.add(GGML_OP_RESHAPE, std::string(name) + " " + str(type), [=, f = fn](Graph & g) {
                ggml_tensor * a = g.input(type, {7, 6, 5, 1}, Layout::Contiguous, gen_for(type));
                return ggml_cont(g.ctx(), ggml_transpose(g.ctx(), f(g.ctx(), a)));
            });
        }
    }
}

void add_perf_cases(CaseList & list) {
    for (ggml_type to : {GGML_TYPE_F16, GGML_TYPE_Q8_0}) {
        list.add_perf(GGML_OP_CPY, "perf f32->" + str(to) + " [4096,4096]", 0.0, [to](Graph & g) {
            return ggml_cast(g.ctx(), g.input(GGML_TYPE_F32, {4096, 4096, 1, 1}), to);
        });
    }
    list.add_perf(GGML_OP_CONT, "perf f32 [4096,4096] transposed", 0.0, [](Graph & g) {
        return ggml_cont(g.ctx(), g.input(GGML_TYPE_F32, {4096, 4096, 1, 1}, Layout::Transposed));
    });
}

}  // namespace

void add_copy_cases(CaseList & list) {
    add_cpy_cases(list);
    add_dup_cont_cases(list);
    add_permute_cases(list);
    add_transpose_cases(list);
    add_view_cases(list);
    add_reshape_cases(list);
    add_perf_cases(list);
}

}  // namespace ggx::ops
