// ggml-cpu.h's API around the CPU backend: thread pools (attached to backends, paused and resumed),
// graph computation on host tensors (ggml_graph_plan / ggml_graph_compute), the reference-kernel
// switch, feature queries against the kernel's view of this CPU, element access on every type and
// layout, row conversions and per-type CPU traits.
#include <dirent.h>
#include <ggml-cpp.h>
#include <ggml-cpu.h>
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/types.h"

namespace {

struct ThreadpoolFree {
    void operator()(ggml_threadpool * pool) const { ggml_threadpool_free(pool); }
};
using ThreadpoolPtr = std::unique_ptr<ggml_threadpool, ThreadpoolFree>;

ThreadpoolPtr make_pool(int n_threads, bool paused = false) {
    ggml_threadpool_params params = ggml_threadpool_params_default(n_threads);
    params.paused = paused;
    return ThreadpoolPtr(ggml_threadpool_new(&params));
}

ggml_context_ptr make_ctx(size_t bytes = 16 << 20, bool no_alloc = false) {
    return ggml_context_ptr(ggml_init({bytes, nullptr, no_alloc}));
}

int process_threads() {
    int n = 0;
    DIR * dir = opendir("/proc/self/task");
    while (const dirent * entry = readdir(dir))
        n += entry->d_name[0] != '.';
    closedir(dir);
    return n;
}

// The process's thread count once it reaches `expected`, or whatever it is after a second: a joined
// thread can still be listed in /proc/self/task for a moment after pthread_join returns.
int process_threads_settling_at(int expected) {
    using namespace std::chrono;
    const auto deadline = steady_clock::now() + seconds(1);
    int n = process_threads();
    while (n != expected && steady_clock::now() < deadline) {
        std::this_thread::sleep_for(milliseconds(1));
        n = process_threads();
    }
    return n;
}

// Records which threads ran a CPU-callback node and the nth they saw.
struct ThreadLog {
    std::mutex mutex;
    std::set<std::thread::id> threads;
    int nth = 0;
    int64_t hwy_targets = 0;
};

void log_threads(ggml_tensor *, int, int nth, void * data) {
    auto * log = static_cast<ThreadLog *>(data);
    std::lock_guard lock(log->mutex);
    log->threads.insert(std::this_thread::get_id());
    log->nth = nth;
    log->hwy_targets = hwy::SupportedTargets();
}

// A graph whose only node is a CPU callback run on every thread.
ggml_cgraph * callback_graph(ggml_context * ctx, ThreadLog * log) {
    ggml_tensor * node = ggml_custom_4d(ctx, GGML_TYPE_F32, 4, 1, 1, 1, nullptr, 0, log_threads, GGML_N_TASKS_MAX, log);
    ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, node);
    return graph;
}

TEST(CpuThreadpool, NewReportsItsThreadsAndRefusesBadCounts) {
    ThreadpoolPtr pool = make_pool(3);
    ASSERT_NE(pool, nullptr);
    EXPECT_EQ(ggml_threadpool_get_n_threads(pool.get()), 3);
    ggml_threadpool_params bad = ggml_threadpool_params_default(0);
    EXPECT_EQ(ggml_threadpool_new(&bad), nullptr);
    bad.n_threads = GGML_MAX_N_THREADS + 1;
    EXPECT_EQ(ggml_threadpool_new(&bad), nullptr);
}

TEST(CpuThreadpool, PauseStopsTheWorkersAndResumeStartsThem) {
    const int before = process_threads();
    ThreadpoolPtr pool = make_pool(4);
    EXPECT_EQ(process_threads_settling_at(before + 3), before + 3);
    ggml_threadpool_pause(pool.get());
    EXPECT_EQ(process_threads_settling_at(before), before);
    EXPECT_EQ(ggml_threadpool_get_n_threads(pool.get()), 4);
    ggml_threadpool_pause(pool.get());  // already paused
    ggml_threadpool_resume(pool.get());
    EXPECT_EQ(process_threads_settling_at(before + 3), before + 3);
    ThreadpoolPtr paused = make_pool(3, true);
    EXPECT_EQ(process_threads_settling_at(before + 3), before + 3);
}

