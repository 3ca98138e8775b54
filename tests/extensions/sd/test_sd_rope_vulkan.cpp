// sd.rope_apply.v1 and the RMSNorm -> Mul -> RoPE fusion on Vulkan (extensions/sd/vulkan/rope.cpp).
//
// Bounds:
//  - rope_apply: bit-identical to the CPU kernel "sd.rope_apply.cpu" (both round each product to F32
//    and add once, no FMA: the shader's results are `precise`) for every layout of a and pe, both
//    modes, full and partial rotation. Against the double formula (the conformance check) nmse <=
//    1e-12, as on CPU.
//  - the fusion against the unfused Vulkan chain (native RMS_NORM, native MUL, the rope kernel):
//    nmse <= 1e-12 and every element within 1e-5 * max|unfused|. The fused shader sums the squares in
//    the native order with the native workgroup size, but the driver may contract either sum of
//    squares into FMAs differently; any F32 summation order of D squares has relative error <=
//    (D - 1) * 2^-24 (1.6e-5 for D = 256, the largest case here, halved by the square root), so the
//    scale, and with it each rotated value, moves by less than 1e-5 relative. Against the CPU fusion
//    (sum of squares in double): nmse <= 1e-12.
//  - the F16 fusion (-> SCALE -> CPY into F16) against the unfused Vulkan chain (the above, native
//    SCALE, native CPY F32 -> F16): every element within 1e-5 * max|unfused| + one F16 spacing at the
//    unfused value. The fused shader computes SCALE's x * s + b with the product and sum rounded
//    separately (as the native SCALE does unless the driver contracts it: with b = 0 a contraction
//    changes nothing) and converts with round-to-nearest-even as the native CPY, so only the F32
//    difference above can move a value, to the neighbouring half at most. Measured on lavapipe:
//    bit-identical (0 differing elements, reported by the test). Against the CPU chain: nmse <= 1e-6
//    (F16 rounding, relative error <= 2^-11).
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml-vulkan.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/plan_steps.h"
#include "common/rope.h"
#include "sd-ggml-ext.h"
#include "support/check_util.h"
#include "extensions/sd/sd_pack_env.h"
#include "support/test_util.h"
#include "vulkan/vulkan_util.h"
#include "vulkan/sd_vulkan.h"

namespace {

using ggx::test::Buffer;
using ggx::test::check_case;
using ggx::test::check_kernel;
using ggx::test::CheckResult;
using ggx::test::contains;
using ggx::test::Context;
using ggx::test::cpu_backend;
using ggx::test::DisableVulkanFusion;
using ggx::test::fusion_rejection;
using ggx::test::node_names;
using ggx::test::random_floats;
using ggx::test::Sched;
using ggx::tools::count_steps;
using ggx::tools::describe_plan;
using ggx::tools::fusion_fired;

ggml_backend_t vk() {
    static ggml_backend_t b = ggml_backend_vk_get_device_count() > 0 ? ggml_backend_vk_init(0) : nullptr;
    return b;
}

// Rotation matrices as sd.cpp builds them: pe = cos, -sin, sin, cos of t * 10000^(-2j / 2P).
std::vector<float> rotation_pe(int64_t pairs, int64_t tokens) {
    std::vector<float> v;
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t j = 0; j < pairs; ++j) {
            const float angle =
                static_cast<float>(t + 1) *
                std::pow(10000.0f, -static_cast<float>(2 * j) / static_cast<float>(2 * pairs));
            v.insert(v.end(), {std::cos(angle), -std::sin(angle), std::sin(angle), std::cos(angle)});
        }
    }
    return v;
}

std::vector<float> read(const ggml_tensor * t) {
    std::vector<float> v(static_cast<size_t>(ggml_nelements(t)));
    ggml_backend_tensor_get(t, v.data(), 0, ggml_nbytes(t));
    return v;
}

// A contiguous F32 or F16 tensor's values as floats.
std::vector<float> as_floats(const ggml_tensor * t) {
    if (t->type == GGML_TYPE_F32) return read(t);
    std::vector<ggml_fp16_t> h(static_cast<size_t>(ggml_nelements(t)));
    ggml_backend_tensor_get(t, h.data(), 0, ggml_nbytes(t));
    std::vector<float> v(h.size());
    std::transform(h.begin(), h.end(), v.begin(), ggml_fp16_to_fp32);
    return v;
}

// Fills a tensor owning its storage with values of [lo, hi) from seed.
void fill(ggml_tensor * owner, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    const std::vector<float> v = random_floats(rng, ggml_nbytes(owner) / sizeof(float), lo, hi);
    ggml_backend_tensor_set(owner, v.data(), 0, ggml_nbytes(owner));
}

bool same_bits(const std::vector<float> & a, const std::vector<float> & b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double nmse(const std::vector<float> & got, const std::vector<float> & want) {
    double err = 0.0, norm = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
        err += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
        norm += double{want[i]} * want[i];
    }
    return norm > 0.0 ? err / norm : err;
}

