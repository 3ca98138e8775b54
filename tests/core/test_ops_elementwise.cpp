// Constructors of the element-wise family added for ggml's API: the unary sub-ops and their in-place
// forms, LOG/SIN/COS, ADD1, ADD_CAST, ADD_ID, ACC, SET, FILL, LEAKY_RELU, SILU_BACK, XIELU, the GLU
// variants and the optimizer steps: result op, type, shape, sources and parameters, in-place views,
// rejected inputs, support by the CPU backend, and values.
#include <cmath>

#include "core/ops_test_support.h"

namespace {

using ggx::test::compute_on_cpu;
using ggx::test::cpu_backend;
using ggx::test::ramp;

class OpsElementwise : public ggx::test::OpsTest {};

using UnaryFn = ggml_tensor * (*)(ggml_context *, ggml_tensor *);

TEST_F(OpsElementwise, UnaryFunctionsRecordTheirSubOp) {
    const std::pair<UnaryFn, ggml_unary_op> plain[] = {
        {ggml_abs, GGML_UNARY_OP_ABS},
        {ggml_sgn, GGML_UNARY_OP_SGN},
        {ggml_neg, GGML_UNARY_OP_NEG},
        {ggml_step, GGML_UNARY_OP_STEP},
        {ggml_elu, GGML_UNARY_OP_ELU},
        {ggml_exp, GGML_UNARY_OP_EXP},
        {ggml_expm1, GGML_UNARY_OP_EXPM1},
        {ggml_floor, GGML_UNARY_OP_FLOOR},
        {ggml_ceil, GGML_UNARY_OP_CEIL},
        {ggml_round, GGML_UNARY_OP_ROUND},
        {ggml_trunc, GGML_UNARY_OP_TRUNC},
        {ggml_hardsigmoid, GGML_UNARY_OP_HARDSIGMOID},
        {ggml_hardswish, GGML_UNARY_OP_HARDSWISH},
        {ggml_softplus, GGML_UNARY_OP_SOFTPLUS},
        {ggml_gelu_erf, GGML_UNARY_OP_GELU_ERF},
    };
    for (const auto & [fn, op] : plain) {
        ggml_tensor * a = tensor(GGML_TYPE_F16, 4, 3);
        ggml_tensor * r = fn(ctx(), a);
        expect_node(r, GGML_OP_UNARY, GGML_TYPE_F16, {4, 3, 1, 1}, {a});
        EXPECT_EQ(ggml_get_unary_op(r), op);
        EXPECT_EQ(r->view_src, nullptr);
        EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), r)) << ggml_unary_op_name(op);
    }
}

TEST_F(OpsElementwise, InplaceUnaryResultsAreViewsOfA) {
    const std::pair<UnaryFn, ggml_unary_op> inplace[] = {
        {ggml_abs_inplace, GGML_UNARY_OP_ABS},
        {ggml_sgn_inplace, GGML_UNARY_OP_SGN},
        {ggml_neg_inplace, GGML_UNARY_OP_NEG},
        {ggml_step_inplace, GGML_UNARY_OP_STEP},
        {ggml_elu_inplace, GGML_UNARY_OP_ELU},
        {ggml_exp_inplace, GGML_UNARY_OP_EXP},
        {ggml_expm1_inplace, GGML_UNARY_OP_EXPM1},
        {ggml_floor_inplace, GGML_UNARY_OP_FLOOR},
        {ggml_ceil_inplace, GGML_UNARY_OP_CEIL},
        {ggml_round_inplace, GGML_UNARY_OP_ROUND},
        {ggml_trunc_inplace, GGML_UNARY_OP_TRUNC},
        {ggml_softplus_inplace, GGML_UNARY_OP_SOFTPLUS},
        {ggml_gelu_erf_inplace, GGML_UNARY_OP_GELU_ERF},
        {ggml_relu_inplace, GGML_UNARY_OP_RELU},
        {ggml_silu_inplace, GGML_UNARY_OP_SILU},
        {ggml_gelu_inplace, GGML_UNARY_OP_GELU},
        {ggml_gelu_quick_inplace, GGML_UNARY_OP_GELU_QUICK},
        {ggml_sigmoid_inplace, GGML_UNARY_OP_SIGMOID},
        {ggml_tanh_inplace, GGML_UNARY_OP_TANH},
    };
    for (const auto & [fn, op] : inplace) {
        ggml_tensor * a = ggml_transpose(ctx(), f32(4, 3));
        ggml_tensor * r = fn(ctx(), a);
        expect_node(r, GGML_OP_UNARY, GGML_TYPE_F32, {3, 4, 1, 1}, {a});
        expect_view_of(r, a);
        EXPECT_EQ(ggml_get_unary_op(r), op);
    }
}

