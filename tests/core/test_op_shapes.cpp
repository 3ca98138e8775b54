// Shape, type, source wiring and op_params of every operator constructor in include/ggml.h from
// "Element-wise arithmetic" to "Application CPU callbacks", and the rejected inputs of docs/ops.md:
// each must return NULL with an error naming the operator and every operand's type and shape
// (docs/errors.md).
#include <ggml.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace {

struct CtxFree {
    void operator()(ggml_context * c) const { ggml_free(c); }
};
using Ctx = std::unique_ptr<ggml_context, CtxFree>;

using Ne = std::array<int64_t, 4>;

Ctx new_ctx() {
    ggml_init_params p{};
    p.mem_size = 64 << 20;
    p.mem_buffer = nullptr;
    p.no_alloc = true;  // shape inference only
    return Ctx(ggml_init(p));
}

Ne ne_of(const ggml_tensor * t) { return {t->ne[0], t->ne[1], t->ne[2], t->ne[3]}; }

float pf(const ggml_tensor * t, int i) {
    float f;
    std::memcpy(&f, &t->op_params[i], sizeof f);
    return f;
}
int32_t pi(const ggml_tensor * t, int i) { return t->op_params[i]; }

// "f32 [4, 3, 1, 1]": how docs/errors.md prints an operand.
std::string describe(const ggml_tensor * t) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s [%lld, %lld, %lld, %lld]", ggml_type_name(t->type),
                  (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3]);
    return buf;
}

std::string error_of(const ggml_context * ctx) {
    const char * e = ggml_get_error(ctx);
    return e ? std::string(e) : std::string();
}

const ggml_type kFloatTypes[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16};

class OpShapes : public ::testing::Test {
protected:
    void SetUp() override {
        ctx_ = new_ctx();
        ASSERT_NE(ctx_, nullptr);
    }
    void TearDown() override {
        if (ctx_) {
            EXPECT_EQ(ggml_get_error(ctx_.get()), nullptr) << error_of(ctx_.get());
        }
    }
    ggml_context * ctx() { return ctx_.get(); }

    ggml_tensor * T(ggml_type type, int64_t n0, int64_t n1 = 1, int64_t n2 = 1, int64_t n3 = 1) {
        ggml_tensor * t = ggml_new_tensor_4d(ctx(), type, n0, n1, n2, n3);
        EXPECT_NE(t, nullptr);
        return t;
    }
    // A non-contiguous [n0, n1, n2, n3] view: the transpose of a [n1, n0, n2, n3] tensor.
    ggml_tensor * Tt(ggml_type type, int64_t n0, int64_t n1, int64_t n2 = 1, int64_t n3 = 1) {
        ggml_tensor * t = ggml_transpose(ctx(), T(type, n1, n0, n2, n3));
        EXPECT_NE(t, nullptr);
        return t;
    }
    // A non-contiguous [n0, n1, n2, n3] view whose rows are dense: dims 1 and 2 swapped.
    ggml_tensor * Tp(ggml_type type, int64_t n0, int64_t n1, int64_t n2, int64_t n3 = 1) {
        ggml_tensor * t = ggml_permute(ctx(), T(type, n0, n2, n1, n3), 0, 2, 1, 3);
        EXPECT_NE(t, nullptr);
        return t;
    }
    // A strided slice [n0, n1, n2, n3] of a tensor with rows of 2*n0 + 1 elements, offset by 1.
    ggml_tensor * Ts(ggml_type type, int64_t n0, int64_t n1, int64_t n2 = 1, int64_t n3 = 1) {
        ggml_tensor * base = T(type, 2 * n0 + 1, n1, n2, n3);
        ggml_tensor * t =
            ggml_view_4d(ctx(), base, n0, n1, n2, n3, base->nb[1], base->nb[2], base->nb[3], base->nb[0]);
        EXPECT_NE(t, nullptr);
        return t;
    }

    Ctx ctx_;
};

// r is a new contiguous tensor of type and shape ne with op.
void expect_new(const ggml_tensor * r, ggml_op op, ggml_type type, Ne ne) {
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->op, op) << ggml_op_name(r->op);
    EXPECT_EQ(r->type, type) << ggml_type_name(r->type);
    EXPECT_EQ(ne_of(r), ne);
    EXPECT_EQ(r->view_src, nullptr);
    EXPECT_TRUE(ggml_is_contiguous(r));
}

// r is an in-place result over a: a view of a's storage with a's shape, type and strides.
void expect_inplace(const ggml_tensor * r, const ggml_tensor * a, ggml_op op) {
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->op, op) << ggml_op_name(r->op);
    EXPECT_EQ(r->type, a->type);
    EXPECT_EQ(ne_of(r), ne_of(a));
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        EXPECT_EQ(r->nb[i], a->nb[i]) << i;
    const ggml_tensor * owner = a->view_src ? a->view_src : a;
    EXPECT_EQ(r->view_src, owner);
    EXPECT_EQ(r->view_offs, a->view_src ? a->view_offs : 0u);
    EXPECT_EQ(r->data, a->data);
}

void dummy_callback(ggml_tensor *, int, int, void *) {}
void other_callback(ggml_tensor *, int, int, void *) {}

}  // namespace

// =============================================================================================
// Element-wise arithmetic: add / sub / mul / div and their _inplace forms

struct BinaryOp {
    const char * name;
    ggml_op op;
    ggml_tensor * (*fn)(ggml_context *, ggml_tensor *, ggml_tensor *);
    ggml_tensor * (*fn_inplace)(ggml_context *, ggml_tensor *, ggml_tensor *);
};

void PrintTo(const BinaryOp & op, std::ostream * os) { *os << op.name; }

class BinaryOps : public OpShapes, public ::testing::WithParamInterface<BinaryOp> {};

TEST_P(BinaryOps, BroadcastShapesAndTypes) {
    const BinaryOp & op = GetParam();
    const std::pair<Ne, Ne> shapes[] = {
        {{7, 3, 2, 1}, {7, 3, 2, 1}},   {{7, 3, 2, 1}, {7, 1, 1, 1}}, {{7, 3, 2, 1}, {1, 3, 1, 1}},
        {{33, 1, 1, 1}, {1, 1, 1, 1}},  {{6, 4, 3, 2}, {3, 2, 3, 1}}, {{1, 1, 1, 1}, {1, 1, 1, 1}},
        {{3, 7, 1, 33}, {3, 1, 1, 33}},
    };
    const std::pair<ggml_type, ggml_type> types[] = {
        {GGML_TYPE_F32, GGML_TYPE_F32},  {GGML_TYPE_F16, GGML_TYPE_F32},   {GGML_TYPE_F16, GGML_TYPE_F16},
        {GGML_TYPE_BF16, GGML_TYPE_F32}, {GGML_TYPE_BF16, GGML_TYPE_BF16},
    };
    for (const auto & [na, nb] : shapes) {
        for (const auto & [ta, tb] : types) {
            SCOPED_TRACE(std::string(op.name) + " " + ggml_type_name(ta) + " " + ggml_type_name(tb) + " a[" +
                         std::to_string(na[0]) + "," + std::to_string(na[1]) + "] b[" +
                         std::to_string(nb[0]) + "," + std::to_string(nb[1]) + "]");
            ggml_tensor * a = T(ta, na[0], na[1], na[2], na[3]);
            ggml_tensor * b = T(tb, nb[0], nb[1], nb[2], nb[3]);
            ggml_tensor * r = op.fn(ctx(), a, b);
            expect_new(r, op.op, ta, na);
            if (r) {
                EXPECT_EQ(r->src[0], a);
                EXPECT_EQ(r->src[1], b);
                EXPECT_EQ(r->src[2], nullptr);
            }
            ggml_tensor * ri = op.fn_inplace(ctx(), a, b);
            expect_inplace(ri, a, op.op);
            if (ri) {
                EXPECT_EQ(ri->src[0], a);
                EXPECT_EQ(ri->src[1], b);
            }
        }
    }
}

TEST_P(BinaryOps, NonContiguousInputs) {
    const BinaryOp & op = GetParam();
    ggml_tensor * a = Tt(GGML_TYPE_F32, 7, 3);      // transposed
    ggml_tensor * b = Ts(GGML_TYPE_F32, 7, 3);      // strided slice
    ggml_tensor * c = Tp(GGML_TYPE_F16, 33, 3, 2);  // permuted
    ggml_tensor * r = op.fn(ctx(), a, b);
    expect_new(r, op.op, GGML_TYPE_F32, {7, 3, 1, 1});
    ggml_tensor * r2 = op.fn(ctx(), c, Tt(GGML_TYPE_F32, 33, 1, 2));
    expect_new(r2, op.op, GGML_TYPE_F16, {33, 3, 2, 1});
    // In place over a view: the result views the same owner at the same offset.
    ggml_tensor * ri = op.fn_inplace(ctx(), b, a);
    expect_inplace(ri, b, op.op);
    ggml_tensor * rp = op.fn_inplace(ctx(), c, T(GGML_TYPE_F16, 33, 1, 1));
    expect_inplace(rp, c, op.op);
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryOps,
                         ::testing::Values(BinaryOp{"add", GGML_OP_ADD, ggml_add, ggml_add_inplace},
                                           BinaryOp{"sub", GGML_OP_SUB, ggml_sub, ggml_sub_inplace},
                                           BinaryOp{"mul", GGML_OP_MUL, ggml_mul, ggml_mul_inplace},
                                           BinaryOp{"div", GGML_OP_DIV, ggml_div, ggml_div_inplace}),
                         [](const ::testing::TestParamInfo<BinaryOp> & i) { return i.param.name; });

// =============================================================================================
// Shape-preserving single-input operators: scale, sqr, sqrt, clamp, unary activations, norms,
// soft_max (no mask). Each must keep a's shape and type and encode its parameters.

struct ElementwiseOp {
    const char * name;
    ggml_op op;
    bool inplace;
    bool any_float;  // F32/F16/BF16; otherwise F32 only
    ggml_tensor * (*make)(ggml_context *, ggml_tensor *);
    void (*check)(const ggml_tensor *);  // op_params and extra sources
};

void PrintTo(const ElementwiseOp & op, std::ostream * os) { *os << op.name; }

class ElementwiseOps : public OpShapes, public ::testing::WithParamInterface<ElementwiseOp> {};

TEST_P(ElementwiseOps, KeepsShapeAndTypeAndParams) {
    const ElementwiseOp & op = GetParam();
    std::vector<ggml_type> types;
    if (op.any_float) {
        types.assign(std::begin(kFloatTypes), std::end(kFloatTypes));
    } else {
        types = {GGML_TYPE_F32};
    }
    for (ggml_type type : types) {
        std::vector<ggml_tensor *> inputs = {
            T(type, 1),          T(type, 3),     T(type, 7, 3),      T(type, 33, 7, 3, 2),
            T(type, 1, 1, 1, 7), Tt(type, 7, 3), Tp(type, 33, 3, 2), Ts(type, 7, 3, 2),
        };
        for (ggml_tensor * a : inputs) {
            SCOPED_TRACE(std::string(op.name) + " " + describe(a));
            ggml_tensor * r = op.make(ctx(), a);
            if (op.inplace) {
                expect_inplace(r, a, op.op);
            } else {
                expect_new(r, op.op, a->type, ne_of(a));
            }
            if (!r) continue;
            EXPECT_EQ(r->src[0], a);
            op.check(r);
        }
    }
}

