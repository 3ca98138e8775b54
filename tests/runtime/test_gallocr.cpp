// The graph allocator (ggml_gallocr_*), one test per sentence of its contract in include/ggml-alloc.h
// and docs/memory.md. Placement tests use CPU-callback nodes (never computed) so that sizes and
// consumers are chosen exactly; a few tests compute on the CPU backend.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-graph.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/graph_alloc.h"

#include "interface/backend-impl.h"
#include "support/test_util.h"

namespace {

using ggx::test::Buffer;
using ggx::test::contains;
using ggx::test::Context;
using ggx::test::Gallocr;

// Host memory buffers with a chosen alignment, extra bytes per tensor, maximum size, or failure.
class TestBuffer final : public ggml_backend_buffer {
public:
    TestBuffer(ggml_backend_buffer_type_t type, size_t bytes, size_t alignment)
        : ggml_backend_buffer(type, bytes), memory_(bytes + alignment) {
        const auto address = reinterpret_cast<uintptr_t>(memory_.data());
        base_ = memory_.data() + (alignment - address % alignment) % alignment;
    }
    void * base() override { return base_; }
    void set_tensor(ggml_tensor * t, const void * data, size_t offset, size_t bytes) override {
        std::memcpy(static_cast<char *>(t->data) + offset, data, bytes);
    }
    void get_tensor(const ggml_tensor * t, void * data, size_t offset, size_t bytes) override {
        std::memcpy(data, static_cast<const char *>(t->data) + offset, bytes);
    }
    void memset_tensor(ggml_tensor * t, uint8_t value, size_t offset, size_t bytes) override {
        std::memset(static_cast<char *>(t->data) + offset, value, bytes);
    }
    void clear(uint8_t value) override { std::memset(base_, value, size); }

private:
    std::vector<char> memory_;
    char * base_;
};

class TestBufferType final : public ggml_backend_buffer_type {
public:
    TestBufferType(size_t alignment, size_t extra = 0, size_t max = SIZE_MAX, bool fail = false)
        : alignment_(alignment), extra_(extra), max_(max), fail_(fail) {}
    const char * name() const override { return "TEST"; }
    ggml_backend_buffer_t alloc_buffer(size_t size) override {
        if (fail_) {
            ggx::backend::set_last_error("TEST: out of device memory");
            return nullptr;
        }
        ++allocations;
        return new TestBuffer(this, size, alignment_);
    }
    size_t alignment() const override { return alignment_; }
    size_t max_size() const override { return max_; }
    size_t alloc_size(const ggml_tensor * t) const override { return ggml_nbytes(t) + extra_; }
    bool is_host() const override { return true; }
    ggml_backend_dev_t device() const override {
        return ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    }

    int allocations = 0;

private:
    size_t alignment_, extra_, max_;
    bool fail_;
};

void noop(ggml_tensor *, int, int, void *) {}

// A node of n F32 values (4 n bytes) that reads srcs; its op cannot run in place.
ggml_tensor * node(ggml_context * ctx, int64_t n, std::vector<ggml_tensor *> srcs = {},
                   const char * name = "") {
    ggml_tensor * t = ggml_custom_4d(ctx, GGML_TYPE_F32, n, 1, 1, 1, srcs.data(),
                                     static_cast<int>(srcs.size()), noop, 1, nullptr);
    if (t) ggml_set_name(t, name);
    return t;
}

// Fixture: a no-alloc context, a graph and a CPU-buffer allocator (alignment 64).
class Gallocr_ : public ::testing::Test {
protected:
    Context ctx{ggml_init({16 << 20, nullptr, true})};
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    Gallocr galloc{ggml_gallocr_new(ggml_backend_cpu_buffer_type())};

    void expand(std::initializer_list<ggml_tensor *> outputs) {
        for (ggml_tensor * t : outputs)
            ggml_build_forward_expand(graph, t);
    }
    bool alloc() { return ggml_gallocr_alloc_graph(galloc.get(), graph); }
};

size_t offset_of(const ggml_tensor * t) {
    return static_cast<const char *>(t->data) -
           static_cast<const char *>(ggml_backend_buffer_get_base(t->buffer));
}

using Liveness = Gallocr_;
using Views = Gallocr_;
using Reuse = Gallocr_;
using InPlace = Gallocr_;
using Pinning = Gallocr_;
using Preallocated = Gallocr_;
using Sizing = Gallocr_;
using Failure = Gallocr_;
using GraphViews = Gallocr_;

// "a tensor is live from the node that produces it until its last consumer has run"
TEST_F(Liveness, ABlockIsReusedOnlyAfterTheLastConsumer) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * b = node(ctx.get(), 16, {a}, "b");     // a still read by d
    ggml_tensor * c = node(ctx.get(), 16, {b}, "c");     // b dies here: c is placed before b is freed
    ggml_tensor * d = node(ctx.get(), 16, {a, c}, "d");  // a and c die here
    ggml_tensor * e = node(ctx.get(), 16, {d}, "e");     // may take a's (or c's) block
    expand({e});
    ASSERT_TRUE(alloc()) << ggml_backend_get_last_error();
    for (ggml_tensor * t : {a, b, c, d, e}) {
        ASSERT_NE(t->data, nullptr) << t->name;
        EXPECT_EQ(t->buffer, a->buffer);
    }
    EXPECT_NE(b->data, a->data);
    EXPECT_NE(c->data, a->data);  // a is still needed by d
    EXPECT_NE(c->data, b->data);  // b is read while c is written
    EXPECT_EQ(d->data, b->data);  // b died at c: its block is free again
    EXPECT_NE(e->data, d->data);
    EXPECT_EQ(e->data, a->data);  // a and c died at d; best fit takes the lowest equal block
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 3 * 64u);
}

