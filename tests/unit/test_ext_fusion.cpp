// Fusion legality (spec "Fusion", ../shared/spec/ggml-extensions.md): the runtime's central check,
// ggml_ext_fusion_is_legal, with a positive and a negative case for every rule, each quoting the
// sentence it checks.
#include <ggml-ext.h>
#include <ggml-graph.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <string>

#include "unit/test_util.h"

namespace ggx::test {
namespace {

bool contains(const std::string & text, const std::string & part) {
    return text.find(part) != std::string::npos;
}

// A graph under construction: inputs x, y ([16, 4] F32) and the nodes the test adds.
struct Builder {
    Builder() {
        x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 16, 4);
        y = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 16, 4);
        ggml_set_name(x, "x");
        ggml_set_name(y, "y");
    }
    ggml_tensor * named(ggml_tensor * t, const char * name) {
        ggml_set_name(t, name);
        return t;
    }
    ggml_cgraph * build(std::initializer_list<ggml_tensor *> outputs) {
        ggml_cgraph * g = ggml_new_graph(ctx.get());
        for (ggml_tensor * t : outputs)
            ggml_build_forward_expand(g, t);
        return g;
    }
    ggml_context * c() { return ctx.get(); }

    Context ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    ggml_tensor *x, *y;
};

// Expects legality, or the named rule failing at the named node.
void expect_legal(const ggml_cgraph * g, int first, int n) {
    EXPECT_TRUE(ggml_ext_fusion_is_legal(g, first, n)) << ggml_backend_get_last_error();
}
void expect_illegal(const ggml_cgraph * g, int first, int n, const char * rule, const char * node) {
    EXPECT_FALSE(ggml_ext_fusion_is_legal(g, first, n));
    const std::string error = ggml_backend_get_last_error();
    EXPECT_TRUE(contains(error, std::string("rule '") + rule + "'")) << error;
    EXPECT_TRUE(contains(error, std::string("'") + node + "'")) << error;
}

// "A match callback returns the number of consecutive nodes it can replace." (at least two, inside
// the graph)
TEST(FusionLegality, RangesCoverAtLeastTwoNodesOfTheGraph) {
    Builder b;
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_cgraph * g = b.build({b.named(ggml_add(b.c(), m, b.x), "a")});
    expect_legal(g, 0, 2);
    EXPECT_FALSE(ggml_ext_fusion_is_legal(g, 0, 1));
    EXPECT_FALSE(ggml_ext_fusion_is_legal(g, 1, 2));
    EXPECT_FALSE(ggml_ext_fusion_is_legal(g, -1, 2));
}

// "ggml checks compute flags"
TEST(FusionLegality, EveryNodeMustBeFlaggedForComputation) {
    Builder b;
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_cgraph * g = b.build({b.named(ggml_add(b.c(), m, b.x), "a")});
    expect_legal(g, 0, 2);
    m->flags &= ~GGML_TENSOR_FLAG_COMPUTE;
    expect_illegal(g, 0, 2, "compute flags", "m");
}

// "the initial implementation accepts a conservative set of pure operators"
TEST(FusionLegality, CallbackNodesWithUnknownSideEffectsAreRefused) {
    Builder b;
    ggml_tensor * inputs[] = {b.x};
    ggml_tensor * cb = b.named(
        ggml_custom_4d(
            b.c(), GGML_TYPE_F32, 16, 4, 1, 1, inputs, 1, [](ggml_tensor *, int, int, void *) {}, 1, nullptr),
        "callback");
    ggml_cgraph * g = b.build({b.named(ggml_add(b.c(), cb, b.x), "a")});
    expect_illegal(g, 0, 2, "pure operators", "callback");
}

// "ggml checks ... external uses" and "External consumers ... still prevent eliminating those
// results." (use counts include consumers outside a graph view)
TEST(FusionLegality, IntermediatesWithExternalConsumersAreRefused) {
    Builder b;
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_tensor * a = b.named(ggml_add(b.c(), m, b.x), "a");
    ggml_tensor * later = b.named(ggml_scale(b.c(), m, 2.0f), "later");  // reads m outside [0, 2)
    ggml_cgraph * g = b.build({a, later});
    expect_illegal(g, 0, 2, "external uses", "m");

    Builder clean;
    ggml_tensor * m2 = clean.named(ggml_mul(clean.c(), clean.x, clean.y), "m");
    ggml_tensor * a2 = clean.named(ggml_add(clean.c(), m2, clean.x), "a");
    ggml_cgraph * g2 = clean.build({a2, clean.named(ggml_scale(clean.c(), a2, 2.0f), "later")});
    expect_legal(g2, 0, 2);  // the final output may have consumers

    // A view of the graph sees the consumers of the whole graph.
    ggml_cgraph * view = ggml_graph_view(b.c(), g, 0, 2);
    ASSERT_NE(view, nullptr);
    expect_illegal(view, 0, 2, "external uses", "m");
}

