// The oracle checked against hand-computed values: one or more small cases per operator, the
// storage model (views, in-place results, copies into views, rounding to the storage type), the
// host I/O helpers, nmse and conv2d_direct. Each expected value is a literal with the arithmetic
// that produced it in a comment.
#include "reference/reference.h"

#include <ggml-graph.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using ggx::ref::Error;
using ggx::ref::Evaluator;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Results stored as F32 carry a relative rounding error of at most 2^-24.
constexpr double kF32 = 1e-6;

// |a - e| <= tol * max(1, |e|) element-wise; NaN matches NaN, infinities must be equal.
void expect_values(const std::vector<double> & actual, const std::vector<double> & expected,
                   double tol = 0.0) {
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
        SCOPED_TRACE("element " + std::to_string(i));
        const double a = actual[i], e = expected[i];
        if (std::isnan(e)) {
            EXPECT_TRUE(std::isnan(a)) << a;
        } else if (std::isinf(e)) {
            EXPECT_EQ(a, e);
        } else {
            EXPECT_LE(std::fabs(a - e), tol * std::max(1.0, std::fabs(e)))
                << "actual " << a << " expected " << e;
        }
    }
}

class Reference : public ::testing::Test {
protected:
    void SetUp() override {
        ctx_ = ggml_init({size_t{32} << 20, nullptr, false});
        ASSERT_NE(ctx_, nullptr);
    }
    void TearDown() override { ggml_free(ctx_); }

    // A host leaf of type and shape ne holding values (converted to type by write_tensor).
    ggml_tensor * leaf(ggml_type type, std::vector<int64_t> ne, const std::vector<double> & values) {
        ggml_tensor * t = ggml_new_tensor(ctx_, type, static_cast<int>(ne.size()), ne.data());
        EXPECT_NE(t, nullptr) << (ggml_get_error(ctx_) ? ggml_get_error(ctx_) : "");
        if (t != nullptr) ggx::ref::write_tensor(t, values);
        return t;
    }
    ggml_tensor * f32(std::vector<int64_t> ne, const std::vector<double> & values) {
        return leaf(GGML_TYPE_F32, std::move(ne), values);
    }
    ggml_tensor * i32(std::vector<int64_t> ne, const std::vector<double> & values) {
        return leaf(GGML_TYPE_I32, std::move(ne), values);
    }

    // Build a graph ending at out, evaluate it with ev_ and return out's values.
    std::vector<double> run(ggml_tensor * out) {
        EXPECT_NE(out, nullptr) << (ggml_get_error(ctx_) ? ggml_get_error(ctx_) : "");
        if (out == nullptr) return {};
        ggml_cgraph * graph = ggml_new_graph(ctx_);
        ggml_build_forward_expand(graph, out);
        EXPECT_TRUE(ggml_graph_is_valid(graph));
        ev_.compute(graph);
        return ev_.values(out);
    }

    ggml_context * ctx_ = nullptr;
    Evaluator ev_;
};

// ---------------------------------------------------------------------------------------------
// Host I/O

TEST_F(Reference, WriteAndReadRoundToTheTensorType) {
    // F16: 0.1f -> 0x2E66 = 0.0999755859375; 65520 is halfway between 65504 and 2^16 and rounds
    // (to even) to infinity; 3e-8 is above half the smallest subnormal 2^-24 = 5.960464477539063e-08.
    ggml_tensor * h = leaf(GGML_TYPE_F16, {3}, {0.1, 65520.0, 3e-8});
    expect_values(ggx::ref::read_tensor(h), {0.0999755859375, kInf, 5.960464477539063e-08});
    // I32: round half to even, saturate, NaN -> 0.
    ggml_tensor * i = i32({6}, {2.5, 3.5, -2.5, 1e10, -1e10, kNaN});
    expect_values(ggx::ref::read_tensor(i), {2, 4, -2, 2147483647, -2147483648.0, 0});
    // I8 saturates at 127 / -128; 1.5 -> 2 (even).
    ggml_tensor * b = leaf(GGML_TYPE_I8, {3}, {300, -300, 1.5});
    expect_values(ggx::ref::read_tensor(b), {127, -128, 2});
    // BF16 stores 7 fraction bits: 1 + 2^-8 is the tie between 1 and 1 + 2^-7 and rounds to even (1).
    ggml_tensor * bf = leaf(GGML_TYPE_BF16, {2}, {1.0 + std::ldexp(1.0, -8), 3.0});
    expect_values(ggx::ref::read_tensor(bf), {1.0, 3.0});
}

TEST_F(Reference, ReadThroughStrides) {
    // a [3, 2] = rows (1 2 3), (4 5 6); its transpose [2, 3] reads t[i0, i1] = a[i1, i0].
    ggml_tensor * a = f32({3, 2}, {1, 2, 3, 4, 5, 6});
    ggml_tensor * t = ggml_transpose(ctx_, a);
    ASSERT_NE(t, nullptr);
    expect_values(ggx::ref::read_tensor(t), {1, 4, 2, 5, 3, 6});
    // Writing through the transpose lands in a's storage transposed.
    ggx::ref::write_tensor(t, std::vector<double>{10, 40, 20, 50, 30, 60});
    expect_values(ggx::ref::read_tensor(a), {10, 20, 30, 40, 50, 60});
}

TEST_F(Reference, QuantizedHostRoundTrip) {
    // Q8_0 block with amax 127: d = 1, q = round-half-away(x): 0.4 -> 0, 0.6 -> 1, -63.5 -> -64.
    std::vector<double> x(32, 0.0);
    x[0] = 127;
    x[1] = 0.4;
    x[2] = 0.6;
    x[3] = -63.5;
    ggml_tensor * q = leaf(GGML_TYPE_Q8_0, {32}, x);
    std::vector<double> e(32, 0.0);
    e[0] = 127;
    e[1] = 0;
    e[2] = 1;
    e[3] = -64;
    expect_values(ggx::ref::read_tensor(q), e);
}

// ---------------------------------------------------------------------------------------------
// Layout and copies

TEST_F(Reference, ViewReshapePermuteTranspose) {
    ggml_tensor * a = f32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
    // view_2d: 2 x 2 starting at element 1 with a's row stride -> (1 2), (5 6).
    ggml_tensor * v = ggml_view_2d(ctx_, a, 2, 2, a->nb[1], sizeof(float));
    expect_values(run(ggml_cont(ctx_, v)), {1, 2, 5, 6});
    expect_values(ev_.values(v), {1, 2, 5, 6});
    // reshape [4, 2] -> [2, 4]: same flat order.
    expect_values(run(ggml_cont(ctx_, ggml_reshape_2d(ctx_, a, 2, 4))), {0, 1, 2, 3, 4, 5, 6, 7});
    // transpose of [4, 2]: t[i0, i1] = a[i1, i0] -> (0 4), (1 5), (2 6), (3 7).
    expect_values(run(ggml_cont(ctx_, ggml_transpose(ctx_, a))), {0, 4, 1, 5, 2, 6, 3, 7});

    // permute(b, 2, 0, 1, 3) of b [2, 3, 2] with b(i0, i1, i2) = i0 + 2 i1 + 6 i2: result [3, 2, 2]
    // with r(j0, j1, j2) = b(j2, j0, j1) = j2 + 2 j0 + 6 j1.
    ggml_tensor * b = f32({2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    ggml_tensor * p = ggml_permute(ctx_, b, 2, 0, 1, 3);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->ne[0], 3);
    EXPECT_EQ(p->ne[1], 2);
    EXPECT_EQ(p->ne[2], 2);
    expect_values(run(ggml_cont(ctx_, p)), {0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11});
}

TEST_F(Reference, DupAndContOfTransposedViews) {
    ggml_tensor * a = f32({3, 2}, {1, 2, 3, 4, 5, 6});
    // dup of the transpose [2, 3]: (1 4), (2 5), (3 6).
    expect_values(run(ggml_dup(ctx_, ggml_transpose(ctx_, a))), {1, 4, 2, 5, 3, 6});
    // cont_4d of the transpose to [3, 2]: same flat order (1 4 2), (5 3 6).
    ggml_tensor * c = ggml_cont_4d(ctx_, ggml_transpose(ctx_, a), 3, 2, 1, 1);
    expect_values(run(c), {1, 4, 2, 5, 3, 6});
    EXPECT_EQ(c->ne[0], 3);
    // DUP keeps the type: an F16 dup of 0.1 is F16(0.1) = 0.0999755859375.
    ggml_tensor * h = leaf(GGML_TYPE_F16, {1}, {0.1});
    expect_values(run(ggml_dup(ctx_, h)), {0.0999755859375});
}

TEST_F(Reference, CpyIntoF16RoundsEachValue) {
    // (float)0.1 -> F16 0.0999755859375; 65520 -> inf (tie to even past 65504); 3e-8 -> 2^-24.
    ggml_tensor * a = f32({3}, {0.1, 65520.0, 3e-8});
    ggml_tensor * b = leaf(GGML_TYPE_F16, {3}, {0, 0, 0});
    ggml_tensor * r = ggml_cpy(ctx_, a, b);
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->view_src, b);
    expect_values(run(r), {0.0999755859375, kInf, 5.960464477539063e-08});
    expect_values(ev_.values(b), {0.0999755859375, kInf, 5.960464477539063e-08});
}

