// CPU kernels of the element-wise, reduction, copy and shape-op families against the oracle, for
// F32/F16/BF16 (and integer / quantized types where the op takes them), broadcasting, permuted and
// strided views, odd sizes, in-place variants and 1..3 threads.
//
// NMSE bounds. The kernels compute in F32 (sums in double) and round once to the result type; the
// oracle computes in double and rounds once.
//  - exact ops (copies, conversions, quantization, shape ops, argmax): identical bits, bound 0;
//  - F32 results of arithmetic: a few F32 ulps per element (transcendentals use Highway's
//    polynomials, ~2 ulp), NMSE ~1e-13 at most: bound 1e-10;
//  - F16 / BF16 results: the F32 result and the double result round to different neighbours only
//    near a rounding boundary, one ulp (2^-11 resp. 2^-8 relative) for a small fraction of the
//    elements: bounds 1e-6 resp. 1e-4.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cpu/kernel.h"
#include "reference/reference.h"
#include "support/test_util.h"

namespace {

using namespace ggx::test;

constexpr uint32_t kSeed = 1234;

double arithmetic_bound(ggml_type type) {
    switch (type) {
        case GGML_TYPE_F16:
            return 1e-6;
        case GGML_TYPE_BF16:
            return 1e-4;
        default:
            return 1e-10;
    }
}

std::string shape_str(const Shape & ne) {
    std::string text = "[";
    for (size_t i = 0; i < ne.size(); ++i) {
        if (i) text += ',';
        text += std::to_string(ne[i]);
    }
    text += ']';
    return text;
}

// Fills t with uniform values in [lo, hi) (rounded to t's type by write_tensor).
ggml_tensor * fill(ggml_tensor * t, Rng & rng, double lo = -2.0, double hi = 2.0) {
    std::vector<double> values(static_cast<size_t>(ggml_nelements(t)));
    for (double & v : values)
        v = rng.uniform(lo, hi);
    ggx::ref::write_tensor(t, values);
    return t;
}

ggml_tensor * input(ggml_context * ctx, Rng & rng, ggml_type type, const Shape & ne, double lo = -2.0,
                    double hi = 2.0) {
    return fill(ggml_new_tensor(ctx, type, 4, ne.data()), rng, lo, hi);
}

// A non-contiguous view of logical shape ne: storage of another shape, permuted (2, 0, 3, 1).
ggml_tensor * permuted_input(ggml_context * ctx, Rng & rng, ggml_type type, const Shape & ne,
                             double lo = -2.0, double hi = 2.0) {
    constexpr int axes[4] = {2, 0, 3, 1};
    const Shape storage = {ne[axes[0]], ne[axes[1]], ne[axes[2]], ne[axes[3]]};
    ggml_tensor * t = input(ctx, rng, type, storage, lo, hi);
    return ggml_permute(ctx, t, axes[0], axes[1], axes[2], axes[3]);
}

// Builds the graph in a fresh context (same random inputs every time), evaluates the oracle first
// (in-place results overwrite their inputs), then computes it on the CPU with 1, 2 and 3 threads.
void expect_matches(const Build & build, double bound, const std::string & what) {
    for (int n_threads : {1, 2, 3}) {
        SCOPED_TRACE(what + ", " + std::to_string(n_threads) + " thread(s)");
        std::unique_ptr<ggml_context, ContextDeleter> ctx(ggml_init({64u << 20, nullptr, false}));
        ASSERT_NE(ctx, nullptr);
        Rng rng(kSeed);
        SCOPED_TRACE(rng.trace());
        ggml_tensor * out = build(ctx.get(), rng);
        ASSERT_NE(out, nullptr) << ggml_get_error(ctx.get());
        ggml_cgraph * graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, out);
        ggx::ref::Evaluator oracle;
        oracle.compute(graph);
        const std::vector<double> expected = oracle.values(out);
        ggml_backend_cpu_set_n_threads(cpu_backend(), n_threads);
        ASSERT_EQ(ggml_backend_graph_compute(cpu_backend(), graph), GGML_STATUS_SUCCESS);
        const std::vector<double> actual = ggx::ref::read_tensor(out);
        const double error = ggx::ref::nmse(actual, expected);
        EXPECT_LE(error, bound);
    }
}

// ---- ADD, SUB, MUL, DIV -------------------------------------------------------------------------

using BinaryFn = ggml_tensor * (*)(ggml_context *, ggml_tensor *, ggml_tensor *);

struct BinaryCase {
    const char * name;
    BinaryFn fn, fn_inplace;
};
constexpr BinaryCase kBinaryOps[] = {
    {"add", ggml_add, ggml_add_inplace},
    {"sub", ggml_sub, ggml_sub_inplace},
    {"mul", ggml_mul, ggml_mul_inplace},
    {"div", ggml_div, ggml_div_inplace},
};

// Operand b keeps away from zero so that DIV stays well-conditioned.
ggml_tensor * divisor(ggml_context * ctx, Rng & rng, ggml_type type, const Shape & ne, bool permuted) {
    return permuted ? permuted_input(ctx, rng, type, ne, 0.5, 2.0) : input(ctx, rng, type, ne, 0.5, 2.0);
}