// GraphAllocator::plan keep_alive (spec "Fusion": "External inputs stay allocated through the final
// node"): an extra use at a later node keeps a block from being reused before then.
TEST_F(Liveness, KeepAliveExtendsALifetimeThroughTheGivenNode) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * b = node(ctx.get(), 16, {a}, "b");  // a's last reader
    ggml_tensor * c = node(ctx.get(), 16, {b}, "c");  // would take a's block
    ggml_tensor * d = node(ctx.get(), 16, {c}, "d");
    expand({d});
    ggx::backend::GraphAllocator allocator({ggml_backend_cpu_buffer_type()});
    const auto offset_in = [](const ggx::backend::AllocationPlan & plan, const ggml_tensor * t) {
        for (const auto & p : plan.placements)
            if (p.tensor == t) return p.offset;
        return SIZE_MAX;
    };
    ggx::backend::AllocationPlan plain, kept;
    ASSERT_TRUE(allocator.plan(graph, {}, {}, plain));
    EXPECT_EQ(offset_in(plain, c), offset_in(plain, a));
    const ggx::backend::KeepAlive keep[] = {{a, 3}};  // through d (nodes a, b, c, d)
    ASSERT_TRUE(allocator.plan(graph, {}, {}, kept, {keep, {}, {}}));
    EXPECT_NE(offset_in(kept, c), offset_in(kept, a));
    EXPECT_NE(offset_in(kept, d), offset_in(kept, a));
    const ggx::backend::KeepAlive bad[] = {{a, 7}};
    EXPECT_FALSE(allocator.plan(graph, {}, {}, kept, {bad, {}, {}}));
    EXPECT_NE(std::string(ggml_backend_get_last_error()).find("keep-alive"), std::string::npos);
}

// "a tensor is live ... counted with the graph's recorded use counts": a tensor read twice by one node
TEST_F(Liveness, RepeatedSourceSlotsAreCountedPerSlot) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * b = node(ctx.get(), 16, {a, a}, "b");
    ggml_tensor * c = node(ctx.get(), 16, {b}, "c");
    expand({c});
    EXPECT_EQ(ggml_graph_get_use_count(graph, a), 2);
    ASSERT_TRUE(alloc());
    EXPECT_EQ(c->data, a->data);  // a died at b after both slots were read
}

// "views take their source's storage and keep it alive until they die themselves"
TEST_F(Views, AViewKeepsItsSourceAlive) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * v = ggml_reshape_2d(ctx.get(), a, 4, 4);  // a's only consumer
    ggml_tensor * x = node(ctx.get(), 16, {}, "x");
    ggml_tensor * y = node(ctx.get(), 16, {x}, "y");     // x dies here
    ggml_tensor * w = node(ctx.get(), 16, {v, y}, "w");  // v (and so a) dies here
    ggml_tensor * z = node(ctx.get(), 16, {w}, "z");
    expand({z});
    ASSERT_TRUE(alloc()) << ggml_backend_get_last_error();
    EXPECT_EQ(v->data, a->data);
    EXPECT_EQ(v->buffer, a->buffer);
    EXPECT_NE(x->data, a->data);
    EXPECT_NE(y->data, a->data);
    EXPECT_NE(w->data, a->data);  // v is read while w is written
    EXPECT_EQ(w->data, x->data);  // x died at y
    EXPECT_EQ(z->data, a->data);  // a died with v at w
}

// "views take their source's storage": offsets and views of views
TEST_F(Views, ViewsGetTheirOffsetIntoTheSource) {
    ggml_tensor * a = node(ctx.get(), 64, {}, "a");
    ggml_tensor * v = ggml_view_1d(ctx.get(), a, 16, 32 * sizeof(float));
    ggml_tensor * vv = ggml_view_1d(ctx.get(), v, 4, 8 * sizeof(float));
    ggml_tensor * out = node(ctx.get(), 4, {vv}, "out");
    expand({out});
    ASSERT_TRUE(alloc());
    EXPECT_EQ(static_cast<char *>(v->data), static_cast<char *>(a->data) + 32 * sizeof(float));
    EXPECT_EQ(static_cast<char *>(vv->data), static_cast<char *>(a->data) + 40 * sizeof(float));
    EXPECT_EQ(vv->buffer, a->buffer);
}

