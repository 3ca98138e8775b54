// The scheduler (ggml_backend_sched_*): placement, splits, input copies, pipeline copies, the eval
// callback, reserve and reset, on the CPU backend plus virtual devices (ggml-cpu.h) that admit a
// chosen subset of ops and refuse to read any other device's memory. Each test names the rule of
// ggml-backend.h ("Scheduler") or of issue 4 it checks.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-graph.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "runtime/random_graph.h"
#include "support/test_util.h"

namespace ggx::test {
namespace {

// A virtual device admitting ops (registered once per distinct name for the whole program).
ggml_backend_dev_t virtual_device(const std::string & name, std::vector<ggml_op> ops) {
    static std::map<std::string, ggml_backend_dev_t> devices;
    auto & dev = devices[name];
    if (!dev)
        dev = ggml_backend_cpu_add_virtual_device(name.c_str(), ops.data(), static_cast<int>(ops.size()));
    return dev;
}

// Owns a virtual-device backend and a CPU backend with the same thread count, and schedulers over them.
struct TwoDevices {
    TwoDevices(const std::string & name, std::vector<ggml_op> ops)
        : gpu(ggml_backend_dev_init(virtual_device(name, std::move(ops)), nullptr)),
          cpu(ggml_backend_cpu_init()) {
        ggml_backend_cpu_set_n_threads(gpu.get(), 2);
        ggml_backend_cpu_set_n_threads(cpu.get(), 2);
    }
    Sched sched(bool parallel = false, bool op_offload = false) {
        ggml_backend_t backends[] = {gpu.get(), cpu.get()};
        return Sched(ggml_backend_sched_new(backends, nullptr, 2, 2048, parallel, op_offload));
    }
    Backend gpu, cpu;
};

Context new_context(size_t bytes = size_t{4} << 20) { return Context(ggml_init({bytes, nullptr, true})); }

// y = mul(silu(add(a, b)), a) with a, b INPUT leafs: three ops of which the virtual device may take some.
struct Chain {
    explicit Chain(ggml_context * ctx, int64_t n = 37) {
        a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, 3);
        b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, 3);
        ggml_set_name(a, "a");
        ggml_set_name(b, "b");
        ggml_set_input(a);
        ggml_set_input(b);
        sum = ggml_add(ctx, a, b);
        act = ggml_silu(ctx, sum);
        y = ggml_mul(ctx, act, a);
        ggml_set_output(y);
        graph = ggml_new_graph(ctx);
        ggml_build_forward_expand(graph, y);
    }
    void fill() {
        write_f32(a, ramp(ggml_nelements(a), -1.0f, 0.01f));
        write_f32(b, ramp(ggml_nelements(b), 0.5f, -0.003f));
    }
    ggml_tensor *a, *b, *sum, *act, *y;
    ggml_cgraph * graph;
};

// The chain computed on the CPU backend alone (no scheduler, no reuse).
std::vector<float> chain_on_cpu(int64_t n = 37) {
    Context ctx = new_context();
    Chain c(ctx.get(), n);
    Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), cpu_backend()));
    c.fill();
    EXPECT_EQ(ggml_backend_graph_compute(cpu_backend(), c.graph), GGML_STATUS_SUCCESS);
    return read_f32(c.y);
}

// mul_mat(w, x) of two allocated F32 tensors, computed on the CPU backend from copies of their data.
std::vector<float> product_on_cpu(const ggml_tensor * w, const ggml_tensor * x) {
    Context ctx = new_context();
    ggml_tensor * cw = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, w->ne[0], w->ne[1]);
    ggml_tensor * cx = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, x->ne[0], x->ne[1]);
    ggml_tensor * y = ggml_mul_mat(ctx.get(), cw, cx);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y);
    Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), cpu_backend()));
    write_f32(cw, read_f32(w));
    write_f32(cx, read_f32(x));
    EXPECT_EQ(ggml_backend_graph_compute(cpu_backend(), graph), GGML_STATUS_SUCCESS);
    return read_f32(y);
}