TEST_F(Reference, CpyIntoQuantizedRoundsEachBlock) {
    // Q8_0, one block with amax 127 -> d = 127 / 127 = 1: q = round-half-away(x).
    // x = [127, 0.4, 0.6, -63.5, 0...] -> [127, 0, 1, -64, 0...].
    std::vector<double> x(32, 0.0), e8(32, 0.0);
    x[0] = 127;
    x[1] = 0.4;
    x[2] = 0.6;
    x[3] = -63.5;
    e8[0] = 127;
    e8[2] = 1;
    e8[3] = -64;
    ggml_tensor * q8 = leaf(GGML_TYPE_Q8_0, {32}, std::vector<double>(32, 0.0));
    expect_values(run(ggml_cpy(ctx_, f32({32}, x), q8)), e8);

    // Q4_0: largest magnitude m = -8 -> d = m / -8 = 1; q = min(15, trunc(x / d + 8.5)), value q - 8.
    // 0.4 -> trunc(8.9) = 8 -> 0; 0.6 -> 9 -> 1; 7.7 -> min(15, 16) -> 7; -3.5 -> 5 -> -3;
    // -3.6 -> trunc(4.9) = 4 -> -4.
    std::vector<double> y(32, 0.0), e4(32, 0.0);
    y[0] = -8;
    y[1] = 0.4;
    y[2] = 0.6;
    y[3] = 7.7;
    y[4] = -3.5;
    y[5] = -3.6;
    e4[0] = -8;
    e4[1] = 0;
    e4[2] = 1;
    e4[3] = 7;
    e4[4] = -3;
    e4[5] = -4;
    ggml_tensor * q4 = leaf(GGML_TYPE_Q4_0, {32}, std::vector<double>(32, 0.0));
    expect_values(run(ggml_cpy(ctx_, f32({32}, y), q4)), e4);

    // Quantized -> F32 copy reads the dequantized values.
    expect_values(run(ggml_cast(ctx_, q8, GGML_TYPE_F32)), e8);
}

TEST_F(Reference, CpyFlatOrderAndIntoAView) {
    // A transposed [2, 3] source copied into a contiguous [3, 2]: flat order (1 4 2 5 3 6).
    ggml_tensor * a = f32({3, 2}, {1, 2, 3, 4, 5, 6});
    ggml_tensor * dst = f32({3, 2}, {0, 0, 0, 0, 0, 0});
    expect_values(run(ggml_cpy(ctx_, ggml_transpose(ctx_, a), dst)), {1, 4, 2, 5, 3, 6});

    // Copy into a view of elements 1..2 of a [4] destination: the rest keeps its values.
    ggml_tensor * cache = f32({4}, {9, 9, 9, 9});
    ggml_tensor * slot = ggml_view_1d(ctx_, cache, 2, sizeof(float));
    ggml_tensor * r = ggml_cpy(ctx_, f32({2}, {7, 8}), slot);
    expect_values(run(r), {7, 8});
    expect_values(ev_.values(cache), {9, 7, 8, 9});
    // ggml_cast to BF16: 1 + 2^-8 ties to even, 1.
    expect_values(run(ggml_cast(ctx_, f32({1}, {1.0 + std::ldexp(1.0, -8)}), GGML_TYPE_BF16)), {1.0});
}

// ---------------------------------------------------------------------------------------------
// Element-wise

TEST_F(Reference, BinaryOpsBroadcastB) {
    // a [3, 2] = rows (1 2 3), (4 5 6).
    ggml_tensor * a = f32({3, 2}, {1, 2, 3, 4, 5, 6});
    // b [3, 1] tiled over rows: (1+10 2+20 3+30), (4+10 5+20 6+30).
    expect_values(run(ggml_add(ctx_, a, f32({3, 1}, {10, 20, 30}))), {11, 22, 33, 14, 25, 36});
    // b [1, 2] tiled along rows: row 0 minus 1, row 1 minus 2.
    expect_values(run(ggml_sub(ctx_, a, f32({1, 2}, {1, 2}))), {0, 1, 2, 2, 3, 4});
    // b [1, 1] = 2 everywhere.
    expect_values(run(ggml_mul(ctx_, a, f32({1}, {2}))), {2, 4, 6, 8, 10, 12});
    // b [3] = (1 2 4): 1/1 2/2 3/4, 4/1 5/2 6/4.
    expect_values(run(ggml_div(ctx_, a, f32({3}, {1, 2, 4}))), {1, 1, 0.75, 4, 2.5, 1.5});
    // b [1, 1, 2] tiled over a [1, 1, 4] in dim 2: (1+1, 2+10, 3+1, 4+10).
    expect_values(run(ggml_add(ctx_, f32({1, 1, 4}, {1, 2, 3, 4}), f32({1, 1, 2}, {1, 10}))), {2, 12, 4, 14});
}

TEST_F(Reference, BinaryResultRoundsToTheResultType) {
    // F16 a: 1 + 0.0001 is below half an F16 ulp at 1 (2^-11 = 0.00049), so it rounds to 1;
    // 1 + 0.001 rounds to 1 + 2^-10 = 1.0009765625.
    ggml_tensor * a = leaf(GGML_TYPE_F16, {2}, {1, 1});
    expect_values(run(ggml_add(ctx_, a, f32({2}, {0.0001, 0.001}))), {1.0, 1.0009765625});
}

TEST_F(Reference, InPlaceOpWritesOverItsInput) {
    ggml_tensor * a = f32({3}, {1, 2, 3});
    ggml_tensor * doubled = ggml_scale_inplace(ctx_, a, 2.0f);
    ASSERT_NE(doubled, nullptr);
    ASSERT_EQ(doubled->view_src, a);
    // a is overwritten with (2 4 6); the add then reads the new a twice: 2a + 2a = (4 8 12).
    ggml_tensor * sum = ggml_add(ctx_, doubled, a);
    expect_values(run(sum), {4, 8, 12});
    expect_values(ev_.values(a), {2, 4, 6});
    expect_values(ev_.values(doubled), {2, 4, 6});
    // ggml_add_inplace: (2 4 6) + (1 1 1) written over a.
    ggml_tensor * b = f32({3}, {2, 4, 6});
    ggml_tensor * r = ggml_add_inplace(ctx_, b, f32({1}, {1}));
    expect_values(run(r), {3, 5, 7});
    expect_values(ev_.values(b), {3, 5, 7});
}

TEST_F(Reference, InPlaceOpThroughATransposedView) {
    // a [2, 2] = rows (1 2), (3 4); t = transpose(a) = rows (1 3), (2 4). sub_inplace(t, b = (1 2))
    // gives rows (0 1), (1 2), written back through the view: a[i0, i1] = r[i1, i0] = rows (0 1), (1 2).
    ggml_tensor * a = f32({2, 2}, {1, 2, 3, 4});
    ggml_tensor * r = ggml_sub_inplace(ctx_, ggml_transpose(ctx_, a), f32({2, 1}, {1, 2}));
    expect_values(run(r), {0, 1, 1, 2});
    expect_values(ev_.values(a), {0, 1, 1, 2});
}

TEST_F(Reference, ScaleSqrSqrtClamp) {
    ggml_tensor * a = f32({2}, {1, -2});
    // 1 * 3 + 0.5 = 3.5, -2 * 3 + 0.5 = -5.5.
    expect_values(run(ggml_scale_bias(ctx_, a, 3.0f, 0.5f)), {3.5, -5.5});
    expect_values(run(ggml_scale(ctx_, a, 0.5f)), {0.5, -1});
    // (-3)^2 = 9, 0.5^2 = 0.25.
    expect_values(run(ggml_sqr(ctx_, f32({2}, {-3, 0.5}))), {9, 0.25});
    // sqrt 4 = 2, sqrt 2.25 = 1.5, sqrt -1 = NaN.
    expect_values(run(ggml_sqrt(ctx_, f32({3}, {4, 2.25, -1}))), {2, 1.5, kNaN});
    // clamp to [-1, 2]: -5 -> -1, 0.5 stays, 7 -> 2.
    expect_values(run(ggml_clamp(ctx_, f32({3}, {-5, 0.5, 7}), -1.0f, 2.0f)), {-1, 0.5, 2});
}

