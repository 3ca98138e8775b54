// CPU kernels of the recurrent family (src/cpu/kernels/recurrent.cpp) on what the ggx-ops cases do
// not show: the recurrences compose (a state handed from one call to the next gives the result of one
// call over all the tokens, and GATED_DELTA_NET's snapshot slots are those states), every thread
// count computes the same bits, the nodes the kernels cannot compute are refused, and an SSM_SCAN
// state index out of range fails the compute instead of reading outside the states.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <random>
#include <vector>

#include "reference/reference.h"

namespace {

using Shape = std::array<int64_t, 4>;

struct ContextDeleter {
    void operator()(ggml_context * ctx) const { ggml_free(ctx); }
};

ggml_backend_t backend() {
    static ggml_backend_t cpu = ggml_backend_cpu_init();
    return cpu;
}

class RecurrentKernels : public ::testing::Test {
protected:
    ggml_context * ctx() { return ctx_.get(); }

    ggml_tensor * random(Shape ne, double lo = -1.0, double hi = 1.0) {
        ggml_tensor * t = ggml_new_tensor(ctx(), GGML_TYPE_F32, 4, ne.data());
        std::uniform_real_distribution<double> dist(lo, hi);
        std::vector<double> v(static_cast<size_t>(ggml_nelements(t)));
        for (double & x : v)
            x = dist(rng_);
        ggx::ref::write_tensor(t, v);
        return t;
    }

    // Computes node with n_threads threads; the status of the compute.
    ggml_status compute(ggml_tensor * node, int n_threads = 2) {
        ggml_cgraph * graph = ggml_new_graph(ctx());
        ggml_build_forward_expand(graph, node);
        ggml_backend_cpu_set_n_threads(backend(), n_threads);
        return ggml_backend_graph_compute(backend(), graph);
    }

