// ggml_ext_graph_delay (spec "Fusion", ../shared/spec/ggml-extensions.md, the paragraph on optimize):
// accepted moves, every refusal, an optimize callback that makes a pair fusable in the scheduler, and
// a randomized check that accepted moves never change results. Each test quotes the sentence it checks.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml-graph.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "ext/mul_add_rule.h"
#include "support/test_util.h"

namespace ggx::test {
namespace {

// A graph under construction: inputs x, y, z ([16, 4] F32) and the nodes the test adds.
struct Builder {
    Builder() {
        for (auto [t, name] : {std::pair{&x, "x"}, {&y, "y"}, {&z, "z"}}) {
            *t = ggml_new_tensor_2d(c(), GGML_TYPE_F32, 16, 4);
            ggml_set_name(*t, name);
        }
    }
    ggml_tensor * named(ggml_tensor * t, const char * name) {
        ggml_set_name(t, name);
        return t;
    }
    // Expands the tensors in the given order: with every node listed, the node order is this order.
    ggml_cgraph * build(std::initializer_list<ggml_tensor *> tensors) {
        ggml_cgraph * g = ggml_new_graph(c());
        for (ggml_tensor * t : tensors)
            ggml_build_forward_expand(g, t);
        return g;
    }
    ggml_context * c() { return ctx.get(); }