// "freed blocks are reused best-fit"
TEST_F(Reuse, TheSmallestFreeBlockThatFitsIsTaken) {
    ggml_tensor * big = node(ctx.get(), 48, {}, "big");        // 192 bytes at 0
    ggml_tensor * k1 = node(ctx.get(), 16, {}, "k1");          // at 192, kept
    ggml_tensor * small = node(ctx.get(), 16, {}, "small");    // at 256
    ggml_tensor * k2 = node(ctx.get(), 16, {}, "k2");          // at 320, kept
    ggml_tensor * c = node(ctx.get(), 16, {big, small}, "c");  // at 384; frees 0..192 and 256..320
    ggml_tensor * d = node(ctx.get(), 16, {}, "d");            // exact fit at 256, not the first fit at 0
    ggml_tensor * e = node(ctx.get(), 32, {}, "e");            // only 0..192 fits: at 0
    ggml_tensor * f = node(ctx.get(), 16, {}, "f");            // rest of the big block: 128
    expand({big, k1, small, k2, c, d, e, f});                  // in creation order
    ASSERT_TRUE(alloc());
    EXPECT_EQ(offset_of(big), 0u);
    EXPECT_EQ(offset_of(k1), 192u);
    EXPECT_EQ(offset_of(small), 256u);
    EXPECT_EQ(offset_of(k2), 320u);
    EXPECT_EQ(offset_of(c), 384u);
    EXPECT_EQ(offset_of(d), 256u);
    EXPECT_EQ(offset_of(e), 0u);
    EXPECT_EQ(offset_of(f), 128u);
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 448u);
}

// "freed blocks are ... merged with free neighbours"
TEST_F(Reuse, AdjacentFreeBlocksMerge) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");      // 0
    ggml_tensor * b = node(ctx.get(), 16, {}, "b");      // 64
    ggml_tensor * k = node(ctx.get(), 16, {}, "k");      // 128, kept
    ggml_tensor * c = node(ctx.get(), 16, {a, b}, "c");  // 192; frees 0..64 and 64..128 -> 0..128
    ggml_tensor * d = node(ctx.get(), 32, {}, "d");      // 128 bytes fit only in the merged block
    expand({a, b, k, c, d});                             // in creation order
    ASSERT_TRUE(alloc());
    EXPECT_EQ(offset_of(c), 192u);
    EXPECT_EQ(offset_of(d), 0u);
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 256u);
}

// "freed blocks are ... merged": a free block at the end of the used region is given back to it
TEST_F(Reuse, AFreeBlockAtTheEndGrowsIntoALargerRequest) {
    ggml_tensor * k = node(ctx.get(), 16, {}, "k");   // 0, kept
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");   // 64
    ggml_tensor * b = node(ctx.get(), 16, {a}, "b");  // 128; a freed
    ggml_tensor * c = node(ctx.get(), 16, {b}, "c");  // 64 (a's block); b freed: 128..192 ends the region
    ggml_tensor * d = node(ctx.get(), 64, {c}, "d");  // 256 bytes from 128
    expand({k, d});
    ASSERT_TRUE(alloc());
    EXPECT_EQ(offset_of(c), 64u);
    EXPECT_EQ(offset_of(d), 128u);
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 384u);
}

// "alignment and allocation size come from the buffer type"
TEST(Gallocr, AlignmentAndAllocSizeComeFromTheBufferType) {
    TestBufferType buft(32, 16);
    Context ctx(ggml_init({1 << 20, nullptr, true}));
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_tensor * a = node(ctx.get(), 3, {}, "a");  // 12 + 16 bytes -> 32
    ggml_tensor * b = node(ctx.get(), 5, {}, "b");  // 20 + 16 -> 64
    ggml_tensor * c = node(ctx.get(), 1, {a, b}, "c");
    ggml_build_forward_expand(graph, c);
    Gallocr galloc(ggml_gallocr_new(&buft));
    ASSERT_TRUE(ggml_gallocr_alloc_graph(galloc.get(), graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(offset_of(a), 0u);
    EXPECT_EQ(offset_of(b), 32u);
    EXPECT_EQ(offset_of(c), 96u);
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 128u);
    EXPECT_EQ(ggml_backend_buffer_get_type(c->buffer), &buft);
}

// "tensors of no bytes still get a valid data pointer and buffer"
TEST_F(Reuse, ZeroSizeTensorsGetAValidAddress) {
    ggml_tensor * a = node(ctx.get(), 0, {}, "a");
    ggml_tensor * b = node(ctx.get(), 0, {a}, "b");
    expand({b});
    ASSERT_TRUE(alloc()) << ggml_backend_get_last_error();
    for (ggml_tensor * t : {a, b}) {
        EXPECT_NE(t->data, nullptr);
        EXPECT_NE(t->buffer, nullptr);
    }
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 0u);
}

