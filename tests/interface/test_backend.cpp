// The backend layer through the CPU backend: registry services, devices, buffers, tensor data, graph execution.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "support/test_util.h"

namespace {

using ggx::test::Backend;
using ggx::test::Buffer;
using ggx::test::contains;
using ggx::test::Context;
using ggx::test::ScopedErrorMode;

Context metadata_context() { return Context(ggml_init({1 << 20, nullptr, true})); }

TEST(Registry, ServicesAreFoundByName) {
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    auto set_n_threads = reinterpret_cast<ggml_backend_set_n_threads_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads"));
    ASSERT_NE(set_n_threads, nullptr);
    Backend backend(ggml_backend_cpu_init());
    set_n_threads(backend.get(), 3);
    EXPECT_EQ(ggml_backend_cpu_get_n_threads(backend.get()), 3);
    EXPECT_EQ(ggml_backend_reg_get_proc_address(reg, "no_such_service_v1"), nullptr);
}

TEST(Device, DescribesItself) {
    ggml_backend_dev_t device = ggml_backend_dev_by_name("CPU");
    ggml_backend_dev_props props{};
    ggml_backend_dev_get_props(device, &props);
    EXPECT_STREQ(props.name, "CPU");
    EXPECT_GT(std::strlen(props.description), 0u);
    EXPECT_GT(props.memory_total, 0u);
    EXPECT_LE(props.memory_free, props.memory_total);
    EXPECT_EQ(props.type, GGML_BACKEND_DEVICE_TYPE_CPU);
    EXPECT_EQ(ggml_backend_dev_type(device), GGML_BACKEND_DEVICE_TYPE_CPU);
    EXPECT_TRUE(ggml_backend_dev_supports_buft(device, ggml_backend_cpu_buffer_type()));
    EXPECT_EQ(ggml_backend_dev_host_buffer_type(device), nullptr);
    EXPECT_EQ(ggml_backend_event_new(device), nullptr);
}

TEST(Device, InitialisesBackendsByNameTypeAndBest) {
    Backend by_name(ggml_backend_init_by_name("cpu", nullptr));
    Backend by_type(ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr));
    for (ggml_backend_t backend : {by_name.get(), by_type.get()}) {
        ASSERT_NE(backend, nullptr);
        EXPECT_TRUE(ggml_backend_is_cpu(backend));
        EXPECT_STREQ(ggml_backend_name(backend), "CPU");
    }
    // The best is the first GPU device (Vulkan, when built with a driver present), else the CPU.
    Backend best(ggml_backend_init_best());
    ASSERT_NE(best, nullptr);
    ggml_backend_dev_t gpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU);
    EXPECT_STREQ(ggml_backend_name(best.get()), gpu ? ggml_backend_dev_name(gpu) : "CPU");
    EXPECT_EQ(ggml_backend_init_by_name("no-such-device", nullptr), nullptr);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "no-such-device"));
}

TEST(Buffer, AllocatesAlignedHostMemory) {
    ggml_backend_buffer_type_t buft = ggml_backend_cpu_buffer_type();
    EXPECT_STREQ(ggml_backend_buft_name(buft), "CPU");
    EXPECT_EQ(ggml_backend_buft_get_alignment(buft), 64u);
    EXPECT_TRUE(ggml_backend_buft_is_host(buft));
    Buffer buffer(ggml_backend_buft_alloc_buffer(buft, 1000));
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(ggml_backend_buffer_get_size(buffer.get()), 1000u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ggml_backend_buffer_get_base(buffer.get())) % 64, 0u);
    EXPECT_EQ(ggml_backend_buffer_get_type(buffer.get()), buft);
    EXPECT_TRUE(ggml_backend_buffer_is_host(buffer.get()));
    ggml_backend_buffer_clear(buffer.get(), 0xAB);
    const auto * bytes = static_cast<const uint8_t *>(ggml_backend_buffer_get_base(buffer.get()));
    EXPECT_TRUE(std::all_of(bytes, bytes + 1000, [](uint8_t b) { return b == 0xAB; }));
    EXPECT_EQ(ggml_backend_buffer_get_usage(buffer.get()), GGML_BACKEND_BUFFER_USAGE_ANY);
    ggml_backend_buffer_set_usage(buffer.get(), GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    EXPECT_EQ(ggml_backend_buffer_get_usage(buffer.get()), GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
}

TEST(Buffer, ZeroSizeBuffersHaveABase) {
    Buffer buffer(ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 0));
    ASSERT_NE(buffer, nullptr);
    EXPECT_NE(ggml_backend_buffer_get_base(buffer.get()), nullptr);
}