// Rule: backends are given in priority order and the last must be a CPU backend.
TEST(Sched, RefusesBackendListsWithoutCpuLast) {
    TwoDevices d("sched_vdev_order", {GGML_OP_ADD});
    ggml_backend_t backends[] = {d.cpu.get(), d.gpu.get()};
    EXPECT_EQ(ggml_backend_sched_new(backends, nullptr, 2, 64, false, false), nullptr);
    EXPECT_NE(std::string(ggml_backend_get_last_error()).find("last backend must be a CPU backend"),
              std::string::npos);
    EXPECT_EQ(ggml_backend_sched_new(nullptr, nullptr, 0, 64, false, false), nullptr);
}

// Rule: otherwise the first backend in priority order whose supports_op accepts the op; results on
// two devices equal results on one.
TEST(Sched, PlacesEachOpOnTheFirstBackendSupportingItAndMatchesOneDevice) {
    TwoDevices d("sched_vdev_add_mul", {GGML_OP_ADD, GGML_OP_MUL});
    Sched sched = d.sched();
    Context ctx = new_context();
    Chain c(ctx.get());
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), c.graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), c.sum), d.gpu.get());
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), c.act), d.cpu.get());  // UNARY: CPU only
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), c.y), d.gpu.get());
    // Rule: a split is a maximal run of consecutive nodes on one backend.
    EXPECT_EQ(ggml_backend_sched_get_n_splits(sched.get()), 3);
    c.fill();
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), c.graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    EXPECT_EQ(read_f32(c.y), chain_on_cpu());
}

// Rule: a split's inputs that live on another backend are copied into the split's backend first
// (the virtual device refuses to read CPU memory, so a missing copy fails the compute).
TEST(Sched, CopiesInputsOfEverySplitFromOtherBackends) {
    TwoDevices d("sched_vdev_all3", {GGML_OP_ADD, GGML_OP_MUL, GGML_OP_UNARY});
    Sched sched = d.sched();
    Context ctx = new_context();
    Chain c(ctx.get());
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), c.graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_backend_sched_get_n_splits(sched.get()), 1);
    // Rule: INPUT leafs without a pin live on the CPU backend (the caller fills them from the host).
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), c.a), d.cpu.get());
    EXPECT_TRUE(ggml_backend_buffer_is_host(c.a->buffer));
    c.fill();
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), c.graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    EXPECT_EQ(read_f32(c.y), chain_on_cpu());
}

// Rule: the caller's graph is never rewritten for good: sources point at the caller's tensors
// after scheduling and computing.
TEST(Sched, LeavesTheCallersGraphUnchanged) {
    TwoDevices d("sched_vdev_add_mul", {GGML_OP_ADD, GGML_OP_MUL});
    Sched sched = d.sched();
    Context ctx = new_context();
    Chain c(ctx.get());
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), c.graph));
    c.fill();
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), c.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(c.sum->src[0], c.a);
    EXPECT_EQ(c.sum->src[1], c.b);
    EXPECT_EQ(c.act->src[0], c.sum);
    EXPECT_EQ(c.y->src[0], c.act);
    EXPECT_EQ(c.y->src[1], c.a);
}