    Context ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    ggml_tensor *x, *y, *z;
};

std::vector<std::string> order(const ggml_cgraph * g) {
    std::vector<std::string> names;
    for (int i = 0; i < ggml_graph_n_nodes(g); ++i)
        names.emplace_back(ggml_graph_node(g, i)->name);
    return names;
}

// Everything a move must leave alone (and, when refused, the order too).
struct Snapshot {
    explicit Snapshot(const ggml_cgraph * g) {
        for (int i = 0; i < ggml_graph_n_nodes(g); ++i)
            take(g, ggml_graph_node(g, i), nodes);
        for (int i = 0; i < ggml_graph_n_leafs(g); ++i)
            take(g, ggml_graph_leaf(g, i), leafs);
    }
    struct Entry {
        const ggml_tensor * tensor;
        int use_count;
        std::vector<unsigned char> metadata;
    };
    static void take(const ggml_cgraph * g, const ggml_tensor * t, std::vector<Entry> & into) {
        const auto * bytes = reinterpret_cast<const unsigned char *>(t);
        into.push_back({t, ggml_graph_get_use_count(g, t), {bytes, bytes + sizeof(ggml_tensor)}});
    }
    // The same tensors with the same counts and metadata, in any node order.
    bool same_content(const Snapshot & other) const {
        auto sorted = [](std::vector<Entry> v) {
            std::sort(v.begin(), v.end(),
                      [](const Entry & a, const Entry & b) { return a.tensor < b.tensor; });
            return v;
        };
        auto equal = [](const std::vector<Entry> & a, const std::vector<Entry> & b) {
            if (a.size() != b.size()) return false;
            for (size_t i = 0; i < a.size(); ++i)
                if (a[i].tensor != b[i].tensor || a[i].use_count != b[i].use_count ||
                    a[i].metadata != b[i].metadata)
                    return false;
            return true;
        };
        return equal(sorted(nodes), sorted(other.nodes)) && equal(leafs, other.leafs);
    }
    bool same_order(const Snapshot & other) const {
        if (nodes.size() != other.nodes.size()) return false;
        for (size_t i = 0; i < nodes.size(); ++i)
            if (nodes[i].tensor != other.nodes[i].tensor) return false;
        return true;
    }
    std::vector<Entry> nodes, leafs;
};

// Every source (and storage owner) of a node that is itself a node comes before it.
::testing::AssertionResult sources_precede(const ggml_cgraph * g) {
    std::vector<const ggml_tensor *> seen;
    for (int i = 0; i < ggml_graph_n_nodes(g); ++i) {
        const ggml_tensor * node = ggml_graph_node(g, i);
        auto check = [&](const ggml_tensor * t) {
            bool is_node = false;
            for (int j = 0; j < ggml_graph_n_nodes(g); ++j)
                is_node |= ggml_graph_node(g, j) == t;
            return !t || !is_node || std::find(seen.begin(), seen.end(), t) != seen.end();
        };
        for (const ggml_tensor * src : node->src)
            if (!check(src))
                return ::testing::AssertionFailure()
                       << "'" << node->name << "' precedes its source '" << src->name << "'";
        if (!check(node->view_src))
            return ::testing::AssertionFailure() << "'" << node->name << "' precedes its storage owner";
        seen.push_back(node);
    }
    return ::testing::AssertionSuccess();
}

void expect_moved(ggml_cgraph * g, int first, int n, int after, const std::vector<std::string> & expected) {
    const Snapshot before(g);
    ASSERT_TRUE(ggml_ext_graph_delay(g, first, n, after)) << ggml_backend_get_last_error();
    EXPECT_EQ(order(g), expected);
    EXPECT_TRUE(sources_precede(g));
    EXPECT_TRUE(Snapshot(g).same_content(before));
}

// Refused with an error containing every fragment; the graph is unchanged.
void expect_refused(ggml_cgraph * g, int first, int n, int after,
                    std::initializer_list<std::string> fragments) {
    const Snapshot before(g);
    EXPECT_FALSE(ggml_ext_graph_delay(g, first, n, after));
    const std::string error = ggml_backend_get_last_error();
    EXPECT_TRUE(contains(error, "ggml_ext_graph_delay")) << error;
    for (const std::string & part : fragments)
        EXPECT_TRUE(contains(error, part)) << "missing '" << part << "' in: " << error;
    const Snapshot after_call(g);
    EXPECT_TRUE(after_call.same_order(before));
    EXPECT_TRUE(after_call.same_content(before));
}

// "Use ggml_ext_graph_delay to move a producer range after independent nodes." and "Reordering must
// preserve edges and tensor metadata."
TEST(GraphDelay, MovesAProducerRangeAfterIndependentNodes) {
    Builder b;
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_tensor * m2 = b.named(ggml_sqr(b.c(), m), "m2");
    ggml_tensor * s1 = b.named(ggml_sqr(b.c(), b.z), "s1");
    ggml_tensor * s2 = b.named(ggml_scale(b.c(), b.y, 2.0f), "s2");
    ggml_tensor * out = b.named(ggml_add(b.c(), m2, s2), "out");
    ggml_cgraph * g = b.build({m, m2, s1, s2, out});
    ASSERT_EQ(order(g), (std::vector<std::string>{"m", "m2", "s1", "s2", "out"}));
    const int uses_of_m = ggml_graph_get_use_count(g, m);
    expect_moved(g, 0, 2, 3, {"s1", "s2", "m", "m2", "out"});  // a range of two after two nodes
    expect_moved(g, 0, 1, 1, {"s2", "s1", "m", "m2", "out"});  // a single node after one
    EXPECT_EQ(ggml_graph_get_use_count(g, m), uses_of_m);
    EXPECT_EQ(ggml_graph_get_use_count(g, out), 0);
    EXPECT_TRUE(ggml_graph_contains(g, m2));
    EXPECT_EQ(ggml_graph_node(g, -1), out);
}

// "The helper rejects dependencies" (a crossed node reading the moved range's result directly)
TEST(GraphDelay, RefusesACrossedNodeReadingAMovedResult) {
    Builder b;
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_tensor * s = b.named(ggml_sqr(b.c(), b.z), "s");
    ggml_tensor * c = b.named(ggml_sqr(b.c(), m), "c");
    ggml_cgraph * g = b.build({m, s, c});
    expect_refused(g, 0, 1, 2, {"crossed node 2 'c'", "reads the result of moved node 0 'm'"});
    expect_moved(g, 0, 1, 1, {"s", "m", "c"});  // up to, not past, the consumer
}

// "The helper rejects dependencies" (through a view: a crossed view of a moved result, and a crossed
// node reading a moved view)
TEST(GraphDelay, RefusesDependenciesThroughViews) {
    Builder b;
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_tensor * v = b.named(ggml_view_2d(b.c(), m, 16, 2, m->nb[1], 0), "v");
    ggml_tensor * c = b.named(ggml_sqr(b.c(), v), "c");
    ggml_cgraph * g = b.build({m, v, c});
    expect_refused(g, 0, 1, 1, {"crossed node 1 'v'", "is a view of moved node 0 'm'", "must follow"});
    expect_refused(g, 0, 2, 2, {"crossed node 2 'c'", "reads the result of moved node 1 'v'"});
}

// "The helper rejects dependencies" (through shared storage written in place: a crossed node reading
// another view of the storage a moved node writes in place; byte ranges are compared, so a view of
// other rows of the same storage does not depend on it)
TEST(GraphDelay, RefusesDependenciesThroughSharedStorageWrittenInPlace) {
    Builder b;
    ggml_tensor * rows01 = b.named(ggml_view_2d(b.c(), b.x, 16, 2, b.x->nb[1], 0), "rows01");
    ggml_tensor * rows12 = b.named(ggml_view_2d(b.c(), b.x, 16, 2, b.x->nb[1], b.x->nb[1]), "rows12");
    ggml_tensor * rows23 = b.named(ggml_view_2d(b.c(), b.x, 16, 2, b.x->nb[1], 2 * b.x->nb[1]), "rows23");
    ggml_tensor * half = b.named(ggml_view_2d(b.c(), b.y, 16, 2, b.y->nb[1], 0), "half");
    ggml_tensor * w = b.named(ggml_add_inplace(b.c(), rows01, half), "w");  // writes rows 0, 1 of x
    ggml_tensor * overlapping = b.named(ggml_sqr(b.c(), rows12), "overlapping");
    ggml_tensor * disjoint = b.named(ggml_sqr(b.c(), rows23), "disjoint");
    ggml_cgraph * g = b.build({rows01, rows12, rows23, half, w, disjoint, overlapping});
    ASSERT_EQ(order(g), (std::vector<std::string>{"rows01", "rows12", "rows23", "half", "w", "disjoint",
                                                  "overlapping"}));
    expect_refused(g, 4, 1, 6,
                   {"crossed node 6 'overlapping'", "reads storage that moved node 4 'w'", "writes in place",
                    "'rows12'"});
    expect_moved(g, 4, 1, 5, {"rows01", "rows12", "rows23", "half", "disjoint", "w", "overlapping"});
}

// "The helper rejects ... unknown side effects" (CPU callback nodes, crossed or moved)
TEST(GraphDelay, RefusesCpuCallbackNodes) {
    Builder b;
    ggml_tensor * inputs[] = {b.z};
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_tensor * cb = b.named(
        ggml_custom_4d(
            b.c(), GGML_TYPE_F32, 16, 4, 1, 1, inputs, 1, [](ggml_tensor *, int, int, void *) {}, 1, nullptr),
        "callback");
    ggml_tensor * s = b.named(ggml_sqr(b.c(), b.z), "s");
    ggml_cgraph * g = b.build({m, cb, s});
    expect_refused(g, 0, 1, 1, {"crossed node 1 'callback'", "unknown side effects"});
    expect_refused(g, 1, 1, 2, {"moved node 1 'callback'", "unknown side effects"});
}

// "The helper rejects ... writes that alias moved inputs" (a crossed in-place op or copy writing
// storage a moved node reads)
TEST(GraphDelay, RefusesACrossedWriteAliasingAMovedInput) {
    Builder b;
    ggml_tensor * m = b.named(ggml_sqr(b.c(), b.x), "m");
    ggml_tensor * w = b.named(ggml_scale_inplace(b.c(), b.x, 2.0f), "w");
    ggml_cgraph * g = b.build({m, w});
    expect_refused(g, 0, 1, 1,
                   {"crossed node 1 'w'", "writes storage that aliases input 'x' of moved node 0 'm'"});

    Builder copy;
    ggml_tensor * m2 = copy.named(ggml_sqr(copy.c(), copy.x), "m");
    ggml_tensor * into_x = copy.named(ggml_cpy(copy.c(), copy.y, copy.x), "into_x");
    ggml_cgraph * g2 = copy.build({m2, into_x});
    expect_refused(g2, 0, 1, 1, {"crossed node 1 'into_x'", "aliases input 'x' of moved node 0 'm'"});
}

// "The helper rejects ... writes that alias moved ... outputs" (a crossed copy into storage a moved
// copy writes, and a crossed in-place write into a moved result)
TEST(GraphDelay, RefusesACrossedWriteAliasingAMovedOutput) {
    Builder b;
    ggml_tensor * rows01 = b.named(ggml_view_2d(b.c(), b.z, 16, 2, b.z->nb[1], 0), "rows01");
    ggml_tensor * rows12 = b.named(ggml_view_2d(b.c(), b.z, 16, 2, b.z->nb[1], b.z->nb[1]), "rows12");
    ggml_tensor * xh = b.named(ggml_view_2d(b.c(), b.x, 16, 2, b.x->nb[1], 0), "xh");
    ggml_tensor * yh = b.named(ggml_view_2d(b.c(), b.y, 16, 2, b.y->nb[1], 0), "yh");
    ggml_tensor * first = b.named(ggml_cpy(b.c(), xh, rows01), "first");
    ggml_tensor * second = b.named(ggml_cpy(b.c(), yh, rows12), "second");  // rows 1, 2 of z: overlaps
    ggml_cgraph * g = b.build({rows01, rows12, xh, yh, first, second});
    expect_refused(
        g, 4, 1, 5,
        {"crossed node 5 'second'", "writes storage that aliases the output of moved node 4 'first'"});

    Builder inplace;
    ggml_tensor * m = inplace.named(ggml_mul(inplace.c(), inplace.x, inplace.y), "m");
    ggml_tensor * w = inplace.named(ggml_scale_inplace(inplace.c(), m, 2.0f), "w");
    ggml_cgraph * g2 = inplace.build({m, w});
    expect_refused(g2, 0, 1, 1, {"crossed node 1 'w'", "moved node 0 'm'"});
}

// "Reordering must preserve edges" (a moved in-place write into storage that a crossed node reads:
// the crossed node would see the old values)
TEST(GraphDelay, RefusesAMovedInPlaceWriteIntoStorageACrossedNodeReads) {
    Builder b;
    ggml_tensor * w = b.named(ggml_scale_inplace(b.c(), b.x, 2.0f), "w");
    ggml_tensor * c = b.named(ggml_sqr(b.c(), b.x), "c");
    ggml_cgraph * g = b.build({w, c});
    expect_refused(g, 0, 1, 1,
                   {"crossed node 1 'c'", "reads storage that moved node 0 'w' (SCALE) writes in place"});
}

// The contract's ranges: n >= 1, 0 <= first, first + n <= after < n_nodes; a graph view shares the
// node array of the graph it views and is refused.
TEST(GraphDelay, RefusesBadRangesAndGraphViews) {
    Builder b;
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_tensor * s = b.named(ggml_sqr(b.c(), b.z), "s");
    ggml_tensor * t = b.named(ggml_sqr(b.c(), b.y), "t");
    ggml_cgraph * g = b.build({m, s, t});
    expect_refused(g, 0, 0, 1, {"at least one node"});
    expect_refused(g, -1, 1, 1, {"0 <= first"});
    expect_refused(g, 0, 1, 0, {"first + n <= after"});  // nothing crossed
    expect_refused(g, 0, 2, 1, {"first + n <= after"});
    expect_refused(g, 0, 1, 3, {"after < n_nodes (3)"});
    expect_refused(g, 2, 2, 3, {"after < n_nodes"});
    EXPECT_FALSE(ggml_ext_graph_delay(nullptr, 0, 1, 1));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "NULL"));

