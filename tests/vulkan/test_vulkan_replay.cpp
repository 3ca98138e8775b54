// Replayable plans on Vulkan (spec: "CUDA kernels can opt into device replay with
// ggml_ext_register_kernel_ex ...", "When every selected extension opts in ...",
// "GGML_EXT_KERNEL_REPLAY_REUSABLE additionally permits reuse ...", "Mixed plans containing an
// extension without the flag retain ordinary dispatch ..."): the registration flags, warm-up /
// record / replay of scheduled plans, invalidation by addresses, failure propagation, the retired
// cache across scheduler rebuilds and its bounds, and the paths that keep ordinary dispatch.
// The spec has Vulkan's batched plans unrecorded, so ggx records them only with
// GGX_VULKAN_PLAN_REPLAY=1, which the fixture sets.
//
// The extension kernel is a SCALE override that copies x into the plan workspace and scales it
// from there into y with tests/vulkan/ext_scale.comp; each variant differs only in its flags.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext-params.h>
#include <ggml-ext-vulkan.h>
#include <ggml-ext.h>
#include <ggml-vulkan.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/plan.h"
#include "support/test_util.h"
#include "vulkan/ext_shader.h"
#include "vulkan/vulkan_fixture.h"

namespace ggx::test {
namespace {

// Which registered variant takes SCALE nodes, and what the kernels saw.
enum class Variant { kOrdinary, kCaptureSafe, kReusable };
struct Counters {
    Variant variant = Variant::kOrdinary;
    int executes = 0, prepares = 0, destroys = 0;
    int fail_at = -1;  // the execute (1-based) that fails
};
Counters & counters() {
    static Counters c;
    return c;
}

ggml_status prepare_scale(const ggml_ext_prepare_params * params, void ** state, size_t * workspace_bytes) {
    ++counters().prepares;
    *state = &counters();
    *workspace_bytes = ggml_nbytes(params->node->src[0]);
    return GGML_STATUS_SUCCESS;
}

// y = 2 x through the workspace: x is copied there, then scaled from it.
ggml_status execute_scale(const ggml_ext_execute_params * params) {
    if (++counters().executes == counters().fail_at) {
        ggml_ext_set_error("the test failed this execution");
        return GGML_STATUS_FAILED;
    }
    const ggml_tensor *y = params->node, *x = y->src[0];
    const ggml_ext_vulkan_v1 * svc = service();
    const ggml_ext_vulkan_range xr{x, nullptr, 0, 0}, yr{y, nullptr, 0, 0};
    const ggml_ext_vulkan_range wr{
        nullptr, params->workspace,
        static_cast<size_t>(static_cast<char *>(params->workspace_data) -
                            static_cast<char *>(ggml_backend_buffer_get_base(params->workspace))),
        ggml_nbytes(x)};
    if (const ggml_status status = svc->copy(params->backend, &wr, &xr)) return status;
    ggml_ext_vulkan_buffer_info wi, yi;
    if (!svc->buffer_info(params->backend, &wr, &wi) || !svc->buffer_info(params->backend, &yr, &yi))
        return GGML_STATUS_FAILED;
    ggml_ext_scale_params scale{};
    ggml_ext_get_op_params(y, GGML_OP_SCALE, &scale, sizeof scale);
    struct {
        uint32_t n, x_offset, y_offset;
        float scale, bias;
    } push{static_cast<uint32_t>(ggml_nelements(y)), wi.shader_offset / 4, yi.shader_offset / 4, scale.scale,
           0.0f};
    const ggml_ext_vulkan_binding bindings[] = {{wr, false}, {yr, true}};
    const uint32_t add_bias = 0;
    ggml_ext_vulkan_dispatch d{
        sizeof d, "ext_scale", scale_spirv().data(), scale_spirv().size() * 4,  bindings, 2, &add_bias,
        1,        &push,       sizeof push,          {(push.n + 63) / 64, 1, 1}};
    return svc->dispatch(params->backend, &d);
}

ggml_ext_kernel_desc scale_kernel(const char * name, Variant variant) {
    static Variant variants[3];
    Variant & v = variants[static_cast<int>(variant)];
    v = variant;
    ggml_ext_kernel_desc d{};
    d.struct_size = sizeof d;
    d.version = GGML_EXT_KERNEL_DESC_VERSION;
    d.name = name;
    d.op = GGML_OP_SCALE;
    d.supports = [](ggml_backend_dev_t, const ggml_tensor * node, void * user) {
        return *static_cast<Variant *>(user) == counters().variant && node->type == GGML_TYPE_F32 &&
               ggml_is_contiguous(node) && ggml_is_contiguous(node->src[0]);
    };
    d.preferred = [](ggml_backend_dev_t, const ggml_tensor *, void *) { return true; };
    d.prepare = prepare_scale;
    d.execute = execute_scale;
    d.destroy = [](void *, void *) { ++counters().destroys; };
    d.user_data = &v;
    return d;
}

class VulkanReplay : public VulkanTest {
protected:
    static void SetUpTestSuite() {
        if (!vulkan_present()) return;
        ggml_backend_dev_t dev = ggml_backend_dev_by_name("Vulkan0");
        const ggml_ext_kernel_desc ordinary = scale_kernel("replay.ordinary", Variant::kOrdinary),
                                   safe = scale_kernel("replay.capture_safe", Variant::kCaptureSafe),
                                   reusable = scale_kernel("replay.reusable", Variant::kReusable);
        ASSERT_TRUE(ggml_ext_register_kernel(dev, &ordinary)) << ggml_backend_get_last_error();
        ASSERT_TRUE(ggml_ext_register_kernel_ex(dev, &safe, GGML_EXT_KERNEL_CAPTURE_SAFE));
        ASSERT_TRUE(ggml_ext_register_kernel_ex(
            dev, &reusable, GGML_EXT_KERNEL_CAPTURE_SAFE | GGML_EXT_KERNEL_REPLAY_REUSABLE));
    }
    void SetUp() override {
        VulkanTest::SetUp();
        if (IsSkipped()) return;
        setenv("GGX_VULKAN_PLAN_REPLAY", "1", 1);
        counters() = {};
        x_ = input(1000);
        alloc();
        build_graph();
        cpu_.reset(ggml_backend_cpu_init());
    }
    // A new graph (a freed scheduler's tensors keep pointers into its freed memory).
    void build_graph() {
        out_ = ggml_add(ctx(), ggml_scale(ctx(), x_, 2.0f), x_);  // 3 x: extension SCALE, native ADD
        graph_ = ggml_new_graph(ctx());
        ggml_build_forward_expand(graph_, out_);
    }
    void TearDown() override {
        sched_.reset();
        unsetenv("GGX_VULKAN_PLAN_REPLAY");
    }