#define EW(name, op, inplace, any_float, expr, check)                                  \
    ElementwiseOp {                                                                    \
        name, op, inplace, any_float,                                                  \
            [](ggml_context * ctx, ggml_tensor * a) -> ggml_tensor * { return expr; }, \
            [](const ggml_tensor * r) { check; }                                       \
    }

#define UNARY_CHECK(u)                                    \
    EXPECT_EQ(pi(r, 0), int32_t(u));                      \
    EXPECT_EQ(ggml_get_unary_op(r), u);                   \
    EXPECT_STREQ(ggml_op_desc(r), ggml_unary_op_name(u)); \
    EXPECT_EQ(r->src[1], nullptr)

INSTANTIATE_TEST_SUITE_P(
    Ops, ElementwiseOps,
    ::testing::Values(
        EW("scale", GGML_OP_SCALE, false, true, ggml_scale(ctx, a, 2.5f), EXPECT_EQ(pf(r, 0), 2.5f);
           EXPECT_EQ(pf(r, 1), 0.0f)),
        EW("scale_inplace", GGML_OP_SCALE, true, true, ggml_scale_inplace(ctx, a, -0.5f),
           EXPECT_EQ(pf(r, 0), -0.5f);
           EXPECT_EQ(pf(r, 1), 0.0f)),
        EW("scale_bias", GGML_OP_SCALE, false, true, ggml_scale_bias(ctx, a, 2.5f, -1.25f),
           EXPECT_EQ(pf(r, 0), 2.5f);
           EXPECT_EQ(pf(r, 1), -1.25f)),
        EW("scale_bias_inplace", GGML_OP_SCALE, true, true, ggml_scale_bias_inplace(ctx, a, 3.0f, 0.75f),
           EXPECT_EQ(pf(r, 0), 3.0f);
           EXPECT_EQ(pf(r, 1), 0.75f)),
        EW("sqr", GGML_OP_SQR, false, true, ggml_sqr(ctx, a), EXPECT_EQ(r->src[1], nullptr)),
        EW("sqr_inplace", GGML_OP_SQR, true, true, ggml_sqr_inplace(ctx, a), EXPECT_EQ(r->src[1], nullptr)),
        EW("sqrt", GGML_OP_SQRT, false, true, ggml_sqrt(ctx, a), EXPECT_EQ(r->src[1], nullptr)),
        EW("sqrt_inplace", GGML_OP_SQRT, true, true, ggml_sqrt_inplace(ctx, a),
           EXPECT_EQ(r->src[1], nullptr)),
        EW("clamp", GGML_OP_CLAMP, false, true, ggml_clamp(ctx, a, -1.5f, 3.0f), EXPECT_EQ(pf(r, 0), -1.5f);
           EXPECT_EQ(pf(r, 1), 3.0f)),
        EW("clamp_equal_bounds", GGML_OP_CLAMP, false, true, ggml_clamp(ctx, a, 2.0f, 2.0f),
           EXPECT_EQ(pf(r, 0), 2.0f);
           EXPECT_EQ(pf(r, 1), 2.0f)),
        EW("clamp_inplace", GGML_OP_CLAMP, true, true, ggml_clamp_inplace(ctx, a, 0.0f, 6.0f),
           EXPECT_EQ(pf(r, 0), 0.0f);
           EXPECT_EQ(pf(r, 1), 6.0f)),
        EW("unary_relu", GGML_OP_UNARY, false, true, ggml_unary(ctx, a, GGML_UNARY_OP_RELU),
           UNARY_CHECK(GGML_UNARY_OP_RELU)),
        EW("unary_silu", GGML_OP_UNARY, false, true, ggml_unary(ctx, a, GGML_UNARY_OP_SILU),
           UNARY_CHECK(GGML_UNARY_OP_SILU)),
        EW("unary_gelu", GGML_OP_UNARY, false, true, ggml_unary(ctx, a, GGML_UNARY_OP_GELU),
           UNARY_CHECK(GGML_UNARY_OP_GELU)),
        EW("unary_gelu_quick", GGML_OP_UNARY, false, true, ggml_unary(ctx, a, GGML_UNARY_OP_GELU_QUICK),
           UNARY_CHECK(GGML_UNARY_OP_GELU_QUICK)),
        EW("unary_sigmoid", GGML_OP_UNARY, false, true, ggml_unary(ctx, a, GGML_UNARY_OP_SIGMOID),
           UNARY_CHECK(GGML_UNARY_OP_SIGMOID)),
        EW("unary_tanh", GGML_OP_UNARY, false, true, ggml_unary(ctx, a, GGML_UNARY_OP_TANH),
           UNARY_CHECK(GGML_UNARY_OP_TANH)),
        EW("unary_inplace_silu", GGML_OP_UNARY, true, true, ggml_unary_inplace(ctx, a, GGML_UNARY_OP_SILU),
           UNARY_CHECK(GGML_UNARY_OP_SILU)),
        EW("unary_inplace_tanh", GGML_OP_UNARY, true, true, ggml_unary_inplace(ctx, a, GGML_UNARY_OP_TANH),
           UNARY_CHECK(GGML_UNARY_OP_TANH)),
        EW("relu", GGML_OP_UNARY, false, true, ggml_relu(ctx, a), UNARY_CHECK(GGML_UNARY_OP_RELU)),
        EW("silu", GGML_OP_UNARY, false, true, ggml_silu(ctx, a), UNARY_CHECK(GGML_UNARY_OP_SILU)),
        EW("gelu", GGML_OP_UNARY, false, true, ggml_gelu(ctx, a), UNARY_CHECK(GGML_UNARY_OP_GELU)),
        EW("gelu_quick", GGML_OP_UNARY, false, true, ggml_gelu_quick(ctx, a),
           UNARY_CHECK(GGML_UNARY_OP_GELU_QUICK)),
        EW("sigmoid", GGML_OP_UNARY, false, true, ggml_sigmoid(ctx, a), UNARY_CHECK(GGML_UNARY_OP_SIGMOID)),
        EW("tanh", GGML_OP_UNARY, false, true, ggml_tanh(ctx, a), UNARY_CHECK(GGML_UNARY_OP_TANH)),
        EW("norm", GGML_OP_NORM, false, false, ggml_norm(ctx, a, 1e-5f), EXPECT_EQ(pf(r, 0), 1e-5f)),
        EW("norm_zero_eps", GGML_OP_NORM, false, false, ggml_norm(ctx, a, 0.0f), EXPECT_EQ(pf(r, 0), 0.0f)),
        EW("norm_inplace", GGML_OP_NORM, true, false, ggml_norm_inplace(ctx, a, 1e-3f),
           EXPECT_EQ(pf(r, 0), 1e-3f)),
        EW("rms_norm", GGML_OP_RMS_NORM, false, false, ggml_rms_norm(ctx, a, 1e-6f),
           EXPECT_EQ(pf(r, 0), 1e-6f)),
        EW("rms_norm_inplace", GGML_OP_RMS_NORM, true, false, ggml_rms_norm_inplace(ctx, a, 2e-6f),
           EXPECT_EQ(pf(r, 0), 2e-6f)),
        EW("l2_norm", GGML_OP_L2_NORM, false, false, ggml_l2_norm(ctx, a, 1e-12f),
           EXPECT_EQ(pf(r, 0), 1e-12f)),
        EW("soft_max", GGML_OP_SOFT_MAX, false, false, ggml_soft_max(ctx, a), EXPECT_EQ(r->src[1], nullptr);
           EXPECT_EQ(pf(r, 0), 1.0f); EXPECT_EQ(pf(r, 1), 0.0f)),
        EW("soft_max_inplace", GGML_OP_SOFT_MAX, true, false, ggml_soft_max_inplace(ctx, a),
           EXPECT_EQ(r->src[1], nullptr);
           EXPECT_EQ(pf(r, 0), 1.0f); EXPECT_EQ(pf(r, 1), 0.0f)),
        EW("soft_max_ext_no_mask", GGML_OP_SOFT_MAX, false, false,
           ggml_soft_max_ext(ctx, a, nullptr, 0.125f, 0.0f), EXPECT_EQ(r->src[1], nullptr);
           EXPECT_EQ(pf(r, 0), 0.125f); EXPECT_EQ(pf(r, 1), 0.0f))),
    [](const ::testing::TestParamInfo<ElementwiseOp> & i) { return i.param.name; });

#undef EW
#undef UNARY_CHECK

TEST_F(OpShapes, UnaryOpNames) {
    ggml_tensor * r = ggml_relu(ctx(), T(GGML_TYPE_F32, 4));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(ggml_get_custom_kind(r), GGML_CUSTOM_KIND_NONE);
    const ggml_tensor * g = ggml_swiglu(ctx(), T(GGML_TYPE_F32, 4));
    ASSERT_NE(g, nullptr);
    EXPECT_STREQ(ggml_op_desc(g), ggml_glu_op_name(GGML_GLU_OP_SWIGLU));
    const ggml_tensor * s = ggml_sqr(ctx(), T(GGML_TYPE_F32, 4));
    ASSERT_NE(s, nullptr);
    EXPECT_STREQ(ggml_op_desc(s), ggml_op_name(GGML_OP_SQR));
}

// =============================================================================================
// GLU

TEST_F(OpShapes, GluMerged) {
    struct Case {
        ggml_tensor * (*make)(ggml_context *, ggml_tensor *);
        ggml_glu_op op;
        bool swapped;
    };
    const Case cases[] = {
        {[](ggml_context * c, ggml_tensor * a) { return ggml_glu(c, a, GGML_GLU_OP_SWIGLU, false); },
         GGML_GLU_OP_SWIGLU, false},
        {[](ggml_context * c, ggml_tensor * a) { return ggml_glu(c, a, GGML_GLU_OP_GEGLU, true); },
         GGML_GLU_OP_GEGLU, true},
        {ggml_swiglu, GGML_GLU_OP_SWIGLU, false},
        {ggml_swiglu_swapped, GGML_GLU_OP_SWIGLU, true},
        {ggml_geglu, GGML_GLU_OP_GEGLU, false},
        {ggml_geglu_swapped, GGML_GLU_OP_GEGLU, true},
    };
    for (const Case & c : cases) {
        for (ggml_type type : kFloatTypes) {
            const std::vector<ggml_tensor *> inputs = {T(type, 2), T(type, 14, 3), T(type, 66, 1, 3, 2),
                                                       Tt(type, 6, 7), Ts(type, 14, 3, 2)};
            for (ggml_tensor * a : inputs) {
                SCOPED_TRACE(std::string(ggml_glu_op_name(c.op)) + (c.swapped ? " swapped " : " ") +
                             describe(a));
                ggml_tensor * r = c.make(ctx(), a);
                expect_new(r, GGML_OP_GLU, type, {a->ne[0] / 2, a->ne[1], a->ne[2], a->ne[3]});
                if (!r) continue;
                EXPECT_EQ(r->src[0], a);
                EXPECT_EQ(r->src[1], nullptr);
                EXPECT_EQ(pi(r, 0), int32_t(c.op));
                EXPECT_EQ(pi(r, 1), c.swapped ? 1 : 0);
                EXPECT_EQ(ggml_get_glu_op(r), c.op);
            }
        }
    }
}

