// ggml_build_backward_expand and the gradient API (core/backward.cpp, core/graph.cpp): graphs with
// gradient slots, parameters and losses, accumulators and ggml_graph_reset, refusals, and a
// gradient check of every op with a backward rule: the analytic gradients of the backward graph,
// computed on the CPU backend, against finite differences of the forward graph.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include <ggml-cpp.h>
#include <ggml-graph.h>

#include "support/test_util.h"

namespace {

using ggx::test::contains;
using ggx::test::cpu_backend;
using ggx::test::read_f32;
using ggx::test::Rng;
using ggx::test::write_f32;

ggml_context_ptr host_context(size_t bytes = 1 << 20) {
    return ggml_context_ptr(ggml_init({bytes, nullptr, false}));
}

std::string error_of(ggml_context * ctx) { return ggml_get_error(ctx) ? ggml_get_error(ctx) : ""; }

// ---------------------------------------------------------------------------------------------
// The gradient API

TEST(BackwardApi, GraphsWithGradientsCostTheirSlots) {
    EXPECT_GT(ggml_graph_overhead_custom(16, true), ggml_graph_overhead_custom(16, false));
    ggml_context_ptr ctx = host_context();
    const size_t before = ggml_used_mem(ctx.get());
    ggml_cgraph * graph = ggml_new_graph_custom(ctx.get(), 16, true);
    ASSERT_NE(graph, nullptr);
    EXPECT_EQ(ggml_used_mem(ctx.get()) - before, ggml_graph_overhead_custom(16, true));
}

TEST(BackwardApi, ParamsAndLossesAreChecked) {
    ggml_context_ptr ctx = host_context();
    ggml_tensor * x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 3, 2);
    ggml_set_param(ggml_sqr(ctx.get(), x));
    EXPECT_TRUE(contains(error_of(ctx.get()),
                         "ggml_set_param: a trainable parameter must be a tensor without an op"));
    ggml_clear_error(ctx.get());
    ggml_set_loss(x);
    EXPECT_TRUE(contains(error_of(ctx.get()), "ggml_set_loss: the loss must be one f32 value"));
    EXPECT_FALSE(x->flags & GGML_TENSOR_FLAG_LOSS);
}

// loss = sum(x * x) + sum(y) with x a parameter, y a constant.
struct SmallModel {
    explicit SmallModel(ggml_context * ctx) {
        x = ggml_set_name(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4), "x");
        y = ggml_set_name(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4), "y");
        ggml_set_param(x);
        square = ggml_sqr(ctx, x);
        loss = ggml_set_name(ggml_add(ctx, ggml_sum(ctx, square), ggml_sum(ctx, y)), "loss");
        ggml_set_loss(loss);
        graph = ggml_new_graph_custom(ctx, 64, true);
        ggml_build_forward_expand(graph, loss);
    }
    ggml_tensor *x, *y, *square, *loss;
    ggml_cgraph * graph;
};

TEST(BackwardApi, ParametersAreNodesAndGetGradients) {
    ggml_context_ptr ctx = host_context();
    SmallModel m(ctx.get());
    EXPECT_EQ(ggml_graph_node(m.graph, 0), m.x);  // a parameter is a node, as in ggml
    EXPECT_EQ(ggml_graph_leaf(m.graph, 0), m.y);
    const int n_forward = ggml_graph_n_nodes(m.graph);
    ggml_build_backward_expand(ctx.get(), m.graph, nullptr);
    ASSERT_EQ(error_of(ctx.get()), "");
    EXPECT_GT(ggml_graph_n_nodes(m.graph), n_forward);

    ggml_tensor * loss_acc = ggml_graph_get_grad_acc(m.graph, m.loss);
    ASSERT_NE(loss_acc, nullptr);  // the loss always has an accumulator
    EXPECT_EQ(ggml_graph_get_grad(m.graph, m.loss), loss_acc);
    EXPECT_EQ(loss_acc->type, GGML_TYPE_F32);
    EXPECT_TRUE(ggml_is_scalar(loss_acc));
    ggml_tensor * dx = ggml_graph_get_grad(m.graph, m.x);
    ASSERT_NE(dx, nullptr);
    EXPECT_TRUE(ggml_are_same_shape(dx, m.x));
    EXPECT_STREQ(dx->name, "grad for x");
    EXPECT_EQ(ggml_graph_get_grad_acc(m.graph, m.x), nullptr);  // none was given
    EXPECT_EQ(ggml_graph_get_grad(m.graph, m.y), nullptr);      // a constant
    EXPECT_TRUE(ggml_graph_contains(m.graph, dx));
}

