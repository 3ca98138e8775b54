// sd.sage_attn.v1 and sd.sol_attn.v1 on CPU (extensions/sd; sd-ops.md 5, the CPU algorithms in
// docs/sd-pack.md "Sage and Sol attention").
//
// Bounds:
//  - Sage against exact softmax attention in double (the oracle): relative L2 error < 0.05 and max
//    abs error < 0.05 with finite output (the fork's contract, sd-ops.md 5.1), over D 64 and 128,
//    N(0, 0.6) inputs, K with the per-channel bias 32 sin(c), scale 1.0 and 0.7, lengths 1 .. 1042,
//    GQA ratios 1-4; all-zero q and k give the mean of v (F32 rounding: max abs 1e-6), all-zero v
//    gives exactly 0.
//  - Sol against the oracle's same tile selection in double: nmse <= 1e-10 (F32 dots, exp and sums);
//    with tau = -100 against native dense flash attention: nmse <= 1e-10.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/attention.h"
#include "extensions/sd/sd_pack_env.h"
#include "reference/reference.h"
#include "reference/sd.h"
#include "sd-ggml-ext.h"
#include "support/check_util.h"
#include "support/test_util.h"

namespace {

using ggx::test::check_case;
using ggx::test::check_kernel;
using ggx::test::CheckResult;
using ggx::test::contains;
using ggx::test::Context;

ggml_backend_t backend() {
    static ggml_backend_t cpu = [] {
        ggml_backend_t b = ggml_backend_cpu_init();
        ggml_backend_cpu_set_n_threads(b, 3);  // uneven shares on the 2-core test machine too
        return b;
    }();
    return cpu;
}

// The fork's test inputs: N(0, 0.6); optionally plus 32 sin(c) per channel; or zeros.
enum class Fill { normal, biased, zeros };

void fill(ggml_tensor * t, Fill how, std::mt19937 & rng) {
    std::normal_distribution<double> dist(0.0, 0.6);
    std::vector<double> v(static_cast<size_t>(ggml_nelements(t)));
    for (size_t i = 0; i < v.size(); ++i) {
        const double c = static_cast<double>(static_cast<int64_t>(i) % t->ne[0]);
        v[i] = how == Fill::zeros ? 0.0 : dist(rng) + (how == Fill::biased ? 32.0 * std::sin(c) : 0.0);
    }
    ggx::ref::write_tensor(t, v);
}

struct Result {
    std::vector<double> got, want;
};

// Computes node on the CPU and with the oracle.
Result run(ggml_context * ctx, ggml_tensor * node) {
    ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, node);
    EXPECT_EQ(ggml_backend_graph_compute(backend(), g), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    ggx::ref::sd::register_ops();
    ggx::ref::Evaluator oracle;
    oracle.compute(g);
    return {ggx::ref::read_tensor(node), oracle.values(node)};
}

double rel_l2(const Result & r) { return std::sqrt(ggx::ref::nmse(r.got, r.want)); }

double max_abs(const Result & r) {
    double m = 0.0;
    for (size_t i = 0; i < r.got.size(); ++i)
        m = std::max(m, std::isfinite(r.got[i]) ? std::fabs(r.got[i] - r.want[i]) : INFINITY);
    return m;
}

struct SageShape {
    int64_t d, tq, tk, hq, hkv;
};

// D 64 and 128, lengths 1 .. 1042 (block multiples and not), GQA ratios 1-4.
const SageShape kSageShapes[] = {{64, 1, 1, 1, 1},       {128, 1, 1, 2, 1},     {64, 65, 130, 3, 1},
                                 {128, 64, 64, 4, 2},    {128, 100, 300, 4, 1}, {64, 300, 200, 2, 2},
                                 {128, 1042, 1042, 1, 1}};

std::string describe(const SageShape & s, float scale, Fill k_fill) {
    return "D=" + std::to_string(s.d) + " Tq=" + std::to_string(s.tq) + " Tk=" + std::to_string(s.tk) +
           " H=" + std::to_string(s.hq) + "/" + std::to_string(s.hkv) + " scale " + std::to_string(scale) +
           (k_fill == Fill::biased ? " k+32sin(c)" : "");
}

Result sage(const SageShape & s, float scale, Fill q_fill, Fill k_fill, Fill v_fill, uint32_t seed) {
    std::mt19937 rng(seed);
    Context ctx(ggml_init({size_t{256} << 20, nullptr, false}));
    ggml_tensor * q = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, s.d, s.tq, s.hq, 1);
    ggml_tensor * k = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, s.d, s.tk, s.hkv, 1);
    ggml_tensor * v = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F16, s.d, s.tk, s.hkv, 1);
    fill(q, q_fill, rng);
    fill(k, k_fill, rng);
    fill(v, v_fill, rng);
    ggml_tensor * y = ggml_sage_attn(ctx.get(), q, k, v, scale, GGML_SAGE_ATTN_AUTO);
    EXPECT_NE(y, nullptr) << ggml_get_error(ctx.get());
    return y ? run(ctx.get(), y) : Result{};
}