    ggml_cgraph * view = ggml_graph_view(b.c(), g, 0, 3);
    ASSERT_NE(view, nullptr);
    const std::vector<std::string> before = order(g);
    EXPECT_FALSE(ggml_ext_graph_delay(view, 0, 1, 1));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "a graph view cannot be reordered"))
        << ggml_backend_get_last_error();
    EXPECT_EQ(order(g), before);
}

// "It can cross independent copies and known in-place operators when their storage does not alias the
// moved inputs or outputs. Owning dtype conversions can also be moved or crossed."
TEST(GraphDelay, CrossesIndependentCopiesInPlaceOperatorsAndCasts) {
    Builder b;
    ggml_tensor * dst = ggml_new_tensor_2d(b.c(), GGML_TYPE_F32, 16, 4);
    ggml_set_name(dst, "dst");
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_tensor * copy = b.named(ggml_cpy(b.c(), b.y, dst), "copy");                   // reads y, as m does
    ggml_tensor * dup = b.named(ggml_dup(b.c(), b.x), "dup");                          // owning copy
    ggml_tensor * inplace = b.named(ggml_scale_inplace(b.c(), b.z, 3.0f), "inplace");  // writes z
    ggml_tensor * cast = b.named(ggml_cast(b.c(), b.y, GGML_TYPE_F16), "cast");
    ggml_tensor * out = b.named(ggml_add(b.c(), m, inplace), "out");
    ggml_cgraph * g = b.build({m, copy, dup, inplace, cast, out});
    expect_moved(g, 0, 1, 4, {"copy", "dup", "inplace", "cast", "m", "out"});
}