TEST(CpuThreadpool, AttachedPoolComputesTheBackendsGraphs) {
    ggml_backend_ptr backend(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(backend.get(), 1);
    ThreadpoolPtr pool = make_pool(3, true);
    ggml_backend_cpu_set_threadpool(backend.get(), pool.get());
    EXPECT_EQ(ggml_backend_cpu_get_n_threads(backend.get()), 3);

    ggml_context_ptr ctx = make_ctx();
    ThreadLog log;
    const int before = process_threads();
    ASSERT_EQ(ggml_backend_graph_compute(backend.get(), callback_graph(ctx.get(), &log)), GGML_STATUS_SUCCESS);
    EXPECT_EQ(log.nth, 3);
    EXPECT_EQ(log.threads.size(), 3u);  // the pool's workers, resumed by the computation
    EXPECT_EQ(process_threads_settling_at(before + 2), before + 2);

    ggml_backend_cpu_set_threadpool(backend.get(), nullptr);  // back to the own pool
    ThreadLog own;
    ASSERT_EQ(ggml_backend_graph_compute(backend.get(), callback_graph(ctx.get(), &own)), GGML_STATUS_SUCCESS);
    EXPECT_EQ(own.nth, 1);
}

TEST(CpuThreadpool, AttachedPoolKeepsEachBackendsAbortCallback) {
    ThreadpoolPtr pool = make_pool(2);
    ggml_backend_ptr stopping(ggml_backend_cpu_init()), running(ggml_backend_cpu_init());
    ggml_backend_cpu_set_threadpool(stopping.get(), pool.get());
    ggml_backend_cpu_set_threadpool(running.get(), pool.get());
    ggml_backend_cpu_set_abort_callback(stopping.get(), [](void *) { return true; }, nullptr);
    ggml_context_ptr ctx = make_ctx();
    ThreadLog log;
    ggml_cgraph * graph = callback_graph(ctx.get(), &log);
    EXPECT_EQ(ggml_backend_graph_compute(stopping.get(), graph), GGML_STATUS_ABORTED);
    EXPECT_EQ(ggml_backend_graph_compute(running.get(), graph), GGML_STATUS_SUCCESS);
}

TEST(CpuUseRef, ReferenceKernelsRunOnTheBaselineTarget) {
    ggml_backend_ptr backend(ggml_backend_cpu_init());
    ggml_context_ptr ctx = make_ctx();
    ThreadLog fast, ref;
    ASSERT_EQ(ggml_backend_graph_compute(backend.get(), callback_graph(ctx.get(), &fast)), GGML_STATUS_SUCCESS);
    ggml_backend_cpu_set_use_ref(backend.get(), true);
    ASSERT_EQ(ggml_backend_graph_compute(backend.get(), callback_graph(ctx.get(), &ref)), GGML_STATUS_SUCCESS);
    EXPECT_EQ(ref.hwy_targets, HWY_STATIC_TARGET);
    EXPECT_EQ(hwy::SupportedTargets(), fast.hwy_targets);  // restored after the computation
}

// y = x W^T + b with F16 weights (the CPU converts x, so the plan has a work buffer).
struct MatmulGraph {
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * y = nullptr;
    ggml_cgraph * graph = nullptr;
    MatmulGraph() {
        ggml_tensor * w = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F16, 64, 48);
        ggml_tensor * x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 64, 40);
        ggml_tensor * b = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 48);
        for (int i = 0; i < 64 * 48; ++i)
            ggml_set_f32_1d(w, i, std::sin(0.1f * static_cast<float>(i)));
        for (int i = 0; i < 64 * 40; ++i)
            ggml_set_f32_1d(x, i, std::cos(0.3f * static_cast<float>(i)));
        for (int i = 0; i < 48; ++i)
            ggml_set_f32_1d(b, i, static_cast<float>(i));
        y = ggml_add(ctx.get(), ggml_mul_mat(ctx.get(), w, x), b);
        graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, y);
    }
    std::vector<float> result() const {
        const float * data = ggml_get_data_f32(y);
        return std::vector<float>(data, data + ggml_nelements(y));
    }
};