TEST_F(Reference, UnaryOps) {
    ggml_tensor * x = f32({3}, {-1, 0, 2});
    expect_values(run(ggml_relu(ctx_, x)), {0, 0, 2});
    // silu x / (1 + e^-x): -1 / (1 + e) = -0.26894, 2 / (1 + e^-2) = 1.76159.
    expect_values(run(ggml_silu(ctx_, x)), {-0.2689414213699951, 0, 1.7615941559557646}, kF32);
    // gelu 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): x = -1 -> -0.158808, x = 2 -> 1.954598.
    expect_values(run(ggml_gelu(ctx_, x)), {-0.15880800939172324, 0, 1.954597694087775}, kF32);
    // gelu_quick x / (1 + e^(-1.702 x)).
    expect_values(run(ggml_gelu_quick(ctx_, x)), {-0.1542042340671787, 0, 1.9356586231442083}, kF32);
    // sigmoid 1 / (1 + e^-x).
    expect_values(run(ggml_sigmoid(ctx_, x)), {0.2689414213699951, 0.5, 0.8807970779778823}, kF32);
    expect_values(run(ggml_tanh(ctx_, x)), {-0.7615941559557649, 0, 0.9640275800758169}, kF32);
    // The generic constructor, in place over a copy of x.
    ggml_tensor * y = f32({3}, {-1, 0, 2});
    expect_values(run(ggml_unary_inplace(ctx_, y, GGML_UNARY_OP_RELU)), {0, 0, 2});
    expect_values(ev_.values(y), {0, 0, 2});
}

TEST_F(Reference, GatedLinearUnits) {
    // Merged a [4] = x (1 -1) | g (2 3): silu(1) * 2 = 1.46212, silu(-1) * 3 = -0.80682.
    ggml_tensor * a = f32({4, 1}, {1, -1, 2, 3});
    expect_values(run(ggml_swiglu(ctx_, a)), {1.4621171572600098, -0.8068242641099853}, kF32);
    // Swapped: x = (2 3), g = (1 -1): silu(2) * 1 = 1.76159, silu(3) * -1 = -2.85772.
    expect_values(run(ggml_swiglu_swapped(ctx_, a)), {1.7615941559557646, -2.8577223804673}, kF32);
    // GEGLU merged: gelu(1) * 2 = 1.68238, gelu(-1) * 3 = -0.47642.
    expect_values(run(ggml_geglu(ctx_, a)), {2 * 0.8411919906082768, 3 * -0.15880800939172324}, kF32);
    // Split: gelu(1) * 2 and silu(1) * 2.
    expect_values(run(ggml_geglu_split(ctx_, f32({1}, {1}), f32({1}, {2}))), {1.6823839812165536}, kF32);
    expect_values(run(ggml_swiglu_split(ctx_, f32({1}, {1}), f32({1}, {2}))), {1.4621171572600098}, kF32);
}

// ---------------------------------------------------------------------------------------------
// Reductions

TEST_F(Reference, Reductions) {
    // a [2, 2] = (1 2), (3 4).
    ggml_tensor * a = f32({2, 2}, {1, 2, 3, 4});
    expect_values(run(ggml_sum(ctx_, a)), {10});
    expect_values(run(ggml_sum_rows(ctx_, a)), {3, 7});
    expect_values(run(ggml_mean(ctx_, a)), {1.5, 3.5});
    // First maximum of each row: (1 5 5) -> 1, (7 0 7) -> 0.
    ggml_tensor * m = f32({3, 2}, {1, 5, 5, 7, 0, 7});
    ggml_tensor * am = ggml_argmax(ctx_, m);
    ASSERT_NE(am, nullptr);
    EXPECT_EQ(am->type, GGML_TYPE_I32);
    expect_values(run(am), {1, 0});
}

// ---------------------------------------------------------------------------------------------
// Shape ops

TEST_F(Reference, RepeatAndConcat) {
    // a [2, 1] = (1 2) tiled to [4, 2].
    ggml_tensor * shape = f32({4, 2}, std::vector<double>(8, 0.0));
    expect_values(run(ggml_repeat(ctx_, f32({2, 1}, {1, 2}), shape)), {1, 2, 1, 2, 1, 2, 1, 2});
    // Along dim 1: a [2, 1] = (1 2) then b [2, 2] = (3 4), (5 6).
    expect_values(run(ggml_concat(ctx_, f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6}), 1)),
                  {1, 2, 3, 4, 5, 6});
    // Along dim 0: a [1, 2] = (1), (2) and b [2, 2] = (3 4), (5 6) -> (1 3 4), (2 5 6).
    expect_values(run(ggml_concat(ctx_, f32({1, 2}, {1, 2}), f32({2, 2}, {3, 4, 5, 6}), 0)),
                  {1, 3, 4, 2, 5, 6});
    // I32 along dim 2.
    expect_values(run(ggml_concat(ctx_, i32({1, 1, 1}, {7}), i32({1, 1, 2}, {8, 9}), 2)), {7, 8, 9});
}

TEST_F(Reference, PadAndPadExt) {
    // a [2, 1] = (1 2), lp0 = 1, rp0 = 2, rp1 = 1: [5, 2] = (0 1 2 0 0), (0 0 0 0 0).
    ggml_tensor * a = f32({2, 1}, {1, 2});
    expect_values(run(ggml_pad_ext(ctx_, a, 1, 2, 0, 1, 0, 0, 0, 0)), {0, 1, 2, 0, 0, 0, 0, 0, 0, 0});
    // ggml_pad pads after: p0 = 1 -> (1 2 0).
    expect_values(run(ggml_pad(ctx_, a, 1, 0, 0, 0)), {1, 2, 0});
    // Padding before dim 1: lp1 = 1 -> (0 0), (1 2).
    expect_values(run(ggml_pad_ext(ctx_, a, 0, 0, 1, 0, 0, 0, 0, 0)), {0, 0, 1, 2});
}

TEST_F(Reference, UpscaleNearest) {
    ggml_tensor * a = f32({2, 1}, {1, 2});
    // Factor 2 on dims 0 and 1: [4, 2] = (1 1 2 2) twice.
    expect_values(run(ggml_upscale(ctx_, a, 2, GGML_SCALE_MODE_NEAREST)), {1, 1, 2, 2, 1, 1, 2, 2});
    // To [3, 1]: source index floor(i * 2 / 3) = 0, 0, 1.
    expect_values(run(ggml_upscale_ext(ctx_, a, 3, 1, 1, 1, GGML_SCALE_MODE_NEAREST)), {1, 1, 2});
}

// ---------------------------------------------------------------------------------------------
// Normalisation

TEST_F(Reference, RowNorms) {
    // NORM of (1 2 3 4): mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25; eps 0.75 makes
    // the denominator sqrt(2): (-1.5 -0.5 0.5 1.5) / sqrt(2).
    expect_values(run(ggml_norm(ctx_, f32({4}, {1, 2, 3, 4}), 0.75f)),
                  {-1.0606601717798212, -0.35355339059327373, 0.35355339059327373, 1.0606601717798212}, kF32);
    // RMS_NORM of (3 4): mean square 12.5, + eps 3.5 = 16 -> / 4.
    expect_values(run(ggml_rms_norm(ctx_, f32({2}, {3, 4}), 3.5f)), {0.75, 1.0});
    // L2_NORM: (3 4) / max(5, 1); (0.25 0) / max(0.25, 0.5) = (0.5 0).
    expect_values(run(ggml_l2_norm(ctx_, f32({2, 2}, {3, 4, 0.25, 0}), 1.0f)), {0.6, 0.8, 0.25, 0}, kF32);
    expect_values(run(ggml_l2_norm(ctx_, f32({2}, {0.25, 0}), 0.5f)), {0.5, 0});
    // In place over a second tensor: norm_inplace of (1 3) with eps 0: (-1 1).
    ggml_tensor * b = f32({2}, {1, 3});
    expect_values(run(ggml_norm_inplace(ctx_, b, 0.0f)), {-1, 1});
    expect_values(ev_.values(b), {-1, 1});
}