// Rule: placement by the location of weights first: an op with a source that already has storage
// runs where that storage is, when that backend supports the op.
TEST(Sched, PlacesOpsWhereTheirWeightsAre) {
    TwoDevices d("sched_vdev_mm", {GGML_OP_MUL_MAT, GGML_OP_ADD});
    Context weights_ctx = new_context();
    ggml_tensor * w_gpu = ggml_new_tensor_2d(weights_ctx.get(), GGML_TYPE_F32, 16, 8);
    Context cpu_weights_ctx = new_context();
    ggml_tensor * w_cpu = ggml_new_tensor_2d(cpu_weights_ctx.get(), GGML_TYPE_F32, 16, 8);
    Buffer gpu_buffer(ggml_backend_alloc_ctx_tensors(weights_ctx.get(), d.gpu.get()));
    Buffer cpu_buffer(ggml_backend_alloc_ctx_tensors(cpu_weights_ctx.get(), d.cpu.get()));
    ASSERT_TRUE(gpu_buffer && cpu_buffer);
    write_f32(w_gpu, ramp(16 * 8, 0.1f, 0.02f));
    write_f32(w_cpu, ramp(16 * 8, -0.3f, 0.01f));

    Context ctx = new_context();
    ggml_tensor * x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 16, 5);
    ggml_set_input(x);
    ggml_tensor * on_gpu = ggml_mul_mat(ctx.get(), w_gpu, x);
    ggml_tensor * on_cpu = ggml_mul_mat(ctx.get(), w_cpu, x);
    ggml_tensor * y = ggml_add(ctx.get(), on_gpu, on_cpu);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y);

    Sched sched = d.sched();
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), on_gpu), d.gpu.get());
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), on_cpu), d.cpu.get());
    write_f32(x, ramp(16 * 5, 1.0f, -0.05f));
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();

    // The same products on the CPU alone.
    std::vector<float> expected = product_on_cpu(w_gpu, x);
    const std::vector<float> second = product_on_cpu(w_cpu, x);
    for (size_t i = 0; i < expected.size(); ++i)
        expected[i] += second[i];
    EXPECT_EQ(read_f32(y), expected);
}

// Rule: with op_offload, a higher-priority backend whose offload_op accepts the op takes it from the
// backend holding its weights (the weight is copied); without op_offload, the weights decide.
TEST(Sched, OpOffloadMovesLargeProductsOffTheWeightsBackend) {
    TwoDevices d("sched_vdev_mm", {GGML_OP_MUL_MAT, GGML_OP_ADD});
    Context weights_ctx = new_context();
    ggml_tensor * w = ggml_new_tensor_2d(weights_ctx.get(), GGML_TYPE_F32, 16, 8);
    Buffer weights(ggml_backend_alloc_ctx_tensors(weights_ctx.get(), d.cpu.get()));
    write_f32(w, ramp(16 * 8, -0.4f, 0.01f));
    for (const int64_t batch : {1, 40}) {
        for (const bool offload : {false, true}) {
            Context ctx = new_context();
            ggml_tensor * x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 16, batch);
            ggml_set_input(x);
            ggml_tensor * y = ggml_mul_mat(ctx.get(), w, x);
            ggml_cgraph * graph = ggml_new_graph(ctx.get());
            ggml_build_forward_expand(graph, y);
            Sched sched = d.sched(false, offload);
            ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
            const bool offloaded = offload && batch >= 32;
            EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), y),
                      offloaded ? d.gpu.get() : d.cpu.get())
                << "batch " << batch << " offload " << offload;
            write_f32(x, ramp(16 * batch, 0.2f, 0.003f));
            ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), graph), GGML_STATUS_SUCCESS)
                << ggml_backend_get_last_error();

            EXPECT_EQ(read_f32(y), product_on_cpu(w, x));
        }
    }
}

// Rule: a tensor pinned with ggml_backend_sched_set_tensor_backend runs there; reset clears pins.
TEST(Sched, PinsOverridePriorityUntilReset) {
    TwoDevices d("sched_vdev_add_mul", {GGML_OP_ADD, GGML_OP_MUL});
    Sched sched = d.sched();
    Context ctx = new_context();
    Chain c(ctx.get());
    ggml_backend_sched_set_tensor_backend(sched.get(), c.sum, d.cpu.get());
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), c.sum), d.cpu.get());
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), c.graph));
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), c.sum), d.cpu.get());
    EXPECT_EQ(ggml_backend_sched_get_n_splits(sched.get()), 2);
    c.fill();
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), c.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(read_f32(c.y), chain_on_cpu());

    ggml_backend_sched_reset(sched.get());
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), c.sum), nullptr);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), c.graph));
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), c.sum), d.gpu.get());
}