TEST(BackwardApi, ResetSetsTheLossGradientToOneAndAccumulatorsToZero) {
    ggml_context_ptr ctx = host_context();
    SmallModel m(ctx.get());
    std::vector<ggml_tensor *> accs(ggml_graph_n_nodes(m.graph), nullptr);
    accs[0] = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);  // node 0 is x
    std::fill_n(ggml_get_data_f32(accs[0]), 4, 7.0f);
    ggml_build_backward_expand(ctx.get(), m.graph, accs.data());
    ASSERT_EQ(error_of(ctx.get()), "");
    EXPECT_EQ(ggml_graph_get_grad_acc(m.graph, m.x), accs[0]);
    ggml_tensor * dx = ggml_graph_get_grad(m.graph, m.x);
    EXPECT_EQ(dx->view_src, accs[0]);  // the contribution is added into the accumulator in place

    ggml_graph_reset(m.graph);
    EXPECT_EQ(*ggml_get_data_f32(ggml_graph_get_grad_acc(m.graph, m.loss)), 1.0f);
    EXPECT_EQ(std::vector<float>(ggml_get_data_f32(accs[0]), ggml_get_data_f32(accs[0]) + 4),
              std::vector<float>(4, 0.0f));
}

TEST(BackwardApi, CopiesKeepGradientsAndViewsHaveNone) {
    ggml_context_ptr ctx = host_context();
    SmallModel m(ctx.get());
    ggml_cgraph * forward = ggml_graph_dup(ctx.get(), m.graph, false);
    ggml_build_backward_expand(ctx.get(), m.graph, nullptr);
    ASSERT_EQ(error_of(ctx.get()), "");
    EXPECT_EQ(ggml_graph_get_grad(forward, m.x), nullptr);

    ggml_cgraph * copy = ggml_graph_dup(ctx.get(), m.graph, false);  // keeps the source's gradients
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(ggml_graph_get_grad(copy, m.x), ggml_graph_get_grad(m.graph, m.x));
    EXPECT_EQ(ggml_graph_get_grad_acc(copy, m.loss), ggml_graph_get_grad_acc(m.graph, m.loss));

    ggml_cgraph * plain = ggml_new_graph_custom(ctx.get(), 64, false);
    ggml_graph_cpy(m.graph, plain);  // refused, with an error in dst's context
    EXPECT_TRUE(contains(error_of(ctx.get()), "the destination none"));
    ggml_clear_error(ctx.get());

    ggml_cgraph * view = ggml_graph_view(ctx.get(), m.graph, 0, 2);
    EXPECT_EQ(ggml_graph_get_grad(view, m.x), nullptr);
    ggml_graph_clear(copy);
    ggml_build_forward_expand(copy, m.loss);
    EXPECT_EQ(ggml_graph_get_grad(copy, m.x), nullptr);
}