TEST(CpuGraphCompute, PlanAndComputeMatchTheCpuBackend) {
    MatmulGraph graph;
    ggml_cplan plan = ggml_graph_plan(graph.graph, 2, nullptr);
    EXPECT_EQ(plan.n_threads, 2);
    ASSERT_GT(plan.work_size, 0u);
    std::vector<uint8_t> work(plan.work_size);
    plan.work_data = work.data();
    ASSERT_EQ(ggml_graph_compute(graph.graph, &plan), GGML_STATUS_SUCCESS);
    const std::vector<float> computed = graph.result();

    ggml_set_zero(graph.y);
    ggml_backend_ptr backend(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(backend.get(), 2);
    ASSERT_EQ(ggml_backend_graph_compute(backend.get(), graph.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(computed, graph.result());
}

TEST(CpuGraphCompute, MissingWorkBufferAndAbortAreReported) {
    MatmulGraph graph;
    ggml_cplan plan = ggml_graph_plan(graph.graph, 1, nullptr);
    ASSERT_GT(plan.work_size, 0u);
    EXPECT_EQ(ggml_graph_compute(graph.graph, &plan), GGML_STATUS_FAILED);  // work_data not provided
    EXPECT_NE(std::string(ggml_backend_get_last_error()).find("workspace"), std::string::npos)
        << ggml_backend_get_last_error();
    std::vector<uint8_t> work(plan.work_size);
    plan.work_data = work.data();
    plan.abort_callback = [](void *) { return true; };
    EXPECT_EQ(ggml_graph_compute(graph.graph, &plan), GGML_STATUS_ABORTED);
}

TEST(CpuGraphCompute, WithCtxAndOnAThreadpool) {
    MatmulGraph graph;
    ASSERT_EQ(ggml_graph_compute_with_ctx(graph.ctx.get(), graph.graph, 2), GGML_STATUS_SUCCESS);
    const std::vector<float> expected = graph.result();

    ggml_set_zero(graph.y);
    ThreadpoolPtr pool = make_pool(2);
    ggml_cplan plan = ggml_graph_plan(graph.graph, GGML_DEFAULT_N_THREADS, pool.get());
    EXPECT_EQ(plan.n_threads, 2);
    EXPECT_EQ(plan.threadpool, pool.get());
    std::vector<uint8_t> work(plan.work_size);
    plan.work_data = work.data();
    ASSERT_EQ(ggml_graph_compute(graph.graph, &plan), GGML_STATUS_SUCCESS);
    EXPECT_EQ(graph.result(), expected);

    ThreadLog log;
    ggml_cgraph * callback = callback_graph(graph.ctx.get(), &log);
    ggml_cplan on_pool = ggml_graph_plan(callback, 0, pool.get());
    ASSERT_EQ(ggml_graph_compute(callback, &on_pool), GGML_STATUS_SUCCESS);
    EXPECT_EQ(log.nth, 2);
}

TEST(CpuGraphCompute, UnselectedBranchIsNotComputed) {
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * x = ggml_new_f32(ctx.get(), 3.0f);
    ThreadLog log;
    ggml_tensor * unselected =
        ggml_custom_4d(ctx.get(), GGML_TYPE_F32, 1, 1, 1, 1, &x, 1, log_threads, GGML_N_TASKS_MAX, &log);
    ggml_tensor * branches[] = {unselected, ggml_sqr(ctx.get(), x)};
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_tensor * y = ggml_build_forward_select(graph, branches, 2, 1);
    ASSERT_EQ(ggml_graph_compute_with_ctx(ctx.get(), graph, 1), GGML_STATUS_SUCCESS);
    EXPECT_EQ(ggml_get_f32_1d(y, 0), 9.0f);
    EXPECT_TRUE(log.threads.empty());
}

// The kernel's feature flags for this CPU (what it detected and enabled), from /proc/cpuinfo.
std::set<std::string> cpuinfo_flags() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("flags", 0) != 0) continue;
        std::istringstream words(line.substr(line.find(':') + 1));
        return {std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    }
    return {};
}

TEST(CpuFeatures, AnswerThisMachinesTruth) {
    ggml_cpu_init();
#if defined(__x86_64__)
    const std::set<std::string> flags = cpuinfo_flags();
    ASSERT_FALSE(flags.empty());
    const std::pair<int (*)(), const char *> checks[] = {
        {ggml_cpu_has_sse3, "pni"},           {ggml_cpu_has_ssse3, "ssse3"},
        {ggml_cpu_has_avx, "avx"},            {ggml_cpu_has_avx2, "avx2"},
        {ggml_cpu_has_fma, "fma"},            {ggml_cpu_has_f16c, "f16c"},
        {ggml_cpu_has_bmi2, "bmi2"},          {ggml_cpu_has_avx_vnni, "avx_vnni"},
        {ggml_cpu_has_avx512, "avx512f"},     {ggml_cpu_has_avx512_vbmi, "avx512vbmi"},
        {ggml_cpu_has_avx512_vnni, "avx512_vnni"}, {ggml_cpu_has_avx512_bf16, "avx512_bf16"},
        {ggml_cpu_has_amx_int8, "amx_int8"},
    };
    for (const auto & [query, flag] : checks)
        EXPECT_EQ(query(), flags.count(flag) ? 1 : 0) << flag;
    for (int (*other)() : {ggml_cpu_has_neon, ggml_cpu_has_arm_fma, ggml_cpu_has_fp16_va, ggml_cpu_has_dotprod,
                           ggml_cpu_has_matmul_int8, ggml_cpu_has_sve, ggml_cpu_get_sve_cnt, ggml_cpu_has_sme,
                           ggml_cpu_has_sme2, ggml_cpu_has_riscv_v, ggml_cpu_get_rvv_vlen, ggml_cpu_has_vsx,
                           ggml_cpu_has_vxe, ggml_cpu_has_wasm_simd})
        EXPECT_EQ(other(), 0);
#endif
    EXPECT_EQ(ggml_cpu_has_llamafile(), 0);
}

// The CPU registry's "ggml_backend_get_features": exactly the features the ggml_cpu_has_* queries
// report, value "1", NULL-terminated (AMX_BF16 has no query: it needs the tiles AMX_INT8 needs).
TEST(CpuFeatures, RegistryFeatureListMatchesTheQueries) {
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("CPU");
    auto get = reinterpret_cast<ggml_backend_get_features_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features"));
    ASSERT_NE(get, nullptr);
    std::set<std::string> listed;
    for (const ggml_backend_feature * f = get(reg); f->name; ++f) {
        EXPECT_STREQ(f->value, "1") << f->name;
        listed.insert(f->name);
    }
    const std::pair<int (*)(), const char *> named[] = {
        {ggml_cpu_has_sse3, "SSE3"},         {ggml_cpu_has_ssse3, "SSSE3"},
        {ggml_cpu_has_avx, "AVX"},           {ggml_cpu_has_avx_vnni, "AVX_VNNI"},
        {ggml_cpu_has_avx2, "AVX2"},         {ggml_cpu_has_bmi2, "BMI2"},
        {ggml_cpu_has_f16c, "F16C"},         {ggml_cpu_has_fma, "FMA"},
        {ggml_cpu_has_avx512, "AVX512"},     {ggml_cpu_has_avx512_vbmi, "AVX512_VBMI"},
        {ggml_cpu_has_avx512_vnni, "AVX512_VNNI"}, {ggml_cpu_has_avx512_bf16, "AVX512_BF16"},
        {ggml_cpu_has_amx_int8, "AMX_INT8"}, {ggml_cpu_has_neon, "NEON"},
        {ggml_cpu_has_arm_fma, "ARM_FMA"},   {ggml_cpu_has_fp16_va, "FP16_VA"},
        {ggml_cpu_has_dotprod, "DOTPROD"},   {ggml_cpu_has_matmul_int8, "MATMUL_INT8"},
        {ggml_cpu_has_sve, "SVE"},           {ggml_cpu_has_sme, "SME"},
        {ggml_cpu_has_sme2, "SME2"},
    };
    for (const auto & [query, name] : named) {
        EXPECT_EQ(listed.count(name), query() ? 1u : 0u) << name;
        listed.erase(name);
    }
    listed.erase("AMX_BF16");
    EXPECT_TRUE(listed.empty()) << *listed.begin();
}

TEST(CpuFeatures, NumaFollowsTheSystemsNodes) {
    int nodes = 0;
    if (DIR * dir = opendir("/sys/devices/system/node")) {
        while (const dirent * entry = readdir(dir))
            nodes += std::strncmp(entry->d_name, "node", 4) == 0 && std::isdigit(entry->d_name[4]);
        closedir(dir);
    }
    ggml_numa_init(GGML_NUMA_STRATEGY_DISTRIBUTE);
    EXPECT_EQ(ggml_is_numa(), nodes > 1);
}

// A tensor whose type ggx has no conversion for (every ggml type has one now: a forged removed id)
// is refused with a message rather than read as garbage.
TEST(CpuElementAccessDeathTest, TypesWithoutConversionAbort) {
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_I8, 32);
    a->type = static_cast<ggml_type>(4);  // Q4_2's removed id
    EXPECT_DEATH(ggml_get_f32_1d(a, 0), "unknown, a type ggx has no element conversion for");
    EXPECT_DEATH(ggml_set_i32_1d(a, 0, 1), "unknown, a type ggx has no element conversion for");
}

