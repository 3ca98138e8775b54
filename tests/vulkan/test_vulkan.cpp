// The Vulkan backend (ggml-vulkan.h, docs/vulkan.md): registry and devices, buffers (mapped and
// staged transfers), one submission per graph with barriers only on hazards, the errors of
// graph_compute, the pipeline cache's keys, and the scheduler over Vulkan + CPU against the CPU alone.
// Runs on Mesa lavapipe in
// CI; GGX_REQUIRE_VULKAN=1 (set by CTest) turns a missing device into a failure instead of a skip.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-vulkan.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/random_graph.h"
#include "support/test_util.h"
#include "vulkan/backend.h"
#include "vulkan/buffer.h"
#include "vulkan/kernels.h"
#include "vulkan/pipeline_cache.h"
#include "vulkan/vulkan_fixture.h"

namespace ggx::test {
namespace {

using Vulkan = VulkanTest;

TEST_F(Vulkan, RegistryListsNamedGpuDevicesWithMemory) {
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("vulkan");
    ASSERT_EQ(reg, ggml_backend_vk_reg());
    ggml_backend_dev_t dev = ggml_backend_dev_by_name("vulkan0");
    ASSERT_NE(dev, nullptr);
    EXPECT_EQ(ggml_backend_reg_dev_get(reg, 0), dev);
    EXPECT_STREQ(ggml_backend_dev_name(dev), "Vulkan0");
    EXPECT_GT(std::strlen(ggml_backend_dev_description(dev)), 0u);
    EXPECT_EQ(ggml_backend_dev_type(dev), GGML_BACKEND_DEVICE_TYPE_GPU);
    size_t free = 0, total = 0;
    ggml_backend_dev_memory(dev, &free, &total);
    EXPECT_GT(total, 0u);
    EXPECT_LE(free, total);
    EXPECT_FALSE(ggml_backend_buft_is_host(buft()));
    EXPECT_EQ(ggml_backend_buft_get_device(buft()), dev);
    EXPECT_EQ(ggml_backend_vk_buffer_type(ggml_backend_vk_get_device_count()), nullptr);
    EXPECT_EQ(ggml_backend_vk_init(ggml_backend_vk_get_device_count()), nullptr);
    EXPECT_TRUE(ggml_backend_is_vk(vk()));
    EXPECT_FALSE(ggml_backend_is_vk(cpu_backend()));
    EXPECT_STREQ(ggml_backend_name(vk()), "Vulkan0");
}

// Round trips through set/get/memset/clear and device-to-device copies, with the memory mapped and
// with every transfer through a staging buffer (GGX_VULKAN_STAGING=1, the discrete-GPU path).
TEST_F(Vulkan, BufferTransfersRoundTripMappedAndStaged) {
    for (const char * staging : {"0", "1"}) {
        setenv("GGX_VULKAN_STAGING", staging, 1);
        Context c(ggml_init({size_t{1} << 16, nullptr, true}));
        ggml_tensor * a = ggml_new_tensor_1d(c.get(), GGML_TYPE_F32, 1000);
        ggml_tensor * b = ggml_new_tensor_1d(c.get(), GGML_TYPE_F32, 1000);
        Buffer buffer(ggml_backend_alloc_ctx_tensors_from_buft(c.get(), buft()));
        ASSERT_NE(buffer, nullptr);
        const std::vector<float> v = ramp(1000, -3.0f, 0.01f);
        write_f32(a, v);
        EXPECT_EQ(read_f32(a), v) << "staging " << staging;
        ggml_backend_tensor_copy(a, b);
        EXPECT_EQ(read_f32(b), v);
        ggml_backend_tensor_memset(b, 0, 40, 8);  // elements 10 and 11
        std::vector<float> expected = v;
        expected[10] = expected[11] = 0.0f;
        EXPECT_EQ(read_f32(b), expected);
        ggml_backend_buffer_clear(buffer.get(), 0);
        EXPECT_EQ(read_f32(a), std::vector<float>(1000, 0.0f));
    }
    unsetenv("GGX_VULKAN_STAGING");
}

// The staging buffer holds 8 MiB: a 12 MB tensor goes through it in two chunks each way.
TEST_F(Vulkan, StagedTransfersLargerThanTheStagingBufferGoInChunks) {
    setenv("GGX_VULKAN_STAGING", "1", 1);
    ggml_tensor * a = input(3'000'000);
    alloc();
    unsetenv("GGX_VULKAN_STAGING");
    const std::vector<float> v = ramp(3'000'000, -1.0f, 1e-6f);
    write_f32(a, v);
    EXPECT_EQ(read_f32(a), v);
    ggml_backend_tensor_memset(a, 0, 2'000'000, 9'000'000);  // elements [500,000, 2,750,000)
    const std::vector<float> got = read_f32(a);
    for (size_t i = 0; i < got.size(); i += 997)
        EXPECT_EQ(got[i], i >= 500'000 && i < 2'750'000 ? 0.0f : v[i]) << i;
}

TEST_F(Vulkan, TensorsOfDifferentBuffersHaveDistinctAddresses) {
    Buffer first(ggml_backend_buft_alloc_buffer(buft(), 256));
    Buffer second(ggml_backend_buft_alloc_buffer(buft(), 256));
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    EXPECT_NE(ggml_backend_buffer_get_base(first.get()), ggml_backend_buffer_get_base(second.get()));
    EXPECT_EQ(ggml_backend_buffer_get_alignment(first.get()) % 16, 0u);
}

TEST_F(Vulkan, ComputesAGraphInOneSubmissionWithBarriersOnlyBetweenDependentNodes) {
    ggml_tensor * a = input(300, 7);
    ggml_tensor * b = input(300, 7);
    // Three independent nodes, then one reading them all, then one reading that.
    ggml_tensor * x = ggml_add(ctx(), a, b);
    ggml_tensor * y = ggml_mul(ctx(), a, b);
    ggml_tensor * z = ggml_scale(ctx(), a, 2.0f);
    ggml_tensor * sum = ggml_add(ctx(), ggml_add(ctx(), x, y), z);
    ggml_tensor * out = ggml_sqr(ctx(), sum);
    alloc();
    const std::vector<float> va = ramp(2100, -1.0f, 0.001f), vb = ramp(2100, 0.5f, -0.002f);
    write_f32(a, va);
    write_f32(b, vb);
    ASSERT_EQ(compute(out), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_EQ(vk_impl().last_dispatches(), 6u);
    // x, y, z run together; add(x, y), add(., z) and sqr each wait for their input.
    EXPECT_EQ(vk_impl().last_barriers(), 3u);
    const std::vector<float> got = read_f32(out);
    for (size_t i = 0; i < got.size(); ++i) {
        const float s = (va[i] + vb[i]) + va[i] * vb[i] + va[i] * 2.0f;
        EXPECT_NEAR(got[i], s * s, 1e-5f * (1.0f + s * s)) << i;
    }
}

// A graph is recorded into command buffers of at most Backend::kSubmitCommands commands, each
// submitted as soon as it is full, and waited for at the end.
TEST_F(Vulkan, SubmitsEveryHundredCommandsWhileRecording) {
    ggml_tensor * x = input(64);
    ggml_tensor * one = input(64);
    ggml_tensor * y = x;
    for (int i = 0; i < 250; ++i)
        y = ggml_add(ctx(), y, one);
    alloc();
    write_f32(x, std::vector<float>(64, 0.5f));
    write_f32(one, std::vector<float>(64, 1.0f));
    ggml_cgraph * graph = ggml_new_graph_custom(ctx(), 512, false);
    ggml_build_forward_expand(graph, y);
    ASSERT_EQ(ggml_backend_graph_compute(vk(), graph), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_EQ(vk_impl().last_dispatches(), 250u);
    EXPECT_EQ(vk_impl().last_submissions(), 3u);
    EXPECT_EQ(read_f32(y), std::vector<float>(64, 250.5f));
}

// Matrix products count their FLOPs: four products of 1.07 GFLOP fill one command buffer.
TEST_F(Vulkan, SubmitsOnceTheMatrixFlopsReachTheThreshold) {
    ggml_tensor * w = input(512, 1024);
    ggml_tensor * x = input(512, 1024);
    ggml_tensor * sum = nullptr;
    for (int i = 0; i < 4; ++i) {
        ggml_tensor * p = ggml_mul_mat(ctx(), w, x);  // 2 * 512 * 1024 * 1024 FLOPs
        sum = sum ? ggml_add(ctx(), sum, p) : p;
    }
    alloc();
    write_f32(w, std::vector<float>(512 * 1024, 0.25f));
    write_f32(x, std::vector<float>(512 * 1024, 0.5f));
    ASSERT_EQ(compute(sum), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_EQ(vk_impl().last_submissions(), 2u);  // the fourth product crosses 4e9; its add follows
    EXPECT_EQ(read_f32(sum), std::vector<float>(1024 * 1024, 4 * 512 * 0.125f));
}

TEST_F(Vulkan, RefusesNodesOutsideItsMemoryAndUnsupportedNodes) {
    ggml_tensor * a = input(16);
    ggml_tensor * y = ggml_add(ctx(), a, a);
    ggml_set_name(a, "host_input");
    Buffer host(ggml_backend_alloc_ctx_tensors(ctx(), cpu_backend()));
    ASSERT_EQ(compute(y), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "which Vulkan0 cannot access"))
        << ggml_backend_get_last_error();

    // A tensor larger than one storage-buffer binding may be cannot be bound: unsupported.
    const auto * type = static_cast<const vulkan::BufferType *>(buft());
    const int64_t too_many = static_cast<int64_t>(type->vulkan().limits().max_storage_range / 4 + 1024);
    Context c(ggml_init({size_t{1} << 20, nullptr, true}));
    ggml_tensor * big = ggml_new_tensor_1d(c.get(), GGML_TYPE_F32, too_many);
    ggml_tensor * unsupported = ggml_add(c.get(), big, big);
    ASSERT_NE(unsupported, nullptr);
    EXPECT_FALSE(ggml_backend_supports_op(vk(), unsupported));
    ggml_cgraph * graph = ggml_new_graph(c.get());
    ggml_build_forward_expand(graph, unsupported);
    EXPECT_EQ(ggml_backend_graph_compute(vk(), graph), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "is not supported")) << ggml_backend_get_last_error();
}

// Issue 16: the Vulkan kernel and sub-op tables are checked against the enums at compile time; a
// unary or GLU sub-op value outside them (a node built by a newer header, or corrupted) is refused
// by supports, so computing it is a reported error rather than another op's shader. So is one of
// ggml's sub-ops that has no Vulkan shader yet.
TEST_F(Vulkan, AnUnknownUnaryOrGluSubOpIsAReportedError) {
    ggml_tensor * a = input(16, 2);
    std::vector<ggml_tensor *> nodes;
    for (const int32_t unary_op : {static_cast<int32_t>(GGML_UNARY_OP_COUNT), -1}) {
        ggml_tensor * unary = ggml_relu(ctx(), a);
        ASSERT_TRUE(ggml_backend_supports_op(vk(), unary));
        std::memcpy(unary->op_params, &unary_op, sizeof unary_op);
        nodes.push_back(unary);
    }
    for (const int32_t glu_op : {static_cast<int32_t>(GGML_GLU_OP_COUNT), -1}) {
        ggml_tensor * glu = ggml_swiglu(ctx(), a);
        ASSERT_TRUE(ggml_backend_supports_op(vk(), glu));
        std::memcpy(glu->op_params, &glu_op, sizeof glu_op);
        nodes.push_back(glu);
    }
    alloc();
    for (ggml_tensor * node : nodes) {
        EXPECT_FALSE(ggml_backend_supports_op(vk(), node)) << ggml_op_desc(node);
        EXPECT_EQ(compute(node), GGML_STATUS_FAILED) << ggml_op_desc(node);
        EXPECT_TRUE(contains(ggml_backend_get_last_error(), "is not supported"))
            << ggml_backend_get_last_error();
    }
}

// SSM_SCAN with a state id outside the state slots: the CPU fails the node, a shader cannot, so
// that sequence's outputs and final states are NaN while the other sequence is computed
// (docs/vulkan.md). Mamba-1: d_state 3, one head of dim 1, 2 tokens, 2 sequences, 2 slots.
TEST_F(Vulkan, SsmScanWithAnIdOutsideTheSlotsGivesNanRows) {
    const int64_t N = 3, T = 2;
    ggml_tensor * s = ggml_new_tensor_4d(ctx(), GGML_TYPE_F32, N, 1, 1, 2);
    ggml_tensor * x = ggml_new_tensor_4d(ctx(), GGML_TYPE_F32, 1, 1, T, 2);
    ggml_tensor * dt = ggml_new_tensor_3d(ctx(), GGML_TYPE_F32, 1, T, 2);
    ggml_tensor * A = ggml_new_tensor_2d(ctx(), GGML_TYPE_F32, N, 1);
    ggml_tensor * B = ggml_new_tensor_4d(ctx(), GGML_TYPE_F32, N, 1, T, 2);
    ggml_tensor * C = ggml_new_tensor_4d(ctx(), GGML_TYPE_F32, N, 1, T, 2);
    ggml_tensor * ids = ggml_new_tensor_1d(ctx(), GGML_TYPE_I32, 2);
    ggml_tensor * out = ggml_ssm_scan(ctx(), s, x, dt, A, B, C, ids);
    ASSERT_NE(out, nullptr);
    alloc();
    // State 0 zero, x = 0: sequence 0's outputs and states stay 0.
    write_f32(s, std::vector<float>(2 * N, 0.0f));
    write_f32(x, std::vector<float>(2 * T, 0.0f));
    write_f32(dt, std::vector<float>(2 * T, 0.5f));
    write_f32(A, std::vector<float>(N, -1.0f));
    write_f32(B, std::vector<float>(2 * T * N, 1.0f));
    write_f32(C, std::vector<float>(2 * T * N, 1.0f));
    const int32_t id_values[2] = {0, 2};  // 2 is past the two slots
    ggml_backend_tensor_set(ids, id_values, 0, sizeof id_values);
    ASSERT_EQ(compute(out), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    const std::vector<float> got = read_f32(out);  // y [1, 1, T, 2], then states [N, 1, 1, 2]
    ASSERT_EQ(got.size(), static_cast<size_t>(2 * T + 2 * N));
    for (int64_t t = 0; t < T; ++t) {
        EXPECT_EQ(got[t], 0.0f) << t;
        EXPECT_TRUE(std::isnan(got[T + t])) << t;
    }
    for (int64_t n = 0; n < N; ++n) {
        EXPECT_EQ(got[2 * T + n], 0.0f) << n;
        EXPECT_TRUE(std::isnan(got[2 * T + N + n])) << n;
    }
}

// Vulkan computes every UNARY and GLU sub-op.
TEST_F(Vulkan, SupportsEverySubOp) {
    ggml_tensor * a = input(16, 2);
    for (const ggml_unary_op op : kUnaryOps)
        EXPECT_TRUE(ggml_backend_supports_op(vk(), ggml_unary(ctx(), a, op))) << op;
    for (const ggml_glu_op op : kGluOps)
        EXPECT_TRUE(ggml_backend_supports_op(vk(), ggml_glu(ctx(), a, op, false))) << op;
}

// Every entry of the Vulkan table is the one Kernel descriptor, kNative, named, with supports and
// execute (ops Vulkan lacks have the named "vulkan.unsupported" kernel, whose supports says no).
TEST_F(Vulkan, TheKernelTableHoldsNativeKernels) {
    for (const Kernel & kernel : vulkan::kernel_table()) {
        EXPECT_EQ(kernel.kind, Kernel::Kind::kNative) << kernel.name;
        EXPECT_NE(kernel.name, nullptr);
        EXPECT_NE(kernel.supports, nullptr) << kernel.name;
        EXPECT_NE(kernel.execute, nullptr) << kernel.name;
    }
}

// 2-D weights larger than one binding are multiplied in slices of rows, each bound on its own: the
// mat-vec (1 column) and the tiled GEMM (9 columns) products equal the double-precision product within
// float rounding. (A device with bindings above 256 MiB skips this: its weights would be too large.)
TEST_F(Vulkan, MultipliesWeightsLargerThanOneBindingInRowSlices) {
    const auto * type = static_cast<const vulkan::BufferType *>(buft());
    const uint64_t range = type->vulkan().limits().max_storage_range;
    if (range > (uint64_t{256} << 20)) GTEST_SKIP() << "bindings of " << range << " bytes";
    const int64_t k = 1024, rows = static_cast<int64_t>(range / (k * sizeof(float))) + 5;
    ggml_tensor * w = ggml_new_tensor_2d(ctx(), GGML_TYPE_F32, k, rows);
    ggml_tensor * x1 = input(k, 1);
    ggml_tensor * x9 = input(k, 9);
    ggml_tensor * y1 = ggml_mul_mat(ctx(), w, x1);
    ggml_tensor * y9 = ggml_mul_mat(ctx(), w, x9);
    EXPECT_TRUE(ggml_backend_supports_op(vk(), y1) && ggml_backend_supports_op(vk(), y9));
    alloc();
    std::vector<float> wv(static_cast<size_t>(k * rows)), xv(static_cast<size_t>(k * 9));
    for (size_t i = 0; i < wv.size(); ++i)
        wv[i] = static_cast<float>(static_cast<int>(i * 2654435761u % 2001) - 1000) / 1000.0f;
    for (size_t i = 0; i < xv.size(); ++i)
        xv[i] = std::sin(static_cast<float>(i));
    ggml_backend_tensor_set(w, wv.data(), 0, ggml_nbytes(w));
    ggml_backend_tensor_set(x1, xv.data(), 0, ggml_nbytes(x1));
    ggml_backend_tensor_set(x9, xv.data(), 0, ggml_nbytes(x9));
    ggml_cgraph * graph = ggml_new_graph(ctx());
    ggml_build_forward_expand(graph, y1);
    ggml_build_forward_expand(graph, y9);
    ASSERT_EQ(ggml_backend_graph_compute(vk(), graph), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    const std::vector<float> got1 = read_f32(y1), got9 = read_f32(y9);
    int64_t bad = 0;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < 9; ++c) {
            double exact = 0.0, magnitude = 0.0;
            for (int64_t i = 0; i < k; ++i) {
                const double product = double(wv[size_t(r * k + i)]) * double(xv[size_t(c * k + i)]);
                exact += product;
                magnitude += std::fabs(product);
            }
            const double bound = 1e-5 * magnitude + 1e-6;
            bad += std::fabs(got9[size_t(c * rows + r)] - exact) > bound;
            if (c == 0) bad += std::fabs(got1[size_t(r)] - exact) > bound;
        }
    EXPECT_EQ(bad, 0) << "of " << rows << " rows";
}

TEST_F(Vulkan, RefusesUnallocatedNodes) {
    ggml_tensor * a = input(16);
    ggml_tensor * y = ggml_add(ctx(), a, a);
    EXPECT_EQ(compute(y), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "not allocated")) << ggml_backend_get_last_error();
}

// The scheduler over Vulkan and the CPU, with random nodes pinned to the CPU so that every graph
// has several splits and copies both ways: results equal the CPU alone within float tolerance (the
// device's exp, division and summation order differ from the CPU's).
TEST_F(Vulkan, SchedulerOverVulkanAndCpuMatchesTheCpuAlone) {
    Backend cpu(ggml_backend_cpu_init());
    ggml_backend_t backends[] = {vk(), cpu.get()};
    int mixed = 0;
    for (uint32_t seed = 1; seed <= 60; ++seed) {
        Sched sched(ggml_backend_sched_new(backends, nullptr, 2, 2048, seed % 2 == 0, false));
        Rng rng(seed), ref_rng(seed);
        Context c(ggml_init({size_t{4} << 20, nullptr, true}));
        Context ref_c(ggml_init({size_t{4} << 20, nullptr, true}));
        RandomGraph g(c.get(), rng), ref(ref_c.get(), ref_rng);
        for (int i = 0; i < ggml_graph_n_nodes(g.graph); ++i) {
            if (rng.uniform(0, 1) < 0.3)
                ggml_backend_sched_set_tensor_backend(sched.get(), ggml_graph_node(g.graph, i), cpu.get());
        }
        ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph))
            << rng.trace() << ": " << ggml_backend_get_last_error();
        Buffer ref_buffer(ggml_backend_alloc_ctx_tensors(ref_c.get(), cpu.get()));
        RandomGraph::write_inputs(g, ref);
        ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS)
            << rng.trace() << ": " << ggml_backend_get_last_error();
        ASSERT_EQ(ggml_backend_graph_compute(cpu.get(), ref.graph), GGML_STATUS_SUCCESS);
        mixed += ggml_backend_sched_get_n_splits(sched.get()) > 1;
        const std::vector<float> got = read_f32(g.output), want = read_f32(ref.output);
        for (size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::fabs(want[i])))
                << rng.trace() << ", element " << i;
    }
    EXPECT_GT(mixed, 30);
}

