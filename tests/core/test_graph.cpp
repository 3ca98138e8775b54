// Unit tests for graphs: creation and sizing, ggml_build_forward_expand (topological order, each
// tensor once, leafs vs nodes, COMPUTE flag), use counts, invalid graphs (NULL tensor, overflow),
// graph views, copies, clearing, node access and lookup, ggml_graph_add_node.
#include <ggml-graph.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace {

struct CtxFree {
    void operator()(ggml_context * c) const { ggml_free(c); }
};
using Ctx = std::unique_ptr<ggml_context, CtxFree>;

Ctx make_ctx(size_t mem_size = 16 << 20) {
    ggml_init_params p{};
    p.mem_size = mem_size;
    p.mem_buffer = nullptr;
    p.no_alloc = true;
    return Ctx(ggml_init(p));
}

std::vector<ggml_tensor *> nodes_of(const ggml_cgraph * g) {
    std::vector<ggml_tensor *> r;
    for (int i = 0; i < ggml_graph_n_nodes(g); ++i)
        r.push_back(ggml_graph_node(g, i));
    return r;
}

std::vector<ggml_tensor *> leafs_of(const ggml_cgraph * g) {
    std::vector<ggml_tensor *> r;
    for (int i = 0; i < ggml_graph_n_leafs(g); ++i)
        r.push_back(ggml_graph_leaf(g, i));
    return r;
}

int index_in(const std::vector<ggml_tensor *> & v, const ggml_tensor * t) {
    auto it = std::find(v.begin(), v.end(), t);
    return it == v.end() ? -1 : int(it - v.begin());
}

// Structural invariants of any valid graph built by ggml_build_forward_expand.
void expect_well_formed(const ggml_cgraph * g) {
    const auto nodes = nodes_of(g);
    const auto leafs = leafs_of(g);
    std::set<const ggml_tensor *> seen;
    for (const ggml_tensor * n : nodes) {
        ASSERT_NE(n, nullptr);
        EXPECT_TRUE(seen.insert(n).second) << "node twice: " << ggml_get_name(n);
        EXPECT_NE(n->op, GGML_OP_NONE) << "node without op: " << ggml_get_name(n);
        EXPECT_NE(n->flags & GGML_TENSOR_FLAG_COMPUTE, 0)
            << "node without COMPUTE flag: " << ggml_get_name(n);
    }
    for (const ggml_tensor * l : leafs) {
        ASSERT_NE(l, nullptr);
        EXPECT_TRUE(seen.insert(l).second) << "tensor twice: " << ggml_get_name(l);
        EXPECT_EQ(l->op, GGML_OP_NONE) << "leaf with op: " << ggml_get_name(l);
    }
    // Sources precede their consumers; sources without an op are leafs.
    for (size_t i = 0; i < nodes.size(); ++i) {
        for (int s = 0; s < GGML_MAX_SRC; ++s) {
            const ggml_tensor * src = nodes[i]->src[s];
            if (!src) continue;
            if (src->op == GGML_OP_NONE) {
                EXPECT_GE(index_in(leafs, src), 0) << ggml_get_name(src) << " is not a leaf";
            } else {
                const int j = index_in(nodes, src);
                EXPECT_GE(j, 0) << ggml_get_name(src) << " is not a node";
                EXPECT_LT(j, int(i)) << ggml_get_name(src) << " after its consumer "
                                     << ggml_get_name(nodes[i]);
            }
        }
    }
}

ggml_tensor * leaf(ggml_context * ctx, const char * name, int64_t n = 8) {
    ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
    EXPECT_NE(t, nullptr);
    return ggml_set_name(t, name);
}

ggml_tensor * named(ggml_tensor * t, const char * name) {
    EXPECT_NE(t, nullptr) << name;
    return t ? ggml_set_name(t, name) : t;
}

// A diamond-shaped DAG with a view, a reshape and a copy:
//   d = a + b; e = d * c; v = view(e); s = sqr(v); r = reshape(s); out = r + d; k = cpy(out, dst)
struct Dag {
    ggml_tensor *a, *b, *c, *dst;
    ggml_tensor *d, *e, *v, *s, *r, *out, *k;
};