// What a row of n zeros with v at column i reads back as through the type's row conversions: the
// value an element set alone in its block holds.
float stored_alone(ggml_type type, int64_t n, int64_t i, float v) {
    std::vector<float> row(static_cast<size_t>(n), 0.0f);
    row[static_cast<size_t>(i)] = v;
    std::vector<char> q(ggml_row_size(type, n));
    ggml_quantize_row(type, row.data(), q.data(), n);
    ggml_dequantize_row(type, q.data(), row.data(), n);
    return row[static_cast<size_t>(i)];
}

TEST(CpuElementAccess, EveryTypeReadsAndWritesThroughAnyLayout) {
    ggml_context_ptr ctx = make_ctx();
    constexpr int kRow = 256;  // a multiple of every block size
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const auto type = static_cast<ggml_type>(t);
        if (!ggx::core::has_conversion(type)) continue;  // refused: TypesWithoutConversionAbort
        // Q1_0 keeps only the signs and the mean magnitude of a block (test_quant_ternary).
        if (type == GGML_TYPE_Q1_0) continue;
        const float big = stored_alone(type, kRow, 5, 7.0f), small = stored_alone(type, kRow, 1, -2.0f);
        if (!ggml_is_quantized(type)) {
            EXPECT_EQ(big, 7.0f) << ggml_type_name(type);
            EXPECT_EQ(small, -2.0f) << ggml_type_name(type);
        }
        ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), type, kRow, 3);
        ggml_set_zero(a);
        ggml_set_f32_nd(a, 5, 2, 0, 0, 7.0f);
        EXPECT_EQ(ggml_get_f32_nd(a, 5, 2, 0, 0), big) << ggml_type_name(type);
        EXPECT_EQ(ggml_get_f32_1d(a, 2 * kRow + 5), big) << ggml_type_name(type);
        EXPECT_EQ(ggml_get_i32_1d(a, 2 * kRow + 5), static_cast<int32_t>(big)) << ggml_type_name(type);
        ggml_set_i32_1d(a, kRow + 1, -2);
        EXPECT_EQ(ggml_get_f32_nd(a, 1, 1, 0, 0), small) << ggml_type_name(type);
        EXPECT_EQ(ggml_get_f32_nd(a, 0, 0, 0, 0), 0.0f) << ggml_type_name(type);
        if (ggml_is_quantized(type)) continue;  // a transposed view of block types has no element stride
        ggml_tensor * transposed = ggml_transpose(ctx.get(), a);  // [3, kRow], non-contiguous
        EXPECT_EQ(ggml_get_f32_nd(transposed, 2, 5, 0, 0), 7.0f) << ggml_type_name(type);
        EXPECT_EQ(ggml_get_f32_1d(transposed, 5 * 3 + 2), 7.0f) << ggml_type_name(type);
        ggml_set_f32_1d(transposed, 1, 4.0f);  // element (1, 0) of the view is (0, 1) of a
        EXPECT_EQ(ggml_get_f32_nd(a, 0, 1, 0, 0), 4.0f) << ggml_type_name(type);
    }
}