TEST(BackwardApi, RefusalsLeaveTheGraphAsItWas) {
    ggml_context_ptr ctx = host_context();
    const auto expect_refused = [&](ggml_cgraph * graph, const std::string & why) {
        const int n_nodes = ggml_graph_n_nodes(graph), n_leafs = ggml_graph_n_leafs(graph);
        ggml_build_backward_expand(ctx.get(), graph, nullptr);
        EXPECT_TRUE(contains(error_of(ctx.get()), "ggml_build_backward_expand: " + why))
            << error_of(ctx.get());
        EXPECT_EQ(ggml_graph_n_nodes(graph), n_nodes);
        EXPECT_EQ(ggml_graph_n_leafs(graph), n_leafs);
        EXPECT_TRUE(ggml_graph_is_valid(graph));
        ggml_clear_error(ctx.get());
    };
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ggml_tensor * loss = ggml_sum(ctx.get(), ggml_sqr(ctx.get(), x));
    ggml_set_loss(loss);
    ggml_cgraph * plain = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(plain, loss);
    expect_refused(plain, "the graph has no gradients");

    ggml_cgraph * no_param = ggml_new_graph_custom(ctx.get(), 64, true);
    ggml_build_forward_expand(no_param, loss);
    expect_refused(no_param, "no trainable parameters");

    ggml_set_param(x);
    ggml_tensor * unlossed = ggml_sum(ctx.get(), ggml_sqr(ctx.get(), x));
    ggml_cgraph * no_loss = ggml_new_graph_custom(ctx.get(), 64, true);
    ggml_build_forward_expand(no_loss, unlossed);
    expect_refused(no_loss, "no loss");

    // A graph whose loss is sum(t * t), for each refused t.
    const auto graph_of = [&](ggml_tensor * t) {
        ggml_tensor * l = ggml_sum(ctx.get(), ggml_sqr(ctx.get(), t));
        ggml_set_loss(l);
        ggml_cgraph * graph = ggml_new_graph_custom(ctx.get(), 64, true);
        ggml_build_forward_expand(graph, l);
        return graph;
    };
    ggml_tensor * normed = ggml_set_name(ggml_norm(ctx.get(), x, 1e-5f), "normed");
    expect_refused(graph_of(normed), "op NORM has no backward (NORM node 'normed'");
    expect_refused(graph_of(ggml_gelu(ctx.get(), x)), "unary op GELU has no backward");
    ggml_tensor * pair = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 8);
    ggml_set_param(pair);
    expect_refused(graph_of(ggml_geglu(ctx.get(), pair)), "GLU op GEGLU has no backward");
    expect_refused(graph_of(ggml_swiglu(ctx.get(), pair)), "only the split form of swiglu");
    ggml_tensor * mask = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ggml_set_param(mask);
    expect_refused(graph_of(ggml_soft_max_ext(ctx.get(), x, mask, 1.0f, 0.0f)), "no gradient for the mask");
    expect_refused(graph_of(ggml_cross_entropy_loss(ctx.get(), x, mask)), "no gradient for the labels");
    expect_refused(graph_of(ggml_sqr_inplace(ctx.get(), ggml_scale(ctx.get(), x, 2.0f))),
                   "in-place SQR node");
}

// The way ggml-opt runs training graphs: parameters in a buffer of their own, everything else
// placed by the graph allocator or the scheduler, the loss gradient written by ggml_graph_reset.
// loss = sum(x * x * 3), so d loss / dx = 6 x.
TEST(BackwardApi, BackwardGraphsRunThroughTheAllocatorAndTheScheduler) {
    ggml_context_ptr params(ggml_init({ggml_tensor_overhead(), nullptr, true}));
    ggml_tensor * x = ggml_new_tensor_1d(params.get(), GGML_TYPE_F32, 5);
    ggml_set_param(x);
    ggx::test::Buffer weights(ggml_backend_alloc_ctx_tensors(params.get(), cpu_backend()));
    ASSERT_NE(weights, nullptr);
    const std::vector<float> values = ggx::test::ramp(5, -1.0f, 0.5f);
    write_f32(x, values);

    for (const bool use_sched : {false, true}) {
        ggml_context_ptr ctx(
            ggml_init({64 * ggml_tensor_overhead() + ggml_graph_overhead_custom(64, true), nullptr, true}));
        ggml_tensor * loss = ggml_sum(ctx.get(), ggml_scale(ctx.get(), ggml_sqr(ctx.get(), x), 3.0f));
        ggml_set_loss(loss);
        ggml_cgraph * graph = ggml_new_graph_custom(ctx.get(), 64, true);
        ggml_build_forward_expand(graph, loss);
        ggml_build_backward_expand(ctx.get(), graph, nullptr);
        ASSERT_EQ(error_of(ctx.get()), "");
        ggml_backend_t backends[] = {cpu_backend()};
        ggml_backend_sched_ptr sched(ggml_backend_sched_new(backends, nullptr, 1, 64, false, false));
        ggml_gallocr_ptr galloc(ggml_gallocr_new(ggml_backend_get_default_buffer_type(cpu_backend())));
        ASSERT_TRUE(use_sched ? ggml_backend_sched_alloc_graph(sched.get(), graph)
                              : ggml_gallocr_alloc_graph(galloc.get(), graph));
        ggml_graph_reset(graph);
        ASSERT_EQ(use_sched ? ggml_backend_sched_graph_compute(sched.get(), graph)
                            : ggml_backend_graph_compute(cpu_backend(), graph),
                  GGML_STATUS_SUCCESS);
        const std::vector<float> dx = read_f32(ggml_graph_get_grad(graph, x));
        for (size_t i = 0; i < values.size(); ++i)
            EXPECT_FLOAT_EQ(dx[i], 6.0f * values[i]) << (use_sched ? "scheduler" : "graph allocator");
        EXPECT_EQ(read_f32(x), values);  // a parameter node computes nothing
    }
}