// The cache keys a module by its complete words: with every hash equal, two distinct modules are two
// entries (each found again by its own words, its pipelines its own), never one for the other.
TEST(VulkanPipelineCache, ModulesWhoseHashesCollideStayDistinct) {
    vulkan::PipelineCache cache([](std::span<const uint32_t>) -> uint64_t { return 42; });
    const std::vector<uint32_t> first = {0x07230203u, 0x10000u, 0, 10, 0, 1, 2};
    std::vector<uint32_t> second = first;
    second.back() = 3;  // the same length and hash, one word apart
    const std::vector<uint32_t> prefix(first.begin(), first.end() - 1);
    vulkan::PipelineCache::Module & a = cache.module(first);
    vulkan::PipelineCache::Module & b = cache.module(second);
    vulkan::PipelineCache::Module & c = cache.module(prefix);
    EXPECT_NE(&a, &b);
    EXPECT_NE(&a, &c);
    EXPECT_NE(&b, &c);
    EXPECT_EQ(cache.n_modules(), 3u);
    EXPECT_EQ(&cache.module(first), &a);
    EXPECT_EQ(&cache.module(std::vector<uint32_t>(second)), &b);  // equal words at another address
    EXPECT_EQ(a.words, first);
    EXPECT_EQ(b.words, second);

    // Pipelines are per module and per complete list of specialisation constants.
    a.pipelines[{1, 2}] = {};
    a.pipelines[{1, 2, 0}] = {};
    b.pipelines[{1, 2}] = {};
    EXPECT_EQ(cache.n_pipelines(), 3u);
    EXPECT_EQ(cache.module(second).pipelines.size(), 1u);
    EXPECT_EQ(cache.n_modules(), 3u);
}

TEST(VulkanPipelineCache, TheDefaultHashCoversEveryWord) {
    std::vector<uint32_t> words(64, 7);
    const uint64_t h = vulkan::PipelineCache::hash_words(words);
    words[63] = 8;
    EXPECT_NE(vulkan::PipelineCache::hash_words(words), h);
}

}  // namespace
}  // namespace ggx::test
