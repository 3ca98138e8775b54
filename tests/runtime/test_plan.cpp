// The plan executor (src/runtime/plan.h) as the scheduler and direct calls use it: validation once
// per plan, native scratch planned as workspace and counted in the scheduler's buffer size, plans
// rebuilt when the CPU's thread count changes what its kernels prepare, and the one Kernel
// descriptor in every device table.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "cpu/kernel.h"
#include "cpu/kernels/common.h"
#include "runtime/plan.h"
#include "support/test_util.h"

namespace ggx::test {
namespace {

constexpr unsigned kSeed = 20261202;

// out = mul_mat(w, x) + bias, with w [k, m], x [k, n]: a matmul whose CPU kernel needs packing scratch.
struct MatmulGraph {
    MatmulGraph(int64_t k, int64_t m, int64_t n) : ctx(ggml_init({size_t{1} << 20, nullptr, true})) {
        w = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, k, m);
        x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, k, n);
        bias = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, m);
        for (ggml_tensor * t : {w, x, bias})
            ggml_set_input(t);
        product = ggml_mul_mat(ctx.get(), w, x);
        out = ggml_add(ctx.get(), product, bias);
        ggml_set_output(out);
        graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, out);
    }
    void fill(std::mt19937 & rng) const {
        for (ggml_tensor * t : {w, x, bias})
            write_f32(t, random_floats(rng, ggml_nelements(t), -1.0f, 1.0f));
    }
    // out computed in double precision.
    std::vector<double> expected() const {
        const std::vector<float> wv = read_f32(w), xv = read_f32(x), bv = read_f32(bias);
        const int64_t k = w->ne[0], m = w->ne[1], n = x->ne[1];
        std::vector<double> e(static_cast<size_t>(m * n));
        for (int64_t j = 0; j < n; ++j)
            for (int64_t i = 0; i < m; ++i) {
                double sum = bv[i];
                for (int64_t l = 0; l < k; ++l)
                    sum += static_cast<double>(wv[i * k + l]) * xv[j * k + l];
                e[j * m + i] = sum;
            }
        return e;
    }
    void expect_close_to_expected() const {
        const std::vector<float> got = read_f32(out);
        const std::vector<double> want = expected();
        for (size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-4 * w->ne[0]) << "element " << i << ", seed " << kSeed;
    }

    Context ctx;
    ggml_tensor *w, *x, *bias, *product, *out;
    ggml_cgraph * graph;
};

// The bytes the CPU's mul_mat kernel asks for on node with backend's thread count.
size_t mul_mat_scratch(ggml_backend_t backend, ggml_tensor * node) {
    const Kernel & kernel = cpu::kernels::mul_mat;
    void * state = nullptr;
    size_t bytes = 0;
    EXPECT_EQ(kernel.prepare(kernel, {backend, &node, 1}, &state, &bytes), GGML_STATUS_SUCCESS);
    return bytes;
}

// Issue 16: "a plan executes N times with zero calls of the per-graph validation after the first".
TEST(Plan, ASchedulerPlanIsValidatedOnceAndRunsManyTimes) {
    Backend cpu(ggml_backend_cpu_init());
    ggml_backend_t backends[] = {cpu.get()};
    Sched sched(ggml_backend_sched_new(backends, nullptr, 1, 1024, false, false));
    MatmulGraph g(96, 40, 7);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph));
    std::mt19937 rng(kSeed);
    g.fill(rng);
    const uint64_t before = backend::plan_validations();
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(backend::plan_validations(), before + 1);
    for (int run = 0; run < 10; ++run)
        ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(backend::plan_validations(), before + 1) << "validation ran again on a reused plan";
    g.expect_close_to_expected();
}