TEST(CpuBinary, BroadcastsEveryOperandShapeAndType) {
    const std::pair<Shape, Shape> shapes[] = {
        {{1, 1, 1, 1}, {1, 1, 1, 1}},    {{17, 3, 2, 2}, {17, 3, 2, 2}},     {{17, 3, 2, 2}, {1, 3, 1, 2}},
        {{17, 3, 2, 2}, {17, 1, 2, 1}},  {{33, 5, 1, 1}, {1, 1, 1, 1}},      {{257, 3, 1, 1}, {257, 1, 1, 1}},
        {{3000, 2, 1, 1}, {3, 1, 1, 1}}, {{3000, 2, 1, 1}, {1500, 2, 1, 1}},
    };
    for (const BinaryCase & op : kBinaryOps)
        for (ggml_type ta : kFloatTypes) {
            std::vector<ggml_type> b_types = {ta};
            if (ta != GGML_TYPE_F32) b_types.push_back(GGML_TYPE_F32);
            for (ggml_type tb : b_types)
                for (const auto & [na, nb] : shapes) {
                    const Build build = [&](ggml_context * ctx, Rng & rng) {
                        return op.fn(ctx, input(ctx, rng, ta, na), divisor(ctx, rng, tb, nb, false));
                    };
                    expect_matches(build, arithmetic_bound(ta),
                                   std::string(op.name) + " " + ggml_type_name(ta) + " " + shape_str(na) +
                                       " by " + ggml_type_name(tb) + " " + shape_str(nb));
                }
        }
}

TEST(CpuBinary, ReadsPermutedOperandsAndWritesInPlace) {
    const Shape na = {7, 5, 3, 2}, nb = {7, 1, 3, 1};
    for (const BinaryCase & op : kBinaryOps)
        for (ggml_type ta : kFloatTypes) {
            const std::string what = std::string(op.name) + " " + ggml_type_name(ta);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return op.fn(ctx, permuted_input(ctx, rng, ta, na), divisor(ctx, rng, ta, nb, true));
                },
                arithmetic_bound(ta), what + " permuted");
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return op.fn_inplace(ctx, input(ctx, rng, ta, na),
                                         divisor(ctx, rng, GGML_TYPE_F32, nb, false));
                },
                arithmetic_bound(ta), what + " in place");
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return op.fn_inplace(ctx, permuted_input(ctx, rng, ta, na),
                                         divisor(ctx, rng, ta, na, true));
                },
                arithmetic_bound(ta), what + " in place, permuted");
        }
}

// ---- SCALE, SQR, SQRT, CLAMP, UNARY ---------------------------------------------------------------

struct MapCase {
    const char * name;
    std::function<ggml_tensor *(ggml_context *, ggml_tensor *, bool inplace)> apply;
    double lo = -6.0, hi = 6.0;
};

std::vector<MapCase> map_cases() {
    std::vector<MapCase> cases = {
        {"scale", [](ggml_context * c, ggml_tensor * a,
                     bool ip) { return (ip ? ggml_scale_inplace : ggml_scale)(c, a, 0.37f); }},
        {"scale_bias",
         [](ggml_context * c, ggml_tensor * a, bool ip) {
             return (ip ? ggml_scale_bias_inplace : ggml_scale_bias)(c, a, -1.5f, 0.25f);
         }},
        {"sqr",
         [](ggml_context * c, ggml_tensor * a, bool ip) { return (ip ? ggml_sqr_inplace : ggml_sqr)(c, a); }},
        {"sqrt",
         [](ggml_context * c, ggml_tensor * a, bool ip) {
             return (ip ? ggml_sqrt_inplace : ggml_sqrt)(c, a);
         },
         -0.5, 9.0},
        {"clamp", [](ggml_context * c, ggml_tensor * a,
                     bool ip) { return (ip ? ggml_clamp_inplace : ggml_clamp)(c, a, -0.7f, 1.1f); }},
    };
    for (const ggml_unary_op u : kUnaryOps) {
        cases.push_back({ggml_unary_op_name(u), [u](ggml_context * c, ggml_tensor * a, bool ip) {
                             return (ip ? ggml_unary_inplace : ggml_unary)(c, a, u);
                         }});
    }
    // ggml_unary gives XIELU zero coefficients; ggml_xielu has no in-place form.
    cases.push_back({"xielu coefficients", [](ggml_context * c, ggml_tensor * a, bool) {
                         return ggml_xielu(c, a, 0.8f, 0.8f, 0.5f, -1e-6f);
                     }});
    cases.push_back(
        {"log",
         [](ggml_context * c, ggml_tensor * a, bool ip) { return (ip ? ggml_log_inplace : ggml_log)(c, a); },
         0.01, 9.0});
    cases.push_back({"sin", [](ggml_context * c, ggml_tensor * a, bool ip) {
                         return (ip ? ggml_sin_inplace : ggml_sin)(c, a);
                     }});
    cases.push_back({"cos", [](ggml_context * c, ggml_tensor * a, bool ip) {
                         return (ip ? ggml_cos_inplace : ggml_cos)(c, a);
                     }});
    cases.push_back({"leaky_relu", [](ggml_context * c, ggml_tensor * a, bool ip) {
                         return ggml_leaky_relu(c, a, 0.2f, ip);
                     }});
    cases.push_back({"fill", [](ggml_context * c, ggml_tensor * a, bool ip) {
                         return (ip ? ggml_fill_inplace : ggml_fill)(c, a, 0.3f);
                     }});
    return cases;
}