// ---- constructors and validation --------------------------------------------------------------

TEST(SdAttention, ConstructorsMakeThePermutedF32Output) {
    Context ctx(ggml_init({1 << 20, nullptr, true}));
    ggml_tensor * q = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 64, 7, 8, 2);
    ggml_tensor * k = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 64, 5, 2, 2);
    ggml_tensor * v = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F16, 64, 5, 2, 2);
    ggml_tensor * y = ggml_sage_attn(ctx.get(), q, k, v, 0.5f, GGML_SAGE_ATTN_2_PLUS_PLUS);
    ASSERT_NE(y, nullptr) << ggml_get_error(ctx.get());
    EXPECT_STREQ(ggml_ext_op_name(ggml_ext_node_op(y)), "sd.sage_attn.v1");
    EXPECT_EQ(y->type, GGML_TYPE_F32);
    EXPECT_EQ(y->ne[0], 64);
    EXPECT_EQ(y->ne[1], 8);
    EXPECT_EQ(y->ne[2], 7);
    EXPECT_EQ(y->ne[3], 2);
    EXPECT_EQ(sd::attention::sage_attrs_of(y).scale, 0.5f);
    EXPECT_EQ(sd::attention::sage_attrs_of(y).mode, GGML_SAGE_ATTN_2_PLUS_PLUS);

    ggml_tensor * s = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 128, 9, 3, 2);
    ggml_tensor * z = ggml_sol_attn(ctx.get(), s, s, s, 0.25f, -100.0f);
    ASSERT_NE(z, nullptr) << ggml_get_error(ctx.get());
    EXPECT_STREQ(ggml_ext_op_name(ggml_ext_node_op(z)), "sd.sol_attn.v1");
    EXPECT_EQ(z->ne[0], 128);
    EXPECT_EQ(z->ne[1], 3);
    EXPECT_EQ(z->ne[2], 9);
    EXPECT_EQ(z->ne[3], 2);
    EXPECT_EQ(sd::attention::sol_attrs_of(z).tau, -100.0f);
    EXPECT_EQ(ggml_sage_attn(ctx.get(), nullptr, k, v, 1.0f, GGML_SAGE_ATTN_AUTO), nullptr);
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);  // a NULL input propagates without an error
}

struct BadAttn {
    const char * what;
    ggml_type qt, kt, vt;
    int64_t q[4], k[4], v[4];
    float scale, extra;  // Sage: mode; Sol: tau
    bool transpose_q;
    const char * reason;
};

// Builds the node of a bad case and checks the error names the operator and the reason.
void expect_rejected(const BadAttn & c, bool sol) {
    Context ctx(ggml_init({1 << 20, nullptr, true}));
    ggml_tensor * q = ggml_new_tensor(ctx.get(), c.qt, 4, c.q);
    if (c.transpose_q) q = ggml_transpose(ctx.get(), q);
    ggml_tensor * k = ggml_new_tensor(ctx.get(), c.kt, 4, c.k);
    ggml_tensor * v = ggml_new_tensor(ctx.get(), c.vt, 4, c.v);
    ggml_tensor * y =
        sol ? ggml_sol_attn(ctx.get(), q, k, v, c.scale, c.extra)
            : ggml_sage_attn(ctx.get(), q, k, v, c.scale, static_cast<ggml_sage_attn_mode>(c.extra));
    EXPECT_EQ(y, nullptr) << c.what;
    const char * error = ggml_get_error(ctx.get());
    ASSERT_NE(error, nullptr) << c.what;
    EXPECT_TRUE(contains(error, sol ? "sd.sol_attn.v1" : "sd.sage_attn.v1")) << error;
    EXPECT_TRUE(contains(error, c.reason)) << c.what << ": " << error;
}