// Gradients of a parameter with an accumulator sum over computations until ggml_graph_reset.
TEST(BackwardApi, AccumulatorsSumOverComputations) {
    ggml_context_ptr ctx(
        ggml_init({64 * ggml_tensor_overhead() + ggml_graph_overhead_custom(64, true), nullptr, true}));
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 3);
    ggml_set_param(x);
    ggml_tensor * loss = ggml_sum(ctx.get(), ggml_sqr(ctx.get(), x));
    ggml_set_loss(loss);
    ggml_cgraph * graph = ggml_new_graph_custom(ctx.get(), 64, true);
    ggml_build_forward_expand(graph, loss);
    std::vector<ggml_tensor *> accs(ggml_graph_n_nodes(graph), nullptr);
    accs[0] = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 3);
    ggml_build_backward_expand(ctx.get(), graph, accs.data());
    ASSERT_EQ(error_of(ctx.get()), "");
    ggx::test::Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), cpu_backend()));
    ASSERT_NE(buffer, nullptr);
    write_f32(x, {1.0f, -2.0f, 0.5f});
    ggml_graph_reset(graph);
    for (int i = 0; i < 2; ++i)
        ASSERT_EQ(ggml_backend_graph_compute(cpu_backend(), graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(read_f32(accs[0]), std::vector<float>({4.0f, -8.0f, 2.0f}));  // twice 2 x
    ggml_graph_reset(graph);
    EXPECT_EQ(read_f32(accs[0]), std::vector<float>(3, 0.0f));
}

// ---------------------------------------------------------------------------------------------
// Gradient checks

// How a parameter's random values are drawn.
enum class Values {
    kUniform,    // uniform in [lo, hi)
    kSeparated,  // distinct, |v| >= 0.1 and apart by more than the step: no kink of abs, relu, max
};

// The inputs a case makes: parameters (gradients checked), constants and index tensors.
class Inputs {
public:
    Inputs(ggml_context * ctx, Values values, float lo, float hi)
        : ctx_(ctx), values_(values), lo_(lo), hi_(hi) {}

    ggml_tensor * param(int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1, int64_t ne3 = 1) {
        ggml_tensor * t = ggml_new_tensor_4d(ctx_, GGML_TYPE_F32, ne0, ne1, ne2, ne3);
        ggml_format_name(t, "p%zu", params.size());
        ggml_set_param(t);
        params.push_back(t);
        return t;
    }
    // Values in [lo, hi) that no gradient is taken of.
    ggml_tensor * constant(float lo, float hi, int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1,
                           int64_t ne3 = 1) {
        ggml_tensor * t = ggml_new_tensor_4d(ctx_, GGML_TYPE_F32, ne0, ne1, ne2, ne3);
        constants.push_back({t, lo, hi});
        return t;
    }
    ggml_tensor * indices(std::vector<int32_t> values) {
        ggml_tensor * t = ggml_new_tensor_1d(ctx_, GGML_TYPE_I32, static_cast<int64_t>(values.size()));
        index_values.push_back({t, std::move(values)});
        return t;
    }

    // Writes every input's values (after allocation).
    void fill(Rng & rng) const {
        for (ggml_tensor * p : params)
            write_f32(p, values_ == Values::kUniform
                             ? ggx::test::random_floats(rng.gen, ggml_nelements(p), lo_, hi_)
                             : separated(rng, ggml_nelements(p)));
        for (const auto & c : constants)
            write_f32(c.tensor, ggx::test::random_floats(rng.gen, ggml_nelements(c.tensor), c.lo, c.hi));
        for (const auto & [t, v] : index_values)
            ggml_backend_tensor_set(t, v.data(), 0, v.size() * sizeof(int32_t));
    }

    std::vector<ggml_tensor *> params;

private:
    static std::vector<float> separated(Rng & rng, int64_t n) {
        std::vector<float> v(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            const float magnitude = 0.1f + 0.9f * static_cast<float>(i) / static_cast<float>(n);
            v[i] = rng.uniform(0, 1) < 0.5 ? -magnitude : magnitude;
        }
        std::shuffle(v.begin(), v.end(), rng.gen);
        return v;
    }

    struct Constant {
        ggml_tensor * tensor;
        float lo, hi;
    };
    ggml_context * ctx_;
    Values values_;
    float lo_, hi_;
    std::vector<Constant> constants;
    std::vector<std::pair<ggml_tensor *, std::vector<int32_t>>> index_values;
};

struct GradCase {
    std::string name;
    std::function<ggml_tensor *(ggml_context *, Inputs &)> build;  // the op's result from its inputs
    Values values = Values::kUniform;
    float lo = -1.0f, hi = 1.0f;  // range of the parameters' values
    float step = 1e-2f;           // of the finite differences
};

// gtest names a case by its name (rather than its bytes).
void PrintTo(const GradCase & c, std::ostream * os) { *os << c.name; }

// An allocated tensor's values in element order, whatever its strides (F32).
std::vector<float> elements(const ggml_tensor * t) {
    std::vector<unsigned char> bytes(ggml_nbytes(t));
    ggml_backend_tensor_get(t, bytes.data(), 0, bytes.size());
    std::vector<float> out;
    for (int64_t i3 = 0; i3 < t->ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < t->ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < t->ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
                    float v;
                    std::memcpy(&v,
                                bytes.data() + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3],
                                sizeof v);
                    out.push_back(v);
                }
    return out;
}