// "a node whose op allows it is placed over its first source when that source dies at this node"
TEST_F(InPlace, AnElementwiseNodeTakesItsDyingSource) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * s = ggml_scale(ctx.get(), a, 2.0f);
    ggml_tensor * r = ggml_relu(ctx.get(), s);
    ggml_tensor * out = node(ctx.get(), 16, {r}, "out");
    expand({out});
    ASSERT_TRUE(alloc());
    EXPECT_EQ(s->data, a->data);
    EXPECT_EQ(r->data, a->data);
    EXPECT_NE(out->data, a->data);    // a custom op never runs in place
    EXPECT_EQ(s->view_src, nullptr);  // placement only: the graph is not rewritten
}

// "... when that source dies at this node": not while the source is still read later
TEST_F(InPlace, NotWhileTheSourceIsReadLater) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * s = ggml_scale(ctx.get(), a, 2.0f);
    ggml_tensor * out = node(ctx.get(), 16, {a, s}, "out");
    expand({out});
    ASSERT_TRUE(alloc());
    EXPECT_NE(s->data, a->data);
}

// "... has exactly the node's layout": not over a transposed source, nor a different type
TEST_F(InPlace, NotOverADifferentLayout) {
    ggml_tensor * a = ggml_custom_4d(ctx.get(), GGML_TYPE_F32, 4, 4, 1, 1, nullptr, 0, noop, 1, nullptr);
    ggml_tensor * s = ggml_scale(ctx.get(), ggml_transpose(ctx.get(), a), 2.0f);
    ggml_tensor * b = node(ctx.get(), 16, {}, "b");
    ggml_tensor * m =
        ggml_mul_mat(ctx.get(), ggml_reshape_2d(ctx.get(), b, 4, 4), ggml_reshape_2d(ctx.get(), b, 4, 4));
    ggml_tensor * out = node(ctx.get(), 1, {s, m}, "out");
    expand({out});
    ASSERT_TRUE(alloc());
    EXPECT_NE(s->data, a->data);  // same bytes, other strides
    EXPECT_NE(m->data, b->data);  // MUL_MAT cannot run in place
}

// "... is owned by this allocator": not over leafs, INPUT or OUTPUT tensors
TEST_F(InPlace, NotOverLeafsInputsOrOutputs) {
    ggml_tensor * leaf = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 16);
    ggml_tensor * in = node(ctx.get(), 16, {}, "in");
    ggml_set_input(in);
    ggml_tensor * out = node(ctx.get(), 16, {}, "out");
    ggml_set_output(out);
    ggml_tensor * s1 = ggml_scale(ctx.get(), leaf, 2.0f);
    ggml_tensor * s2 = ggml_scale(ctx.get(), in, 2.0f);
    ggml_tensor * s3 = ggml_scale(ctx.get(), out, 2.0f);
    expand({s1, s2, s3});
    ASSERT_TRUE(alloc());
    EXPECT_NE(s1->data, leaf->data);
    EXPECT_NE(s2->data, in->data);
    EXPECT_NE(s3->data, out->data);
}

// "... is owned by this allocator": not over a pre-allocated tensor (weights)
TEST_F(InPlace, NotOverPreallocatedTensors) {
    Context wctx(ggml_init({1 << 20, nullptr, true}));
    ggml_tensor * w = ggml_new_tensor_1d(wctx.get(), GGML_TYPE_F32, 16);
    Buffer weights(ggml_backend_alloc_ctx_tensors_from_buft(wctx.get(), ggml_backend_cpu_buffer_type()));
    ASSERT_NE(weights, nullptr);
    ggml_tensor * s = ggml_scale(ctx.get(), w, 2.0f);
    expand({s});
    ASSERT_TRUE(alloc());
    EXPECT_NE(s->buffer, weights.get());
}

// In-place reuse is refused when another source of the node reads the same storage.
TEST_F(InPlace, NotWhenAnotherSourceSharesTheStorage) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * sum = ggml_add(ctx.get(), a, ggml_view_1d(ctx.get(), a, 4, 0));  // a + a[0..4) tiled
    ggml_tensor * out = node(ctx.get(), 16, {sum}, "out");
    expand({out});
    ASSERT_TRUE(alloc());
    EXPECT_NE(sum->data, a->data);
}