// "Owning dtype conversions can also be moved or crossed." (the moved range holds a cast)
TEST(GraphDelay, MovesARangeContainingACast) {
    Builder b;
    ggml_tensor * half = b.named(ggml_cast(b.c(), b.x, GGML_TYPE_F16), "half");
    ggml_tensor * back = b.named(ggml_cast(b.c(), half, GGML_TYPE_F32), "back");
    ggml_tensor * s = b.named(ggml_sqr(b.c(), b.y), "s");
    ggml_tensor * inplace = b.named(ggml_scale_inplace(b.c(), b.z, 3.0f), "inplace");
    ggml_tensor * out = b.named(ggml_add(b.c(), back, s), "out");
    ggml_cgraph * g = b.build({half, back, s, inplace, out});
    expect_moved(g, 0, 2, 3, {"s", "inplace", "half", "back", "out"});
    // A cast is an owning copy: an in-place write into its source still conflicts.
    Builder conflict;
    ggml_tensor * c = conflict.named(ggml_cast(conflict.c(), conflict.x, GGML_TYPE_F16), "cast");
    ggml_tensor * w = conflict.named(ggml_sqr_inplace(conflict.c(), conflict.x), "w");
    ggml_cgraph * g2 = conflict.build({c, w});
    expect_refused(g2, 0, 1, 1, {"crossed node 1 'w'", "aliases input 'x' of moved node 0 'cast'"});
}