Dag make_dag(ggml_context * ctx) {
    Dag g{};
    g.a = leaf(ctx, "a");
    g.b = leaf(ctx, "b");
    g.c = leaf(ctx, "c", 1);
    g.dst = ggml_set_name(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 4, 2), "dst");
    g.d = named(ggml_add(ctx, g.a, g.b), "d");
    g.e = named(ggml_mul(ctx, g.d, g.c), "e");
    g.v = named(ggml_view_1d(ctx, g.e, 8, 0), "v");
    g.s = named(ggml_sqr(ctx, g.v), "s");
    g.r = named(ggml_reshape_2d(ctx, g.s, 4, 2), "r");
    g.out = named(ggml_add(ctx, ggml_reshape_1d(ctx, g.r, 8), g.d), "out");
    g.k = named(ggml_cpy(ctx, g.out, g.dst), "k");
    return g;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Creation

TEST(GraphNew, DefaultAndCustomSizes) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    size_t before = ggml_used_mem(ctx.get());
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(ggml_used_mem(ctx.get()) - before, ggml_graph_overhead());
    EXPECT_EQ(ggml_graph_size(g), GGML_DEFAULT_GRAPH_SIZE);
    EXPECT_EQ(ggml_graph_n_nodes(g), 0);
    EXPECT_EQ(ggml_graph_n_leafs(g), 0);
    EXPECT_TRUE(ggml_graph_is_valid(g));
    EXPECT_EQ(ggml_graph_node(g, 0), nullptr);
    EXPECT_EQ(ggml_graph_node(g, -1), nullptr);

    before = ggml_used_mem(ctx.get());
    ggml_cgraph * small = ggml_new_graph_custom(ctx.get(), 16, false);
    ASSERT_NE(small, nullptr);
    EXPECT_EQ(ggml_used_mem(ctx.get()) - before, ggml_graph_overhead_custom(16, false));
    EXPECT_EQ(ggml_graph_size(small), 16);
    EXPECT_TRUE(ggml_graph_is_valid(small));

    EXPECT_EQ(ggml_graph_overhead(), ggml_graph_overhead_custom(GGML_DEFAULT_GRAPH_SIZE, false));
    EXPECT_LT(ggml_graph_overhead_custom(16, false), ggml_graph_overhead_custom(32, false));
    // Gradient slots (ggml's grads flag) take their room (tests/core/test_backward.cpp).
    EXPECT_GT(ggml_graph_overhead_custom(16, true), ggml_graph_overhead_custom(16, false));
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
}

TEST(GraphNew, ArenaFullGivesNullAndError) {
    Ctx ctx = make_ctx(ggml_graph_overhead_custom(64, false) / 2);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(ggml_new_graph_custom(ctx.get(), 64, false), nullptr);
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
    ggml_clear_error(ctx.get());
    EXPECT_EQ(ggml_new_graph(ctx.get()), nullptr);
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
}

// ---------------------------------------------------------------------------------------------
// ggml_build_forward_expand

TEST(GraphBuild, TopologicalOrderLeafsAndNodes) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    Dag d = make_dag(ctx.get());
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, d.k);
    EXPECT_TRUE(ggml_graph_is_valid(g));
    expect_well_formed(g);

    const auto nodes = nodes_of(g);
    const auto leafs = leafs_of(g);
    // 8 nodes: d, e, v, s, r, reshape_1d(r), out, k. View-like ops are nodes.
    EXPECT_EQ(nodes.size(), 8u);
    for (ggml_tensor * t : {d.d, d.e, d.v, d.s, d.r, d.out, d.k}) {
        EXPECT_GE(index_in(nodes, t), 0) << ggml_get_name(t);
    }
    // 4 leafs: the op-less inputs, including the copy destination.
    EXPECT_EQ(leafs.size(), 4u);
    for (ggml_tensor * t : {d.a, d.b, d.c, d.dst})
        EXPECT_GE(index_in(leafs, t), 0) << ggml_get_name(t);
    EXPECT_EQ(ggml_graph_node(g, -1), d.k);
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
    // Leafs are not computed.
    for (ggml_tensor * t : leafs)
        EXPECT_EQ(t->flags & GGML_TENSOR_FLAG_COMPUTE, 0) << ggml_get_name(t);
}