class SdRopeVulkan : public ::testing::Test {
protected:
    void SetUp() override {
        if (vk()) return;
        const char * required = std::getenv("GGX_REQUIRE_VULKAN");
        if (required && std::strcmp(required, "0") != 0) FAIL() << "no Vulkan device";
        GTEST_SKIP() << "no Vulkan device";
    }
};

// ---- the kernel -----------------------------------------------------------------------------

bool reference_rope(const ggml_tensor * node, const double * const * inputs, double * output, void *) {
    const ggml_tensor * a = node->src[0];
    const int64_t dim = a->ne[0], heads = a->ne[1], tokens = a->ne[2], pairs = node->src[1]->ne[2];
    const bool interleaved = sd::rope::attrs_of(node).interleaved != 0;
    for (int64_t b = 0; b < a->ne[3]; ++b)
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t t = 0; t < tokens; ++t) {
                const double * x = inputs[0] + dim * (h + heads * (t + tokens * b));
                double * y = output + dim * (t + tokens * (h + heads * b));
                std::copy(x + 2 * pairs, x + dim, y + 2 * pairs);
                for (int64_t j = 0; j < pairs; ++j) {
                    const double * m = inputs[1] + 4 * (j + pairs * t);
                    const int64_t i0 = interleaved ? 2 * j : j, i1 = interleaved ? 2 * j + 1 : j + pairs;
                    const double p = x[i0], q = x[i1];
                    y[i0] = interleaved ? p * m[0] + q * m[1] : p * m[0] - q * m[2];
                    y[i1] = interleaved ? p * m[2] + q * m[3] : p * m[2] + q * m[0];
                }
            }
    return true;
}

TEST_F(SdRopeVulkan, PassesTheKernelConformanceCheck) {
    const sd::rope::Attrs interleaved{1}, split{0};
    const int64_t shapes[][5] = {{128, 3, 5, 2, 64}, {40, 3, 7, 3, 20}, {6, 1, 1, 1, 3}, {34, 5, 3, 1, 9}};
    std::vector<ggml_ext_check_case> cases;
    for (const auto & s : shapes) {
        for (const sd::rope::Attrs * attrs : {&interleaved, &split}) {
            cases.push_back(check_case(
                nullptr, {{GGML_TYPE_F32, {s[0], s[1], s[2], s[3]}}, {GGML_TYPE_F32, {2, 2, s[4], s[2]}}},
                attrs, sizeof *attrs));
        }
    }
    const CheckResult check =
        check_kernel(vk(), sd::vulkan::rope_kernel_desc(), cases, 1e-12, 5, reference_rope);
    const ggml_ext_check_report & report = check.report;
    EXPECT_TRUE(check.passed) << report.first_failure;
    EXPECT_EQ(report.n_passed, report.n_cases);
    EXPECT_EQ(report.n_skipped, 0);  // every layout is supported
    EXPECT_GT(report.n_runs, report.n_cases);
}

enum class Layout { contiguous, qkv_slice, permuted, column_strided };

struct RopeCase {
    int64_t d, h, l, b, pairs;
    bool interleaved;
};

// One rope node over a, pe in the given layouts, allocated on backend; the owners filled from seed.
struct RopeGraph {
    RopeGraph(ggml_backend_t backend, const RopeCase & c, Layout layout, bool strided_pe, uint32_t seed) {
        ggml_context * x = ctx.get();
        ggml_tensor *a_owner = nullptr, *a = nullptr;
        switch (layout) {
            case Layout::contiguous:
                a = a_owner = ggml_new_tensor_4d(x, GGML_TYPE_F32, c.d, c.h, c.l, c.b);
                break;
            case Layout::qkv_slice:  // the K part of a [3 * D * H, L, B] projection
                a_owner = ggml_new_tensor_3d(x, GGML_TYPE_F32, 3 * c.d * c.h, c.l, c.b);
                a = ggml_view_4d(x, a_owner, c.d, c.h, c.l, c.b, c.d * sizeof(float), a_owner->nb[1],
                                 a_owner->nb[2], static_cast<size_t>(c.d * c.h) * sizeof(float));
                break;
            case Layout::permuted:  // stored [D, L, H, B]
                a_owner = ggml_new_tensor_4d(x, GGML_TYPE_F32, c.d, c.l, c.h, c.b);
                a = ggml_permute(x, a_owner, 0, 2, 1, 3);
                break;
            case Layout::column_strided:  // stored [H, D, L, B]: nb0 is a storage row
                a_owner = ggml_new_tensor_4d(x, GGML_TYPE_F32, c.h, c.d, c.l, c.b);
                a = ggml_permute(x, a_owner, 1, 0, 2, 3);
                break;
        }
        ggml_tensor *pe_owner = nullptr, *pe = nullptr;
        if (strided_pe) {  // stored [P, row, col, L]
            pe_owner = ggml_new_tensor_4d(x, GGML_TYPE_F32, c.pairs, 2, 2, c.l);
            pe = ggml_permute(x, pe_owner, 2, 1, 0, 3);
        } else {
            pe = pe_owner = ggml_new_tensor_4d(x, GGML_TYPE_F32, 2, 2, c.pairs, c.l);
        }
        y = ggml_rope_apply(x, a, pe, c.interleaved);
        graph = ggml_new_graph(x);
        ggml_build_forward_expand(graph, y);
        buffer.reset(ggml_backend_alloc_ctx_tensors(x, backend));
        fill(a_owner, seed);
        fill(pe_owner, seed + 1);
    }
    Context ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    ggml_tensor * y;
    ggml_cgraph * graph;
    Buffer buffer;
};