TEST(CpuMap, MatchesTheOracleForEveryTypeAndLayout) {
    const Shape shapes[] = {{1, 1, 1, 1}, {3, 5, 1, 1}, {33, 17, 2, 1}, {2500, 3, 1, 1}};
    for (const MapCase & op : map_cases())
        for (ggml_type type : kFloatTypes) {
            const std::string what = std::string(op.name) + " " + ggml_type_name(type);
            for (const Shape & ne : shapes)
                expect_matches(
                    [&](ggml_context * ctx, Rng & rng) {
                        return op.apply(ctx, input(ctx, rng, type, ne, op.lo, op.hi), false);
                    },
                    arithmetic_bound(type), what + " " + shape_str(ne));
            const Shape ne = {17, 5, 3, 2};
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return op.apply(ctx, permuted_input(ctx, rng, type, ne, op.lo, op.hi), false);
                },
                arithmetic_bound(type), what + " permuted");
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return op.apply(ctx, input(ctx, rng, type, ne, op.lo, op.hi), true);
                },
                arithmetic_bound(type), what + " in place");
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return op.apply(ctx, permuted_input(ctx, rng, type, ne, op.lo, op.hi), true);
                },
                arithmetic_bound(type), what + " in place, permuted");
        }
}

TEST(CpuMap, HandlesInfinitiesNaNsAndSaturation) {
    const double inf = std::numeric_limits<double>::infinity(),
                 nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> values = {0.0,   -0.0,   1e-30, -1e-30, 0.5,  -0.5,  9.0,   -9.0,
                                        20.0,  -20.0,  88.0,  -88.0,  89.0, -89.0, 100.0, -100.0,
                                        104.0, -104.0, 110.0, -110.0, 1e30, -1e30, inf,   -inf,
                                        nan,   3.0,    -3.0,  1.0,    -1.0};
    for (const MapCase & op : map_cases()) {
        expect_matches(
            [&](ggml_context * ctx, Rng &) {
                ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, static_cast<int64_t>(values.size()));
                ggx::ref::write_tensor(a, values);
                return op.apply(ctx, a, false);
            },
            1e-10, std::string(op.name) + " special values");
    }
}

// ---- GLU --------------------------------------------------------------------------------------------

TEST(CpuGlu, MergedSwappedAndSplitForms) {
    const Shape shapes[] = {{2, 1, 1, 1}, {34, 3, 1, 1}, {66, 5, 2, 1}, {3000, 2, 1, 1}};
    for (const ggml_glu_op g : kGluOps)
        for (ggml_type type : kFloatTypes) {
            const std::string what = std::string(ggml_glu_op_name(g)) + " " + ggml_type_name(type);
            for (const Shape & ne : shapes)
                for (bool swapped : {false, true}) {
                    expect_matches(
                        [&](ggml_context * ctx, Rng & rng) {
                            return ggml_glu(ctx, input(ctx, rng, type, ne, -5.0, 5.0), g, swapped);
                        },
                        arithmetic_bound(type), what + (swapped ? " swapped " : " ") + shape_str(ne));
                }
            const Shape ne = {10, 3, 4, 2};
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return ggml_glu(ctx, permuted_input(ctx, rng, type, ne, -5.0, 5.0), g, true);
                },
                arithmetic_bound(type), what + " merged, permuted");
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return ggml_glu_split(ctx, input(ctx, rng, type, {1300, 3, 1, 1}, -5.0, 5.0),
                                          input(ctx, rng, type, {1300, 3, 1, 1}), g);
                },
                arithmetic_bound(type), what + " split");
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return ggml_glu_split(ctx, permuted_input(ctx, rng, type, ne, -5.0, 5.0),
                                          permuted_input(ctx, rng, type, ne), g);
                },
                arithmetic_bound(type), what + " split, permuted");
        }
}

// ---- SUM, SUM_ROWS, MEAN, ARGMAX ----------------------------------------------------------------------

using ReduceFn = ggml_tensor * (*)(ggml_context *, ggml_tensor *);

TEST(CpuReduce, SumsRowsAndMeansEveryTypeAndLayout) {
    const std::pair<const char *, ReduceFn> ops[] = {
        {"sum", ggml_sum}, {"sum_rows", ggml_sum_rows}, {"mean", ggml_mean}};
    const Shape shapes[] = {{1, 1, 1, 1}, {17, 3, 1, 1}, {257, 33, 2, 1}, {5000, 3, 1, 2}};
    for (const auto & [name, fn] : ops)
        for (ggml_type type : kFloatTypes) {
            const std::string what = std::string(name) + " " + ggml_type_name(type);
            for (const Shape & ne : shapes)
                expect_matches(
                    [&](ggml_context * ctx, Rng & rng) { return fn(ctx, input(ctx, rng, type, ne)); },
                    arithmetic_bound(type), what + " " + shape_str(ne));
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return fn(ctx, permuted_input(ctx, rng, type, {9, 4, 3, 2}));
                },
                arithmetic_bound(type), what + " permuted");
        }
}

// Long rows of values with a large common offset: an F32 accumulator would lose several digits.
TEST(CpuReduce, LongRowsStayAccurate) {
    const std::pair<const char *, ReduceFn> ops[] = {
        {"sum", ggml_sum}, {"sum_rows", ggml_sum_rows}, {"mean", ggml_mean}};
    for (const auto & [name, fn] : ops)
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return fn(ctx, input(ctx, rng, GGML_TYPE_F32, {300000, 2, 1, 1}, 1e3, 1e3 + 1.0));
            },
            1e-12, std::string(name) + " long rows");
    // Cancellation: the row sums are tiny compared to the elements.
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            ggml_tensor * a = input(ctx, rng, GGML_TYPE_F32, {100000, 3, 1, 1}, -1e4, 1e4);
            return ggml_sum_rows(ctx, a);
        },
        1e-10, "sum_rows cancellation");
}