// F64 and I64 elements beyond float's range and precision: the i32 and f32 accessors saturate and
// round once.
TEST(CpuElementAccess, WideTypesKeepTheirValues) {
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * wide = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F64, 3);
    const double values[] = {1.0 + 0x1p-40, 1e300, -3.5};
    std::memcpy(wide->data, values, sizeof values);
    EXPECT_EQ(ggml_get_f32_1d(wide, 0), 1.0f);
    EXPECT_EQ(ggml_get_f32_1d(wide, 1), INFINITY);
    EXPECT_EQ(ggml_get_i32_1d(wide, 1), INT32_MAX);
    EXPECT_EQ(ggml_get_i32_1d(wide, 2), -3);  // C conversion: truncation
    ggml_set_i32_1d(wide, 0, INT32_MIN);
    EXPECT_EQ(static_cast<const double *>(wide->data)[0], -2147483648.0);

    ggml_tensor * longs = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_I64, 3);
    const int64_t ints[] = {INT64_MAX, -(int64_t{1} << 40), 16777217};
    std::memcpy(longs->data, ints, sizeof ints);
    EXPECT_EQ(ggml_get_i32_1d(longs, 0), INT32_MAX);
    EXPECT_EQ(ggml_get_i32_1d(longs, 1), INT32_MIN);
    EXPECT_EQ(ggml_get_f32_1d(longs, 1), -0x1p40f);
    EXPECT_EQ(ggml_get_f32_1d(longs, 2), 16777216.0f);
    ggml_set_f32_1d(longs, 0, 1e30f);
    ggml_set_f32_1d(longs, 1, -2.9f);
    EXPECT_EQ(static_cast<const int64_t *>(longs->data)[0], INT64_MAX);
    EXPECT_EQ(static_cast<const int64_t *>(longs->data)[1], -2);
}