    void schedule(bool parallel = false) {
        ggml_backend_t backends[] = {vk(), cpu_.get()};
        if (sched_) {
            sched_.reset();
            build_graph();
        }
        sched_.reset(ggml_backend_sched_new(backends, nullptr, 2, 512, parallel, false));
        ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched_.get(), graph_)) << ggml_backend_get_last_error();
    }
    // Computes with fresh input values and checks out = 3 x.
    void compute_and_check(int round) {
        const std::vector<float> x = ramp(1000, static_cast<float>(round), 0.25f);
        write_f32(x_, x);
        ASSERT_EQ(ggml_backend_sched_graph_compute(sched_.get(), graph_), GGML_STATUS_SUCCESS)
            << ggml_backend_get_last_error();
        const std::vector<float> out = read_f32(out_);
        for (size_t i = 0; i < x.size(); ++i)
            ASSERT_FLOAT_EQ(out[i], 3.0f * x[i]) << "round " << round << " element " << i;
    }
    void compute_rounds(int n) {
        for (int r = 0; r < n; ++r)
            compute_and_check(r);
    }

    ggml_tensor *x_ = nullptr, *out_ = nullptr;
    ggml_cgraph * graph_ = nullptr;
    Backend cpu_;
    Sched sched_;
};

TEST(ReplayRegistration, FlagsAreValidatedAndReported) {
    ggml_backend_dev_t cpu = ggml_backend_dev_by_name("CPU");
    ggml_ext_kernel_desc d = scale_kernel("replay.flags", Variant::kOrdinary);
    const int before = ggml_ext_dev_get_n_kernels(cpu);
    EXPECT_FALSE(ggml_ext_register_kernel_ex(cpu, &d, 1u << 7));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "unknown flags")) << ggml_backend_get_last_error();
    EXPECT_FALSE(ggml_ext_register_kernel_ex(cpu, &d, GGML_EXT_KERNEL_REPLAY_REUSABLE));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "requires CAPTURE_SAFE"))
        << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_ext_dev_get_n_kernels(cpu), before);
    const uint32_t flags = GGML_EXT_KERNEL_CAPTURE_SAFE | GGML_EXT_KERNEL_REPLAY_REUSABLE;
    ASSERT_TRUE(ggml_ext_register_kernel_ex(cpu, &d, flags)) << ggml_backend_get_last_error();
    d.name = "replay.flags.plain";
    ASSERT_TRUE(ggml_ext_register_kernel(cpu, &d));
    ggml_ext_kernel_info info{};
    info.struct_size = sizeof info;
    ASSERT_TRUE(ggml_ext_dev_get_kernel(cpu, before, &info));
    EXPECT_EQ(info.flags, flags);
    ASSERT_TRUE(ggml_ext_dev_get_kernel(cpu, before + 1, &info));
    EXPECT_EQ(info.flags, 0u);

    ggml_ext_fusion_desc f{};
    f.struct_size = sizeof f;
    f.version = GGML_EXT_FUSION_DESC_VERSION;
    f.name = "replay.fusion";
    f.match = [](ggml_backend_dev_t, const ggml_cgraph *, int, void *) { return 0; };
    f.execute = [](const ggml_ext_fusion_execute_params *) { return GGML_STATUS_FAILED; };
    f.flags = GGML_EXT_FUSION_REPLAY_REUSABLE;
    EXPECT_FALSE(ggml_ext_register_fusion(cpu, &f));
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "requires CAPTURE_SAFE"));
    f.flags = GGML_EXT_FUSION_CAPTURE_SAFE | GGML_EXT_FUSION_REPLAY_REUSABLE;
    EXPECT_TRUE(ggml_ext_register_fusion(cpu, &f)) << ggml_backend_get_last_error();
}