// In-place reuse through a view of the source (a reshape at offset 0 whose storage dies here).
TEST_F(InPlace, ThroughAReshapeOfTheSource) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * s = ggml_scale(ctx.get(), ggml_reshape_2d(ctx.get(), a, 4, 4), 2.0f);
    ggml_tensor * out = node(ctx.get(), 16, {s}, "out");
    expand({out});
    ASSERT_TRUE(alloc());
    EXPECT_EQ(s->data, a->data);
}

// ggml_op_can_inplace: the op set (docs/memory.md) and its shape and type requirements.
TEST_F(InPlace, OpSet) {
    ggml_context * c = ctx.get();
    ggml_tensor * a = ggml_new_tensor_2d(c, GGML_TYPE_F32, 8, 4);
    ggml_tensor * b = ggml_new_tensor_2d(c, GGML_TYPE_F32, 8, 4);
    ggml_tensor * pos = ggml_new_tensor_1d(c, GGML_TYPE_I32, 1);
    ggml_tensor * a3 = ggml_new_tensor_3d(c, GGML_TYPE_F32, 8, 4, 1);
    for (ggml_tensor * t :
         {ggml_add(c, a, b), ggml_sub(c, a, b), ggml_mul(c, a, ggml_view_1d(c, b, 8, 0)), ggml_div(c, a, b),
          ggml_scale(c, a, 2), ggml_sqr(c, a), ggml_sqrt(c, a), ggml_clamp(c, a, -1, 1), ggml_silu(c, a),
          ggml_gelu(c, a), ggml_norm(c, a, 1e-5f), ggml_rms_norm(c, a, 1e-5f), ggml_l2_norm(c, a, 1e-5f),
          ggml_group_norm(c, a3, 1, 1e-5f), ggml_soft_max(c, a), ggml_swiglu_split(c, a, b),
          ggml_rope_ext(c, a3, pos, nullptr, 8, 0, 0, 10000, 1, 0, 1, 32, 1)}) {
        ASSERT_NE(t, nullptr) << ggml_get_error(c);
        EXPECT_TRUE(ggml_op_can_inplace(t)) << ggml_op_desc(t);
    }
    for (ggml_tensor * t : {ggml_mul_mat(c, a, b), ggml_cont(c, a), ggml_dup(c, a), ggml_swiglu(c, a),
                            ggml_cast(c, a, GGML_TYPE_F16), ggml_sum_rows(c, a), ggml_get_rows(c, a, pos),
                            ggml_concat(c, a, b, 0), ggml_transpose(c, a), node(c, 4, {a}), a}) {
        ASSERT_NE(t, nullptr) << ggml_get_error(c);
        EXPECT_FALSE(ggml_op_can_inplace(t)) << ggml_op_desc(t);
    }
    EXPECT_FALSE(ggml_op_can_inplace(nullptr));
}

// In-place results compute what out-of-place ones do (a chain computed on the CPU backend).
TEST_F(InPlace, ComputesTheSameResult) {
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 5);
    ggml_set_input(x);
    ggml_tensor * a = ggml_cont(ctx.get(), x);
    ggml_tensor * y = ggml_add(ctx.get(), ggml_scale(ctx.get(), a, 2.0f), x);  // 3x, in place over a
    ggml_tensor * z = ggml_sqr(ctx.get(), y);                                  // 9x^2
    ggml_set_output(z);
    expand({z});
    ASSERT_TRUE(alloc());
    EXPECT_EQ(z->data, a->data);
    const float in[5] = {1, -2, 3, 0.5f, 0};
    ggml_backend_tensor_set(x, in, 0, sizeof in);
    ASSERT_EQ(ggml_backend_graph_compute(ggx::test::cpu_backend(), graph), GGML_STATUS_SUCCESS);
    float out[5];
    ggml_backend_tensor_get(z, out, 0, sizeof out);
    for (int i = 0; i < 5; ++i)
        EXPECT_EQ(out[i], 9 * in[i] * in[i]);
}

// "leafs and INPUT-flagged tensors [are live] from the start"; "leafs never die"
TEST_F(Pinning, LeafsAndInputsLiveFromTheStartAndAreNeverReused) {
    ggml_tensor * leaf = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 16);
    ggml_tensor * a = node(ctx.get(), 16, {leaf}, "a");  // leaf's only consumer
    ggml_tensor * in = node(ctx.get(), 16, {a}, "in");   // an INPUT node: placed before a
    ggml_set_input(in);
    ggml_tensor * b = node(ctx.get(), 16, {in}, "b");
    ggml_tensor * c = node(ctx.get(), 16, {b}, "c");
    ggml_tensor * d = node(ctx.get(), 16, {c}, "d");
    expand({d});
    ASSERT_TRUE(alloc());
    EXPECT_EQ(offset_of(leaf), 0u);
    EXPECT_EQ(offset_of(in), 64u);
    EXPECT_EQ(offset_of(a), 128u);
    for (ggml_tensor * t : {b, c, d}) {
        EXPECT_NE(t->data, leaf->data) << t->name;
        EXPECT_NE(t->data, in->data) << t->name;
    }
    EXPECT_EQ(b->data, a->data);  // the control: a plain node's block is reused
}

