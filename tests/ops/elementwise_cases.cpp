// ggx-ops case table: element-wise ops (ADD, SUB, MUL, DIV, ADD1, ADD_ID, ACC, SET, SCALE, SQR, SQRT,
// LOG, SIN, COS, CLAMP, LEAKY_RELU, FILL, SILU_BACK, UNARY, GLU, OPT_STEP_ADAMW, OPT_STEP_SGD) over
// every float dtype, odd and zero-size shapes, every input layout, broadcasting and in-place.
#include <algorithm>
#include <array>
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

void add_math_cases(CaseList & list) {
    const MapOp ops[] = {
        {GGML_OP_LOG, "", "", ggml_log, Gen::uniform(0.01, 10.0)},
        {GGML_OP_SIN, "", "", ggml_sin, Gen::uniform(-10.0, 10.0)},
        {GGML_OP_COS, "", "", ggml_cos, Gen::uniform(-10.0, 10.0)},
        {GGML_OP_LEAKY_RELU,
         "",
         "",
         [](ggml_context * c, ggml_tensor * a) { return ggml_leaky_relu(c, a, 0.1f, false); },
         {}},
        {GGML_OP_FILL, "", "", [](ggml_context * c, ggml_tensor * a) { return ggml_fill(c, a, -1.25f); }, {}},
    };
    for (const MapOp & m : ops) {
        add_map_cases(list, m);
        add_special_cases(list, m);
    }
    const MapOp inplace[] = {
        {GGML_OP_LOG, "", "", ggml_log_inplace, Gen::uniform(0.01, 10.0)},
        {GGML_OP_SIN, "", "", ggml_sin_inplace, {}},
        {GGML_OP_COS, "", "", ggml_cos_inplace, {}},
        {GGML_OP_LEAKY_RELU,
         "",
         "",
         [](ggml_context * c, ggml_tensor * a) { return ggml_leaky_relu(c, a, 0.5f, true); },
         {}},
        {GGML_OP_FILL,
         "",
         "",
         [](ggml_context * c, ggml_tensor * a) { return ggml_fill_inplace(c, a, 3.0f); },
         {}},
    };
    for (const MapOp & m : inplace)
        add_inplace_cases(list, m);
}

// ADD1 (b of one element, f32 or a's type), SILU_BACK (dy and x of one shape and type) and ADD_ID.
void add_pair_cases(CaseList & list) {
    for (TypePair types : kBinaryTypes) {
        for (const Shape & ne : kShapes) {
            for (auto [la, lb] : kBroadcastLayouts) {
                list.add(GGML_OP_ADD1,
                         str(types.a) + "," + str(types.b) + " " + str(ne) + " " + layouts(la, lb),
                         [=](Graph & g) {
                             return ggml_add1(g.ctx(), g.input(types.a, ne, la),
                                              g.input(types.b, {1, 1, 1, 1}, lb));
                         });
            }
        }
        list.add(GGML_OP_ADD1, str(types.a) + "," + str(types.b) + " inplace", [=](Graph & g) {
            return ggml_add1_inplace(g.ctx(), g.input(types.a, {33, 2, 3, 2}, Layout::Strided),
                                     g.input(types.b, {1, 1, 1, 1}));
        });
    }
    for (ggml_type type : kFloatTypes) {
        for (const Shape & ne : kShapes) {
            for (auto [la, lb] : kSameShapeLayouts) {
                list.add(GGML_OP_SILU_BACK, str(type) + " " + str(ne) + " " + layouts(la, lb),
                         [=](Graph & g) {
                             return ggml_silu_back(g.ctx(), g.input(type, ne, la),
                                                   g.input(type, ne, lb, Gen::uniform(-6.0, 6.0)));
                         });
            }
        }
    }
    // a [E, n_used, tokens], b [E, experts], ids [n_used, tokens] in [0, experts).
    const Shape kAddIdShapes[] = {{1, 1, 1, 1}, {7, 3, 2, 1}, {33, 4, 5, 1}, {130, 2, 3, 1}, {5, 0, 2, 1}};
    for (TypePair types : kBinaryTypes) {
        for (const Shape & ne : kAddIdShapes) {
            for (auto [la, lb] : kBroadcastLayouts) {
                const int64_t experts = 6;
                list.add(GGML_OP_ADD_ID,
                         str(types.a) + "," + str(types.b) + " " + str(ne) + " experts 6 " + layouts(la, lb),
                         [=](Graph & g) {
                             ggml_tensor * a = g.input(types.a, ne, la);
                             ggml_tensor * b = g.input(types.b, {ne[0], experts, 1, 1}, lb);
                             ggml_tensor * ids =
                                 g.input(GGML_TYPE_I32, {ne[1], ne[2], 1, 1}, la, Gen::integer(0, experts));
                             return ggml_add_id(g.ctx(), a, b, ids);
                         });
            }
        }
    }
}