TEST(Buffer, ImpossibleSizesFailWithAnError) {
    // Untrusted input: refused with a status even in the default, aborting error mode.
    ScopedErrorMode aborting(GGML_EXT_ERROR_ABORT);
    EXPECT_EQ(ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), SIZE_MAX / 2), nullptr);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "failed to allocate"));
}

TEST(TensorAlloc, PlacesTensorsAndRejectsBadPlacements) {
    Context ctx = metadata_context();
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 16);
    ggml_tensor * b = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 16);
    ggml_tensor * view = ggml_view_1d(ctx.get(), a, 4, 8);
    Buffer buffer(ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 128));
    auto * base = static_cast<char *>(ggml_backend_buffer_get_base(buffer.get()));

    EXPECT_EQ(ggml_backend_tensor_alloc(buffer.get(), a, base + 8), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "aligned"));
    EXPECT_EQ(ggml_backend_tensor_alloc(buffer.get(), a, base + 128), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "does not fit"));
    EXPECT_EQ(a->data, nullptr);

    ASSERT_EQ(ggml_backend_tensor_alloc(buffer.get(), a, base), GGML_STATUS_SUCCESS);
    EXPECT_EQ(a->buffer, buffer.get());
    EXPECT_EQ(ggml_backend_tensor_alloc(buffer.get(), a, base + 64), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "already allocated"));
    EXPECT_EQ(ggml_backend_tensor_alloc(buffer.get(), view, base + 64), GGML_STATUS_FAILED);
    EXPECT_EQ(ggml_backend_view_init(view), GGML_STATUS_SUCCESS);
    EXPECT_EQ(view->data, base + 8);
    EXPECT_EQ(ggml_backend_view_init(ggml_view_1d(ctx.get(), b, 4, 0)), GGML_STATUS_FAILED);
}

TEST(TensorData, SetGetMemsetAndCopyWithinBounds) {
    Context ctx = metadata_context();
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 8);
    ggml_tensor * b = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 8);
    Buffer buffer(ggml_backend_alloc_ctx_tensors_from_buft(ctx.get(), ggml_backend_cpu_buffer_type()));
    ASSERT_NE(buffer, nullptr);

    std::vector<float> values(8);
    std::iota(values.begin(), values.end(), 1.0f);
    ASSERT_EQ(ggml_ext_backend_tensor_set(a, values.data(), 0, 32), GGML_STATUS_SUCCESS);
    ASSERT_EQ(ggml_ext_backend_tensor_memset(a, 0, 4, 4), GGML_STATUS_SUCCESS);
    ASSERT_EQ(ggml_ext_backend_tensor_copy(a, b), GGML_STATUS_SUCCESS);
    std::vector<float> out(8, -1.0f);
    ASSERT_EQ(ggml_ext_backend_tensor_get(b, out.data(), 0, 32), GGML_STATUS_SUCCESS);
    EXPECT_EQ(out, (std::vector<float>{1, 0, 3, 4, 5, 6, 7, 8}));
    float partial[2];
    ASSERT_EQ(ggml_ext_backend_tensor_get(b, partial, 24, 8), GGML_STATUS_SUCCESS);
    EXPECT_EQ(partial[0], 7.0f);
    EXPECT_EQ(partial[1], 8.0f);
}