TEST(CpuElementAccess, ConversionsTruncateAndSaturate) {
    ggml_context_ptr ctx = make_ctx();
    ggml_tensor * bytes = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_I8, 4);
    ggml_set_f32_1d(bytes, 0, 2.9f);
    ggml_set_f32_1d(bytes, 1, -2.9f);
    ggml_set_f32_1d(bytes, 2, 1000.0f);
    ggml_set_i32_1d(bytes, 3, -1000);
    EXPECT_EQ(ggml_get_i32_1d(bytes, 0), 2);
    EXPECT_EQ(ggml_get_i32_1d(bytes, 1), -2);
    EXPECT_EQ(ggml_get_i32_1d(bytes, 2), 127);
    EXPECT_EQ(ggml_get_i32_1d(bytes, 3), -128);
    ggml_tensor * halves = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F16, 5);
    EXPECT_EQ(ggml_set_f32(halves, 0.1f), halves);
    for (int i = 0; i < 5; ++i)
        EXPECT_EQ(ggml_get_f32_1d(halves, i), ggml_fp16_to_fp32(ggml_fp32_to_fp16(0.1f)));
    EXPECT_EQ(ggml_get_i32_1d(ggml_set_i32(halves, 3), 4), 3);
}

TEST(CpuElementAccess, NewScalarsHaveDataInNoAllocContexts) {
    ggml_context_ptr ctx = make_ctx(1 << 16, true);
    ggml_tensor * i = ggml_new_i32(ctx.get(), -7);
    ggml_tensor * f = ggml_new_f32(ctx.get(), 2.5f);
    ASSERT_NE(i->data, nullptr);
    EXPECT_EQ(i->type, GGML_TYPE_I32);
    EXPECT_EQ(ggml_get_i32_1d(i, 0), -7);
    EXPECT_EQ(ggml_get_f32_1d(f, 0), 2.5f);
    EXPECT_TRUE(ggml_get_no_alloc(ctx.get()));
    EXPECT_EQ(ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4)->data, nullptr);
}

