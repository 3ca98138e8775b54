// sd.rope_apply.v1 and the RMSNorm -> Mul -> RoPE fusion on CPU (extensions/sd; sd-ops.md 1 and 2,
// partial rotation per ggml-extensions.md "sd.cpp integration").
//
// Bounds:
//  - rope_apply: bit-identical to the unfused ggml_mul/ggml_mul/ggml_add graph (run natively) and to
//    the oracle evaluating that graph (tests/reference rounds every stored value to F32, and a
//    product or sum of two F32 values computed in double and rounded once equals the F32
//    operation); against the plain double formula (no intermediate rounding) nmse <= 1e-12 (two
//    products and one sum each rounded to F32: relative error <= ~3 * 2^-24 per element).
//  - fused RMSNorm -> Mul -> RoPE: bit-identical to the three separate ops through a scheduler;
//    against the oracle (norm and mul in double, each stored value rounded to F32) followed by the
//    double rotation: nmse <= 1e-12.
// This file is compiled with -ffp-contract=off so the F32 expectations round every product.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/plan_steps.h"
#include "common/rope.h"
#include "reference/reference.h"
#include "sd-ggml-ext.h"
#include "support/check_util.h"
#include "extensions/sd/sd_pack_env.h"
#include "support/test_util.h"

namespace {

using ggx::test::Buffer;
using ggx::test::check_case;
using ggx::test::check_kernel;
using ggx::test::CheckResult;
using ggx::test::contains;
using ggx::test::Context;
using ggx::test::Sched;

using Rng = std::mt19937;

ggml_backend_t backend() {
    static ggml_backend_t cpu = [] {
        ggml_backend_t b = ggml_backend_cpu_init();
        ggml_backend_cpu_set_n_threads(b, 3);  // uneven row shares on the 2-core test machine too
        return b;
    }();
    return cpu;
}

Context host_context(size_t bytes = size_t{64} << 20) { return Context(ggml_init({bytes, nullptr, false})); }

std::vector<double> uniform(Rng & rng, int64_t n, double lo = -1.0, double hi = 1.0) {
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> v(static_cast<size_t>(n));
    for (double & x : v)
        x = dist(rng);
    return v;
}

// Rotation matrices as sd.cpp builds them: theta = t * base^(-2j / (2P)), pe = cos, -sin, sin, cos
// (the -sin the exact negation of sin), all in float.
std::vector<double> rotation_pe(int64_t pairs, int64_t tokens) {
    std::vector<double> v(static_cast<size_t>(4 * pairs * tokens));
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t j = 0; j < pairs; ++j) {
            const float omega =
                std::pow(10000.0f, -static_cast<float>(2 * j) / static_cast<float>(2 * pairs));
            const float angle = static_cast<float>(t + 1) * omega;
            const float c = std::cos(angle), s = std::sin(angle);
            double * m = &v[static_cast<size_t>(4 * (j + pairs * t))];
            m[0] = c, m[1] = -s, m[2] = s, m[3] = c;
        }
    }
    return v;
}

// The rotation in type T over logical arrays (ne0 fastest): a [D, H, L, B], pe [2, 2, P, L];
// out [D, L, H*B]. T = float (this file has no FP contraction) gives the exact F32 result.
template <class T>
std::vector<T> rope_formula(const std::vector<T> & a, const std::vector<T> & pe, const int64_t ne[4],
                            int64_t pairs, bool interleaved) {
    const int64_t dim = ne[0], heads = ne[1], tokens = ne[2], batch = ne[3];
    std::vector<T> out(a.size());
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t t = 0; t < tokens; ++t) {
                const T * x = &a[static_cast<size_t>(dim * (h + heads * (t + tokens * b)))];
                T * y = &out[static_cast<size_t>(dim * (t + tokens * (h + heads * b)))];
                for (int64_t i = 2 * pairs; i < dim; ++i)
                    y[i] = x[i];
                for (int64_t j = 0; j < pairs; ++j) {
                    const T * m = &pe[static_cast<size_t>(4 * (j + pairs * t))];
                    if (interleaved) {
                        const T p = x[2 * j], q = x[2 * j + 1];
                        y[2 * j] = p * m[0] + q * m[1];
                        y[2 * j + 1] = p * m[2] + q * m[3];
                    } else {
                        const T p = x[j], q = x[j + pairs], c = m[0], s = m[2];
                        y[j] = p * c - q * s;
                        y[j + pairs] = p * s + q * c;
                    }
                }
            }
    return out;
}