TEST_F(Reference, GroupNormWithNonDivisibleGroups) {
    // a [2, 1, 3, 1], 2 groups of ceil(3 / 2) = 2 channels: {c0, c1} and {c2}.
    // c0 = (1 2), c1 = (3 4): mean 2.5, variance 1.25 -> (x - 2.5) / sqrt(1.25).
    // c2 = (10 14): mean 12, variance 4 -> (-1 1). eps 0.
    ggml_tensor * a = f32({2, 1, 3, 1}, {1, 2, 3, 4, 10, 14});
    expect_values(run(ggml_group_norm(ctx_, a, 2, 0.0f)),
                  {-1.3416407864998738, -0.4472135954999579, 0.4472135954999579, 1.3416407864998738, -1, 1},
                  kF32);
    // C = 5, G = 4: ceil(5 / 4) = 2 channels per group -> groups {0, 1}, {2, 3}, {4} (3 groups).
    // (1 3): mean 2, var 1, + eps 1 -> +-1/sqrt(2); (2 6): mean 4, var 4 + 1 -> +-2/sqrt(5); (5): 0.
    ggml_tensor * b = f32({1, 1, 5, 1}, {1, 3, 2, 6, 5});
    expect_values(run(ggml_group_norm(ctx_, b, 4, 1.0f)),
                  {-0.7071067811865475, 0.7071067811865475, -0.8944271909999159, 0.8944271909999159, 0},
                  kF32);
    // Two samples (dim 3) are normalised separately: (1 3) -> (-1 1), (5 9) -> (-1 1).
    ggml_tensor * c = f32({2, 1, 1, 2}, {1, 3, 5, 9});
    expect_values(run(ggml_group_norm(ctx_, c, 1, 0.0f)), {-1, 1, -1, 1});
}

// ---------------------------------------------------------------------------------------------
// Products and attention

TEST_F(Reference, MulMat) {
    // a [2, 3]: rows m0 = (1 2), m1 = (3 4), m2 = (5 6); b [2, 2]: n0 = (1 0), n1 = (1 -1).
    // r[m, n] = a_m . b_n: n0 -> (1 3 5), n1 -> (-1 -1 -1).
    ggml_tensor * a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
    ggml_tensor * b = f32({2, 2}, {1, 0, 1, -1});
    expect_values(run(ggml_mul_mat(ctx_, a, b)), {1, 3, 5, -1, -1, -1});
    // Transposed b view: b^T of (1 2), (3 4) is (1 3), (2 4); a = (1 1): (4 6).
    ggml_tensor * bt = ggml_transpose(ctx_, f32({2, 2}, {1, 2, 3, 4}));
    expect_values(run(ggml_mul_mat(ctx_, f32({2, 1}, {1, 1}), bt)), {4, 6});
}

TEST_F(Reference, MulMatBroadcastsAOverBatches) {
    // a [2, 1, 2]: a0 = (1 1), a1 = (1 -1); b [2, 1, 4]: b_i = (i + 1, 1). a is broadcast in blocks
    // (b matrix i uses a matrix i / (4 / 2)): a0.(1 1) = 2, a0.(2 1) = 3, a1.(3 1) = 2, a1.(4 1) = 3.
    ggml_tensor * a = f32({2, 1, 2}, {1, 1, 1, -1});
    ggml_tensor * b = f32({2, 1, 4}, {1, 1, 2, 1, 3, 1, 4, 1});
    expect_values(run(ggml_mul_mat(ctx_, a, b)), {2, 3, 2, 3});
}

TEST_F(Reference, MulMatQuantizedA) {
    // Q8_0 row (127, 1, 2, ..., 31): amax 127 -> d = 1, exact. Dot with ones: 127 + 496 = 623.
    std::vector<double> row8(32);
    row8[0] = 127;
    for (int i = 1; i < 32; ++i)
        row8[i] = i;
    ggml_tensor * ones = f32({32, 1}, std::vector<double>(32, 1.0));
    expect_values(run(ggml_mul_mat(ctx_, leaf(GGML_TYPE_Q8_0, {32, 1}, row8), ones)), {623});
    // Q4_0 row x_i = (i mod 16) - 8: largest magnitude -8 (first at i = 0) -> d = 1, exact.
    // Sum: i = 0 and 16 give -8 each, the others -7..7 twice -> -16.
    std::vector<double> row4(32);
    for (int i = 0; i < 32; ++i)
        row4[i] = (i % 16) - 8;
    expect_values(run(ggml_mul_mat(ctx_, leaf(GGML_TYPE_Q4_0, {32, 1}, row4), ones)), {-16});
}

TEST_F(Reference, SoftMaxPlain) {
    // e^(x - 3) / sum for (1 2 3).
    expect_values(run(ggml_soft_max(ctx_, f32({3}, {1, 2, 3}))),
                  {0.09003057317038046, 0.24472847105479767, 0.6652409557748219}, kF32);
}

TEST_F(Reference, SoftMaxWithMaskAndAlibi) {
    // a [2, 2, 3]: three heads (dim 2) of two rows; mask [2, 2] shared by every head.
    // scale 2, max_bias 2: H = 3 -> n = 2, m0 = 2^(-2/2) = 0.5, m1 = 2^(-2/4) = 0.70711;
    // slopes h0 = m0 = 0.5, h1 = m0^2 = 0.25, h2 = m1^1 = 0.70711.
    ggml_tensor * a = f32({2, 2, 3}, {0, 0, 3, 7,    // h0: rows (0 0), (3 7)
                                      0.5, 0, 0, 0,  // h1
                                      0, 0, 1, 1});  // h2
    ggml_tensor * mask = f32({2, 2}, {0, 2, -kInf, 0});
    ggml_tensor * r = ggml_soft_max_ext(ctx_, a, mask, 2.0f, 2.0f);
    expect_values(run(r),
                  {
                      // h0 row 0: (0 0)*2 + 0.5*(0 2) = (0 1) -> (1/(1+e), e/(1+e))
                      0.2689414213699951,
                      0.7310585786300049,
                      // h0 row 1: (6 + -inf, 14 + 0) -> (0 1)
                      0,
                      1,
                      // h1 row 0: (1 0) + 0.25*(0 2) = (1 0.5) -> sigma(0.5), sigma(-0.5)
                      0.6224593312018546,
                      0.3775406687981454,
                      // h1 row 1: (-inf 0) -> (0 1)
                      0,
                      1,
                      // h2 row 0: (0 0) + 0.70711*(0 2) = (0 sqrt 2) -> 1/(1+e^sqrt2), ...
                      0.1955703174930431,
                      0.8044296825069569,
                      // h2 row 1: (-inf 2) -> (0 1)
                      0,
                      1,
                  },
                  kF32);
}

TEST_F(Reference, SoftMaxF16MaskWithoutAlibi) {
    // max_bias 0 -> slope 1; F16 mask (0 -1000) on logits (1 1): softmax(1, -999) = (1, e^-1000) ~ (1 0).
    ggml_tensor * mask = leaf(GGML_TYPE_F16, {2, 1}, {0, -1000});
    expect_values(run(ggml_soft_max_ext(ctx_, f32({2}, {1, 1}), mask, 1.0f, 0.0f)), {1, 0}, kF32);
}

// a [6, 1, 2] (head_dim 6, one head, two tokens) at positions (0 2), n_dims 4, base 10000:
// theta_scale = 10000^(-2/4) = 0.01, so pair 0 turns by pos and pair 1 by 0.01 pos.
// Token 1 = (1 0 0 1 5 6); channels 4, 5 are copied.
TEST_F(Reference, RopeNormalPartialRotation) {
    ggml_tensor * a = f32({6, 1, 2}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 1, 5, 6});
    ggml_tensor * pos = i32({2}, {0, 2});
    ggml_tensor * r = ggml_rope_ext(ctx_, a, pos, nullptr, 4, GGML_ROPE_TYPE_NORMAL, 0, 10000.0f, 1.0f, 0.0f,
                                    1.0f, 0.0f, 0.0f);
    // Token 0 (pos 0) is unchanged. Token 1: (x0 x1) = (1 0) by 2 -> (cos 2, sin 2);
    // (x2 x3) = (0 1) by 0.02 -> (-sin 0.02, cos 0.02).
    expect_values(run(r),
                  {1, 2, 3, 4, 5, 6, -0.4161468365471424, 0.9092974268256817, -0.01999866669333308,
                   0.9998000066665778, 5, 6},
                  kF32);
}