// "OUTPUT-flagged tensors ... never die"
TEST_F(Pinning, OutputsAreNeverReused) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_set_output(a);
    ggml_tensor * b = node(ctx.get(), 16, {a}, "b");
    ggml_tensor * c = node(ctx.get(), 16, {b}, "c");
    ggml_tensor * d = node(ctx.get(), 16, {c}, "d");
    ggml_tensor * e = node(ctx.get(), 16, {d}, "e");
    expand({e});
    ASSERT_TRUE(alloc());
    for (ggml_tensor * t : {b, c, d, e})
        EXPECT_NE(t->data, a->data) << t->name;
    EXPECT_EQ(d->data, b->data);  // the control
}

// An OUTPUT-flagged view keeps its storage for the whole graph.
TEST_F(Pinning, AnOutputViewPinsItsStorage) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * v = ggml_view_1d(ctx.get(), a, 4, 0);
    ggml_set_output(v);
    ggml_tensor * b = node(ctx.get(), 16, {v}, "b");
    ggml_tensor * c = node(ctx.get(), 16, {b}, "c");
    expand({c});
    ASSERT_TRUE(alloc());
    EXPECT_NE(c->data, a->data);
}

// "tensors that already have storage (data or buffer set) are left alone"
TEST_F(Preallocated, WeightsAndTheirViewsAreLeftAlone) {
    Context wctx(ggml_init({1 << 20, nullptr, true}));
    ggml_tensor * w = ggml_new_tensor_1d(wctx.get(), GGML_TYPE_F32, 64);
    Buffer weights(ggml_backend_alloc_ctx_tensors_from_buft(wctx.get(), ggml_backend_cpu_buffer_type()));
    ASSERT_NE(weights, nullptr);
    void * w_data = w->data;
    ggml_tensor * wv = ggml_view_1d(ctx.get(), w, 16, 16 * sizeof(float));
    wv->data = nullptr;  // as if created before the weights were allocated
    wv->buffer = nullptr;
    ggml_tensor * a = node(ctx.get(), 16, {wv}, "a");
    ggml_tensor * b = node(ctx.get(), 16, {a, w}, "b");
    expand({b});
    ASSERT_TRUE(alloc());
    EXPECT_EQ(w->data, w_data);
    EXPECT_EQ(w->buffer, weights.get());
    EXPECT_EQ(wv->buffer, weights.get());  // only initialised as a view
    EXPECT_EQ(wv->data, static_cast<char *>(w_data) + 16 * sizeof(float));
    EXPECT_NE(a->buffer, weights.get());
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 128u);  // a and b only
}

// Tensors this allocator placed before are placed again when their graph is allocated again.
TEST_F(Preallocated, ItsOwnTensorsArePlacedAgain) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * b = node(ctx.get(), 16, {a}, "b");
    expand({b});
    ASSERT_TRUE(alloc());
    const void * a_data = a->data;
    ASSERT_TRUE(alloc());
    EXPECT_EQ(a->data, a_data);
    EXPECT_NE(b->data, nullptr);
    EXPECT_NE(b->data, a->data);
}

// "Size of the buffers graph needs ... without touching graph's tensors: the buffers grow to fit"
TEST_F(Sizing, ReserveSizesBuffersAndLeavesTensorsAlone) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * b = node(ctx.get(), 32, {a}, "b");
    expand({b});
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 0u);
    ASSERT_TRUE(ggml_gallocr_reserve(galloc.get(), graph));
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 192u);
    for (ggml_tensor * t : {a, b}) {
        EXPECT_EQ(t->data, nullptr);
        EXPECT_EQ(t->buffer, nullptr);
    }
    // A smaller graph does not shrink the buffer (the worst case over the graphs is kept).
    Context small_ctx(ggml_init({1 << 20, nullptr, true}));
    ggml_cgraph * small = ggml_new_graph(small_ctx.get());
    ggml_build_forward_expand(small, node(small_ctx.get(), 16));
    ASSERT_TRUE(ggml_gallocr_reserve(galloc.get(), small));
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 192u);
    // The reserved buffer is used as is.
    ASSERT_TRUE(alloc());
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 192u);
}

// "alloc_graph ... growing the buffers first when they are too small"
TEST_F(Sizing, AllocGraphGrowsTheBuffers) {
    Context small_ctx(ggml_init({1 << 20, nullptr, true}));
    ggml_cgraph * small = ggml_new_graph(small_ctx.get());
    ggml_build_forward_expand(small, node(small_ctx.get(), 16));
    ASSERT_TRUE(ggml_gallocr_alloc_graph(galloc.get(), small));
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 64u);
    expand({node(ctx.get(), 64, {node(ctx.get(), 16)})});
    ASSERT_TRUE(alloc());
    EXPECT_EQ(ggml_gallocr_get_buffer_size(galloc.get(), 0), 320u);
}