std::vector<float> to_float(const std::vector<double> & v) { return std::vector<float>(v.begin(), v.end()); }

bool same_bits(const std::vector<float> & a, const std::vector<float> & b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> values_f32(const ggml_tensor * t) { return to_float(ggx::ref::read_tensor(t)); }

// How a is laid out in memory.
enum class Layout { contiguous, qkv_slice, permuted, column_strided };

const char * layout_name(Layout l) {
    switch (l) {
        case Layout::contiguous:
            return "contiguous";
        case Layout::qkv_slice:
            return "qkv slice";
        case Layout::permuted:
            return "permuted";
        case Layout::column_strided:
            return "nb0 != 4";
    }
    return "?";
}

// a [D, H, L, B] filled with random values, in the given layout (a view for all but contiguous).
ggml_tensor * make_a(ggml_context * ctx, Layout layout, int64_t d, int64_t h, int64_t l, int64_t b,
                     Rng & rng) {
    ggml_tensor * a = nullptr;
    switch (layout) {
        case Layout::contiguous:
            a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, d, h, l, b);
            ggx::ref::write_tensor(a, uniform(rng, ggml_nelements(a)));
            return a;
        case Layout::qkv_slice: {  // the K part of a fused [3 * D * H, L, B] projection
            ggml_tensor * qkv = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 3 * d * h, l, b);
            ggx::ref::write_tensor(qkv, uniform(rng, ggml_nelements(qkv)));
            return ggml_view_4d(ctx, qkv, d, h, l, b, d * sizeof(float), qkv->nb[1], qkv->nb[2],
                                static_cast<size_t>(d * h) * sizeof(float));
        }
        case Layout::permuted: {  // stored [D, L, H, B]
            ggml_tensor * s = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, d, l, h, b);
            ggx::ref::write_tensor(s, uniform(rng, ggml_nelements(s)));
            return ggml_permute(ctx, s, 0, 2, 1, 3);
        }
        case Layout::column_strided: {  // stored [H, D, L, B]: nb0 is a whole storage row
            ggml_tensor * s = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, h, d, l, b);
            ggx::ref::write_tensor(s, uniform(rng, ggml_nelements(s)));
            return ggml_permute(ctx, s, 1, 0, 2, 3);
        }
    }
    return a;
}

// pe [2, 2, P, L]: rotation matrices or random values, contiguous or a permuted view.
ggml_tensor * make_pe(ggml_context * ctx, int64_t pairs, int64_t tokens, bool rotation, bool strided,
                      Rng & rng) {
    const std::vector<double> v = rotation ? rotation_pe(pairs, tokens) : uniform(rng, 4 * pairs * tokens);
    if (!strided) {
        ggml_tensor * pe = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2, 2, pairs, tokens);
        ggx::ref::write_tensor(pe, v);
        return pe;
    }
    ggml_tensor * s = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, pairs, 2, 2, tokens);  // stored [P, row, col, L]
    ggml_tensor * pe = ggml_permute(ctx, s, 2, 1, 0, 3);                            // [col, row, P, L]
    ggx::ref::write_tensor(pe, v);
    return pe;
}

struct RopeCase {
    int64_t d, h, l, b, pairs;
    bool interleaved;
};