TEST_F(Reference, RopeNeoxPartialRotationWithFreqFactors) {
    ggml_tensor * a = f32({6, 1, 2}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 1, 5, 6});
    ggml_tensor * pos = i32({2}, {0, 2});
    // NEOX pairs (0 2) and (1 3). Token 1: (x0 x2) = (1 0) by 2 -> x0 = cos 2, x2 = sin 2;
    // (x1 x3) = (0 1) by 0.02 -> x1 = -sin 0.02, x3 = cos 0.02.
    ggml_tensor * r = ggml_rope_ext(ctx_, a, pos, nullptr, 4, GGML_ROPE_TYPE_NEOX, 0, 10000.0f, 1.0f, 0.0f,
                                    1.0f, 0.0f, 0.0f);
    expect_values(run(r),
                  {1, 2, 3, 4, 5, 6, -0.4161468365471424, -0.01999866669333308, 0.9092974268256817,
                   0.9998000066665778, 5, 6},
                  kF32);
    // Frequency factors (1 2) halve pair 1's angle (0.02 / 2 = 0.01); attn_factor 2 scales the
    // rotated channels: x0 = 2 cos 2, x1 = -2 sin 0.01, x2 = 2 sin 2, x3 = 2 cos 0.01.
    ggml_tensor * ff = f32({2}, {1, 2});
    ggml_tensor * r2 =
        ggml_rope_ext(ctx_, a, pos, ff, 4, GGML_ROPE_TYPE_NEOX, 0, 10000.0f, 1.0f, 0.0f, 2.0f, 0.0f, 0.0f);
    expect_values(run(r2),
                  {2, 4, 6, 8, 5, 6, 2 * -0.4161468365471424, 2 * -0.009999833334166664,
                   2 * 0.9092974268256817, 2 * 0.9999500004166653, 5, 6},
                  kF32);
}

TEST_F(Reference, RopeYarn) {
    // n_dims 4, base 10000, n_ctx_orig 4096, beta_fast 32, beta_slow 1, freq_scale 0.5, ext 1:
    // corr_dim(b) = 4 ln(4096 / (2 pi b)) / (2 ln 10000): corr_dim(32) = 0.6545 -> low 0,
    // corr_dim(1) = 1.4071 -> high 2. ramp(0) = 1, ramp(1) = 1 - 1/2 = 0.5.
    // Pair 0: mix 1 -> theta = theta_extrap = 2. Pair 1: extrap 0.02, interp 0.01, mix 0.5 -> 0.015.
    // mscale = 1 + 0.1 ln(1 / 0.5) = 1.0693147180559945.
    ggml_tensor * a = f32({6, 1, 1}, {1, 0, 0, 1, 5, 6});
    ggml_tensor * pos = i32({1}, {2});
    ggml_tensor * r = ggml_rope_ext(ctx_, a, pos, nullptr, 4, GGML_ROPE_TYPE_NORMAL, 4096, 10000.0f, 0.5f,
                                    1.0f, 1.0f, 32.0f, 1.0f);
    // (m cos 2, m sin 2, -m sin 0.015, m cos 0.015, 5, 6).
    expect_values(run(r),
                  {-0.4449919371923016, 0.9723251215951452, -0.016039119288077733, 1.069194422405782, 5, 6},
                  kF32);
    // Without ext_factor the angle is freq_scale * theta_extrap and mscale = attn_factor:
    // pair 0 turns by 1, pair 1 by 0.01: (cos 1, sin 1, -sin 0.01, cos 0.01).
    ggml_tensor * r2 = ggml_rope_ext(ctx_, a, pos, nullptr, 4, GGML_ROPE_TYPE_NORMAL, 4096, 10000.0f, 0.5f,
                                     0.0f, 1.0f, 32.0f, 1.0f);
    expect_values(run(r2),
                  {0.5403023058681398, 0.8414709848078965, -0.009999833334166664, 0.9999500004166653, 5, 6},
                  kF32);
}

TEST_F(Reference, FlashAttentionGroupedQueryHeads) {
    // q [2, 1, 4]: h0 = (1 0), h1 = (0 0), h2 = (1 0), h3 = (0 0); k [2, 2, 2], v [1, 2, 2].
    // kv head = h / (4 / 2): h0, h1 -> kv0; h2, h3 -> kv1.
    // kv0: k = (1 0), (0 1), v = 1, 3. kv1: k = (0 1), (1 0), v = 5, 7.
    ggml_tensor * q = f32({2, 1, 4}, {1, 0, 0, 0, 1, 0, 0, 0});
    ggml_tensor * k = f32({2, 2, 2}, {1, 0, 0, 1, 0, 1, 1, 0});
    ggml_tensor * v = leaf(GGML_TYPE_F16, {1, 2, 2}, {1, 3, 5, 7});
    ggml_tensor * r = ggml_flash_attn_ext(ctx_, q, k, v, nullptr, 1.0f, 0.0f, 0.0f);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->ne[0], 1);
    EXPECT_EQ(r->ne[1], 4);
    // h0: s = (1 0) -> 1 sigma(1) + 3 sigma(-1) = 1 + 2 sigma(-1) = 1.53788
    // h1: s = (0 0) -> 2; h2: s = (0 1) -> 5 sigma(-1) + 7 sigma(1) = 6.46212; h3 -> 6.
    expect_values(run(r), {1.5378828427399902, 2, 6.46211715726001, 6}, kF32);
}

TEST_F(Reference, FlashAttentionMaskSoftcapAlibiAndLayout) {
    // q [2, 2, 2] (D 2, two queries, two heads), one kv head: k = (1 0), (0 1), v = 1, 3.
    // scale 0.5, softcap 2, max_bias 2 -> slopes h0 = 0.5, h1 = 0.25 (H = 2, n = 2, m0 = 0.5).
    // Mask rows: t0 = (0 2), t1 = (-inf 0).
    ggml_tensor * q = f32({2, 2, 2}, {2, 0, 1, 1,    // h0: t0 = (2 0), t1 = (1 1)
                                      0, 2, 3, 3});  // h1: t0 = (0 2), t1 = (3 3)
    ggml_tensor * k = f32({2, 2, 1}, {1, 0, 0, 1});
    ggml_tensor * v = f32({1, 2, 1}, {1, 3});
    ggml_tensor * mask = leaf(GGML_TYPE_F16, {2, 2}, {0, 2, -kInf, 0});
    ggml_tensor * r = ggml_flash_attn_ext(ctx_, q, k, v, mask, 0.5f, 2.0f, 2.0f);
    // Result [1, H = 2, Q = 2]: order (t0 h0), (t0 h1), (t1 h0), (t1 h1).
    // (t0 h0): q.k = (2 0) -> 2 tanh((2 * 0.5) / 2) = 0.92423, 0 -> + 0.5 * (0 2) = (0.92423, 1)
    //          -> 1 + 2 sigma(1 - 0.92423) = 2.03786.
    // (t0 h1): q.k = (0 2) -> (0, 0.92423) + 0.25 * (0 2) = (0, 1.42423) -> 1 + 2 sigma(1.42423) = 2.61200.
    // (t1 h*): key 0 masked -> v1 = 3.
    expect_values(run(r), {2.0378647311241536, 2.6120027304448654, 3, 3}, kF32);
}

TEST_F(Reference, FlashAttentionFullyMaskedRowIsZero) {
    ggml_tensor * q = f32({2, 1, 1}, {1, 0});
    ggml_tensor * k = f32({2, 2, 1}, {1, 0, 0, 1});
    ggml_tensor * v = f32({2, 2, 1}, {1, 2, 3, 4});
    ggml_tensor * mask = f32({2, 1}, {-kInf, -kInf});
    expect_values(run(ggml_flash_attn_ext(ctx_, q, k, v, mask, 1.0f, 0.0f, 0.0f)), {0, 0});
    // Unmasked, Dv 2: s = (1 0) -> sigma(1) (1 2) + sigma(-1) (3 4) = (1 + 2 sigma(-1), 2 + 2 sigma(-1)).
    expect_values(run(ggml_flash_attn_ext(ctx_, q, k, v, nullptr, 1.0f, 0.0f, 0.0f)),
                  {1.5378828427399902, 2.5378828427399902}, kF32);
}

TEST_F(Reference, FlashAttentionSinkJoinsTheSoftmax) {
    // One key of score 0 and value 6, sink ln 2: 6 e^0 / (e^0 + 2) = 2. Every key masked: still 0.
    ggml_tensor * r = ggml_flash_attn_ext(ctx_, f32({1, 1, 1}, {1}), f32({1, 1, 1}, {0}), f32({1, 1, 1}, {6}),
                                          nullptr, 1.0f, 0.0f, 0.0f);
    ggml_flash_attn_ext_add_sinks(r, f32({1}, {std::log(2.0)}));
    expect_values(run(r), {2}, kF32);
    ggml_tensor * masked = ggml_flash_attn_ext(ctx_, f32({1, 1, 1}, {1}), f32({1, 1, 1}, {0}),
                                               f32({1, 1, 1}, {6}), f32({1, 1}, {-kInf}), 1.0f, 0.0f, 0.0f);
    ggml_flash_attn_ext_add_sinks(masked, f32({1}, {0}));
    expect_values(run(masked), {0});
}