TEST_F(OpShapes, GluSplit) {
    struct Case {
        ggml_tensor * (*make)(ggml_context *, ggml_tensor *, ggml_tensor *);
        ggml_glu_op op;
    };
    const Case cases[] = {
        {[](ggml_context * c, ggml_tensor * a, ggml_tensor * b) {
             return ggml_glu_split(c, a, b, GGML_GLU_OP_GEGLU);
         },
         GGML_GLU_OP_GEGLU},
        {[](ggml_context * c, ggml_tensor * a, ggml_tensor * b) {
             return ggml_glu_split(c, a, b, GGML_GLU_OP_SWIGLU);
         },
         GGML_GLU_OP_SWIGLU},
        {ggml_swiglu_split, GGML_GLU_OP_SWIGLU},
        {ggml_geglu_split, GGML_GLU_OP_GEGLU},
    };
    for (const Case & c : cases) {
        for (ggml_type type : kFloatTypes) {
            const std::pair<ggml_tensor *, ggml_tensor *> inputs[] = {
                {T(type, 7, 3), T(type, 7, 3)},
                {T(type, 1), T(type, 1)},
                {Tt(type, 33, 3, 2), Ts(type, 33, 3, 2)},
            };
            for (const auto & [a, b] : inputs) {
                SCOPED_TRACE(std::string(ggml_glu_op_name(c.op)) + " " + describe(a));
                ggml_tensor * r = c.make(ctx(), a, b);
                expect_new(r, GGML_OP_GLU, type, ne_of(a));
                if (!r) continue;
                EXPECT_EQ(r->src[0], a);
                EXPECT_EQ(r->src[1], b);
                EXPECT_EQ(pi(r, 0), int32_t(c.op));
                EXPECT_EQ(pi(r, 1), 0);
                EXPECT_EQ(ggml_get_glu_op(r), c.op);
            }
        }
    }
}

// =============================================================================================
// Reductions

TEST_F(OpShapes, Reductions) {
    for (ggml_type type : kFloatTypes) {
        const std::vector<ggml_tensor *> inputs = {T(type, 1), T(type, 7, 3, 2, 2), T(type, 33),
                                                   Tt(type, 3, 7), Tp(type, 5, 3, 2)};
        for (ggml_tensor * a : inputs) {
            SCOPED_TRACE(describe(a));
            ggml_tensor * s = ggml_sum(ctx(), a);
            expect_new(s, GGML_OP_SUM, type, {1, 1, 1, 1});
            if (s) {
                EXPECT_EQ(s->src[0], a);
            }
            ggml_tensor * sr = ggml_sum_rows(ctx(), a);
            expect_new(sr, GGML_OP_SUM_ROWS, type, {1, a->ne[1], a->ne[2], a->ne[3]});
            if (sr) {
                EXPECT_EQ(sr->src[0], a);
            }
            ggml_tensor * m = ggml_mean(ctx(), a);
            expect_new(m, GGML_OP_MEAN, type, {1, a->ne[1], a->ne[2], a->ne[3]});
            if (m) {
                EXPECT_EQ(m->src[0], a);
            }
        }
    }
    const std::vector<ggml_tensor *> mats = {T(GGML_TYPE_F32, 7, 3), T(GGML_TYPE_F32, 1, 1),
                                             T(GGML_TYPE_F32, 33), Tt(GGML_TYPE_F32, 3, 7)};
    for (ggml_tensor * a : mats) {
        SCOPED_TRACE(describe(a));
        ggml_tensor * r = ggml_argmax(ctx(), a);
        expect_new(r, GGML_OP_ARGMAX, GGML_TYPE_I32, {a->ne[1], 1, 1, 1});
        if (r) {
            EXPECT_EQ(r->src[0], a);
        }
    }
}

// =============================================================================================
// Shape ops: repeat, concat, pad, upscale

TEST_F(OpShapes, Repeat) {
    struct Case {
        ggml_type type;
        Ne a, b;
    };
    const Case cases[] = {
        {GGML_TYPE_F32, {1, 3, 1, 1}, {4, 6, 2, 1}},  {GGML_TYPE_F16, {7, 1, 1, 1}, {7, 3, 1, 33}},
        {GGML_TYPE_BF16, {1, 1, 1, 1}, {3, 1, 7, 1}}, {GGML_TYPE_I32, {2, 1, 1, 1}, {6, 3, 1, 1}},
        {GGML_TYPE_F32, {3, 7, 1, 1}, {3, 7, 1, 1}},
    };
    for (const Case & c : cases) {
        ggml_tensor * a = T(c.type, c.a[0], c.a[1], c.a[2], c.a[3]);
        ggml_tensor * b = T(GGML_TYPE_F32, c.b[0], c.b[1], c.b[2], c.b[3]);
        SCOPED_TRACE(describe(a) + " -> " + describe(b));
        ggml_tensor * r = ggml_repeat(ctx(), a, b);
        expect_new(r, GGML_OP_REPEAT, c.type, c.b);
        if (r) {
            EXPECT_EQ(r->src[0], a);
        }
    }
    ggml_tensor * v = Tt(GGML_TYPE_F32, 1, 3);
    expect_new(ggml_repeat(ctx(), v, T(GGML_TYPE_F16, 5, 9)), GGML_OP_REPEAT, GGML_TYPE_F32, {5, 9, 1, 1});
}

TEST_F(OpShapes, Concat) {
    for (int dim = 0; dim < 4; ++dim) {
        for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32}) {
            Ne na = {3, 4, 2, 5};
            Ne nb = na;
            nb[dim] = 7;
            ggml_tensor * a = T(type, na[0], na[1], na[2], na[3]);
            ggml_tensor * b = T(type, nb[0], nb[1], nb[2], nb[3]);
            SCOPED_TRACE("dim " + std::to_string(dim) + " " + describe(a) + " " + describe(b));
            Ne expected = na;
            expected[dim] += 7;
            ggml_tensor * r = ggml_concat(ctx(), a, b, dim);
            expect_new(r, GGML_OP_CONCAT, type, expected);
            if (!r) continue;
            EXPECT_EQ(r->src[0], a);
            EXPECT_EQ(r->src[1], b);
            EXPECT_EQ(pi(r, 0), dim);
        }
    }
    // Non-contiguous inputs, size-1 operands.
    ggml_tensor * a = Tt(GGML_TYPE_F32, 1, 3);
    ggml_tensor * b = Ts(GGML_TYPE_F32, 33, 3);
    expect_new(ggml_concat(ctx(), a, b, 0), GGML_OP_CONCAT, GGML_TYPE_F32, {34, 3, 1, 1});
}

TEST_F(OpShapes, Pad) {
    ggml_tensor * a = T(GGML_TYPE_F32, 7, 3);
    ggml_tensor * r = ggml_pad_ext(ctx(), a, 1, 2, 0, 3, 4, 0, 0, 1);
    expect_new(r, GGML_OP_PAD, GGML_TYPE_F32, {10, 6, 5, 2});
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->src[0], a);
    const int32_t expected_ext[8] = {1, 2, 0, 3, 4, 0, 0, 1};
    for (int i = 0; i < 8; ++i)
        EXPECT_EQ(pi(r, i), expected_ext[i]) << i;

    for (ggml_type type : kFloatTypes) {
        ggml_tensor * b = Tp(type, 5, 3, 2);
        ggml_tensor * p = ggml_pad(ctx(), b, 3, 0, 1, 7);
        expect_new(p, GGML_OP_PAD, type, {8, 3, 3, 8});
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(p->src[0], b);
        const int32_t expected[8] = {0, 3, 0, 0, 0, 1, 0, 7};
        for (int i = 0; i < 8; ++i)
            EXPECT_EQ(pi(p, i), expected[i]) << i;
    }
    // No padding at all is a plain copy of the shape.
    expect_new(ggml_pad(ctx(), a, 0, 0, 0, 0), GGML_OP_PAD, GGML_TYPE_F32, {7, 3, 1, 1});
}

TEST_F(OpShapes, Upscale) {
    ggml_tensor * a = T(GGML_TYPE_F32, 7, 3, 2);
    ggml_tensor * r = ggml_upscale_ext(ctx(), a, 14, 5, 2, 3, GGML_SCALE_MODE_NEAREST);
    expect_new(r, GGML_OP_UPSCALE, GGML_TYPE_F32, {14, 5, 2, 3});
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->src[0], a);
    EXPECT_EQ(pi(r, 0), int32_t(GGML_SCALE_MODE_NEAREST));
    // Down-scaling to size 1 is allowed.
    expect_new(ggml_upscale_ext(ctx(), a, 1, 1, 1, 1, GGML_SCALE_MODE_NEAREST), GGML_OP_UPSCALE,
               GGML_TYPE_F32, {1, 1, 1, 1});
    ggml_tensor * u = ggml_upscale(ctx(), a, 3, GGML_SCALE_MODE_NEAREST);
    expect_new(u, GGML_OP_UPSCALE, GGML_TYPE_F32, {21, 9, 2, 1});
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(pi(u, 0), int32_t(GGML_SCALE_MODE_NEAREST));
    expect_new(ggml_upscale(ctx(), Tt(GGML_TYPE_F32, 3, 1), 1, GGML_SCALE_MODE_NEAREST), GGML_OP_UPSCALE,
               GGML_TYPE_F32, {3, 1, 1, 1});
}

// =============================================================================================
// Normalisation: group_norm (the per-row norms are in ElementwiseOps)

TEST_F(OpShapes, GroupNorm) {
    ggml_tensor * a = T(GGML_TYPE_F32, 5, 4, 6, 2);
    for (int groups : {1, 4, 6}) {
        ggml_tensor * r = ggml_group_norm(ctx(), a, groups, 1e-6f);
        expect_new(r, GGML_OP_GROUP_NORM, GGML_TYPE_F32, {5, 4, 6, 2});
        if (!r) continue;
        EXPECT_EQ(r->src[0], a);
        EXPECT_EQ(pi(r, 0), groups);
        EXPECT_EQ(pf(r, 1), 1e-6f);
    }
    ggml_tensor * p = Tp(GGML_TYPE_F32, 3, 7, 33);
    expect_new(ggml_group_norm(ctx(), p, 32, 0.0f), GGML_OP_GROUP_NORM, GGML_TYPE_F32, {3, 7, 33, 1});
}

// =============================================================================================
// Matrix products and attention

TEST_F(OpShapes, MulMat) {
    struct Case {
        ggml_type ta, tb;
        Ne a, b;
    };
    const Case cases[] = {
        {GGML_TYPE_F32, GGML_TYPE_F32, {7, 3, 1, 1}, {7, 5, 1, 1}},
        {GGML_TYPE_F16, GGML_TYPE_F32, {33, 1, 2, 1}, {33, 4, 6, 3}},
        {GGML_TYPE_BF16, GGML_TYPE_F16, {1, 7, 1, 1}, {1, 1, 1, 1}},
        {GGML_TYPE_F32, GGML_TYPE_BF16, {3, 2, 3, 2}, {3, 7, 3, 2}},
        {GGML_TYPE_Q8_0, GGML_TYPE_F32, {64, 3, 1, 1}, {64, 7, 2, 1}},
        {GGML_TYPE_Q4_0, GGML_TYPE_BF16, {32, 5, 1, 2}, {32, 1, 3, 4}},
        {GGML_TYPE_Q4_0, GGML_TYPE_F16, {96, 33, 1, 1}, {96, 1, 1, 1}},
    };
    for (const Case & c : cases) {
        ggml_tensor * a = T(c.ta, c.a[0], c.a[1], c.a[2], c.a[3]);
        ggml_tensor * b = T(c.tb, c.b[0], c.b[1], c.b[2], c.b[3]);
        SCOPED_TRACE(describe(a) + " x " + describe(b));
        ggml_tensor * r = ggml_mul_mat(ctx(), a, b);
        expect_new(r, GGML_OP_MUL_MAT, GGML_TYPE_F32, {c.a[1], c.b[1], c.b[2], c.b[3]});
        if (!r) continue;
        EXPECT_EQ(r->src[0], a);
        EXPECT_EQ(r->src[1], b);
    }
    // Non-contiguous operands: a transposed, b permuted, b sliced; quantized a permuted by whole rows.
    expect_new(ggml_mul_mat(ctx(), Tt(GGML_TYPE_F32, 7, 3), Tp(GGML_TYPE_F32, 7, 5, 2)), GGML_OP_MUL_MAT,
               GGML_TYPE_F32, {3, 5, 2, 1});
    expect_new(ggml_mul_mat(ctx(), Ts(GGML_TYPE_F16, 7, 3), Tt(GGML_TYPE_F32, 7, 1)), GGML_OP_MUL_MAT,
               GGML_TYPE_F32, {3, 1, 1, 1});
    expect_new(ggml_mul_mat(ctx(), Tp(GGML_TYPE_Q8_0, 32, 3, 2), T(GGML_TYPE_F32, 32, 4, 2)), GGML_OP_MUL_MAT,
               GGML_TYPE_F32, {3, 4, 2, 1});
}

