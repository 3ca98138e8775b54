// Fusion legality (spec "Fusion", ../shared/spec/ggml-extensions.md): the runtime's central check,
// ggml_ext_fusion_is_legal, with a positive and a negative case for every rule, each quoting the
// sentence it checks; fusion in the scheduler, the plan query and explain mode.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml-graph.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include "ext/mul_add_rule.h"
#include "support/test_util.h"

namespace ggx::test {
namespace {

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

// ---------------------------------------------------------------------------------------------
// Fusion in the scheduler, with a toy rule: MUL followed by an ADD that reads it, fused into
// out = a * b + c on a virtual device.

// out = sqr(p) * sqr(q) + r: two native SQR nodes, then the fusable pair.
struct MulAddGraph {
    MulAddGraph() {
        for (ggml_tensor ** t : {&p, &q, &r}) {
            *t = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 64);
            ggml_set_input(*t);
        }
        sp = ggml_sqr(ctx.get(), p);
        sq = ggml_sqr(ctx.get(), q);
        m = ggml_mul(ctx.get(), sp, sq);
        out = ggml_add(ctx.get(), r, m);  // m is src[1]: the output is never placed over it
        ggml_set_output(out);
        graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, out);
    }
    void fill() {
        write_f32(p, ramp(64, -1.0f, 0.03f));
        write_f32(q, ramp(64, 0.5f, -0.02f));
        write_f32(r, ramp(64, 2.0f, 0.01f));
    }
    std::vector<float> expected() const {
        const std::vector<float> pv = ramp(64, -1.0f, 0.03f), qv = ramp(64, 0.5f, -0.02f),
                                 rv = ramp(64, 2.0f, 0.01f);
        std::vector<float> e(64);
        for (size_t i = 0; i < e.size(); ++i)
            e[i] = rv[i] + (pv[i] * pv[i]) * (qv[i] * qv[i]);
        return e;
    }
    Context ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    ggml_tensor *p, *q, *r, *sp, *sq, *m, *out;
    ggml_cgraph * graph;
};

// "A match callback returns the number of consecutive nodes it can replace. The scheduler freezes this
// selection before allocating tensors." and "Native graph optimization and execution operate on the
// remaining contiguous ranges, so native fusion cannot consume nodes selected by an extension."
TEST(FusionExecution, MatchedRangesRunFusedAndTheRestNatively) {
    MulAddRig rig("fusion_test_dev_", "mul_add_unused", false, GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE);
    MulAddGraph g;
    Sched sched = rig.sched();
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph)) << ggml_backend_get_last_error();
    const int matches_after_alloc = rig.rule.matches;
    EXPECT_GT(matches_after_alloc, 0);
    // The rule declares it never touches the eliminated intermediate, which nothing else observes:
    // it takes no memory (so nothing could compute it either).
    EXPECT_EQ(g.m->data, nullptr);
    EXPECT_EQ(g.m->buffer, nullptr);
    g.fill();
    for (int run = 1; run <= 2; ++run) {
        ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS)
            << ggml_backend_get_last_error();
        EXPECT_EQ(rig.rule.executes, run);
    }
    EXPECT_EQ(rig.rule.matches, matches_after_alloc);  // frozen: no matching while computing
    EXPECT_EQ(read_f32(g.out), g.expected());
    EXPECT_GT(std::abs(read_f32(g.sp)[1]), 0.0f);  // the SQR nodes ran natively
}