TEST_F(Reference, LightningIndexer) {
    // q heads (1 0), (0 1); keys (1 2), (-1 1); weights (2 3); mask (0 0.5).
    // Key 0: 2 relu(1) + 3 relu(2) = 8; key 1: 2 relu(-1) + 3 relu(1) + 0.5 = 3.5.
    ggml_tensor * q = f32({2, 2, 1, 1}, {1, 0, 0, 1});
    ggml_tensor * k = f32({2, 1, 2, 1}, {1, 2, -1, 1});
    ggml_tensor * mask = leaf(GGML_TYPE_F16, {2, 1, 1, 1}, {0, 0.5});
    expect_values(run(ggml_lightning_indexer(ctx_, q, k, f32({2, 1, 1, 1}, {2, 3}), mask)), {8, 3.5});
}

TEST_F(Reference, HyperConnections) {
    // comb, hc 2, eps 0, one iteration: logits M[a][c] = mixes[4 + a + 2c] = (0 ln3 | 0 0) -> column
    // softmax (0.25 0.75 | 0.5 0.5) -> each a divided by its sum over c: a0 0.75, a1 1.25.
    ggml_tensor * mixes = f32({8, 1}, {9, 9, 9, 9, 0, std::log(3.0), 0, 0});
    ggml_tensor * comb =
        ggml_dsv4_hc_comb(ctx_, mixes, f32({3}, {1, 1, 1}), f32({8}, std::vector<double>(8, 0.0)), 0.0f, 1);
    expect_values(run(comb), {1.0 / 3.0, 0.6, 2.0 / 3.0, 0.4}, kF32);
    // hc 1, eps 0.5: softmax 1, + eps 1.5, / (1.5 + 0.5).
    ggml_tensor * one =
        ggml_dsv4_hc_comb(ctx_, f32({3, 1}, {0, 0, 7}), f32({3}, {1, 1, 1}), f32({3}, {0, 0, 0}), 0.5f, 1);
    expect_values(run(one), {0.75}, kF32);
    // pre: streams (1 2), (3 4) weighted 2, -1 -> (-1 0).
    expect_values(run(ggml_dsv4_hc_pre(ctx_, f32({2, 2, 1}, {1, 2, 3, 4}), f32({2, 1}, {2, -1}))), {-1, 0});
    // post: x 5, residual streams 1, 2, post (1 2), comb[d, s] = (1 0 | 2 3):
    // d0 = 5 + 1 + 4 = 10, d1 = 10 + 0 + 6 = 16.
    ggml_tensor * post = ggml_dsv4_hc_post(ctx_, f32({1, 1}, {5}), f32({1, 2, 1}, {1, 2}),
                                           f32({2, 1}, {1, 2}), f32({2, 2, 1}, {1, 0, 2, 3}));
    expect_values(run(post), {10, 16});
}

// ---------------------------------------------------------------------------------------------
// Recurrent state ops

TEST_F(Reference, SsmConv) {
    // sx (1 2 3), kernel (10 1): (1 10 + 2, 2 10 + 3).
    expect_values(run(ggml_ssm_conv(ctx_, f32({3, 1, 1}, {1, 2, 3}), f32({2, 1}, {10, 1}))), {12, 23});
}

TEST_F(Reference, SsmScanReadsTheStateSlotOfEachSequence) {
    // One state element; dt 30 (softplus is the identity above 20), A 0 (no decay), B = C = 1; the
    // sequence reads slot ids[0] = 1 (5): 5 + 30 = 35, 35 + 2 30 = 95; then the final state 95.
    ggml_tensor * s = f32({1, 1, 1, 2}, {100, 5});
    ggml_tensor * x = f32({1, 1, 2, 1}, {1, 2});
    ggml_tensor * dt = f32({1, 2, 1}, {30, 30});
    ggml_tensor * one = f32({1, 1, 2, 1}, {1, 1});
    ggml_tensor * r = ggml_ssm_scan(ctx_, s, x, dt, f32({1, 1}, {0}), one, one, i32({1}, {1}));
    expect_values(run(r), {35, 95, 95}, kF32);
}

TEST_F(Reference, LinearAttentions) {
    // S = H = 1, two tokens. WKV6: k (1 2), v (3 1), r 1, u 2, w 0.5, state 4:
    // y0 = 2 3 + 4 = 10, S = 2 + 3 = 5; y1 = 2 2 + 5 = 9, S = 2.5 + 2 = 4.5.
    ggml_tensor *k = f32({1, 1, 2}, {1, 2}), *v = f32({1, 1, 2}, {3, 1}), *ones = f32({1, 1, 2}, {1, 1});
    ggml_tensor * state = f32({1, 1}, {4});
    expect_values(run(ggml_rwkv_wkv6(ctx_, k, v, ones, f32({1, 1}, {2}), f32({1, 1, 2}, {0.5, 0.5}), state)),
                  {10, 9, 4.5});
    // GLA, q (1 2), g (0 ln 0.5), scale 0.5: S = 4 + 3 = 7, y0 = 3.5; S = 3.5 + 2 = 5.5, y1 = 5.5.
    ggml_tensor * g = f32({1, 1, 2}, {0, std::log(0.5)});
    expect_values(run(ggml_gated_linear_attn(ctx_, k, v, f32({1, 1, 2}, {1, 2}), g, state, 0.5f)),
                  {3.5, 5.5, 5.5}, kF32);
    // WKV7, one token: r 1, w 0.5, k 2, v 3, a 1, b 0.5, state 4: sa = 4, S = 2 + 6 + 2 = 10, y = 10.
    auto one = [&](double value) { return f32({1, 1, 1}, {value}); };
    expect_values(run(ggml_rwkv_wkv7(ctx_, one(1), one(0.5), one(2), one(3), one(1), one(0.5), state)),
                  {10, 10});
}

TEST_F(Reference, GatedDeltaNetStateRowsAreValueIndices) {
    // S 2, one token, g 0, beta 1, k (1 0), q (0 1), v (5 7); state[i, j] = (1 2 | 3 4) is M[j][i]:
    // M[0] = (1 2), M[1] = (3 4). u = (1 3), delta = (4 4), M[0] = (5 2), M[1] = (7 4);
    // o = (M[0][1], M[1][1]) / sqrt 2 = (2 4) / sqrt 2; then the state (5 2 7 4).
    ggml_tensor * r = ggml_gated_delta_net(ctx_, f32({2, 1, 1, 1}, {0, 1}), f32({2, 1, 1, 1}, {1, 0}),
                                           f32({2, 1, 1, 1}, {5, 7}), f32({1, 1, 1, 1}, {0}),
                                           f32({1, 1, 1, 1}, {1}), f32({2, 2, 1, 1}, {1, 2, 3, 4}), 1);
    expect_values(run(r), {2 / std::sqrt(2.0), 4 / std::sqrt(2.0), 5, 2, 7, 4}, kF32);
}

// ---------------------------------------------------------------------------------------------
// Indexing

TEST_F(Reference, GetRows) {
    // a [2, 3]: r0 = (1 2), r1 = (3 4), r2 = (5 6); indices (2 0) -> (5 6 1 2).
    ggml_tensor * a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
    expect_values(run(ggml_get_rows(ctx_, a, i32({2}, {2, 0}))), {5, 6, 1, 2});
    // F16 source: 0.1 reads as 0.0999755859375, result F32.
    ggml_tensor * h = leaf(GGML_TYPE_F16, {1, 2}, {0.1, 2});
    expect_values(run(ggml_get_rows(ctx_, h, i32({1}, {0}))), {0.0999755859375});
    // I32 source keeps I32.
    ggml_tensor * gi = ggml_get_rows(ctx_, i32({1, 2}, {7, 8}), i32({3}, {1, 1, 0}));
    ASSERT_NE(gi, nullptr);
    EXPECT_EQ(gi->type, GGML_TYPE_I32);
    expect_values(run(gi), {8, 8, 7});
    // Per-batch indices: a [1, 2, 2] = batch 0 (1), (2); batch 1 (3), (4); idx [1, 2] = (1), (0)
    // -> batch 0 row 1 = 2, batch 1 row 0 = 3.
    expect_values(run(ggml_get_rows(ctx_, f32({1, 2, 2}, {1, 2, 3, 4}), i32({1, 2}, {1, 0}))), {2, 3});
    // Q8_0 rows (d = 1 blocks): row 1 = (127, 0, ...).
    std::vector<double> q(64, 0.0);
    q[0] = -127;
    q[32] = 127;
    std::vector<double> expect(32, 0.0);
    expect[0] = 127;
    expect_values(run(ggml_get_rows(ctx_, leaf(GGML_TYPE_Q8_0, {32, 2}, q), i32({1}, {1}))), expect);
}