const RopeCase kCases[] = {{128, 3, 5, 2, 64, true},  {128, 3, 5, 2, 64, false}, {40, 3, 7, 3, 20, true},
                           {40, 3, 7, 3, 20, false},  {6, 1, 1, 1, 3, true},     {6, 5, 1, 1, 3, false},
                           {34, 7, 3, 1, 17, true},   {34, 1, 9, 5, 17, false},  {64, 24, 33, 1, 32, true},
                           {64, 24, 33, 1, 32, false}};

const Layout kLayouts[] = {Layout::contiguous, Layout::qkv_slice, Layout::permuted, Layout::column_strided};

// ---- the constructor ------------------------------------------------------------------------

TEST(SdRopeApply, ConstructorMakesAContiguousF32Node) {
    Context ctx(ggml_init({1 << 20, nullptr, true}));
    ggml_tensor * a = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 64, 3, 7, 2);
    ggml_tensor * pe = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 2, 2, 32, 7);
    ggml_tensor * y = ggml_rope_apply(ctx.get(), a, pe, true);
    ASSERT_NE(y, nullptr) << ggml_get_error(ctx.get());
    EXPECT_EQ(y->type, GGML_TYPE_F32);
    EXPECT_EQ(y->ne[0], 64);
    EXPECT_EQ(y->ne[1], 7);
    EXPECT_EQ(y->ne[2], 6);
    EXPECT_EQ(y->ne[3], 1);
    EXPECT_TRUE(ggml_is_contiguous(y));
    EXPECT_EQ(y->src[0], a);
    EXPECT_EQ(y->src[1], pe);
    EXPECT_STREQ(ggml_ext_op_name(ggml_ext_node_op(y)), "sd.rope_apply.v1");
    EXPECT_EQ(sd::rope::attrs_of(y).interleaved, 1);
    EXPECT_EQ(sd::rope::attrs_of(ggml_rope_apply(ctx.get(), a, pe, false)).interleaved, 0);
    // Partial rotation: P < D/2.
    ggml_tensor * pe_part = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 2, 2, 5, 7);
    EXPECT_NE(ggml_rope_apply(ctx.get(), a, pe_part, false), nullptr) << ggml_get_error(ctx.get());
}

// Each documented rejection, with its reason in the context's error.
TEST(SdRopeApply, ConstructorRejectsBadInputsWithAReason) {
    struct Bad {
        const char * what;
        ggml_type a_type, pe_type;
        int64_t a_ne[4], pe_ne[4];
        const char * reason;
    };
    const Bad cases[] = {
        {"a f16",
         GGML_TYPE_F16,
         GGML_TYPE_F32,
         {8, 2, 3, 1},
         {2, 2, 4, 3},
         "a and pe must be f32, got a f16"},
        {"pe f16", GGML_TYPE_F32, GGML_TYPE_F16, {8, 2, 3, 1}, {2, 2, 4, 3}, "pe f16"},
        {"odd D", GGML_TYPE_F32, GGML_TYPE_F32, {7, 2, 3, 1}, {2, 2, 3, 3}, "a.ne0 = 7 must be even"},
        {"pe ne0", GGML_TYPE_F32, GGML_TYPE_F32, {8, 2, 3, 1}, {4, 1, 4, 3}, "pe must be [2, 2, P, L]"},
        {"pe ne1", GGML_TYPE_F32, GGML_TYPE_F32, {8, 2, 3, 1}, {2, 4, 2, 3}, "pe must be [2, 2, P, L]"},
        {"P > D/2", GGML_TYPE_F32, GGML_TYPE_F32, {8, 2, 3, 1}, {2, 2, 5, 3}, "1 <= P <= D/2 = 4"},
        {"L mismatch", GGML_TYPE_F32, GGML_TYPE_F32, {8, 2, 3, 1}, {2, 2, 4, 4}, "L = a.ne2 = 3"},
    };
    for (const Bad & c : cases) {
        Context ctx(ggml_init({1 << 20, nullptr, true}));
        ggml_tensor * a = ggml_new_tensor(ctx.get(), c.a_type, 4, c.a_ne);
        ggml_tensor * pe = ggml_new_tensor(ctx.get(), c.pe_type, 4, c.pe_ne);
        EXPECT_EQ(ggml_rope_apply(ctx.get(), a, pe, true), nullptr) << c.what;
        const char * error = ggml_get_error(ctx.get());
        ASSERT_NE(error, nullptr) << c.what;
        EXPECT_TRUE(contains(error, "sd.rope_apply.v1")) << error;
        EXPECT_TRUE(contains(error, c.reason)) << c.what << ": " << error;
    }
    // A NULL input (an earlier failure) gives NULL without replacing that failure's error.
    Context ctx(ggml_init({1 << 20, nullptr, true}));
    ggml_tensor * pe = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 2, 2, 4, 3);
    EXPECT_EQ(ggml_rope_apply(ctx.get(), nullptr, pe, true), nullptr);
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
}

