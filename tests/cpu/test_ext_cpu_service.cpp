// The ggml_ext_cpu_parallel_v1 backend service: discovery, its size/version header, dispatch on the
// backend's own pool, abort and failure propagation, refusals (no CPU pool, nested runs), and the pool
// still computing graphs after each of these. Per-thread results are plain (non-atomic) slots indexed
// by ith, so that ThreadSanitizer checks that run() orders them before it returns.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "interface/backend-impl.h"
#include "support/test_util.h"

namespace {

using ggx::test::Backend;
using ggx::test::Buffer;
using ggx::test::contains;
using ggx::test::Context;
using Clock = std::chrono::steady_clock;

// Long tasks give up after this, so that a missing stop fails the test instead of hanging it.
constexpr auto kPatience = std::chrono::seconds(20);

const ggml_ext_cpu_parallel_v1 * service() {
    return static_cast<const ggml_ext_cpu_parallel_v1 *>(
        ggml_backend_reg_get_proc_address(ggml_backend_cpu_reg(), GGML_EXT_CPU_PARALLEL_V1));
}

// A virtual device of the CPU registry, added once per process.
ggml_backend_dev_t virtual_device() {
    static const ggml_op ops[] = {GGML_OP_MUL_MAT, GGML_OP_ADD};
    static ggml_backend_dev_t device = ggml_backend_cpu_add_virtual_device("ext-svc-vdev", ops, 2);
    return device;
}

// Computes (a x b) + c on backend with small integer values (exact in f32) and checks every element.
void expect_graph_computes(ggml_backend_t backend) {
    constexpr int K = 48, M = 37, N = 29;
    Context ctx(ggml_init({1 << 20, nullptr, true}));
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, K, M);
    ggml_tensor * b = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, K, N);
    ggml_tensor * c = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, M, N);
    ggml_tensor * out = ggml_add(ctx.get(), ggml_mul_mat(ctx.get(), a, b), c);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, out);
    Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), backend));
    ASSERT_NE(buffer, nullptr) << ggml_backend_get_last_error();

    std::vector<float> va(K * M), vb(K * N), vc(M * N), vout(M * N);
    for (size_t i = 0; i < va.size(); ++i)
        va[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
    for (size_t i = 0; i < vb.size(); ++i)
        vb[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
    for (size_t i = 0; i < vc.size(); ++i)
        vc[i] = static_cast<float>(i % 3);
    ggml_backend_tensor_set(a, va.data(), 0, ggml_nbytes(a));
    ggml_backend_tensor_set(b, vb.data(), 0, ggml_nbytes(b));
    ggml_backend_tensor_set(c, vc.data(), 0, ggml_nbytes(c));
    ASSERT_EQ(ggml_backend_graph_compute(backend, graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    ggml_backend_tensor_get(out, vout.data(), 0, ggml_nbytes(out));
    for (int j = 0; j < N; ++j) {
        for (int i = 0; i < M; ++i) {
            float expected = vc[j * M + i];
            for (int k = 0; k < K; ++k)
                expected += va[i * K + k] * vb[j * K + k];
            ASSERT_EQ(vout[j * M + i], expected) << "row " << i << ", column " << j;
        }
    }
}

// What one run saw, per thread index of the pool.
struct Seen {
    explicit Seen(int pool_threads) : calls(pool_threads, 0), nth(pool_threads, -1), ids(pool_threads) {}
    std::vector<int> calls;
    std::vector<int> nth;
    std::vector<std::thread::id> ids;
    void * user_data = nullptr;  // written by task 0 only
};

void record(const ggml_ext_cpu_task * task) {
    auto * seen = static_cast<Seen *>(task->user_data);
    ++seen->calls[task->ith];  // a duplicated ith would also be a data race
    seen->nth[task->ith] = task->nth;
    seen->ids[task->ith] = std::this_thread::get_id();
    if (task->ith == 0) seen->user_data = task->user_data;
}

// Runs record with n_tasks and checks that indices 0 .. expected-1 each ran once with nth == expected.
Seen expect_each_index_once(ggml_backend_t backend, int n_tasks, int expected) {
    const int pool = ggml_backend_cpu_get_n_threads(backend);
    Seen seen(pool);
    EXPECT_EQ(service()->run(backend, &record, &seen, n_tasks), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    for (int i = 0; i < pool; ++i) {
        EXPECT_EQ(seen.calls[i], i < expected ? 1 : 0) << "ith " << i << ", n_tasks " << n_tasks;
        if (i < expected) {
            EXPECT_EQ(seen.nth[i], expected) << "ith " << i << ", n_tasks " << n_tasks;
        }
    }
    EXPECT_EQ(seen.user_data, &seen);
    EXPECT_EQ(seen.ids[0], std::this_thread::get_id()) << "the caller is thread 0";
    return seen;
}

// Issue: "Service tables carry a size/version field from day one." Spec: services "are discovered
// through ggml_backend_reg_get_proc_address".
TEST(CpuParallelService, IsFoundByNameWithSizeAndVersion) {
    const ggml_ext_cpu_parallel_v1 * table = service();
    ASSERT_NE(table, nullptr);
    EXPECT_EQ(table, service()) << "one table for the process";
    EXPECT_EQ(table->struct_size, sizeof(ggml_ext_cpu_parallel_v1));
    EXPECT_EQ(table->version, static_cast<uint32_t>(GGML_EXT_CPU_PARALLEL_V1_VERSION));
    EXPECT_NE(table->n_threads, nullptr);
    EXPECT_NE(table->run, nullptr);
    EXPECT_NE(table->should_stop, nullptr);
    EXPECT_NE(table->fail, nullptr);
    EXPECT_STREQ(GGML_EXT_CPU_PARALLEL_V1, "ggml_ext_cpu_parallel_v1");
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    EXPECT_EQ(ggml_backend_reg_get_proc_address(reg, "ggml_ext_cpu_parallel_v2"), nullptr);
    EXPECT_EQ(ggml_backend_reg_get_proc_address(reg, "ggml_ext_no_such_service_v1"), nullptr);
    EXPECT_EQ(ggml_backend_reg_get_proc_address(reg, nullptr), nullptr);
}

// Header: "Call fn on every thread of the backend's pool (n_tasks > 0: on that many, at most all)
// and wait."
TEST(CpuParallelService, EveryThreadIndexRunsOnce) {
    Backend backend(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(backend.get(), 4);
    for (int round = 0; round < 10; ++round) {
        expect_each_index_once(backend.get(), 0, 4);
        expect_each_index_once(backend.get(), -3, 4);
        expect_each_index_once(backend.get(), 1, 1);
        expect_each_index_once(backend.get(), 3, 3);
        expect_each_index_once(backend.get(), 4, 4);
        expect_each_index_once(backend.get(), 1000, 4);
    }
    expect_graph_computes(backend.get());
}

// Spec: "Run an application callback on the CPU backend's configured thread pool" — the persistent
// threads graph_compute uses, not new ones per call.
TEST(CpuParallelService, RunsOnThePersistentPool) {
    Backend backend(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(backend.get(), 3);
    const Seen first = expect_each_index_once(backend.get(), 0, 3);
    expect_graph_computes(backend.get());
    const Seen second = expect_each_index_once(backend.get(), 0, 3);
    EXPECT_EQ(first.ids, second.ids);
    EXPECT_EQ(std::set<std::thread::id>(first.ids.begin(), first.ids.end()).size(), 3u);
}

// Header: "Threads of the backend's pool (a CPU-kernel backend: CPU or a virtual device), or 0."
TEST(CpuParallelService, NThreadsFollowsTheConfiguredPool) {
    Backend backend(ggml_backend_cpu_init());
    EXPECT_EQ(service()->n_threads(backend.get()), ggml_backend_cpu_get_n_threads(backend.get()));
    for (int n : {1, 3, 6, 2}) {
        ggml_backend_cpu_set_n_threads(backend.get(), n);
        EXPECT_EQ(service()->n_threads(backend.get()), n);
        expect_each_index_once(backend.get(), 0, n);
    }
    EXPECT_EQ(service()->n_threads(nullptr), 0);
    expect_graph_computes(backend.get());
}

struct AbortState {
    std::atomic<int> calls{0};
    int stop_after = 0;  // the callback returns true from this call on
};

bool abort_after(void * data) {
    auto * state = static_cast<AbortState *>(data);
    return state->calls.fetch_add(1) + 1 >= state->stop_after;
}

struct LongRun {
    explicit LongRun(int n) : saw_stop(n, 0), gave_up(n, 0) {}
    const ggml_ext_cpu_parallel_v1 * svc = service();
    std::vector<int> saw_stop;
    std::vector<int> gave_up;
};

// Polls should_stop until it says stop (or patience runs out).
void run_until_stopped(const ggml_ext_cpu_task * task) {
    auto * run = static_cast<LongRun *>(task->user_data);
    const auto deadline = Clock::now() + kPatience;
    while (!run->svc->should_stop(task)) {
        if (Clock::now() > deadline) {
            run->gave_up[task->ith] = 1;
            return;
        }
        std::this_thread::yield();
    }
    run->saw_stop[task->ith] = 1;
}

// Spec: "... on the CPU backend's configured thread pool, with its abort callback." Header: "ABORTED
// when the backend's abort callback asked to stop"; should_stop is "true once the abort callback asked
// to stop".
TEST(CpuParallelService, AbortCallbackStopsLongTasks) {
    Backend backend(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(backend.get(), 4);
    AbortState abort;
    abort.stop_after = 5;
    ggml_backend_cpu_set_abort_callback(backend.get(), &abort_after, &abort);
    LongRun run(4);
    EXPECT_EQ(service()->run(backend.get(), &run_until_stopped, &run, 0), GGML_STATUS_ABORTED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "abort callback")) << ggml_backend_get_last_error();
    EXPECT_GE(abort.calls.load(), 5);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(run.saw_stop[i], 1) << "ith " << i;
        EXPECT_EQ(run.gave_up[i], 0) << "ith " << i;
    }

    ggml_backend_cpu_set_abort_callback(backend.get(), nullptr, nullptr);
    expect_each_index_once(backend.get(), 0, 4);
    expect_graph_computes(backend.get());
}

void do_nothing(const ggml_ext_cpu_task *) {}

// Header: "ABORTED when the backend's abort callback asked to stop": asked once after fn returns, so
// tasks that never poll are covered too; a callback that does not ask lets the run succeed.
TEST(CpuParallelService, AbortCallbackIsAskedEvenWhenTasksDoNotPoll) {
    Backend backend(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(backend.get(), 2);
    AbortState always;
    always.stop_after = 1;
    ggml_backend_cpu_set_abort_callback(backend.get(), &abort_after, &always);
    EXPECT_EQ(service()->run(backend.get(), &do_nothing, nullptr, 0), GGML_STATUS_ABORTED);
    EXPECT_GE(always.calls.load(), 1);

    AbortState never;
    never.stop_after = 1 << 30;
    ggml_backend_cpu_set_abort_callback(backend.get(), &abort_after, &never);
    EXPECT_EQ(service()->run(backend.get(), &do_nothing, nullptr, 0), GGML_STATUS_SUCCESS);
    EXPECT_GE(never.calls.load(), 1);
    expect_each_index_once(backend.get(), 0, 2);
    expect_graph_computes(backend.get());
}

struct FailRun : LongRun {
    using LongRun::LongRun;
};

// Task 1 fails first; task 2 fails only after seeing should_stop, so its message must lose.
void fail_in_task_one(const ggml_ext_cpu_task * task) {
    auto * run = static_cast<FailRun *>(task->user_data);
    if (task->ith == 1) {
        run->svc->fail(task, "bad input: first failure");
        run->saw_stop[1] = run->svc->should_stop(task) ? 1 : 0;
        return;
    }
    run_until_stopped(task);
    if (task->ith == 2) run->svc->fail(task, "second failure");
}

// Header: "FAILED after a task called fail (message in ggml_backend_get_last_error)"; fail: "the
// first failure wins; the other tasks see should_stop".
TEST(CpuParallelService, FailStopsTheRunWithTheFirstMessage) {
    Backend backend(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(backend.get(), 4);
    FailRun run(4);
    EXPECT_EQ(service()->run(backend.get(), &fail_in_task_one, &run, 0), GGML_STATUS_FAILED);
    const std::string error = ggml_backend_get_last_error();
    EXPECT_TRUE(contains(error, "bad input: first failure")) << error;
    EXPECT_TRUE(contains(error, "task 1 of 4")) << error;
    EXPECT_FALSE(contains(error, "second failure")) << error;
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(run.saw_stop[i], 1) << "ith " << i;
        EXPECT_EQ(run.gave_up[i], 0) << "ith " << i;
    }

    // The failure does not outlive its run.
    expect_each_index_once(backend.get(), 0, 4);
    expect_graph_computes(backend.get());
}

void fail_without_message(const ggml_ext_cpu_task * task) { service()->fail(task, nullptr); }

// Header: fail "the run with message"; a NULL message still fails it, with a placeholder.
TEST(CpuParallelService, FailWithoutMessageStillFails) {
    Backend backend(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(backend.get(), 1);
    EXPECT_EQ(service()->run(backend.get(), &fail_without_message, nullptr, 0), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "no message")) << ggml_backend_get_last_error();
    expect_graph_computes(backend.get());
}

// A backend of the CPU registry's device that does not run the CPU kernels on a pool.
class NotAPoolBackend final : public ggml_backend {
public:
    const char * name() const override { return "not-a-pool"; }
    ggml_backend_dev_t device() const override { return ggml_backend_reg_dev_get(ggml_backend_cpu_reg(), 0); }
    ggml_status compute_native(std::span<const ggx::NativeNode>, const ggx::Workspace &) override {
        return GGML_STATUS_SUCCESS;
    }
    bool can_access(ggml_backend_buffer_type_t) const override { return true; }
};

void count_calls(const ggml_ext_cpu_task * task) {
    static_cast<std::atomic<int> *>(task->user_data)->fetch_add(1);
}

// Header: run is FAILED "for a backend without a CPU thread pool"; n_threads is 0 for it. A NULL fn
// is refused the same way.
TEST(CpuParallelService, RefusesBackendsWithoutAPoolAndNullCallbacks) {
    NotAPoolBackend other;
    std::atomic<int> calls{0};
    EXPECT_EQ(service()->n_threads(&other), 0);
    EXPECT_EQ(service()->run(&other, &count_calls, &calls, 0), GGML_STATUS_FAILED);
    const std::string error = ggml_backend_get_last_error();
    EXPECT_TRUE(contains(error, "not-a-pool")) << error;
    EXPECT_TRUE(contains(error, "no CPU thread pool")) << error;
    EXPECT_EQ(service()->run(nullptr, &count_calls, &calls, 0), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "NULL")) << ggml_backend_get_last_error();
    EXPECT_EQ(calls.load(), 0);

    Backend backend(ggml_backend_cpu_init());
    EXPECT_EQ(service()->run(backend.get(), nullptr, nullptr, 0), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "fn is NULL")) << ggml_backend_get_last_error();
    ggml_backend_cpu_set_n_threads(backend.get(), 2);
    expect_each_index_once(backend.get(), 0, 2);
    expect_graph_computes(backend.get());
}

// Header: "a CPU-kernel backend: CPU or a virtual device" — a virtual device's backend runs the CPU
// kernels on its own pool, with its own thread count and abort callback, so it is served.
TEST(CpuParallelService, ServesVirtualDeviceBackends) {
    ggml_backend_dev_t device = virtual_device();
    ASSERT_NE(device, nullptr) << ggml_backend_get_last_error();
    Backend backend(ggml_backend_dev_init(device, nullptr));
    ASSERT_NE(backend, nullptr);
    EXPECT_FALSE(ggml_backend_is_cpu(backend.get()));
    ggml_backend_cpu_set_n_threads(backend.get(), 3);
    EXPECT_EQ(service()->n_threads(backend.get()), 3);
    expect_each_index_once(backend.get(), 0, 3);
    expect_each_index_once(backend.get(), 2, 2);

    AbortState abort;
    abort.stop_after = 3;
    ggml_backend_cpu_set_abort_callback(backend.get(), &abort_after, &abort);
    LongRun run(3);
    EXPECT_EQ(service()->run(backend.get(), &run_until_stopped, &run, 0), GGML_STATUS_ABORTED);
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(run.saw_stop[i], 1) << "ith " << i;
    ggml_backend_cpu_set_abort_callback(backend.get(), nullptr, nullptr);
    expect_graph_computes(backend.get());
    expect_each_index_once(backend.get(), 0, 3);
}

struct NestedRun {
    explicit NestedRun(int n) : same(n, -1), other(n, -1), messages(n) {}
    ggml_backend_t backend = nullptr;
    ggml_backend_t other_backend = nullptr;
    std::vector<int> same;
    std::vector<int> other;
    std::vector<std::string> messages;
};

void run_nested(const ggml_ext_cpu_task * task) {
    auto * run = static_cast<NestedRun *>(task->user_data);
    run->same[task->ith] = service()->run(run->backend, &do_nothing, nullptr, 0);
    run->messages[task->ith] = ggml_backend_get_last_error();  // this thread's error
    run->other[task->ith] = service()->run(run->other_backend, &do_nothing, nullptr, 0);
}

// Service decision (ext_service.cpp): run() from inside a task of any CPU pool is refused with
// FAILED and a message, never a deadlock or an abort; the outer run is unaffected.
TEST(CpuParallelService, RefusesNestedRuns) {
    Backend backend(ggml_backend_cpu_init());
    Backend other(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(backend.get(), 3);
    ggml_backend_cpu_set_n_threads(other.get(), 2);
    NestedRun run(3);
    run.backend = backend.get();
    run.other_backend = other.get();
    EXPECT_EQ(service()->run(backend.get(), &run_nested, &run, 0), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(run.same[i], GGML_STATUS_FAILED) << "ith " << i;
        EXPECT_EQ(run.other[i], GGML_STATUS_FAILED) << "ith " << i;
        EXPECT_TRUE(contains(run.messages[i], "nested")) << run.messages[i];
    }
    expect_each_index_once(backend.get(), 0, 3);
    expect_each_index_once(other.get(), 0, 2);
    expect_graph_computes(backend.get());
    expect_graph_computes(other.get());
}

// Spec: callable from the thread that computes graphs, between graph computes, any number of times.
TEST(CpuParallelService, InterleavesWithGraphComputes) {
    Backend backend(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(backend.get(), 4);
    for (int round = 0; round < 5; ++round) {
        expect_graph_computes(backend.get());
        expect_each_index_once(backend.get(), round % 2 == 0 ? 0 : 2, round % 2 == 0 ? 4 : 2);
    }
}

// An extension operator, "svc_test.scale.v1": out = 2 * x (f32), and a CPU kernel for it whose execute
// splits the elements over the pool through the service. Attribute: 1 makes task 0 fail instead.
struct ScaleJob {
    const float * x = nullptr;
    float * out = nullptr;
    int64_t n = 0;
    int fail = 0;
};

void scale_task(const ggml_ext_cpu_task * task) {
    const auto * job = static_cast<const ScaleJob *>(task->user_data);
    if (job->fail && task->ith == 0) {
        service()->fail(task, "scale kernel refused its input");
        return;
    }
    const int64_t begin = job->n * task->ith / task->nth, end = job->n * (task->ith + 1) / task->nth;
    for (int64_t i = begin; i < end; ++i)
        job->out[i] = 2.0f * job->x[i];
}

ggml_status scale_execute(const ggml_ext_execute_params * params) {
    ScaleJob job;
    job.x = static_cast<const float *>(params->node->src[0]->data);
    job.out = static_cast<float *>(params->node->data);
    job.n = ggml_nelements(params->node);
    size_t attr_size = 0;
    std::memcpy(&job.fail, ggml_ext_node_attrs(params->node, &attr_size), sizeof job.fail);
    return service()->run(params->backend, &scale_task, &job, 0);
}

bool scale_infer(const ggml_tensor * const * inputs, int, const void *, size_t, ggml_type * type,
                 int64_t ne[GGML_MAX_DIMS], char *, size_t, void *) {
    *type = inputs[0]->type;
    for (int d = 0; d < GGML_MAX_DIMS; ++d)
        ne[d] = inputs[0]->ne[d];
    return true;
}

bool scale_supports(ggml_backend_dev_t, const ggml_tensor * node, void *) {
    return node->type == GGML_TYPE_F32 && node->src[0]->type == GGML_TYPE_F32 &&
           ggml_is_contiguous(node->src[0]);
}

// Registers the operator and its CPU kernel once per process.
ggml_ext_op_t scale_op() {
    static ggml_ext_op_t op = [] {
        ggml_ext_op_desc desc{};
        desc.struct_size = sizeof desc;
        desc.version = GGML_EXT_OP_DESC_VERSION;
        desc.name = "svc_test.scale.v1";
        desc.attr_size = sizeof(int32_t);
        desc.min_inputs = 1;
        desc.max_inputs = 1;
        desc.infer = &scale_infer;
        ggml_ext_op_t registered = ggml_ext_register_op(&desc);
        if (!registered) return registered;
        ggml_ext_kernel_desc kernel{};
        kernel.struct_size = sizeof kernel;
        kernel.version = GGML_EXT_KERNEL_DESC_VERSION;
        kernel.name = "svc_test.scale.cpu";
        kernel.op = GGML_OP_CUSTOM;
        kernel.custom_op = registered;
        kernel.supports = &scale_supports;
        kernel.execute = &scale_execute;
        return ggml_backend_reg_dev_get(ggml_backend_cpu_reg(), 0) &&
                       ggml_ext_register_kernel(ggml_backend_reg_dev_get(ggml_backend_cpu_reg(), 0), &kernel)
                   ? registered
                   : nullptr;
    }();
    return op;
}

// Computes ((a + a) scaled) + a = 5a with the extension node between two native nodes; fail makes the
// extension's task 0 fail.
ggml_status compute_with_extension_node(ggml_backend_t backend, int32_t fail, std::vector<float> * result) {
    constexpr int64_t n = 1000;
    Context ctx(ggml_init({1 << 20, nullptr, true}));
    ggml_tensor * a = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, n);
    ggml_tensor * sum = ggml_add(ctx.get(), a, a);
    ggml_tensor * scaled = ggml_ext_op_create(ctx.get(), scale_op(), &sum, 1, &fail, sizeof fail);
    EXPECT_NE(scaled, nullptr) << ggml_get_error(ctx.get());
    if (!scaled) return GGML_STATUS_FAILED;
    ggml_tensor * out = ggml_add(ctx.get(), scaled, a);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, out);
    Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), backend));
    EXPECT_NE(buffer, nullptr) << ggml_backend_get_last_error();
    std::vector<float> va(n);
    for (int64_t i = 0; i < n; ++i)
        va[i] = static_cast<float>(i % 17) - 8.0f;
    ggml_backend_tensor_set(a, va.data(), 0, ggml_nbytes(a));
    const ggml_status status = ggml_backend_graph_compute(backend, graph);
    if (status == GGML_STATUS_SUCCESS) {
        result->resize(n);
        ggml_backend_tensor_get(out, result->data(), 0, ggml_nbytes(out));
        for (int64_t i = 0; i < n; ++i)
            EXPECT_EQ((*result)[i], 5.0f * va[i]) << "element " << i;
    }
    return status;
}

// Brief: run must be callable "from inside an extension kernel's execute (which the plan executor
// calls on the caller's thread between native ranges)"; a task's failure propagates through execute.
TEST(CpuParallelService, WorksFromAnExtensionKernelsExecute) {
    ASSERT_NE(scale_op(), nullptr) << ggml_backend_get_last_error();
    Backend backend(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(backend.get(), 4);
    std::vector<float> result;
    EXPECT_EQ(compute_with_extension_node(backend.get(), 0, &result), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();

    EXPECT_EQ(compute_with_extension_node(backend.get(), 1, &result), GGML_STATUS_FAILED);
    const std::string error = ggml_backend_get_last_error();
    EXPECT_TRUE(contains(error, "scale kernel refused its input")) << error;
    EXPECT_TRUE(contains(error, "svc_test.scale.cpu")) << error;

    EXPECT_EQ(compute_with_extension_node(backend.get(), 0, &result), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    expect_each_index_once(backend.get(), 0, 4);
    expect_graph_computes(backend.get());
}

}  // namespace