// Issue 16: the scheduler's buffer size includes the native scratch of the matmul (planned
// workspace), on top of the tensors' memory that the graph allocator alone would need.
TEST(Plan, TheSchedulersBufferSizeIncludesNativeScratch) {
    Backend cpu(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(cpu.get(), 2);
    ggml_backend_t backends[] = {cpu.get()};
    Sched sched(ggml_backend_sched_new(backends, nullptr, 1, 1024, false, false));
    MatmulGraph g(256, 64, 48);
    const size_t scratch = mul_mat_scratch(cpu.get(), g.product);
    ASSERT_GT(scratch, 0u);

    Gallocr galloc(ggml_gallocr_new(ggml_backend_cpu_buffer_type()));
    ASSERT_TRUE(ggml_gallocr_reserve(galloc.get(), g.graph));
    const size_t tensors = ggml_gallocr_get_buffer_size(galloc.get(), 0);

    ASSERT_TRUE(ggml_backend_sched_reserve(sched.get(), g.graph));
    EXPECT_GE(ggml_backend_sched_get_buffer_size(sched.get(), cpu.get()), tensors + scratch);

    // The plan query reports the request on the native step that holds the matmul.
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph));
    EXPECT_GE(ggml_backend_sched_get_buffer_size(sched.get(), cpu.get()), tensors + scratch);
    ggml_ext_sched_step step{};
    step.struct_size = sizeof step;
    ASSERT_EQ(ggml_ext_sched_get_n_steps(sched.get()), 1);
    ASSERT_TRUE(ggml_ext_sched_get_step(sched.get(), 0, &step));
    EXPECT_EQ(step.kind, GGML_EXT_STEP_NATIVE);
    EXPECT_EQ(step.workspace_bytes, scratch);
}

// A thread count raised after planning asks for more scratch: the scheduler plans again rather than
// running kernels past the end of the workspace.
TEST(Plan, AThreadCountChangePlansAgain) {
    Backend cpu(ggml_backend_cpu_init());
    ggml_backend_cpu_set_n_threads(cpu.get(), 1);
    ggml_backend_t backends[] = {cpu.get()};
    Sched sched(ggml_backend_sched_new(backends, nullptr, 1, 1024, false, false));
    MatmulGraph g(256, 64, 48);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), g.graph));
    std::mt19937 rng(kSeed + 1);
    g.fill(rng);
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS);
    const size_t one_thread = ggml_backend_sched_get_buffer_size(sched.get(), cpu.get());

    ggml_backend_cpu_set_n_threads(cpu.get(), 2);
    const size_t scratch = mul_mat_scratch(cpu.get(), g.product);
    const uint64_t before = backend::plan_validations();
    g.fill(rng);  // planning again keeps the inputs: they are set before compute
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), g.graph), GGML_STATUS_SUCCESS);
    EXPECT_EQ(backend::plan_validations(), before + 1);
    ggml_ext_sched_step step{};
    step.struct_size = sizeof step;
    ASSERT_TRUE(ggml_ext_sched_get_step(sched.get(), 0, &step));
    EXPECT_EQ(step.workspace_bytes, scratch);
    EXPECT_GE(ggml_backend_sched_get_buffer_size(sched.get(), cpu.get()), one_thread);
    g.expect_close_to_expected();
}

// A direct computation runs a temporary plan in the backend's direct workspace, kept for the next
// call: repeated calls give the same result.
TEST(Plan, DirectCallsUseATemporaryPlanAndTheDirectWorkspace) {
    Backend cpu(ggml_backend_cpu_init());
    MatmulGraph g(64, 16, 5);
    Buffer buffer(ggml_backend_alloc_ctx_tensors(g.ctx.get(), cpu.get()));
    ASSERT_NE(buffer, nullptr);
    std::mt19937 rng(kSeed + 2);
    g.fill(rng);
    for (int run = 0; run < 3; ++run) {
        const uint64_t before = backend::plan_validations();
        ASSERT_EQ(ggml_backend_graph_compute(cpu.get(), g.graph), GGML_STATUS_SUCCESS);
        EXPECT_EQ(backend::plan_validations(), before + 1);  // one temporary plan, validated once
        ASSERT_NE(cpu->direct_workspace, nullptr);
        EXPECT_GE(cpu->direct_workspace->size, mul_mat_scratch(cpu.get(), g.product));
        g.expect_close_to_expected();
    }
}

// Every device table's entries are the one descriptor, kNative, named, with supports and execute.
TEST(Plan, TheCpuTableHoldsNativeKernels) {
    for (const Kernel & kernel : cpu::kernel_table()) {
        EXPECT_EQ(kernel.kind, Kernel::Kind::kNative) << kernel.name;
        EXPECT_NE(kernel.name, nullptr);
        EXPECT_NE(kernel.supports, nullptr) << kernel.name;
        EXPECT_NE(kernel.execute, nullptr) << kernel.name;
    }
}

}  // namespace
}  // namespace ggx::test
