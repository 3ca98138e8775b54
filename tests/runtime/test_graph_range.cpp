// Range execution: ggml_backend_graph_compute_range runs nodes [i0, i1) of an allocated graph.
//
// Spec (ggml-extensions.md, "Public graph access"): "Range execution uses already allocated tensors
// and retains the original graph's consumer counts."
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-graph.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "interface/backend-impl.h"
#include "support/test_util.h"

namespace {

using ggx::test::Backend;
using ggx::test::contains;
using ggx::test::Context;
using ggx::test::Rng;

void fill_random(ggml_tensor * t, Rng & rng) {
    auto * data = static_cast<float *>(t->data);
    for (int64_t i = 0; i < ggml_nelements(t); ++i)
        data[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
}

// A chain of several op families over host tensors: matmul, add, a view, softmax, norm, mul, silu.
struct ChainGraph {
    Context ctx{ggml_init({16 << 20, nullptr, false})};
    ggml_tensor * w = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 64, 48);
    ggml_tensor * x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 64, 7);
    ggml_tensor * bias = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 48);
    ggml_tensor * h = nullptr;  // consumed by two nodes far apart
    ggml_tensor * out = nullptr;
    ggml_cgraph * graph = ggml_new_graph(ctx.get());

    explicit ChainGraph(uint32_t seed) {
        Rng rng(seed);
        for (ggml_tensor * t : {w, x, bias})
            fill_random(t, rng);
        ggml_context * c = ctx.get();
        h = ggml_set_name(ggml_add(c, ggml_mul_mat(c, w, x), bias), "h");
        ggml_tensor * columns = ggml_view_2d(c, h, 16, 7, h->nb[1], 8 * sizeof(float));
        ggml_tensor * probs = ggml_soft_max(c, ggml_cont(c, columns));
        ggml_tensor * normed = ggml_norm(c, h, 1e-5f);
        ggml_tensor * gated = ggml_silu(c, ggml_mul(c, normed, h));
        out = ggml_set_name(ggml_add(c, ggml_sum_rows(c, gated), ggml_sum_rows(c, probs)), "out");
        ggml_build_forward_expand(graph, out);
    }

    // Every node's bytes, in node order.
    std::vector<std::vector<char>> node_bytes() const {
        std::vector<std::vector<char>> bytes;
        for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
            const ggml_tensor * node = ggml_graph_node(graph, i);
            const auto * data = static_cast<const char *>(node->data);
            bytes.emplace_back(data, data + ggml_nbytes(node));
        }
        return bytes;
    }

    void poison_nodes() {
        for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
            ggml_tensor * node = ggml_graph_node(graph, i);
            if (!node->view_src) std::memset(node->data, 0x7f, ggml_nbytes(node));
        }
    }
};

TEST(GraphRange, RangesComputeTheSameBitsAsTheWholeGraph) {
    for (const uint32_t seed : {1u, 2u}) {
        ChainGraph g(seed);
        ASSERT_TRUE(ggml_graph_is_valid(g.graph)) << ggml_get_error(g.ctx.get());
        const int n = ggml_graph_n_nodes(g.graph);
        ASSERT_GE(n, 8);
        Backend backend(ggml_backend_cpu_init());
        ggml_backend_cpu_set_n_threads(backend.get(), 3);
        ASSERT_EQ(ggml_backend_graph_compute(backend.get(), g.graph), GGML_STATUS_SUCCESS)
            << ggml_backend_get_last_error();
        const auto whole = g.node_bytes();

        const std::vector<std::vector<int>> splits = {{0, n / 2, n}, {0, 1, n - 2, n}, {0, 3, 3, 6, n}};
        for (const auto & cuts : splits) {
            g.poison_nodes();
            for (size_t k = 0; k + 1 < cuts.size(); ++k) {
                ASSERT_EQ(ggml_backend_graph_compute_range(backend.get(), g.graph, cuts[k], cuts[k + 1]),
                          GGML_STATUS_SUCCESS)
                    << ggml_backend_get_last_error();
            }
            EXPECT_EQ(g.node_bytes(), whole) << "seed " << seed << ", " << cuts.size() - 1 << " ranges";
        }
    }
}

TEST(GraphRange, AnEmptyRangeComputesNothing) {
    ChainGraph g(3);
    g.poison_nodes();
    const auto before = g.node_bytes();
    Backend backend(ggml_backend_cpu_init());
    for (int i : {0, 4, ggml_graph_n_nodes(g.graph)})
        EXPECT_EQ(ggml_backend_graph_compute_range(backend.get(), g.graph, i, i), GGML_STATUS_SUCCESS);
    EXPECT_EQ(g.node_bytes(), before);
}

TEST(GraphRange, BadRangesFailWithAMessage) {
    ChainGraph g(4);
    const int n = ggml_graph_n_nodes(g.graph);
    g.poison_nodes();
    const auto before = g.node_bytes();
    Backend backend(ggml_backend_cpu_init());
    const int bad[][2] = {{-1, 2}, {3, 2}, {0, n + 1}, {n + 1, n + 1}, {-2, -1}};
    for (const auto & range : bad) {
        EXPECT_EQ(ggml_backend_graph_compute_range(backend.get(), g.graph, range[0], range[1]),
                  GGML_STATUS_FAILED);
        const std::string error = ggml_backend_get_last_error();
        EXPECT_TRUE(
            contains(error, "bad range [" + std::to_string(range[0]) + ", " + std::to_string(range[1])))
            << error;
        EXPECT_TRUE(contains(error, std::to_string(n) + " nodes")) << error;
    }
    EXPECT_EQ(g.node_bytes(), before);
}

