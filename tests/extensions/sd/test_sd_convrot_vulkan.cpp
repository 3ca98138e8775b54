// The sd pack's Vulkan fusion rule "sd.modulate_convrot.vulkan" (extensions/sd/vulkan/convrot.cpp):
// [NORM | RMS_NORM](x) -> 1..4 modulation steps -> sd.quantize_i8_convrot.v1 in one shader.
//
// Bounds:
//  - against the same chain unfused on Vulkan (GGML_VK_DISABLE_FUSION=1: the native NORM or RMS_NORM,
//    MUL and ADD, then the ConvRot kernel): BIT FOR BIT (bound: 0 differing bytes of the packed codes
//    and scales). The fused shader repeats the native norm shader's expressions, reduction order and
//    workgroup size, rounds each step once in the nodes' order as the native MUL and ADD store them,
//    and shares the ConvRot kernel's rotation and quantization (shaders/convrot.glsl).
//  - against the CPU (the same graph on the CPU backend, whose norm sums in another order): every row
//    scale within 1e-5 relative and every code within 1 (a value's last bits can move it across a
//    rounding boundary).
// Cases: NORM and RMS_NORM; 1..4 steps including x + x * s; operands [K], [K, 1], [K, 1, B], full and
// tiling [K, 2] over [K, 6]; x contiguous, with padded rows and transposed; G 1, 4, 16, 64, 256; K
// from 12 to 5120 (over the shader's 1024-value chunk, and not a multiple of it). Observed through the
// plan query (ggml_ext_sched_get_step): the rule fires; not with an intermediate's other consumer (the
// reason from ggml_ext_fusion_is_legal), when disabled, or for chains it does not compute (their range
// legal, so the rule did not match it) (G = 1 with K % 4 != 0, a fifth step, a SUB step, the value
// times itself); an output placed by hand over x is computed through the workspace. The rule's optimize
// makes a chain interleaved as ggx-run's DiT builds it consecutive, so it fuses (nothing moves when
// disabled).
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml-vulkan.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/int8.h"
#include "common/plan_steps.h"
#include "sd-ggml-ext.h"
#include "extensions/sd/sd_pack_env.h"
#include "support/test_util.h"
#include "vulkan/vulkan_util.h"

namespace {

using ggx::test::Backend;
using ggx::test::Buffer;
using ggx::test::contains;
using ggx::test::Context;
using ggx::test::cpu_backend;
using ggx::test::DisableVulkanFusion;
using ggx::test::fusion_rejection;
using ggx::test::node_names;
using ggx::test::Sched;
using ggx::tools::describe_plan;
using ggx::tools::fusion_fired;
using Shape = std::array<int64_t, 4>;

constexpr uint64_t kSeed = 20261130;
constexpr const char * kRule = "sd.modulate_convrot.vulkan";

enum class Norm { kNorm, kRms };
enum class Step { kMul, kAdd, kAddBeforeMul, kSub, kSquare };
enum class Layout { kContiguous, kPaddedRows, kTransposed };

struct StepCase {
    Step step;
    Shape operand;  // repeated over the value (unused for kAddBeforeMul)
    bool operand_first = false;
};

struct ChainCase {
    const char * name;
    Norm norm;
    int group;
    Shape ne;  // [K, ...]
    std::vector<StepCase> steps;
    Layout layout = Layout::kContiguous;
};

ggml_tensor * new_tensor(ggml_context * ctx, ggml_type type, const Shape & ne) {
    return ggml_new_tensor_4d(ctx, type, ne[0], ne[1], ne[2], ne[3]);
}

std::vector<uint8_t> bytes_of(const ggml_tensor * t) {
    std::vector<uint8_t> b(ggml_nbytes(t));
    ggml_backend_tensor_get(t, b.data(), 0, b.size());
    return b;
}

// A graph ending in a quantize node, planned by a scheduler over the backends, its inputs filled from
// a seed, computed.
struct Site {
    ggml_tensor * input(ggml_tensor * t) {
        ggml_set_input(t);
        inputs.push_back(t);
        return t;
    }

    void build(ggml_tensor * last) {
        out = last;
        ggml_set_output(out);
        graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, out);
    }

    void compute(const std::vector<ggml_backend_t> & backends, uint64_t seed) {
        std::vector<ggml_backend_t> list = backends;
        sched.reset(ggml_backend_sched_new(list.data(), nullptr, int(list.size()), 256, false, false));
        alloc_ok = ggml_backend_sched_alloc_graph(sched.get(), graph);
        if (!alloc_ok) return;
        std::mt19937_64 rng(seed);
        for (ggml_tensor * t : inputs)
            fill(rng, t);
        compute_status = ggml_backend_sched_graph_compute(sched.get(), graph);
        if (compute_status == GGML_STATUS_SUCCESS) result = bytes_of(out);
    }