TEST_F(OpShapes, SoftMaxExt) {
    ggml_tensor * a = T(GGML_TYPE_F32, 7, 3, 4, 2);
    struct Case {
        ggml_type type;
        Ne mask;
    };
    const Case cases[] = {
        {GGML_TYPE_F16, {7, 3, 1, 1}}, {GGML_TYPE_F32, {7, 5, 1, 1}},  {GGML_TYPE_F16, {7, 3, 2, 1}},
        {GGML_TYPE_F32, {7, 3, 4, 2}}, {GGML_TYPE_F16, {7, 33, 1, 2}},
    };
    for (const Case & c : cases) {
        ggml_tensor * mask = T(c.type, c.mask[0], c.mask[1], c.mask[2], c.mask[3]);
        SCOPED_TRACE(describe(mask));
        ggml_tensor * r = ggml_soft_max_ext(ctx(), a, mask, 0.125f, 8.0f);
        expect_new(r, GGML_OP_SOFT_MAX, GGML_TYPE_F32, {7, 3, 4, 2});
        if (!r) continue;
        EXPECT_EQ(r->src[0], a);
        EXPECT_EQ(r->src[1], mask);
        EXPECT_EQ(pf(r, 0), 0.125f);
        EXPECT_EQ(pf(r, 1), 8.0f);
    }
    // Permuted input with a sliced mask.
    ggml_tensor * p = Tp(GGML_TYPE_F32, 7, 3, 2);
    ggml_tensor * m = Ts(GGML_TYPE_F16, 7, 3);
    ggml_tensor * r = ggml_soft_max_ext(ctx(), p, m, 1.0f, 0.0f);
    expect_new(r, GGML_OP_SOFT_MAX, GGML_TYPE_F32, {7, 3, 2, 1});
    if (r) {
        EXPECT_EQ(r->src[1], m);
    }
}

TEST_F(OpShapes, RopeExt) {
    struct Case {
        ggml_type type;
        Ne a;
        int n_dims;
        int mode;
        bool freq_factors;
    };
    const Case cases[] = {
        {GGML_TYPE_F32, {64, 4, 7, 2}, 32, GGML_ROPE_TYPE_NEOX, false},
        {GGML_TYPE_F16, {64, 4, 7, 1}, 64, GGML_ROPE_TYPE_NORMAL, true},
        {GGML_TYPE_F32, {2, 1, 1, 1}, 2, GGML_ROPE_TYPE_NORMAL, false},
        {GGML_TYPE_F32, {6, 3, 33, 1}, 4, GGML_ROPE_TYPE_NEOX, true},
    };
    for (const Case & c : cases) {
        ggml_tensor * a = T(c.type, c.a[0], c.a[1], c.a[2], c.a[3]);
        ggml_tensor * pos = T(GGML_TYPE_I32, c.a[2]);
        ggml_tensor * ff = c.freq_factors ? T(GGML_TYPE_F32, c.n_dims / 2) : nullptr;
        SCOPED_TRACE(describe(a) + " n_dims " + std::to_string(c.n_dims));
        ggml_tensor * r = ggml_rope_ext(ctx(), a, pos, ff, c.n_dims, c.mode, 4096, 10000.0f, 0.5f, 1.0f,
                                        1.25f, 32.0f, 2.0f);
        expect_new(r, GGML_OP_ROPE, c.type, c.a);
        if (!r) continue;
        EXPECT_EQ(r->src[0], a);
        EXPECT_EQ(r->src[1], pos);
        EXPECT_EQ(r->src[2], ff);
        EXPECT_EQ(pi(r, 0), 0);
        EXPECT_EQ(pi(r, 1), c.n_dims);
        EXPECT_EQ(pi(r, 2), c.mode);
        EXPECT_EQ(pi(r, 3), 0);
        EXPECT_EQ(pi(r, 4), 4096);
        EXPECT_EQ(pf(r, 5), 10000.0f);
        EXPECT_EQ(pf(r, 6), 0.5f);
        EXPECT_EQ(pf(r, 7), 1.0f);
        EXPECT_EQ(pf(r, 8), 1.25f);
        EXPECT_EQ(pf(r, 9), 32.0f);
        EXPECT_EQ(pf(r, 10), 2.0f);
    }
    // A permuted view input (heads and tokens swapped) and a longer frequency-factor tensor.
    ggml_tensor * p = Tp(GGML_TYPE_F32, 8, 3, 5);
    ggml_tensor * r = ggml_rope_ext(ctx(), p, T(GGML_TYPE_I32, 5), T(GGML_TYPE_F32, 7), 8,
                                    GGML_ROPE_TYPE_NEOX, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
    expect_new(r, GGML_OP_ROPE, GGML_TYPE_F32, {8, 3, 5, 1});
}

TEST_F(OpShapes, FlashAttnExt) {
    struct Case {
        ggml_type tkv;
        Ne q, k;
        int64_t dv;
        bool mask;
    };
    const Case cases[] = {
        {GGML_TYPE_F16, {64, 7, 8, 1}, {64, 33, 2, 1}, 48, true},
        {GGML_TYPE_F32, {64, 7, 8, 1}, {64, 33, 8, 1}, 64, false},
        {GGML_TYPE_F16, {3, 1, 1, 1}, {3, 1, 1, 1}, 1, true},
        {GGML_TYPE_F32, {16, 5, 6, 3}, {16, 9, 3, 3}, 7, true},
    };
    for (const Case & c : cases) {
        ggml_tensor * q = T(GGML_TYPE_F32, c.q[0], c.q[1], c.q[2], c.q[3]);
        ggml_tensor * k = T(c.tkv, c.k[0], c.k[1], c.k[2], c.k[3]);
        ggml_tensor * v = T(c.tkv, c.dv, c.k[1], c.k[2], c.k[3]);
        ggml_tensor * mask = c.mask ? T(GGML_TYPE_F16, c.k[1], c.q[1] + 2) : nullptr;
        SCOPED_TRACE(describe(q) + " " + describe(k) + " " + describe(v));
        ggml_tensor * r = ggml_flash_attn_ext(ctx(), q, k, v, mask, 0.125f, 8.0f, 30.0f);
        expect_new(r, GGML_OP_FLASH_ATTN_EXT, GGML_TYPE_F32, {c.dv, c.q[2], c.q[1], c.q[3]});
        if (!r) continue;
        EXPECT_EQ(r->src[0], q);
        EXPECT_EQ(r->src[1], k);
        EXPECT_EQ(r->src[2], v);
        EXPECT_EQ(r->src[3], mask);
        EXPECT_EQ(pf(r, 0), 0.125f);
        EXPECT_EQ(pf(r, 1), 8.0f);
        EXPECT_EQ(pf(r, 2), 30.0f);
    }
    // Mixed K/V types, F32 mask, permuted q (the usual [D, H, Q] -> [D, Q, H] view).
    ggml_tensor * q = Tp(GGML_TYPE_F32, 32, 5, 4);
    ggml_tensor * k = T(GGML_TYPE_F16, 32, 11, 2);
    ggml_tensor * v = T(GGML_TYPE_F32, 32, 11, 2);
    ggml_tensor * mask = T(GGML_TYPE_F32, 11, 5);
    expect_new(ggml_flash_attn_ext(ctx(), q, k, v, mask, 1.0f, 0.0f, 0.0f), GGML_OP_FLASH_ATTN_EXT,
               GGML_TYPE_F32, {32, 4, 5, 1});
}

// =============================================================================================
// Indexing

TEST_F(OpShapes, GetRows) {
    struct Case {
        ggml_type ta;
        Ne a, idx;
        ggml_type result;
    };
    const Case cases[] = {
        {GGML_TYPE_F32, {5, 10, 3, 2}, {4, 3, 2, 1}, GGML_TYPE_F32},
        {GGML_TYPE_F16, {8, 10, 1, 1}, {3, 1, 1, 1}, GGML_TYPE_F32},
        {GGML_TYPE_BF16, {1, 7, 1, 1}, {33, 1, 1, 1}, GGML_TYPE_F32},
        {GGML_TYPE_Q8_0, {64, 10, 1, 1}, {1, 1, 1, 1}, GGML_TYPE_F32},
        {GGML_TYPE_Q4_0, {32, 4, 2, 1}, {7, 2, 1, 1}, GGML_TYPE_F32},
        {GGML_TYPE_I32, {3, 9, 1, 1}, {7, 1, 1, 1}, GGML_TYPE_I32},
    };
    for (const Case & c : cases) {
        ggml_tensor * a = T(c.ta, c.a[0], c.a[1], c.a[2], c.a[3]);
        ggml_tensor * idx = T(GGML_TYPE_I32, c.idx[0], c.idx[1], c.idx[2], c.idx[3]);
        SCOPED_TRACE(describe(a) + " " + describe(idx));
        ggml_tensor * r = ggml_get_rows(ctx(), a, idx);
        expect_new(r, GGML_OP_GET_ROWS, c.result, {c.a[0], c.idx[0], c.a[2], c.a[3]});
        if (!r) continue;
        EXPECT_EQ(r->src[0], a);
        EXPECT_EQ(r->src[1], idx);
    }
    // A sliced table and a sliced index vector.
    ggml_tensor * r =
        ggml_get_rows(ctx(), Ts(GGML_TYPE_F32, 7, 10), ggml_view_1d(ctx(), T(GGML_TYPE_I32, 9), 3, 8));
    expect_new(r, GGML_OP_GET_ROWS, GGML_TYPE_F32, {7, 3, 1, 1});
}

TEST_F(OpShapes, SetRows) {
    struct Case {
        ggml_type ta;
        Ne a, b, idx;
    };
    const Case cases[] = {
        {GGML_TYPE_F16, {5, 10, 3, 2}, {5, 4, 3, 2}, {4, 1, 2, 1}},
        {GGML_TYPE_F32, {5, 10, 3, 2}, {5, 4, 3, 2}, {4, 3, 2, 1}},
        {GGML_TYPE_BF16, {1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}},
        {GGML_TYPE_Q8_0, {32, 6, 1, 1}, {32, 2, 1, 1}, {2, 1, 1, 1}},
        {GGML_TYPE_Q4_0, {64, 33, 2, 1}, {64, 7, 2, 1}, {7, 1, 1, 1}},
    };
    for (const Case & c : cases) {
        ggml_tensor * a = T(c.ta, c.a[0], c.a[1], c.a[2], c.a[3]);
        ggml_tensor * b = T(GGML_TYPE_F32, c.b[0], c.b[1], c.b[2], c.b[3]);
        ggml_tensor * idx = T(GGML_TYPE_I32, c.idx[0], c.idx[1], c.idx[2], c.idx[3]);
        SCOPED_TRACE(describe(a) + " " + describe(b) + " " + describe(idx));
        ggml_tensor * r = ggml_set_rows(ctx(), a, b, idx);
        expect_inplace(r, a, GGML_OP_SET_ROWS);
        if (!r) continue;
        EXPECT_EQ(r->src[0], a);
        EXPECT_EQ(r->src[1], b);
        EXPECT_EQ(r->src[2], idx);
    }
    // Into a view of a cache (rows of a bigger tensor).
    ggml_tensor * cache = T(GGML_TYPE_F16, 8, 20);
    ggml_tensor * window = ggml_view_2d(ctx(), cache, 8, 10, cache->nb[1], 5 * cache->nb[1]);
    ggml_tensor * r = ggml_set_rows(ctx(), window, Tt(GGML_TYPE_F32, 8, 3), T(GGML_TYPE_I32, 3));
    expect_inplace(r, window, GGML_OP_SET_ROWS);
}

// =============================================================================================
// Convolution

TEST_F(OpShapes, Im2Col2d) {
    struct Case {
        Ne k, x;
        int s0, s1, p0, p1, d0, d1;
        ggml_type tx, dst;
        Ne expected;
    };
    const Case cases[] = {
        // OW = (10 + 2 - 2 - 1) / 1 + 1 = 10, OH = (9 + 2 - 2 - 1) / 1 + 1 = 9
        {{3, 3, 4, 8}, {10, 9, 4, 2}, 1, 1, 1, 1, 1, 1, GGML_TYPE_F32, GGML_TYPE_F32, {36, 10, 9, 2}},
        // OW = (33 - 4 - 1) / 2 + 1 = 15, OH = (7 + 4 - 1 - 1) / 3 + 1 = 4
        {{3, 2, 4, 1}, {33, 7, 4, 1}, 2, 3, 0, 2, 2, 1, GGML_TYPE_F16, GGML_TYPE_F16, {24, 15, 4, 1}},
        // 1x1 kernel on a 1x1 image
        {{1, 1, 3, 5}, {1, 1, 3, 7}, 1, 1, 0, 0, 1, 1, GGML_TYPE_F32, GGML_TYPE_F16, {3, 1, 1, 7}},
        // kernel as large as the image: OW = OH = 1
        {{7, 3, 1, 1}, {7, 3, 1, 1}, 1, 1, 0, 0, 1, 1, GGML_TYPE_F16, GGML_TYPE_F32, {21, 1, 1, 1}},
    };
    for (const Case & c : cases) {
        ggml_tensor * k = T(GGML_TYPE_F16, c.k[0], c.k[1], c.k[2], c.k[3]);
        ggml_tensor * x = T(c.tx, c.x[0], c.x[1], c.x[2], c.x[3]);
        SCOPED_TRACE(describe(k) + " " + describe(x));
        ggml_tensor * r = ggml_im2col(ctx(), k, x, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1, true, c.dst);
        expect_new(r, GGML_OP_IM2COL, c.dst, c.expected);
        if (!r) continue;
        EXPECT_EQ(r->src[0], k);
        EXPECT_EQ(r->src[1], x);
        const int32_t params[7] = {c.s0, c.s1, c.p0, c.p1, c.d0, c.d1, 1};
        for (int i = 0; i < 7; ++i)
            EXPECT_EQ(pi(r, i), params[i]) << i;
    }
}

TEST_F(OpShapes, Im2Col1d) {
    // k [KW=3, IC=5, OC=2], x [IW=20, IC=5, N=3]; OW = (20 + 2 - 2 - 1) / 2 + 1 = 10
    ggml_tensor * k = T(GGML_TYPE_F16, 3, 5, 2);
    ggml_tensor * x = T(GGML_TYPE_F32, 20, 5, 3);
    ggml_tensor * r = ggml_im2col(ctx(), k, x, 2, 1, 1, 0, 1, 1, false, GGML_TYPE_F32);
    expect_new(r, GGML_OP_IM2COL, GGML_TYPE_F32, {15, 10, 3, 1});
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->src[0], k);
    EXPECT_EQ(r->src[1], x);
    const int32_t params[7] = {2, 1, 1, 0, 1, 1, 0};
    for (int i = 0; i < 7; ++i)
        EXPECT_EQ(pi(r, i), params[i]) << i;
    // Dilation: OW = (20 - 2*2 - 1) / 1 + 1 = 16
    expect_new(ggml_im2col(ctx(), k, x, 1, 1, 0, 0, 2, 1, false, GGML_TYPE_F16), GGML_OP_IM2COL,
               GGML_TYPE_F16, {15, 16, 3, 1});
}