TEST_F(OpsElementwise, InplaceActivationsComputeOverA) {
    const std::pair<UnaryFn, float (*)(float)> cases[] = {
        {ggml_relu_inplace, [](float x) { return x > 0 ? x : 0.0f; }},
        {ggml_silu_inplace, [](float x) { return x / (1 + std::exp(-x)); }},
        {ggml_gelu_quick_inplace, [](float x) { return x / (1 + std::exp(-1.702f * x)); }},
        {ggml_sigmoid_inplace, [](float x) { return 1 / (1 + std::exp(-x)); }},
        {ggml_tanh_inplace, [](float x) { return std::tanh(x); }},
        {ggml_gelu_inplace,
         [](float x) { return 0.5f * x * (1 + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x))); }},
    };
    for (const auto & [fn, ref] : cases) {
        ggx::test::Context ctx(ggml_init({16 << 20, nullptr, true}));
        ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 5, 2);
        const std::vector<float> x = ramp(10, -2.5f, 0.5f);
        const std::vector<float> y = compute_on_cpu(ctx.get(), fn(ctx.get(), a), {{a, x}});
        ASSERT_EQ(y.size(), x.size());
        for (size_t i = 0; i < x.size(); ++i)
            EXPECT_NEAR(y[i], ref(x[i]), 2e-3f) << i;
    }
}

TEST_F(OpsElementwise, LogSinCosAreOwnOps) {
    const std::pair<UnaryFn, ggml_op> cases[] = {
        {ggml_log, GGML_OP_LOG}, {ggml_sin, GGML_OP_SIN}, {ggml_cos, GGML_OP_COS}};
    const UnaryFn inplace[] = {ggml_log_inplace, ggml_sin_inplace, ggml_cos_inplace};
    for (size_t i = 0; i < 3; ++i) {
        ggml_tensor * a = f32(6, 2);
        ggml_tensor * r = cases[i].first(ctx(), a);
        expect_node(r, cases[i].second, GGML_TYPE_F32, {6, 2, 1, 1}, {a});
        EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), r));
        ggml_tensor * in = inplace[i](ctx(), a);
        expect_node(in, cases[i].second, GGML_TYPE_F32, {6, 2, 1, 1}, {a});
        expect_view_of(in, a);
    }
    expect_error(ggml_log(ctx(), tensor(GGML_TYPE_I32, 4)), "ggml_log", "a must be f32, f16 or bf16");
}

TEST_F(OpsElementwise, Add1AddCastAddId) {
    ggml_tensor * a = f32(4, 3);
    ggml_tensor * one = f32(1);
    expect_node(ggml_add1(ctx(), a, one), GGML_OP_ADD1, GGML_TYPE_F32, {4, 3, 1, 1}, {a, one});
    expect_view_of(ggml_add1_inplace(ctx(), a, one), a);
    expect_error(ggml_add1(ctx(), a, f32(2)), "ggml_add1", "b must have one element");

    ggml_tensor * h = tensor(GGML_TYPE_F16, 4, 3);
    ggml_tensor * row = f32(4);
    expect_node(ggml_add_cast(ctx(), h, row, GGML_TYPE_F32), GGML_OP_ADD, GGML_TYPE_F32, {4, 3, 1, 1},
                {h, row});
    expect_error(ggml_add_cast(ctx(), h, f32(3), GGML_TYPE_F32), "ggml_add_cast", "cannot be broadcast");
    expect_error(ggml_add_cast(ctx(), h, row, GGML_TYPE_Q8_0), "ggml_add_cast", "unquantized");

    ggml_tensor * x = f32(8, 2, 5);
    ggml_tensor * bias = f32(8, 4);
    ggml_tensor * ids = tensor(GGML_TYPE_I32, 2, 5);
    ggml_tensor * r = ggml_add_id(ctx(), x, bias, ids);
    expect_node(r, GGML_OP_ADD_ID, GGML_TYPE_F32, {8, 2, 5, 1}, {x, bias, ids});
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), r));
    expect_error(ggml_add_id(ctx(), x, bias, tensor(GGML_TYPE_I32, 5, 2)), "ggml_add_id",
                 "ids must be [a.ne1, a.ne2]");
    expect_error(ggml_add_id(ctx(), x, f32(7, 4), ids), "ggml_add_id", "the same ne0");
    expect_error(ggml_add_id(ctx(), x, bias, f32(2, 5)), "ggml_add_id", "ids must be i32");
}