TEST(GraphBuild, EachTensorOnce) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    Dag d = make_dag(ctx.get());
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, d.out);
    const int n_nodes = ggml_graph_n_nodes(g);
    const int n_leafs = ggml_graph_n_leafs(g);
    EXPECT_EQ(n_leafs, 3);
    // Expanding again, or a tensor already inside, adds nothing.
    ggml_build_forward_expand(g, d.out);
    ggml_build_forward_expand(g, d.e);
    ggml_build_forward_expand(g, d.a);
    EXPECT_EQ(ggml_graph_n_nodes(g), n_nodes);
    EXPECT_EQ(ggml_graph_n_leafs(g), n_leafs);
    // A second output adds only what is new, after what is there.
    const auto before = nodes_of(g);
    ggml_build_forward_expand(g, d.k);
    const auto after = nodes_of(g);
    ASSERT_EQ(after.size(), before.size() + 1);
    EXPECT_TRUE(std::equal(before.begin(), before.end(), after.begin()));
    EXPECT_EQ(after.back(), d.k);
    EXPECT_EQ(ggml_graph_n_leafs(g), n_leafs + 1);  // dst
    expect_well_formed(g);
    EXPECT_TRUE(ggml_graph_is_valid(g));
}

TEST(GraphBuild, OplessTensorIsLeaf) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = leaf(ctx.get(), "a");
    ggml_cgraph * g = ggml_new_graph_custom(ctx.get(), 8, false);
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, a);
    EXPECT_EQ(ggml_graph_n_nodes(g), 0);
    ASSERT_EQ(ggml_graph_n_leafs(g), 1);
    EXPECT_EQ(ggml_graph_leaf(g, 0), a);
    EXPECT_TRUE(ggml_graph_is_valid(g));
}

TEST(GraphBuild, InPlaceAndPermuteNodes) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = ggml_new_tensor_3d(ctx.get(), GGML_TYPE_F32, 4, 3, 2);
    ggml_tensor * p = ggml_permute(ctx.get(), a, 1, 0, 2, 3);
    ggml_tensor * t = ggml_transpose(ctx.get(), p);
    ggml_tensor * i = ggml_scale_inplace(ctx.get(), t, 2.0f);
    ggml_tensor * c = ggml_cont(ctx.get(), i);
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, c);
    const std::vector<ggml_tensor *> expected = {p, t, i, c};
    EXPECT_EQ(nodes_of(g), expected);
    EXPECT_EQ(leafs_of(g), std::vector<ggml_tensor *>{a});
    expect_well_formed(g);
}

// ---------------------------------------------------------------------------------------------
// Use counts

TEST(GraphUseCounts, CountsSourceSlots) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = leaf(ctx.get(), "a");
    ggml_tensor * b = leaf(ctx.get(), "b");
    ggml_tensor * x = ggml_add(ctx.get(), a, a);         // a: 2
    ggml_tensor * y = ggml_mul(ctx.get(), x, b);         // x: 1, b: 1
    ggml_tensor * z = ggml_add(ctx.get(), y, x);         // y: 1, x: 2
    ggml_tensor * w = ggml_add(ctx.get(), z, a);         // z: 1, a: 3
    ggml_tensor * v = ggml_view_1d(ctx.get(), z, 4, 0);  // z: 2
    ggml_tensor * u = ggml_sqr(ctx.get(), v);            // v: 1
    ggml_tensor * unrelated = leaf(ctx.get(), "unrelated");
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, w);
    ggml_build_forward_expand(g, u);
    EXPECT_EQ(ggml_graph_get_use_count(g, a), 3);
    EXPECT_EQ(ggml_graph_get_use_count(g, b), 1);
    EXPECT_EQ(ggml_graph_get_use_count(g, x), 2);
    EXPECT_EQ(ggml_graph_get_use_count(g, y), 1);
    EXPECT_EQ(ggml_graph_get_use_count(g, z), 2);
    EXPECT_EQ(ggml_graph_get_use_count(g, v), 1);
    EXPECT_EQ(ggml_graph_get_use_count(g, w), 0);
    EXPECT_EQ(ggml_graph_get_use_count(g, u), 0);
    EXPECT_EQ(ggml_graph_get_use_count(g, unrelated), 0);
    // Re-expanding does not count twice.
    ggml_build_forward_expand(g, w);
    EXPECT_EQ(ggml_graph_get_use_count(g, a), 3);
}