TEST_F(SdRopeVulkan, IsBitIdenticalToTheCpuKernel) {
    const RopeCase cases[] = {{128, 3, 5, 2, 64, true}, {128, 3, 5, 2, 64, false}, {40, 3, 7, 3, 20, true},
                              {34, 1, 9, 5, 17, false}, {6, 5, 1, 1, 3, true},     {64, 24, 33, 1, 32, false},
                              {512, 2, 3, 1, 256, true}};
    uint32_t seed = 1;
    for (RopeCase c : cases) {
        for (Layout layout :
             {Layout::contiguous, Layout::qkv_slice, Layout::permuted, Layout::column_strided}) {
            for (bool partial : {false, true}) {
                c.pairs = partial ? std::max<int64_t>(1, c.d / 4 - 1) : c.d / 2;
                const bool strided_pe = layout == Layout::permuted || layout == Layout::column_strided;
                SCOPED_TRACE("layout " + std::to_string(static_cast<int>(layout)) +
                             " D=" + std::to_string(c.d) + " P=" + std::to_string(c.pairs) +
                             (c.interleaved ? " interleaved" : " split"));
                RopeGraph on_cpu(cpu_backend(), c, layout, strided_pe, seed),
                    on_vk(vk(), c, layout, strided_pe, seed);
                seed += 2;
                EXPECT_STREQ(ggml_ext_dev_selected_kernel(ggml_backend_get_device(vk()), on_vk.y),
                             "sd.rope_apply.vulkan");
                ASSERT_EQ(ggml_backend_graph_compute(cpu_backend(), on_cpu.graph), GGML_STATUS_SUCCESS);
                ASSERT_EQ(ggml_backend_graph_compute(vk(), on_vk.graph), GGML_STATUS_SUCCESS)
                    << ggml_backend_get_last_error();
                EXPECT_TRUE(same_bits(read(on_vk.y), read(on_cpu.y)));
            }
        }
    }
}

// Custom nodes are never placed over their inputs; an output a caller placed over an input is
// refused with a reason (as on CPU) rather than computed wrongly.
TEST_F(SdRopeVulkan, AnOutputOverlappingAnInputIsRefused) {
    Context ctx(ggml_init({size_t{1} << 20, nullptr, true}));
    ggml_tensor * a = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 8, 2, 3, 1);
    ggml_tensor * pe = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 2, 2, 4, 3);
    ggml_tensor * y = ggml_rope_apply(ctx.get(), a, pe, true);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y);
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(vk());
    const size_t pe_offset = 4096;
    Buffer buffer(ggml_backend_buft_alloc_buffer(buft, pe_offset + ggml_nbytes(pe)));
    auto * base = static_cast<char *>(ggml_backend_buffer_get_base(buffer.get()));
    ASSERT_EQ(ggml_backend_tensor_alloc(buffer.get(), a, base), GGML_STATUS_SUCCESS);
    ASSERT_EQ(ggml_backend_tensor_alloc(buffer.get(), y, base), GGML_STATUS_SUCCESS);
    ASSERT_EQ(ggml_backend_tensor_alloc(buffer.get(), pe, base + pe_offset), GGML_STATUS_SUCCESS);
    EXPECT_NE(ggml_backend_graph_compute(vk(), graph), GGML_STATUS_SUCCESS);
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "the output overlaps an input"))
        << ggml_backend_get_last_error();
}

// ---- the fusions RMSNorm -> Mul -> RoPE [-> Scale -> F16 Copy] ---------------------------------

// Where the F16 rule's CPY writes: none (the chain ends at the rope); a contiguous view 4 bytes
// into an F16 buffer tensor; the token slice [2, 2 + L) of a [D, L + 3, H*B] F16 cache (strided,
// the cache's other tokens must survive); an owning ggml_cast.
constexpr const char * kRule = "sd.rms_norm_mul_rope.vulkan";
constexpr const char * kScaledRule = "sd.rms_norm_mul_rope_scale_f16.vulkan";

enum class Dest { none, contiguous, cache_slice, cast };

struct ChainOptions {
    bool qkv_slice = false;
    Dest dest = Dest::none;
    float scale = 1.0f, bias = 0.0f;
    // Unrelated nodes u1 (between RMS_NORM and MUL) and u2 (between the rope and SCALE) in build
    // order; with dependent_u1, u1 reads the RMS_NORM (so the chain cannot become consecutive).
    bool interleaved = false, dependent_u1 = false;
};

