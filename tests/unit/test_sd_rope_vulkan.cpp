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

#include "common/rope.h"
#include "sd-ggml-ext.h"
#include "vulkan/vulkan.h"

namespace {

struct ContextDeleter {
    void operator()(ggml_context * ctx) const { ggml_free(ctx); }
};
using Context = std::unique_ptr<ggml_context, ContextDeleter>;
struct BufferDeleter {
    void operator()(ggml_backend_buffer_t b) const { ggml_backend_buffer_free(b); }
};
using Buffer = std::unique_ptr<ggml_backend_buffer, BufferDeleter>;
struct SchedDeleter {
    void operator()(ggml_backend_sched_t s) const { ggml_backend_sched_free(s); }
};
using Sched = std::unique_ptr<ggml_backend_sched, SchedDeleter>;

bool contains(const std::string & text, const std::string & part) {
    return text.find(part) != std::string::npos;
}

class SdPack : public ::testing::Environment {
public:
    void SetUp() override {
        ASSERT_EQ(sd_ggml_register_extensions(), SD_GGML_EXT_REGISTERED) << ggml_backend_get_last_error();
    }
};
const auto * const g_env = ::testing::AddGlobalTestEnvironment(new SdPack);

ggml_backend_t cpu() {
    static ggml_backend_t b = ggml_backend_cpu_init();
    return b;
}

ggml_backend_t vk() {
    static ggml_backend_t b = ggml_backend_vk_get_device_count() > 0 ? ggml_backend_vk_init(0) : nullptr;
    return b;
}

std::vector<float> uniform(std::mt19937 & rng, int64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (float & x : v)
        x = dist(rng);
    return v;
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

// Fills a tensor owning its storage with values of [lo, hi) from seed.
void fill(ggml_tensor * owner, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    const std::vector<float> v = uniform(rng, ggml_nbytes(owner) / sizeof(float), lo, hi);
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
            ggml_ext_check_case c{};
            c.struct_size = sizeof c;
            c.version = GGML_EXT_CHECK_CASE_VERSION;
            c.n_inputs = 2;
            c.types[0] = c.types[1] = GGML_TYPE_F32;
            const int64_t a_ne[4] = {s[0], s[1], s[2], s[3]}, pe_ne[4] = {2, 2, s[4], s[2]};
            std::copy(a_ne, a_ne + 4, c.ne[0]);
            std::copy(pe_ne, pe_ne + 4, c.ne[1]);
            c.attrs = attrs;
            c.attr_size = sizeof *attrs;
            c.non_contiguous = true;
            cases.push_back(c);
        }
    }
    ggml_ext_check_params params{};
    params.struct_size = sizeof params;
    params.version = GGML_EXT_CHECK_PARAMS_VERSION;
    params.device = ggml_backend_get_device(vk());
    params.backend = vk();
    params.kernel = sd::vulkan::rope_kernel_desc();
    params.cases = cases.data();
    params.n_cases = static_cast<int>(cases.size());
    params.max_nmse = 1e-12;
    params.reference = reference_rope;
    params.seed = 5;
    ggml_ext_check_report report{};
    report.struct_size = sizeof report;
    report.version = GGML_EXT_CHECK_REPORT_VERSION;
    EXPECT_TRUE(ggml_ext_check_kernel(&params, &report)) << report.first_failure;
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
                RopeGraph on_cpu(cpu(), c, layout, strided_pe, seed),
                    on_vk(vk(), c, layout, strided_pe, seed);
                seed += 2;
                EXPECT_STREQ(ggml_ext_dev_selected_kernel(ggml_backend_get_device(vk()), on_vk.y),
                             "sd.rope_apply.vulkan");
                ASSERT_EQ(ggml_backend_graph_compute(cpu(), on_cpu.graph), GGML_STATUS_SUCCESS);
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
    EXPECT_TRUE(contains(ggml_backend_get_last_error(), "the output overlaps input"))
        << ggml_backend_get_last_error();
}

// ---- the fusion RMSNorm -> Mul -> RoPE ------------------------------------------------------

// RMS_NORM -> MUL(w) -> rope over x (contiguous or a qkv slice), planned by a scheduler over
// backend (and the CPU) with explain mode on; the inputs filled from seed.
struct Chain {
    Chain(ggml_backend_t backend, const RopeCase & c, bool qkv_slice, uint32_t seed) {
        ggml_context * x = ctx.get();
        ggml_tensor *owner, *in;
        if (qkv_slice) {
            owner = ggml_new_tensor_3d(x, GGML_TYPE_F32, 3 * c.d * c.h, c.l, c.b);
            in = ggml_view_4d(x, owner, c.d, c.h, c.l, c.b, c.d * sizeof(float), owner->nb[1], owner->nb[2],
                              static_cast<size_t>(c.d * c.h) * sizeof(float));
        } else {
            owner = in = ggml_new_tensor_4d(x, GGML_TYPE_F32, c.d, c.h, c.l, c.b);
        }
        ggml_tensor * w = ggml_new_tensor_1d(x, GGML_TYPE_F32, c.d);
        ggml_tensor * pe = ggml_new_tensor_4d(x, GGML_TYPE_F32, 2, 2, c.pairs, c.l);
        for (ggml_tensor * t : {owner, w, pe})
            ggml_set_input(t);
        ggml_tensor * mul = ggml_mul(x, ggml_rms_norm(x, in, 1e-6f), w);
        ggml_set_name(mul, "mul");
        y = ggml_rope_apply(x, mul, pe, c.interleaved);
        ggml_set_name(y, "rope");
        ggml_set_output(y);
        ggml_cgraph * graph = ggml_new_graph(x);
        ggml_build_forward_expand(graph, y);

        ggml_backend_t backends[] = {backend, cpu()};
        const int n = backend == cpu() ? 1 : 2;
        sched.reset(ggml_backend_sched_new(backends, nullptr, n, 256, false, false));
        ggml_ext_sched_set_explain(sched.get(), true);
        alloc_ok = ggml_backend_sched_alloc_graph(sched.get(), graph);
        explanation = ggml_ext_sched_explanation(sched.get());
        if (!alloc_ok) return;
        fill(owner, seed, -2.0f, 2.0f);
        fill(w, seed + 1, -2.0f, 2.0f);
        const std::vector<float> p = rotation_pe(c.pairs, c.l);
        ggml_backend_tensor_set(pe, p.data(), 0, ggml_nbytes(pe));
        compute_status = ggml_backend_sched_graph_compute(sched.get(), graph);
    }
    bool fused(const char * rule) const {
        return contains(explanation, std::string("fusion '") + rule + "' matched nodes") &&
               contains(explanation, "accepted");
    }
    Context ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    Sched sched;
    ggml_tensor * y;
    bool alloc_ok = false;
    ggml_status compute_status = GGML_STATUS_FAILED;
    std::string explanation;
};