TEST(GraphUseCounts, SelfAddCountsTwo) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = leaf(ctx.get(), "a");
    ggml_tensor * s = ggml_add(ctx.get(), a, a);
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, s);
    EXPECT_EQ(ggml_graph_get_use_count(g, a), 2);
    EXPECT_EQ(ggml_graph_n_leafs(g), 1);
    EXPECT_EQ(ggml_graph_n_nodes(g), 1);
}

// ---------------------------------------------------------------------------------------------
// Invalid graphs

TEST(GraphInvalid, NullTensorMakesGraphInvalid) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = leaf(ctx.get(), "a");
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, ggml_sqr(ctx.get(), a));
    EXPECT_TRUE(ggml_graph_is_valid(g));
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
    ggml_build_forward_expand(g, nullptr);
    EXPECT_FALSE(ggml_graph_is_valid(g));
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
    // It stays invalid.
    ggml_clear_error(ctx.get());
    ggml_build_forward_expand(g, ggml_sqrt(ctx.get(), a));
    EXPECT_FALSE(ggml_graph_is_valid(g));
}

TEST(GraphInvalid, FailedConstructorMakesGraphInvalid) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 4, 3);
    ggml_tensor * b = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 3, 3);
    ggml_tensor * bad = ggml_sqr(ctx.get(), ggml_add(ctx.get(), a, b));
    EXPECT_EQ(bad, nullptr);
    const std::string first = ggml_get_error(ctx.get());
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, bad);
    EXPECT_FALSE(ggml_graph_is_valid(g));
    // The root cause stays the recorded error.
    EXPECT_EQ(std::string(ggml_get_error(ctx.get())), first);
    EXPECT_NE(first.find("ggml_add"), std::string::npos);
}

TEST(GraphInvalid, NodeOverflow) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * x = leaf(ctx.get(), "x");
    ggml_tensor * t = x;
    for (int i = 0; i < 5; ++i)
        t = ggml_sqr(ctx.get(), t);
    ASSERT_NE(t, nullptr);
    ggml_cgraph * g = ggml_new_graph_custom(ctx.get(), 2, false);
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, t);
    EXPECT_FALSE(ggml_graph_is_valid(g));
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
    EXPECT_LE(ggml_graph_n_nodes(g), 2);
    EXPECT_LE(ggml_graph_n_leafs(g), 2);
}

TEST(GraphInvalid, LeafOverflow) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = leaf(ctx.get(), "a");
    ggml_tensor * b = leaf(ctx.get(), "b");
    ggml_tensor * c = leaf(ctx.get(), "c");
    ggml_tensor * s = ggml_add(ctx.get(), ggml_add(ctx.get(), a, b), c);  // 2 nodes, 3 leafs
    ggml_cgraph * g = ggml_new_graph_custom(ctx.get(), 2, false);
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, s);
    EXPECT_FALSE(ggml_graph_is_valid(g));
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
    EXPECT_LE(ggml_graph_n_leafs(g), 2);
}

TEST(GraphInvalid, ExactFitIsValid) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * x = leaf(ctx.get(), "x");
    ggml_tensor * t = ggml_sqr(ctx.get(), ggml_sqr(ctx.get(), x));
    ggml_cgraph * g = ggml_new_graph_custom(ctx.get(), 2, false);
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, t);
    EXPECT_TRUE(ggml_graph_is_valid(g));
    EXPECT_EQ(ggml_graph_n_nodes(g), 2);
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
}

// ---------------------------------------------------------------------------------------------
// Graph views