// Rule: a node pinned to a backend that does not support it is an error naming the node.
TEST(Sched, RefusesAPinToABackendWithoutTheOp) {
    // Untrusted input: refused with a status even in the default, aborting error mode.
    ScopedErrorMode aborting(GGML_EXT_ERROR_ABORT);
    TwoDevices d("sched_vdev_add_mul", {GGML_OP_ADD, GGML_OP_MUL});
    Sched sched = d.sched();
    Context ctx = new_context();
    Chain c(ctx.get());
    ggml_set_name(c.act, "act");
    ggml_backend_sched_set_tensor_backend(sched.get(), c.act, d.gpu.get());
    EXPECT_FALSE(ggml_backend_sched_alloc_graph(sched.get(), c.graph));
    EXPECT_NE(std::string(ggml_backend_get_last_error()).find("'act'"), std::string::npos)
        << ggml_backend_get_last_error();
}

// Rule: a node that writes into another tensor's storage (an in-place result) runs where that
// storage is.
TEST(Sched, InPlaceResultsFollowTheirStorage) {
    TwoDevices d("sched_vdev_add_mul", {GGML_OP_ADD, GGML_OP_MUL});
    Sched sched = d.sched();
    Context ctx = new_context();
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 64);
    ggml_set_input(a);
    ggml_tensor * act = ggml_silu(ctx.get(), a);                 // CPU
    ggml_tensor * scaled = ggml_add_inplace(ctx.get(), act, a);  // writes act's storage: CPU too
    ggml_tensor * y = ggml_mul(ctx.get(), scaled, scaled);       // the virtual device
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), scaled), d.cpu.get());
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), y), d.gpu.get());
    const std::vector<float> in = ramp(64, -2.0f, 0.07f);
    write_f32(a, in);
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    const std::vector<float> out = read_f32(y);
    for (size_t i = 0; i < in.size(); ++i) {
        const float s = in[i] / (1.0f + std::exp(-in[i])) + in[i];
        EXPECT_NEAR(out[i], s * s, 1e-5f * (1.0f + s * s)) << i;
    }
}

// Rule: a view of a tensor on another backend is read through the same view of its owner's copy.
TEST(Sched, CopiesTheOwnerOfAViewAndReadsTheSameViewOfIt) {
    TwoDevices d("sched_vdev_add_mul", {GGML_OP_ADD, GGML_OP_MUL});
    Sched sched = d.sched();
    Context ctx = new_context();
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 8, 6);
    ggml_set_input(a);
    ggml_tensor * act = ggml_silu(ctx.get(), a);  // CPU
    ggml_tensor * window = ggml_view_2d(ctx.get(), act, 3, 4, act->nb[1], 2 * sizeof(float) + act->nb[1]);
    ggml_tensor * flipped = ggml_transpose(ctx.get(), window);
    ggml_tensor * y = ggml_add(ctx.get(), flipped, flipped);  // the virtual device reads a view of act
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), y), d.gpu.get());
    const std::vector<float> in = ramp(48, -1.0f, 0.05f);
    write_f32(a, in);
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    const std::vector<float> out = read_f32(y);
    ASSERT_EQ(out.size(), 12u);
    for (int i1 = 0; i1 < 3; ++i1) {  // y is [4, 3]: y[i0, i1] = 2 * act[2 + i1, 1 + i0]
        for (int i0 = 0; i0 < 4; ++i0) {
            const float x = in[(1 + i0) * 8 + 2 + i1];
            EXPECT_FLOAT_EQ(out[i1 * 4 + i0], 2.0f * (x / (1.0f + std::exp(-x)))) << i0 << "," << i1;
        }
    }
}