// "Intermediate allocations are retained in this initial implementation; only their computation is
// removed." Without GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE the intermediate keeps its storage, live
// through the final node (the rule's kernel may use it as scratch), so the output is never placed
// over it; the flag frees it, and the graph's compute buffer is no larger then.
TEST(FusionExecution, IntermediatesKeepTheirStorageUnlessTheRuleDeclaresItUnused) {
    MulAddRig retained_rig("fusion_test_dev_", "mul_add", false);
    MulAddGraph retained;
    Sched retained_sched = retained_rig.sched();
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(retained_sched.get(), retained.graph))
        << ggml_backend_get_last_error();
    ASSERT_GT(retained_rig.rule.matches, 0);
    ASSERT_NE(retained.m->data, nullptr);
    EXPECT_NE(retained.m->buffer, nullptr);
    const char * m = static_cast<const char *>(retained.m->data);
    const char * out = static_cast<const char *>(retained.out->data);
    EXPECT_TRUE(out + ggml_nbytes(retained.out) <= m || m + ggml_nbytes(retained.m) <= out);
    retained.fill();
    ASSERT_EQ(ggml_backend_sched_graph_compute(retained_sched.get(), retained.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(read_f32(retained.out), retained.expected());

    MulAddRig unused_rig("fusion_test_dev_", "mul_add_unused", false,
                         GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE);
    MulAddGraph unused;
    Sched unused_sched = unused_rig.sched();
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(unused_sched.get(), unused.graph));
    EXPECT_EQ(unused.m->data, nullptr);
    EXPECT_LE(ggml_backend_sched_get_buffer_size(unused_sched.get(), unused_rig.backend.get()),
              ggml_backend_sched_get_buffer_size(retained_sched.get(), retained_rig.backend.get()));
}

// GGML_EXT_FUSION_OUTPUT_IN_PLACE: the output may take the block of the input heading its chain of
// in-place operators (sqr(p) for out = sqr(p) * sqr(q) + r), where the unfused MUL and ADD would have
// been placed; without the flag that input stays apart through the final node.
TEST(FusionExecution, AnInPlaceRuleOutputMayTakeItsChainHeadsBlock) {
    for (const bool in_place : {false, true}) {
        SCOPED_TRACE(in_place ? "in place" : "apart");
        MulAddRig rig(
            "fusion_test_dev_", "mul_add_in_place", false,
            GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE | (in_place ? GGML_EXT_FUSION_OUTPUT_IN_PLACE : 0));
        MulAddGraph g;
        g.out->src[0] = g.m;  // out = m + r: m heads the ADD, sp the MUL
        g.out->src[1] = g.r;
        Sched sched = rig.sched();
        ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph)) << ggml_backend_get_last_error();
        ASSERT_GT(rig.rule.matches, 0);
        EXPECT_EQ(g.out->data == g.sp->data, in_place);
        g.fill();
        ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS);
        EXPECT_EQ(rig.rule.executes, 1);
        EXPECT_EQ(read_f32(g.out), g.expected());
    }
}

// Version 2 of the descriptor added flags: a version 1 descriptor (ending before them) registers with
// none, unknown flags are refused.
TEST(FusionRegistration, VersionOneDescriptorsAndUnknownFlags) {
    ggml_backend_dev_t dev = ggml_backend_cpu_add_virtual_device("fusion_flags_dev", nullptr, 0);
    ASSERT_NE(dev, nullptr);
    ggml_ext_fusion_desc d{};
    d.struct_size = offsetof(ggml_ext_fusion_desc, flags);
    d.version = 1;
    d.name = "flags.v1";
    d.match = match_mul_add;
    d.execute = execute_mul_add;
    d.flags = 0xdead;  // beyond the version 1 struct: never read
    EXPECT_TRUE(ggml_ext_register_fusion(dev, &d)) << ggml_backend_get_last_error();
    d.struct_size = sizeof d;
    d.version = GGML_EXT_FUSION_DESC_VERSION;
    d.name = "flags.unknown";
    d.flags = 1u << 4;
    EXPECT_FALSE(ggml_ext_register_fusion(dev, &d));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "unknown flags")) << ggml_backend_get_last_error();
}