TEST_F(OpShapes, Conv2dIsIm2ColThenMulMat) {
    struct Case {
        ggml_type tk;
        Ne k, x;
        int s0, s1, p0, p1, d0, d1;
        Ne expected;
    };
    const Case cases[] = {
        {GGML_TYPE_F16, {3, 3, 4, 8}, {10, 9, 4, 2}, 1, 1, 1, 1, 1, 1, {10, 9, 8, 2}},
        // OW = (7 - 1 - 1) / 2 + 1 = 3, OH = (5 + 2 - 1 - 1) / 1 + 1 = 6
        {GGML_TYPE_F32, {2, 2, 3, 5}, {7, 5, 3, 1}, 2, 1, 0, 1, 1, 1, {3, 6, 5, 1}},
        // dilated 3x3: OW = (33 + 4 - 4 - 1) / 1 + 1 = 33, OH = (7 + 4 - 4 - 1) / 1 + 1 = 7
        {GGML_TYPE_F16, {3, 3, 1, 1}, {33, 7, 1, 3}, 1, 1, 2, 2, 2, 2, {33, 7, 1, 3}},
    };
    for (const Case & c : cases) {
        ggml_tensor * k = T(c.tk, c.k[0], c.k[1], c.k[2], c.k[3]);
        ggml_tensor * x = T(GGML_TYPE_F32, c.x[0], c.x[1], c.x[2], c.x[3]);
        SCOPED_TRACE(describe(k) + " " + describe(x));
        ggml_tensor * r = ggml_conv_2d(ctx(), k, x, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1);
        ASSERT_NE(r, nullptr) << error_of(ctx());
        EXPECT_EQ(r->type, GGML_TYPE_F32);
        EXPECT_EQ(ne_of(r), c.expected);

        ggml_cgraph * g = ggml_new_graph(ctx());
        ASSERT_NE(g, nullptr);
        ggml_build_forward_expand(g, r);
        EXPECT_TRUE(ggml_graph_is_valid(g));
        bool has_im2col = false, has_mul_mat = false, im2col_first = false;
        for (int i = 0; i < ggml_graph_n_nodes(g); ++i) {
            const ggml_tensor * n = ggml_graph_node(g, i);
            if (n->op == GGML_OP_IM2COL) {
                has_im2col = true;
                EXPECT_EQ(n->src[1], x);
            }
            if (n->op == GGML_OP_MUL_MAT) {
                im2col_first = has_im2col;
                has_mul_mat = true;
            }
        }
        EXPECT_TRUE(has_im2col);
        EXPECT_TRUE(has_mul_mat);
        EXPECT_TRUE(im2col_first);
        EXPECT_EQ(ggml_graph_node(g, -1), r);
    }
}

// =============================================================================================
// Diffusion helpers

TEST_F(OpShapes, TimestepEmbedding) {
    for (int dim : {2, 7, 8, 320}) {
        for (int64_t n : {1, 5, 33}) {
            ggml_tensor * t = T(GGML_TYPE_F32, n);
            ggml_tensor * r = ggml_timestep_embedding(ctx(), t, dim, 10000);
            expect_new(r, GGML_OP_TIMESTEP_EMBEDDING, GGML_TYPE_F32, {dim, n, 1, 1});
            if (!r) continue;
            EXPECT_EQ(r->src[0], t);
            EXPECT_EQ(pi(r, 0), dim);
            EXPECT_EQ(pi(r, 1), 10000);
        }
    }
    ggml_tensor * r = ggml_timestep_embedding(ctx(), ggml_view_1d(ctx(), T(GGML_TYPE_F32, 8), 3, 4), 4, 1);
    expect_new(r, GGML_OP_TIMESTEP_EMBEDDING, GGML_TYPE_F32, {4, 3, 1, 1});
    if (r) {
        EXPECT_EQ(pi(r, 1), 1);
    }
}

// =============================================================================================
// Application CPU callbacks

TEST_F(OpShapes, Custom4d) {
    int user = 42;
    ggml_tensor * a = T(GGML_TYPE_F32, 7, 3);
    ggml_tensor * b = Tt(GGML_TYPE_I32, 2, 5);
    ggml_tensor * args[] = {a, b};
    ggml_tensor * r = ggml_custom_4d(ctx(), GGML_TYPE_F16, 3, 1, 7, 33, args, 2, dummy_callback, 4, &user);
    expect_new(r, GGML_OP_CUSTOM, GGML_TYPE_F16, {3, 1, 7, 33});
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->src[0], a);
    EXPECT_EQ(r->src[1], b);
    EXPECT_EQ(r->src[2], nullptr);
    EXPECT_EQ(uint32_t(pi(r, 0)), GGML_CUSTOM_MARKER_CPU_CALLBACK);
    EXPECT_EQ(ggml_get_custom_kind(r), GGML_CUSTOM_KIND_CPU_CALLBACK);
    ggml_custom_op_t fun = nullptr;
    int n_tasks = 0;
    void * ud = nullptr;
    EXPECT_TRUE(ggml_get_custom_callback(r, &fun, &n_tasks, &ud));
    EXPECT_EQ(fun, &dummy_callback);
    EXPECT_EQ(n_tasks, 4);
    EXPECT_EQ(ud, &user);

    // No arguments, all threads, a different callback.
    ggml_tensor * r0 = ggml_custom_4d(ctx(), GGML_TYPE_I32, 1, 1, 1, 1, nullptr, 0, other_callback,
                                      GGML_N_TASKS_MAX, nullptr);
    expect_new(r0, GGML_OP_CUSTOM, GGML_TYPE_I32, {1, 1, 1, 1});
    ASSERT_NE(r0, nullptr);
    for (int i = 0; i < GGML_MAX_SRC; ++i)
        EXPECT_EQ(r0->src[i], nullptr) << i;
    EXPECT_TRUE(ggml_get_custom_callback(r0, &fun, &n_tasks, &ud));
    EXPECT_EQ(fun, &other_callback);
    EXPECT_EQ(n_tasks, GGML_N_TASKS_MAX);
    EXPECT_EQ(ud, nullptr);

    // GGML_MAX_SRC arguments are accepted.
    std::vector<ggml_tensor *> many;
    for (int i = 0; i < GGML_MAX_SRC; ++i)
        many.push_back(T(GGML_TYPE_F32, i + 1));
    ggml_tensor * rm = ggml_custom_4d(ctx(), GGML_TYPE_F32, 2, 2, 1, 1, many.data(), GGML_MAX_SRC,
                                      dummy_callback, 1, nullptr);
    ASSERT_NE(rm, nullptr);
    for (int i = 0; i < GGML_MAX_SRC; ++i)
        EXPECT_EQ(rm->src[i], many[i]) << i;

    // Other nodes are not callbacks.
    ggml_tensor * add = ggml_add(ctx(), a, a);
    ASSERT_NE(add, nullptr);
    EXPECT_EQ(ggml_get_custom_kind(add), GGML_CUSTOM_KIND_NONE);
    EXPECT_FALSE(ggml_get_custom_callback(add, &fun, &n_tasks, &ud));
    EXPECT_EQ(ggml_get_custom_kind(a), GGML_CUSTOM_KIND_NONE);
}