// The first node of graph the CPU backend cannot compute, or NULL.
const ggml_tensor * uncomputable_node(const ggml_cgraph * graph) {
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        const ggml_tensor * node = ggml_graph_node(graph, i);
        const bool layout = node->op == GGML_OP_NONE || node->op == GGML_OP_VIEW ||
                            node->op == GGML_OP_RESHAPE || node->op == GGML_OP_PERMUTE ||
                            node->op == GGML_OP_TRANSPOSE;
        if (!layout && !ggml_backend_supports_op(cpu_backend(), node)) return node;
    }
    return nullptr;
}

class GradCheck : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradCheck, AnalyticGradientsMatchFiniteDifferences) {
    const GradCase & c = GetParam();
    ggml_context_ptr ctx(
        ggml_init({256 * ggml_tensor_overhead() + 2 * ggml_graph_overhead_custom(512, true), nullptr, true}));
    Inputs inputs(ctx.get(), c.values, c.lo, c.hi);
    ggml_tensor * out = c.build(ctx.get(), inputs);
    ASSERT_NE(out, nullptr) << error_of(ctx.get());
    // loss = sum(out * w): every element of out gets its own weight, so a wrong index shows.
    ggml_tensor * weights = inputs.constant(-1.0f, 1.0f, out->ne[0], out->ne[1], out->ne[2], out->ne[3]);
    ggml_tensor * loss = ggml_sum(ctx.get(), ggml_mul(ctx.get(), out, weights));
    ggml_set_loss(loss);
    ggml_cgraph * forward = ggml_new_graph_custom(ctx.get(), 512, true);
    ggml_build_forward_expand(forward, loss);
    ggml_cgraph * backward = ggml_graph_dup(ctx.get(), forward, true);
    ggml_build_backward_expand(ctx.get(), backward, nullptr);
    ASSERT_EQ(error_of(ctx.get()), "");
    for (const ggml_tensor * p : inputs.params) {  // checked whether or not the CPU can compute them
        const ggml_tensor * grad = ggml_graph_get_grad(backward, p);
        EXPECT_TRUE(!grad || ggml_are_same_shape(grad, p)) << p->name;
    }
    if (const ggml_tensor * node = uncomputable_node(backward)) {
        GTEST_SKIP() << "the CPU backend cannot compute " << ggml_op_desc(node) << " (node '" << node->name
                     << "' of the graphs of " << c.name << ")";
    }
    ggx::test::Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), cpu_backend()));
    ASSERT_NE(buffer, nullptr);
    Rng rng(0x9d17 + static_cast<uint32_t>(std::hash<std::string>{}(c.name) & 0xffff));
    inputs.fill(rng);

    ggml_graph_reset(backward);
    ASSERT_EQ(ggml_backend_graph_compute(cpu_backend(), backward), GGML_STATUS_SUCCESS);
    const auto loss_at = [&] {
        EXPECT_EQ(ggml_backend_graph_compute(cpu_backend(), forward), GGML_STATUS_SUCCESS);
        return static_cast<double>(read_f32(loss)[0]);
    };
    for (ggml_tensor * p : inputs.params) {
        const ggml_tensor * grad = ggml_graph_get_grad(backward, p);
        // No gradient: the loss does not depend on p (SGN, STEP), so it must be zero.
        const std::vector<float> analytic =
            grad ? elements(grad) : std::vector<float>(ggml_nelements(p), 0.0f);
        std::vector<float> x = read_f32(p);
        for (size_t i = 0; i < x.size(); ++i) {
            // Five-point central difference: error O(step^4).
            const float x0 = x[i];
            double f[4];
            const float offsets[4] = {-2, -1, 1, 2};
            for (int k = 0; k < 4; ++k) {
                x[i] = x0 + offsets[k] * c.step;
                write_f32(p, x);
                f[k] = loss_at();
            }
            x[i] = x0;
            write_f32(p, x);
            const double numeric = (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12.0 * c.step);
            EXPECT_NEAR(analytic[i], numeric, 2e-3 + 1e-2 * std::fabs(numeric))
                << c.name << ": d loss / d " << p->name << "[" << i << "], " << rng.trace();
        }
    }
}