// "ggml checks ... output flags" and "output flags still prevent eliminating those results."
TEST(FusionLegality, OutputFlaggedIntermediatesAreRefused) {
    Builder b;
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_tensor * a = b.named(ggml_add(b.c(), m, b.x), "a");
    ggml_cgraph * g = b.build({a});
    ggml_set_output(a);
    expect_legal(g, 0, 2);  // the fused output itself may be an output
    ggml_set_output(m);
    expect_illegal(g, 0, 2, "output flags", "m");
}

// "Internal views are accepted when their storage belongs to the fused subgraph."
TEST(FusionLegality, InternalViewsOfFusedStorageOnly) {
    Builder b;
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_tensor * r = b.named(ggml_reshape_2d(b.c(), m, 32, 2), "r");
    ggml_tensor * s = b.named(ggml_scale(b.c(), r, 3.0f), "s");
    ggml_cgraph * g = b.build({s});
    expect_legal(g, 0, 3);

    Builder outside;
    ggml_tensor * rx = outside.named(ggml_reshape_2d(outside.c(), outside.x, 32, 2), "rx");  // x: not fused
    ggml_tensor * s2 = outside.named(ggml_scale(outside.c(), rx, 3.0f), "s");
    ggml_cgraph * g2 = outside.build({s2});
    expect_illegal(g2, 0, 2, "internal views", "rx");
}

// "In-place intermediates are accepted only when their storage owner is an earlier node in the same
// match."
TEST(FusionLegality, InPlaceIntermediatesOwnedInsideTheMatchOnly) {
    Builder b;
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_tensor * ip = b.named(ggml_add_inplace(b.c(), m, b.x), "ip");  // writes m: inside
    ggml_tensor * s = b.named(ggml_scale(b.c(), ip, 0.5f), "s");
    ggml_cgraph * g = b.build({s});
    expect_legal(g, 0, 3);

    Builder outside;
    ggml_tensor * ip2 = outside.named(ggml_add_inplace(outside.c(), outside.x, outside.y), "ip");  // writes x
    ggml_tensor * s2 = outside.named(ggml_scale(outside.c(), ip2, 0.5f), "s");
    ggml_cgraph * g2 = outside.build({s2});
    expect_illegal(g2, 0, 2, "in-place intermediates", "ip");
}

// "The final output must own storage, use a terminal CPY, or write back to an earlier owning node
// within the match." and "Terminal CPY keeps its original destination and write semantics."
TEST(FusionLegality, TheOutputOwnsStorageOrIsATerminalCopy) {
    Builder b;
    ggml_tensor * dst = ggml_new_tensor_2d(b.c(), GGML_TYPE_F16, 16, 4);
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_tensor * copy = b.named(ggml_cpy(b.c(), m, dst), "copy");
    ggml_cgraph * g = b.build({copy});
    expect_legal(g, 0, 2);
    EXPECT_EQ(copy->view_src, dst);
}

// "Internal writeback must cover exactly the owner's full shape, type, strides and storage offset,
// without external consumers of that owner. Output flags propagated to that owner are retained."
TEST(FusionLegality, WritebackCoversItsOwnerExactlyWithoutExternalConsumers) {
    Builder b;
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_tensor * w = b.named(ggml_scale_inplace(b.c(), m, 2.0f), "w");
    ggml_cgraph * g = b.build({w});
    expect_legal(g, 0, 2);
    ggml_set_output(m);  // an output flag on the owner the result is written back to
    expect_legal(g, 0, 2);

    Builder partial;
    ggml_tensor * m2 = partial.named(ggml_mul(partial.c(), partial.x, partial.y), "m");
    ggml_tensor * half = ggml_view_2d(partial.c(), m2, 16, 2, m2->nb[1], 0);
    ggml_tensor * w2 = partial.named(ggml_scale_inplace(partial.c(), half, 2.0f), "w");
    ggml_cgraph * g2 = partial.build({w2, m2});
    const int first = 0, n = ggml_graph_n_nodes(g2);  // m, the view, the in-place scale
    expect_illegal(g2, first, n, "writeback covers its owner exactly", "w");

    Builder shared;
    ggml_tensor * m3 = shared.named(ggml_mul(shared.c(), shared.x, shared.y), "m");
    ggml_tensor * w3 = shared.named(ggml_scale_inplace(shared.c(), m3, 2.0f), "w");
    ggml_tensor * later = shared.named(ggml_sqr(shared.c(), m3), "later");  // reads the owner outside
    ggml_cgraph * g3 = shared.build({w3, later});
    expect_illegal(g3, 0, 2, "external uses", "m");
}

// "Other in-place writes are not eligible for extension fusion when they target storage outside the
// match."
TEST(FusionLegality, InPlaceWritesOutsideTheMatchAreRefused) {
    Builder b;
    ggml_tensor * m = b.named(ggml_mul(b.c(), b.x, b.y), "m");
    ggml_tensor * w = b.named(ggml_add_inplace(b.c(), b.x, m), "w");  // writes x, outside
    ggml_cgraph * g = b.build({w});
    expect_illegal(g, 0, 2, "in-place writes stay inside the match", "w");
}

}  // namespace
}  // namespace ggx::test