TEST(CpuReduce, ArgmaxFindsTheFirstMaximum) {
    // Values on a coarse grid so that ties are common.
    expect_matches(
        [](ggml_context * ctx, Rng & rng) {
            ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 37, 41);
            std::vector<double> v(37 * 41);
            for (double & x : v)
                x = std::round(rng.uniform(-3.0, 3.0));
            ggx::ref::write_tensor(a, v);
            return ggml_argmax(ctx, a);
        },
        0.0, "argmax ties");
    expect_matches(
        [](ggml_context * ctx, Rng & rng) {
            return ggml_argmax(ctx, input(ctx, rng, GGML_TYPE_F32, {3000, 5, 1, 1}));
        },
        0.0, "argmax long rows");
    expect_matches(
        [](ggml_context * ctx, Rng & rng) {
            return ggml_argmax(ctx, ggml_transpose(ctx, input(ctx, rng, GGML_TYPE_F32, {6, 17, 1, 1})));
        },
        0.0, "argmax transposed");
    expect_matches(
        [](ggml_context * ctx, Rng & rng) {
            return ggml_argmax(ctx, input(ctx, rng, GGML_TYPE_F32, {1, 3, 1, 1}));
        },
        0.0, "argmax single column");
    // NaN is never greater: skipped, except at index 0 where it stays the answer.
    expect_matches(
        [](ggml_context * ctx, Rng &) {
            const double nan = std::numeric_limits<double>::quiet_NaN(),
                         inf = std::numeric_limits<double>::infinity();
            ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 4);
            ggx::ref::write_tensor(
                a, std::vector<double>{1, nan, 3, 2, nan, 5, 7, 1, -inf, -inf, -inf, nan, 0, inf, nan, inf});
            return ggml_argmax(ctx, a);
        },
        0.0, "argmax NaN");
}

// Equal values keep their index order in either direction; NaNs go last.
TEST(CpuReduce, ArgsortIsStableAndPutsNaNLast) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> values = {2, nan, 1, 2, 0, 1, nan, 2};
    const std::pair<ggml_sort_order, std::vector<float>> orders[] = {
        {GGML_SORT_ORDER_ASC, {4, 2, 5, 0, 3, 7, 1, 6}}, {GGML_SORT_ORDER_DESC, {0, 3, 7, 2, 5, 4, 1, 6}}};
    for (const auto & [order, expected] : orders) {
        for (int n_threads : {1, 3}) {
            Context ctx(ggml_init({1 << 20, nullptr, false}));
            ggml_tensor * a =
                ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, static_cast<int64_t>(values.size()));
            ggx::ref::write_tensor(a, values);
            ggml_tensor * sorted = ggml_argsort(ctx.get(), a, order);
            ggml_tensor * top = ggml_top_k(ctx.get(), a, 3);
            ggml_cgraph * graph = ggml_new_graph(ctx.get());
            ggml_build_forward_expand(graph, sorted);
            ggml_build_forward_expand(graph, top);
            ggml_backend_cpu_set_n_threads(cpu_backend(), n_threads);
            ASSERT_EQ(ggml_backend_graph_compute(cpu_backend(), graph), GGML_STATUS_SUCCESS);
            const std::vector<double> got = ggx::ref::read_tensor(sorted);
            EXPECT_EQ(std::vector<float>(got.begin(), got.end()), expected) << order;
            const std::vector<double> top_got = ggx::ref::read_tensor(top);
            EXPECT_EQ(top_got, (std::vector<double>{0, 3, 7}));
        }
    }
}

// AdamW updates the parameter and, in place, its moments m and v, as the oracle does.
TEST(CpuOptimizer, AdamwUpdatesTheMoments) {
    for (int n_threads : {1, 3}) {
        Context ctx(ggml_init({1 << 20, nullptr, false}));
        Rng rng(kSeed);
        const Shape ne = {37, 5, 2, 1};
        ggml_tensor * a = input(ctx.get(), rng, GGML_TYPE_F32, ne);
        ggml_set_param(a);
        ggml_tensor * m = input(ctx.get(), rng, GGML_TYPE_F32, ne);
        ggml_tensor * v = input(ctx.get(), rng, GGML_TYPE_F32, ne, 0.0, 1.0);
        ggml_tensor * hyper = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 7);
        ggx::ref::write_tensor(
            hyper, std::vector<double>{1e-3, 0.9, 0.999, 1e-8, 0.01, 1 / (1 - 0.9), 1 / (1 - 0.999)});
        ggml_tensor * step =
            ggml_opt_step_adamw(ctx.get(), a, input(ctx.get(), rng, GGML_TYPE_F32, ne), m, v, hyper);
        ASSERT_NE(step, nullptr) << ggml_get_error(ctx.get());
        ggml_cgraph * graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, step);
        ggx::ref::Evaluator oracle;
        oracle.compute(graph);
        ggml_backend_cpu_set_n_threads(cpu_backend(), n_threads);
        ASSERT_EQ(ggml_backend_graph_compute(cpu_backend(), graph), GGML_STATUS_SUCCESS);
        for (const ggml_tensor * t : {a, m, v})
            EXPECT_LE(ggx::ref::nmse(ggx::ref::read_tensor(t), oracle.values(t)), 1e-10) << t->name;
    }
}

// ---- DUP, CONT, CPY -------------------------------------------------------------------------------------