// ACC and SET: b over a region of a given by a's own strides and an element offset, or by a tighter
// row stride (rows of the region overlap no other row of it).
void add_region_cases(CaseList & list) {
    struct Region {
        Shape a, b;
        int64_t row, offset;  // the region's row stride and offset, in elements (row 0: a's ne0)
    };
    const Region regions[] = {{{7, 3, 1, 1}, {7, 3, 1, 1}, 0, 0},     {{16, 5, 3, 1}, {5, 2, 2, 1}, 0, 18},
                              {{33, 2, 3, 2}, {33, 1, 3, 2}, 0, 33},  {{40, 6, 1, 1}, {3, 4, 1, 1}, 9, 5},
                              {{12, 4, 1, 1}, {0, 2, 1, 1}, 0, 0},    {{65, 3, 1, 1}, {20, 1, 1, 1}, 0, 40},
                              {{1, 1, 1, 1}, {1, 1, 1, 1}, 0, 0},     {{9, 5, 4, 3}, {4, 3, 2, 2}, 0, 10},
                              {{128, 2, 1, 1}, {127, 2, 1, 1}, 0, 1}, {{5, 7, 3, 1}, {5, 7, 1, 1}, 0, 35},
                              {{20, 3, 2, 1}, {7, 3, 2, 1}, 7, 13},   {{64, 4, 2, 1}, {1, 1, 1, 1}, 0, 500}};
    const auto build = [](ggml_op op, ggml_type type, const Region & r, Layout lb, bool inplace) {
        return [=](Graph & g) {
            ggml_tensor * a = g.input(type, r.a);
            ggml_tensor * b = g.input(type, r.b, lb, type == GGML_TYPE_I32 ? Gen::integer(-50, 50) : Gen{});
            if (!a || !b) return static_cast<ggml_tensor *>(nullptr);
            const size_t es = ggml_element_size(a), nb1 = r.row ? r.row * es : a->nb[1];
            const size_t offset = static_cast<size_t>(r.offset) * es;
            if (op == GGML_OP_ACC)
                return (inplace ? ggml_acc_inplace : ggml_acc)(g.ctx(), a, b, nb1, a->nb[2], a->nb[3],
                                                               offset);
            return (inplace ? ggml_set_inplace : ggml_set)(g.ctx(), a, b, nb1, a->nb[2], a->nb[3], offset);
        };
    };
    const std::pair<ggml_op, std::vector<ggml_type>> ops[] = {
        {GGML_OP_ACC, {GGML_TYPE_F32}},
        {GGML_OP_SET, {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32}}};
    for (const auto & [op, types] : ops) {
        for (ggml_type type : types) {
            for (const Region & r : regions) {
                for (Layout lb : kAllLayouts) {
                    for (bool inplace : {false, true}) {
                        list.add(op,
                                 str(type) + " a=" + str(r.a) + " b=" + str(r.b) + " row " +
                                     std::to_string(r.row) + " offset " + std::to_string(r.offset) +
                                     " b:" + layout_name(lb) + (inplace ? " inplace" : ""),
                                 build(op, type, r, lb, inplace));
                    }
                }
            }
        }
    }
    // ggml_set_1d and ggml_set_2d take a's strides for the others.
    list.add(GGML_OP_SET, "set_1d f32", [](Graph & g) {
        return ggml_set_1d(g.ctx(), g.input(GGML_TYPE_F32, {50, 1, 1, 1}),
                           g.input(GGML_TYPE_F32, {13, 1, 1, 1}), 7 * sizeof(float));
    });
    list.add(GGML_OP_SET, "set_2d_inplace f16", [](Graph & g) {
        return ggml_set_2d_inplace(g.ctx(), g.input(GGML_TYPE_F16, {20, 6, 1, 1}),
                                   g.input(GGML_TYPE_F16, {4, 3, 1, 1}), 40 * sizeof(ggml_fp16_t),
                                   2 * sizeof(ggml_fp16_t));
    });
}