TEST(SdRopeApply, RegisteringTwiceIsHarmlessAndReported) {
    EXPECT_EQ(sd_ggml_register_extensions(), SD_GGML_EXT_ALREADY_REGISTERED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "already registered"));
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    Context ctx(ggml_init({1 << 20, nullptr, true}));
    ggml_tensor * y = ggml_rope_apply(ctx.get(), ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 8, 2, 3, 1),
                                      ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 2, 2, 4, 3), true);
    ASSERT_NE(y, nullptr);
    EXPECT_STREQ(ggml_ext_dev_selected_kernel(cpu, y), "sd.rope_apply.cpu");
    EXPECT_TRUE(ggml_backend_dev_supports_op(cpu, y));
}

// ---- the kernel -----------------------------------------------------------------------------

// Against the exact F32 formula, the double formula (nmse) and, for full rotation, the unfused
// mul/mul/add graph computed natively and by the oracle: every shape, layout and both modes.
TEST(SdRopeApply, MatchesTheUnfusedGraphBitForBitAndTheOracle) {
    Rng rng(7);
    for (const RopeCase & c : kCases) {
        for (Layout layout : kLayouts) {
            for (bool partial : {false, true}) {
                const int64_t pairs = partial ? std::max<int64_t>(1, c.pairs / 2 - 1) : c.pairs;
                for (bool rotation : {true, false}) {
                    if (!rotation && !c.interleaved && !partial) continue;  // split-half reads c, s only
                    SCOPED_TRACE(std::string(layout_name(layout)) + " D=" + std::to_string(c.d) +
                                 " H=" + std::to_string(c.h) + " L=" + std::to_string(c.l) +
                                 " B=" + std::to_string(c.b) + " P=" + std::to_string(pairs) +
                                 (c.interleaved ? " interleaved" : " split") +
                                 (rotation ? " rot" : " random"));
                    Context ctx = host_context();
                    ggml_tensor * a = make_a(ctx.get(), layout, c.d, c.h, c.l, c.b, rng);
                    ggml_tensor * pe =
                        make_pe(ctx.get(), pairs, c.l, rotation, layout == Layout::permuted, rng);
                    ggml_tensor * y = ggml_rope_apply(ctx.get(), a, pe, c.interleaved);
                    ASSERT_NE(y, nullptr) << ggml_get_error(ctx.get());
                    ggml_tensor * unfused =
                        partial ? nullptr : sd_ggml_rope_apply_decomposed(ctx.get(), a, pe, c.interleaved);
                    ggml_cgraph * g = ggml_new_graph(ctx.get());
                    ggml_build_forward_expand(g, y);
                    if (unfused) ggml_build_forward_expand(g, unfused);
                    ASSERT_EQ(ggml_backend_graph_compute(backend(), g), GGML_STATUS_SUCCESS)
                        << ggml_backend_get_last_error();

                    const std::vector<double> av = ggx::ref::read_tensor(a), pv = ggx::ref::read_tensor(pe);
                    const std::vector<float> got = values_f32(y);
                    const int64_t ne[4] = {c.d, c.h, c.l, c.b};
                    EXPECT_TRUE(
                        same_bits(got, rope_formula(to_float(av), to_float(pv), ne, pairs, c.interleaved)));
                    const std::vector<double> want = rope_formula(av, pv, ne, pairs, c.interleaved);
                    EXPECT_LE(ggx::ref::nmse(std::vector<double>(got.begin(), got.end()), want), 1e-12);
                    if (!unfused) continue;
                    EXPECT_TRUE(same_bits(got, values_f32(unfused)));
                    ggx::ref::Evaluator oracle;
                    ggml_cgraph * og = ggml_new_graph(ctx.get());
                    ggml_build_forward_expand(og, unfused);
                    oracle.compute(og);
                    EXPECT_TRUE(same_bits(got, to_float(oracle.values(unfused))));
                }
            }
        }
    }
}