TEST(CpuCopy, DupAndContOfPermutedViewsOfEveryType) {
    const ggml_type types[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16,
                               GGML_TYPE_I8,  GGML_TYPE_I16, GGML_TYPE_I32};
    for (ggml_type type : types) {
        const std::string what = ggml_type_name(type);
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_dup(ctx, permuted_input(ctx, rng, type, {7, 5, 3, 2}, -100, 100));
            },
            0.0, what + " dup permuted");
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_cont(ctx, permuted_input(ctx, rng, type, {33, 1, 3, 4}, -100, 100));
            },
            0.0, what + " cont permuted");
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_cont_4d(ctx, permuted_input(ctx, rng, type, {6, 4, 5, 1}, -100, 100), 10, 12, 1,
                                    1);
            },
            0.0, what + " cont_4d reshaped");
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_cont(ctx, ggml_transpose(ctx, input(ctx, rng, type, {37, 50, 2, 1}, -100, 100)));
            },
            0.0, what + " cont transposed");
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_dup(ctx, input(ctx, rng, type, {100003, 1, 1, 1}, -100, 100));
            },
            0.0, what + " dup contiguous");
    }
    for (ggml_type type : {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0})
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_dup(ctx, input(ctx, rng, type, {64, 3, 2, 1}));
            },
            0.0, std::string(ggml_type_name(type)) + " dup");
}

TEST(CpuCopy, CastsBetweenFloatAndQuantizedTypes) {
    const ggml_type to_types[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0,
                                  GGML_TYPE_Q4_0};
    for (ggml_type from : kFloatTypes)
        for (ggml_type to : to_types) {
            const std::string what = std::string(ggml_type_name(from)) + " -> " + ggml_type_name(to);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return ggml_cast(ctx, input(ctx, rng, from, {64, 3, 2, 1}), to);
                },
                0.0, what);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return ggml_cast(ctx, permuted_input(ctx, rng, from, {96, 3, 2, 2}), to);
                },
                0.0, what + " permuted");
        }
    for (ggml_type from : {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0}) {
        const std::string what = std::string(ggml_type_name(from)) + " -> f32";
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_cast(ctx, input(ctx, rng, from, {128, 3, 2, 1}), GGML_TYPE_F32);
            },
            0.0, what);
        // Rows of dense blocks with gaps between them.
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                ggml_tensor * wide = input(ctx, rng, from, {96, 5, 1, 1});
                ggml_tensor * view = ggml_view_2d(ctx, wide, 64, 5, wide->nb[1], ggml_row_size(from, 32));
                return ggml_cast(ctx, view, GGML_TYPE_F32);
            },
            0.0, what + " strided rows");
    }
}

TEST(CpuCopy, CopiesIntoDestinationsOfAnotherShapeOrLayout) {
    const auto zeros = [](ggml_context * ctx, ggml_type type, const Shape & ne) {
        ggml_tensor * t = ggml_new_tensor(ctx, type, 4, ne.data());
        ggx::ref::write_tensor(t, std::vector<double>(static_cast<size_t>(ggml_nelements(t)), 0.0));
        return t;
    };
    // Flat order: a permuted [8, 6] source into a [12, 4] destination.
    for (ggml_type from : kFloatTypes)
        for (ggml_type to : kFloatTypes)
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return ggml_cpy(ctx, permuted_input(ctx, rng, from, {8, 6, 1, 1}),
                                    zeros(ctx, to, {12, 4, 1, 1}));
                },
                0.0, std::string("cpy reshaped ") + ggml_type_name(from) + " -> " + ggml_type_name(to));
    // Into a transposed view of the destination.
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            ggml_tensor * b = zeros(ctx, GGML_TYPE_F32, {6, 8, 1, 1});
            return ggml_cpy(ctx, input(ctx, rng, GGML_TYPE_F16, {8, 6, 1, 1}), ggml_transpose(ctx, b));
        },
        0.0, "cpy into a transposed view");
    // Into a strided slice (every other row) of a larger destination.
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            ggml_tensor * b = zeros(ctx, GGML_TYPE_BF16, {9, 10, 1, 1});
            ggml_tensor * view = ggml_view_2d(ctx, b, 9, 5, 2 * b->nb[1], b->nb[1]);
            return ggml_cpy(ctx, permuted_input(ctx, rng, GGML_TYPE_F32, {5, 9, 1, 1}), view);
        },
        0.0, "cpy into a strided slice");
    // Quantized destination rows hold elements of several source rows, and back.
    for (ggml_type q : {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0}) {
        const std::string name = ggml_type_name(q);
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_cpy(ctx, permuted_input(ctx, rng, GGML_TYPE_F32, {16, 8, 1, 1}),
                                zeros(ctx, q, {64, 2, 1, 1}));
            },
            0.0, "cpy f32 -> " + name + " reshaped");
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                ggml_tensor * b = zeros(ctx, GGML_TYPE_F32, {16, 8, 1, 1});
                return ggml_cpy(ctx, input(ctx, rng, q, {64, 2, 1, 1}), ggml_transpose(ctx, b));
            },
            0.0, "cpy " + name + " -> f32 transposed");
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                ggml_tensor * b = zeros(ctx, q, {96, 4, 1, 1});
                ggml_tensor * view = ggml_view_2d(ctx, b, 32, 4, b->nb[1], ggml_row_size(q, 64));
                return ggml_cpy(ctx, input(ctx, rng, q, {64, 2, 1, 1}), view);
            },
            0.0, "cpy " + name + " -> " + name + " reshaped, strided");
    }
    for (ggml_type type : {GGML_TYPE_I8, GGML_TYPE_I32})
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_cpy(ctx, permuted_input(ctx, rng, type, {5, 3, 2, 1}, -100, 100),
                                zeros(ctx, type, {3, 10, 1, 1}));
            },
            0.0, std::string("cpy ") + ggml_type_name(type));
}

