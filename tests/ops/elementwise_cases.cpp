// ggx-ops case table: element-wise ops (ADD, SUB, MUL, DIV, SCALE, SQR, SQRT, CLAMP, UNARY, GLU)
// over every float dtype, odd and zero-size shapes, every input layout, broadcasting and in-place.
#include <algorithm>
#include <span>
#include <tuple>

#include "ggx-ops/case.h"
#include "reference/reference.h"

namespace ggx::ops {

namespace {

const Shape kShapes[] = {{1, 1, 1, 1},  {3, 1, 1, 1},   {7, 3, 1, 1},    {16, 5, 3, 1}, {33, 2, 3, 2},
                         {65, 3, 1, 1}, {129, 4, 1, 1}, {1031, 2, 1, 2}, {0, 3, 1, 1},  {5, 0, 2, 1}};

struct TypePair {
    ggml_type a, b;
};
constexpr TypePair kBinaryTypes[] = {{GGML_TYPE_F32, GGML_TYPE_F32},
                                     {GGML_TYPE_F16, GGML_TYPE_F16},
                                     {GGML_TYPE_F16, GGML_TYPE_F32},
                                     {GGML_TYPE_BF16, GGML_TYPE_BF16},
                                     {GGML_TYPE_BF16, GGML_TYPE_F32}};

using BinaryFn = ggml_tensor * (*)(ggml_context *, ggml_tensor *, ggml_tensor *);
struct BinaryOp {
    ggml_op op;
    BinaryFn fn, inplace;
    Gen gen_b;  // DIV keeps b away from zero
};
const BinaryOp kBinaryOps[] = {{GGML_OP_ADD, ggml_add, ggml_add_inplace, {}},
                               {GGML_OP_SUB, ggml_sub, ggml_sub_inplace, {}},
                               {GGML_OP_MUL, ggml_mul, ggml_mul_inplace, {}},
                               {GGML_OP_DIV, ggml_div, ggml_div_inplace, Gen::uniform(0.5, 2.0)}};

// Layouts of (a, b): with equal shapes every layout of each; with broadcasting two pairs.
using LayoutPair = std::pair<Layout, Layout>;
const LayoutPair kSameShapeLayouts[] = {{Layout::Contiguous, Layout::Contiguous},
                                        {Layout::Transposed, Layout::Strided},
                                        {Layout::Permuted, Layout::Contiguous},
                                        {Layout::Strided, Layout::Permuted}};
const LayoutPair kBroadcastLayouts[] = {{Layout::Contiguous, Layout::Contiguous},
                                        {Layout::Strided, Layout::Transposed}};

// Shapes of b tiled over a: a's own, one row, one column, one plane per batch, one element.
std::vector<Shape> broadcasts(const Shape & a) {
    std::vector<Shape> out = {a};
    for (const Shape & b :
         {Shape{a[0], 1, 1, 1}, Shape{1, a[1], 1, 1}, Shape{a[0], a[1], 1, a[3]}, Shape{1, 1, 1, 1}}) {
        if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
    }
    return out;
}

std::string layouts(Layout a, Layout b) {
    return std::string("a:") + layout_name(a) + " b:" + layout_name(b);
}

void add_binary(CaseList & list, const BinaryOp & op, TypePair types, const Shape & a_ne, const Shape & b_ne,
                LayoutPair layout, bool inplace, Gen gen_a, Gen gen_b, const std::string & tag) {
    const std::string detail = str(types.a) + "," + str(types.b) + " " + str(a_ne) + " b=" + str(b_ne) + " " +
                               layouts(layout.first, layout.second) + tag;
    list.add(op.op, detail, [=](Graph & g) {
        ggml_tensor * a = g.input(types.a, a_ne, layout.first, gen_a);
        ggml_tensor * b = g.input(types.b, b_ne, layout.second, gen_b);
        return (inplace ? op.inplace : op.fn)(g.ctx(), a, b);
    });
}

void add_binary_cases(CaseList & list) {
    for (const BinaryOp & op : kBinaryOps) {
        for (TypePair types : kBinaryTypes) {
            for (const Shape & a_ne : kShapes) {
                for (const Shape & b_ne : broadcasts(a_ne)) {
                    const auto pairs = b_ne == a_ne ? std::span<const LayoutPair>(kSameShapeLayouts)
                                                    : std::span<const LayoutPair>(kBroadcastLayouts);
                    for (const LayoutPair & layout : pairs) {
                        add_binary(list, op, types, a_ne, b_ne, layout, false, {}, op.gen_b, "");
                    }
                }
            }
            for (const Shape & a_ne : {Shape{7, 3, 1, 1}, Shape{33, 2, 3, 2}}) {
                for (Layout la : {Layout::Contiguous, Layout::Strided}) {
                    add_binary(list, op, types, a_ne, {a_ne[0], 1, 1, 1}, {la, Layout::Contiguous}, true, {},
                               op.gen_b, " inplace");
                }
            }
            if (types.a == types.b) {
                add_binary(list, op, types, {33, 2, 3, 2}, {33, 2, 3, 2}, kSameShapeLayouts[0], false,
                           Gen::special(), Gen::special(), " specials");
            }
        }
    }
}

// Activations evaluated in float lose relative accuracy in their flat tails (1 + tanh(z) cancels
// for gelu at x < -3); a result of a few elements has nothing to average that out, so small shapes
// draw inputs from [-2.5, 2.5] and the tails are exercised by the larger shapes.
Gen narrow_if_small(Gen gen, const Shape & ne) {
    if (ne[0] * ne[1] * ne[2] * ne[3] >= 16 || gen.kind != Gen::Kind::Uniform) return gen;
    return Gen::uniform(std::max(gen.lo, -2.5), std::min(gen.hi, 2.5));
}

// A one-input op over every float dtype, shape and layout.
using MapFn = std::function<ggml_tensor *(ggml_context *, ggml_tensor *)>;
struct MapOp {
    ggml_op op;
    std::string sub;      // UNARY sub-op name, or empty
    std::string variant;  // distinguishes constructors of one op
    MapFn fn;
    Gen gen;
};

void add_map(CaseList & list, const MapOp & m, ggml_type type, const Shape & ne, Layout layout,
             const std::string & tag, Gen gen) {
    const std::string detail = m.variant + str(type) + " " + str(ne) + " " + layout_name(layout) + tag;
    const Gen drawn = narrow_if_small(gen, ne);
    Builder build = [=, fn = m.fn](Graph & g) { return fn(g.ctx(), g.input(type, ne, layout, drawn)); };
    if (m.sub.empty()) {
        list.add(m.op, detail, std::move(build));
    } else {
        list.add_sub(m.op, m.sub, detail, std::move(build));
    }
}

void add_map_cases(CaseList & list, const MapOp & m) {
    for (ggml_type type : kFloatTypes) {
        for (const Shape & ne : kShapes) {
            for (Layout layout : kAllLayouts)
                add_map(list, m, type, ne, layout, "", m.gen);
        }
    }
}

// In-place variants write through a's (possibly strided) view.
void add_inplace_cases(CaseList & list, const MapOp & m) {
    for (ggml_type type : kFloatTypes) {
        for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
            add_map(list, m, type, {33, 2, 3, 2}, layout, " inplace", m.gen);
        }
    }
}

void add_special_cases(CaseList & list, const MapOp & m) {
    for (ggml_type type : kFloatTypes)
        add_map(list, m, type, {33, 2, 3, 2}, Layout::Contiguous, " specials", Gen::special());
}

void add_arith_cases(CaseList & list) {
    const Gen positive = Gen::uniform(0.0, 4.0);
    const MapOp ops[] = {
        {GGML_OP_SCALE,
         "",
         "scale ",
         [](ggml_context * c, ggml_tensor * a) { return ggml_scale(c, a, 0.75f); },
         {}},
        {GGML_OP_SCALE,
         "",
         "bias ",
         [](ggml_context * c, ggml_tensor * a) { return ggml_scale_bias(c, a, 1.5f, -0.25f); },
         {}},
        {GGML_OP_SQR, "", "", ggml_sqr, {}},
        {GGML_OP_SQRT, "", "", ggml_sqrt, positive},
        {GGML_OP_CLAMP,
         "",
         "",
         [](ggml_context * c, ggml_tensor * a) { return ggml_clamp(c, a, -0.5f, 0.25f); },
         {}},
    };
    for (const MapOp & m : ops) {
        add_map_cases(list, m);
        if (m.op != GGML_OP_CLAMP) add_special_cases(list, m);  // NaN through min/max is not specified
    }
    const MapOp inplace[] = {
        {GGML_OP_SCALE,
         "",
         "scale ",
         [](ggml_context * c, ggml_tensor * a) { return ggml_scale_inplace(c, a, -2.0f); },
         {}},
        {GGML_OP_SCALE,
         "",
         "bias ",
         [](ggml_context * c, ggml_tensor * a) { return ggml_scale_bias_inplace(c, a, 0.5f, 1.0f); },
         {}},
        {GGML_OP_SQR, "", "", ggml_sqr_inplace, {}},
        {GGML_OP_SQRT, "", "", ggml_sqrt_inplace, positive},
        {GGML_OP_CLAMP,
         "",
         "",
         [](ggml_context * c, ggml_tensor * a) { return ggml_clamp_inplace(c, a, 0.0f, 0.5f); },
         {}},
    };
    for (const MapOp & m : inplace)
        add_inplace_cases(list, m);
}

void add_unary_cases(CaseList & list) {
    for (int u = 0; u < GGML_UNARY_OP_COUNT; ++u) {
        const auto op = static_cast<ggml_unary_op>(u);
        if (!ref::evaluates(op)) continue;  // no kernel anywhere yet
        const MapFn fn = [op](ggml_context * c, ggml_tensor * a) { return ggml_unary(c, a, op); };
        add_map_cases(list, {GGML_OP_UNARY, ggml_unary_op_name(op), "", fn, Gen::uniform(-6.0, 6.0)});
        const MapFn inplace = [op](ggml_context * c, ggml_tensor * a) {
            return ggml_unary_inplace(c, a, op);
        };
        add_inplace_cases(list,
                          {GGML_OP_UNARY, ggml_unary_op_name(op), "", inplace, Gen::uniform(-6.0, 6.0)});
    }
    // The named constructors build the same nodes as ggml_unary.
    using Named = ggml_tensor * (*)(ggml_context *, ggml_tensor *);
    const std::pair<ggml_unary_op, Named> named[] = {
        {GGML_UNARY_OP_RELU, ggml_relu},       {GGML_UNARY_OP_SILU, ggml_silu},
        {GGML_UNARY_OP_GELU, ggml_gelu},       {GGML_UNARY_OP_GELU_QUICK, ggml_gelu_quick},
        {GGML_UNARY_OP_SIGMOID, ggml_sigmoid}, {GGML_UNARY_OP_TANH, ggml_tanh}};
    for (const auto & [op, fn] : named) {
        add_map(list, {GGML_OP_UNARY, ggml_unary_op_name(op), "named ", fn, {}}, GGML_TYPE_F32, {65, 3, 1, 1},
                Layout::Contiguous, "", Gen::uniform(-6.0, 6.0));
    }
}

void add_glu_cases(CaseList & list) {
    for (int o = 0; o < GGML_GLU_OP_COUNT; ++o) {
        const auto op = static_cast<ggml_glu_op>(o);
        if (!ref::evaluates(op)) continue;  // no kernel anywhere yet
        const std::string sub = ggml_glu_op_name(op);
        for (bool swapped : {false, true}) {
            const MapFn fn = [op, swapped](ggml_context * c, ggml_tensor * a) {
                return ggml_glu(c, a, op, swapped);
            };
            const std::string variant = swapped ? "swapped " : "merged ";
            for (ggml_type type : kFloatTypes) {
                for (const Shape & ne : kShapes) {
                    for (Layout layout : kAllLayouts) {
                        add_map(list, {GGML_OP_GLU, sub, variant, fn, {}}, type,
                                {2 * ne[0], ne[1], ne[2], ne[3]}, layout, "", Gen::uniform(-4.0, 4.0));
                    }
                }
            }
        }
        for (ggml_type type : kFloatTypes) {
            for (const Shape & ne : kShapes) {
                for (auto [la, lb] : kSameShapeLayouts) {
                    list.add_sub(GGML_OP_GLU, sub,
                                 "split " + str(type) + " " + str(ne) + " " + layouts(la, lb),
                                 [=](Graph & g) {
                                     ggml_tensor * a =
                                         g.input(type, ne, la, narrow_if_small(Gen::uniform(-4.0, 4.0), ne));
                                     return ggml_glu_split(g.ctx(), a, g.input(type, ne, lb), op);
                                 });
                }
            }
        }
    }
    // The named constructors.
    using Merged = ggml_tensor * (*)(ggml_context *, ggml_tensor *);
    using Split = ggml_tensor * (*)(ggml_context *, ggml_tensor *, ggml_tensor *);
    const std::tuple<const char *, Merged, Merged, Split> named[] = {
        {"SWIGLU", ggml_swiglu, ggml_swiglu_swapped, ggml_swiglu_split},
        {"GEGLU", ggml_geglu, ggml_geglu_swapped, ggml_geglu_split}};
    for (const auto & [sub, merged, swapped, split] : named) {
        list.add_sub(GGML_OP_GLU, sub, "named merged", [merged](Graph & g) {
            return merged(g.ctx(), g.input(GGML_TYPE_F32, {66, 3, 1, 1}));
        });
        list.add_sub(GGML_OP_GLU, sub, "named swapped", [swapped](Graph & g) {
            return swapped(g.ctx(), g.input(GGML_TYPE_F32, {66, 3, 1, 1}));
        });
        list.add_sub(GGML_OP_GLU, sub, "named split", [split](Graph & g) {
            return split(g.ctx(), g.input(GGML_TYPE_F32, {33, 3, 1, 1}),
                         g.input(GGML_TYPE_F32, {33, 3, 1, 1}));
        });
    }
}

// Perf: F32 tensors of 64 MiB, well beyond the last-level cache.
void add_perf_cases(CaseList & list) {
    const Shape big = {4096, 4096, 1, 1};
    const double n = 4096.0 * 4096.0;
    list.add_perf(GGML_OP_ADD, "perf f32 [4096,4096]", n, [big](Graph & g) {
        return ggml_add(g.ctx(), g.input(GGML_TYPE_F32, big), g.input(GGML_TYPE_F32, big));
    });
    list.add_perf(GGML_OP_MUL, "perf f32 [4096,4096] b=[4096,1]", n, [big](Graph & g) {
        return ggml_mul(g.ctx(), g.input(GGML_TYPE_F32, big), g.input(GGML_TYPE_F32, {4096, 1, 1, 1}));
    });
    list.add_perf(GGML_OP_SCALE, "perf f32 [4096,4096]", n,
                  [big](Graph & g) { return ggml_scale(g.ctx(), g.input(GGML_TYPE_F32, big), 0.5f); });
    list.add_perf(GGML_OP_UNARY, "perf silu f32 [4096,4096]", 4 * n,
                  [big](Graph & g) { return ggml_silu(g.ctx(), g.input(GGML_TYPE_F32, big)); });
    list.add_perf(GGML_OP_GLU, "perf swiglu split f32 [4096,4096]", 5 * n, [big](Graph & g) {
        return ggml_swiglu_split(g.ctx(), g.input(GGML_TYPE_F32, big), g.input(GGML_TYPE_F32, big));
    });
}

}  // namespace

void add_elementwise_cases(CaseList & list) {
    add_binary_cases(list);
    add_arith_cases(list);
    add_unary_cases(list);
    add_glu_cases(list);
    add_perf_cases(list);
}

}  // namespace ggx::ops