TEST(SdAttention, SageRejectsEachInvalidInputWithItsReason) {
    const auto f32 = GGML_TYPE_F32, f16 = GGML_TYPE_F16;
    const float inf = INFINITY, nan = NAN;
    const BadAttn cases[] = {
        {"q f16",
         f16,
         f32,
         f16,
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         1,
         0,
         false,
         "q and k must be contiguous f32"},
        {"k f16",
         f32,
         f16,
         f16,
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         1,
         0,
         false,
         "q and k must be contiguous f32"},
        {"q strided",
         f32,
         f32,
         f16,
         {4, 64, 2, 1},
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         1,
         0,
         true,
         "(non-contiguous)"},
        {"v f32",
         f32,
         f32,
         f32,
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         1,
         0,
         false,
         "v must be contiguous f16"},
        {"v shape",
         f32,
         f32,
         f16,
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         {64, 5, 2, 1},
         1,
         0,
         false,
         "v must have the shape of k"},
        {"D mismatch",
         f32,
         f32,
         f16,
         {32, 4, 2, 1},
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         1,
         0,
         false,
         "q.ne0 must equal k.ne0"},
        {"GQA",
         f32,
         f32,
         f16,
         {64, 4, 3, 1},
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         1,
         0,
         false,
         "must be a multiple of kv heads"},
        {"batch", f32, f32, f16, {64, 4, 2, 2}, {64, 4, 2, 1}, {64, 4, 2, 1}, 1, 0, false, "the same batch"},
        {"no keys",
         f32,
         f32,
         f16,
         {64, 4, 2, 1},
         {64, 0, 2, 1},
         {64, 0, 2, 1},
         1,
         0,
         false,
         "at least one token"},
        {"scale 0",
         f32,
         f32,
         f16,
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         0,
         0,
         false,
         "scale must be finite and > 0"},
        {"scale < 0",
         f32,
         f32,
         f16,
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         -1,
         0,
         false,
         "scale must be finite and > 0"},
        {"scale inf",
         f32,
         f32,
         f16,
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         inf,
         0,
         false,
         "scale must be finite"},
        {"scale nan",
         f32,
         f32,
         f16,
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         nan,
         0,
         false,
         "scale must be finite"},
        {"mode", f32, f32, f16, {64, 4, 2, 1}, {64, 4, 2, 1}, {64, 4, 2, 1}, 1, 3, false, "unknown mode 3"},
    };
    for (const BadAttn & c : cases)
        expect_rejected(c, false);
}

TEST(SdAttention, SolRejectsEachInvalidInputWithItsReason) {
    const auto f32 = GGML_TYPE_F32, f16 = GGML_TYPE_F16;
    const float inf = INFINITY, nan = NAN;
    const BadAttn cases[] = {
        {"q f16",
         f16,
         f32,
         f32,
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         1,
         0,
         false,
         "must be contiguous f32"},
        {"v f16",
         f32,
         f32,
         f16,
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         1,
         0,
         false,
         "must be contiguous f32"},
        {"q strided",
         f32,
         f32,
         f32,
         {4, 128, 2, 1},
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         1,
         0,
         true,
         "must be contiguous f32"},
        {"GQA",
         f32,
         f32,
         f32,
         {128, 4, 4, 1},
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         1,
         0,
         false,
         "identical shapes"},
        {"tokens",
         f32,
         f32,
         f32,
         {128, 4, 2, 1},
         {128, 5, 2, 1},
         {128, 5, 2, 1},
         1,
         0,
         false,
         "identical shapes"},
        {"D 64",
         f32,
         f32,
         f32,
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         {64, 4, 2, 1},
         1,
         0,
         false,
         "head size ne0 must be 128"},
        {"T 0",
         f32,
         f32,
         f32,
         {128, 0, 2, 1},
         {128, 0, 2, 1},
         {128, 0, 2, 1},
         1,
         0,
         false,
         "at least one token"},
        {"scale 0",
         f32,
         f32,
         f32,
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         0,
         0,
         false,
         "scale must be finite and > 0"},
        {"scale nan",
         f32,
         f32,
         f32,
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         nan,
         0,
         false,
         "scale must be finite"},
        {"tau inf",
         f32,
         f32,
         f32,
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         1,
         inf,
         false,
         "tau must be finite"},
        {"tau nan",
         f32,
         f32,
         f32,
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         {128, 4, 2, 1},
         1,
         nan,
         false,
         "tau must be finite"},
    };
    for (const BadAttn & c : cases)
        expect_rejected(c, true);
}

// ---- Sage's numerical contract ------------------------------------------------------------------

// The contract's scale factors 1.0 and 0.7 multiply the usual 1/sqrt(D).
TEST(SdSageAttention, MeetsTheContractAgainstExactAttention) {
    uint32_t seed = 1;
    for (const SageShape & s : kSageShapes)
        for (const float factor : {1.0f, 0.7f})
            for (const Fill k_fill : {Fill::normal, Fill::biased}) {
                SCOPED_TRACE(describe(s, factor, k_fill));
                const Result r = sage(s, factor / std::sqrt(static_cast<float>(s.d)), Fill::normal, k_fill,
                                      Fill::normal, seed++);
                EXPECT_LT(rel_l2(r), 0.05);
                EXPECT_LT(max_abs(r), 0.05);  // also fails on a non-finite output
            }
}