// =============================================================================================
// Rejected inputs. Each case builds its operands (recorded in `ops`), calls one constructor, and
// expects NULL plus an error naming the operator (one of `names`) and every recorded operand as
// "<type> [ne0, ne1, ne2, ne3]".

using Operands = std::vector<ggml_tensor *>;

ggml_tensor * in(ggml_context * ctx, Operands & ops, ggml_type type, int64_t n0, int64_t n1 = 1,
                 int64_t n2 = 1, int64_t n3 = 1) {
    ggml_tensor * t = ggml_new_tensor_4d(ctx, type, n0, n1, n2, n3);
    EXPECT_NE(t, nullptr);
    ops.push_back(t);
    return t;
}

struct RejectCase {
    const char * label;
    std::vector<const char *> names;
    ggml_tensor * (*build)(ggml_context *, Operands &);
};

void PrintTo(const RejectCase & c, std::ostream * os) { *os << c.label; }

class Rejections : public ::testing::TestWithParam<RejectCase> {};

TEST_P(Rejections, ReturnsNullAndNamesOperatorAndShapes) {
    const RejectCase & c = GetParam();
    Ctx ctx = new_ctx();
    ASSERT_NE(ctx, nullptr);
    Operands ops;
    ggml_tensor * r = c.build(ctx.get(), ops);
    EXPECT_EQ(r, nullptr);
    const std::string e = error_of(ctx.get());
    ASSERT_FALSE(e.empty()) << "no error recorded";
    bool named = false;
    for (const char * n : c.names)
        named = named || e.find(n) != std::string::npos;
    EXPECT_TRUE(named) << "error does not name " << c.names[0] << ": " << e;
    for (const ggml_tensor * t : ops) {
        ASSERT_NE(t, nullptr);
        EXPECT_NE(e.find(describe(t)), std::string::npos)
            << "error does not show operand " << describe(t) << ": " << e;
    }
    // The failure is the first error: after a clear, a valid constructor succeeds with no error.
    ggml_clear_error(ctx.get());
    EXPECT_NE(ggml_sqr(ctx.get(), ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 3)), nullptr);
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
}

#define REJECT(label, names, body)                                                     \
    RejectCase {                                                                       \
        label, names, [](ggml_context * ctx, Operands & ops) -> ggml_tensor * { body } \
    }
#define NAMES(...) std::vector<const char *>({__VA_ARGS__})