// Rule: with parallel, n_copies copies of split inputs are kept and used in turn; results stay
// right across repeated computes with new inputs.
TEST(Sched, PipelineCopiesRotateAndStayCorrect) {
    TwoDevices d("sched_vdev_add_mul", {GGML_OP_ADD, GGML_OP_MUL});
    Sched sched = d.sched(/*parallel=*/true);
    EXPECT_EQ(ggml_backend_sched_get_n_copies(sched.get()), GGML_SCHED_MAX_COPIES);
    Context ctx = new_context();
    Chain c(ctx.get());
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), c.graph));
    for (int run = 0; run < 2 * GGML_SCHED_MAX_COPIES + 1; ++run) {
        const std::vector<float> va = ramp(ggml_nelements(c.a), -1.0f + run * 0.1f, 0.01f);
        const std::vector<float> vb = ramp(ggml_nelements(c.b), 0.3f, 0.002f * run);
        write_f32(c.a, va);
        write_f32(c.b, vb);
        ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), c.graph), GGML_STATUS_SUCCESS) << run;

        Context ref_ctx = new_context();
        Chain ref(ref_ctx.get());
        Buffer buffer(ggml_backend_alloc_ctx_tensors(ref_ctx.get(), cpu_backend()));
        write_f32(ref.a, va);
        write_f32(ref.b, vb);
        ASSERT_EQ(ggml_backend_graph_compute(cpu_backend(), ref.graph), GGML_STATUS_SUCCESS);
        ASSERT_EQ(read_f32(c.y), read_f32(ref.y)) << "run " << run;
    }
    Sched single = d.sched(false);
    EXPECT_EQ(ggml_backend_sched_get_n_copies(single.get()), 1);
}

// Rule: the eval callback observes each node it asks for, after computing it, in order; returning
// false stops the graph there.
TEST(Sched, EvalCallbackObservesNodesInOrderAndCanStop) {
    TwoDevices d("sched_vdev_add_mul", {GGML_OP_ADD, GGML_OP_MUL});
    Sched sched = d.sched();
    Context ctx = new_context();
    Chain c(ctx.get());
    struct Observer {
        const Chain * chain;
        std::vector<const ggml_tensor *> asked, seen;
        std::vector<float> act_values;
        const ggml_tensor * stop_at = nullptr;
    } observer{&c, {}, {}, {}, nullptr};
    const auto callback = [](ggml_tensor * t, bool ask, void * user) {
        auto * o = static_cast<Observer *>(user);
        if (ask) {
            o->asked.push_back(t);
            return t == o->chain->act || t == o->chain->y;
        }
        o->seen.push_back(t);
        if (t == o->chain->act) o->act_values = read_f32(t);
        return t != o->stop_at;
    };
    ggml_backend_sched_set_eval_callback(sched.get(), callback, &observer);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), c.graph));
    c.fill();
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), c.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(observer.seen, (std::vector<const ggml_tensor *>{c.act, c.y}));
    EXPECT_EQ(observer.asked.size(), 3u);
    EXPECT_EQ(read_f32(c.y), chain_on_cpu());
    // act = silu(a + b), observed before mul ran
    const std::vector<float> expected = chain_on_cpu();
    EXPECT_EQ(observer.act_values.size(), expected.size());

    // Stopping at act: the status says so and y is never computed (its storage, shared with sum
    // by the allocator, holds something else).
    observer = Observer{&c, {}, {}, {}, c.act};
    EXPECT_EQ(ggml_backend_sched_graph_compute(sched.get(), c.graph), GGML_STATUS_ABORTED);
    EXPECT_EQ(observer.seen, (std::vector<const ggml_tensor *>{c.act}));
    EXPECT_EQ(observer.asked.size(), 2u);
    EXPECT_NE(read_f32(c.y), chain_on_cpu());
}