// "External inputs stay allocated through the final node."
TEST(FusionExecution, ExternalInputsStayAllocatedThroughTheFinalNode) {
    MulAddRig rig("fusion_test_dev_", "mul_add", false);
    MulAddGraph g;
    Sched sched = rig.sched();
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph));
    for (const ggml_tensor * input : {g.sp, g.sq, g.r}) {
        const char * lo = static_cast<const char *>(input->data);
        const char * out = static_cast<const char *>(g.out->data);
        EXPECT_TRUE(out + ggml_nbytes(g.out) <= lo || lo + ggml_nbytes(input) <= out) << input->name;
    }
}

// "Automatic extension fusion is enabled in scheduler execution with one pipeline copy and without
// evaluation callbacks. Multiple pipeline copies and evaluation callbacks retain individual operations."
TEST(FusionExecution, PipelineCopiesAndEvalCallbacksKeepIndividualOperations) {
    MulAddRig rig("fusion_test_dev_", "mul_add", false);
    {
        MulAddGraph g;
        Sched parallel = rig.sched(true);
        ASSERT_TRUE(ggml_backend_sched_alloc_graph(parallel.get(), g.graph));
        g.fill();
        ASSERT_EQ(ggml_backend_sched_graph_compute(parallel.get(), g.graph), GGML_STATUS_SUCCESS);
        EXPECT_EQ(rig.rule.executes, 0);
        EXPECT_EQ(read_f32(g.out), g.expected());
    }
    MulAddGraph g;
    Sched observed = rig.sched();
    std::vector<const ggml_tensor *> seen;
    ggml_backend_sched_set_eval_callback(
        observed.get(),
        [](ggml_tensor * t, bool ask, void * user) {
            if (!ask) static_cast<std::vector<const ggml_tensor *> *>(user)->push_back(t);
            return true;
        },
        &seen);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(observed.get(), g.graph));
    g.fill();
    ASSERT_EQ(ggml_backend_sched_graph_compute(observed.get(), g.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(rig.rule.executes, 0);
    EXPECT_NE(std::find(seen.begin(), seen.end(), g.m), seen.end());  // the product was observable
    EXPECT_EQ(read_f32(g.out), g.expected());
}

// "Direct backend graph computation supports single-node extensions; it does not fuse an already
// allocated graph."
TEST(FusionExecution, DirectBackendComputationDoesNotFuse) {
    MulAddRig rig("fusion_test_dev_", "mul_add", false);
    MulAddGraph g;
    Buffer buffer(ggml_backend_alloc_ctx_tensors(g.ctx.get(), rig.backend.get()));
    g.fill();
    ASSERT_EQ(ggml_backend_graph_compute(rig.backend.get(), g.graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    EXPECT_EQ(rig.rule.executes, 0);
    EXPECT_EQ(rig.rule.matches, 0);
    EXPECT_EQ(read_f32(g.out), g.expected());
}

// "A fusion-only registration does not claim single-node support."
TEST(FusionExecution, FusionOnlyRegistrationsDoNotClaimSingleNodeSupport) {
    static std::atomic<int> counter{0};
    const std::string name = "fusion_only_dev_" + std::to_string(counter++);
    const ggml_op ops[] = {GGML_OP_SQR};  // natively: neither MUL nor ADD
    ggml_backend_dev_t device = ggml_backend_cpu_add_virtual_device(name.c_str(), ops, 1);
    MulAddRule rule;
    ggml_ext_fusion_desc d{};
    d.struct_size = sizeof d;
    d.version = GGML_EXT_FUSION_DESC_VERSION;
    d.name = "mul_add";
    d.match = match_mul_add;
    d.execute = execute_mul_add;
    d.user_data = &rule;
    ASSERT_TRUE(ggml_ext_register_fusion(device, &d));
    EXPECT_FALSE(ggml_ext_register_fusion(device, &d));  // names are unique per device
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "already has a fusion rule"));
    MulAddGraph g;
    EXPECT_FALSE(ggml_backend_dev_supports_op(device, g.m));
    EXPECT_FALSE(ggml_backend_dev_supports_op(device, g.out));
}

// The plan query (ggml_ext_sched_get_n_steps, ggml_ext_sched_get_step): the steps of the last graph
// planned, in execution order, each a native range, one node of an extension kernel or a fused range.
// out = sqr(p) * sqr(q) + r, then a = out + r and b = a * a natively, and c = 2 b on the CPU (the
// virtual device has no SCALE): on the device the two SQR nodes by a preferred kernel, the MUL -> ADD
// pair by the rule, a and b as one native range; then split 1 on the CPU.
TEST(FusionExecution, ThePlanQueryListsTheStepsInOrder) {
    MulAddRig rig("plan_query_dev_", "mul_add", false);
    ggml_ext_kernel_desc sqr{};
    sqr.struct_size = sizeof sqr;
    sqr.version = GGML_EXT_KERNEL_DESC_VERSION;
    sqr.name = "sqr.preferred";
    sqr.op = GGML_OP_SQR;
    sqr.supports = [](ggml_backend_dev_t, const ggml_tensor *, void *) { return true; };
    sqr.preferred = [](ggml_backend_dev_t, const ggml_tensor *, void *) { return true; };
    sqr.execute = [](const ggml_ext_execute_params * p) {
        const auto * in = static_cast<const float *>(p->node->src[0]->data);
        auto * out = static_cast<float *>(p->node->data);
        for (int64_t i = 0; i < ggml_nelements(p->node); ++i)
            out[i] = in[i] * in[i];
        return GGML_STATUS_SUCCESS;
    };
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &sqr)) << ggml_backend_get_last_error();

    MulAddGraph g;
    ggml_tensor * a = ggml_add(g.ctx.get(), g.out, g.r);
    ggml_tensor * b = ggml_mul(g.ctx.get(), a, a);
    ggml_tensor * c = ggml_scale(g.ctx.get(), b, 2.0f);
    ggml_set_output(c);
    ggml_build_forward_expand(g.graph, c);

    Sched sched = rig.sched();
    EXPECT_EQ(ggml_ext_sched_get_n_steps(sched.get()), 0);  // nothing planned yet
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph)) << ggml_backend_get_last_error();
    ASSERT_EQ(ggml_backend_sched_get_n_splits(sched.get()), 2);

    struct Expected {
        ggml_ext_step_kind kind;
        const char * name;
        std::vector<const ggml_tensor *> nodes;
        int split;
        ggml_backend_t backend;
    };
    const Expected expected[] = {
        {GGML_EXT_STEP_KERNEL, "sqr.preferred", {g.sp}, 0, rig.backend.get()},
        {GGML_EXT_STEP_KERNEL, "sqr.preferred", {g.sq}, 0, rig.backend.get()},
        {GGML_EXT_STEP_FUSION, "mul_add", {g.m, g.out}, 0, rig.backend.get()},
        {GGML_EXT_STEP_NATIVE, "native", {a, b}, 0, rig.backend.get()},
        {GGML_EXT_STEP_NATIVE, "native", {c}, 1, rig.cpu.get()},
    };
    const int n = ggml_ext_sched_get_n_steps(sched.get());
    ASSERT_EQ(n, static_cast<int>(std::size(expected)));
    for (int i = 0; i < n; ++i) {
        SCOPED_TRACE("step " + std::to_string(i));
        ggml_ext_sched_step step{};
        step.struct_size = sizeof step;
        ASSERT_TRUE(ggml_ext_sched_get_step(sched.get(), i, &step));
        const Expected & e = expected[i];
        EXPECT_EQ(step.kind, e.kind);
        EXPECT_STREQ(step.name, e.name);
        EXPECT_EQ(step.split, e.split);
        EXPECT_EQ(step.backend, e.backend);
        ASSERT_EQ(step.n_nodes, static_cast<int>(e.nodes.size()));
        for (int k = 0; k < step.n_nodes; ++k)
            EXPECT_EQ(step.nodes[k], e.nodes[k]) << "node " << k;
        EXPECT_EQ(step.workspace_bytes, 0u);  // no prepare asks for any
    }

    // Refused: a struct_size below the struct's, an index out of range.
    ggml_ext_sched_step step{};
    step.struct_size = sizeof step - 1;
    EXPECT_FALSE(ggml_ext_sched_get_step(sched.get(), 0, &step));
    step.struct_size = sizeof step;
    EXPECT_FALSE(ggml_ext_sched_get_step(sched.get(), n, &step));
    EXPECT_FALSE(ggml_ext_sched_get_step(sched.get(), -1, &step));
    EXPECT_TRUE(ggml_ext_sched_get_step(sched.get(), n - 1, &step));

    // The plan runs as listed: the kernel's squares, the rule once, the CPU's scale.
    g.fill();
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    EXPECT_EQ(rig.rule.executes, 1);
    const std::vector<float> out = g.expected(), rv = ramp(64, 2.0f, 0.01f), got = read_f32(c);
    for (size_t i = 0; i < got.size(); ++i) {
        const float av = out[i] + rv[i];
        EXPECT_EQ(got[i], 2.0f * (av * av)) << i;
    }

    // After a reset: no plan, no steps.
    ggml_backend_sched_reset(sched.get());
    EXPECT_EQ(ggml_ext_sched_get_n_steps(sched.get()), 0);
    EXPECT_FALSE(ggml_ext_sched_get_step(sched.get(), 0, &step));
}