// RMS_NORM -> MUL(w) -> rope [-> SCALE -> CPY] over x (contiguous or a qkv slice), planned by a
// scheduler over backend (and the CPU); the inputs filled from seed.
struct Chain {
    Chain(ggml_backend_t backend, const RopeCase & c, const ChainOptions & o, uint32_t seed) {
        ggml_context * x = ctx.get();
        ggml_tensor *owner, *in;
        if (o.qkv_slice) {
            owner = ggml_new_tensor_3d(x, GGML_TYPE_F32, 3 * c.d * c.h, c.l, c.b);
            in = ggml_view_4d(x, owner, c.d, c.h, c.l, c.b, c.d * sizeof(float), owner->nb[1], owner->nb[2],
                              static_cast<size_t>(c.d * c.h) * sizeof(float));
        } else {
            owner = in = ggml_new_tensor_4d(x, GGML_TYPE_F32, c.d, c.h, c.l, c.b);
        }
        ggml_tensor * w = ggml_new_tensor_1d(x, GGML_TYPE_F32, c.d);
        ggml_tensor * pe = ggml_new_tensor_4d(x, GGML_TYPE_F32, 2, 2, c.pairs, c.l);
        ggml_tensor * z = ggml_new_tensor_1d(x, GGML_TYPE_F32, 64);
        ggml_tensor * norm = named(ggml_rms_norm(x, in, 1e-6f), "norm");
        ggml_tensor * mul = named(ggml_mul(x, norm, w), "mul");
        ggml_tensor * rope = named(ggml_rope_apply(x, mul, pe, c.interleaved), "rope");
        chain = {norm, mul, rope};
        y = rope;
        ggml_tensor * cache = add_copy(backend, o, c);
        for (ggml_tensor * t : {owner, w, pe, z})
            ggml_set_input(t);
        ggml_set_output(y);
        graph = ggml_new_graph(x);
        if (o.interleaved) {
            ggml_tensor * u1 = named(ggml_sqr(x, o.dependent_u1 ? norm : z), "u1");
            ggml_tensor * u2 = named(ggml_scale(x, z, 3.0f), "u2");
            unrelated = {u1, u2};
            for (ggml_tensor * t : {norm, u1, mul, rope, u2})
                ggml_build_forward_expand(graph, t);
            ggml_set_output(u1);
            ggml_set_output(u2);
        }
        ggml_build_forward_expand(graph, y);

        ggml_backend_t backends[] = {backend, cpu_backend()};
        const int n = backend == cpu_backend() ? 1 : 2;
        sched.reset(ggml_backend_sched_new(backends, nullptr, n, 256, false, false));
        alloc_ok = ggml_backend_sched_alloc_graph(sched.get(), graph);
        if (!alloc_ok) return;
        fill(owner, seed, -2.0f, 2.0f);
        fill(w, seed + 1, -2.0f, 2.0f);
        fill(z, seed + 2);
        if (cache) fill_f16(cache, seed + 3);
        const std::vector<float> p = rotation_pe(c.pairs, c.l);
        ggml_backend_tensor_set(pe, p.data(), 0, ggml_nbytes(pe));
        compute_status = ggml_backend_sched_graph_compute(sched.get(), graph);
    }
    static ggml_tensor * named(ggml_tensor * t, const char * name) {
        ggml_set_name(t, name);
        return t;
    }
    // Continues y with SCALE -> CPY into the destination of o.dest (y becomes the CPY, result what to
    // read back); the cache tensor to fill, if any, allocated on backend beforehand as a K/V cache is.
    ggml_tensor * add_copy(ggml_backend_t backend, const ChainOptions & o, const RopeCase & c) {
        result = y;
        if (o.dest == Dest::none) return nullptr;
        ggml_context * x = ctx.get();
        ggml_tensor * scaled = named(ggml_scale_bias(x, y, o.scale, o.bias), "scale");
        const int64_t hb = c.h * c.b;
        ggml_tensor *cache = nullptr, *dst = nullptr;
        switch (o.dest) {
            case Dest::contiguous:
                cache = ggml_new_tensor_1d(cache_ctx.get(), GGML_TYPE_F16, ggml_nelements(y) + 4);
                dst = ggml_view_3d(x, cache, c.d, c.l, hb, y->ne[0] * 2, y->nb[2] / 2, 4);
                break;
            case Dest::cache_slice:
                cache = ggml_new_tensor_3d(cache_ctx.get(), GGML_TYPE_F16, c.d, c.l + 3, hb);
                dst = ggml_view_3d(x, cache, c.d, c.l, hb, cache->nb[1], cache->nb[2], 2 * cache->nb[1]);
                break;
            default:
                break;
        }
        y = named(dst ? ggml_cpy(x, scaled, named(dst, "dst")) : ggml_cast(x, scaled, GGML_TYPE_F16), "y");
        result = cache ? cache : y;
        if (cache) cache_buffer.reset(ggml_backend_alloc_ctx_tensors(cache_ctx.get(), backend));
        return cache;
    }
    static void fill_f16(ggml_tensor * t, uint32_t seed) {
        std::mt19937 rng(seed);
        std::vector<uint16_t> v(ggml_nbytes(t) / 2);
        for (uint16_t & h : v)
            h = static_cast<uint16_t>(rng() % 0x7c00u | (rng() & 1u) << 15);  // finite
        ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
    }
    // The result's values as floats (F16 converted).
    std::vector<float> values() const { return as_floats(result); }
    std::vector<std::string> order() const { return node_names(graph); }
    bool fused(const char * rule) const { return fusion_fired(sched.get(), rule); }
    std::string plan() const { return describe_plan(sched.get()); }
    // Of a chain without SCALE -> CPY, built consecutively: neither rule fired, and the runtime's
    // check accepts RMS_NORM -> MUL -> rope, so the rule did not match it.
    void expect_unmatched() const {
        EXPECT_FALSE(fused(kRule)) << plan();
        EXPECT_FALSE(fused(kScaledRule)) << plan();
        EXPECT_EQ(fusion_rejection(graph, chain), "");
    }
    Context ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    Context cache_ctx{ggml_init({size_t{1} << 16, nullptr, true})};
    Buffer cache_buffer;
    Sched sched;
    ggml_cgraph * graph = nullptr;
    ggml_tensor *y, *result;
    std::vector<ggml_tensor *> unrelated;    // u1, u2 with ChainOptions::interleaved
    std::vector<const ggml_tensor *> chain;  // RMS_NORM, MUL, rope
    bool alloc_ok = false;
    ggml_status compute_status = GGML_STATUS_FAILED;
};