bool reference_rope(const ggml_tensor * node, const double * const * inputs, double * output, void *) {
    const ggml_tensor * a = node->src[0];
    const int64_t ne[4] = {a->ne[0], a->ne[1], a->ne[2], a->ne[3]};
    const std::vector<double> av(inputs[0], inputs[0] + ggml_nelements(a));
    const std::vector<double> pv(inputs[1], inputs[1] + ggml_nelements(node->src[1]));
    const std::vector<double> y =
        rope_formula(av, pv, ne, node->src[1]->ne[2], sd::rope::attrs_of(node).interleaved != 0);
    std::copy(y.begin(), y.end(), output);
    return true;
}

TEST(SdRopeApply, PassesTheKernelConformanceCheck) {
    const sd::rope::Attrs interleaved{1}, split{0};
    struct Shape {
        int64_t d, h, l, b, pairs;
    };
    const Shape shapes[] = {{128, 3, 5, 2, 64}, {40, 3, 7, 3, 20}, {6, 1, 1, 1, 3}, {34, 5, 3, 1, 9}};
    std::vector<ggml_ext_check_case> cases;
    std::vector<std::string> names;
    names.reserve(16);
    for (const Shape & s : shapes) {
        for (const sd::rope::Attrs * attrs : {&interleaved, &split}) {
            names.push_back("rope [" + std::to_string(s.d) + ", " + std::to_string(s.h) + ", " +
                            std::to_string(s.l) + ", " + std::to_string(s.b) + "] P " +
                            std::to_string(s.pairs) + (attrs->interleaved ? " interleaved" : " split"));
            cases.push_back(
                check_case(names.back().c_str(),
                           {{GGML_TYPE_F32, {s.d, s.h, s.l, s.b}}, {GGML_TYPE_F32, {2, 2, s.pairs, s.l}}},
                           attrs, sizeof *attrs));
        }
    }
    const CheckResult check =
        check_kernel(backend(), sd::rope::cpu_kernel_desc(), cases, 1e-12, 11, reference_rope);
    const ggml_ext_check_report & report = check.report;
    EXPECT_TRUE(check.passed) << report.first_failure;
    EXPECT_EQ(report.n_passed, report.n_cases);
    EXPECT_EQ(report.n_skipped, 0);  // every layout is supported
    EXPECT_GT(report.n_runs, report.n_cases);
}

// The abort callback stops the kernel (should_stop is polled) and the computation reports ABORTED.
TEST(SdRopeApply, HonoursTheAbortCallback) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(cpu, 2);
    ggml_backend_cpu_set_abort_callback(
        cpu, [](void *) { return true; }, nullptr);
    Context ctx = host_context();
    Rng rng(3);
    ggml_tensor * a = make_a(ctx.get(), Layout::contiguous, 64, 8, 64, 1, rng);
    ggml_tensor * pe = make_pe(ctx.get(), 32, 64, true, false, rng);
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(g, ggml_rope_apply(ctx.get(), a, pe, true));
    EXPECT_EQ(ggml_backend_graph_compute(cpu, g), GGML_STATUS_ABORTED);
    ggml_backend_free(cpu);
}