TEST_F(Reference, GetRowsIndexOutOfRangeRaises) {
    ggml_tensor * a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
    ggml_tensor * r = ggml_get_rows(ctx_, a, i32({1}, {3}));
    ASSERT_NE(r, nullptr);
    EXPECT_THROW(run(r), Error);
    ggml_tensor * neg = ggml_get_rows(ctx_, a, i32({1}, {-1}));
    EXPECT_THROW(run(neg), Error);
}

TEST_F(Reference, SetRows) {
    // a [2, 3] zeros; b rows (7 8), (9 10) at indices (2 0) -> r0 = (9 10), r1 = 0, r2 = (7 8).
    ggml_tensor * a = f32({2, 3}, std::vector<double>(6, 0.0));
    ggml_tensor * r = ggml_set_rows(ctx_, a, f32({2, 2}, {7, 8, 9, 10}), i32({2}, {2, 0}));
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->view_src, a);
    expect_values(run(r), {9, 10, 0, 0, 7, 8});
    expect_values(ev_.values(a), {9, 10, 0, 0, 7, 8});
    // Into F16: 0.1 is stored as 0.0999755859375, the other row keeps its value 5.
    ggml_tensor * h = leaf(GGML_TYPE_F16, {1, 2}, {5, 5});
    expect_values(run(ggml_set_rows(ctx_, h, f32({1, 1}, {0.1}), i32({1}, {1}))), {5, 0.0999755859375});
    // Indices broadcast over dim 2: a [1, 2, 2], b [1, 1, 2] = (3), (4), idx [1, 1] = (1) for both
    // batches -> batch 0 = (0 3), batch 1 = (0 4).
    ggml_tensor * a3 = f32({1, 2, 2}, {0, 0, 0, 0});
    expect_values(run(ggml_set_rows(ctx_, a3, f32({1, 1, 2}, {3, 4}), i32({1, 1}, {1}))), {0, 3, 0, 4});
}

TEST_F(Reference, SetRowsIntoQuantizedRowsRequantizesOnlyWrittenBlocks) {
    // a [32, 2] Q8_0: row 0 = (-127, 0.5, 0, ...) is stored with d = 1 as (-127, 1, 0, ...) (0.5 rounds
    // half away from zero) and keeps that value; row 1 gets (127, 0.4, 0.6, -63.5, 0...) quantized
    // with d = 1 -> (127, 0, 1, -64, 0...).
    std::vector<double> init(64, 0.0);
    init[0] = -127;
    init[1] = 0.5;
    ggml_tensor * a = leaf(GGML_TYPE_Q8_0, {32, 2}, init);
    std::vector<double> row(32, 0.0);
    row[0] = 127;
    row[1] = 0.4;
    row[2] = 0.6;
    row[3] = -63.5;
    std::vector<double> expect(64, 0.0);
    expect[0] = -127;
    expect[1] = 1;
    expect[32] = 127;
    expect[34] = 1;
    expect[35] = -64;
    expect_values(run(ggml_set_rows(ctx_, a, f32({32, 1}, row), i32({1}, {1}))), expect);
}

TEST_F(Reference, SetRowsIndexOutOfRangeRaises) {
    ggml_tensor * a = f32({1, 2}, {0, 0});
    EXPECT_THROW(run(ggml_set_rows(ctx_, a, f32({1, 1}, {1}), i32({1}, {2}))), Error);
}

// ---------------------------------------------------------------------------------------------
// Convolution

TEST_F(Reference, Im2Col1D) {
    // x [4, 1, 1] = (1 2 3 4), kernel KW = 2, s0 = 2, p0 = 1, d0 = 1: OW = (4 + 2 - 1 - 1) / 2 + 1 = 3.
    // r[kw, ow] = x[2 ow + kw - 1]: (0 1), (2 3), (4 0).
    ggml_tensor * kernel = f32({2, 1, 1}, {0, 0});
    ggml_tensor * x = f32({4, 1, 1}, {1, 2, 3, 4});
    ggml_tensor * r = ggml_im2col(ctx_, kernel, x, 2, 0, 1, 0, 1, 0, false, GGML_TYPE_F32);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->ne[0], 2);
    EXPECT_EQ(r->ne[1], 3);
    expect_values(run(r), {0, 1, 2, 3, 4, 0});
    // Dilation 2, stride 1, no padding: OW = (4 - 2 - 1) + 1 = 2; r[kw, ow] = x[ow + 2 kw]:
    // (1 3), (2 4).
    expect_values(run(ggml_im2col(ctx_, kernel, x, 1, 0, 0, 0, 2, 0, false, GGML_TYPE_F32)), {1, 3, 2, 4});
}