    std::vector<double> values(ggml_tensor * node, int n_threads = 2) {
        EXPECT_EQ(compute(node, n_threads), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
        return ggx::ref::read_tensor(node);
    }

    // Elements [offset, offset + n) of node's values.
    static std::vector<double> slice(const std::vector<double> & v, int64_t offset, int64_t n) {
        return {v.begin() + offset, v.begin() + offset + n};
    }

private:
    std::unique_ptr<ggml_context, ContextDeleter> ctx_{ggml_init({64 << 20, nullptr, false})};
    std::mt19937 rng_{7};
};

// Tokens [t0, t0 + n) of a [a, b, T, c] tensor, as a view.
ggml_tensor * tokens(ggml_context * ctx, ggml_tensor * t, int64_t t0, int64_t n) {
    return ggml_view_4d(ctx, t, t->ne[0], t->ne[1], n, t->ne[3], t->nb[1], t->nb[2], t->nb[3], t0 * t->nb[2]);
}

constexpr int64_t S = 16, Hv = 4, Hk = 2, T = 6, kSplit = 2;

TEST_F(RecurrentKernels, GatedDeltaNetSlotsAreTheStatesAfterEachToken) {
    ggml_tensor *q = random({S, Hk, T, 1}), *k = random({S, Hk, T, 1}), *v = random({S, Hv, T, 1});
    ggml_tensor *g = random({1, Hv, T, 1}, -1.0, 0.0), *beta = random({1, Hv, T, 1}, 0.0, 1.0);
    ggml_tensor * s0 = random({S, S, Hv, 1});
    const std::vector<double> all = values(ggml_gated_delta_net(ctx(), q, k, v, g, beta, s0, T));
    const int64_t outputs = S * Hv * T, state = S * S * Hv;
    for (int64_t n = 1; n <= T; ++n) {
        ggml_tensor * prefix = ggml_gated_delta_net(ctx(), tokens(ctx(), q, 0, n), tokens(ctx(), k, 0, n),
                                                    tokens(ctx(), v, 0, n), tokens(ctx(), g, 0, n),
                                                    tokens(ctx(), beta, 0, n), s0, 1);
        const std::vector<double> part = values(prefix);
        EXPECT_EQ(slice(part, 0, S * Hv * n), slice(all, 0, S * Hv * n)) << n << " tokens";
        EXPECT_EQ(slice(part, S * Hv * n, state), slice(all, outputs + (T - n) * state, state))
            << n << " tokens";
    }
}

TEST_F(RecurrentKernels, Wkv7StateCarriesOverCalls) {
    const int64_t C = S * Hv;
    auto token = [&] { return random({S, Hv, T, 1}); };
    ggml_tensor *r = token(), *w = random({S, Hv, T, 1}, 0.5, 1.0), *k = token(), *v = token();
    ggml_tensor *a = random({S, Hv, T, 1}, -0.3, 0.3), *b = random({S, Hv, T, 1}, -0.3, 0.3);
    ggml_tensor * s0 = random({S * S * Hv, 1, 1, 1});
    const std::vector<double> whole = values(ggml_rwkv_wkv7(ctx(), r, w, k, v, a, b, s0));
    auto part = [&](ggml_tensor * t, int64_t t0, int64_t n) {
        return ggml_cont(ctx(), tokens(ctx(), t, t0, n));
    };
    ggml_tensor * first = ggml_rwkv_wkv7(ctx(), part(r, 0, kSplit), part(w, 0, kSplit), part(k, 0, kSplit),
                                         part(v, 0, kSplit), part(a, 0, kSplit), part(b, 0, kSplit), s0);
    ggml_tensor * carried =
        ggml_cont(ctx(), ggml_view_1d(ctx(), first, S * S * Hv, C * kSplit * sizeof(float)));
    const int64_t rest = T - kSplit;
    ggml_tensor * second =
        ggml_rwkv_wkv7(ctx(), part(r, kSplit, rest), part(w, kSplit, rest), part(k, kSplit, rest),
                       part(v, kSplit, rest), part(a, kSplit, rest), part(b, kSplit, rest), carried);
    const std::vector<double> tail = values(second);
    EXPECT_EQ(slice(tail, 0, C * rest), slice(whole, C * kSplit, C * rest));
    EXPECT_EQ(slice(tail, C * rest, S * C), slice(whole, C * T, S * C));
}

TEST_F(RecurrentKernels, ThreadCountsComputeTheSameBits) {
    ggml_tensor *k = random({S, Hv, T, 1}), *v = random({S, Hv, T, 1}), *q = random({S, Hv, T, 1});
    ggml_tensor * g = random({S, Hv, T, 1}, -1.0, 0.0);
    ggml_tensor * gla = ggml_gated_linear_attn(ctx(), k, v, q, g, random({S * S * Hv, 2, 1, 1}), 0.5f);
    ggml_tensor * sx = random({3 + T, 33, 2, 1});
    ggml_tensor * conv = ggml_ssm_conv(ctx(), sx, random({4, 33, 1, 1}));
    for (ggml_tensor * node : {gla, conv}) {
        const std::vector<double> one = values(node, 1);
        for (int n_threads : {2, 3})
            EXPECT_EQ(values(node, n_threads), one) << ggml_op_desc(node) << ", " << n_threads << " threads";
    }
}

TEST_F(RecurrentKernels, RefusesWhatTheKernelsCannotCompute) {
    ggml_backend_dev_t cpu = ggml_backend_get_device(backend());
    ggml_tensor *q = random({S, Hk, T, 1}), *k = random({S, Hk, T, 1}), *v = random({S, Hv, T, 1});
    ggml_tensor *g = random({1, Hv, T, 1}), *beta = random({1, Hv, T, 1}), *s0 = random({S, S, Hv, 1});
    EXPECT_TRUE(ggml_backend_dev_supports_op(cpu, ggml_gated_delta_net(ctx(), q, k, v, g, beta, s0, T)));
    // ggml leaves the slots older than the tokens unwritten.
    EXPECT_FALSE(ggml_backend_dev_supports_op(cpu, ggml_gated_delta_net(ctx(), q, k, v, g, beta, s0, T + 1)));
    // Seven tokens do not split over two sequences.
    ggml_tensor * t7 = random({S, Hv, 7, 1});
    EXPECT_FALSE(ggml_backend_dev_supports_op(
        cpu, ggml_rwkv_wkv6(ctx(), t7, t7, t7, random({S, Hv, 1, 1}), t7, random({S * S * Hv, 2, 1, 1}))));
    // Three heads do not split into two groups.
    const int64_t N = 8;
    ggml_tensor * scan = ggml_ssm_scan(ctx(), random({N, 2, 3, 1}), random({2, 3, T, 1}),
                                       random({3, T, 1, 1}), random({1, 3, 1, 1}), random({N, 2, T, 1}),
                                       random({N, 2, T, 1}), ggml_new_tensor_1d(ctx(), GGML_TYPE_I32, 1));
    EXPECT_FALSE(ggml_backend_dev_supports_op(cpu, scan));
}

TEST_F(RecurrentKernels, SsmScanStateIndexOutOfRangeFails) {
    const int64_t N = 8, head_dim = 2, H = 2;
    ggml_tensor * ids = ggml_new_tensor_1d(ctx(), GGML_TYPE_I32, 1);
    static_cast<int32_t *>(ids->data)[0] = 1;  // the states hold one slot
    ggml_tensor * scan =
        ggml_ssm_scan(ctx(), random({N, head_dim, H, 1}), random({head_dim, H, T, 1}), random({H, T, 1, 1}),
                      random({1, H, 1, 1}), random({N, 1, T, 1}), random({N, 1, T, 1}), ids);
    ASSERT_NE(scan, nullptr) << ggml_get_error(ctx());
    EXPECT_NE(compute(scan), GGML_STATUS_SUCCESS);
}

}  // namespace