// Optimizer steps: a flagged as a parameter, the other operands in each layout; v >= 0; hyper-parameters
// drawn from (0.1, 0.9), which keeps AdamW's denominators away from zero.
void add_opt_step_cases(CaseList & list) {
    const Gen hyper = Gen::uniform(0.1, 0.9);
    for (const Shape & ne :
         {Shape{1, 1, 1, 1}, Shape{2, 1, 1, 1}, Shape{5, 1, 1, 1}, Shape{7, 3, 1, 1}, Shape{16, 16, 1, 1},
          Shape{17, 3, 5, 1}, Shape{33, 2, 3, 2}, Shape{64, 1, 1, 3}, Shape{1031, 2, 1, 1}}) {
        for (Layout layout : kAllLayouts) {
            const std::string detail = "f32 " + str(ne) + " " + layout_name(layout);
            list.add(GGML_OP_OPT_STEP_ADAMW, detail, [=](Graph & g) {
                ggml_tensor * a = g.input(GGML_TYPE_F32, ne);  // a leaf: only leaves are parameters
                if (!a) return a;
                ggml_set_param(a);
                return ggml_opt_step_adamw(g.ctx(), a, g.input(GGML_TYPE_F32, ne, layout),
                                           g.input(GGML_TYPE_F32, ne),
                                           g.input(GGML_TYPE_F32, ne, layout, Gen::uniform(0.0, 1.0)),
                                           g.input(GGML_TYPE_F32, {7, 1, 1, 1}, Layout::Contiguous, hyper));
            });
            list.add(GGML_OP_OPT_STEP_SGD, detail, [=](Graph & g) {
                ggml_tensor * a = g.input(GGML_TYPE_F32, ne);  // a leaf: only leaves are parameters
                if (!a) return a;
                ggml_set_param(a);
                return ggml_opt_step_sgd(g.ctx(), a, g.input(GGML_TYPE_F32, ne, layout),
                                         g.input(GGML_TYPE_F32, {2, 1, 1, 1}, Layout::Contiguous, hyper));
            });
        }
    }
}