// Issue 6, explain mode: each fusion candidate with the rule that matched it, every rejection with
// the legality rule that failed and the node, and the kernel selected for each node and why.
TEST(FusionExecution, ExplainModeReportsCandidatesRejectionsAndSelections) {
    MulAddRig rig("fusion_test_dev_", "mul_add", false);
    ggml_ext_kernel_desc sqr{};
    sqr.struct_size = sizeof sqr;
    sqr.version = GGML_EXT_KERNEL_DESC_VERSION;
    sqr.name = "sqr.never_preferred";
    sqr.op = GGML_OP_SQR;
    sqr.priority = 3;
    sqr.supports = [](ggml_backend_dev_t, const ggml_tensor *, void *) { return true; };
    sqr.preferred = [](ggml_backend_dev_t, const ggml_tensor *, void *) { return false; };
    sqr.execute = [](const ggml_ext_execute_params *) { return GGML_STATUS_FAILED; };
    ASSERT_TRUE(ggml_ext_register_kernel(rig.device, &sqr));

    MulAddGraph accepted;
    Sched sched = rig.sched();
    ggml_ext_sched_set_explain(sched.get(), true);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), accepted.graph));
    std::string text = ggml_ext_sched_explanation(sched.get());
    // Plan-graph node indices: the split's input copies of p, q and r come first.
    EXPECT_TRUE(contains(text, "split 0 on fusion_test_dev_")) << text;
    EXPECT_TRUE(contains(text, "fusion 'mul_add' matched nodes [5, 7): accepted")) << text;
    EXPECT_TRUE(contains(text, "kernel 'sqr.never_preferred' (priority 3): not preferred over native"))
        << text;

    MulAddGraph rejected;
    ggml_set_name(rejected.m, "m");
    ggml_set_output(rejected.m);
    ggml_backend_sched_reset(sched.get());
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), rejected.graph));
    text = ggml_ext_sched_explanation(sched.get());
    EXPECT_TRUE(contains(text, "rejected, fusion of nodes [5, 7): rule 'output flags' fails at 'm'")) << text;

    ggml_ext_sched_set_explain(sched.get(), false);
    ggml_backend_sched_reset(sched.get());
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), accepted.graph));
    EXPECT_STREQ(ggml_ext_sched_explanation(sched.get()), "");
}

}  // namespace
}  // namespace ggx::test