// ---- the fusion RMSNorm -> Mul -> RoPE ------------------------------------------------------

struct ChainGraph {
    ChainGraph(Layout layout, int64_t d, int64_t h, int64_t l, int64_t b, int64_t pairs, bool interleaved,
               float eps) {
        ggml_context * c = ctx.get();
        if (layout == Layout::qkv_slice) {
            owner = ggml_new_tensor_3d(c, GGML_TYPE_F32, 3 * d * h, l, b);
            x = ggml_view_4d(c, owner, d, h, l, b, d * sizeof(float), owner->nb[1], owner->nb[2],
                             static_cast<size_t>(d * h) * sizeof(float));
        } else {
            owner = x = ggml_new_tensor_4d(c, GGML_TYPE_F32, d, h, l, b);
        }
        w = ggml_new_tensor_1d(c, GGML_TYPE_F32, d);
        pe = ggml_new_tensor_4d(c, GGML_TYPE_F32, 2, 2, pairs, l);
        for (ggml_tensor * t : {owner, w, pe})
            ggml_set_input(t);
        norm = ggml_rms_norm(c, x, eps);
        mul = ggml_mul(c, norm, w);
        y = ggml_rope_apply(c, mul, pe, interleaved);
        ggml_set_name(norm, "norm");
        ggml_set_name(mul, "mul");
        ggml_set_name(y, "rope");
        ggml_set_output(y);
        graph = ggml_new_graph(c);
        ggml_build_forward_expand(graph, y);
    }
    void fill(uint32_t seed) {
        Rng rng(seed);
        for (ggml_tensor * t : {owner, w}) {
            const std::vector<float> v = to_float(uniform(rng, ggml_nelements(t), -2.0, 2.0));
            ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
        }
        const std::vector<float> p = to_float(rotation_pe(pe->ne[2], pe->ne[3]));
        ggml_backend_tensor_set(pe, p.data(), 0, ggml_nbytes(pe));
    }
    std::vector<float> result() const {
        std::vector<float> v(static_cast<size_t>(ggml_nelements(y)));
        ggml_backend_tensor_get(y, v.data(), 0, ggml_nbytes(y));
        return v;
    }
    Context ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    ggml_tensor *owner, *x, *w, *pe, *norm, *mul, *y;
    ggml_cgraph * graph;
};

std::vector<float> host_values(const ggml_tensor * t) {
    std::vector<float> v(ggml_nbytes(t) / sizeof(float));
    ggml_backend_tensor_get(t, v.data(), 0, ggml_nbytes(t));
    return v;
}