TEST(TensorData, OutOfBoundsAndUnallocatedAccessFail) {
    // Untrusted input: refused with a status even in the default, aborting error mode.
    ScopedErrorMode aborting(GGML_EXT_ERROR_ABORT);
    Context ctx = metadata_context();
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 8);
    ggml_set_name(a, "a");
    float scratch[16] = {};
    EXPECT_EQ(ggml_ext_backend_tensor_set(a, scratch, 0, 4), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "'a' is not allocated"));
    Buffer buffer(ggml_backend_alloc_ctx_tensors_from_buft(ctx.get(), ggml_backend_cpu_buffer_type()));
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(ggml_ext_backend_tensor_set(a, scratch, 4, 32), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "out of bounds"));
    EXPECT_EQ(ggml_ext_backend_tensor_get(a, scratch, 33, 0), GGML_STATUS_FAILED);
    EXPECT_EQ(ggml_ext_backend_tensor_memset(a, 0, 0, 33), GGML_STATUS_FAILED);
    ggml_tensor * other = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F16, 8);
    Buffer other_buffer(ggml_backend_alloc_ctx_tensors_from_buft(ctx.get(), ggml_backend_cpu_buffer_type()));
    EXPECT_EQ(ggml_ext_backend_tensor_copy(a, other), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "same type and shape"));
}

TEST(AllocCtxTensors, AllocatesOwnersAndInitialisesViews) {
    Context ctx = metadata_context();
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 3, 5);
    ggml_tensor * b = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_Q8_0, 64);
    ggml_tensor * view = ggml_view_1d(ctx.get(), a, 3, a->nb[1]);
    Backend backend(ggml_backend_cpu_init());
    Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), backend.get()));
    ASSERT_NE(buffer, nullptr);
    for (ggml_tensor * t : {a, b}) {
        EXPECT_EQ(t->buffer, buffer.get());
        EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % 64, 0u);
    }
    EXPECT_EQ(view->data, static_cast<char *>(a->data) + a->nb[1]);
    EXPECT_GE(ggml_backend_buffer_get_size(buffer.get()), ggml_nbytes(a) + ggml_nbytes(b));
    EXPECT_EQ(ggml_backend_alloc_ctx_tensors(ctx.get(), backend.get()), nullptr);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "no tensor"));
}

// A small graph computed on host data: (a + b) * 2, then silu.
struct HostGraph {
    Context ctx{ggml_init({1 << 20, nullptr, false})};
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ggml_tensor * b = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ggml_tensor * out = ggml_scale(ctx.get(), ggml_add(ctx.get(), a, b), 2.0f);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());

    HostGraph() {
        const float av[4] = {1, 2, 3, 4}, bv[4] = {0.5f, 0.5f, -3, 0};
        std::memcpy(a->data, av, sizeof av);
        std::memcpy(b->data, bv, sizeof bv);
        ggml_build_forward_expand(graph, out);
    }
};

TEST(GraphCompute, ComputesHostGraphsWithAnyThreadCount) {
    for (int threads : {1, 2, 3}) {
        HostGraph g;
        Backend backend(ggml_backend_cpu_init());
        ggml_backend_cpu_set_n_threads(backend.get(), threads);
        ASSERT_EQ(ggml_backend_graph_compute(backend.get(), g.graph), GGML_STATUS_SUCCESS);
        const float * result = ggml_get_data_f32(g.out);
        EXPECT_EQ(result[0], 3.0f);
        EXPECT_EQ(result[1], 5.0f);
        EXPECT_EQ(result[2], 0.0f);
        EXPECT_EQ(result[3], 8.0f);
    }
}

TEST(GraphCompute, RejectsInvalidGraphs) {
    HostGraph g;
    ggml_build_forward_expand(g.graph, nullptr);
    Backend backend(ggml_backend_cpu_init());
    EXPECT_EQ(ggml_backend_graph_compute(backend.get(), g.graph), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "graph is invalid"));
}