// ---------------------------------------------------------------------------------------------
// Through the scheduler: a mul+add rule on a virtual device whose optimize callback delays the MUL
// to just before the ADD that reads it.

// Small integers: products and sums are exact, fused or not.
std::vector<float> integers(int64_t n, int modulus, int shift) {
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>(static_cast<int>(i) % modulus - shift);
    return v;
}

// out = p * q + sqr(r), built as [m = p * q, s = sqr(r), out]: the MUL is not next to its ADD until
// optimize delays it past s. With `exposed`, a later node also reads m, so fusing is illegal.
struct DelayGraph {
    explicit DelayGraph(bool exposed) {
        for (auto [t, name] : {std::pair{&p, "p"}, {&q, "q"}, {&r, "r"}}) {
            *t = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 64);
            ggml_set_name(*t, name);
            ggml_set_input(*t);
        }
        m = ggml_mul(ctx.get(), p, q);
        ggml_set_name(m, "m");
        s = ggml_sqr(ctx.get(), r);
        ggml_set_name(s, "s");
        out = ggml_add(ctx.get(), s, m);
        ggml_set_name(out, "out");
        ggml_set_output(out);
        graph = ggml_new_graph(ctx.get());
        for (ggml_tensor * t : {m, s, out})
            ggml_build_forward_expand(graph, t);
        if (exposed) {
            later = ggml_sqr(ctx.get(), m);
            ggml_set_name(later, "later");
            ggml_set_output(later);
            ggml_build_forward_expand(graph, later);
        }
    }
    void fill() {
        write_f32(p, integers(64, 7, 3));
        write_f32(q, integers(64, 5, 2));
        write_f32(r, integers(64, 3, 1));
    }
    Context ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    ggml_tensor *p, *q, *r, *m, *s, *out, *later = nullptr;
    ggml_cgraph * graph;
};