TEST_F(VulkanReplay, CaptureSafePlansWarmUpRecordOnceAndReplay) {
    counters().variant = Variant::kCaptureSafe;
    schedule();
    compute_and_check(0);  // warm-up
    const size_t submissions = vk_impl().total_submissions();
    compute_and_check(1);  // recorded while it runs
    EXPECT_GT(vk_impl().total_submissions(), submissions);
    const size_t recorded = vk_impl().total_submissions();
    for (int r = 2; r < 6; ++r)
        compute_and_check(r);  // replays: the kernel is not called, the backend records nothing
    EXPECT_EQ(counters().executes, 2);
    EXPECT_EQ(counters().prepares, 1);
    EXPECT_EQ(vk_impl().total_submissions(), recorded);
}

TEST_F(VulkanReplay, AnExtensionWithoutTheFlagKeepsOrdinaryDispatch) {
    counters().variant = Variant::kOrdinary;
    schedule();
    compute_rounds(5);
    EXPECT_EQ(counters().executes, 5);
}

TEST_F(VulkanReplay, EvaluationCallbacksPipelineCopiesAndTheDefaultKeepOrdinaryDispatch) {
    counters().variant = Variant::kCaptureSafe;
    schedule();
    ggml_backend_sched_set_eval_callback(
        sched_.get(), [](ggml_tensor *, bool, void *) { return true; }, nullptr);
    compute_rounds(4);
    EXPECT_EQ(counters().executes, 4);

    counters() = {Variant::kCaptureSafe};
    schedule(/*parallel=*/true);
    ASSERT_GT(ggml_backend_sched_get_n_copies(sched_.get()), 1);
    compute_rounds(4);
    EXPECT_EQ(counters().executes, 4);

    // Vulkan's default (spec: "Every callback still executes on every invocation; this batching
    // neither captures device replay nor retains plan state across scheduler rebuilds").
    counters() = {Variant::kCaptureSafe};
    unsetenv("GGX_VULKAN_PLAN_REPLAY");
    EXPECT_FALSE(vk_impl().can_record_plans());
    schedule();
    compute_rounds(4);
    EXPECT_EQ(counters().executes, 4);
}

TEST_F(VulkanReplay, ARecordingFailurePropagatesWithoutRetryAndTheNextRunWarmsUp) {
    counters().variant = Variant::kCaptureSafe;
    counters().fail_at = 2;
    schedule();
    compute_and_check(0);
    write_f32(x_, ramp(1000, 1.0f, 1.0f));
    EXPECT_EQ(ggml_backend_sched_graph_compute(sched_.get(), graph_), GGML_STATUS_FAILED);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "the test failed this execution"));
    EXPECT_EQ(counters().executes, 2);  // not retried
    compute_rounds(4);                  // warm-up, recording, two replays
    EXPECT_EQ(counters().executes, 4);
}

TEST_F(VulkanReplay, NonReusableRecordingsEndWithTheirPlanReusableOnesServeTheRebuild) {
    counters().variant = Variant::kCaptureSafe;
    schedule();
    compute_rounds(3);
    ggml_backend_sched_reset(sched_.get());
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched_.get(), graph_));
    compute_rounds(3);
    EXPECT_EQ(counters().executes, 4);
    EXPECT_EQ(vk()->retired_recordings.size(), 0u);

    sched_.reset();
    build_graph();
    counters() = {Variant::kReusable};
    schedule();
    compute_rounds(3);
    EXPECT_EQ(counters().executes, 2);
    for (int rebuild = 0; rebuild < 3; ++rebuild) {
        ggml_backend_sched_reset(sched_.get());  // retires the recording
        EXPECT_EQ(vk()->retired_recordings.size(), 1u);
        ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched_.get(), graph_));
        compute_rounds(2);  // the rebuilt plan replays the retired recording at once
        EXPECT_EQ(vk()->retired_recordings.size(), 0u);
    }
    EXPECT_EQ(counters().executes, 2);
    EXPECT_EQ(counters().prepares, 4);  // prepare and destroy still run for every rebuilt plan
    EXPECT_EQ(counters().destroys, 3);
}