// A literal scale of 1.0 or 0.7 (logits with a standard deviation up to 4 at D 128: near-argmax
// softmax): the relative L2 bound holds; the max abs error is larger (INT8 logit error of about 0.05
// moves the few dominant weights) and is printed, bounded by 0.15.
TEST(SdSageAttention, LiteralScalesMeetTheRelativeBound) {
    uint32_t seed = 100;
    for (const SageShape & s : kSageShapes)
        for (const float scale : {1.0f, 0.7f}) {
            SCOPED_TRACE(describe(s, scale, Fill::biased));
            const Result r = sage(s, scale, Fill::normal, Fill::biased, Fill::normal, seed++);
            EXPECT_LT(rel_l2(r), 0.05);
            EXPECT_LT(max_abs(r), 0.15);
            std::printf("sd.sage_attn.v1 %s: relative L2 %.4f, max abs %.4f\n",
                        describe(s, scale, Fill::biased).c_str(), rel_l2(r), max_abs(r));
        }
}

TEST(SdSageAttention, ZeroQueriesAndKeysGiveTheMeanOfV) {
    const SageShape s{128, 70, 130, 4, 2};
    const Result r = sage(s, 1.0f, Fill::zeros, Fill::zeros, Fill::normal, 3);
    EXPECT_LT(max_abs(r), 1e-6);
}

TEST(SdSageAttention, ZeroValuesGiveZero) {
    const Result r = sage({64, 70, 130, 3, 3}, 0.7f, Fill::normal, Fill::biased, Fill::zeros, 4);
    for (double y : r.got)
        ASSERT_EQ(y, 0.0);
}

// ---- Sol ----------------------------------------------------------------------------------------

struct SolRun {
    Result sol;
    std::vector<double> dense;  // native flash attention over the same inputs
};

SolRun sol(int64_t t, int64_t h, float scale, float tau, uint32_t seed) {
    std::mt19937 rng(seed);
    Context ctx(ggml_init({size_t{256} << 20, nullptr, false}));
    ggml_tensor * in[3];
    for (ggml_tensor *& x : in) {
        x = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 128, t, h, 1);
        fill(x, Fill::normal, rng);
    }
    ggml_tensor * y = ggml_sol_attn(ctx.get(), in[0], in[1], in[2], scale, tau);
    ggml_tensor * dense = ggml_flash_attn_ext(ctx.get(), in[0], in[1], in[2], nullptr, scale, 0.0f, 0.0f);
    EXPECT_NE(y, nullptr) << ggml_get_error(ctx.get());
    SolRun out{run(ctx.get(), y), {}};
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(g, dense);
    EXPECT_EQ(ggml_backend_graph_compute(backend(), g), GGML_STATUS_SUCCESS);
    out.dense = ggx::ref::read_tensor(dense);
    return out;
}

TEST(SdSolAttention, VeryNegativeTauIsDenseAttention) {
    for (const int64_t t : {1, 64, 100, 500}) {
        const SolRun r = sol(t, 2, 1.0f / std::sqrt(128.0f), -100.0f, 5);
        EXPECT_LE(ggx::ref::nmse(r.sol.got, r.dense), 1e-10) << "T=" << t;
        EXPECT_LE(ggx::ref::nmse(r.sol.got, r.sol.want), 1e-10) << "T=" << t;
    }
}

// Typical tau prunes tiles (the result leaves dense attention) and matches the oracle's selection.
TEST(SdSolAttention, TypicalTauPoolsTilesAsTheOracleDoes) {
    for (const float scale : {1.0f / std::sqrt(128.0f), 1.0f}) {
        double previous = 0.0;
        for (const float tau : {0.5f, 0.9f, 1.3f}) {
            const SolRun r = sol(1042, 1, scale, tau, 6);
            EXPECT_LE(ggx::ref::nmse(r.sol.got, r.sol.want), 1e-10) << "tau " << tau;
            const double off_dense = std::sqrt(ggx::ref::nmse(r.sol.got, r.dense));
            EXPECT_GE(off_dense, previous) << "tau " << tau << ": a larger tau pools at least as many tiles";
            previous = off_dense;
            std::printf(
                "sd.sol_attn.v1 T=1042 scale=%.4f tau=%.1f: relative L2 distance to dense attention %.4f\n",
                scale, tau, off_dense);
        }
        EXPECT_GT(previous, 0.0) << "tau 1.3 pooled no tile";
    }
    // Sequences of at most two tiles stay dense whatever tau says.
    const SolRun r = sol(128, 2, 1.0f, 1.3f, 7);
    EXPECT_LE(ggx::ref::nmse(r.sol.got, r.dense), 1e-10);
}