// Rule: reserve sizes the compute buffers for the worst-case graph, leaves its tensors unallocated,
// and a smaller graph then fits without growing them.
TEST(Sched, ReserveSizesBuffersWithoutAllocatingTheMeasureGraph) {
    TwoDevices d("sched_vdev_add_mul", {GGML_OP_ADD, GGML_OP_MUL});
    Sched sched = d.sched();
    Context big_ctx = new_context();
    Chain big(big_ctx.get(), 4096);
    ASSERT_TRUE(ggml_backend_sched_reserve(sched.get(), big.graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(big.y->data, nullptr);
    EXPECT_EQ(big.sum->buffer, nullptr);
    const size_t gpu_bytes = ggml_backend_sched_get_buffer_size(sched.get(), d.gpu.get());
    const size_t cpu_bytes = ggml_backend_sched_get_buffer_size(sched.get(), d.cpu.get());
    EXPECT_GE(gpu_bytes, ggml_nbytes(big.sum));
    EXPECT_GE(cpu_bytes, ggml_nbytes(big.act));

    Context small_ctx = new_context();
    Chain small(small_ctx.get(), 100);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), small.graph));
    EXPECT_EQ(ggml_backend_sched_get_buffer_size(sched.get(), d.gpu.get()), gpu_bytes);
    EXPECT_EQ(ggml_backend_sched_get_buffer_size(sched.get(), d.cpu.get()), cpu_bytes);
    small.fill();
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), small.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(read_f32(small.y), chain_on_cpu(100));
}

// Rule: graph_compute places and allocates a graph it has not seen; a new graph after reset reuses
// the scheduler; an unknown backend has no buffer.
TEST(Sched, ComputesNewGraphsAfterReset) {
    TwoDevices d("sched_vdev_add_mul", {GGML_OP_ADD, GGML_OP_MUL});
    Sched sched = d.sched();
    for (int round = 0; round < 3; ++round) {
        Context ctx = new_context();
        Chain c(ctx.get(), 50 + round);
        ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), c.graph));
        c.fill();
        ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), c.graph), GGML_STATUS_SUCCESS) << round;
        EXPECT_EQ(read_f32(c.y), chain_on_cpu(50 + round)) << round;
        ggml_backend_sched_reset(sched.get());
    }
    EXPECT_EQ(ggml_backend_sched_get_buffer_size(sched.get(), cpu_backend()), 0u);
    EXPECT_EQ(ggml_backend_sched_get_n_backends(sched.get()), 2);
    EXPECT_EQ(ggml_backend_sched_get_backend(sched.get(), 0), d.gpu.get());
    EXPECT_EQ(ggml_backend_sched_get_backend(sched.get(), 2), nullptr);
}

// Rule: nodes that compute nothing (views) join the current split, even when it runs on another
// backend than the storage they describe; the device never touches their memory.
TEST(Sched, ViewNodesInAnotherBackendsSplitAreHarmless) {
    TwoDevices d("sched_vdev_add_mul", {GGML_OP_ADD, GGML_OP_MUL});
    Sched sched = d.sched();
    Context ctx = new_context();
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 8, 4);
    ggml_set_input(a);
    ggml_tensor * act = ggml_silu(ctx.get(), a);                             // CPU
    ggml_tensor * y1 = ggml_add(ctx.get(), act, act);                        // virtual device
    ggml_tensor * rows = ggml_view_2d(ctx.get(), act, 8, 2, act->nb[1], 0);  // a view node after y1
    ggml_tensor * y2 = ggml_mul(ctx.get(), rows, ggml_view_2d(ctx.get(), y1, 8, 2, y1->nb[1], 0));
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y1);
    ggml_build_forward_expand(graph, y2);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
    const std::vector<float> in = ramp(32, -1.0f, 0.06f);
    write_f32(a, in);
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    const std::vector<float> out = read_f32(y2);
    for (size_t i = 0; i < out.size(); ++i) {
        const float x = read_f32(act)[i];
        EXPECT_EQ(out[i], x * (x + x)) << i;
    }
}