TEST_F(OpsElementwise, AddCastToTheSameTypeComputes) {
    ggx::test::Context ctx(ggml_init({16 << 20, nullptr, true}));
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 3, 2);
    ggml_tensor * b = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 3);
    const std::vector<float> y = compute_on_cpu(ctx.get(), ggml_add_cast(ctx.get(), a, b, GGML_TYPE_F32),
                                                {{a, ramp(6, 0, 1)}, {b, ramp(3, 10, 10)}});
    EXPECT_EQ(y, (std::vector<float>{10, 21, 32, 13, 24, 35}));
}

TEST_F(OpsElementwise, AccAndSetRecordTheRegion) {
    ggml_tensor * a = f32(6, 4, 2);
    ggml_tensor * b = f32(2, 3);
    ggml_tensor * acc = ggml_acc(ctx(), a, b, a->nb[1], a->nb[2], a->nb[3], 4);
    expect_node(acc, GGML_OP_ACC, GGML_TYPE_F32, {6, 4, 2, 1}, {a, b});
    const auto p = params_of<ggml_ext_acc_params>(acc);
    EXPECT_EQ(p.nb1, static_cast<int32_t>(a->nb[1]));
    EXPECT_EQ(p.nb2, static_cast<int32_t>(a->nb[2]));
    EXPECT_EQ(p.nb3, static_cast<int32_t>(a->nb[3]));
    EXPECT_EQ(p.offset, 4);
    EXPECT_EQ(p.inplace, 0);
    ggml_tensor * acc_in = ggml_acc_inplace(ctx(), a, b, a->nb[1], a->nb[2], a->nb[3], 0);
    expect_view_of(acc_in, a);
    EXPECT_EQ(params_of<ggml_ext_acc_params>(acc_in).inplace, 1);
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), acc));

    expect_node(ggml_set(ctx(), a, b, a->nb[1], a->nb[2], a->nb[3], 8), GGML_OP_SET, GGML_TYPE_F32,
                {6, 4, 2, 1}, {a, b});
    ggml_tensor * s1 = ggml_set_1d(ctx(), a, f32(5), 12);
    EXPECT_EQ(params_of<ggml_ext_acc_params>(s1).nb1, static_cast<int32_t>(a->nb[1]));
    EXPECT_EQ(params_of<ggml_ext_acc_params>(s1).offset, 12);
    ggml_tensor * s2 = ggml_set_2d_inplace(ctx(), a, b, 2 * a->nb[1], 0);
    expect_view_of(s2, a);
    EXPECT_EQ(params_of<ggml_ext_acc_params>(s2).nb1, static_cast<int32_t>(2 * a->nb[1]));
    EXPECT_EQ(params_of<ggml_ext_acc_params>(s2).nb2, static_cast<int32_t>(a->nb[2]));
    expect_view_of(ggml_set_inplace(ctx(), a, b, a->nb[1], a->nb[2], a->nb[3], 0), a);
    expect_view_of(ggml_set_1d_inplace(ctx(), a, f32(5), 0), a);
    EXPECT_EQ(ggml_set_2d(ctx(), a, b, a->nb[1], 0)->op, GGML_OP_SET);

    expect_error(ggml_acc(ctx(), a, b, a->nb[1], a->nb[2], a->nb[3], ggml_nbytes(a) - 4), "ggml_acc",
                 "the region must lie inside a");
    expect_error(ggml_acc(ctx(), a, tensor(GGML_TYPE_F16, 2), a->nb[1], a->nb[2], a->nb[3], 0), "ggml_acc",
                 "a and b must be f32");
    expect_error(ggml_set(ctx(), a, tensor(GGML_TYPE_F16, 2), a->nb[1], a->nb[2], a->nb[3], 0), "ggml_set",
                 "the same type");
    expect_error(ggml_set_1d(ctx(), f32(3), f32(4), 0), "ggml_set", "b must not have more elements than a");
}

