// Unit tests for include/ggml-graph.h against the spec section "Public graph access"
// (../shared/spec/ggml-extensions.md). Each test names, in a comment, the spec sentence it checks.
//
// Not covered here: "backend execution of a node range" and "Range execution uses already allocated
// tensors and retains the original graph's consumer counts." (ggml-backend.h, not ggml-graph.h), and
// "Workspace measurement, graph cuts, and evaluation callbacks use these APIs." (users of the API).
#include <ggml-graph.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct CtxFree {
    void operator()(ggml_context * c) const { ggml_free(c); }
};
using Ctx = std::unique_ptr<ggml_context, CtxFree>;

Ctx new_ctx() {
    ggml_init_params p{};
    p.mem_size = 16 << 20;
    p.mem_buffer = nullptr;
    p.no_alloc = true;
    return Ctx(ggml_init(p));
}

std::vector<ggml_tensor *> all_nodes(const ggml_cgraph * g) {
    std::vector<ggml_tensor *> r;
    for (int i = 0; i < ggml_graph_n_nodes(g); ++i)
        r.push_back(ggml_graph_node(g, i));
    return r;
}

std::vector<ggml_tensor *> all_leafs(const ggml_cgraph * g) {
    std::vector<ggml_tensor *> r;
    for (int i = 0; i < ggml_graph_n_leafs(g); ++i)
        r.push_back(ggml_graph_leaf(g, i));
    return r;
}

// Everything observable about a graph through the public API, to check "unchanged".
struct Snapshot {
    std::vector<ggml_tensor *> nodes, leafs;
    std::vector<int> node_uses, leaf_uses;
    bool valid = false;
    bool operator==(const Snapshot &) const = default;
};

Snapshot snapshot(const ggml_cgraph * g) {
    Snapshot s;
    s.nodes = all_nodes(g);
    s.leafs = all_leafs(g);
    for (ggml_tensor * t : s.nodes)
        s.node_uses.push_back(ggml_graph_get_use_count(g, t));
    for (ggml_tensor * t : s.leafs)
        s.leaf_uses.push_back(ggml_graph_get_use_count(g, t));
    s.valid = ggml_graph_is_valid(g);
    return s;
}

ggml_tensor * input(ggml_context * ctx, const char * name) {
    ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
    EXPECT_NE(t, nullptr);
    return ggml_set_name(t, name);
}

// The source graph used by most tests:
//   c = a + b; d = c * c; e = d + a; v = view(c); f = sqr(v)
// expanded from e, then f: nodes c, d, e, v, f; leafs a, b.
// Use counts: a 2 (c, e); b 1; c 3 (d twice, v); d 1; e 0; v 1; f 0.
struct Source {
    Ctx ctx;
    ggml_tensor *a, *b, *c, *d, *e, *v, *f;
    ggml_cgraph * graph;
};

std::unique_ptr<Source> make_source() {
    auto s = std::make_unique<Source>();
    s->ctx = new_ctx();
    EXPECT_NE(s->ctx, nullptr);
    ggml_context * ctx = s->ctx.get();
    s->a = input(ctx, "a");
    s->b = input(ctx, "b");
    s->c = ggml_set_name(ggml_add(ctx, s->a, s->b), "c");
    s->d = ggml_set_name(ggml_mul(ctx, s->c, s->c), "d");
    s->e = ggml_set_name(ggml_add(ctx, s->d, s->a), "e");
    s->v = ggml_set_name(ggml_view_1d(ctx, s->c, 4, 16), "v");
    s->f = ggml_set_name(ggml_sqr(ctx, s->v), "f");
    s->graph = ggml_new_graph_custom(ctx, 32, false);
    EXPECT_NE(s->graph, nullptr);
    ggml_build_forward_expand(s->graph, s->e);
    ggml_build_forward_expand(s->graph, s->f);
    return s;
}

// Caller-owned copies of a graph's tensors in a separate context, with storage and edges remapped.
struct Mirror {
    Ctx ctx;
    std::unordered_map<const ggml_tensor *, ggml_tensor *> image;