// Regression (found by the fusion property test): a node reading a transposed view of another
// backend's tensor must not be placed in place over the copy it reads through that view.
TEST(Sched, ViewsOfCopiesAreNotOverwrittenInPlace) {
    TwoDevices d("sched_vdev_sqr", {GGML_OP_SQR});
    Sched sched = d.sched();
    Context ctx = new_context();
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 5, 5);
    ggml_set_input(a);
    ggml_tensor * act = ggml_silu(ctx.get(), a);                            // CPU
    ggml_tensor * y = ggml_sqr(ctx.get(), ggml_transpose(ctx.get(), act));  // virtual device
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), y), d.gpu.get());
    write_f32(a, ramp(25, -1.0f, 0.09f));
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    const std::vector<float> s = read_f32(act), out = read_f32(y);
    for (int i1 = 0; i1 < 5; ++i1)
        for (int i0 = 0; i0 < 5; ++i0)
            EXPECT_EQ(out[i1 * 5 + i0], s[i0 * 5 + i1] * s[i0 * 5 + i1]) << i0 << "," << i1;
}

// Regression (found by the fusion property test): an in-place node decides where the leaf it
// writes into lives, even when an earlier reader of that leaf runs elsewhere.
TEST(Sched, InPlaceWritesTakeTheirUnplacedLeafAlong) {
    TwoDevices d("sched_vdev_add_mul", {GGML_OP_ADD, GGML_OP_MUL});
    Sched sched = d.sched();
    Context ctx = new_context();
    ggml_tensor * x = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 16);  // a leaf, not INPUT
    ggml_tensor * early = ggml_silu(ctx.get(), x);                       // CPU reads x first
    ggml_tensor * doubled = ggml_add_inplace(ctx.get(), x, x);           // the virtual device writes x
    ggml_tensor * y = ggml_mul(ctx.get(), doubled, early);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), x), d.gpu.get());
    const std::vector<float> in = ramp(16, -2.0f, 0.3f);
    write_f32(x, in);
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    const std::vector<float> out = read_f32(y), silu = read_f32(early);
    for (size_t i = 0; i < in.size(); ++i)
        EXPECT_EQ(out[i], (in[i] + in[i]) * silu[i]) << i;
}

// Random graphs (random_graph.h), each on a virtual device admitting a random subset of the
// menu: the scheduler's result is bit-identical to the CPU backend computing the graph alone.
TEST(Sched, RandomGraphsOnTwoDevicesEqualOneDevice) {
    constexpr int kSubsets = 6, kGraphs = 300;
    std::vector<std::unique_ptr<TwoDevices>> devices;
    Rng subset_rng(7);
    for (int i = 0; i < kSubsets; ++i) {
        std::vector<ggml_op> ops;
        for (ggml_op op : RandomGraph::kMenu)
            if (subset_rng.uniform(0, 1) < 0.5) ops.push_back(op);
        devices.push_back(std::make_unique<TwoDevices>("sched_vdev_random_" + std::to_string(i), ops));
    }
    for (uint32_t seed = 1; seed <= kGraphs; ++seed) {
        Rng rng(seed);
        TwoDevices & d = *devices[seed % kSubsets];
        Sched sched = d.sched(seed % 2 == 0);
        Context ctx = new_context();
        RandomGraph g(ctx.get(), rng);
        Context ref_ctx = new_context();
        Rng ref_rng(seed);
        RandomGraph ref(ref_ctx.get(), ref_rng);
        ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph))
            << rng.trace() << ": " << ggml_backend_get_last_error();
        Buffer buffer(ggml_backend_alloc_ctx_tensors(ref_ctx.get(), d.cpu.get()));
        RandomGraph::write_inputs(g, ref);
        ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS)
            << rng.trace() << ": " << ggml_backend_get_last_error();
        ASSERT_EQ(ggml_backend_graph_compute(d.cpu.get(), ref.graph), GGML_STATUS_SUCCESS) << rng.trace();
        ASSERT_EQ(read_f32(g.output), read_f32(ref.output))
            << rng.trace() << ", " << ggml_backend_sched_get_n_splits(sched.get()) << " splits";
    }
}

}  // namespace
}  // namespace ggx::test