ggml_tensor * pos_of(Inputs & in, int n) {
    std::vector<int32_t> pos(n);
    std::iota(pos.begin(), pos.end(), 3);
    return in.indices(pos);
}

std::vector<GradCase> grad_cases() {
    using C = ggml_context *;
    using I = Inputs &;
    const auto unary = [](const char * name, ggml_unary_op op, Values values = Values::kUniform,
                          float lo = -1, float hi = 1) {
        return GradCase{name,   [op](C ctx, I in) { return ggml_unary(ctx, in.param(5, 3), op); },
                        values, lo,
                        hi,     values == Values::kSeparated ? 1e-3f : 1e-2f};
    };
    const auto binary = [](const char * name, ggml_tensor * (*fn)(C, ggml_tensor *, ggml_tensor *),
                           bool broadcast, float lo = -1, float hi = 1) {
        return GradCase{name,
                        [fn, broadcast](C ctx, I in) {
                            ggml_tensor * a = in.param(4, 3, 2, 2);
                            return fn(ctx, a, broadcast ? in.param(4, 1, 2, 1) : in.param(4, 3, 2, 2));
                        },
                        Values::kUniform, lo, hi};
    };
    return {
        {"dup", [](C ctx, I in) { return ggml_dup(ctx, in.param(4, 3)); }},
        binary("add", ggml_add, false),
        binary("add_broadcast", ggml_add, true),
        binary("sub", ggml_sub, false),
        binary("sub_broadcast", ggml_sub, true),
        binary("mul", ggml_mul, false),
        binary("mul_broadcast", ggml_mul, true),
        binary("div", ggml_div, false, 0.5f, 2.0f),
        binary("div_broadcast", ggml_div, true, 0.5f, 2.0f),
        {"add_of_transposed_view",
         [](C ctx, I in) { return ggml_add(ctx, ggml_transpose(ctx, in.param(3, 4)), in.param(4, 3)); }},
        {"add1", [](C ctx, I in) { return ggml_add1(ctx, in.param(4, 3), in.param(1)); }},
        {"acc",
         [](C ctx, I in) {
             ggml_tensor * a = in.param(6, 5);
             return ggml_acc(ctx, a, in.param(3, 2), a->nb[1], a->nb[2], a->nb[3], 2 * a->nb[1] + 4);
         }},
        {"sqr", [](C ctx, I in) { return ggml_sqr(ctx, in.param(5, 3)); }},
        {"sqrt", [](C ctx, I in) { return ggml_sqrt(ctx, in.param(5, 3)); }, Values::kUniform, 0.5f, 2.0f},
        {"log", [](C ctx, I in) { return ggml_log(ctx, in.param(5, 3)); }, Values::kUniform, 0.5f, 2.0f},
        {"sin", [](C ctx, I in) { return ggml_sin(ctx, in.param(5, 3)); }},
        {"cos", [](C ctx, I in) { return ggml_cos(ctx, in.param(5, 3)); }},
        {"sum", [](C ctx, I in) { return ggml_sum(ctx, in.param(5, 3, 2)); }},
        {"sum_rows", [](C ctx, I in) { return ggml_sum_rows(ctx, in.param(5, 3, 2)); }},
        {"sum_rows_of_permuted",
         [](C ctx, I in) { return ggml_sum_rows(ctx, ggml_permute(ctx, in.param(5, 3, 2), 1, 2, 0, 3)); }},
        {"mean", [](C ctx, I in) { return ggml_mean(ctx, in.param(5, 3, 2)); }},
        {"repeat",
         [](C ctx, I in) { return ggml_repeat(ctx, in.param(3, 1, 2), in.constant(0, 1, 6, 4, 2)); }},
        {"repeat_back",
         [](C ctx, I in) { return ggml_repeat_back(ctx, in.param(6, 4, 2), in.constant(0, 1, 3, 1, 2)); }},
        {"rms_norm", [](C ctx, I in) { return ggml_rms_norm(ctx, in.param(6, 3), 1e-6f); }},
        {"mul_mat", [](C ctx, I in) { return ggml_mul_mat(ctx, in.param(5, 4), in.param(5, 3)); }},
        {"mul_mat_batched_broadcast",
         [](C ctx, I in) { return ggml_mul_mat(ctx, in.param(5, 4, 2), in.param(5, 3, 4)); }},
        {"scale", [](C ctx, I in) { return ggml_scale(ctx, in.param(5, 3), 0.75f); }},
        {"set",
         [](C ctx, I in) {
             ggml_tensor * a = in.param(6, 5);
             return ggml_set(ctx, a, in.param(3, 2), a->nb[1], a->nb[2], a->nb[3], a->nb[1] + 8);
         }},
        {"cpy", [](C ctx, I in) { return ggml_cpy(ctx, in.param(4, 3), in.constant(0, 1, 12)); }},
        {"cont_of_transposed",
         [](C ctx, I in) { return ggml_cont(ctx, ggml_transpose(ctx, in.param(4, 3))); }},
        {"reshape", [](C ctx, I in) { return ggml_reshape_3d(ctx, in.param(6, 2), 3, 2, 2); }},
        {"view",
         [](C ctx, I in) {
             ggml_tensor * a = in.param(6, 4);
             return ggml_view_2d(ctx, a, 3, 2, 2 * a->nb[1], a->nb[1] + 2 * sizeof(float));
         }},
        {"permute", [](C ctx, I in) { return ggml_permute(ctx, in.param(4, 3, 2), 2, 0, 1, 3); }},
        {"transpose", [](C ctx, I in) { return ggml_transpose(ctx, in.param(4, 3)); }},
        {"get_rows",
         [](C ctx, I in) {
             return ggml_get_rows(ctx, in.param(4, 5), in.indices({4, 0, 4}));
         }},
        {"diag_mask_inf_under_soft_max",
         [](C ctx, I in) { return ggml_soft_max(ctx, ggml_diag_mask_inf(ctx, in.param(5, 5), 1)); }},
        {"diag_mask_zero", [](C ctx, I in) { return ggml_diag_mask_zero(ctx, in.param(5, 5), 1); }},
        {"soft_max", [](C ctx, I in) { return ggml_soft_max(ctx, in.param(6, 3)); }},
        {"soft_max_ext_scaled",
         [](C ctx, I in) { return ggml_soft_max_ext(ctx, in.param(6, 3), nullptr, 0.7f, 0.0f); }},
        {"rope_normal",
         [](C ctx, I in) {
             return ggml_rope_ext(ctx, in.param(8, 3, 4), pos_of(in, 4), nullptr, 8, GGML_ROPE_TYPE_NORMAL, 0,
                                  10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
         }},
        {"rope_neox_partial",
         [](C ctx, I in) {
             return ggml_rope_ext(ctx, in.param(8, 2, 3), pos_of(in, 3), nullptr, 4, GGML_ROPE_TYPE_NEOX, 0,
                                  10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
         }},
        {"rope_multi",
         [](C ctx, I in) {
             int sections[GGML_MROPE_SECTIONS] = {2, 1, 1, 0};
             return ggml_rope_multi(ctx, in.param(8, 2, 3), pos_of(in, 4 * 3), nullptr, 8, sections,
                                    GGML_ROPE_TYPE_MROPE, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
         }},
        {"im2col_2d",
         [](C ctx, I in) {
             return ggml_im2col(ctx, in.constant(0, 1, 3, 3, 2, 4), in.param(6, 5, 2, 1), 1, 1, 1, 1, 1, 1,
                                true, GGML_TYPE_F32);
         }},
        {"pool_2d_avg",
         [](C ctx, I in) {
             return ggml_pool_2d(ctx, in.param(6, 4, 2), GGML_OP_POOL_AVG, 2, 2, 2, 2, 0, 0);
         }},
        {"pool_2d_max",
         [](C ctx, I in) { return ggml_pool_2d(ctx, in.param(6, 4, 2), GGML_OP_POOL_MAX, 2, 2, 2, 2, 0, 0); },
         Values::kSeparated, -1, 1, 1e-3f},
        unary("abs", GGML_UNARY_OP_ABS, Values::kSeparated),
        unary("sgn", GGML_UNARY_OP_SGN, Values::kSeparated),
        unary("neg", GGML_UNARY_OP_NEG),
        unary("step", GGML_UNARY_OP_STEP, Values::kSeparated),
        unary("relu", GGML_UNARY_OP_RELU, Values::kSeparated),
        unary("silu", GGML_UNARY_OP_SILU, Values::kUniform, -3, 3),
        unary("exp", GGML_UNARY_OP_EXP),
        unary("expm1", GGML_UNARY_OP_EXPM1),
        unary("softplus", GGML_UNARY_OP_SOFTPLUS, Values::kUniform, -3, 3),
        {"swiglu_split", [](C ctx, I in) { return ggml_swiglu_split(ctx, in.param(5, 3), in.param(5, 3)); }},
        {"cross_entropy_loss",
         [](C ctx, I in) {
             ggml_tensor * labels = ggml_soft_max(ctx, in.constant(-2, 2, 5, 3));  // rows of probabilities
             return ggml_cross_entropy_loss(ctx, in.param(5, 3), labels);
         }},
    };
}

INSTANTIATE_TEST_SUITE_P(EveryOpWithABackward, GradCheck, ::testing::ValuesIn(grad_cases()),
                         [](const ::testing::TestParamInfo<GradCase> & param) { return param.param.name; });

}  // namespace