    // Values in [-2, 2), with a large outlier in the first element (a row's amax).
    static void fill(std::mt19937_64 & rng, ggml_tensor * t) {
        std::uniform_real_distribution<float> u(-2.0f, 2.0f);
        std::vector<float> v(static_cast<size_t>(ggml_nelements(t)));
        for (float & f : v)
            f = u(rng);
        v[0] = 9.5f;
        ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
    }

    std::vector<std::string> order() const { return node_names(graph); }
    // Whether the rule fused a range of the plan.
    bool fused() const { return fusion_fired(sched.get(), kRule); }
    std::string plan() const { return describe_plan(sched.get()); }

    Context ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    Buffer placed;  // storage of an output placed by hand, freed after the scheduler
    Sched sched;
    std::vector<ggml_tensor *> inputs;
    ggml_tensor * out = nullptr;
    ggml_cgraph * graph = nullptr;
    bool alloc_ok = false;
    ggml_status compute_status = GGML_STATUS_FAILED;
    std::vector<uint8_t> result;
};

struct ChainSite;
using Edit = std::function<void(ggml_context *, ChainSite &)>;

// The chain of a case over x [K, ...] in the requested layout.
struct ChainSite : Site {
    ChainSite(const std::vector<ggml_backend_t> & backends, const ChainCase & c, uint64_t seed,
              const Edit & edit = {}) {
        ggml_context * x = ctx.get();
        source = input_x(c);
        norm = c.norm == Norm::kNorm ? ggml_norm(x, source, 1e-6f) : ggml_rms_norm(x, source, 1e-5f);
        ggml_set_name(norm, "norm");
        values.push_back(norm);
        for (const StepCase & s : c.steps)
            values.push_back(step(s));
        ggml_tensor * packed = ggml_quantize_i8_convrot(x, values.back(), c.group);
        if (!packed) {
            ADD_FAILURE() << "quantize: " << (ggml_get_error(x) ? ggml_get_error(x) : "?");
            return;
        }
        build(packed);
        ggml_set_name(out, "packed");
        if (edit) edit(x, *this);
        compute(backends, seed);
    }

    ggml_tensor * input_x(const ChainCase & c) {
        ggml_context * x = ctx.get();
        const Shape & ne = c.ne;
        switch (c.layout) {
            case Layout::kPaddedRows: {
                ggml_tensor * wide = input(new_tensor(x, GGML_TYPE_F32, {ne[0] + 12, ne[1], ne[2], ne[3]}));
                return ggml_view_4d(x, wide, ne[0], ne[1], ne[2], ne[3], wide->nb[1], wide->nb[2],
                                    wide->nb[3], 3 * sizeof(float));
            }
            case Layout::kTransposed:
                return ggml_transpose(x, input(new_tensor(x, GGML_TYPE_F32, {ne[1], ne[0], ne[2], ne[3]})));
            default:
                return input(new_tensor(x, GGML_TYPE_F32, ne));
        }
    }

    ggml_tensor * step(const StepCase & s) {
        ggml_context * x = ctx.get();
        ggml_tensor * value = values.back();
        ggml_tensor * r;
        if (s.step == Step::kAddBeforeMul) {
            r = ggml_add(x, values[values.size() - 2], value);
        } else if (s.step == Step::kSquare) {
            r = ggml_mul(x, value, value);
        } else {
            ggml_tensor * operand = input(new_tensor(x, GGML_TYPE_F32, s.operand));
            ggml_tensor * a = s.operand_first ? operand : value;
            ggml_tensor * b = s.operand_first ? value : operand;
            r = s.step == Step::kMul   ? ggml_mul(x, a, b)
                : s.step == Step::kAdd ? ggml_add(x, a, b)
                                       : ggml_sub(x, a, b);
        }
        ggml_set_name(r, ("step" + std::to_string(values.size())).c_str());
        return r;
    }

    // The rule did not fire, and the runtime's check accepts the chain: the rule did not match it.
    void expect_unmatched() const {
        EXPECT_FALSE(fused()) << plan();
        EXPECT_EQ(fusion_rejection(graph, {norm, out}), "");
    }

    ggml_tensor * source = nullptr;
    ggml_tensor * norm = nullptr;
    std::vector<ggml_tensor *> values;  // the norm, then each step's result
};

class SdConvRotVulkan : public ::testing::Test {
protected:
    void SetUp() override {
        if (!ggx::test::vulkan_present()) GTEST_SKIP() << "no Vulkan device";
        vk_.reset(ggml_backend_vk_init(0));
    }