TEST(CpuElementAccessDeathTest, TensorsWithoutHostDataAbort) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    ggml_context_ptr ctx = make_ctx(1 << 16, true);
    ggml_tensor * t = ggml_set_name(ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4), "unallocated");
    EXPECT_DEATH(ggml_get_f32_1d(t, 0), "ggml_get_f32_1d: tensor 'unallocated' has no data in host memory");
    ggml_context_ptr data = make_ctx(1 << 16);
    ggml_tensor * small = ggml_new_tensor_1d(data.get(), GGML_TYPE_F32, 4);
    EXPECT_DEATH(ggml_set_f32_nd(small, 4, 0, 0, 0, 1.0f), "index 4 of dimension 0");
}

TEST(CpuConversions, RowsConvertLikeTheScalarConversions) {
    const std::vector<float> x = {0.1f, -2.5f, 65504.0f, 1e-8f, -0.0f, 3.75f, 1e9f, -1e9f};
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<ggml_fp16_t> halves(x.size());
    std::vector<ggml_bf16_t> brains(x.size());
    std::vector<float> back(x.size()), copy(x.size());
    std::vector<int32_t> ints(x.size());
    ggml_cpu_fp32_to_fp16(x.data(), halves.data(), n);
    ggml_cpu_fp32_to_bf16(x.data(), brains.data(), n);
    ggml_cpu_fp32_to_i32(x.data(), ints.data(), n);
    ggml_cpu_fp32_to_fp32(x.data(), copy.data(), n);
    EXPECT_EQ(copy, x);
    for (size_t k = 0; k < x.size(); ++k) {
        EXPECT_EQ(halves[k], ggml_fp32_to_fp16(x[k]));
        EXPECT_EQ(brains[k].bits, ggml_fp32_to_bf16(x[k]).bits);
        EXPECT_EQ(ints[k], static_cast<int32_t>(x[k]));
    }
    ggml_cpu_fp16_to_fp32(halves.data(), back.data(), n);
    for (size_t k = 0; k < x.size(); ++k)
        EXPECT_EQ(back[k], ggml_fp16_to_fp32(halves[k]));
    ggml_cpu_bf16_to_fp32(brains.data(), back.data(), n);
    for (size_t k = 0; k < x.size(); ++k)
        EXPECT_EQ(back[k], ggml_bf16_to_fp32(brains[k]));
}

TEST(CpuTypeTraits, DotProductsOfRowsAndTheirVecDotTypes) {
    const int n = 64;
    std::vector<float> x(n), y(n);
    for (int k = 0; k < n; ++k) {
        x[k] = std::sin(0.7f * k);
        y[k] = std::cos(0.2f * k);
    }
    for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0}) {
        const ggml_type_traits_cpu * traits = ggml_get_type_traits_cpu(type);
        ASSERT_NE(traits, nullptr);
        ASSERT_NE(traits->vec_dot, nullptr);
        EXPECT_EQ(traits->nrows, 1);
        EXPECT_EQ(traits->vec_dot_type, ggml_is_quantized(type) ? GGML_TYPE_Q8_0 : type);
        std::vector<char> qx(ggml_row_size(type, n)), qy(ggml_row_size(traits->vec_dot_type, n));
        traits->from_float(x.data(), qx.data(), n);
        ggml_get_type_traits_cpu(traits->vec_dot_type)->from_float(y.data(), qy.data(), n);
        std::vector<float> dx(n), dy(n);
        ggml_dequantize_row(type, qx.data(), dx.data(), n);
        ggml_dequantize_row(traits->vec_dot_type, qy.data(), dy.data(), n);
        double expected = 0;
        for (int k = 0; k < n; ++k)
            expected += static_cast<double>(dx[k]) * dy[k];
        float s = 0;
        traits->vec_dot(n, &s, 0, qx.data(), 0, qy.data(), 0, 1);
        EXPECT_FLOAT_EQ(s, static_cast<float>(expected)) << ggml_type_name(type);
    }
    EXPECT_EQ(ggml_get_type_traits_cpu(GGML_TYPE_I32)->vec_dot, nullptr);
    EXPECT_EQ(ggml_get_type_traits_cpu(GGML_TYPE_COUNT), nullptr);
}

}  // namespace