TEST(GraphView, RangeSharesNodesAndUseCounts) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = leaf(ctx.get(), "a");
    ggml_tensor * n0 = ggml_sqr(ctx.get(), a);
    ggml_tensor * n1 = ggml_add(ctx.get(), n0, a);
    ggml_tensor * n2 = ggml_mul(ctx.get(), n1, n1);
    ggml_tensor * n3 = ggml_add(ctx.get(), n2, n0);
    ggml_tensor * n4 = ggml_add(ctx.get(), n3, n1);
    ggml_tensor * n5 = ggml_sqrt(ctx.get(), n4);
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, n5);
    ASSERT_EQ(nodes_of(g), (std::vector<ggml_tensor *>{n0, n1, n2, n3, n4, n5}));

    ggml_cgraph * v = ggml_graph_view(ctx.get(), g, 1, 4);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(ggml_graph_n_nodes(v), 3);
    EXPECT_EQ(nodes_of(v), (std::vector<ggml_tensor *>{n1, n2, n3}));
    EXPECT_EQ(ggml_graph_node(v, -1), n3);
    EXPECT_EQ(ggml_graph_node(v, 3), nullptr);
    EXPECT_EQ(ggml_graph_n_leafs(v), 0);
    EXPECT_TRUE(ggml_graph_is_valid(v));
    // Whole-graph counts, consumers outside the view included.
    EXPECT_EQ(ggml_graph_get_use_count(v, n1), 3);  // n2 twice + n4
    EXPECT_EQ(ggml_graph_get_use_count(v, n3), 1);  // n4, outside the view
    EXPECT_EQ(ggml_graph_get_use_count(v, n0), 2);  // not in the view; n1 and n3
    EXPECT_EQ(ggml_graph_get_use_count(v, n2), ggml_graph_get_use_count(g, n2));

    ggml_cgraph * all = ggml_graph_view(ctx.get(), g, 0, 6);
    ASSERT_NE(all, nullptr);
    EXPECT_EQ(nodes_of(all), nodes_of(g));
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
}

TEST(GraphView, BadRangesGiveNull) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * t = leaf(ctx.get(), "a");
    for (int i = 0; i < 4; ++i)
        t = ggml_sqr(ctx.get(), t);
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, t);
    ASSERT_EQ(ggml_graph_n_nodes(g), 4);
    EXPECT_EQ(ggml_graph_view(ctx.get(), g, -1, 2), nullptr);
    EXPECT_EQ(ggml_graph_view(ctx.get(), g, 3, 1), nullptr);
    EXPECT_EQ(ggml_graph_view(ctx.get(), g, 0, 5), nullptr);
    EXPECT_EQ(ggml_graph_view(ctx.get(), g, 5, 6), nullptr);
    EXPECT_EQ(ggml_graph_view(ctx.get(), g, 2, 100), nullptr);
}

// ---------------------------------------------------------------------------------------------
// Copy, clear

TEST(GraphCpy, CopiesNodesLeafsAndUseCounts) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    Dag d = make_dag(ctx.get());
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, d.k);
    ggml_cgraph * c = ggml_new_graph_custom(ctx.get(), 32, false);
    ASSERT_NE(c, nullptr);
    ggml_graph_cpy(g, c);
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
    EXPECT_EQ(nodes_of(c), nodes_of(g));
    EXPECT_EQ(leafs_of(c), leafs_of(g));
    for (ggml_tensor * t : nodes_of(g))
        EXPECT_EQ(ggml_graph_get_use_count(c, t), ggml_graph_get_use_count(g, t));
    for (ggml_tensor * t : leafs_of(g))
        EXPECT_EQ(ggml_graph_get_use_count(c, t), ggml_graph_get_use_count(g, t));
    EXPECT_TRUE(ggml_graph_is_valid(c));
    EXPECT_EQ(ggml_graph_get_tensor(c, "out"), d.out);
    // The copy is independent: growing it leaves the original alone.
    ggml_tensor * extra = ggml_sqr(ctx.get(), d.out);
    ggml_build_forward_expand(c, extra);
    EXPECT_EQ(ggml_graph_n_nodes(c), ggml_graph_n_nodes(g) + 1);
    EXPECT_EQ(ggml_graph_get_use_count(c, d.out), ggml_graph_get_use_count(g, d.out) + 1);
}

TEST(GraphCpy, TooSmallDestinationFails) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    Dag d = make_dag(ctx.get());
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, d.k);
    ggml_cgraph * c = ggml_new_graph_custom(ctx.get(), 4, false);
    ASSERT_NE(c, nullptr);
    ggml_graph_cpy(g, c);
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
    EXPECT_EQ(ggml_graph_n_nodes(c), 0);
}