TEST(GraphRange, AFailingNodeIsNamedWithTheRangeStart) {
    Context ctx(ggml_init({1 << 20, nullptr, false}));
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    std::memset(a->data, 0, ggml_nbytes(a));
    ggml_tensor * first = ggml_sqr(ctx.get(), a);
    ggml_tensor * foreign = ggml_custom_4d(
        ctx.get(), GGML_TYPE_F32, 4, 1, 1, 1, &first, 1, [](ggml_tensor *, int, int, void *) {}, 1, nullptr);
    ggml_set_name(foreign, "foreign");
    const uint32_t marker = GGML_CUSTOM_MARKER_EXTENSION;  // no kernel is registered for it
    std::memcpy(foreign->op_params, &marker, sizeof marker);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, foreign);
    ASSERT_EQ(ggml_graph_n_nodes(graph), 2);
    Backend backend(ggml_backend_cpu_init());
    EXPECT_EQ(ggml_backend_graph_compute_range(backend.get(), graph, 0, 1), GGML_STATUS_SUCCESS);
    EXPECT_EQ(ggml_backend_graph_compute_range(backend.get(), graph, 1, 2), GGML_STATUS_FAILED);
    const std::string error = ggml_backend_get_last_error();
    EXPECT_TRUE(contains(error, "'foreign'")) << error;
    EXPECT_TRUE(contains(error, "not supported")) << error;
    EXPECT_TRUE(contains(error, "range [1, 2)")) << error;
}

TEST(GraphRange, AnInvalidGraphIsRefused) {
    ChainGraph g(5);
    ggml_build_forward_expand(g.graph, nullptr);
    Backend backend(ggml_backend_cpu_init());
    EXPECT_EQ(ggml_backend_graph_compute_range(backend.get(), g.graph, 0, 1), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "graph is invalid"));
}

// A backend of the CPU device that records the nodes its native batches are given instead of
// computing them, and the graph's use counts of watched tensors while they run.
class RecordingBackend final : public ggml_backend {
public:
    RecordingBackend(const ggml_cgraph * graph, std::vector<const ggml_tensor *> watched)
        : graph_(graph), watched_(std::move(watched)) {}
    const char * name() const override { return "recorder"; }
    ggml_backend_dev_t device() const override { return ggml_backend_reg_dev_get(ggml_backend_cpu_reg(), 0); }
    bool can_access(ggml_backend_buffer_type_t) const override { return true; }
    ggml_status compute_native(std::span<const ggx::NativeNode> batch, const ggx::Workspace &) override {
        for (const ggx::NativeNode & n : batch)
            nodes.push_back(n.node);
        use_counts.clear();
        for (const ggml_tensor * t : watched_)
            use_counts.push_back(ggml_graph_get_use_count(graph_, t));
        return GGML_STATUS_SUCCESS;
    }

    std::vector<const ggml_tensor *> nodes;
    std::vector<int> use_counts;

private:
    const ggml_cgraph * graph_;
    std::vector<const ggml_tensor *> watched_;
};

// The spec sentence above: a range runs the graph's own nodes (no segment graph is built), so
// while it executes the graph reports its whole consumer counts, including consumers outside the
// range, and the backend receives exactly the range's computed nodes.
TEST(GraphRange, TheRangeKeepsTheWholeGraphsUseCounts) {
    ChainGraph g(6);
    const int n = ggml_graph_n_nodes(g.graph);
    const int whole_h = ggml_graph_get_use_count(g.graph, g.h);
    ASSERT_GE(whole_h, 3);  // the view, norm and mul read h
    const int whole_x = ggml_graph_get_use_count(g.graph, g.x);
    RecordingBackend recorder(g.graph, {g.h, g.x, g.out});
    ggml_backend_t backend = &recorder;

    // Only the matmul: h's consumers all lie outside the range.
    ASSERT_EQ(ggml_backend_graph_compute_range(backend, g.graph, 0, 1), GGML_STATUS_SUCCESS);
    ASSERT_EQ(recorder.nodes.size(), 1u);
    EXPECT_EQ(recorder.nodes[0], ggml_graph_node(g.graph, 0));
    EXPECT_EQ(recorder.use_counts, (std::vector<int>{whole_h, whole_x, 0}));

    // The tail: out is the last node and has no consumers; h is still counted in full.
    recorder.nodes.clear();
    ASSERT_EQ(ggml_backend_graph_compute_range(backend, g.graph, n - 2, n), GGML_STATUS_SUCCESS);
    ASSERT_EQ(recorder.nodes.size(), 2u);
    EXPECT_EQ(recorder.nodes[1], g.out);
    EXPECT_EQ(recorder.use_counts, (std::vector<int>{whole_h, whole_x, 0}));
}

}  // namespace