    static ggml_tensor * map(const ggml_tensor * original, void * user_data) {
        auto * m = static_cast<Mirror *>(user_data);
        auto it = m->image.find(original);
        return it == m->image.end() ? nullptr : it->second;
    }

    ggml_tensor * copy_of(const ggml_tensor * t) { return image.count(t) ? image.at(t) : nullptr; }

    // Copies t (and, first, its sources and storage owner) unless already copied.
    ggml_tensor * add(const ggml_tensor * t) {
        if (!t) return nullptr;
        if (image.count(t)) return image.at(t);
        ggml_tensor * owner = add(t->view_src);
        ggml_tensor * srcs[GGML_MAX_SRC] = {};
        for (int i = 0; i < GGML_MAX_SRC; ++i)
            srcs[i] = add(t->src[i]);
        ggml_tensor * c = ggml_dup_tensor(ctx.get(), t);
        EXPECT_NE(c, nullptr);
        for (int i = 0; i < GGML_MAX_DIMS; ++i)
            c->nb[i] = t->nb[i];
        c->op = t->op;
        std::memcpy(c->op_params, t->op_params, sizeof c->op_params);
        for (int i = 0; i < GGML_MAX_SRC; ++i)
            c->src[i] = srcs[i];
        c->view_src = owner;
        c->view_offs = t->view_offs;
        ggml_format_name(c, "%s'", t->name);
        image[t] = c;
        return c;
    }