TEST_F(Reference, Im2Col2D) {
    // x [3, 3, 1, 1] with x[w, h] = 1 + w + 3 h; kernel 2 x 2, stride 2, padding 1, dilation 1:
    // OW = OH = (3 + 2 - 1 - 1) / 2 + 1 = 2. r[kh * 2 + kw, ow, oh] = x[2 ow + kw - 1, 2 oh + kh - 1].
    ggml_tensor * kernel = f32({2, 2, 1, 1}, {0, 0, 0, 0});
    ggml_tensor * x = f32({3, 3, 1, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    ggml_tensor * r = ggml_im2col(ctx_, kernel, x, 2, 2, 1, 1, 1, 1, true, GGML_TYPE_F32);
    expect_values(run(r), {0, 0, 0, 1,    // (ow 0, oh 0): x[-1,-1], x[0,-1], x[-1,0], x[0,0]
                           0, 0, 2, 3,    // (1, 0): x[1,-1], x[2,-1], x[1,0], x[2,0]
                           0, 4, 0, 7,    // (0, 1): x[-1,1], x[0,1], x[-1,2], x[0,2]
                           5, 6, 8, 9});  // (1, 1)
    // Two channels, kernel 1 x 2 with vertical dilation 2, F16 result: OW = 3, OH = (3 - 2 - 1) + 1 = 1.
    // r[c * 2 + kh, ow] = x[ow, 2 kh, c]: c0 = 1..9, c1 = 10 * (1..9).
    ggml_tensor * x2 = f32({3, 3, 2, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30, 40, 50, 60, 70, 80, 90});
    ggml_tensor * k2 = f32({1, 2, 2, 1}, {0, 0, 0, 0});
    ggml_tensor * r2 = ggml_im2col(ctx_, k2, x2, 1, 1, 0, 0, 1, 2, true, GGML_TYPE_F16);
    ASSERT_NE(r2, nullptr);
    EXPECT_EQ(r2->type, GGML_TYPE_F16);
    expect_values(run(r2), {1, 7, 10, 70, 2, 8, 20, 80, 3, 9, 30, 90});
}

TEST_F(Reference, Conv2dDirectHandCase) {
    // kernel [2, 1, 1, 1] = (1 -1), input [3, 1, 1, 1] = (1 4 9): (1 - 4, 4 - 9) = (-3 -5).
    const int64_t kne[4] = {2, 1, 1, 1}, ine[4] = {3, 1, 1, 1};
    const std::vector<double> k = {1, -1}, x = {1, 4, 9};
    expect_values(ggx::ref::conv2d_direct(k, kne, x, ine, 1, 1, 0, 0, 1, 1), {-3, -5});
    // Padding 1, stride 2: OW = (3 + 2 - 1 - 1) / 2 + 1 = 2: (0 - 1, 4 - 9) = (-1 -5).
    expect_values(ggx::ref::conv2d_direct(k, kne, x, ine, 2, 1, 1, 0, 1, 1), {-1, -5});
}

TEST_F(Reference, Conv2dCompositeEqualsDirect) {
    const unsigned seed = 20240611u;
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    // kernel [3, 3, 2, 2], input [5, 4, 2, 2]; s = (2, 1), p = (1, 1), d = (1, 2).
    const int64_t kne[4] = {3, 3, 2, 2}, ine[4] = {5, 4, 2, 2};
    std::vector<double> k(3 * 3 * 2 * 2), x(5 * 4 * 2 * 2);
    for (double & v : k)
        v = static_cast<float>(dist(rng));
    for (double & v : x)
        v = static_cast<float>(dist(rng));
    ggml_tensor * kt = f32({3, 3, 2, 2}, k);
    ggml_tensor * xt = f32({5, 4, 2, 2}, x);
    ggml_tensor * r = ggml_conv_2d(ctx_, kt, xt, 2, 1, 1, 1, 1, 2);
    ASSERT_NE(r, nullptr);
    const std::vector<double> got = run(r);
    const std::vector<double> want = ggx::ref::conv2d_direct(k, kne, x, ine, 2, 1, 1, 1, 1, 2);
    // OW = (5 + 2 - 2 - 1) / 2 + 1 = 3, OH = (4 + 2 - 4 - 1) / 1 + 1 = 2.
    EXPECT_EQ(r->ne[0], 3);
    EXPECT_EQ(r->ne[1], 2);
    EXPECT_EQ(r->ne[2], 2);
    EXPECT_EQ(r->ne[3], 2);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LT(ggx::ref::nmse(got, want), 1e-12);
}

// ---------------------------------------------------------------------------------------------
// Diffusion helpers and callbacks

TEST_F(Reference, TimestepEmbeddingOddDim) {
    // dim 5, max_period 10000: half = 2, f0 = 1, f1 = exp(-ln(10000) / 2) = 0.01; a trailing 0.
    // t = 0 -> (1 1 0 0 0); t = 2 -> (cos 2, cos 0.02, sin 2, sin 0.02, 0).
    ggml_tensor * r = ggml_timestep_embedding(ctx_, f32({2}, {0, 2}), 5, 10000);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->ne[0], 5);
    expect_values(
        run(r),
        {1, 1, 0, 0, 0, -0.4161468365471424, 0.9998000066665778, 0.9092974268256817, 0.01999866669333308, 0},
        kF32);
}

struct CallbackLog {
    int calls = 0;
    int ith = -1, nth = -1;
};

// dst = 2 * src0 + src1 (F32), recording how it was called.
void twice_plus(ggml_tensor * dst, int ith, int nth, void * userdata) {
    auto * log = static_cast<CallbackLog *>(userdata);
    log->calls++;
    log->ith = ith;
    log->nth = nth;
    const float * a = static_cast<const float *>(dst->src[0]->data);
    const float * b = static_cast<const float *>(dst->src[1]->data);
    float * out = static_cast<float *>(dst->data);
    for (int64_t i = 0; i < ggml_nelements(dst); ++i)
        out[i] = 2.0f * a[i] + b[i];
}

TEST_F(Reference, CustomCpuCallback) {
    CallbackLog log;
    // src0 is a transposed view: (1 3), (2 4) in logical order 1 3 2 4; src1 = (10 20 30 40).
    ggml_tensor * a = ggml_transpose(ctx_, f32({2, 2}, {1, 2, 3, 4}));
    ggml_tensor * b = f32({2, 2}, {10, 20, 30, 40});
    ggml_tensor * args[2] = {a, b};
    ggml_tensor * r =
        ggml_custom_4d(ctx_, GGML_TYPE_F32, 2, 2, 1, 1, args, 2, twice_plus, GGML_N_TASKS_MAX, &log);
    ASSERT_NE(r, nullptr);
    // 2 * (1 3 2 4) + (10 20 30 40) = (12 26 34 48).
    expect_values(run(r), {12, 26, 34, 48});
    EXPECT_EQ(log.calls, 1);
    EXPECT_EQ(log.ith, 0);
    EXPECT_EQ(log.nth, 1);
}

TEST_F(Reference, ExtensionCustomNodeRaises) {
    CallbackLog log;
    ggml_tensor * b = f32({1}, {1});
    ggml_tensor * args[1] = {b};
    ggml_tensor * r = ggml_custom_4d(ctx_, GGML_TYPE_F32, 1, 1, 1, 1, args, 1, twice_plus, 1, &log);
    ASSERT_NE(r, nullptr);
    const uint32_t marker = GGML_CUSTOM_MARKER_EXTENSION;
    std::memcpy(&r->op_params[0], &marker, sizeof marker);
    ASSERT_EQ(ggml_get_custom_kind(r), GGML_CUSTOM_KIND_EXTENSION);
    EXPECT_THROW(run(r), Error);
    EXPECT_EQ(log.calls, 0);
}

// ---------------------------------------------------------------------------------------------
// Evaluator inputs and errors

TEST_F(Reference, SetInputOverridesDataAndRounds) {
    ggml_tensor * a = f32({2}, {1, 2});
    ggml_tensor * h = leaf(GGML_TYPE_F16, {2}, {0, 0});
    ev_.set_input(a, {10, 20});
    ev_.set_input(h, {0.1, 1});
    // set_input values are stored as F16: 0.1 -> 0.0999755859375.
    expect_values(ev_.values(h), {0.0999755859375, 1});
    expect_values(run(ggml_add(ctx_, a, f32({1}, {1}))), {11, 21});
    expect_values(run(ggml_cast(ctx_, h, GGML_TYPE_F32)), {0.0999755859375, 1});
    EXPECT_THROW(ev_.set_input(a, {1, 2, 3}), Error);
    EXPECT_THROW(ev_.set_input(ggml_transpose(ctx_, f32({2, 2}, {0, 0, 0, 0})), {1, 2, 3, 4}), Error);
}

TEST_F(Reference, LeafWithoutDataRaises) {
    ggml_context * meta = ggml_init({size_t{1} << 20, nullptr, true});
    ASSERT_NE(meta, nullptr);
    ggml_tensor * a = ggml_new_tensor_1d(meta, GGML_TYPE_F32, 2);
    ggml_tensor * r = ggml_scale(meta, a, 2.0f);
    ggml_cgraph * graph = ggml_new_graph(meta);
    ggml_build_forward_expand(graph, r);
    Evaluator ev;
    EXPECT_THROW(ev.compute(graph), Error);
    // With set_input it evaluates.
    ev.set_input(a, {1, 2});
    ev.compute(graph);
    expect_values(ev.values(r), {2, 4});
    ggml_free(meta);
    // Values of something never computed raise too.
    EXPECT_THROW(ev_.values(f32({1}, {1})), Error);
}

TEST_F(Reference, WrittenLeafKeepsItsStateAcrossGraphs) {
    // Graph 1 copies (7 8) into elements 1..2 of a cache leaf; graph 2 reads the cache: it sees
    // what graph 1 wrote, not the leaf's host data.
    ggml_tensor * cache = f32({4}, {0, 0, 0, 0});
    ggml_tensor * w = ggml_cpy(ctx_, f32({2}, {7, 8}), ggml_view_1d(ctx_, cache, 2, sizeof(float)));
    run(w);
    expect_values(run(ggml_scale(ctx_, cache, 1.0f)), {0, 7, 8, 0});
    // set_input resets it.
    ev_.set_input(cache, {1, 1, 1, 1});
    expect_values(run(ggml_scale(ctx_, cache, 2.0f)), {2, 2, 2, 2});
}

// ---------------------------------------------------------------------------------------------
// nmse

TEST(ReferenceNmse, Semantics) {
    using ggx::ref::nmse;
    const std::vector<double> one_two = {1, 2};
    EXPECT_EQ(nmse(one_two, one_two), 0.0);
    EXPECT_EQ(nmse(std::vector<double>{0, 0}, std::vector<double>{0, 0}), 0.0);
    // sum (a - e)^2 / sum e^2: ((3 - 0)^2 + (4 - 5)^2) / (0 + 25) = 10 / 25.
    EXPECT_DOUBLE_EQ(nmse(std::vector<double>{3, 4}, std::vector<double>{0, 5}), 0.4);
    // Expected all zero, actual not: infinity.
    EXPECT_EQ(nmse(std::vector<double>{1}, std::vector<double>{0}), kInf);
    // Matching NaN / Inf positions are skipped: only (2 vs 1) counts: 1 / 1.
    EXPECT_DOUBLE_EQ(nmse(std::vector<double>{kNaN, kInf, 2}, std::vector<double>{kNaN, kInf, 1}), 1.0);
    // Disagreeing NaN / Inf positions: infinity.
    EXPECT_EQ(nmse(std::vector<double>{kNaN, 1}, std::vector<double>{1, 1}), kInf);
    EXPECT_EQ(nmse(std::vector<double>{1, 1}, std::vector<double>{kNaN, 1}), kInf);
    EXPECT_EQ(nmse(std::vector<double>{kInf}, std::vector<double>{-kInf}), kInf);
    EXPECT_EQ(nmse(std::vector<double>{kInf}, std::vector<double>{kNaN}), kInf);
    EXPECT_EQ(nmse(std::vector<double>{kNaN}, std::vector<double>{kNaN}), 0.0);
    EXPECT_THROW(nmse(std::vector<double>{1}, one_two), Error);
}

}  // namespace