// F32 <-> F64 only: widening is exact, narrowing rounds once to nearest even; F64 copies of any layout
// move 8-byte units.
TEST(CpuCopy, ConvertsBetweenF32AndF64) {
    const auto zeros = [](ggml_context * ctx, ggml_type type, const Shape & ne) {
        ggml_tensor * t = ggml_new_tensor(ctx, type, 4, ne.data());
        ggx::ref::write_tensor(t, std::vector<double>(static_cast<size_t>(ggml_nelements(t)), 0.0));
        return t;
    };
    for (const auto & [from, to] : {std::pair{GGML_TYPE_F32, GGML_TYPE_F64}, std::pair{GGML_TYPE_F64, GGML_TYPE_F32},
                                    std::pair{GGML_TYPE_F64, GGML_TYPE_F64}}) {
        const std::string what = std::string(ggml_type_name(from)) + " -> " + ggml_type_name(to);
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_cast(ctx, input(ctx, rng, from, {96, 3, 2, 2}, -1e6, 1e6), to);
            },
            0.0, "cast " + what);
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_cpy(ctx, permuted_input(ctx, rng, from, {8, 6, 1, 1}), zeros(ctx, to, {12, 4, 1, 1}));
            },
            0.0, "cpy permuted, reshaped " + what);
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                ggml_tensor * b = zeros(ctx, to, {6, 8, 1, 1});
                return ggml_cpy(ctx, input(ctx, rng, from, {8, 6, 1, 1}), ggml_transpose(ctx, b));
            },
            0.0, "cpy into a transposed view " + what);
    }
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            return ggml_cont(ctx, ggml_transpose(ctx, input(ctx, rng, GGML_TYPE_F64, {40, 24, 1, 1})));
        },
        0.0, "cont of a transposed f64");
}

// ---- REPEAT, CONCAT, PAD, UPSCALE, TIMESTEP_EMBEDDING
// ------------------------------------------------------

TEST(CpuLayout, RepeatTilesEveryDimension) {
    for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32}) {
        const std::string what = std::string("repeat ") + ggml_type_name(type);
        const auto shape_of = [](ggml_context * ctx, const Shape & ne) {
            return ggml_new_tensor(ctx, GGML_TYPE_F32, 4, ne.data());
        };
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_repeat(ctx, input(ctx, rng, type, {3, 1, 2, 1}, -50, 50),
                                   shape_of(ctx, {6, 4, 2, 3}));
            },
            0.0, what);
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_repeat(ctx, permuted_input(ctx, rng, type, {5, 2, 3, 2}, -50, 50),
                                   shape_of(ctx, {15, 4, 3, 4}));
            },
            0.0, what + " permuted");
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_repeat(ctx, input(ctx, rng, type, {1, 1, 1, 1}, -50, 50),
                                   shape_of(ctx, {17, 1, 1, 1}));
            },
            0.0, what + " scalar");
    }
}

TEST(CpuLayout, ConcatAlongEveryDimension) {
    for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_BF16, GGML_TYPE_I32})
        for (int dim = 0; dim < 4; ++dim) {
            Shape na = {4, 3, 2, 2}, nb = na;
            nb[dim] = 5;
            const std::string what =
                std::string("concat ") + ggml_type_name(type) + " dim " + std::to_string(dim);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return ggml_concat(ctx, input(ctx, rng, type, na, -50, 50),
                                       input(ctx, rng, type, nb, -50, 50), dim);
                },
                0.0, what);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return ggml_concat(ctx, permuted_input(ctx, rng, type, na, -50, 50),
                                       permuted_input(ctx, rng, type, nb, -50, 50), dim);
                },
                0.0, what + " permuted");
        }
}

TEST(CpuLayout, PadWithZerosOnEitherSide) {
    for (ggml_type type : kFloatTypes) {
        const std::string what = std::string("pad ") + ggml_type_name(type);
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_pad_ext(ctx, input(ctx, rng, type, {5, 3, 2, 2}), 1, 2, 0, 3, 2, 0, 0, 1);
            },
            0.0, what + " ext");
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_pad(ctx, permuted_input(ctx, rng, type, {5, 3, 2, 2}), 3, 1, 0, 2);
            },
            0.0, what + " permuted");
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_pad(ctx, input(ctx, rng, type, {1, 1, 1, 1}), 0, 0, 0, 0);
            },
            0.0, what + " nothing");
    }
}

TEST(CpuLayout, UpscaleNearest) {
    const auto ext = [](const Shape & from, const Shape & to, bool permuted) {
        return [=](ggml_context * ctx, Rng & rng) {
            ggml_tensor * a = permuted ? permuted_input(ctx, rng, GGML_TYPE_F32, from)
                                       : input(ctx, rng, GGML_TYPE_F32, from);
            return ggml_upscale_ext(ctx, a, static_cast<int>(to[0]), static_cast<int>(to[1]),
                                    static_cast<int>(to[2]), static_cast<int>(to[3]),
                                    GGML_SCALE_MODE_NEAREST);
        };
    };
    expect_matches(ext({5, 3, 2, 1}, {11, 7, 3, 2}, false), 0.0, "upscale_ext up");
    expect_matches(ext({5, 3, 2, 3}, {2, 2, 1, 2}, false), 0.0, "upscale_ext down");
    expect_matches(ext({5, 3, 2, 2}, {7, 3, 5, 2}, true), 0.0, "upscale_ext permuted");
    expect_matches(
        [](ggml_context * ctx, Rng & rng) {
            return ggml_upscale(ctx, input(ctx, rng, GGML_TYPE_F32, {4, 3, 2, 1}), 3,
                                GGML_SCALE_MODE_NEAREST);
        },
        0.0, "upscale factor 3");
}