TEST_F(OpsElementwise, FillLeakyReluSiluBack) {
    ggml_tensor * a = f32(4, 2);
    ggml_tensor * fill = ggml_fill(ctx(), a, 2.5f);
    expect_node(fill, GGML_OP_FILL, GGML_TYPE_F32, {4, 2, 1, 1}, {a});
    EXPECT_EQ(params_of<ggml_ext_fill_params>(fill).c, 2.5f);
    expect_view_of(ggml_fill_inplace(ctx(), a, 1.0f), a);

    ggml_tensor * leaky = ggml_leaky_relu(ctx(), a, 0.1f, false);
    expect_node(leaky, GGML_OP_LEAKY_RELU, GGML_TYPE_F32, {4, 2, 1, 1}, {a});
    EXPECT_EQ(leaky->view_src, nullptr);
    EXPECT_EQ(params_of<ggml_ext_leaky_relu_params>(leaky).negative_slope, 0.1f);
    expect_view_of(ggml_leaky_relu(ctx(), a, 0.1f, true), a);

    ggml_tensor * dy = f32(4, 2);
    expect_node(ggml_silu_back(ctx(), a, dy), GGML_OP_SILU_BACK, GGML_TYPE_F32, {4, 2, 1, 1}, {a, dy});
    expect_error(ggml_silu_back(ctx(), a, f32(4)), "ggml_silu_back", "the same shape");
    expect_error(ggml_fill(ctx(), tensor(GGML_TYPE_I32, 2), 0.0f), "ggml_fill", "a must be f32, f16 or bf16");
}

TEST_F(OpsElementwise, XieluRecordsItsConstrainedCoefficients) {
    ggml_tensor * r = ggml_xielu(ctx(), f32(4), 0.5f, 0.8f, 0.5f, -1e-6f);
    const auto p = params_of<ggml_ext_unary_params>(r);
    EXPECT_EQ(p.op, GGML_UNARY_OP_XIELU);
    EXPECT_FLOAT_EQ(p.alpha_n, 0.5f + std::log1p(std::exp(0.5f)));
    EXPECT_FLOAT_EQ(p.alpha_p, std::log1p(std::exp(0.8f)));
    EXPECT_EQ(p.beta, 0.5f);
    EXPECT_EQ(p.eps, -1e-6f);
    EXPECT_EQ(params_of<ggml_ext_unary_params>(ggml_relu(ctx(), f32(4))).beta, 0.0f);
}

TEST_F(OpsElementwise, GluVariantsRecordTheirSubOp) {
    using Merged = ggml_tensor * (*)(ggml_context *, ggml_tensor *);
    using Split = ggml_tensor * (*)(ggml_context *, ggml_tensor *, ggml_tensor *);
    const struct {
        Merged merged, swapped;
        Split split;
        ggml_glu_op op;
    } cases[] = {
        {ggml_reglu, ggml_reglu_swapped, ggml_reglu_split, GGML_GLU_OP_REGLU},
        {ggml_geglu_erf, ggml_geglu_erf_swapped, ggml_geglu_erf_split, GGML_GLU_OP_GEGLU_ERF},
        {ggml_geglu_quick, ggml_geglu_quick_swapped, ggml_geglu_quick_split, GGML_GLU_OP_GEGLU_QUICK},
    };
    for (const auto & c : cases) {
        ggml_tensor * a = f32(8, 3);
        ggml_tensor * merged = c.merged(ctx(), a);
        expect_node(merged, GGML_OP_GLU, GGML_TYPE_F32, {4, 3, 1, 1}, {a});
        EXPECT_EQ(ggml_get_glu_op(merged), c.op);
        EXPECT_EQ(params_of<ggml_ext_glu_params>(merged).swapped, 0);
        EXPECT_EQ(params_of<ggml_ext_glu_params>(c.swapped(ctx(), a)).swapped, 1);
        ggml_tensor * b = f32(8, 3);
        expect_node(c.split(ctx(), a, b), GGML_OP_GLU, GGML_TYPE_F32, {8, 3, 1, 1}, {a, b});
        EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), merged));
    }
    ggml_tensor *a = f32(8, 3), *b = f32(8, 3);
    ggml_tensor * oai = ggml_swiglu_oai(ctx(), a, b, 1.702f, 7.0f);
    expect_node(oai, GGML_OP_GLU, GGML_TYPE_F32, {8, 3, 1, 1}, {a, b});
    const auto p = params_of<ggml_ext_glu_params>(oai);
    EXPECT_EQ(p.op, GGML_GLU_OP_SWIGLU_OAI);
    EXPECT_EQ(p.alpha, 1.702f);
    EXPECT_EQ(p.limit, 7.0f);
    expect_node(ggml_swiglu_oai(ctx(), a, nullptr, 1.0f, 1.0f), GGML_OP_GLU, GGML_TYPE_F32, {4, 3, 1, 1},
                {a});
    expect_error(ggml_reglu_split(ctx(), a, f32(4, 3)), "ggml_reglu_split", "the same shape");
    expect_error(ggml_geglu_quick(ctx(), f32(7)), "ggml_geglu_quick", "must be even");
}