namespace {

const ggml_type F32 = GGML_TYPE_F32, F16 = GGML_TYPE_F16, BF16 = GGML_TYPE_BF16, I8 = GGML_TYPE_I8,
                I16 = GGML_TYPE_I16, I32 = GGML_TYPE_I32, Q8 = GGML_TYPE_Q8_0, Q4 = GGML_TYPE_Q4_0;

std::vector<RejectCase> reject_cases() {
    return {
        // --- element-wise arithmetic
        REJECT("add_not_tileable", NAMES("ggml_add"),
               return ggml_add(ctx, in(ctx, ops, F32, 4, 3), in(ctx, ops, F32, 3, 1));),
            REJECT("sub_not_tileable", NAMES("ggml_sub"),
                   return ggml_sub(ctx, in(ctx, ops, F32, 7, 3, 2), in(ctx, ops, F32, 7, 2, 2));),
            REJECT("mul_b_larger", NAMES("ggml_mul"),
                   return ggml_mul(ctx, in(ctx, ops, F32, 7, 1), in(ctx, ops, F32, 7, 3));),
            REJECT("div_a_int", NAMES("ggml_div"),
                   return ggml_div(ctx, in(ctx, ops, I32, 4), in(ctx, ops, I32, 4));),
            REJECT("add_b_other_float", NAMES("ggml_add"),
                   return ggml_add(ctx, in(ctx, ops, F16, 4), in(ctx, ops, BF16, 4));),
            REJECT("add_b_int", NAMES("ggml_add"),
                   return ggml_add(ctx, in(ctx, ops, F32, 4), in(ctx, ops, I32, 4));),
            REJECT("add_a_quantized", NAMES("ggml_add"),
                   return ggml_add(ctx, in(ctx, ops, Q8, 32), in(ctx, ops, F32, 32));),
            REJECT("add_inplace_not_tileable", NAMES("ggml_add"),
                   return ggml_add_inplace(ctx, in(ctx, ops, F32, 4, 3), in(ctx, ops, F32, 3));),
            REJECT("sub_inplace_b_type", NAMES("ggml_sub"),
                   return ggml_sub_inplace(ctx, in(ctx, ops, BF16, 4, 3), in(ctx, ops, F16, 4, 3));),
            REJECT("mul_inplace_a_int", NAMES("ggml_mul"),
                   return ggml_mul_inplace(ctx, in(ctx, ops, I8, 4), in(ctx, ops, F32, 4));),
            REJECT("div_inplace_not_tileable", NAMES("ggml_div"),
                   return ggml_div_inplace(ctx, in(ctx, ops, F32, 6, 5), in(ctx, ops, F32, 4, 5));),
            REJECT("scale_int", NAMES("ggml_scale"), return ggml_scale(ctx, in(ctx, ops, I32, 5), 2.0f);),
            REJECT("scale_inplace_int", NAMES("ggml_scale"),
                   return ggml_scale_inplace(ctx, in(ctx, ops, I8, 5), 2.0f);),
            REJECT("scale_bias_int", NAMES("ggml_scale"),
                   return ggml_scale_bias(ctx, in(ctx, ops, I16, 5), 2.0f, 1.0f);),
            REJECT("sqr_int", NAMES("ggml_sqr"), return ggml_sqr(ctx, in(ctx, ops, I32, 5, 3));),
            REJECT("sqrt_quantized", NAMES("ggml_sqrt"), return ggml_sqrt(ctx, in(ctx, ops, Q4, 32));),
            REJECT("clamp_int", NAMES("ggml_clamp"),
                   return ggml_clamp(ctx, in(ctx, ops, I32, 5), 0.0f, 1.0f);),
            REJECT("clamp_min_above_max", NAMES("ggml_clamp"),
                   return ggml_clamp(ctx, in(ctx, ops, F32, 5, 3), 2.0f, 1.0f);),
            REJECT("clamp_inplace_min_above_max", NAMES("ggml_clamp"),
                   return ggml_clamp_inplace(ctx, in(ctx, ops, F16, 5), 0.5f, -0.5f);),
            // --- activations
            REJECT("unary_int", NAMES("ggml_unary", "ggml_relu"),
                   return ggml_unary(ctx, in(ctx, ops, I32, 5), GGML_UNARY_OP_RELU);),
            REJECT("unary_inplace_quantized", NAMES("ggml_unary", "ggml_gelu"),
                   return ggml_unary_inplace(ctx, in(ctx, ops, Q8, 32), GGML_UNARY_OP_GELU);),
            REJECT("relu_int", NAMES("ggml_unary", "ggml_relu"),
                   return ggml_relu(ctx, in(ctx, ops, I32, 5));),
            REJECT("silu_int", NAMES("ggml_unary", "ggml_silu"), return ggml_silu(ctx, in(ctx, ops, I8, 5));),
            REJECT("gelu_int", NAMES("ggml_unary", "ggml_gelu"),
                   return ggml_gelu(ctx, in(ctx, ops, I16, 5));),
            REJECT("gelu_quick_int", NAMES("ggml_unary", "ggml_gelu_quick"),
                   return ggml_gelu_quick(ctx, in(ctx, ops, I32, 5));),
            REJECT("sigmoid_quantized", NAMES("ggml_unary", "ggml_sigmoid"),
                   return ggml_sigmoid(ctx, in(ctx, ops, Q4, 32));),
            REJECT("tanh_int", NAMES("ggml_unary", "ggml_tanh"),
                   return ggml_tanh(ctx, in(ctx, ops, I32, 5));),
            REJECT("glu_odd", NAMES("ggml_glu", "ggml_swiglu"),
                   return ggml_glu(ctx, in(ctx, ops, F32, 7, 3), GGML_GLU_OP_SWIGLU, false);),
            REJECT("swiglu_odd", NAMES("ggml_glu", "ggml_swiglu"),
                   return ggml_swiglu(ctx, in(ctx, ops, F32, 5));),
            REJECT("swiglu_swapped_odd", NAMES("ggml_glu", "ggml_swiglu"),
                   return ggml_swiglu_swapped(ctx, in(ctx, ops, F16, 33));),
            REJECT("geglu_int", NAMES("ggml_glu", "ggml_geglu"),
                   return ggml_geglu(ctx, in(ctx, ops, I32, 8));),
            REJECT("geglu_swapped_odd", NAMES("ggml_glu", "ggml_geglu"),
                   return ggml_geglu_swapped(ctx, in(ctx, ops, F32, 1));),
            REJECT("glu_split_shape", NAMES("ggml_glu", "ggml_swiglu"),
                   return ggml_glu_split(ctx, in(ctx, ops, F32, 8, 3), in(ctx, ops, F32, 8, 2),
                                         GGML_GLU_OP_SWIGLU);),
            REJECT(
                "glu_split_type", NAMES("ggml_glu", "ggml_geglu"),
                return ggml_glu_split(ctx, in(ctx, ops, F32, 8), in(ctx, ops, F16, 8), GGML_GLU_OP_GEGLU);),
            REJECT("swiglu_split_int", NAMES("ggml_glu", "ggml_swiglu"),
                   return ggml_swiglu_split(ctx, in(ctx, ops, I32, 8), in(ctx, ops, I32, 8));),
            REJECT("geglu_split_shape", NAMES("ggml_glu", "ggml_geglu"),
                   return ggml_geglu_split(ctx, in(ctx, ops, F32, 7), in(ctx, ops, F32, 14));),
            // --- reductions
            REJECT("sum_int", NAMES("ggml_sum"), return ggml_sum(ctx, in(ctx, ops, I32, 5));),
            REJECT("sum_rows_int", NAMES("ggml_sum_rows"),
                   return ggml_sum_rows(ctx, in(ctx, ops, I32, 5, 3));),
            REJECT("mean_quantized", NAMES("ggml_mean"), return ggml_mean(ctx, in(ctx, ops, Q8, 32, 3));),
            REJECT("argmax_3d", NAMES("ggml_argmax"), return ggml_argmax(ctx, in(ctx, ops, F32, 5, 3, 2));),
            REJECT("argmax_f16", NAMES("ggml_argmax"), return ggml_argmax(ctx, in(ctx, ops, F16, 5, 3));),
            // --- shape ops
            REJECT("repeat_not_multiple", NAMES("ggml_repeat"),
                   return ggml_repeat(ctx, in(ctx, ops, F32, 3, 2), in(ctx, ops, F32, 4, 2));),
            REJECT("repeat_smaller_target", NAMES("ggml_repeat"),
                   return ggml_repeat(ctx, in(ctx, ops, F32, 3, 2), in(ctx, ops, F32, 3, 1));),
            REJECT("repeat_type", NAMES("ggml_repeat"),
                   return ggml_repeat(ctx, in(ctx, ops, I16, 3), in(ctx, ops, F32, 6));),
            REJECT("concat_other_dims", NAMES("ggml_concat"),
                   return ggml_concat(ctx, in(ctx, ops, F32, 3, 4, 2), in(ctx, ops, F32, 3, 5, 3), 1);),
            REJECT("concat_dim_4", NAMES("ggml_concat"),
                   return ggml_concat(ctx, in(ctx, ops, F32, 3, 4), in(ctx, ops, F32, 3, 4), 4);),
            REJECT("concat_dim_negative", NAMES("ggml_concat"),
                   return ggml_concat(ctx, in(ctx, ops, F32, 3, 4), in(ctx, ops, F32, 3, 4), -1);),
            REJECT("concat_types_differ", NAMES("ggml_concat"),
                   return ggml_concat(ctx, in(ctx, ops, F32, 3, 4), in(ctx, ops, F16, 3, 4), 0);),
            REJECT("concat_i8", NAMES("ggml_concat"),
                   return ggml_concat(ctx, in(ctx, ops, I8, 3, 4), in(ctx, ops, I8, 3, 4), 0);),
            REJECT("pad_ext_negative", NAMES("ggml_pad"),
                   return ggml_pad_ext(ctx, in(ctx, ops, F32, 5, 3), -1, 0, 0, 0, 0, 0, 0, 0);),
            REJECT("pad_ext_negative_rp3", NAMES("ggml_pad"),
                   return ggml_pad_ext(ctx, in(ctx, ops, F32, 5, 3), 0, 0, 0, 0, 0, 0, 0, -2);),
            REJECT("pad_negative", NAMES("ggml_pad"),
                   return ggml_pad(ctx, in(ctx, ops, F32, 5, 3), 0, -1, 0, 0);),
            REJECT("pad_int", NAMES("ggml_pad"), return ggml_pad(ctx, in(ctx, ops, I32, 5), 1, 0, 0, 0);),
            REJECT(
                "upscale_ext_zero", NAMES("ggml_upscale"),
                return ggml_upscale_ext(ctx, in(ctx, ops, F32, 5, 3), 0, 3, 1, 1, GGML_SCALE_MODE_NEAREST);),
            REJECT(
                "upscale_ext_negative", NAMES("ggml_upscale"),
                return ggml_upscale_ext(ctx, in(ctx, ops, F32, 5, 3), 5, 3, 1, -1, GGML_SCALE_MODE_NEAREST);),
            REJECT("upscale_factor_zero", NAMES("ggml_upscale"),
                   return ggml_upscale(ctx, in(ctx, ops, F32, 5, 3), 0, GGML_SCALE_MODE_NEAREST);),
            REJECT("upscale_i32", NAMES("ggml_upscale"),
                   return ggml_upscale(ctx, in(ctx, ops, I32, 5, 3), 2, GGML_SCALE_MODE_NEAREST);),
            // --- normalisation
            REJECT("norm_negative_eps", NAMES("ggml_norm"),
                   return ggml_norm(ctx, in(ctx, ops, F32, 5, 3), -1e-5f);),
            REJECT("norm_f16", NAMES("ggml_norm"), return ggml_norm(ctx, in(ctx, ops, F16, 5, 3), 1e-5f);),
            REJECT("norm_inplace_negative_eps", NAMES("ggml_norm"),
                   return ggml_norm_inplace(ctx, in(ctx, ops, F32, 5), -1.0f);),
            REJECT("rms_norm_negative_eps", NAMES("ggml_rms_norm"),
                   return ggml_rms_norm(ctx, in(ctx, ops, F32, 5, 3), -1e-6f);),
            REJECT("rms_norm_bf16", NAMES("ggml_rms_norm"),
                   return ggml_rms_norm(ctx, in(ctx, ops, BF16, 5), 1e-6f);),
            REJECT("rms_norm_inplace_f16", NAMES("ggml_rms_norm"),
                   return ggml_rms_norm_inplace(ctx, in(ctx, ops, F16, 5), 1e-6f);),
            REJECT("l2_norm_negative_eps", NAMES("ggml_l2_norm"),
                   return ggml_l2_norm(ctx, in(ctx, ops, F32, 5, 3), -1.0f);),
            REJECT("l2_norm_f16", NAMES("ggml_l2_norm"),
                   return ggml_l2_norm(ctx, in(ctx, ops, F16, 5), 1e-6f);),
            REJECT("group_norm_zero_groups", NAMES("ggml_group_norm"),
                   return ggml_group_norm(ctx, in(ctx, ops, F32, 5, 4, 6, 2), 0, 1e-6f);),
            REJECT("group_norm_more_groups_than_channels", NAMES("ggml_group_norm"),
                   return ggml_group_norm(ctx, in(ctx, ops, F32, 5, 4, 6, 2), 7, 1e-6f);),
            REJECT("group_norm_f16", NAMES("ggml_group_norm"),
                   return ggml_group_norm(ctx, in(ctx, ops, F16, 5, 4, 6, 2), 2, 1e-6f);),
            // --- matrix products
            REJECT("mul_mat_k_mismatch", NAMES("ggml_mul_mat"),
                   return ggml_mul_mat(ctx, in(ctx, ops, F32, 7, 3), in(ctx, ops, F32, 8, 5));),
            REJECT("mul_mat_dim2_not_multiple", NAMES("ggml_mul_mat"),
                   return ggml_mul_mat(ctx, in(ctx, ops, F32, 7, 3, 4), in(ctx, ops, F32, 7, 5, 6));),
            REJECT("mul_mat_dim3_not_multiple", NAMES("ggml_mul_mat"),
                   return ggml_mul_mat(ctx, in(ctx, ops, F32, 7, 3, 1, 2), in(ctx, ops, F32, 7, 5, 1, 3));),
            REJECT("mul_mat_b_quantized", NAMES("ggml_mul_mat"),
                   return ggml_mul_mat(ctx, in(ctx, ops, F32, 32, 3), in(ctx, ops, Q8, 32, 5));),
            REJECT("mul_mat_a_int", NAMES("ggml_mul_mat"),
                   return ggml_mul_mat(ctx, in(ctx, ops, I32, 7, 3), in(ctx, ops, F32, 7, 5));),
            REJECT("mul_mat_b_int", NAMES("ggml_mul_mat"),
                   return ggml_mul_mat(ctx, in(ctx, ops, F32, 7, 3), in(ctx, ops, I8, 7, 5));),
            REJECT("soft_max_f16", NAMES("ggml_soft_max"),
                   return ggml_soft_max(ctx, in(ctx, ops, F16, 7, 3));),
            REJECT("soft_max_inplace_bf16", NAMES("ggml_soft_max"),
                   return ggml_soft_max_inplace(ctx, in(ctx, ops, BF16, 7, 3));),
            REJECT(
                "soft_max_ext_mask_ne0", NAMES("ggml_soft_max"),
                return ggml_soft_max_ext(ctx, in(ctx, ops, F32, 7, 3), in(ctx, ops, F16, 6, 3), 1.0f, 0.0f);),
            REJECT(
                "soft_max_ext_mask_rows", NAMES("ggml_soft_max"),
                return ggml_soft_max_ext(ctx, in(ctx, ops, F32, 7, 5), in(ctx, ops, F16, 7, 3), 1.0f, 0.0f);),
            REJECT(
                "soft_max_ext_mask_type", NAMES("ggml_soft_max"),
                return ggml_soft_max_ext(ctx, in(ctx, ops, F32, 7, 3), in(ctx, ops, I32, 7, 3), 1.0f, 0.0f);),
            REJECT("soft_max_ext_mask_dim2", NAMES("ggml_soft_max"),
                   return ggml_soft_max_ext(ctx, in(ctx, ops, F32, 7, 3, 4), in(ctx, ops, F32, 7, 3, 3), 1.0f,
                                            0.0f);),
            REJECT("soft_max_ext_mask_dim3", NAMES("ggml_soft_max"),
                   return ggml_soft_max_ext(ctx, in(ctx, ops, F32, 7, 3, 1, 2), in(ctx, ops, F16, 7, 3, 1, 4),
                                            1.0f, 0.0f);),
            REJECT("soft_max_ext_a_f16", NAMES("ggml_soft_max"),
                   return ggml_soft_max_ext(ctx, in(ctx, ops, F16, 7, 3), nullptr, 1.0f, 0.0f);),
            // --- rope
            REJECT("rope_odd_n_dims", NAMES("ggml_rope"),
                   return ggml_rope_ext(ctx, in(ctx, ops, F32, 64, 4, 7), in(ctx, ops, I32, 7), nullptr, 31,
                                        0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);),
            REJECT("rope_n_dims_above_head_dim", NAMES("ggml_rope"),
                   return ggml_rope_ext(ctx, in(ctx, ops, F32, 64, 4, 7), in(ctx, ops, I32, 7), nullptr, 66,
                                        0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);),
            REJECT("rope_pos_f32", NAMES("ggml_rope"),
                   return ggml_rope_ext(ctx, in(ctx, ops, F32, 64, 4, 7), in(ctx, ops, F32, 7), nullptr, 64,
                                        0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);),
            REJECT("rope_pos_length", NAMES("ggml_rope"),
                   return ggml_rope_ext(ctx, in(ctx, ops, F32, 64, 4, 7), in(ctx, ops, I32, 6), nullptr, 64,
                                        0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);),
            REJECT("rope_freq_factors_short", NAMES("ggml_rope"),
                   return ggml_rope_ext(ctx, in(ctx, ops, F32, 64, 4, 7), in(ctx, ops, I32, 7),
                                        in(ctx, ops, F32, 15), 32, 2, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f,
                                        1.0f);),
            REJECT("rope_freq_factors_f16", NAMES("ggml_rope"),
                   return ggml_rope_ext(ctx, in(ctx, ops, F32, 64, 4, 7), in(ctx, ops, I32, 7),
                                        in(ctx, ops, F16, 16), 32, 2, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f,
                                        1.0f);),
            REJECT("rope_a_int", NAMES("ggml_rope"),
                   return ggml_rope_ext(ctx, in(ctx, ops, I32, 64, 4, 7), in(ctx, ops, I32, 7), nullptr, 64,
                                        0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);),
            REJECT("rope_a_bf16", NAMES("ggml_rope"),
                   return ggml_rope_ext(ctx, in(ctx, ops, BF16, 64, 4, 7), in(ctx, ops, I32, 7), nullptr, 64,
                                        0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);),
            REJECT("rope_bad_mode", NAMES("ggml_rope"),
                   return ggml_rope_ext(ctx, in(ctx, ops, F32, 64, 4, 7), in(ctx, ops, I32, 7), nullptr, 64,
                                        1, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);),
            // --- flash attention
            REJECT("flash_attn_q_f16", NAMES("ggml_flash_attn_ext"),
                   return ggml_flash_attn_ext(ctx, in(ctx, ops, F16, 64, 7, 8), in(ctx, ops, F16, 64, 33, 2),
                                              in(ctx, ops, F16, 48, 33, 2), nullptr, 1.0f, 0.0f, 0.0f);),
            REJECT("flash_attn_k_bf16", NAMES("ggml_flash_attn_ext"),
                   return ggml_flash_attn_ext(ctx, in(ctx, ops, F32, 64, 7, 8), in(ctx, ops, BF16, 64, 33, 2),
                                              in(ctx, ops, F16, 48, 33, 2), nullptr, 1.0f, 0.0f, 0.0f);),
            REJECT("flash_attn_v_quantized", NAMES("ggml_flash_attn_ext"),
                   return ggml_flash_attn_ext(ctx, in(ctx, ops, F32, 64, 7, 8), in(ctx, ops, F16, 64, 33, 2),
                                              in(ctx, ops, Q8, 64, 33, 2), nullptr, 1.0f, 0.0f, 0.0f);),
            REJECT("flash_attn_heads_not_multiple", NAMES("ggml_flash_attn_ext"),
                   return ggml_flash_attn_ext(ctx, in(ctx, ops, F32, 64, 7, 8), in(ctx, ops, F16, 64, 33, 3),
                                              in(ctx, ops, F16, 48, 33, 3), nullptr, 1.0f, 0.0f, 0.0f);),
            REJECT("flash_attn_head_dim", NAMES("ggml_flash_attn_ext"),
                   return ggml_flash_attn_ext(ctx, in(ctx, ops, F32, 64, 7, 8), in(ctx, ops, F16, 32, 33, 2),
                                              in(ctx, ops, F16, 48, 33, 2), nullptr, 1.0f, 0.0f, 0.0f);),
            REJECT("flash_attn_kv_length", NAMES("ggml_flash_attn_ext"),
                   return ggml_flash_attn_ext(ctx, in(ctx, ops, F32, 64, 7, 8), in(ctx, ops, F16, 64, 33, 2),
                                              in(ctx, ops, F16, 48, 32, 2), nullptr, 1.0f, 0.0f, 0.0f);),
            REJECT("flash_attn_kv_heads_differ", NAMES("ggml_flash_attn_ext"),
                   return ggml_flash_attn_ext(ctx, in(ctx, ops, F32, 64, 7, 8), in(ctx, ops, F16, 64, 33, 2),
                                              in(ctx, ops, F16, 48, 33, 4), nullptr, 1.0f, 0.0f, 0.0f);),
            REJECT("flash_attn_batch", NAMES("ggml_flash_attn_ext"),
                   return ggml_flash_attn_ext(ctx, in(ctx, ops, F32, 64, 7, 8, 2),
                                              in(ctx, ops, F16, 64, 33, 2, 3),
                                              in(ctx, ops, F16, 48, 33, 2, 3), nullptr, 1.0f, 0.0f, 0.0f);),
            REJECT("flash_attn_mask_ne0", NAMES("ggml_flash_attn_ext"),
                   return ggml_flash_attn_ext(ctx, in(ctx, ops, F32, 64, 7, 8), in(ctx, ops, F16, 64, 33, 2),
                                              in(ctx, ops, F16, 48, 33, 2), in(ctx, ops, F16, 32, 7), 1.0f,
                                              0.0f, 0.0f);),
            REJECT("flash_attn_mask_rows", NAMES("ggml_flash_attn_ext"),
                   return ggml_flash_attn_ext(ctx, in(ctx, ops, F32, 64, 7, 8), in(ctx, ops, F16, 64, 33, 2),
                                              in(ctx, ops, F16, 48, 33, 2), in(ctx, ops, F16, 33, 6), 1.0f,
                                              0.0f, 0.0f);),
            REJECT("flash_attn_mask_int", NAMES("ggml_flash_attn_ext"),
                   return ggml_flash_attn_ext(ctx, in(ctx, ops, F32, 64, 7, 8), in(ctx, ops, F16, 64, 33, 2),
                                              in(ctx, ops, F16, 48, 33, 2), in(ctx, ops, I32, 33, 7), 1.0f,
                                              0.0f, 0.0f);),
            REJECT("flash_attn_mask_dim2", NAMES("ggml_flash_attn_ext"),
                   return ggml_flash_attn_ext(ctx, in(ctx, ops, F32, 64, 7, 8), in(ctx, ops, F16, 64, 33, 2),
                                              in(ctx, ops, F16, 48, 33, 2), in(ctx, ops, F16, 33, 7, 3), 1.0f,
                                              0.0f, 0.0f);),
            // --- indexing
            REJECT("get_rows_idx_f32", NAMES("ggml_get_rows"),
                   return ggml_get_rows(ctx, in(ctx, ops, F32, 5, 10), in(ctx, ops, F32, 4));),
            REJECT("get_rows_idx_dim1", NAMES("ggml_get_rows"),
                   return ggml_get_rows(ctx, in(ctx, ops, F32, 5, 10, 3), in(ctx, ops, I32, 4, 2));),
            REJECT("get_rows_idx_dim2", NAMES("ggml_get_rows"),
                   return ggml_get_rows(ctx, in(ctx, ops, F32, 5, 10, 3, 2), in(ctx, ops, I32, 4, 3, 3));),
            REJECT("get_rows_a_i8", NAMES("ggml_get_rows"),
                   return ggml_get_rows(ctx, in(ctx, ops, I8, 5, 10), in(ctx, ops, I32, 4));),
            REJECT("set_rows_b_f16", NAMES("ggml_set_rows"),
                   return ggml_set_rows(ctx, in(ctx, ops, F16, 5, 10), in(ctx, ops, F16, 5, 4),
                                        in(ctx, ops, I32, 4));),
            REJECT("set_rows_idx_f32", NAMES("ggml_set_rows"),
                   return ggml_set_rows(ctx, in(ctx, ops, F16, 5, 10), in(ctx, ops, F32, 5, 4),
                                        in(ctx, ops, F32, 4));),
            REJECT("set_rows_ne0", NAMES("ggml_set_rows"),
                   return ggml_set_rows(ctx, in(ctx, ops, F16, 5, 10), in(ctx, ops, F32, 6, 4),
                                        in(ctx, ops, I32, 4));),
            REJECT("set_rows_idx_length", NAMES("ggml_set_rows"),
                   return ggml_set_rows(ctx, in(ctx, ops, F16, 5, 10), in(ctx, ops, F32, 5, 4),
                                        in(ctx, ops, I32, 3));),
            REJECT("set_rows_idx_broadcast", NAMES("ggml_set_rows"),
                   return ggml_set_rows(ctx, in(ctx, ops, F16, 5, 10, 3), in(ctx, ops, F32, 5, 4, 3),
                                        in(ctx, ops, I32, 4, 2));),
            REJECT("set_rows_dims_differ", NAMES("ggml_set_rows"),
                   return ggml_set_rows(ctx, in(ctx, ops, F16, 5, 10, 3), in(ctx, ops, F32, 5, 4, 2),
                                        in(ctx, ops, I32, 4));),
            REJECT("set_rows_a_int", NAMES("ggml_set_rows"),
                   return ggml_set_rows(ctx, in(ctx, ops, I32, 5, 10), in(ctx, ops, F32, 5, 4),
                                        in(ctx, ops, I32, 4));),
            // --- convolution
            REJECT("im2col_x_int", NAMES("ggml_im2col"),
                   return ggml_im2col(ctx, in(ctx, ops, F16, 3, 3, 4, 8), in(ctx, ops, I32, 10, 9, 4, 2), 1,
                                      1, 1, 1, 1, 1, true, F32);),
            REJECT("im2col_dst_bf16", NAMES("ggml_im2col"),
                   return ggml_im2col(ctx, in(ctx, ops, F16, 3, 3, 4, 8), in(ctx, ops, F32, 10, 9, 4, 2), 1,
                                      1, 1, 1, 1, 1, true, BF16);),
            REJECT("im2col_stride_zero", NAMES("ggml_im2col"),
                   return ggml_im2col(ctx, in(ctx, ops, F16, 3, 3, 4, 8), in(ctx, ops, F32, 10, 9, 4, 2), 0,
                                      1, 1, 1, 1, 1, true, F32);),
            REJECT("im2col_dilation_zero", NAMES("ggml_im2col"),
                   return ggml_im2col(ctx, in(ctx, ops, F16, 3, 3, 4, 8), in(ctx, ops, F32, 10, 9, 4, 2), 1,
                                      1, 1, 1, 1, 0, true, F32);),
            REJECT("im2col_negative_padding", NAMES("ggml_im2col"),
                   return ggml_im2col(ctx, in(ctx, ops, F16, 3, 3, 4, 8), in(ctx, ops, F32, 10, 9, 4, 2), 1,
                                      1, -1, 1, 1, 1, true, F32);),
            REJECT("im2col_kernel_larger_than_input", NAMES("ggml_im2col"),
                   return ggml_im2col(ctx, in(ctx, ops, F16, 5, 5, 4, 8), in(ctx, ops, F32, 3, 3, 4, 1), 1, 1,
                                      0, 0, 1, 1, true, F32);),
            REJECT("im2col_channels", NAMES("ggml_im2col"),
                   return ggml_im2col(ctx, in(ctx, ops, F16, 3, 3, 4, 8), in(ctx, ops, F32, 10, 9, 3, 2), 1,
                                      1, 1, 1, 1, 1, true, F32);),
            REJECT("im2col_1d_channels", NAMES("ggml_im2col"),
                   return ggml_im2col(ctx, in(ctx, ops, F16, 3, 5, 2), in(ctx, ops, F32, 20, 4, 3), 1, 1, 0,
                                      0, 1, 1, false, F32);),
            REJECT("im2col_1d_too_small", NAMES("ggml_im2col"),
                   return ggml_im2col(ctx, in(ctx, ops, F16, 7, 5, 2), in(ctx, ops, F32, 3, 5, 3), 1, 1, 1, 0,
                                      1, 1, false, F32);),
            REJECT("conv_2d_kernel_int", NAMES("ggml_conv_2d", "ggml_im2col"),
                   return ggml_conv_2d(ctx, in(ctx, ops, I32, 3, 3, 4, 8), in(ctx, ops, F32, 10, 9, 4, 2), 1,
                                       1, 1, 1, 1, 1);),
            REJECT("conv_2d_input_f16", NAMES("ggml_conv_2d", "ggml_im2col"),
                   return ggml_conv_2d(ctx, in(ctx, ops, F16, 3, 3, 4, 8), in(ctx, ops, F16, 10, 9, 4, 2), 1,
                                       1, 1, 1, 1, 1);),
            REJECT("conv_2d_channels", NAMES("ggml_conv_2d", "ggml_im2col"),
                   return ggml_conv_2d(ctx, in(ctx, ops, F16, 3, 3, 4, 8), in(ctx, ops, F32, 10, 9, 5, 2), 1,
                                       1, 1, 1, 1, 1);),
            REJECT("conv_2d_stride_zero", NAMES("ggml_conv_2d", "ggml_im2col"),
                   return ggml_conv_2d(ctx, in(ctx, ops, F16, 3, 3, 4, 8), in(ctx, ops, F32, 10, 9, 4, 2), 1,
                                       0, 1, 1, 1, 1);),
            // --- diffusion helpers and callbacks
            REJECT("timestep_dim_1", NAMES("ggml_timestep_embedding"),
                   return ggml_timestep_embedding(ctx, in(ctx, ops, F32, 5), 1, 10000);),
            REJECT("timestep_max_period_0", NAMES("ggml_timestep_embedding"),
                   return ggml_timestep_embedding(ctx, in(ctx, ops, F32, 5), 8, 0);),
            REJECT("timestep_f16", NAMES("ggml_timestep_embedding"),
                   return ggml_timestep_embedding(ctx, in(ctx, ops, F16, 5), 8, 10000);),
            REJECT("timestep_2d", NAMES("ggml_timestep_embedding"),
                   return ggml_timestep_embedding(ctx, in(ctx, ops, F32, 5, 2), 8, 10000);),
            REJECT("custom_too_many_args", NAMES("ggml_custom"), ggml_tensor * args[GGML_MAX_SRC + 1];
                   for (ggml_tensor *& t
                        : args) t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
                   return ggml_custom_4d(ctx, GGML_TYPE_F32, 3, 1, 1, 1, args, GGML_MAX_SRC + 1,
                                         dummy_callback, 1, nullptr);),
    };
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Ops, Rejections, ::testing::ValuesIn(reject_cases()),
                         [](const ::testing::TestParamInfo<RejectCase> & i) { return i.param.label; });

#undef REJECT
#undef NAMES