void add_unary_cases(CaseList & list) {
    for (int u = 0; u < GGML_UNARY_OP_COUNT; ++u) {
        const auto op = static_cast<ggml_unary_op>(u);
        if (!ref::evaluates(op)) continue;        // no kernel anywhere yet
        if (op == GGML_UNARY_OP_XIELU) continue;  // its coefficients come from ggml_xielu, below
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
        {GGML_UNARY_OP_ABS, ggml_abs},
        {GGML_UNARY_OP_SGN, ggml_sgn},
        {GGML_UNARY_OP_NEG, ggml_neg},
        {GGML_UNARY_OP_STEP, ggml_step},
        {GGML_UNARY_OP_TANH, ggml_tanh},
        {GGML_UNARY_OP_ELU, ggml_elu},
        {GGML_UNARY_OP_RELU, ggml_relu},
        {GGML_UNARY_OP_SIGMOID, ggml_sigmoid},
        {GGML_UNARY_OP_GELU, ggml_gelu},
        {GGML_UNARY_OP_GELU_QUICK, ggml_gelu_quick},
        {GGML_UNARY_OP_SILU, ggml_silu},
        {GGML_UNARY_OP_HARDSWISH, ggml_hardswish},
        {GGML_UNARY_OP_HARDSIGMOID, ggml_hardsigmoid},
        {GGML_UNARY_OP_EXP, ggml_exp},
        {GGML_UNARY_OP_EXPM1, ggml_expm1},
        {GGML_UNARY_OP_SOFTPLUS, ggml_softplus},
        {GGML_UNARY_OP_GELU_ERF, ggml_gelu_erf},
        {GGML_UNARY_OP_FLOOR, ggml_floor},
        {GGML_UNARY_OP_CEIL, ggml_ceil},
        {GGML_UNARY_OP_ROUND, ggml_round},
        {GGML_UNARY_OP_TRUNC, ggml_trunc},
        {GGML_UNARY_OP_ABS, ggml_abs_inplace},
        {GGML_UNARY_OP_EXP, ggml_exp_inplace},
        {GGML_UNARY_OP_ROUND, ggml_round_inplace},
    };
    for (const auto & [op, fn] : named) {
        add_map(
            list, {GGML_OP_UNARY, ggml_unary_op_name(op), "named ", fn, {}}, GGML_TYPE_F32, {65, 3, 1, 1},
            Layout::Contiguous,
            fn == ggml_abs_inplace || fn == ggml_exp_inplace || fn == ggml_round_inplace ? " inplace" : "",
            Gen::uniform(-6.0, 6.0));
    }
    // XIELU's coefficients: ggml_xielu(a, alpha_n, alpha_p, beta, eps) as a model uses them, and others.
    const std::array<float, 4> coefficients[] = {{0.8f, 0.8f, 0.5f, -1e-6f}, {-1.0f, 2.0f, 0.25f, -0.5f}};
    for (const auto & [an, ap, beta, eps] : coefficients) {
        const MapFn fn = [=](ggml_context * c, ggml_tensor * a) {
            return ggml_xielu(c, a, an, ap, beta, eps);
        };
        add_map_cases(list, {GGML_OP_UNARY, "XIELU", format("%g,%g,%g,%g ", an, ap, beta, eps), fn,
                             Gen::uniform(-6.0, 6.0)});
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
        {"REGLU", ggml_reglu, ggml_reglu_swapped, ggml_reglu_split},
        {"SWIGLU", ggml_swiglu, ggml_swiglu_swapped, ggml_swiglu_split},
        {"GEGLU", ggml_geglu, ggml_geglu_swapped, ggml_geglu_split},
        {"GEGLU_ERF", ggml_geglu_erf, ggml_geglu_erf_swapped, ggml_geglu_erf_split},
        {"GEGLU_QUICK", ggml_geglu_quick, ggml_geglu_quick_swapped, ggml_geglu_quick_split}};
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

// SWIGLU_OAI with its alpha and limit (ggml_glu gives both 0), merged (b NULL) and split; the inputs
// reach beyond the limit so that both clamps act.
void add_swiglu_oai_cases(CaseList & list) {
    const std::pair<float, float> params[] = {{1.702f, 7.0f}, {1.0f, 1.5f}};
    for (const auto & [alpha, limit] : params) {
        const std::string tag = format("alpha %g limit %g ", alpha, limit);
        for (ggml_type type : kFloatTypes) {
            for (const Shape & ne : kShapes) {
                for (auto [la, lb] : kSameShapeLayouts) {
                    list.add_sub(
                        GGML_OP_GLU, "SWIGLU_OAI",
                        tag + "split " + str(type) + " " + str(ne) + " " + layouts(la, lb), [=](Graph & g) {
                            const Gen gen = Gen::uniform(-2.0 * limit, 2.0 * limit);
                            return ggml_swiglu_oai(g.ctx(), g.input(type, ne, la, narrow_if_small(gen, ne)),
                                                   g.input(type, ne, lb, gen), alpha, limit);
                        });
                }
                list.add_sub(
                    GGML_OP_GLU, "SWIGLU_OAI", tag + "merged " + str(type) + " " + str(ne), [=](Graph & g) {
                        const Gen gen = Gen::uniform(-2.0 * limit, 2.0 * limit);
                        return ggml_swiglu_oai(
                            g.ctx(), g.input(type, {2 * ne[0], ne[1], ne[2], ne[3]}, Layout::Strided, gen),
                            nullptr, alpha, limit);
                    });
            }
        }
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
    list.add_perf(GGML_OP_UNARY, "perf gelu_erf f32 [4096,4096]", 20 * n,
                  [big](Graph & g) { return ggml_gelu_erf(g.ctx(), g.input(GGML_TYPE_F32, big)); });
    list.add_perf(GGML_OP_UNARY, "perf exp f32 [4096,4096]", 10 * n,
                  [big](Graph & g) { return ggml_exp(g.ctx(), g.input(GGML_TYPE_F32, big)); });
}

}  // namespace

void add_elementwise_cases(CaseList & list) {
    add_binary_cases(list);
    add_arith_cases(list);
    add_math_cases(list);
    add_pair_cases(list);
    add_region_cases(list);
    add_opt_step_cases(list);
    add_unary_cases(list);
    add_glu_cases(list);
    add_swiglu_oai_cases(list);
    add_perf_cases(list);
}

}  // namespace ggx::ops