    ggml_backend_t vk() { return vk_.get(); }
    std::vector<ggml_backend_t> vk_and_cpu() { return {vk(), cpu_backend()}; }

    Backend vk_;
};

// Every scale within 1e-5 relative and every code within 1 of the CPU's.
void expect_close_to_cpu(const std::vector<uint8_t> & got, const std::vector<uint8_t> & want,
                         const Shape & ne) {
    ASSERT_EQ(got.size(), want.size());
    const int64_t k = ne[0], rows = ne[1] * ne[2] * ne[3];
    const size_t codes = static_cast<size_t>(k * rows);
    int worst = 0;
    for (size_t i = 0; i < codes; ++i)
        worst = std::max(worst, std::abs(int(int8_t(got[i])) - int(int8_t(want[i]))));
    EXPECT_LE(worst, 1) << "largest code difference";
    const size_t scales = static_cast<size_t>(k * sd::int8::packed_rows_pad(rows));
    for (int64_t r = 0; r < rows; ++r) {
        float a, b;
        std::memcpy(&a, got.data() + scales + 4 * r, 4);
        std::memcpy(&b, want.data() + scales + 4 * r, 4);
        EXPECT_LE(std::fabs(a - b), 1e-5f * std::fabs(b)) << "row " << r << " scale";
    }
}