TEST(GraphCompute, RejectsUnallocatedTensors) {
    Context ctx = metadata_context();
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    ggml_tensor * out = ggml_set_name(ggml_sqr(ctx.get(), a), "squared");
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, out);
    Backend backend(ggml_backend_cpu_init());
    EXPECT_EQ(ggml_backend_graph_compute(backend.get(), graph), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "'squared'"));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "not allocated"));
}

void fill_with_index(ggml_tensor * dst, int ith, int nth, void *) {
    auto * data = static_cast<float *>(dst->data);
    for (int64_t i = ith; i < ggml_nelements(dst); i += nth)
        data[i] = static_cast<float>(i);
}

TEST(GraphCompute, UnsupportedNodesFailWithTheirName) {
    // Untrusted input: refused with a status even in the default, aborting error mode.
    ScopedErrorMode aborting(GGML_EXT_ERROR_ABORT);
    Context ctx(ggml_init({1 << 20, nullptr, false}));
    ggml_tensor * node =
        ggml_custom_4d(ctx.get(), GGML_TYPE_F32, 4, 1, 1, 1, nullptr, 0, fill_with_index, 1, nullptr);
    ggml_set_name(node, "foreign");
    const uint32_t marker = GGML_CUSTOM_MARKER_EXTENSION;  // an extension node no kernel is registered for
    std::memcpy(node->op_params, &marker, sizeof marker);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, node);
    Backend backend(ggml_backend_cpu_init());
    EXPECT_FALSE(ggml_backend_supports_op(backend.get(), node));
    EXPECT_EQ(ggml_backend_graph_compute(backend.get(), graph), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "'foreign'"));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "not supported"));
}

TEST(GraphCompute, RunsCpuCallbacksOnTheirThreads) {
    Context ctx(ggml_init({1 << 20, nullptr, false}));
    ggml_tensor * node = ggml_custom_4d(ctx.get(), GGML_TYPE_F32, 37, 1, 1, 1, nullptr, 0, fill_with_index,
                                        GGML_N_TASKS_MAX, nullptr);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, node);
    Backend backend(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(backend.get(), 3);
    ASSERT_EQ(ggml_backend_graph_compute(backend.get(), graph), GGML_STATUS_SUCCESS);
    for (int i = 0; i < 37; ++i)
        EXPECT_EQ(ggml_get_data_f32(node)[i], static_cast<float>(i));
}

TEST(GraphCompute, AbortCallbackStopsTheGraph) {
    HostGraph g;
    Backend backend(ggml_backend_cpu_init());
    int calls = 0;
    ggml_backend_cpu_set_abort_callback(
        backend.get(),
        [](void * data) {
            ++*static_cast<int *>(data);
            return true;
        },
        &calls);
    EXPECT_EQ(ggml_backend_graph_compute(backend.get(), g.graph), GGML_STATUS_ABORTED);
    EXPECT_GE(calls, 1);
    ggml_backend_cpu_set_abort_callback(backend.get(), nullptr, nullptr);
    EXPECT_EQ(ggml_backend_graph_compute(backend.get(), g.graph), GGML_STATUS_SUCCESS);
}

TEST(GraphCompute, AsyncTransfersCompleteAfterSynchronize) {
    Context ctx = metadata_context();
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    Backend backend(ggml_backend_cpu_init());
    Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), backend.get()));
    const float in[4] = {1, 2, 3, 4};
    float out[4] = {};
    ASSERT_EQ(ggml_ext_backend_tensor_set_async(backend.get(), a, in, 0, sizeof in), GGML_STATUS_SUCCESS);
    ASSERT_EQ(ggml_ext_backend_tensor_get_async(backend.get(), a, out, 0, sizeof out), GGML_STATUS_SUCCESS);
    ggml_backend_synchronize(backend.get());
    EXPECT_EQ(std::memcmp(in, out, sizeof in), 0);
    EXPECT_EQ(ggml_ext_backend_tensor_set_async(backend.get(), a, in, 8, sizeof in), GGML_STATUS_FAILED);
}

}  // namespace