// Sets GGML_VK_DISABLE_FUSION for one scope.
struct DisableFusion {
    explicit DisableFusion(const char * value) { setenv("GGML_VK_DISABLE_FUSION", value, 1); }
    ~DisableFusion() { unsetenv("GGML_VK_DISABLE_FUSION"); }
};

constexpr const char * kRule = "sd.rms_norm_mul_rope.vulkan";

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
            Chain fused(vk(), c, qkv_slice, seed);
            ASSERT_TRUE(fused.alloc_ok) << ggml_backend_get_last_error();
            EXPECT_TRUE(fused.fused(kRule)) << fused.explanation;
            ASSERT_EQ(fused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();

            DisableFusion off("1");
            Chain unfused(vk(), c, qkv_slice, seed);
            ASSERT_EQ(unfused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
            EXPECT_FALSE(contains(unfused.explanation, kRule)) << unfused.explanation;
            EXPECT_TRUE(contains(unfused.explanation, "sd.rope_apply.vulkan")) << unfused.explanation;

            const std::vector<float> got = read(fused.y), want = read(unfused.y);
            float peak = 0.0f, diff = 0.0f;
            for (size_t i = 0; i < got.size(); ++i) {
                peak = std::max(peak, std::fabs(want[i]));
                diff = std::max(diff, std::fabs(got[i] - want[i]));
            }
            EXPECT_LE(diff, 1e-5f * peak);
            EXPECT_LE(nmse(got, want), 1e-12);
            worst = std::max(worst, static_cast<double>(diff / peak));

            Chain on_cpu(cpu(), c, qkv_slice, seed);
            ASSERT_EQ(on_cpu.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
            EXPECT_LE(nmse(got, read(on_cpu.y)), 1e-12);
        }
    }
    RecordProperty("worst_relative_difference", std::to_string(worst));
    std::printf("fused vs unfused Vulkan: worst max|diff| / max|unfused| = %g\n", worst);
}

TEST_F(SdRopeVulkan, TheDisableSwitchTurnsTheFusionOff) {
    const RopeCase c{64, 2, 3, 1, 32, true};
    {
        DisableFusion off("1");
        Chain chain(vk(), c, false, 7);
        ASSERT_EQ(chain.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
        EXPECT_FALSE(contains(chain.explanation, kRule)) << chain.explanation;
    }
    {
        DisableFusion zero("0");  // "0" means not disabled
        Chain chain(vk(), c, false, 7);
        EXPECT_TRUE(chain.fused(kRule)) << chain.explanation;
    }
    Chain chain(vk(), c, false, 7);  // unset
    EXPECT_TRUE(chain.fused(kRule)) << chain.explanation;
}

// The runtime's legality check keeps the chain unfused when the product has another consumer.
TEST_F(SdRopeVulkan, AnIntermediateWithAnotherConsumerIsNotFused) {
    Context ctx(ggml_init({size_t{1} << 20, nullptr, true}));
    ggml_context * x = ctx.get();
    ggml_tensor * in = ggml_new_tensor_4d(x, GGML_TYPE_F32, 32, 2, 3, 1);
    ggml_tensor * w = ggml_new_tensor_1d(x, GGML_TYPE_F32, 32);
    ggml_tensor * pe = ggml_new_tensor_4d(x, GGML_TYPE_F32, 2, 2, 16, 3);
    ggml_tensor * mul = ggml_mul(x, ggml_rms_norm(x, in, 1e-5f), w);
    ggml_set_name(mul, "mul");
    ggml_tensor * extra = ggml_scale(x, mul, 2.0f);
    ggml_set_output(extra);
    ggml_cgraph * graph = ggml_new_graph(x);
    ggml_build_forward_expand(graph, ggml_rope_apply(x, mul, pe, true));
    ggml_build_forward_expand(graph, extra);
    ggml_backend_t backends[] = {vk(), cpu()};
    Sched sched(ggml_backend_sched_new(backends, nullptr, 2, 256, false, false));
    ggml_ext_sched_set_explain(sched.get(), true);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
    const std::string explained = ggml_ext_sched_explanation(sched.get());
    EXPECT_TRUE(contains(explained, "rule 'external uses' fails at 'mul'")) << explained;
}

}  // namespace