void expect_fused_equals_unfused_and_near_cpu(ggml_backend_t vk, const ChainCase & c, uint64_t seed) {
    SCOPED_TRACE(c.name);
    ChainSite on({vk, cpu_backend()}, c, seed);
    ASSERT_TRUE(on.alloc_ok) << ggml_backend_get_last_error();
    ASSERT_EQ(on.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_TRUE(on.fused()) << on.plan();
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(on.sched.get(), on.out), vk);

    std::vector<uint8_t> unfused_result;
    {
        DisableVulkanFusion off("1");
        ChainSite unfused({vk, cpu_backend()}, c, seed);
        ASSERT_EQ(unfused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
        unfused.expect_unmatched();
        for (ggml_tensor * t : {unfused.norm, unfused.values.back(), unfused.out})
            EXPECT_EQ(ggml_backend_sched_get_tensor_backend(unfused.sched.get(), t), vk) << t->name;
        unfused_result = unfused.result;
    }
    ASSERT_EQ(on.result.size(), unfused_result.size());
    size_t first = 0;
    while (first < on.result.size() && on.result[first] == unfused_result[first])
        ++first;
    EXPECT_EQ(first, on.result.size()) << "first differing byte " << first << " of " << on.result.size();

    ChainSite cpu({cpu_backend()}, c, seed);
    ASSERT_EQ(cpu.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    expect_close_to_cpu(on.result, cpu.result, c.ne);
}

const Shape kNone{1, 1, 1, 1};

TEST_F(SdConvRotVulkan, FusionIsBitIdenticalToTheUnfusedChain) {
    const ChainCase cases[] = {
        {"DiT modulate: NORM, * [K], + [K], G256",
         Norm::kNorm,
         256,
         {256, 45, 1, 1},
         {{Step::kMul, {256, 1, 1, 1}}, {Step::kAdd, {256, 1, 1, 1}}}},
        {"RMS_NORM * weight [K, 1] * modulation [K, 1, B], x + x * s, + shift [K, 1, B], G64, K > 1024",
         Norm::kRms,
         64,
         {1088, 7, 3, 1},
         {{Step::kMul, {1088, 1, 1, 1}},
          {Step::kMul, {1088, 1, 3, 1}},
          {Step::kAddBeforeMul, kNone},
          {Step::kAdd, {1088, 1, 3, 1}}}},
        {"NORM + full operand first, G16, K 3056 (not a multiple of 1024), padded rows",
         Norm::kNorm,
         16,
         {3056, 5, 1, 1},
         {{Step::kAdd, {3056, 5, 1, 1}, true}},
         Layout::kPaddedRows},
        {"NORM * full, + [K], G4, K 12 (workgroup 32)",
         Norm::kNorm,
         4,
         {12, 9, 1, 1},
         {{Step::kMul, {12, 9, 1, 1}}, {Step::kAdd, {12, 1, 1, 1}}}},
        {"RMS_NORM, full operand first, x * s + x, G1, [36, 3, 2]",
         Norm::kRms,
         1,
         {36, 3, 2, 1},
         {{Step::kMul, {36, 3, 2, 1}, true}, {Step::kAddBeforeMul, kNone}}},
        {"NORM, transposed x, * [K, 1], + [K, 2] tiling [K, 6], G256, K 2048",
         Norm::kNorm,
         256,
         {2048, 6, 1, 1},
         {{Step::kMul, {2048, 1, 1, 1}}, {Step::kAdd, {2048, 2, 1, 1}}},
         Layout::kTransposed},
        {"RMS_NORM, 4 steps * + * +, G256, K 1280, [1280, 3, 2, 2]",
         Norm::kRms,
         256,
         {1280, 3, 2, 2},
         {{Step::kMul, {1280, 1, 1, 1}},
          {Step::kAdd, {1280, 3, 1, 1}},
          {Step::kMul, {1280, 1, 2, 2}},
          {Step::kAdd, {1280, 3, 2, 2}, true}}},
        {"NORM, K 5120 (five chunks), * [K], + [K], G256",
         Norm::kNorm,
         256,
         {5120, 3, 1, 1},
         {{Step::kMul, {5120, 1, 1, 1}}, {Step::kAdd, {5120, 1, 1, 1}}}},
        {"NORM, K 100 (workgroup 128), x + x * s",
         Norm::kNorm,
         4,
         {100, 17, 1, 1},
         {{Step::kMul, {100, 1, 1, 1}}, {Step::kAddBeforeMul, kNone}}},
    };
    uint64_t seed = kSeed;
    for (const ChainCase & c : cases)
        expect_fused_equals_unfused_and_near_cpu(vk(), c, ++seed);
}

const ChainCase kSmall{
    "small", Norm::kNorm, 64, {128, 20, 1, 1}, {{Step::kMul, {128, 1, 1, 1}}, {Step::kAdd, {128, 1, 1, 1}}}};

// The runtime's legality check keeps the chain unfused when an intermediate has another consumer.
TEST_F(SdConvRotVulkan, FusionLeavesAnObservedIntermediateAlone) {
    const Edit observe = [](ggml_context * x, ChainSite & s) {
        ggml_tensor * extra = ggml_scale(x, s.values[1], 2.0f);
        ggml_set_output(extra);
        ggml_build_forward_expand(s.graph, extra);
    };
    ChainSite site(vk_and_cpu(), kSmall, kSeed + 20, observe);
    ASSERT_TRUE(site.alloc_ok) << ggml_backend_get_last_error();
    EXPECT_EQ(site.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_FALSE(site.fused()) << site.plan();
    // The reason, from the runtime's legality check of the chain norm .. quantize.
    EXPECT_TRUE(contains(fusion_rejection(site.graph, {site.norm, site.out}),
                         "rule 'external uses' fails at 'step1'"))
        << fusion_rejection(site.graph, {site.norm, site.out});
    DisableVulkanFusion off("1");
    ChainSite unfused(vk_and_cpu(), kSmall, kSeed + 20, observe);
    EXPECT_TRUE(site.result == unfused.result);
}

TEST_F(SdConvRotVulkan, FusionHonoursTheDisableSwitch) {
    {
        DisableVulkanFusion off("1");
        ChainSite site(vk_and_cpu(), kSmall, kSeed + 30);
        EXPECT_EQ(site.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
        site.expect_unmatched();
    }
    {
        DisableVulkanFusion zero("0");  // "0" means not disabled
        EXPECT_TRUE(ChainSite(vk_and_cpu(), kSmall, kSeed + 30).fused());
    }
    EXPECT_TRUE(ChainSite(vk_and_cpu(), kSmall, kSeed + 30).fused());  // unset
}

// Chains the shader does not compute run unfused: rows of K % 4 != 0 codes (the quantize kernel's
// CPU-only layout), a fifth step, a SUB step, a step whose operand is the value itself.
TEST_F(SdConvRotVulkan, FusionMatchesOnlyWhatItComputes) {
    const StepCase mul{Step::kMul, {128, 1, 1, 1}}, add{Step::kAdd, {128, 1, 1, 1}};
    const ChainCase cases[] = {
        {"G1, K 38", Norm::kNorm, 1, {38, 5, 1, 1}, {{Step::kMul, {38, 1, 1, 1}}}},
        {"five steps", Norm::kNorm, 64, {128, 6, 1, 1}, {mul, add, mul, add, mul}},
        {"SUB", Norm::kNorm, 64, {128, 6, 1, 1}, {mul, {Step::kSub, {128, 1, 1, 1}}}},
        {"MUL of the value by itself", Norm::kRms, 64, {128, 6, 1, 1}, {{Step::kSquare, kNone}}},
    };
    uint64_t seed = kSeed + 40;
    for (const ChainCase & c : cases) {
        SCOPED_TRACE(c.name);
        ChainSite site(vk_and_cpu(), c, ++seed);
        ASSERT_TRUE(site.alloc_ok) << ggml_backend_get_last_error();
        EXPECT_EQ(site.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
        site.expect_unmatched();
    }
}

// The packed output placed by hand one buffer alignment into x (as the allocator never would): the
// fused shader writes the workspace, then copies, and equals the unfused chain (which reads x in its
// NORM before the quantize kernel writes).
TEST_F(SdConvRotVulkan, FusionComputesAnOutputOverItsInputThroughTheWorkspace) {
    const Edit over_x = [this](ggml_context *, ChainSite & s) {
        const size_t shift = ggml_backend_get_alignment(vk());
        s.placed.reset(
            ggml_backend_alloc_buffer(vk(), std::max(ggml_nbytes(s.source), shift + ggml_nbytes(s.out))));
        char * base = static_cast<char *>(ggml_backend_buffer_get_base(s.placed.get()));
        ASSERT_EQ(ggml_backend_tensor_alloc(s.placed.get(), s.source, base), GGML_STATUS_SUCCESS);
        ASSERT_EQ(ggml_backend_tensor_alloc(s.placed.get(), s.out, base + shift), GGML_STATUS_SUCCESS)
            << ggml_backend_get_last_error();
    };
    ChainSite on(vk_and_cpu(), kSmall, kSeed + 50, over_x);
    ASSERT_EQ(on.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_TRUE(on.fused()) << on.plan();
    DisableVulkanFusion off("1");
    ChainSite unfused(vk_and_cpu(), kSmall, kSeed + 50, over_x);
    ASSERT_EQ(unfused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_TRUE(on.result == unfused.result);
}

// ---- the rule's optimize: interleaved chains made consecutive --------------------------------------

// As ggx-run's DiT emits modulate(x, shift, scale) before a quantized linear: NORM, then the chunks
// of a modulation computed in the graph (VIEW, SCALE by 1 with bias 1 for 1 + scale), MUL, the shift
// chunk's VIEW, ADD, quantize.
struct ModulateSite : Site {
    static constexpr int64_t kK = 256, kTokens = 33;

    ModulateSite(const std::vector<ggml_backend_t> & backends, uint64_t seed) {
        ggml_context * x = ctx.get();
        ggml_tensor * hidden = input(new_tensor(x, GGML_TYPE_F32, {kK, kTokens, 1, 1}));
        ggml_tensor * modulation = ggml_silu(x, input(new_tensor(x, GGML_TYPE_F32, {3 * kK, 1, 1, 1})));
        ggml_set_name(modulation, "modulation");
        ggml_tensor * shift = ggml_view_1d(x, modulation, kK, 0);
        ggml_set_name(shift, "shift");
        ggml_tensor * scale = ggml_view_1d(x, modulation, kK, kK * sizeof(float));
        ggml_set_name(scale, "scale");
        ggml_tensor * one_plus = ggml_scale_bias(x, scale, 1.0f, 1.0f);
        ggml_set_name(one_plus, "1+scale");
        ggml_tensor * norm = ggml_norm(x, hidden, 1e-6f);
        ggml_set_name(norm, "norm");
        ggml_tensor * scaled = ggml_mul(x, norm, one_plus);
        ggml_set_name(scaled, "mul");
        ggml_tensor * shifted = ggml_add(x, scaled, shift);
        ggml_set_name(shifted, "add");
        build(ggml_quantize_i8_convrot(x, shifted, 256));
        ggml_set_name(out, "packed");
        compute(backends, seed);
    }
};

TEST_F(SdConvRotVulkan, OptimizeMakesAnInterleavedChainConsecutiveAndItFuses) {
    ModulateSite on(vk_and_cpu(), kSeed + 60);
    ASSERT_EQ(on.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_TRUE(on.fused()) << on.plan();
    EXPECT_EQ(ggx::tools::fused_node_names(on.sched.get(), kRule),
              (std::vector<std::vector<std::string>>{{"norm", "mul", "add", "packed"}}));
    EXPECT_EQ(on.order(), (std::vector<std::string>{"modulation", "scale", "1+scale", "shift", "norm", "mul",
                                                    "add", "packed"}));

    DisableVulkanFusion off("1");
    ModulateSite unfused(vk_and_cpu(), kSeed + 60);
    ASSERT_EQ(unfused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_EQ(unfused.order(), (std::vector<std::string>{"norm", "modulation", "scale", "1+scale", "mul",
                                                         "shift", "add", "packed"}));
    EXPECT_TRUE(on.result == unfused.result);
}

}  // namespace