// The same graph computed natively on the CPU backend, without optimize or fusion.
std::vector<float> native_result(bool exposed, std::vector<float> * later = nullptr) {
    DelayGraph g(exposed);
    Buffer buffer(ggml_backend_alloc_ctx_tensors(g.ctx.get(), cpu_backend()));
    g.fill();
    EXPECT_EQ(ggml_backend_graph_compute(cpu_backend(), g.graph), GGML_STATUS_SUCCESS);
    if (later) *later = read_f32(g.later);
    return read_f32(g.out);
}

// "An optional optimize callback runs before matching and allocation. Use ggml_ext_graph_delay to move
// a producer range after independent nodes."
TEST(GraphDelayScheduler, OptimizeMakesAPairAdjacentAndItFuses) {
    MulAddRig rig("graph_delay_test_dev_", "delayed_mul_add", true);
    DelayGraph g(false);
    Sched sched = rig.sched();
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(rig.rule.delays, 1);
    EXPECT_EQ(order(g.graph), (std::vector<std::string>{"s", "m", "out"}));
    EXPECT_TRUE(sources_precede(g.graph));
    g.fill();
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    EXPECT_EQ(rig.rule.executes, 1);
    EXPECT_EQ(read_f32(g.out), native_result(false));
}

// "Fusion legality is checked again after reordering." (the delayed MUL has another consumer, so the
// adjacent pair is not fused)
TEST(GraphDelayScheduler, LegalityIsCheckedAgainAfterReordering) {
    MulAddRig rig("graph_delay_test_dev_", "delayed_mul_add", true);
    DelayGraph g(true);
    Sched sched = rig.sched();
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(rig.rule.delays, 1);
    EXPECT_EQ(order(g.graph), (std::vector<std::string>{"s", "m", "out", "later"}));
    EXPECT_GT(rig.rule.matches, 0);
    g.fill();
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    EXPECT_EQ(rig.rule.executes, 0);
    std::vector<float> later;
    EXPECT_EQ(read_f32(g.out), native_result(true, &later));
    EXPECT_EQ(read_f32(g.later), later);
}

// ---------------------------------------------------------------------------------------------
// Randomized: accepted moves never change any result.