    static std::unique_ptr<Mirror> of(const ggml_cgraph * g) {
        auto m = std::make_unique<Mirror>();
        m->ctx = new_ctx();
        EXPECT_NE(m->ctx, nullptr);
        for (ggml_tensor * t : all_leafs(g))
            m->add(t);
        for (ggml_tensor * t : all_nodes(g))
            m->add(t);
        return m;
    }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// "ggml-graph.h exposes leaf enumeration, ..."

TEST(GraphAccessLeafs, Enumeration) {
    // Sentence: "ggml-graph.h exposes leaf enumeration".
    auto s = make_source();
    ggml_cgraph * g = s->graph;
    ASSERT_EQ(ggml_graph_n_leafs(g), 2);
    EXPECT_EQ(ggml_graph_leaf(g, 0), s->a);
    EXPECT_EQ(ggml_graph_leaf(g, 1), s->b);
    EXPECT_EQ(ggml_graph_leaf(g, -1), s->b);
    EXPECT_EQ(ggml_graph_leaf(g, -2), s->a);
    EXPECT_EQ(ggml_graph_leaf(g, 2), nullptr);
    EXPECT_EQ(ggml_graph_leaf(g, -3), nullptr);
    ggml_tensor ** leafs = ggml_graph_leafs(g);
    ASSERT_NE(leafs, nullptr);
    EXPECT_EQ(leafs[0], s->a);
    EXPECT_EQ(leafs[1], s->b);
    // Leafs are tensors without an op; every node has one.
    for (ggml_tensor * t : all_leafs(g))
        EXPECT_EQ(t->op, GGML_OP_NONE);
    EXPECT_EQ(all_nodes(g), (std::vector<ggml_tensor *>{s->c, s->d, s->e, s->v, s->f}));
}

TEST(GraphAccessLeafs, Contains) {
    // Sentence: "ggml-graph.h exposes leaf enumeration" (membership of nodes and leafs, including
    // through a view of the graph).
    auto s = make_source();
    ggml_tensor * other = input(s->ctx.get(), "other");
    EXPECT_TRUE(ggml_graph_contains(s->graph, s->a));
    EXPECT_TRUE(ggml_graph_contains(s->graph, s->d));
    EXPECT_TRUE(ggml_graph_contains(s->graph, s->f));
    EXPECT_FALSE(ggml_graph_contains(s->graph, other));
    ggml_cgraph * view = ggml_graph_view(s->ctx.get(), s->graph, 1, 2);
    ASSERT_NE(view, nullptr);
    EXPECT_TRUE(ggml_graph_contains(view, s->a));  // a leaf of the viewed graph
    EXPECT_TRUE(ggml_graph_contains(view, s->e));  // a node outside the range, in the viewed graph
    EXPECT_FALSE(ggml_graph_contains(view, other));
}

// ---------------------------------------------------------------------------------------------
// "... append-only leaf construction, ..."

TEST(GraphAccessAddLeaf, AppendsInOrder) {
    // Sentence: "ggml-graph.h exposes ... append-only leaf construction".
    Ctx ctx = new_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * x = input(ctx.get(), "x");
    ggml_tensor * y = input(ctx.get(), "y");
    ggml_cgraph * g = ggml_new_graph_custom(ctx.get(), 4, false);
    ASSERT_NE(g, nullptr);
    EXPECT_TRUE(ggml_graph_add_leaf(g, x));
    EXPECT_TRUE(ggml_graph_add_leaf(g, y));
    EXPECT_EQ(all_leafs(g), (std::vector<ggml_tensor *>{x, y}));
    EXPECT_EQ(ggml_graph_n_nodes(g), 0);
    EXPECT_TRUE(ggml_graph_contains(g, x));
    EXPECT_EQ(ggml_graph_get_use_count(g, x), 0);
    // Expanding a consumer reuses the existing leaf instead of adding it again.
    ggml_tensor * s = ggml_add(ctx.get(), x, y);
    ggml_build_forward_expand(g, s);
    EXPECT_EQ(all_leafs(g), (std::vector<ggml_tensor *>{x, y}));
    EXPECT_EQ(all_nodes(g), std::vector<ggml_tensor *>{s});
    EXPECT_EQ(ggml_graph_get_use_count(g, x), 1);
    EXPECT_TRUE(ggml_graph_is_valid(g));
    EXPECT_EQ(ggml_get_error(ctx.get()), nullptr);
    // Leafs are removed only by ggml_graph_clear.
    ggml_graph_clear(g);
    EXPECT_EQ(ggml_graph_n_leafs(g), 0);
    EXPECT_FALSE(ggml_graph_contains(g, x));
    EXPECT_TRUE(ggml_graph_add_leaf(g, y));
    EXPECT_EQ(all_leafs(g), std::vector<ggml_tensor *>{y});
}

TEST(GraphAccessAddLeaf, RejectsDuplicates) {
    // Sentence: "ggml-graph.h exposes ... append-only leaf construction" (a tensor already in the
    // graph is refused; the graph is unchanged and the reason recorded).
    auto s = make_source();
    const Snapshot before = snapshot(s->graph);
    EXPECT_FALSE(ggml_graph_add_leaf(s->graph, s->a));  // leaf added by build_forward_expand
    EXPECT_EQ(snapshot(s->graph), before);
    EXPECT_NE(ggml_get_error(s->ctx.get()), nullptr);
    ggml_clear_error(s->ctx.get());

    ggml_tensor * x = input(s->ctx.get(), "x");
    EXPECT_TRUE(ggml_graph_add_leaf(s->graph, x));
    const Snapshot with_x = snapshot(s->graph);
    EXPECT_EQ(with_x.leafs.back(), x);
    EXPECT_FALSE(ggml_graph_add_leaf(s->graph, x));  // leaf added by add_leaf
    EXPECT_EQ(snapshot(s->graph), with_x);
    EXPECT_NE(ggml_get_error(s->ctx.get()), nullptr);
}

TEST(GraphAccessAddLeaf, RejectsOpNodes) {
    // Sentence: "ggml-graph.h exposes ... append-only leaf construction" (tensors with an op are
    // nodes, never leafs; refused with the graph unchanged).
    auto s = make_source();
    const Snapshot before = snapshot(s->graph);
    EXPECT_FALSE(ggml_graph_add_leaf(s->graph, s->d));  // a node of the graph
    EXPECT_EQ(snapshot(s->graph), before);
    EXPECT_NE(ggml_get_error(s->ctx.get()), nullptr);
    ggml_clear_error(s->ctx.get());

    ggml_tensor * fresh = ggml_sqr(s->ctx.get(), s->a);  // an op tensor not in the graph
    ASSERT_NE(fresh, nullptr);
    EXPECT_FALSE(ggml_graph_add_leaf(s->graph, fresh));
    EXPECT_EQ(snapshot(s->graph), before);
    EXPECT_NE(ggml_get_error(s->ctx.get()), nullptr);
    ggml_clear_error(s->ctx.get());

    ggml_tensor * view = ggml_view_1d(s->ctx.get(), s->a, 2, 0);  // a view has op VIEW
    ASSERT_NE(view, nullptr);
    EXPECT_FALSE(ggml_graph_add_leaf(s->graph, view));
    EXPECT_EQ(snapshot(s->graph), before);
    EXPECT_NE(ggml_get_error(s->ctx.get()), nullptr);
}

TEST(GraphAccessAddLeaf, RejectsWhenFull) {
    // Sentence: "ggml-graph.h exposes ... append-only leaf construction" (a full leaf array refuses
    // the append and leaves the graph unchanged).
    Ctx ctx = new_ctx();
    ASSERT_NE(ctx, nullptr);
    ggml_tensor * x = input(ctx.get(), "x");
    ggml_tensor * y = input(ctx.get(), "y");
    ggml_tensor * z = input(ctx.get(), "z");
    ggml_cgraph * g = ggml_new_graph_custom(ctx.get(), 2, false);
    ASSERT_NE(g, nullptr);
    EXPECT_TRUE(ggml_graph_add_leaf(g, x));
    EXPECT_TRUE(ggml_graph_add_leaf(g, y));
    const Snapshot before = snapshot(g);
    EXPECT_FALSE(ggml_graph_add_leaf(g, z));
    EXPECT_EQ(snapshot(g), before);
    EXPECT_FALSE(ggml_graph_contains(g, z));
    EXPECT_NE(ggml_get_error(ctx.get()), nullptr);
}

// ---------------------------------------------------------------------------------------------
// "... recorded use counts, ..."

TEST(GraphAccessUseCounts, RecordedPerSourceSlot) {
    // Sentence: "ggml-graph.h exposes ... recorded use counts".
    auto s = make_source();
    ggml_cgraph * g = s->graph;
    EXPECT_EQ(ggml_graph_get_use_count(g, s->a), 2);
    EXPECT_EQ(ggml_graph_get_use_count(g, s->b), 1);
    EXPECT_EQ(ggml_graph_get_use_count(g, s->c), 3);
    EXPECT_EQ(ggml_graph_get_use_count(g, s->d), 1);
    EXPECT_EQ(ggml_graph_get_use_count(g, s->e), 0);
    EXPECT_EQ(ggml_graph_get_use_count(g, s->v), 1);
    EXPECT_EQ(ggml_graph_get_use_count(g, s->f), 0);
    ggml_tensor * other = input(s->ctx.get(), "other");
    EXPECT_EQ(ggml_graph_get_use_count(g, other), 0);
}

TEST(GraphAccessUseCounts, ViewReportsWholeGraphCounts) {
    // Sentence: "ggml-graph.h exposes ... recorded use counts" (a graph view reports the counts of
    // the whole graph, consumers outside the view included).
    auto s = make_source();
    ggml_cgraph * view = ggml_graph_view(s->ctx.get(), s->graph, 0, 2);  // c, d
    ASSERT_NE(view, nullptr);
    EXPECT_EQ(all_nodes(view), (std::vector<ggml_tensor *>{s->c, s->d}));
    EXPECT_EQ(ggml_graph_get_use_count(view, s->c), 3);  // d twice inside, v outside
    EXPECT_EQ(ggml_graph_get_use_count(view, s->d), 1);  // e, outside
    EXPECT_EQ(ggml_graph_get_use_count(view, s->a), 2);  // c inside, e outside
}

// ---------------------------------------------------------------------------------------------
// "Mapped copies retain node order and consumer counts from the original graph, including
//  consumers outside a graph view."

TEST(GraphAccessCopyMapped, RetainsOrderAndCounts) {
    // Sentence: "Mapped copies retain node order and consumer counts from the original graph".
    auto s = make_source();
    auto m = Mirror::of(s->graph);
    ggml_cgraph * dst = ggml_new_graph_custom(s->ctx.get(), 32, false);
    ASSERT_NE(dst, nullptr);
    ASSERT_TRUE(ggml_graph_copy_mapped(dst, s->graph, Mirror::map, m.get())) << ggml_get_error(s->ctx.get());
    const auto src_nodes = all_nodes(s->graph);
    const auto src_leafs = all_leafs(s->graph);
    ASSERT_EQ(ggml_graph_n_nodes(dst), int(src_nodes.size()));
    ASSERT_EQ(ggml_graph_n_leafs(dst), int(src_leafs.size()));
    for (size_t i = 0; i < src_nodes.size(); ++i) {
        EXPECT_EQ(ggml_graph_node(dst, int(i)), m->copy_of(src_nodes[i])) << i;
        EXPECT_EQ(ggml_graph_get_use_count(dst, m->copy_of(src_nodes[i])),
                  ggml_graph_get_use_count(s->graph, src_nodes[i]))
            << ggml_get_name(src_nodes[i]);
    }
    for (size_t i = 0; i < src_leafs.size(); ++i) {
        EXPECT_EQ(ggml_graph_leaf(dst, int(i)), m->copy_of(src_leafs[i])) << i;
        EXPECT_EQ(ggml_graph_get_use_count(dst, m->copy_of(src_leafs[i])),
                  ggml_graph_get_use_count(s->graph, src_leafs[i]))
            << ggml_get_name(src_leafs[i]);
    }
    // The copies are in dst, the originals are not.
    EXPECT_TRUE(ggml_graph_contains(dst, m->copy_of(s->c)));
    EXPECT_FALSE(ggml_graph_contains(dst, s->c));
    EXPECT_EQ(ggml_graph_get_use_count(dst, s->c), 0);
    EXPECT_EQ(ggml_graph_get_tensor(dst, "c'"), m->copy_of(s->c));
    // The source graph is untouched.
    EXPECT_EQ(all_nodes(s->graph), src_nodes);
    EXPECT_EQ(ggml_graph_get_use_count(s->graph, s->c), 3);
    EXPECT_EQ(ggml_get_error(s->ctx.get()), nullptr);
}

TEST(GraphAccessCopyMapped, ViewKeepsOutsideConsumers) {
    // Sentence: "Mapped copies retain ... consumer counts from the original graph, including
    // consumers outside a graph view."
    auto s = make_source();
    auto m = Mirror::of(s->graph);
    ggml_cgraph * view = ggml_graph_view(s->ctx.get(), s->graph, 1, 3);  // d, e
    ASSERT_NE(view, nullptr);
    ggml_cgraph * dst = ggml_new_graph_custom(s->ctx.get(), 8, false);
    ASSERT_NE(dst, nullptr);
    ASSERT_TRUE(ggml_graph_copy_mapped(dst, view, Mirror::map, m.get())) << ggml_get_error(s->ctx.get());
    EXPECT_EQ(all_nodes(dst), (std::vector<ggml_tensor *>{m->copy_of(s->d), m->copy_of(s->e)}));
    EXPECT_EQ(ggml_graph_n_leafs(dst), 0);  // a view has no leafs
    // d is consumed by e (inside); counts come from the whole graph in any case.
    EXPECT_EQ(ggml_graph_get_use_count(dst, m->copy_of(s->d)), 1);
    EXPECT_EQ(ggml_graph_get_use_count(dst, m->copy_of(s->e)), 0);

    // A view of c alone: c's consumers d (twice) and v are all outside the view.
    ggml_cgraph * first = ggml_graph_view(s->ctx.get(), s->graph, 0, 1);
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(ggml_graph_copy_mapped(dst, first, Mirror::map, m.get())) << ggml_get_error(s->ctx.get());
    EXPECT_EQ(all_nodes(dst), std::vector<ggml_tensor *>{m->copy_of(s->c)});
    EXPECT_EQ(ggml_graph_get_use_count(dst, m->copy_of(s->c)), 3);
    // The previous contents were replaced.
    EXPECT_FALSE(ggml_graph_contains(dst, m->copy_of(s->d)));
    EXPECT_EQ(ggml_graph_get_use_count(dst, m->copy_of(s->d)), 0);
}

TEST(GraphAccessCopyMapped, ReplacesPreviousContents) {
    // Sentence: "Mapped copies retain node order and consumer counts from the original graph"
    // (on success the destination holds exactly the mapped source).
    auto s = make_source();
    auto m = Mirror::of(s->graph);
    // dst first holds an unrelated graph.
    ggml_tensor * x = input(s->ctx.get(), "x");
    ggml_tensor * y = ggml_add(s->ctx.get(), x, x);
    ggml_cgraph * dst = ggml_new_graph_custom(s->ctx.get(), 32, false);
    ASSERT_NE(dst, nullptr);
    ggml_build_forward_expand(dst, y);
    ASSERT_TRUE(ggml_graph_copy_mapped(dst, s->graph, Mirror::map, m.get())) << ggml_get_error(s->ctx.get());
    EXPECT_EQ(ggml_graph_n_nodes(dst), ggml_graph_n_nodes(s->graph));
    EXPECT_EQ(ggml_graph_n_leafs(dst), ggml_graph_n_leafs(s->graph));
    EXPECT_FALSE(ggml_graph_contains(dst, x));
    EXPECT_FALSE(ggml_graph_contains(dst, y));
    EXPECT_EQ(ggml_graph_get_use_count(dst, x), 0);
    EXPECT_EQ(ggml_graph_node(dst, 0), m->copy_of(s->c));
}

// ---------------------------------------------------------------------------------------------
// "The caller owns tensor copies and remaps their storage and edges; invalid mappings leave the
//  destination graph unchanged."

TEST(GraphAccessCopyMapped, CallerOwnsCopies) {
    // Sentence: "The caller owns tensor copies and remaps their storage and edges".
    auto s = make_source();
    auto m = Mirror::of(s->graph);
    ggml_cgraph * dst = ggml_new_graph_custom(s->ctx.get(), 32, false);
    ASSERT_NE(dst, nullptr);
    ASSERT_TRUE(ggml_graph_copy_mapped(dst, s->graph, Mirror::map, m.get()));
    // The copies are exactly the caller's tensors, with the caller's edges and storage, untouched.
    ggml_tensor * cd = ggml_graph_get_tensor(dst, "d'");
    ASSERT_EQ(cd, m->copy_of(s->d));
    EXPECT_EQ(cd->src[0], m->copy_of(s->c));
    EXPECT_EQ(cd->src[1], m->copy_of(s->c));
    ggml_tensor * cv = m->copy_of(s->v);
    EXPECT_EQ(cv->view_src, m->copy_of(s->c));
    EXPECT_EQ(cv->view_offs, 16u);
    // The copies live in the caller's context; freeing the source context leaves them usable.
    bool found = false;
    for (ggml_tensor * t = ggml_get_first_tensor(m->ctx.get()); t;
         t = ggml_get_next_tensor(m->ctx.get(), t)) {
        found = found || t == cd;
    }
    EXPECT_TRUE(found);
}

namespace {

// Runs an invalid copy and checks dst (pre-filled with a valid copy of `prefill`) is unchanged.
void expect_refused(Source & s, ggml_cgraph * dst, const ggml_cgraph * src, Mirror & m, const char * what) {
    const Snapshot before = snapshot(dst);
    ggml_clear_error(s.ctx.get());
    EXPECT_FALSE(ggml_graph_copy_mapped(dst, src, Mirror::map, &m)) << what;
    EXPECT_EQ(snapshot(dst), before) << what;
    EXPECT_NE(ggml_get_error(s.ctx.get()), nullptr) << what;
    ggml_clear_error(s.ctx.get());
}

// A destination graph already holding a valid mapped copy of a small unrelated graph.
ggml_cgraph * prefilled_dst(Source & s, size_t size, std::unique_ptr<Mirror> & keep) {
    ggml_tensor * x = input(s.ctx.get(), "x");
    ggml_tensor * y = ggml_sqr(s.ctx.get(), x);
    ggml_cgraph * small = ggml_new_graph_custom(s.ctx.get(), 4, false);
    EXPECT_NE(small, nullptr);
    ggml_build_forward_expand(small, y);
    keep = Mirror::of(small);
    ggml_cgraph * dst = ggml_new_graph_custom(s.ctx.get(), size, false);
    EXPECT_NE(dst, nullptr);
    EXPECT_TRUE(ggml_graph_copy_mapped(dst, small, Mirror::map, keep.get()));
    EXPECT_EQ(ggml_graph_n_nodes(dst), 1);
    return dst;
}

}  // namespace

TEST(GraphAccessCopyMapped, NullImageLeavesDestinationUnchanged) {
    // Sentence: "invalid mappings leave the destination graph unchanged" (a NULL image).
    auto s = make_source();
    std::unique_ptr<Mirror> keep;
    ggml_cgraph * dst = prefilled_dst(*s, 32, keep);
    {
        auto m = Mirror::of(s->graph);
        m->image.erase(s->e);  // a node without an image
        expect_refused(*s, dst, s->graph, *m, "node image NULL");
    }
    {
        auto m = Mirror::of(s->graph);
        m->image.erase(s->b);  // a leaf without an image
        expect_refused(*s, dst, s->graph, *m, "leaf image NULL");
    }
}

TEST(GraphAccessCopyMapped, RepeatedImageLeavesDestinationUnchanged) {
    // Sentence: "invalid mappings leave the destination graph unchanged" (a repeated image).
    auto s = make_source();
    std::unique_ptr<Mirror> keep;
    ggml_cgraph * dst = prefilled_dst(*s, 32, keep);
    {
        auto m = Mirror::of(s->graph);
        m->image[s->f] = m->image[s->e];  // two nodes, one image
        expect_refused(*s, dst, s->graph, *m, "two nodes share an image");
    }
    {
        auto m = Mirror::of(s->graph);
        m->image[s->b] = m->image[s->a];  // two leafs, one image
        expect_refused(*s, dst, s->graph, *m, "two leafs share an image");
    }
}

TEST(GraphAccessCopyMapped, EdgeNotRemappedLeavesDestinationUnchanged) {
    // Sentence: "The caller ... remaps their storage and edges; invalid mappings leave the
    // destination graph unchanged" (an edge still naming the original, or the wrong copy).
    auto s = make_source();
    std::unique_ptr<Mirror> keep;
    ggml_cgraph * dst = prefilled_dst(*s, 32, keep);
    {
        auto m = Mirror::of(s->graph);
        m->copy_of(s->d)->src[1] = s->c;  // still the original
        expect_refused(*s, dst, s->graph, *m, "edge to the original node");
    }
    {
        auto m = Mirror::of(s->graph);
        m->copy_of(s->c)->src[0] = s->a;  // still the original leaf
        expect_refused(*s, dst, s->graph, *m, "edge to the original leaf");
    }
    {
        auto m = Mirror::of(s->graph);
        m->copy_of(s->e)->src[0] = m->copy_of(s->c);  // a copy, but not the image of d
        expect_refused(*s, dst, s->graph, *m, "edge to the wrong copy");
    }
    {
        auto m = Mirror::of(s->graph);
        m->copy_of(s->e)->src[1] = nullptr;  // a dropped edge
        expect_refused(*s, dst, s->graph, *m, "edge dropped");
    }
}

TEST(GraphAccessCopyMapped, TooSmallDestinationLeftUnchanged) {
    // Sentence: "invalid mappings leave the destination graph unchanged" (too small a destination).
    auto s = make_source();
    std::unique_ptr<Mirror> keep;
    ggml_cgraph * dst = prefilled_dst(*s, 4, keep);  // 5 nodes do not fit
    auto m = Mirror::of(s->graph);
    expect_refused(*s, dst, s->graph, *m, "destination too small");
    // With room for everything, the same mapping succeeds.
    ggml_cgraph * big = ggml_new_graph_custom(s->ctx.get(), 5, false);
    ASSERT_NE(big, nullptr);
    EXPECT_TRUE(ggml_graph_copy_mapped(big, s->graph, Mirror::map, m.get())) << ggml_get_error(s->ctx.get());
}

// ---------------------------------------------------------------------------------------------
// "... use-count copying for segments, ..."

TEST(GraphAccessCopyUseCounts, SegmentTakesSourceCounts) {
    // Sentence: "ggml-graph.h exposes ... use-count copying for segments".
    auto s = make_source();
    ggml_context * ctx = s->ctx.get();
    ggml_tensor * y = ggml_sqr(ctx, s->e);  // not in the source graph
    ggml_tensor * z = input(ctx, "z");      // not in the source graph
    ggml_cgraph * seg = ggml_new_graph_custom(ctx, 16, false);
    ASSERT_NE(seg, nullptr);
    ggml_build_forward_expand(seg, s->d);  // c, d; leafs a, b
    ggml_build_forward_expand(seg, y);     // e, y
    ASSERT_TRUE(ggml_graph_add_leaf(seg, z));
    // Counts recorded for the segment alone.
    EXPECT_EQ(ggml_graph_get_use_count(seg, s->c), 2);
    EXPECT_EQ(ggml_graph_get_use_count(seg, s->e), 1);
    const auto nodes_before = all_nodes(seg);
    const auto leafs_before = all_leafs(seg);

    ggml_graph_copy_use_counts(seg, s->graph);
    EXPECT_EQ(ggml_graph_get_use_count(seg, s->a), 2);
    EXPECT_EQ(ggml_graph_get_use_count(seg, s->b), 1);
    EXPECT_EQ(ggml_graph_get_use_count(seg, s->c), 3);  // v is outside the segment
    EXPECT_EQ(ggml_graph_get_use_count(seg, s->d), 1);
    EXPECT_EQ(ggml_graph_get_use_count(seg, s->e), 0);  // the source has no consumer of e
    EXPECT_EQ(ggml_graph_get_use_count(seg, y), 0);     // absent from the source
    EXPECT_EQ(ggml_graph_get_use_count(seg, z), 0);     // absent from the source
    // Only counts change.
    EXPECT_EQ(all_nodes(seg), nodes_before);
    EXPECT_EQ(all_leafs(seg), leafs_before);
    // The source is untouched.
    EXPECT_EQ(ggml_graph_get_use_count(s->graph, s->c), 3);
    EXPECT_FALSE(ggml_graph_contains(s->graph, y));
}

TEST(GraphAccessCopyUseCounts, SourceMayBeAView) {
    // Sentence: "ggml-graph.h exposes ... use-count copying for segments" (from a graph view, the
    // counts are those of the whole viewed graph).
    auto s = make_source();
    ggml_cgraph * view = ggml_graph_view(s->ctx.get(), s->graph, 0, 2);
    ASSERT_NE(view, nullptr);
    ggml_cgraph * seg = ggml_new_graph_custom(s->ctx.get(), 8, false);
    ASSERT_NE(seg, nullptr);
    ggml_build_forward_expand(seg, s->c);
    EXPECT_EQ(ggml_graph_get_use_count(seg, s->c), 0);
    ggml_graph_copy_use_counts(seg, view);
    EXPECT_EQ(ggml_graph_get_use_count(seg, s->c), 3);
    EXPECT_EQ(ggml_graph_get_use_count(seg, s->a), 2);
}