TEST(GraphClear, RemovesNodesAndLeafs) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    Dag d = make_dag(ctx.get());
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, d.k);
    const auto nodes = nodes_of(g);
    const auto leafs = leafs_of(g);
    ggml_graph_clear(g);
    EXPECT_EQ(ggml_graph_n_nodes(g), 0);
    EXPECT_EQ(ggml_graph_n_leafs(g), 0);
    EXPECT_EQ(ggml_graph_node(g, 0), nullptr);
    EXPECT_EQ(ggml_graph_get_tensor(g, "out"), nullptr);
    EXPECT_EQ(ggml_graph_get_use_count(g, d.d), 0);
    // The same tensors can be added again.
    ggml_build_forward_expand(g, d.k);
    EXPECT_EQ(nodes_of(g), nodes);
    EXPECT_EQ(leafs_of(g), leafs);
    EXPECT_EQ(ggml_graph_get_use_count(g, d.d), 2);  // e and out
}

// ---------------------------------------------------------------------------------------------
// Node access, lookup, add_node

TEST(GraphAccessors, NodeIndicesAndArray) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * t = leaf(ctx.get(), "a");
    std::vector<ggml_tensor *> chain;
    for (int i = 0; i < 4; ++i)
        chain.push_back(t = ggml_sqr(ctx.get(), t));
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, t);
    ASSERT_EQ(ggml_graph_n_nodes(g), 4);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(ggml_graph_node(g, i), chain[i]);
        EXPECT_EQ(ggml_graph_node(g, i - 4), chain[i]);
        EXPECT_EQ(ggml_graph_nodes(g)[i], chain[i]);
    }
    EXPECT_EQ(ggml_graph_node(g, -1), chain[3]);
    EXPECT_EQ(ggml_graph_node(g, 4), nullptr);
    EXPECT_EQ(ggml_graph_node(g, -5), nullptr);
    EXPECT_EQ(ggml_graph_node(g, 1000), nullptr);
}

TEST(GraphAccessors, GetTensorByName) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    Dag d = make_dag(ctx.get());
    ggml_tensor * outside = leaf(ctx.get(), "outside");
    ASSERT_NE(outside, nullptr);
    ggml_cgraph * g = ggml_new_graph(ctx.get());
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, d.out);
    EXPECT_EQ(ggml_graph_get_tensor(g, "out"), d.out);
    EXPECT_EQ(ggml_graph_get_tensor(g, "e"), d.e);
    EXPECT_EQ(ggml_graph_get_tensor(g, "a"), d.a);  // a leaf
    EXPECT_EQ(ggml_graph_get_tensor(g, "outside"), nullptr);
    EXPECT_EQ(ggml_graph_get_tensor(g, "k"), nullptr);  // not expanded
    EXPECT_EQ(ggml_graph_get_tensor(g, "missing"), nullptr);
}

TEST(GraphAccessors, AddNodeAppends) {
    Ctx ctx = make_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * a = leaf(ctx.get(), "a");
    ggml_tensor * x = ggml_sqr(ctx.get(), a);
    ggml_tensor * y = ggml_add(ctx.get(), x, x);
    ggml_tensor * z = ggml_sqrt(ctx.get(), y);
    ggml_cgraph * g = ggml_new_graph_custom(ctx.get(), 2, false);
    ASSERT_NE(g, nullptr);
    ggml_build_forward_expand(g, x);
    ASSERT_EQ(ggml_graph_n_nodes(g), 1);
    y->flags &= ~GGML_TENSOR_FLAG_COMPUTE;
    ggml_graph_add_node(g, y);
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
    EXPECT_EQ(ggml_graph_n_nodes(g), 2);
    EXPECT_EQ(ggml_graph_node(g, -1), y);
    EXPECT_NE(y->flags & GGML_TENSOR_FLAG_COMPUTE, 0);
    EXPECT_EQ(ggml_graph_get_use_count(g, x), 2);
    // Full: refused, graph unchanged.
    ggml_graph_add_node(g, z);
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
    EXPECT_EQ(ggml_graph_n_nodes(g), 2);
    EXPECT_EQ(ggml_graph_node(g, -1), y);
    EXPECT_EQ(ggml_graph_get_use_count(g, y), 0);
}