TEST_F(VulkanReplay, AChangedTensorAddressDropsTheRecordingAndWarmsUpAgain) {
    counters().variant = Variant::kCaptureSafe;
    ggml_tensor * other = ggml_new_tensor_1d(ctx(), GGML_TYPE_F32, 1000);
    Buffer other_buffer(ggml_backend_alloc_ctx_tensors_from_buft(ctx(), buft()));  // also out_'s chain
    ASSERT_NE(other_buffer, nullptr);
    backend::ExecutionPlan plan;
    ASSERT_TRUE(plan.build(vk(), graph_, 0, ggml_graph_n_nodes(graph_))) << ggml_backend_get_last_error();
    ASSERT_TRUE(plan.replay_eligible());
    EXPECT_FALSE(plan.replay_reusable());
    Buffer workspace(ggml_backend_buft_alloc_buffer(buft(), plan.workspace_bytes() + 4096));
    const Workspace region{workspace.get(), ggml_backend_buffer_get_base(workspace.get()),
                           ggml_backend_buffer_get_size(workspace.get())};
    const auto run = [&](ggml_tensor * in, float start) {
        const std::vector<float> x = ramp(1000, start, 1.0f);
        write_f32(in, x);
        ASSERT_EQ(
            plan.run(0, ggml_graph_n_nodes(graph_), region, backend::ExecutionPlan::Execution::kReplayable),
            GGML_STATUS_SUCCESS)
            << ggml_backend_get_last_error();
        const std::vector<float> out = read_f32(out_);
        for (size_t i = 0; i < x.size(); ++i)
            ASSERT_FLOAT_EQ(out[i], 3.0f * x[i]) << i;
    };
    for (int r = 0; r < 3; ++r)
        run(x_, static_cast<float>(r));
    EXPECT_TRUE(plan.has_recording());
    EXPECT_EQ(counters().executes, 2);
    // x moves: both nodes read it from the other buffer now.
    x_->data = other->data;
    x_->buffer = other->buffer;
    run(x_, 10.0f);
    EXPECT_FALSE(plan.has_recording());
    EXPECT_EQ(counters().executes, 3);
    run(x_, 11.0f);
    run(x_, 12.0f);
    EXPECT_TRUE(plan.has_recording());
    EXPECT_EQ(counters().executes, 4);
}

// A recording that does nothing, for the cache's bounds.
struct NoRecording final : PlanRecording {
    ggml_status replay() override { return GGML_STATUS_SUCCESS; }
};

std::shared_ptr<ggml_backend_buffer> host_buffer(size_t bytes) {
    return {ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), bytes), &ggml_backend_buffer_free};
}

TEST(RetiredRecordings, KeepsTheNewest16AndAtMost256MiBOfWorkspace) {
    RetiredRecordings cache;
    for (int i = 0; i < 17; ++i)
        cache.retire({std::to_string(i), std::make_unique<NoRecording>(), nullptr});
    EXPECT_EQ(cache.size(), RetiredRecordings::kMaxEntries);
    EXPECT_EQ(cache.take("0").recording, nullptr);  // the oldest was evicted
    EXPECT_NE(cache.take("16").recording, nullptr);
    EXPECT_EQ(cache.take("16").recording, nullptr);  // taken out
    EXPECT_EQ(cache.size(), 15u);

    RetiredRecordings bounded;
    constexpr size_t kMiB = size_t{1} << 20;
    for (const char * key : {"a", "b", "c"})
        bounded.retire({key, std::make_unique<NoRecording>(), host_buffer(100 * kMiB)});
    EXPECT_EQ(bounded.size(), 2u);  // 300 MiB: "a" went
    EXPECT_EQ(bounded.workspace_bytes(), 200 * kMiB);
    EXPECT_EQ(bounded.take("a").recording, nullptr);
    bounded.retire({"huge", std::make_unique<NoRecording>(), host_buffer(257 * kMiB)});
    EXPECT_EQ(bounded.take("huge").recording, nullptr);  // larger workspaces keep plan-local capture only
    EXPECT_EQ(bounded.size(), 2u);
    bounded.retire({"b", std::make_unique<NoRecording>(), host_buffer(kMiB)});  // replaces the older "b"
    EXPECT_EQ(bounded.size(), 2u);
    EXPECT_EQ(bounded.workspace_bytes(), 101 * kMiB);
}

TEST(ReplayOnTheCpu, TheCpuBackendCannotRecordPlans) { EXPECT_FALSE(cpu_backend()->can_record_plans()); }

}  // namespace
}  // namespace ggx::test