TEST(CpuLayout, TimestepEmbedding) {
    const std::vector<double> times = {0.0, 1.0, 10.0, 999.5, 500.25, 3.0};
    for (int dim : {2, 3, 16, 17, 320})
        for (int max_period : {10000, 100, 1})
            expect_matches(
                [&](ggml_context * ctx, Rng &) {
                    ggml_tensor * t =
                        ggml_new_tensor_1d(ctx, GGML_TYPE_F32, static_cast<int64_t>(times.size()));
                    ggx::ref::write_tensor(t, times);
                    return ggml_timestep_embedding(ctx, t, dim, max_period);
                },
                1e-12,
                "timestep_embedding dim " + std::to_string(dim) + " max_period " +
                    std::to_string(max_period));
}

// ---- supports(): exactly the documented dtype combinations -------------------------------------------

class CpuSupports : public ::testing::Test {
protected:
    void SetUp() override { ctx.reset(ggml_init({1 << 20, nullptr, true})); }

    // A hand-made node (no constructor checks) of op and type over srcs.
    ggml_tensor * node(ggml_op op, ggml_type type, const Shape & ne,
                       std::initializer_list<ggml_tensor *> srcs) {
        ggml_tensor * t = ggml_new_tensor(ctx.get(), type, 4, ne.data());
        t->op = op;
        int i = 0;
        for (ggml_tensor * s : srcs)
            t->src[i++] = s;
        return t;
    }
    ggml_tensor * leaf(ggml_type type, const Shape & ne) {
        return ggml_new_tensor(ctx.get(), type, 4, ne.data());
    }
    static bool supports(const ggml_tensor * t) {
        const ggx::Kernel & kernel = ggx::cpu::kernel_table()[t->op];
        return kernel.supports(kernel, nullptr, t);
    }

    std::unique_ptr<ggml_context, ContextDeleter> ctx;
};

TEST_F(CpuSupports, AcceptsWhatTheConstructorsBuild) {
    ggml_context * c = ctx.get();
    ggml_tensor *f32 = leaf(GGML_TYPE_F32, {64, 4, 1, 1}), *f16 = leaf(GGML_TYPE_F16, {64, 4, 1, 1});
    ggml_tensor *bf16 = leaf(GGML_TYPE_BF16, {64, 4, 1, 1}), *i32 = leaf(GGML_TYPE_I32, {64, 4, 1, 1});
    ggml_tensor * q8 = leaf(GGML_TYPE_Q8_0, {64, 4, 1, 1});
    for (ggml_tensor * t :
         {ggml_add(c, f16, f32),
          ggml_div(c, bf16, bf16),
          ggml_scale(c, f16, 2.0f),
          ggml_sqrt(c, bf16),
          ggml_clamp(c, f32, 0, 1),
          ggml_gelu(c, f16),
          ggml_swiglu(c, bf16),
          ggml_geglu_split(c, f16, f16),
          ggml_sum(c, bf16),
          ggml_mean(c, f16),
          ggml_argmax(c, f32),
          ggml_cast(c, f16, GGML_TYPE_Q4_0),
          ggml_cast(c, q8, GGML_TYPE_F32),
          ggml_dup(c, q8),
          ggml_cont(c, ggml_transpose(c, i32)),
          ggml_cpy(c, f32, bf16),
          ggml_repeat(c, i32, i32),
          ggml_concat(c, i32, i32, 1),
          ggml_pad(c, bf16, 1, 0, 0, 0),
          ggml_upscale(c, f32, 2, GGML_SCALE_MODE_NEAREST),
          ggml_timestep_embedding(c, leaf(GGML_TYPE_F32, {5, 1, 1, 1}), 7, 100),
          ggml_add1(c, bf16, leaf(GGML_TYPE_F32, {1, 1, 1, 1})),
          ggml_add_id(c, leaf(GGML_TYPE_F16, {8, 2, 3, 1}), leaf(GGML_TYPE_F32, {8, 4, 1, 1}),
                      leaf(GGML_TYPE_I32, {2, 3, 1, 1})),
          ggml_acc(c, f32, leaf(GGML_TYPE_F32, {8, 2, 1, 1}), f32->nb[1], f32->nb[2], f32->nb[3], 4),
          ggml_set_2d(c, i32, leaf(GGML_TYPE_I32, {8, 2, 1, 1}), i32->nb[1], 8),
          ggml_log(c, f16),
          ggml_cos(c, bf16),
          ggml_leaky_relu(c, f16, 0.1f, true),
          ggml_fill(c, bf16, 2.0f),
          ggml_silu_back(c, f16, f16),
          ggml_xielu(c, bf16, 1, 1, 0.5f, 0),
          ggml_reglu(c, f16),
          ggml_swiglu_oai(c, bf16, bf16, 1.702f, 7.0f),
          ggml_geglu_quick_split(c, f32, f32),
          ggml_cumsum(c, bf16),
          ggml_count_equal(c, i32, i32),
          ggml_argsort(c, f16, GGML_SORT_ORDER_DESC),
          ggml_top_k(c, bf16, 5),
          ggml_cross_entropy_loss(c, f16, f16),
          ggml_cross_entropy_loss_back(c, leaf(GGML_TYPE_F32, {1, 1, 1, 1}), bf16, bf16),
          ggml_get_rows_back(c, f32, leaf(GGML_TYPE_I32, {4, 1, 1, 1}), f32)}) {
        ASSERT_NE(t, nullptr) << ggml_get_error(c);
        EXPECT_TRUE(supports(t)) << ggml_op_desc(t);
    }
}