// "Bytes each buffer would need for graph ... without allocating anything and without touching
// graph's tensors"
TEST_F(Sizing, MeasureDoesNotAllocate) {
    TestBufferType buft(64);
    Gallocr counting(ggml_gallocr_new(&buft));
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * b = node(ctx.get(), 48, {a}, "b");
    expand({b});
    size_t size = 1;
    ggml_gallocr_measure_n(counting.get(), graph, nullptr, nullptr, &size);
    EXPECT_EQ(size, 256u);
    EXPECT_EQ(buft.allocations, 0);
    EXPECT_EQ(ggml_gallocr_get_buffer_size(counting.get(), 0), 0u);
    EXPECT_EQ(a->data, nullptr);
    EXPECT_EQ(b->buffer, nullptr);
}

// "one buffer of each of n_bufs buffer types"; "node_buffer_ids / leaf_buffer_ids give each node /
// leaf's buffer index"; alloc_graph uses "the ids of the last reserve_n"
TEST_F(Sizing, PerBufferSizesWithTwoBufferTypes) {
    TestBufferType second(32);
    ggml_backend_buffer_type_t bufts[2] = {ggml_backend_cpu_buffer_type(), &second};
    Gallocr two(ggml_gallocr_new_n(bufts, 2));
    ggml_tensor * leaf = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 8);  // 32 bytes
    ggml_tensor * a = node(ctx.get(), 16, {leaf}, "a");                    // buffer 0: 64
    ggml_tensor * b = node(ctx.get(), 8, {a}, "b");                        // buffer 1: 32
    ggml_tensor * c = node(ctx.get(), 24, {b}, "c");                       // buffer 1: 96
    ggml_tensor * d = node(ctx.get(), 16, {c}, "d");                       // buffer 0: 64, a died at b
    expand({d});
    const int node_ids[] = {0, 1, 1, 0};
    const int leaf_ids[] = {1};
    size_t sizes[2] = {};
    ggml_gallocr_measure_n(two.get(), graph, node_ids, leaf_ids, sizes);
    EXPECT_EQ(sizes[0], 64u);
    EXPECT_EQ(sizes[1], 32u + 32u + 96u);
    ASSERT_TRUE(ggml_gallocr_reserve_n(two.get(), graph, node_ids, leaf_ids));
    EXPECT_EQ(ggml_gallocr_get_buffer_size(two.get(), 0), 64u);
    EXPECT_EQ(ggml_gallocr_get_buffer_size(two.get(), 1), 160u);
    EXPECT_EQ(ggml_gallocr_get_buffer_size(two.get(), 2), 0u);
    ASSERT_TRUE(ggml_gallocr_alloc_graph(two.get(), graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_backend_buffer_get_type(leaf->buffer), &second);
    EXPECT_EQ(ggml_backend_buffer_get_type(a->buffer), ggml_backend_cpu_buffer_type());
    EXPECT_EQ(ggml_backend_buffer_get_type(b->buffer), &second);
    EXPECT_EQ(ggml_backend_buffer_get_type(c->buffer), &second);
    EXPECT_EQ(d->data, a->data);
}

// Bad buffer ids and graphs that do not match the last reserve_n's ids are errors, not crashes.
TEST_F(Sizing, BadBufferIdsAreErrors) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    expand({a});
    const int bad[] = {3};
    EXPECT_FALSE(ggml_gallocr_reserve_n(galloc.get(), graph, bad, nullptr));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "buffer id 3")) << ggml_backend_get_last_error();
    size_t size = 7;
    ggml_gallocr_measure_n(galloc.get(), graph, bad, nullptr, &size);
    EXPECT_EQ(size, 0u);

    TestBufferType second(32);
    ggml_backend_buffer_type_t bufts[2] = {ggml_backend_cpu_buffer_type(), &second};
    Gallocr two(ggml_gallocr_new_n(bufts, 2));
    const int ids[] = {1};
    ASSERT_TRUE(ggml_gallocr_reserve_n(two.get(), graph, ids, nullptr));
    ggml_build_forward_expand(graph, node(ctx.get(), 16, {a}));
    EXPECT_FALSE(ggml_gallocr_alloc_graph(two.get(), graph));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "reserve_n")) << ggml_backend_get_last_error();
    EXPECT_EQ(a->data, nullptr);
    EXPECT_EQ(ggml_gallocr_new_n(nullptr, 0), nullptr);
}