TEST_F(OpsElementwise, OptimizerStepsUpdateAInPlace) {
    ggml_tensor * a = f32(5, 2);
    a->flags |= GGML_TENSOR_FLAG_PARAM;
    ggml_tensor *grad = f32(5, 2), *m = f32(5, 2), *v = f32(5, 2), *adamw = f32(7), *sgd = f32(2);
    ggml_tensor * step = ggml_opt_step_adamw(ctx(), a, grad, m, v, adamw);
    expect_node(step, GGML_OP_OPT_STEP_ADAMW, GGML_TYPE_F32, {5, 2, 1, 1}, {a, grad, m, v, adamw});
    expect_view_of(step, a);
    ggml_tensor * sgd_step = ggml_opt_step_sgd(ctx(), a, grad, sgd);
    expect_node(sgd_step, GGML_OP_OPT_STEP_SGD, GGML_TYPE_F32, {5, 2, 1, 1}, {a, grad, sgd});
    expect_view_of(sgd_step, a);
    EXPECT_TRUE(ggml_backend_supports_op(cpu_backend(), sgd_step));

    expect_error(ggml_opt_step_adamw(ctx(), a, grad, m, v, f32(6)), "ggml_opt_step_adamw", "7 f32 values");
    expect_error(ggml_opt_step_sgd(ctx(), a, f32(5), sgd), "ggml_opt_step_sgd",
                 "a and grad must have the same shape");
    expect_error(ggml_opt_step_sgd(ctx(), f32(5, 2), grad, sgd), "ggml_opt_step_sgd", "trainable parameter");
    EXPECT_EQ(ggml_opt_step_adamw(ctx(), a, grad, nullptr, v, adamw), nullptr);
}

// The validation errors the tests above do not reach.
TEST_F(OpsElementwise, RejectsOperandsTheKernelsCannotTake) {
    ggml_tensor *a = tensor(GGML_TYPE_F16, 4, 3), *i32 = tensor(GGML_TYPE_I32, 4, 3);
    expect_error(ggml_add1(ctx(), a, tensor(GGML_TYPE_BF16, 1)), "ggml_add1", "b must be f32 or of a's type");
    expect_error(ggml_add_id(ctx(), f32(8, 2, 5), f32(6, 4), tensor(GGML_TYPE_I32, 2, 5)), "ggml_add_id",
                 "the same ne0");
    expect_error(ggml_add_id(ctx(), f32(8, 2, 5), f32(8, 4), f32(2, 5)), "ggml_add_id", "ids must be i32");
    expect_error(ggml_acc(ctx(), ggml_transpose(ctx(), f32(4, 3)), f32(2), 16, 48, 48, 0), "ggml_acc",
                 "a must be contiguous");
    expect_error(ggml_set(ctx(), tensor(GGML_TYPE_Q8_0, 32, 2), tensor(GGML_TYPE_Q8_0, 32), 34, 68, 68, 0),
                 "ggml_set", "a must not be quantized");
    expect_error(ggml_silu_back(ctx(), a, f32(4, 3)), "ggml_silu_back", "the same type");
    expect_error(ggml_leaky_relu(ctx(), i32, 0.1f, false), "ggml_leaky_relu", "a must be f32, f16 or bf16");
    expect_error(ggml_unary(ctx(), a, GGML_UNARY_OP_COUNT), "ggml_unary", "unknown unary op");
    expect_error(ggml_glu(ctx(), f32(8), GGML_GLU_OP_COUNT, false), "ggml_glu", "unknown glu op");
    expect_error(ggml_swiglu_oai(ctx(), a, f32(4, 3), 1.0f, 1.0f), "ggml_swiglu_oai", "the same type");
}

}  // namespace