// A random graph of elementwise ops, views, reshapes, transposes, in-place ops, casts and copies over
// [8, 4] F32 inputs, every tensor expanded in creation order (so the node order is creation order).
// The same seed builds the same graph in any context.
struct RandomGraph {
    explicit RandomGraph(uint32_t seed) : rng(seed) {
        ggml_context * c = ctx.get();
        std::vector<ggml_tensor *> full, rows, halfs;  // [8, 4] F32, [8, 2] F32, [8, 4] F16
        for (int i = 0; i < 3; ++i) {
            ggml_tensor * t = ggml_new_tensor_2d(c, GGML_TYPE_F32, 8, 4);
            ggml_set_name(t, ("in" + std::to_string(i)).c_str());
            inputs.push_back(t);
            full.push_back(t);
        }
        auto pick = [this](const std::vector<ggml_tensor *> & v) { return v[uniform(v.size())]; };
        auto root = [](const ggml_tensor * t) { return t->view_src ? t->view_src : t; };
        const int n_ops = 6 + static_cast<int>(uniform(10));
        for (int k = 0; k < n_ops; ++k) {
            ggml_tensor * t = nullptr;
            std::vector<ggml_tensor *> * into = &full;
            switch (uniform(9)) {
                case 0: {  // binary, fresh result
                    ggml_tensor * a = pick(full);
                    ggml_tensor * b = pick(full);
                    const int op = static_cast<int>(uniform(3));
                    t = op == 0 ? ggml_add(c, a, b) : op == 1 ? ggml_mul(c, a, b) : ggml_sub(c, a, b);
                    break;
                }
                case 1: {  // unary on a full tensor or on rows
                    const bool on_rows = !rows.empty() && uniform(2);
                    ggml_tensor * a = pick(on_rows ? rows : full);
                    t = uniform(2) ? ggml_sqr(c, a) : ggml_scale(c, a, 0.5f);
                    into = on_rows ? &rows : &full;
                    break;
                }
                case 2: {  // a view of two rows
                    ggml_tensor * a = pick(full);
                    t = ggml_view_2d(c, a, 8, 2, a->nb[1], uniform(3) * a->nb[1]);
                    into = &rows;
                    break;
                }
                case 3: {  // a reshape, or a transpose made contiguous and reshaped back
                    ggml_tensor * a = pick(full);
                    if (uniform(2)) {
                        t = ggml_reshape_2d(c, a, 8, 4);
                    } else {
                        ggml_tensor * tr = ggml_transpose(c, a);
                        nodes.push_back(tr);
                        ggml_tensor * cont = ggml_cont(c, tr);
                        nodes.push_back(cont);
                        t = ggml_reshape_2d(c, cont, 8, 4);
                    }
                    break;
                }
                case 4:
                case 5: {  // in place, on a full tensor or on rows; the second operand in other storage
                    const bool on_rows = !rows.empty() && uniform(2);
                    std::vector<ggml_tensor *> & pool = on_rows ? rows : full;
                    ggml_tensor * a = pick(pool);
                    ggml_tensor * b = pick(pool);
                    const int op = static_cast<int>(uniform(3));
                    if (op == 0 && root(a) != root(b))
                        t = ggml_add_inplace(c, a, b);
                    else
                        t = op == 1 ? ggml_sqr_inplace(c, a) : ggml_scale_inplace(c, a, -1.5f);
                    into = &pool;
                    break;
                }
                case 6: {  // casts
                    if (!halfs.empty() && uniform(2)) {
                        t = ggml_cast(c, pick(halfs), GGML_TYPE_F32);
                    } else {
                        t = ggml_cast(c, pick(full), GGML_TYPE_F16);
                        into = &halfs;
                    }
                    break;
                }
                default: {  // copies: into existing storage (other storage than the source's), dup, cont
                    const bool from_half = !halfs.empty() && uniform(2);
                    ggml_tensor * a = pick(from_half ? halfs : full);
                    ggml_tensor * dst = pick(full);
                    const int op = static_cast<int>(uniform(3));
                    if (op == 0 && root(a) != root(dst))
                        t = ggml_cpy(c, a, dst);
                    else
                        t = from_half ? ggml_cast(c, a, GGML_TYPE_F32)
                            : op == 1 ? ggml_dup(c, a)
                                      : ggml_cont(c, a);
                    break;
                }
            }
            nodes.push_back(t);
            into->push_back(t);
        }
        graph = ggml_new_graph(c);
        for (size_t i = 0; i < nodes.size(); ++i) {
            ggml_format_name(nodes[i], "t%zu %s", i, ggml_op_desc(nodes[i]));
            ggml_build_forward_expand(graph, nodes[i]);
        }
    }
    size_t uniform(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

    Context ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    std::mt19937 rng;
    std::vector<ggml_tensor *> inputs, nodes;
    ggml_cgraph * graph;
};

// Allocates every tensor (no reuse), fills the inputs from seed and computes on the CPU backend; the
// bytes of every storage owner, in context order.
std::vector<std::vector<unsigned char>> compute(RandomGraph & g, uint32_t seed, Buffer & buffer) {
    buffer.reset(ggml_backend_alloc_ctx_tensors(g.ctx.get(), cpu_backend()));
    EXPECT_NE(buffer, nullptr);
    std::mt19937 values(seed ^ 0x5bd1e995u);
    for (ggml_tensor * in : g.inputs) {
        std::vector<float> v(static_cast<size_t>(ggml_nelements(in)));
        for (float & x : v)
            x = std::uniform_real_distribution<float>(-2.0f, 2.0f)(values);
        write_f32(in, v);
    }
    EXPECT_EQ(ggml_backend_graph_compute(cpu_backend(), g.graph), GGML_STATUS_SUCCESS);
    std::vector<std::vector<unsigned char>> bytes;
    for (ggml_tensor * t = ggml_get_first_tensor(g.ctx.get()); t; t = ggml_get_next_tensor(g.ctx.get(), t)) {
        if (t->view_src) continue;
        bytes.emplace_back(ggml_nbytes(t));
        EXPECT_EQ(ggml_ext_backend_tensor_get(t, bytes.back().data(), 0, bytes.back().size()),
                  GGML_STATUS_SUCCESS);
    }
    return bytes;
}

// "Reordering must preserve edges and tensor metadata." and "The helper rejects dependencies, unknown
// side effects, and writes that alias moved inputs or outputs." (whatever it accepts computes the same
// bits as the unmoved graph)
TEST(GraphDelayRandom, AcceptedMovesLeaveResultsBitIdentical) {
    constexpr uint32_t kGraphs = 10000;  // issue 6: at least 10,000 random graphs
    int accepted = 0, refused = 0;
    for (uint32_t seed = 1; seed <= kGraphs; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        RandomGraph reference(seed), moved(seed);
        const int n_nodes = ggml_graph_n_nodes(moved.graph);
        ASSERT_EQ(n_nodes, ggml_graph_n_nodes(reference.graph));
        std::mt19937 attempts(seed * 2654435761u);
        auto below = [&attempts](int n) { return std::uniform_int_distribution<int>(0, n - 1)(attempts); };
        bool any = false;
        for (int a = 0; a < 8 && n_nodes >= 2; ++a) {
            const int first = below(n_nodes - 1);
            const int n = 1 + below(std::min(3, n_nodes - 1 - first));
            const int after = first + n + below(n_nodes - first - n);
            const Snapshot before(moved.graph);
            if (ggml_ext_graph_delay(moved.graph, first, n, after)) {
                ++accepted;
                any = true;
                ASSERT_TRUE(sources_precede(moved.graph))
                    << "after delay(" << first << ", " << n << ", " << after << ")";
                ASSERT_TRUE(Snapshot(moved.graph).same_content(before));
            } else {
                ++refused;
                ASSERT_TRUE(Snapshot(moved.graph).same_order(before));
            }
        }
        if (!any) continue;
        Buffer ref_buffer, moved_buffer;
        const auto expected = compute(reference, seed, ref_buffer);
        const auto actual = compute(moved, seed, moved_buffer);
        ASSERT_EQ(expected.size(), actual.size());
        for (size_t i = 0; i < expected.size(); ++i)
            ASSERT_TRUE(expected[i] == actual[i]) << "storage owner " << i << " differs; order "
                                                  << ::testing::PrintToString(order(moved.graph));
    }
    std::printf("graph_delay random: %d moves accepted, %d refused\n", accepted, refused);
    EXPECT_GT(accepted, 1000);
    EXPECT_GT(refused, 1000);
}

}  // namespace
}  // namespace ggx::test