// "False (error in ggml_backend_get_last_error, no tensor changed) when a buffer cannot be
// allocated" — the buffer type's maximum size is too small
TEST_F(Failure, TooLargeForTheBufferTypeGivesFalseAndAMessage) {
    TestBufferType tiny(64, 0, 100);
    Gallocr small(ggml_gallocr_new(&tiny));
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * b = node(ctx.get(), 16, {a}, "b");
    expand({b});
    EXPECT_FALSE(ggml_gallocr_reserve(small.get(), graph));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "cannot allocate")) << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_gallocr_get_buffer_size(small.get(), 0), 0u);
    EXPECT_FALSE(ggml_gallocr_alloc_graph(small.get(), graph));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "128 bytes")) << ggml_backend_get_last_error();
    EXPECT_EQ(a->data, nullptr);
    EXPECT_EQ(b->buffer, nullptr);
}

// "... when a buffer cannot be allocated": the device is out of memory; earlier buffers and
// tensors stay as they were
TEST_F(Failure, AFailingBufferTypeLeavesEverythingUnchanged) {
    TestBufferType failing(64, 0, SIZE_MAX, true);
    ggml_backend_buffer_type_t bufts[2] = {ggml_backend_cpu_buffer_type(), &failing};
    Gallocr two(ggml_gallocr_new_n(bufts, 2));
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * b = node(ctx.get(), 16, {a}, "b");
    expand({b});
    const int ids_ok[] = {0, 0}, ids_bad[] = {0, 1};
    ASSERT_TRUE(ggml_gallocr_reserve_n(two.get(), graph, ids_ok, nullptr));
    ASSERT_TRUE(ggml_gallocr_alloc_graph(two.get(), graph));
    void * a_data = a->data;
    EXPECT_FALSE(ggml_gallocr_reserve_n(two.get(), graph, ids_bad, nullptr));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "out of device memory"))
        << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_gallocr_get_buffer_size(two.get(), 0), 128u);
    EXPECT_EQ(ggml_gallocr_get_buffer_size(two.get(), 1), 0u);
    EXPECT_EQ(a->data, a_data);
    // A huge graph on the CPU buffer type fails the same way.
    ggml_tensor * huge =
        ggml_custom_4d(ctx.get(), GGML_TYPE_F32, int64_t(1) << 40, 1024, 1, 1, nullptr, 0, noop, 1, nullptr);
    ASSERT_NE(huge, nullptr);
    ggml_build_forward_expand(graph, huge);
    EXPECT_FALSE(alloc());
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "cannot allocate")) << ggml_backend_get_last_error();
    EXPECT_EQ(huge->data, nullptr);
}

// "a graph view counts the consumers of its whole graph": a tensor read after the view is not
// reused inside it
TEST_F(GraphViews, ConsumersOutsideTheViewKeepTensorsAlive) {
    ggml_tensor * a = node(ctx.get(), 16, {}, "a");
    ggml_tensor * b = node(ctx.get(), 16, {a}, "b");
    ggml_tensor * c = node(ctx.get(), 16, {b}, "c");
    ggml_tensor * d = node(ctx.get(), 16, {c}, "d");
    ggml_tensor * e = node(ctx.get(), 16, {a, d}, "e");  // outside the view [0, 4)
    expand({e});
    ggml_cgraph * view = ggml_graph_view(ctx.get(), graph, 0, 4);
    ASSERT_NE(view, nullptr);
    ASSERT_TRUE(ggml_gallocr_alloc_graph(galloc.get(), view));
    EXPECT_EQ(e->data, nullptr);  // not part of the view
    for (ggml_tensor * t : {b, c, d})
        EXPECT_NE(t->data, a->data) << t->name;
    EXPECT_EQ(d->data, b->data);  // b died at c inside the view
    EXPECT_NE(c->data, nullptr);
}

// A graph view has no leafs: the leafs and earlier nodes its nodes read are placed from the start
// and kept.
TEST_F(GraphViews, SourcesOutsideTheViewArePlacedFromTheStart) {
    ggml_tensor * leaf = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 16);
    ggml_tensor * a = node(ctx.get(), 16, {leaf}, "a");
    ggml_tensor * b = node(ctx.get(), 16, {a}, "b");
    ggml_tensor * c = node(ctx.get(), 16, {b}, "c");
    ggml_tensor * d = node(ctx.get(), 16, {c}, "d");
    expand({d});
    ggml_cgraph * view = ggml_graph_view(ctx.get(), graph, 1, 4);  // b, c, d
    ASSERT_TRUE(ggml_gallocr_alloc_graph(galloc.get(), view));
    EXPECT_EQ(leaf->data, nullptr);  // read only by a, outside the view
    ASSERT_NE(a->data, nullptr);
    EXPECT_EQ(offset_of(a), 0u);
    for (ggml_tensor * t : {b, c, d})
        EXPECT_NE(t->data, a->data) << t->name;
    EXPECT_EQ(d->data, b->data);
}

}  // namespace