// The spacing of F16 values at |v| (2^-24 below the normal range).
float f16_ulp(float v) {
    const float a = std::max(std::fabs(v), 6.103515625e-05f);
    return std::ldexp(1.0f, std::ilogb(a) - 10);
}

// Fused F16 results against unfused ones: every element within 1e-5 * max|want| (the F32 bound of
// the chain before SCALE, see the top, carried through the scale) plus one F16 spacing (the two F32
// values may round to neighbouring halves); the count of differing elements.
size_t expect_f16_close(const std::vector<float> & got, const std::vector<float> & want) {
    float peak = 0.0f;
    for (float v : want)
        if (std::isfinite(v)) peak = std::max(peak, std::fabs(v));
    size_t differing = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        if (got[i] == want[i]) continue;  // also the infinities of an overflowing scale
        ++differing;
        EXPECT_LE(std::fabs(got[i] - want[i]), 1e-5f * peak + f16_ulp(want[i])) << "element " << i;
    }
    return differing;
}

TEST_F(SdRopeVulkan, FusedChainMatchesTheUnfusedVulkanChain) {
    const RopeCase cases[] = {{128, 3, 5, 2, 64, true}, {128, 3, 5, 2, 64, false}, {40, 3, 7, 3, 20, true},
                              {34, 7, 3, 1, 9, false},  {6, 1, 1, 1, 3, true},     {256, 2, 4, 1, 100, false},
                              {200, 3, 2, 1, 100, true}};
    uint32_t seed = 100;
    double worst = 0.0;
    for (const RopeCase & c : cases) {
        for (bool qkv_slice : {false, true}) {
            SCOPED_TRACE(std::string(qkv_slice ? "qkv slice" : "contiguous") + " D=" + std::to_string(c.d) +
                         " P=" + std::to_string(c.pairs) + (c.interleaved ? " interleaved" : " split"));
            seed += 2;
            const ChainOptions o{.qkv_slice = qkv_slice};
            Chain fused(vk(), c, o, seed);
            ASSERT_TRUE(fused.alloc_ok) << ggml_backend_get_last_error();
            EXPECT_TRUE(fused.fused(kRule)) << fused.plan();
            ASSERT_EQ(fused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();

            DisableVulkanFusion off("1");
            Chain unfused(vk(), c, o, seed);
            ASSERT_EQ(unfused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
            unfused.expect_unmatched();
            EXPECT_EQ(count_steps(unfused.sched.get(), GGML_EXT_STEP_KERNEL, "sd.rope_apply.vulkan"), 1)
                << unfused.plan();

            const std::vector<float> got = read(fused.y), want = read(unfused.y);
            float peak = 0.0f, diff = 0.0f;
            for (size_t i = 0; i < got.size(); ++i) {
                peak = std::max(peak, std::fabs(want[i]));
                diff = std::max(diff, std::fabs(got[i] - want[i]));
            }
            EXPECT_LE(diff, 1e-5f * peak);
            EXPECT_LE(nmse(got, want), 1e-12);
            worst = std::max(worst, static_cast<double>(diff / peak));

            Chain on_cpu(cpu_backend(), c, o, seed);
            ASSERT_EQ(on_cpu.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
            EXPECT_LE(nmse(got, read(on_cpu.y)), 1e-12);
        }
    }
    RecordProperty("worst_relative_difference", std::to_string(worst));
    std::printf("fused vs unfused Vulkan: worst max|diff| / max|unfused| = %g\n", worst);
}

const char * dest_name(Dest d) {
    static const char * const names[] = {"rope", "contiguous F16", "F16 cache slice", "F16 cast"};
    return names[static_cast<int>(d)];
}

// The fused and the unfused (GGML_VK_DISABLE_FUSION) F16 chains of o and c, the fused one taken by
// the F16 rule; the number of differing elements of the results (bound: expect_f16_close).
size_t compare_scaled(const RopeCase & c, const ChainOptions & o, uint32_t seed) {
    Chain fused(vk(), c, o, seed);
    EXPECT_TRUE(fused.alloc_ok) << ggml_backend_get_last_error();
    EXPECT_TRUE(fused.fused(kScaledRule)) << fused.plan();
    EXPECT_EQ(fused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    DisableVulkanFusion off("1");
    Chain unfused(vk(), c, o, seed);
    EXPECT_EQ(unfused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_FALSE(unfused.fused(kScaledRule)) << unfused.plan();
    EXPECT_FALSE(unfused.fused(kRule)) << unfused.plan();
    for (size_t i = 0; i < fused.unrelated.size(); ++i)
        EXPECT_TRUE(same_bits(read(fused.unrelated[i]), read(unfused.unrelated[i])));
    // Against the CPU chain, the F16 rounding alone on the values both keep finite: relative error
    // <= 2^-11 per element.
    Chain on_cpu(cpu_backend(), c, o, seed);
    EXPECT_EQ(on_cpu.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    const std::vector<float> got = fused.values(), on_cpu_values = on_cpu.values();
    std::vector<float> finite_got, finite_cpu;
    for (size_t i = 0; i < got.size(); ++i) {
        if (!std::isfinite(got[i]) || !std::isfinite(on_cpu_values[i])) continue;
        finite_got.push_back(got[i]);
        finite_cpu.push_back(on_cpu_values[i]);
    }
    EXPECT_LE(nmse(finite_got, finite_cpu), 1e-6);
    return expect_f16_close(got, unfused.values());
}

// RMSNorm -> Mul -> RoPE -> Scale -> F16 Copy: every destination kind, scale with and without bias,
// both rotation modes, partial rotation, contiguous and qkv-slice inputs.
TEST_F(SdRopeVulkan, FusedScaledF16ChainMatchesTheUnfusedVulkanChain) {
    const RopeCase cases[] = {{128, 3, 5, 2, 64, true}, {128, 3, 5, 2, 64, false},
                              {40, 3, 7, 3, 20, true},  {34, 7, 3, 1, 9, false},
                              {6, 1, 1, 1, 3, true},    {256, 2, 4, 1, 100, false}};
    // Plain, with bias, into the F16 subnormals, and overflowing to infinity for part of the values.
    const float scales[][2] = {{0.125f, 0.0f}, {0.7f, 0.25f}, {3e-6f, 0.0f}, {3e4f, -1.0f}};
    uint32_t seed = 300;
    size_t differing = 0, total = 0;
    for (const RopeCase & c : cases) {
        for (Dest dest : {Dest::contiguous, Dest::cache_slice, Dest::cast}) {
            for (const auto & sb : scales) {
                seed += 4;
                const ChainOptions o{.qkv_slice = seed % 8 == 0, .dest = dest, .scale = sb[0], .bias = sb[1]};
                SCOPED_TRACE(std::string(dest_name(dest)) + " D=" + std::to_string(c.d) +
                             " P=" + std::to_string(c.pairs) + (c.interleaved ? " interleaved" : " split") +
                             " scale " + std::to_string(sb[0]) + " bias " + std::to_string(sb[1]));
                differing += compare_scaled(c, o, seed);
                total += static_cast<size_t>(c.d * c.h * c.l * c.b);
            }
        }
    }
    RecordProperty("differing_f16_elements", std::to_string(differing));
    std::printf("fused F16 vs unfused Vulkan: %zu of %zu elements differ\n", differing, total);
}

// Caller-placed memory: the F16 destination lies inside the RMS_NORM input x. The fused range
// computes into the workspace and copies; the results equal the unfused chain's (native CPY writes
// after the RMS_NORM read x), and the bytes of x outside the destination are untouched.
struct OverlapGraph {
    explicit OverlapGraph(uint32_t seed) {
        ggml_context * c = ctx.get();
        x = ggml_new_tensor_4d(c, GGML_TYPE_F32, 64, 2, 3, 1);
        ggml_tensor * w = ggml_new_tensor_1d(c, GGML_TYPE_F32, 64);
        ggml_tensor * pe = ggml_new_tensor_4d(c, GGML_TYPE_F32, 2, 2, 32, 3);
        dst = ggml_new_tensor_3d(c, GGML_TYPE_F16, 64, 3, 2);
        ggml_tensor * rope = ggml_rope_apply(c, ggml_mul(c, ggml_rms_norm(c, x, 1e-6f), w), pe, true);
        ggml_tensor * y = ggml_cpy(c, ggml_scale_bias(c, rope, 0.5f, 0.25f), dst);
        ggml_set_output(y);
        ggml_cgraph * graph = ggml_new_graph(c);
        ggml_build_forward_expand(graph, y);
        buffer.reset(ggml_backend_buft_alloc_buffer(ggml_backend_get_default_buffer_type(vk()), 3 * 4096));
        auto * base = static_cast<char *>(ggml_backend_buffer_get_base(buffer.get()));
        for (auto [t, offset] : {std::pair{x, 0}, {dst, kDstOffset}, {w, 4096}, {pe, 8192}})
            EXPECT_EQ(ggml_backend_tensor_alloc(buffer.get(), t, base + offset), GGML_STATUS_SUCCESS);
        fill(x, seed, -2.0f, 2.0f);
        fill(w, seed + 1, -2.0f, 2.0f);
        const std::vector<float> p = rotation_pe(32, 3);
        ggml_backend_tensor_set(pe, p.data(), 0, ggml_nbytes(pe));
        ggml_backend_t backends[] = {vk(), cpu_backend()};
        sched.reset(ggml_backend_sched_new(backends, nullptr, 2, 256, false, false));
        EXPECT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
        status = ggml_backend_sched_graph_compute(sched.get(), graph);
    }
    // x's bytes outside the destination.
    std::vector<uint8_t> rest_of_x() const {
        std::vector<uint8_t> bytes(ggml_nbytes(x));
        ggml_backend_tensor_get(x, bytes.data(), 0, bytes.size());
        bytes.erase(bytes.begin() + kDstOffset, bytes.begin() + kDstOffset + ggml_nbytes(dst));
        return bytes;
    }
    static constexpr int kDstOffset = 256;  // dst: bytes [256, 1024) of x's [0, 1536)
    Context ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    Buffer buffer;
    Sched sched;
    ggml_tensor *x, *dst;
    ggml_status status = GGML_STATUS_FAILED;
};

TEST_F(SdRopeVulkan, AnF16DestinationOverlappingAnInputIsComputedThroughTheWorkspace) {
    OverlapGraph fused(11);
    EXPECT_TRUE(fusion_fired(fused.sched.get(), kScaledRule)) << describe_plan(fused.sched.get());
    ASSERT_EQ(fused.status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    DisableVulkanFusion off("1");
    OverlapGraph unfused(11);
    ASSERT_EQ(unfused.status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    expect_f16_close(as_floats(fused.dst), as_floats(unfused.dst));
    EXPECT_EQ(fused.rest_of_x(), unfused.rest_of_x());
}

TEST_F(SdRopeVulkan, TheDisableSwitchTurnsTheFusionsOff) {
    const RopeCase c{64, 2, 3, 1, 32, true};
    const ChainOptions plain{}, scaled{.dest = Dest::cache_slice, .scale = 0.5f, .interleaved = true};
    const std::vector<std::string> built{"norm", "u1", "mul", "rope", "u2", "scale", "dst", "y"};
    {
        DisableVulkanFusion off("1");
        Chain chain(vk(), c, plain, 7), scaled_chain(vk(), c, scaled, 7);
        ASSERT_EQ(chain.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
        ASSERT_EQ(scaled_chain.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
        chain.expect_unmatched();
        EXPECT_FALSE(scaled_chain.fused(kRule)) << scaled_chain.plan();
        EXPECT_FALSE(scaled_chain.fused(kScaledRule)) << scaled_chain.plan();
        EXPECT_EQ(scaled_chain.order(), built);  // optimize moved nothing
    }
    {
        DisableVulkanFusion zero("0");  // "0" means not disabled
        Chain chain(vk(), c, plain, 7), scaled_chain(vk(), c, scaled, 7);
        EXPECT_TRUE(chain.fused(kRule)) << chain.plan();
        EXPECT_TRUE(scaled_chain.fused(kScaledRule)) << scaled_chain.plan();
    }
    Chain chain(vk(), c, plain, 7), scaled_chain(vk(), c, scaled, 7);  // unset
    EXPECT_TRUE(chain.fused(kRule)) << chain.plan();
    EXPECT_TRUE(scaled_chain.fused(kScaledRule)) << scaled_chain.plan();
}

// The rule's optimize delays the chain's leading links past the unrelated nodes u1 (between
// RMS_NORM and MUL) and u2 (between the rope and SCALE): the chain becomes consecutive and fuses,
// with the unfused chain's results. Without SCALE -> CPY the 3-node chain is made consecutive too.
TEST_F(SdRopeVulkan, OptimizeMakesAnInterleavedChainConsecutiveAndItFuses) {
    const RopeCase c{64, 3, 4, 1, 24, false};
    const ChainOptions o{.dest = Dest::cache_slice, .scale = 0.25f, .interleaved = true};
    Chain chain(vk(), c, o, 21);
    EXPECT_EQ(chain.order(),
              (std::vector<std::string>{"u1", "u2", "dst", "norm", "mul", "rope", "scale", "y"}));
    EXPECT_EQ(compare_scaled(c, o, 21), 0u);

    Chain plain(vk(), c, {.interleaved = true}, 22);
    EXPECT_EQ(plain.order(), (std::vector<std::string>{"u1", "norm", "mul", "rope", "u2"}));
    EXPECT_TRUE(plain.fused(kRule)) << plain.plan();
    EXPECT_EQ(ggx::tools::fused_node_names(plain.sched.get(), kRule),
              (std::vector<std::vector<std::string>>{{"norm", "mul", "rope"}}));
    ASSERT_EQ(plain.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
}

// A node between the links that reads the chain (u1 = sqr(RMS_NORM)) cannot be crossed: the graph
// keeps its order, nothing fuses, and the results are the unfused ones.
TEST_F(SdRopeVulkan, OptimizeLeavesAChainWithAnInterleavedConsumer) {
    const RopeCase c{64, 3, 4, 1, 24, true};
    const ChainOptions o{.dest = Dest::contiguous, .scale = 0.25f, .interleaved = true, .dependent_u1 = true};
    Chain chain(vk(), c, o, 31);
    ASSERT_EQ(chain.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_EQ(chain.order(),
              (std::vector<std::string>{"norm", "u1", "mul", "rope", "u2", "scale", "dst", "y"}));
    EXPECT_FALSE(chain.fused(kScaledRule)) << chain.plan();
    EXPECT_FALSE(chain.fused(kRule)) << chain.plan();
    DisableVulkanFusion off("1");
    Chain unfused(vk(), c, o, 31);
    EXPECT_TRUE(same_bits(chain.values(), unfused.values()));
    EXPECT_TRUE(same_bits(read(chain.unrelated[0]), read(unfused.unrelated[0])));
}

// The runtime's legality check keeps the chain unfused when the product has another consumer.
TEST_F(SdRopeVulkan, AnIntermediateWithAnotherConsumerIsNotFused) {
    Context ctx(ggml_init({size_t{1} << 20, nullptr, true}));
    ggml_context * x = ctx.get();
    ggml_tensor * in = ggml_new_tensor_4d(x, GGML_TYPE_F32, 32, 2, 3, 1);
    ggml_tensor * w = ggml_new_tensor_1d(x, GGML_TYPE_F32, 32);
    ggml_tensor * pe = ggml_new_tensor_4d(x, GGML_TYPE_F32, 2, 2, 16, 3);
    ggml_tensor * norm = ggml_rms_norm(x, in, 1e-5f);
    ggml_tensor * mul = ggml_mul(x, norm, w);
    ggml_set_name(mul, "mul");
    ggml_tensor * rope = ggml_rope_apply(x, mul, pe, true);
    ggml_tensor * extra = ggml_scale(x, mul, 2.0f);
    ggml_set_output(extra);
    ggml_cgraph * graph = ggml_new_graph(x);
    ggml_build_forward_expand(graph, rope);
    ggml_build_forward_expand(graph, extra);
    ggml_backend_t backends[] = {vk(), cpu_backend()};
    Sched sched(ggml_backend_sched_new(backends, nullptr, 2, 256, false, false));
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
    EXPECT_FALSE(fusion_fired(sched.get(), kRule)) << describe_plan(sched.get());
    // The reason, from the runtime's legality check of the chain RMS_NORM -> MUL -> rope.
    const std::string reason = fusion_rejection(graph, {norm, mul, rope});
    EXPECT_TRUE(contains(reason, "rule 'external uses' fails at 'mul'")) << reason;
}

// The spec's compilation policy for these shaders: "SPIR-V optimization is disabled because it
// changes the reduction results" (NO_OPTIMIZE in vulkan/shaders/rope.cmake, glslc -O0). Unoptimised
// modules keep their helper functions' calls (rope.glsl's conversions and stores); glslc -O inlines
// every function into main, so the pack's other, optimised modules have none. Checked on the
// embedded SPIR-V, so a build that drops the flag fails here.
size_t function_calls(const sd::vulkan::SpirvModule & m) {
    constexpr uint32_t kOpFunctionCall = 57;
    size_t calls = 0;
    for (size_t i = 5; i < m.n_words;) {  // after the five-word header, instructions
        const uint32_t n = m.words[i] >> 16;
        if (n == 0) break;
        calls += (m.words[i] & 0xFFFFu) == kOpFunctionCall;
        i += n;
    }
    return calls;
}

TEST(SdVulkanShaders, OnlyTheRopeShadersAreCompiledWithoutOptimisation) {
    const std::vector<std::string> unoptimised = {"sd_rope_apply", "sd_rms_norm_mul_rope",
                                                  "sd_rms_norm_mul_rope_scale_f16"};
    size_t found = 0;
    for (const sd::vulkan::SpirvModule & m : sd::vulkan::shader_table()) {
        const bool rope = std::find(unoptimised.begin(), unoptimised.end(), m.name) != unoptimised.end();
        found += rope;
        if (rope)
            EXPECT_GT(function_calls(m), 0u) << m.name << " is optimised";
        else
            EXPECT_EQ(function_calls(m), 0u) << m.name << " is not optimised";
    }
    EXPECT_EQ(found, unoptimised.size());
}

}  // namespace