TEST(SdRopeFusion, FusedChainEqualsTheThreeOpsBitForBit) {
    const RopeCase cases[] = {{128, 3, 5, 2, 64, true}, {128, 3, 5, 2, 64, false}, {40, 3, 7, 3, 20, true},
                              {34, 7, 3, 1, 9, false},  {6, 1, 1, 1, 3, true},     {130, 5, 9, 1, 65, false}};
    for (const RopeCase & c : cases) {
        for (Layout layout : {Layout::contiguous, Layout::qkv_slice}) {
            SCOPED_TRACE(std::string(layout_name(layout)) + " D=" + std::to_string(c.d) +
                         " P=" + std::to_string(c.pairs) + (c.interleaved ? " interleaved" : " split"));
            ChainGraph fused(layout, c.d, c.h, c.l, c.b, c.pairs, c.interleaved, 1e-6f);
            ChainGraph unfused(layout, c.d, c.h, c.l, c.b, c.pairs, c.interleaved, 1e-6f);

            ggml_backend_t be = backend();
            Sched s1(ggml_backend_sched_new(&be, nullptr, 1, 256, false, false));
            ASSERT_TRUE(ggml_backend_sched_alloc_graph(s1.get(), fused.graph))
                << ggml_backend_get_last_error();
            EXPECT_TRUE(ggx::tools::fusion_fired(s1.get(), "sd.rms_norm_mul_rope.cpu"));
            EXPECT_EQ(fused.mul->data, nullptr);  // eliminated: no storage
            fused.fill(17);
            ASSERT_EQ(ggml_backend_sched_graph_compute(s1.get(), fused.graph), GGML_STATUS_SUCCESS)
                << ggml_backend_get_last_error();

            // With an eval callback the scheduler keeps the individual operations.
            Sched s2(ggml_backend_sched_new(&be, nullptr, 1, 256, false, false));
            int observed = 0;
            ggml_backend_sched_set_eval_callback(
                s2.get(),
                [](ggml_tensor * t, bool ask, void * user) {
                    if (!ask && std::string(t->name) == "mul") ++*static_cast<int *>(user);
                    return true;
                },
                &observed);
            ASSERT_TRUE(ggml_backend_sched_alloc_graph(s2.get(), unfused.graph))
                << ggml_backend_get_last_error();
            EXPECT_FALSE(ggx::tools::fusion_fired(s2.get(), "sd.rms_norm_mul_rope.cpu"));
            unfused.fill(17);
            ASSERT_EQ(ggml_backend_sched_graph_compute(s2.get(), unfused.graph), GGML_STATUS_SUCCESS)
                << ggml_backend_get_last_error();
            EXPECT_EQ(observed, 1);  // the product ran and was observable

            const std::vector<float> got = fused.result();
            EXPECT_TRUE(same_bits(got, unfused.result()));

            // The oracle: norm and mul in double (stored values rounded to F32), then the rotation.
            ggx::ref::Evaluator oracle;
            std::vector<double> wv, pv;
            for (float v : host_values(unfused.w))
                wv.push_back(v);
            for (float v : host_values(unfused.pe))
                pv.push_back(v);
            oracle.set_input(unfused.w, wv);
            ggml_cgraph * og = ggml_new_graph(unfused.ctx.get());
            ggml_build_forward_expand(og, unfused.mul);
            const std::vector<float> owner_values = host_values(unfused.owner);
            oracle.set_input(unfused.owner, std::vector<double>(owner_values.begin(), owner_values.end()));
            oracle.compute(og);
            const int64_t ne[4] = {c.d, c.h, c.l, c.b};
            const std::vector<double> want =
                rope_formula(oracle.values(unfused.mul), pv, ne, c.pairs, c.interleaved);
            EXPECT_LE(ggx::ref::nmse(std::vector<double>(got.begin(), got.end()), want), 1e-12);
        }
    }
}

// The runtime's legality check keeps the chain unfused when the product has another consumer.
TEST(SdRopeFusion, AnIntermediateWithAnotherConsumerIsNotFused) {
    ChainGraph g(Layout::contiguous, 32, 2, 3, 1, 16, true, 1e-5f);
    ggml_tensor * extra = ggml_scale(g.ctx.get(), g.mul, 2.0f);
    ggml_set_output(extra);
    ggml_build_forward_expand(g.graph, extra);
    ggml_backend_t be = backend();
    Sched s(ggml_backend_sched_new(&be, nullptr, 1, 256, false, false));
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(s.get(), g.graph)) << ggml_backend_get_last_error();
    EXPECT_FALSE(ggx::tools::fusion_fired(s.get(), "sd.rms_norm_mul_rope.cpu"));
    // The reason, from the runtime's legality check of the chain norm -> mul -> rope.
    int mul = 0;
    while (mul < ggml_graph_n_nodes(g.graph) && ggml_graph_node(g.graph, mul) != g.mul)
        ++mul;
    ASSERT_LT(mul, ggml_graph_n_nodes(g.graph));
    EXPECT_FALSE(ggml_ext_fusion_is_legal(g.graph, mul - 1, 3));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "rule 'external uses' fails at 'mul'"))
        << ggml_backend_get_last_error();
    g.fill(4);
    ASSERT_EQ(ggml_backend_sched_graph_compute(s.get(), g.graph), GGML_STATUS_SUCCESS);
}

}  // namespace