// ---- kernel conformance -------------------------------------------------------------------------

bool reference(const ggml_tensor * node, const double * const * inputs, double * output, void *) {
    std::vector<std::vector<double>> in;
    for (int i = 0; i < 3; ++i)
        in.emplace_back(inputs[i], inputs[i] + ggml_nelements(node->src[i]));
    const std::vector<double> y = ggx::ref::sd::attention(node, in);
    std::copy(y.begin(), y.end(), output);
    return true;
}

TEST(SdAttention, KernelsPassTheConformanceCheck) {
    const sd::attention::SageAttrs sage_attrs{0.7f, GGML_SAGE_ATTN_AUTO};
    const sd::attention::SolAttrs dense{0.125f, -100.0f}, sparse{1.0f, 0.9f};
    std::vector<ggml_ext_check_case> sage_cases = {check_case("sage D64 Tq5 Tk70 H4/2",
                                                              {{GGML_TYPE_F32, {64, 5, 4, 1}},
                                                               {GGML_TYPE_F32, {64, 70, 2, 1}},
                                                               {GGML_TYPE_F16, {64, 70, 2, 1}}},
                                                              &sage_attrs, sizeof sage_attrs),
                                                   check_case("sage D128 Tq65 Tk3 H3/1 B2",
                                                              {{GGML_TYPE_F32, {128, 65, 3, 2}},
                                                               {GGML_TYPE_F32, {128, 3, 1, 2}},
                                                               {GGML_TYPE_F16, {128, 3, 1, 2}}},
                                                              &sage_attrs, sizeof sage_attrs)};
    const CheckResult s =
        check_kernel(backend(), sd::attention::cpu_sage_kernel(), sage_cases, 0.05 * 0.05, 21, reference);
    EXPECT_TRUE(s.passed) << s.report.first_failure;
    EXPECT_EQ(s.report.n_passed, s.report.n_cases);

    std::vector<ggml_ext_check_case> sol_cases = {check_case("sol T70 H2 dense",
                                                             {{GGML_TYPE_F32, {128, 70, 2, 1}},
                                                              {GGML_TYPE_F32, {128, 70, 2, 1}},
                                                              {GGML_TYPE_F32, {128, 70, 2, 1}}},
                                                             &dense, sizeof dense),
                                                  check_case("sol T300 tau 0.9",
                                                             {{GGML_TYPE_F32, {128, 300, 1, 2}},
                                                              {GGML_TYPE_F32, {128, 300, 1, 2}},
                                                              {GGML_TYPE_F32, {128, 300, 1, 2}}},
                                                             &sparse, sizeof sparse)};
    const CheckResult t =
        check_kernel(backend(), sd::attention::cpu_sol_kernel(), sol_cases, 1e-10, 22, reference);
    EXPECT_TRUE(t.passed) << t.report.first_failure;
    EXPECT_EQ(t.report.n_passed, t.report.n_cases);
}

// The CPU kernels are selected; no other device (Vulkan) claims the operators, so the scheduler runs
// them on the CPU.
TEST(SdAttention, OnlyTheCpuSupportsTheOperators) {
    Context ctx(ggml_init({1 << 20, nullptr, true}));
    ggml_tensor * q = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 128, 4, 2, 1);
    ggml_tensor * v = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F16, 128, 4, 2, 1);
    ggml_tensor * nodes[] = {ggml_sage_attn(ctx.get(), q, q, v, 1.0f, GGML_SAGE_ATTN_AUTO),
                             ggml_sol_attn(ctx.get(), q, q, q, 1.0f, 0.9f)};
    const char * kernels[] = {"sd.sage_attn.cpu", "sd.sol_attn.cpu"};
    for (size_t n = 0; n < 2; ++n) {
        ASSERT_NE(nodes[n], nullptr);
        for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
            ggml_backend_dev_t dev = ggml_backend_dev_get(i);
            const bool cpu = ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU;
            EXPECT_EQ(ggml_backend_dev_supports_op(dev, nodes[n]), cpu) << ggml_backend_dev_name(dev);
            if (cpu) {
                EXPECT_STREQ(ggml_ext_dev_selected_kernel(dev, nodes[n]), kernels[n]);
            }
        }
    }
}

}  // namespace