TEST_F(CpuSupports, RejectsOtherTypeCombinations) {
    const Shape ne = {32, 2, 1, 1};
    ggml_tensor *f32 = leaf(GGML_TYPE_F32, ne), *f16 = leaf(GGML_TYPE_F16, ne),
                *i32 = leaf(GGML_TYPE_I32, ne);
    ggml_tensor *q8 = leaf(GGML_TYPE_Q8_0, ne), *q4 = leaf(GGML_TYPE_Q4_0, ne);
    ggml_tensor *f64 = leaf(GGML_TYPE_F64, ne), *i64 = leaf(GGML_TYPE_I64, ne);
    const ggml_tensor * rejected[] = {
        node(GGML_OP_ADD, GGML_TYPE_I32, ne, {i32, i32}),                // integer arithmetic
        node(GGML_OP_MUL, GGML_TYPE_F32, ne, {f32, f16}),                // b neither F32 nor a's type
        node(GGML_OP_ADD, GGML_TYPE_F16, ne, {f32, f32}),                // result not a's type
        node(GGML_OP_SQR, GGML_TYPE_Q8_0, ne, {q8}),                     // quantized
        node(GGML_OP_SUM_ROWS, GGML_TYPE_I32, {1, 2, 1, 1}, {i32}),      // integer reduction
        node(GGML_OP_ARGMAX, GGML_TYPE_I32, {2, 1, 1, 1}, {f16}),        // argmax takes F32 only
        node(GGML_OP_CPY, GGML_TYPE_F32, ne, {i32}),                     // I32 -> F32
        node(GGML_OP_CPY, GGML_TYPE_I32, ne, {f32}),                     // F32 -> I32
        node(GGML_OP_CPY, GGML_TYPE_Q4_0, ne, {q8}),                     // quantized -> other quantized
        node(GGML_OP_CPY, GGML_TYPE_F16, ne, {q8}),                      // quantized -> F16
        node(GGML_OP_CPY, GGML_TYPE_F16, ne, {f64}),                     // F64 -> F16: would round twice
        node(GGML_OP_CPY, GGML_TYPE_F64, ne, {f16}),                     // F64 pairs with F32 only
        node(GGML_OP_CPY, GGML_TYPE_Q8_0, ne, {f64}),
        node(GGML_OP_CPY, GGML_TYPE_F32, ne, {i64}),                     // integers: same type only
        node(GGML_OP_REPEAT, GGML_TYPE_Q8_0, ne, {q8}),                  // quantized repeat
        node(GGML_OP_CONCAT, GGML_TYPE_F32, {64, 2, 1, 1}, {f32, f16}),  // mixed types
        node(GGML_OP_PAD, GGML_TYPE_I32, ne, {i32}),                     // pad takes floats only
        node(GGML_OP_UPSCALE, GGML_TYPE_I32, ne, {i32}),                 // upscale takes floats only
        node(GGML_OP_TIMESTEP_EMBEDDING, GGML_TYPE_F16, {4, 32, 1, 1}, {f16}),
        node(GGML_OP_ACC, GGML_TYPE_F16, ne, {f16, f16}),                  // acc takes F32 only
        node(GGML_OP_SET, GGML_TYPE_Q8_0, ne, {q8, q8}),                   // quantized set
        node(GGML_OP_SILU_BACK, GGML_TYPE_F32, ne, {f32, f16}),            // mixed types
        node(GGML_OP_COUNT_EQUAL, GGML_TYPE_I64, {1, 1, 1, 1}, {q8, q8}),  // quantized comparison
        node(GGML_OP_CUMSUM, GGML_TYPE_I32, ne, {i32}),                    // integer running sum
        node(GGML_OP_ARGSORT, GGML_TYPE_F32, ne, {f32}),                   // indices must be I32
        node(GGML_OP_OPT_STEP_SGD, GGML_TYPE_F32, ne, {f32, f32, f32}),    // not in place over a
    };
    for (const ggml_tensor * t : rejected)
        EXPECT_FALSE(supports(t)) << ggml_op_name(t->op) << " " << ggml_type_name(t->type);
    // A hand-made copy between different shapes of the same element count is fine.
    EXPECT_TRUE(supports(node(GGML_OP_CPY, GGML_TYPE_F32, {16, 4, 1, 1}, {q4})));
    // Every sub-op is computed; the value past the last is refused.
    const auto computed = [](const auto & ops, int op) {
        return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
    };
    for (int op = 0; op <= GGML_UNARY_OP_COUNT; ++op) {
        ggml_tensor * unary = ggml_relu(ctx.get(), f32);
        unary->op_params[0] = op;
        EXPECT_EQ(supports(unary), computed(kUnaryOps, op)) << op;
    }
    for (int op = 0; op <= GGML_GLU_OP_COUNT; ++op) {
        ggml_tensor * glu = ggml_swiglu(ctx.get(), f32);
        glu->op_params[0] = op;
        EXPECT_EQ(supports(glu), computed(kGluOps, op)) << op;
    }
}

}  // namespace
