// The sd pack's INT8 kernels on Vulkan (extensions/sd/vulkan/convrot.cpp, int8.cpp):
// sd.quantize_i8_convrot.v1 with every group size and sd.linear_i8.v1 with packed or I8 activations, against
// the CPU kernels BIT FOR BIT (bound: 0 ulp). Both kernels evaluate the spec's operations in its order with
// every F32 step rounded once (the shaders mark them `precise`; the divisions are correctly rounded), and the
// int32 sums are exact, so nothing may differ: ggml_ext_check_kernel runs with max_nmse 0 and the CPU kernel
// as its reference; larger shapes compare the output bytes; a graph quantize -> linear scheduled over
// Vulkan + CPU (F32-input linears falling back to the CPU) equals the CPU alone.
// (Inputs are normal floats: a device may flush subnormals, which the CPU kernel keeps.)
//
// The fusion sd.linear_i8 -> [SCALE] -> MUL(gate) -> ADD(residual) against the same chain unfused on
// Vulkan (GGML_VK_DISABLE_FUSION=1: the linear kernel, then native SCALE, MUL and ADD), BIT FOR BIT
// (bound: 0 ulp): the fused epilogue rounds each of those operations once, in the same order. Observed
// through the plan query (ggml_ext_sched_get_step): the rule fires (with and without SCALE; packed and I8
// inputs; gates [N], [N, 1], [N, 1, B] and full; residuals full or repeated; either operand order), not with
// an intermediate's other consumer (the reason from ggml_ext_fusion_is_legal), a SCALE with bias or an
// F16 sum (their range legal, so the rule did not match it), nor when disabled; an output
// placed exactly on the residual (in place) or partly over the gate (through the workspace) is right.
// (The one allowed difference, the sign of a zero output over a -0 residual when the native SCALE's
// + 0 turns a -0 into +0, cannot arise from these random inputs.)
// The rule's optimize makes a chain consecutive when the graph as built interleaves the gate's
// producer and view (a chunk of a modulation, as in a DiT block) and the residual's producer, so it
// fuses (same bytes; nothing moves when disabled), and leaves a chain whose interleaved node reads the
// linear as it is (no move, no fusion, the unfused bytes).
//
// The fusion sd.linear_i8 -> SWIGLU of the merged output [2F, ...] (plain and swapped) against the
// linear kernel and the native GLU, BIT FOR BIT (bound: 0 ulp): the epilogue is the linear's and the
// SiLU the native GLU shader's expression, compiled by the same driver; GEGLU does not match.
//
// The fusion [sd.linear_i8 a, sd.linear_i8 b] -> SWIGLU(a, b) (ggml_swiglu_split) against both linear
// kernels and the native GLU, BIT FOR BIT (bound: 0 ulp), for packed and I8 activations, either linear
// first in the graph, with the optional vectors filling up to its 4 slots; not fused with all five
// vectors (more bindings than a dispatch has), over different activations, with a linear observed
// elsewhere (the runtime's 'external uses'), nor when disabled. Its optimize makes the range
// consecutive across an independent node (same bytes; nothing moves when disabled).
//
// The fusion sd.linear_i8 [-> SCALE -> MUL -> ADD] -> CONCAT along rows, and [linear, linear] ->
// CONCAT, against the unfused chain (linear kernel, native SCALE, MUL, ADD and CONCAT), BIT FOR BIT
// (bound: 0 ulp): the values are the linear's or the gated fusion's and the concatenation a copy.
// Dims 1, 2 and 3, both operand orders, the other operand copied as one range or strided (a slice of
// several ranges, a transposed view), packed and I8 activations, an output placed partly over the
// linear's bias (through the workspace); not fused along dim 0, for CONCAT(linear, linear), with an
// observed intermediate, nor when disabled; the optimize brings two linears together across the
// second one's quantize node.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml-vulkan.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/int8.h"
#include "common/plan_steps.h"
#include "sd-ggml-ext.h"
#include "support/check_util.h"
#include "support/test_util.h"
#include "vulkan/vulkan_util.h"
#include "vulkan/sd_vulkan.h"

namespace {

using namespace sd::int8;
using ggx::test::Backend;
using ggx::test::Buffer;
using ggx::test::check_case;
using ggx::test::check_kernel;
using ggx::test::CheckResult;
using ggx::test::Context;
using ggx::test::cpu_backend;
using ggx::test::DisableVulkanFusion;
using ggx::test::fusion_rejection;
using ggx::test::node_names;
using ggx::test::random_floats;
using ggx::test::Sched;
using ggx::tools::describe_plan;
using ggx::tools::fusion_fired;

constexpr uint64_t kSeed = 20240611;
constexpr int kGroup = 256;

// An input of a node: type, shape and host bytes.
struct Input {
    ggml_type type;
    std::array<int64_t, 4> ne;
    std::vector<uint8_t> bytes;
};

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T> & v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

std::vector<int8_t> random_codes(std::mt19937_64 & rng, int64_t n) {
    std::uniform_int_distribution<int> u(-127, 127);
    std::vector<int8_t> v(static_cast<size_t>(n));
    for (int8_t & c : v)
        c = static_cast<int8_t>(u(rng));
    return v;
}

// Activations [k, rows] of random values with a zero row and a row with one large outlier.
std::vector<float> activations(std::mt19937_64 & rng, int64_t k, int64_t rows) {
    std::vector<float> x = random_floats(rng, k * rows, -3.0f, 3.0f);
    if (rows > 2) {
        std::fill_n(x.begin() + k, k, 0.0f);
        x[size_t(2 * k + 7 % k)] = 250.0f;
    }
    return x;
}

ggml_tensor * new_tensor(ggml_context * ctx, ggml_type type, const std::array<int64_t, 4> & ne) {
    return ggml_new_tensor_4d(ctx, type, ne[0], ne[1], ne[2], ne[3]);
}

// The node op(inputs, attrs) computed alone on backend, whose kernel must be `kernel`: its output bytes.
std::vector<uint8_t> compute_node(ggml_backend_t backend, ggml_ext_op_t op, const std::vector<Input> & inputs,
                                  const void * attrs, size_t attr_size, const char * kernel) {
    Context ctx(ggml_init({size_t{1} << 20, nullptr, true}));
    std::vector<ggml_tensor *> in;
    for (const Input & i : inputs)
        in.push_back(new_tensor(ctx.get(), i.type, i.ne));
    ggml_tensor * out = ggml_ext_op_create(ctx.get(), op, in.data(), int(in.size()), attrs, attr_size);
    EXPECT_NE(out, nullptr) << ggml_get_error(ctx.get());
    if (!out) return {};
    Buffer buffer(ggml_backend_alloc_ctx_tensors(ctx.get(), backend));
    for (size_t i = 0; i < in.size(); ++i)
        ggml_backend_tensor_set(in[i], inputs[i].bytes.data(), 0, inputs[i].bytes.size());
    EXPECT_STREQ(ggml_ext_dev_selected_kernel(ggml_backend_get_device(backend), out), kernel);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, out);
    EXPECT_EQ(ggml_backend_graph_compute(backend, graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    std::vector<uint8_t> result(ggml_nbytes(out));
    ggml_backend_tensor_get(out, result.data(), 0, result.size());
    return result;
}

const char * cpu_kernel_of(ggml_ext_op_t op) {
    return op == quantize_op() ? "sd.quantize_i8_convrot.cpu" : "sd.linear_i8.cpu";
}

// ggml_ext_check_kernel's reference: the CPU kernel on the same values.
bool cpu_reference(const ggml_tensor * node, const double * const * values, double * output, void *) {
    std::vector<Input> inputs;
    for (int i = 0; i < GGML_MAX_SRC && node->src[i]; ++i) {
        const ggml_tensor * s = node->src[i];
        const auto n = static_cast<size_t>(ggml_nelements(s));
        Input in{s->type, {s->ne[0], s->ne[1], s->ne[2], s->ne[3]}, {}};
        if (s->type == GGML_TYPE_I8) {
            std::vector<int8_t> codes(n);
            for (size_t j = 0; j < n; ++j)
                codes[j] = static_cast<int8_t>(values[i][j]);
            in.bytes = bytes_of(codes);
        } else {
            in.bytes = bytes_of(std::vector<float>(values[i], values[i] + n));
        }
        inputs.push_back(std::move(in));
    }
    size_t attr_size = 0;
    const void * attrs = ggml_ext_node_attrs(node, &attr_size);
    const ggml_ext_op_t op = ggml_ext_node_op(node);
    const std::vector<uint8_t> out =
        compute_node(cpu_backend(), op, inputs, attrs, attr_size, cpu_kernel_of(op));
    if (out.size() != ggml_nbytes(node)) return false;
    for (size_t i = 0; i < size_t(ggml_nelements(node)); ++i) {
        if (node->type == GGML_TYPE_I8) {
            output[i] = static_cast<int8_t>(out[i]);
        } else {
            float f;
            std::memcpy(&f, out.data() + 4 * i, 4);
            output[i] = f;
        }
    }
    return true;
}

class SdInt8Vulkan : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        const sd_ggml_ext_status st = sd_ggml_register_extensions();
        ASSERT_TRUE(st == SD_GGML_EXT_REGISTERED || st == SD_GGML_EXT_ALREADY_REGISTERED)
            << ggml_backend_get_last_error();
    }
    void SetUp() override {
        if (!ggx::test::vulkan_present()) GTEST_SKIP() << "no Vulkan device";
        vk_.reset(ggml_backend_vk_init(0));
    }

    ggml_backend_t vk() { return vk_.get(); }
    ggml_backend_dev_t vk_device() { return ggml_backend_get_device(vk()); }

    // Every case passes on Vulkan0, bit for bit.
    void expect_conformant(const ggml_ext_kernel_desc * kernel,
                           const std::vector<ggml_ext_check_case> & cases) {
        const CheckResult r = check_kernel(vk(), kernel, cases, 0.0, kSeed, cpu_reference);
        EXPECT_TRUE(r.passed) << kernel->name << ": " << r.report.first_failure;
        EXPECT_EQ(r.report.n_passed, r.report.n_cases) << kernel->name;
        EXPECT_GE(r.report.n_runs, r.report.n_cases) << kernel->name;  // every case ran at least contiguous
    }

    // The node on Vulkan and on the CPU: the same bytes.
    void expect_same_as_cpu(ggml_ext_op_t op, const std::vector<Input> & inputs, const void * attrs,
                            size_t attr_size, const char * vulkan_kernel) {
        const std::vector<uint8_t> got = compute_node(vk(), op, inputs, attrs, attr_size, vulkan_kernel);
        const std::vector<uint8_t> want =
            compute_node(cpu_backend(), op, inputs, attrs, attr_size, cpu_kernel_of(op));
        ASSERT_EQ(got.size(), want.size());
        size_t first = 0;
        while (first < got.size() && got[first] == want[first])
            ++first;
        EXPECT_EQ(first, got.size()) << "first differing byte " << first << " of " << got.size();
    }

    Backend vk_;
};

// The packed ConvRot output of activations [k, rows], computed by the CPU kernel.
Input packed_input(const std::vector<float> & x, int64_t k, int64_t rows) {
    const QuantizeAttrs attrs{kGroup};
    const std::vector<Input> in = {{GGML_TYPE_F32, {k, rows, 1, 1}, bytes_of(x)}};
    return {
        GGML_TYPE_I8,
        {k, packed_rows_pad(rows) + packed_scale_rows(rows, k), 1, 1},
        compute_node(cpu_backend(), quantize_op(), in, &attrs, sizeof attrs, cpu_kernel_of(quantize_op()))};
}

TEST_F(SdInt8Vulkan, QuantizePassesTheConformanceCheck) {
    const QuantizeAttrs g256{kGroup}, g64{64}, g16{16}, g4{4}, g1{1};
    expect_conformant(sd::vulkan::int8_quantize_kernel_desc(),
                      {check_case("[256, 1]", {{GGML_TYPE_F32, {256, 1, 1, 1}}}, &g256, sizeof g256),
                       check_case("[512, 7]", {{GGML_TYPE_F32, {512, 7, 1, 1}}}, &g256, sizeof g256),
                       check_case("[1280, 3, 2]", {{GGML_TYPE_F32, {1280, 3, 2, 1}}}, &g256, sizeof g256),
                       check_case("[2304, 5]", {{GGML_TYPE_F32, {2304, 5, 1, 1}}}, &g256, sizeof g256),
                       check_case("G64 [192, 9]", {{GGML_TYPE_F32, {192, 9, 1, 1}}}, &g64, sizeof g64),
                       check_case("G16 [1104, 2]", {{GGML_TYPE_F32, {1104, 2, 1, 1}}}, &g16, sizeof g16),
                       check_case("G4 [12, 5]", {{GGML_TYPE_F32, {12, 5, 1, 1}}}, &g4, sizeof g4),
                       check_case("G1 [36, 3, 2]", {{GGML_TYPE_F32, {36, 3, 2, 1}}}, &g1, sizeof g1)});
}

TEST_F(SdInt8Vulkan, LinearPassesTheConformanceCheck) {
    const LinearAttrs packed_bias{kInputPacked, 64, 64, kHasBias, {3, 1, 1}};
    const LinearAttrs packed_full{kInputPacked, 4, 4, kHasWeightScale | kHasBias, {67, 1, 1}};
    const LinearAttrs i8_scaled{kInputI8, 0, 0, kHasWeightScale | kHasBias | kHasInputScale, {7, 1, 1}};
    const LinearAttrs i8_plain{kInputI8, 0, 0, 0, {2, 3, 1}};
    const LinearAttrs f32_rotated{kInputF32, 256, 256, kHasWeightScale | kHasBias, {5, 1, 1}};
    const LinearAttrs f32_plain{kInputF32, 0, 0, 0, {3, 2, 1}};
    std::vector<ggml_ext_check_case> cases = {
        // Packed K 64, 3 rows: [64, 4 + 1]; K 324 (not a multiple of the 32-code step), 67 rows: [324, 68 +
        // 1].
        check_case(
            "packed K64 N5 M3",
            {{GGML_TYPE_I8, {64, 5, 1, 1}}, {GGML_TYPE_I8, {64, 5, 1, 1}}, {GGML_TYPE_F32, {5, 1, 1, 1}}},
            &packed_bias, sizeof packed_bias),
        check_case("packed K324 N70 M67",
                   {{GGML_TYPE_I8, {324, 70, 1, 1}},
                    {GGML_TYPE_I8, {324, 69, 1, 1}},
                    {GGML_TYPE_F32, {70, 1, 1, 1}},
                    {GGML_TYPE_F32, {70, 1, 1, 1}}},
                   &packed_full, sizeof packed_full),
        // I8 with K % 4 != 0: rows off word boundaries, read byte by byte.
        check_case("i8 K70 N9 M7",
                   {{GGML_TYPE_I8, {70, 9, 1, 1}},
                    {GGML_TYPE_I8, {70, 7, 1, 1}},
                    {GGML_TYPE_F32, {9, 1, 1, 1}},
                    {GGML_TYPE_F32, {9, 1, 1, 1}},
                    {GGML_TYPE_F32, {7, 1, 1, 1}}},
                   &i8_scaled, sizeof i8_scaled),
        check_case("i8 K37 N65 M2x3", {{GGML_TYPE_I8, {37, 65, 1, 1}}, {GGML_TYPE_I8, {37, 2, 3, 1}}},
                   &i8_plain, sizeof i8_plain),
        // F32 activations, quantized into the workspace first.
        check_case("f32 G256 K512 N9 M5",
                   {{GGML_TYPE_I8, {512, 9, 1, 1}},
                    {GGML_TYPE_F32, {512, 5, 1, 1}},
                    {GGML_TYPE_F32, {9, 1, 1, 1}},
                    {GGML_TYPE_F32, {9, 1, 1, 1}}},
                   &f32_rotated, sizeof f32_rotated),
        check_case("f32 unrotated K36 N10 M3x2",
                   {{GGML_TYPE_I8, {36, 10, 1, 1}}, {GGML_TYPE_F32, {36, 3, 2, 1}}}, &f32_plain,
                   sizeof f32_plain),
    };
    // Packed inputs: bytes of [56, 64) make finite positive row scales.
    for (int c : {0, 1})
        cases[size_t(c)].range[1][0] = 56, cases[size_t(c)].range[1][1] = 64;
    expect_conformant(sd::vulkan::int8_linear_kernel_desc(), cases);
}

TEST_F(SdInt8Vulkan, QuantizeBitIdenticalToCpu) {
    std::mt19937_64 rng(kSeed);
    struct Case {
        int group;
        int64_t k, rows;
    };
    // Every group size; rows shorter and longer than the shader's 1024-value chunk.
    for (const Case & c : {Case{256, 256, 1},
                           {256, 3072, 77},
                           {256, 1536, 301},
                           {256, 5120, 3},
                           {64, 64, 5},
                           {64, 1088, 33},
                           {16, 3056, 7},
                           {4, 1028, 12},
                           {1, 4, 3},
                           {1, 2052, 9}}) {
        SCOPED_TRACE("G " + std::to_string(c.group) + ", K " + std::to_string(c.k) + ", rows " +
                     std::to_string(c.rows));
        const QuantizeAttrs attrs{c.group};
        expect_same_as_cpu(quantize_op(),
                           {{GGML_TYPE_F32, {c.k, c.rows, 1, 1}, bytes_of(activations(rng, c.k, c.rows))}},
                           &attrs, sizeof attrs, "sd.quantize_i8_convrot.vulkan");
    }
}

TEST_F(SdInt8Vulkan, LinearBitIdenticalToCpu) {
    std::mt19937_64 rng(kSeed + 1);
    // Packed activations of real ConvRot quantization, with weight scales and bias.
    for (const auto & [k, n, rows] :
         {std::array<int64_t, 3>{256, 64, 1}, {3072, 200, 77}, {1280, 129, 130}}) {
        SCOPED_TRACE("packed K " + std::to_string(k) + ", N " + std::to_string(n) + ", rows " +
                     std::to_string(rows));
        const LinearAttrs attrs{kInputPacked, kGroup, kGroup, kHasWeightScale | kHasBias, {rows, 1, 1}};
        expect_same_as_cpu(linear_op(),
                           {{GGML_TYPE_I8, {k, n, 1, 1}, bytes_of(random_codes(rng, k * n))},
                            packed_input(activations(rng, k, rows), k, rows),
                            {GGML_TYPE_F32, {n, 1, 1, 1}, bytes_of(random_floats(rng, n, 1e-4f, 1e-2f))},
                            {GGML_TYPE_F32, {n, 1, 1, 1}, bytes_of(random_floats(rng, n, -1.0f, 1.0f))}},
                           &attrs, sizeof attrs, "sd.linear_i8.vulkan");
    }
    // F32 activations, quantized inside the op with each group size (0: no rotation).
    for (const int group : {0, 4, 64, 256}) {
        SCOPED_TRACE("f32 input, G " + std::to_string(group));
        const int64_t k = 768, n = 70, rows = 37;
        const LinearAttrs attrs{kInputF32, group, group, kHasWeightScale | kHasBias, {rows, 1, 1}};
        expect_same_as_cpu(linear_op(),
                           {{GGML_TYPE_I8, {k, n, 1, 1}, bytes_of(random_codes(rng, k * n))},
                            {GGML_TYPE_F32, {k, rows, 1, 1}, bytes_of(activations(rng, k, rows))},
                            {GGML_TYPE_F32, {n, 1, 1, 1}, bytes_of(random_floats(rng, n, 1e-4f, 1e-2f))},
                            {GGML_TYPE_F32, {n, 1, 1, 1}, bytes_of(random_floats(rng, n, -1.0f, 1.0f))}},
                           &attrs, sizeof attrs, "sd.linear_i8.vulkan");
    }
    // I8 codes with an odd K (byte-wise reads) and per-row input scales.
    const int64_t k = 1001, n = 33, rows = 9;
    const LinearAttrs attrs{kInputI8, 0, 0, kHasWeightScale | kHasInputScale, {rows, 1, 1}};
    expect_same_as_cpu(linear_op(),
                       {{GGML_TYPE_I8, {k, n, 1, 1}, bytes_of(random_codes(rng, k * n))},
                        {GGML_TYPE_I8, {k, rows, 1, 1}, bytes_of(random_codes(rng, k * rows))},
                        {GGML_TYPE_F32, {n, 1, 1, 1}, bytes_of(random_floats(rng, n, 1e-4f, 1e-2f))},
                        {GGML_TYPE_F32, {rows, 1, 1, 1}, bytes_of(random_floats(rng, rows, 1e-3f, 1e-1f))}},
                       &attrs, sizeof attrs, "sd.linear_i8.vulkan");
}

// Rows of K % 4 != 0 codes (G = 1 quantization, or F32 activations) and F32 activations in strided
// rows are the CPU's.
TEST_F(SdInt8Vulkan, UnsupportedLayoutsAreLeftToTheCpu) {
    Context ctx(ggml_init({size_t{1} << 20, nullptr, true}));
    ggml_context * c = ctx.get();
    ggml_tensor * x = ggml_new_tensor_2d(c, GGML_TYPE_F32, 256, 4);
    ggml_tensor * w = ggml_new_tensor_2d(c, GGML_TYPE_I8, 256, 8);
    ggml_tensor * odd = ggml_quantize_i8_convrot(c, ggml_new_tensor_2d(c, GGML_TYPE_F32, 7, 4), 1);
    ggml_tensor * odd_f32 =
        ggml_mul_mat_i8_tensorwise(c, ggml_new_tensor_2d(c, GGML_TYPE_I8, 38, 8),
                                   ggml_new_tensor_2d(c, GGML_TYPE_F32, 38, 4), nullptr, nullptr, 0, nullptr);
    ggml_tensor * strided_rows = ggml_mul_mat_i8_tensorwise(c, w, ggml_view_2d(c, x, 256, 2, 2 * x->nb[1], 0),
                                                            nullptr, nullptr, 256, nullptr);
    ASSERT_TRUE(odd && odd_f32 && strided_rows) << ggml_get_error(c);
    for (ggml_tensor * node : {odd, odd_f32, strided_rows}) {
        EXPECT_FALSE(ggml_backend_dev_supports_op(vk_device(), node)) << node->name;
        EXPECT_TRUE(ggml_backend_dev_supports_op(ggml_backend_get_device(cpu_backend()), node)) << node->name;
    }
}

// x -> scale (native) -> quantize G256 -> two linears sharing the packed input -> scale (native), an
// F32-input linear (quantized on Vulkan) and one over every other row of x (strided rows: CPU fallback),
// weights on the Vulkan device; outputs read back as bytes.
struct Model {
    static constexpr int64_t kK = 768, kTokens = 45, kN1 = 96, kN2 = 40;
    Context weights_ctx{ggml_init({size_t{1} << 16, nullptr, true})};
    Context graph_ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    Buffer weights;
    ggml_tensor *w1, *s1, *b1, *w2, *x, *packed, *y1, *y2, *y3, *y4;
    ggml_cgraph * graph;

    Model(ggml_backend_t weights_backend, uint64_t seed) {
        std::mt19937_64 rng(seed);
        ggml_context * wc = weights_ctx.get();
        w1 = ggml_new_tensor_2d(wc, GGML_TYPE_I8, kK, kN1);
        s1 = ggml_new_tensor_1d(wc, GGML_TYPE_F32, kN1);
        b1 = ggml_new_tensor_1d(wc, GGML_TYPE_F32, kN1);
        w2 = ggml_new_tensor_2d(wc, GGML_TYPE_I8, kK, kN2);
        weights.reset(ggml_backend_alloc_ctx_tensors(wc, weights_backend));
        ggml_backend_tensor_set(w1, random_codes(rng, kK * kN1).data(), 0, ggml_nbytes(w1));
        ggml_backend_tensor_set(s1, random_floats(rng, kN1, 1e-4f, 1e-2f).data(), 0, ggml_nbytes(s1));
        ggml_backend_tensor_set(b1, random_floats(rng, kN1, -1.0f, 1.0f).data(), 0, ggml_nbytes(b1));
        ggml_backend_tensor_set(w2, random_codes(rng, kK * kN2).data(), 0, ggml_nbytes(w2));
        ggml_context * c = graph_ctx.get();
        x = ggml_new_tensor_2d(c, GGML_TYPE_F32, kK, kTokens);
        ggml_set_input(x);
        packed = ggml_quantize_i8_convrot(c, ggml_scale(c, x, 0.5f), kGroup);
        y1 = ggml_scale(c, ggml_mul_mat_i8_tensorwise(c, w1, packed, s1, b1, kGroup, nullptr), 2.0f);
        y2 = ggml_mul_mat_i8_tensorwise(c, w2, packed, nullptr, nullptr, kGroup, nullptr);
        y3 = ggml_mul_mat_i8_tensorwise(c, w2, x, nullptr, nullptr, kGroup, nullptr);
        y4 = ggml_mul_mat_i8_tensorwise(c, w2, ggml_view_2d(c, x, kK, kTokens / 2, 2 * x->nb[1], 0), nullptr,
                                        nullptr, 0, nullptr);
        graph = ggml_new_graph(c);
        for (ggml_tensor * y : {y1, y2, y3, y4}) {
            ggml_set_output(y);
            ggml_build_forward_expand(graph, y);
        }
    }

    std::vector<uint8_t> outputs() const {
        std::vector<uint8_t> all;
        for (const ggml_tensor * y : {y1, y2, y3, y4}) {
            std::vector<uint8_t> b(ggml_nbytes(y));
            ggml_backend_tensor_get(y, b.data(), 0, b.size());
            all.insert(all.end(), b.begin(), b.end());
        }
        return all;
    }
};

TEST_F(SdInt8Vulkan, ScheduledGraphOverVulkanAndCpuEqualsCpuAlone) {
    std::mt19937_64 rng(kSeed + 2);
    const std::vector<float> input = activations(rng, Model::kK, Model::kTokens);

    Model cpu_model(cpu_backend(), kSeed + 3);
    Buffer cpu_activations(ggml_backend_alloc_ctx_tensors(cpu_model.graph_ctx.get(), cpu_backend()));
    ggml_backend_tensor_set(cpu_model.x, input.data(), 0, ggml_nbytes(cpu_model.x));
    ASSERT_EQ(ggml_backend_graph_compute(cpu_backend(), cpu_model.graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();

    Model vk_model(vk(), kSeed + 3);
    ggml_backend_t backends[] = {vk(), cpu_backend()};
    Sched sched(ggml_backend_sched_new(backends, nullptr, 2, 256, false, false));
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), vk_model.graph)) << ggml_backend_get_last_error();
    ggml_backend_tensor_set(vk_model.x, input.data(), 0, ggml_nbytes(vk_model.x));
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched.get(), vk_model.graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), vk_model.packed), vk());
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), vk_model.y1->src[0]), vk());
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), vk_model.y2), vk());
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), vk_model.y3), vk());
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(sched.get(), vk_model.y4), cpu_backend());
    EXPECT_TRUE(vk_model.outputs() == cpu_model.outputs());
}

// ---- the fusion sd.linear_i8 -> [SCALE] -> MUL(gate) -> ADD(residual) -----------------------------

constexpr const char * kGatedRule = "sd.linear_i8_gated_residual.vulkan";

// A gated-residual site over the linear's output [n, tokens, batch].
struct GatedCase {
    const char * name;
    bool packed;  // a quantize node's packed output, else I8 codes with input scales
    int64_t k, n, tokens, batch;
    bool scale;
    std::array<int64_t, 4> gate_ne;  // repeated over the output
    bool gate_first;                 // MUL(gate, value) (a full gate) rather than MUL(value, gate)
    std::array<int64_t, 4> residual_ne;
    bool residual_first;  // ADD(residual, product) (a full residual) rather than ADD(product, residual)
};

// Where the output goes: the scheduler's choice, by hand exactly onto the residual, or by hand one
// buffer alignment past the (full) gate's start, overlapping it partly.
enum class Place { kScheduler, kOnResidual, kOverGate };

// A graph over an sd.linear_i8 node, planned by a scheduler over Vulkan + CPU, filled from a seed and
// computed.
struct Site {
    // The linear [n, tokens, batch]: weights [k, n] with scales and bias, over a quantize node's packed
    // output or I8 codes with input scales.
    ggml_tensor * new_linear(bool packed, int64_t k, int64_t n, int64_t tokens, int64_t batch,
                             bool with_bias = true) {
        ggml_context * x = ctx.get();
        ggml_tensor * act =
            input(new_tensor(x, packed ? GGML_TYPE_F32 : GGML_TYPE_I8, {k, tokens, batch, 1}));
        xs = packed ? nullptr : input(new_tensor(x, GGML_TYPE_F32, {tokens, batch, 1, 1}));
        codes = packed ? ggml_quantize_i8_convrot(x, act, kGroup) : act;
        linear = linear_over_codes(n, with_bias);
        return linear;
    }

    // A linear [n, ...] over the last new_linear's activations (and input scales), with its own weights
    // and weight scales and optionally a bias.
    ggml_tensor * linear_over_codes(int64_t n, bool with_bias) {
        ggml_context * x = ctx.get();
        ggml_tensor * w = input(new_tensor(x, GGML_TYPE_I8, {codes->ne[0], n, 1, 1}));
        ws = input(new_tensor(x, GGML_TYPE_F32, {n, 1, 1, 1}));
        scales.push_back(ws);
        bias = with_bias ? input(new_tensor(x, GGML_TYPE_F32, {n, 1, 1, 1})) : nullptr;
        const bool packed = codes->op == GGML_OP_CUSTOM;
        linears.push_back(ggml_mul_mat_i8_tensorwise(x, w, codes, ws, bias, packed ? kGroup : 0, xs));
        return linears.back();
    }

    ggml_tensor * input(ggml_tensor * t) {
        ggml_set_input(t);
        inputs.push_back(t);
        return t;
    }

    // Plans graph (built up to out), fills the inputs from seed and computes it.
    void compute(ggml_backend_t vk, uint64_t seed) {
        ggml_backend_t backends[] = {vk, cpu_backend()};
        sched.reset(ggml_backend_sched_new(backends, nullptr, 2, 256, false, false));
        alloc_ok = ggml_backend_sched_alloc_graph(sched.get(), graph);
        if (!alloc_ok) return;
        std::mt19937_64 rng(seed);
        for (ggml_tensor * t : inputs)
            fill(rng, t, t == xs || std::find(scales.begin(), scales.end(), t) != scales.end());
        compute_status = ggml_backend_sched_graph_compute(sched.get(), graph);
        if (compute_status == GGML_STATUS_SUCCESS) result = bytes(out);
    }

    std::vector<std::string> order() const { return node_names(graph); }
    // Whether rule fused a range of the plan.
    bool fused(const char * rule = kGatedRule) const { return fusion_fired(sched.get(), rule); }
    std::string plan() const { return describe_plan(sched.get()); }
    // With GGML_VK_DISABLE_FUSION: rule did not fire, nor did any other.
    void expect_no_fusion(const char * rule) const {
        EXPECT_FALSE(fused(rule)) << plan();
        EXPECT_EQ(ggx::tools::count_steps(sched.get(), GGML_EXT_STEP_FUSION), 0) << plan();
    }
    // rule did not fire, and the runtime's check accepts the range from the earliest linear to the
    // output: the rule did not match it.
    void expect_unmatched(const char * rule) const {
        EXPECT_FALSE(fused(rule)) << plan();
        std::vector<const ggml_tensor *> chain(linears.begin(), linears.end());
        chain.push_back(out);
        EXPECT_EQ(fusion_rejection(graph, chain), "");
    }

    // Random codes, scales in [1e-3, 1e-2) or values in [-2, 2) by type and role.
    static void fill(std::mt19937_64 & rng, ggml_tensor * t, bool is_scale) {
        const int64_t n = ggml_nelements(t);
        std::vector<uint8_t> b;
        if (t->type == GGML_TYPE_I8) {
            b = bytes_of(random_codes(rng, n));
        } else {
            const std::vector<float> v =
                random_floats(rng, n, is_scale ? 1e-3f : -2.0f, is_scale ? 1e-2f : 2.0f);
            std::vector<ggml_fp16_t> h(v.size());
            ggml_fp32_to_fp16_row(v.data(), h.data(), n);
            b = t->type == GGML_TYPE_F32 ? bytes_of(v) : bytes_of(h);
        }
        ggml_backend_tensor_set(t, b.data(), 0, b.size());
    }

    static std::vector<uint8_t> bytes(const ggml_tensor * t) {
        std::vector<uint8_t> b(ggml_nbytes(t));
        ggml_backend_tensor_get(t, b.data(), 0, b.size());
        return b;
    }

    Context ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    Buffer placed;  // (GatedSite) storage of an output placed by hand, freed after the scheduler
    Sched sched;
    std::vector<ggml_tensor *> inputs, scales, linears;  // linears: every linear made, in order
    ggml_tensor *ws = nullptr, *bias = nullptr, *xs = nullptr, *codes = nullptr, *linear = nullptr,
                *out = nullptr;
    ggml_cgraph * graph = nullptr;
    bool alloc_ok = false;
    ggml_status compute_status = GGML_STATUS_FAILED;
    std::vector<uint8_t> result;
};

// The gated-residual site; `edit` may change the graph before it is planned.
struct GatedSite : Site {
    GatedSite(ggml_backend_t vk, const GatedCase & c, uint64_t seed, Place place = Place::kScheduler,
              const std::function<void(ggml_context *, GatedSite &)> & edit = {}) {
        ggml_context * x = ctx.get();
        new_linear(c.packed, c.k, c.n, c.tokens, c.batch);
        ggml_tensor * value = c.scale ? ggml_scale(x, linear, 0.375f) : linear;
        gate = input(new_tensor(x, GGML_TYPE_F32, c.gate_ne));
        residual = input(new_tensor(x, GGML_TYPE_F32, c.residual_ne));
        mul = c.gate_first ? ggml_mul(x, gate, value) : ggml_mul(x, value, gate);
        ggml_set_name(mul, "gated");
        out = c.residual_first ? ggml_add(x, residual, mul) : ggml_add(x, mul, residual);
        ggml_set_output(out);
        graph = ggml_new_graph(x);
        ggml_build_forward_expand(graph, out);
        if (edit) edit(x, *this);
        place_by_hand(vk, place);
        compute(vk, seed);
    }

    void place_by_hand(ggml_backend_t vk, Place place) {
        if (place == Place::kScheduler) return;
        const size_t shift = place == Place::kOverGate ? ggml_backend_get_alignment(vk) : 0;
        ggml_tensor * under = place == Place::kOverGate ? gate : residual;
        placed.reset(ggml_backend_alloc_buffer(vk, ggml_nbytes(under) + shift));
        char * base = static_cast<char *>(ggml_backend_buffer_get_base(placed.get()));
        ASSERT_EQ(ggml_backend_tensor_alloc(placed.get(), under, base), GGML_STATUS_SUCCESS);
        ASSERT_EQ(ggml_backend_tensor_alloc(placed.get(), out, base + shift), GGML_STATUS_SUCCESS)
            << ggml_backend_get_last_error();
    }

    ggml_tensor *gate, *residual, *mul;
};

using Edit = std::function<void(ggml_context *, GatedSite &)>;

// Fused (expected) and unfused on Vulkan: the same bytes.
void expect_fused_equals_unfused(ggml_backend_t vk, const GatedCase & c, uint64_t seed,
                                 Place place = Place::kScheduler, const Edit & edit = {}) {
    SCOPED_TRACE(c.name);
    GatedSite on(vk, c, seed, place, edit);
    ASSERT_TRUE(on.alloc_ok) << ggml_backend_get_last_error();
    ASSERT_EQ(on.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_TRUE(on.fused()) << on.plan();
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(on.sched.get(), on.out), vk);

    DisableVulkanFusion off("1");
    GatedSite unfused(vk, c, seed, place, edit);
    ASSERT_EQ(unfused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    unfused.expect_unmatched(kGatedRule);
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(unfused.sched.get(), unfused.linear), vk);
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(unfused.sched.get(), unfused.out), vk);
    ASSERT_EQ(on.result.size(), unfused.result.size());
    EXPECT_TRUE(on.result == unfused.result);
}

TEST_F(SdInt8Vulkan, GatedResidualFusionIsBitIdenticalToTheUnfusedChain) {
    const GatedCase cases[] = {
        {"packed, scale, gate [N], ADD(residual, product)",
         true,
         768,
         96,
         45,
         1,
         true,
         {96, 1, 1, 1},
         false,
         {96, 45, 1, 1},
         true},
        {"packed, no scale, gate [N, 1], ADD(product, residual)",
         true,
         512,
         70,
         67,
         1,
         false,
         {70, 1, 1, 1},
         false,
         {70, 67, 1, 1},
         false},
        {"packed, scale, per-batch gate [N, 1, B]",
         true,
         256,
         130,
         33,
         3,
         true,
         {130, 1, 3, 1},
         false,
         {130, 33, 3, 1},
         true},
        {"i8 K % 4 != 0, full gate MUL(gate, value)",
         false,
         70,
         65,
         9,
         2,
         false,
         {65, 9, 2, 1},
         true,
         {65, 9, 2, 1},
         true},
        {"i8, scale, gate [N], residual [N] repeated",
         false,
         1001,
         33,
         7,
         1,
         true,
         {33, 1, 1, 1},
         false,
         {33, 1, 1, 1},
         false},
    };
    uint64_t seed = kSeed + 10;
    for (const GatedCase & c : cases)
        expect_fused_equals_unfused(vk(), c, ++seed);
}

// Placed by hand: exactly on the residual (computed in place) and a little into the full gate (a
// partial overlap, computed in the workspace and copied); the unfused chain reads the gate before ADD
// writes.
TEST_F(SdInt8Vulkan, GatedResidualFusionHandlesOutputsOverItsInputs) {
    const GatedCase c{"full gate and residual", true, 256, 72, 70, 1, true, {72, 70, 1, 1}, false,
                      {72, 70, 1, 1},           true};
    expect_fused_equals_unfused(vk(), c, kSeed + 20, Place::kOnResidual);
    expect_fused_equals_unfused(vk(), c, kSeed + 21, Place::kOverGate);
}

const GatedCase kSmallSite{"small", true, 256, 40, 20, 1, true, {40, 1, 1, 1}, false, {40, 20, 1, 1}, true};

// The runtime's legality check keeps the chain unfused when the product has another consumer.
TEST_F(SdInt8Vulkan, GatedResidualFusionLeavesAnObservedProductAlone) {
    GatedSite site(vk(), kSmallSite, kSeed + 30, Place::kScheduler, [](ggml_context * x, GatedSite & s) {
        ggml_tensor * extra = ggml_scale(x, s.mul, 2.0f);
        ggml_set_output(extra);
        ggml_build_forward_expand(s.graph, extra);
    });
    ASSERT_TRUE(site.alloc_ok) << ggml_backend_get_last_error();
    EXPECT_EQ(site.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_FALSE(site.fused()) << site.plan();
    // The reason, from the runtime's legality check of the chain linear .. ADD.
    const std::string reason = fusion_rejection(site.graph, {site.linear, site.out});
    EXPECT_NE(reason.find("rule 'external uses' fails at 'gated'"), std::string::npos) << reason;
}

// A SCALE with bias (which the native SCALE may contract into an FMA) and an F16 sum (an F16 residual
// plus the F32 product) do not match.
TEST_F(SdInt8Vulkan, GatedResidualFusionMatchesOnlyWhatItComputes) {
    GatedSite biased(vk(), kSmallSite, kSeed + 31, Place::kScheduler, [](ggml_context * x, GatedSite & s) {
        s.mul->src[0] = ggml_scale_bias(x, s.linear, 0.5f, 0.25f);
        s.graph = ggml_new_graph(x);
        ggml_build_forward_expand(s.graph, s.out);
    });
    EXPECT_EQ(biased.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    biased.expect_unmatched(kGatedRule);

    GatedSite f16_sum(vk(), kSmallSite, kSeed + 32, Place::kScheduler, [](ggml_context * x, GatedSite & s) {
        s.inputs.erase(std::find(s.inputs.begin(), s.inputs.end(), s.residual));
        s.residual = s.input(new_tensor(x, GGML_TYPE_F16, {s.out->ne[0], s.out->ne[1], 1, 1}));
        s.out = ggml_add(x, s.residual, s.mul);
        ggml_set_output(s.out);
        s.graph = ggml_new_graph(x);
        ggml_build_forward_expand(s.graph, s.out);
    });
    EXPECT_EQ(f16_sum.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    f16_sum.expect_unmatched(kGatedRule);
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(f16_sum.sched.get(), f16_sum.out), vk());
}

TEST_F(SdInt8Vulkan, GatedResidualFusionHonoursTheDisableSwitch) {
    {
        DisableVulkanFusion off("1");
        GatedSite site(vk(), kSmallSite, kSeed + 40);
        EXPECT_EQ(site.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
        site.expect_unmatched(kGatedRule);
    }
    {
        DisableVulkanFusion zero("0");  // "0" means not disabled
        EXPECT_TRUE(GatedSite(vk(), kSmallSite, kSeed + 40).fused());
    }
    EXPECT_TRUE(GatedSite(vk(), kSmallSite, kSeed + 40).fused());  // unset
}

// ---- the rule's optimize: interleaved chains made consecutive --------------------------------------

// Sites over I8 codes (no quantize node), so that every node of the graph is named below.
const GatedCase kScaledI8Site{"i8, scale", false,          96,   40, 12, 1, true, {40, 1, 1, 1},
                              false,       {40, 12, 1, 1}, false};
const GatedCase kPlainI8Site{"i8, no scale", false,          96,   40, 12, 1, false, {40, 1, 1, 1},
                             false,          {40, 12, 1, 1}, false};

// Names the chain's nodes; the value MUL reads is the linear or its SCALE.
void name_chain(GatedSite & s) {
    ggml_set_name(s.linear, "linear");
    if (s.mul->src[0] != s.linear) ggml_set_name(s.mul->src[0], "scale");
    ggml_set_name(s.out, "out");
}

// Rebuilds the graph from the output after an edit.
void rebuild(ggml_context * x, GatedSite & s) {
    name_chain(s);
    s.graph = ggml_new_graph(x);
    ggml_build_forward_expand(s.graph, s.out);
}

// As a DiT block builds it: the gate a chunk (VIEW) of a modulation computed in the graph, and the
// residual computed too, so that the graph as built interleaves the modulation and the gate before
// MUL, and the residual before ADD.
void interleave_gate_and_residual(ggml_context * x, GatedSite & s) {
    const int64_t n = s.gate->ne[0];
    std::erase(s.inputs, s.gate);
    std::erase(s.inputs, s.residual);
    ggml_tensor * modulation = ggml_silu(x, s.input(new_tensor(x, GGML_TYPE_F32, {3 * n, 1, 1, 1})));
    ggml_set_name(modulation, "modulation");
    s.gate = ggml_view_1d(x, modulation, n, static_cast<size_t>(n) * sizeof(float));
    ggml_set_name(s.gate, "gate");
    const int64_t * ne = s.residual->ne;
    s.residual = ggml_silu(x, s.input(new_tensor(x, GGML_TYPE_F32, {ne[0], ne[1], ne[2], ne[3]})));
    ggml_set_name(s.residual, "residual");
    s.mul->src[1] = s.gate;
    s.out->src[1] = s.residual;
    rebuild(x, s);
}

// The optimize delays linear [-> SCALE] past the modulation and gate, then linear [-> SCALE] -> MUL
// past the residual: the chain becomes consecutive and fuses, with the unfused chain's bytes. With the
// rule disabled nothing moves.
TEST_F(SdInt8Vulkan, OptimizeMakesAnInterleavedChainConsecutiveAndItFuses) {
    const std::vector<std::string> scaled_built{"linear", "scale",    "modulation", "gate",
                                                "gated",  "residual", "out"};
    uint64_t seed = kSeed + 50;
    for (const GatedCase * c : {&kScaledI8Site, &kPlainI8Site}) {
        SCOPED_TRACE(c->name);
        expect_fused_equals_unfused(vk(), *c, ++seed, Place::kScheduler, interleave_gate_and_residual);
        std::vector<std::string> built = scaled_built,
                                 consecutive{"modulation", "gate",  "residual", "linear",
                                             "scale",      "gated", "out"};
        if (!c->scale) {
            std::erase(built, "scale");
            std::erase(consecutive, "scale");
        }
        EXPECT_EQ(GatedSite(vk(), *c, seed, Place::kScheduler, interleave_gate_and_residual).order(),
                  consecutive);
        DisableVulkanFusion off("1");
        EXPECT_EQ(GatedSite(vk(), *c, seed, Place::kScheduler, interleave_gate_and_residual).order(), built);
    }
}

// A node between the links that reads the chain (the gate a view of a product of the linear) cannot
// be crossed: the graph keeps its order, nothing fuses, and the results are the unfused ones.
TEST_F(SdInt8Vulkan, OptimizeLeavesAChainWithAnInterleavedConsumer) {
    const Edit gate_from_linear = [](ggml_context * x, GatedSite & s) {
        ggml_tensor * reader = ggml_scale(x, s.linear, 0.5f);
        ggml_set_name(reader, "reader");
        std::erase(s.inputs, s.gate);
        s.gate = ggml_view_1d(x, reader, s.gate->ne[0], 0);
        ggml_set_name(s.gate, "gate");
        s.mul->src[1] = s.gate;
        rebuild(x, s);
    };
    GatedSite site(vk(), kScaledI8Site, kSeed + 60, Place::kScheduler, gate_from_linear);
    ASSERT_EQ(site.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_EQ(site.order(), (std::vector<std::string>{"linear", "scale", "reader", "gate", "gated", "out"}));
    site.expect_unmatched(kGatedRule);
    DisableVulkanFusion off("1");
    GatedSite unfused(vk(), kScaledI8Site, kSeed + 60, Place::kScheduler, gate_from_linear);
    ASSERT_EQ(unfused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_TRUE(site.result == unfused.result);
}

// ---- the fusion sd.linear_i8 -> SWIGLU of the merged output --------------------------------------

constexpr const char * kSwigluRule = "sd.linear_i8_swiglu.vulkan";

// A linear [2F, tokens, batch] and the merged GLU of it.
struct SwigluCase {
    const char * name;
    bool packed;  // a quantize node's packed output, else I8 codes with input scales
    int64_t k, f, tokens, batch;
    bool swapped;  // ggml_swiglu_swapped: the up half activated
};

struct SwigluSite : Site {
    SwigluSite(ggml_backend_t vk, const SwigluCase & c, uint64_t seed, ggml_glu_op op = GGML_GLU_OP_SWIGLU) {
        new_linear(c.packed, c.k, 2 * c.f, c.tokens, c.batch);
        out = ggml_glu(ctx.get(), linear, op, c.swapped);
        ggml_set_output(out);
        graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, out);
        compute(vk, seed);
    }
};

// Fused against the linear kernel and the native GLU (GGML_VK_DISABLE_FUSION=1), BIT FOR BIT (bound:
// 0 ulp): the fused epilogue is the linear's and its SiLU the native GLU's expression. Workgroups of 32
// outputs: F = 70 and 33 leave partial ones; K % 4 != 0 reads codes byte by byte.
TEST_F(SdInt8Vulkan, SwigluFusionIsBitIdenticalToTheUnfusedChain) {
    const SwigluCase cases[] = {
        {"packed", true, 768, 96, 45, 1, false},
        {"packed, swapped, F % 32 != 0, batch 2", true, 256, 70, 67, 2, true},
        {"i8, K % 4 != 0, batch 3", false, 70, 33, 9, 3, false},
        {"i8, swapped", false, 1001, 130, 7, 1, true},
    };
    uint64_t seed = kSeed + 70;
    for (const SwigluCase & c : cases) {
        SCOPED_TRACE(c.name);
        SwigluSite on(vk(), c, ++seed);
        ASSERT_TRUE(on.alloc_ok) << ggml_backend_get_last_error();
        ASSERT_EQ(on.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
        EXPECT_TRUE(on.fused(kSwigluRule)) << on.plan();
        EXPECT_EQ(ggml_backend_sched_get_tensor_backend(on.sched.get(), on.out), vk());

        DisableVulkanFusion off("1");
        SwigluSite unfused(vk(), c, seed);
        ASSERT_EQ(unfused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
        unfused.expect_unmatched(kSwigluRule);
        EXPECT_EQ(ggml_backend_sched_get_tensor_backend(unfused.sched.get(), unfused.linear), vk());
        EXPECT_EQ(ggml_backend_sched_get_tensor_backend(unfused.sched.get(), unfused.out), vk());
        ASSERT_EQ(on.result.size(), unfused.result.size());
        EXPECT_TRUE(on.result == unfused.result);
    }
}

// GEGLU is not what the shader computes: the linear and the native GLU run unfused.
TEST_F(SdInt8Vulkan, SwigluFusionLeavesOtherGlus) {
    SwigluSite geglu(vk(), {"geglu", true, 256, 40, 20, 1, false}, kSeed + 80, GGML_GLU_OP_GEGLU);
    EXPECT_EQ(geglu.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    geglu.expect_unmatched(kSwigluRule);
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(geglu.sched.get(), geglu.out), vk());
}

// ---- shared by the rules below ---------------------------------------------------------------------

// The site S (built from args) fused, and unfused with GGML_VK_DISABLE_FUSION=1 (the linear kernel and
// native nodes), on Vulkan: the rule fires only on the first, and both give the same bytes.
template <typename S, typename... Args>
void expect_rule_bit_identical(ggml_backend_t vk, const char * rule, const Args &... args) {
    S on(vk, args...);
    ASSERT_TRUE(on.alloc_ok) << ggml_backend_get_last_error();
    ASSERT_EQ(on.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_TRUE(on.fused(rule)) << on.plan();
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(on.sched.get(), on.out), vk);

    DisableVulkanFusion off("1");
    S unfused(vk, args...);
    ASSERT_EQ(unfused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    unfused.expect_no_fusion(rule);
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(unfused.sched.get(), unfused.linear), vk);
    EXPECT_EQ(ggml_backend_sched_get_tensor_backend(unfused.sched.get(), unfused.out), vk);
    ASSERT_EQ(on.result.size(), unfused.result.size());
    EXPECT_TRUE(on.result == unfused.result);
}

// The site S (built from args) computed without the rule's fusion, with the bytes of the same site
// with fusion disabled.
template <typename S, typename... Args>
void expect_rule_left_alone(ggml_backend_t vk, const char * rule, const Args &... args) {
    S site(vk, args...);
    ASSERT_EQ(site.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_FALSE(site.fused(rule)) << site.plan();
    DisableVulkanFusion off("1");
    S unfused(vk, args...);
    ASSERT_EQ(unfused.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_TRUE(site.result == unfused.result);
}

// Rebuilds the graph from the output after an edit.
void rebuild_from_out(ggml_context * x, Site & s) {
    s.graph = ggml_new_graph(x);
    ggml_build_forward_expand(s.graph, s.out);
}

// Another consumer of t, an output of the graph.
void observe(ggml_context * x, Site & s, ggml_tensor * t) {
    ggml_tensor * extra = ggml_scale(x, t, 2.0f);
    ggml_set_output(extra);
    ggml_build_forward_expand(s.graph, extra);
}

// ---- the fusion [sd.linear_i8 a, sd.linear_i8 b] -> SWIGLU(a, b) ----------------------------------

constexpr const char * kSplitRule = "sd.linear_i8_swiglu_split.vulkan";

// Two linears [F, tokens, batch] over the same activations, both with weight scales, and the split
// SWIGLU of them.
struct SplitCase {
    const char * name;
    bool packed;  // one quantize node's packed output, else I8 codes with input scales
    int64_t k, f, tokens, batch;
    bool gate_bias, up_bias;
    bool up_first;  // the up linear comes first in the graph
};

struct SplitSite : Site {
    using Edit = std::function<void(ggml_context *, SplitSite &)>;

    SplitSite(ggml_backend_t vk, const SplitCase & c, uint64_t seed, const Edit & edit = {}) {
        ggml_context * x = ctx.get();
        gate = new_linear(c.packed, c.k, c.f, c.tokens, c.batch, c.gate_bias);
        up = linear_over_codes(c.f, c.up_bias);
        ggml_set_name(gate, "gate");
        ggml_set_name(up, "up");
        out = ggml_swiglu_split(x, gate, up);
        ggml_set_name(out, "out");
        ggml_set_output(out);
        graph = ggml_new_graph(x);
        if (c.up_first) ggml_build_forward_expand(graph, up);
        ggml_build_forward_expand(graph, out);
        if (edit) edit(x, *this);
        compute(vk, seed);
    }

    ggml_tensor *gate, *up;
};

// Fused against both linear kernels and the native GLU, BIT FOR BIT (bound: 0 ulp): the epilogues
// are the linears' and the SiLU the native GLU's expression. F = 70 and 33 leave partial workgroups
// of 32 outputs; K % 4 != 0 reads codes byte by byte; the vectors fill up to the 4 slots.
TEST_F(SdInt8Vulkan, SplitSwigluFusionIsBitIdenticalToTheUnfusedChain) {
    const SplitCase cases[] = {
        {"packed, weight scales only (the FFN site)", true, 768, 96, 45, 1, false, false, false},
        {"packed, gate bias, up first, F % 32 != 0, batch 2", true, 256, 70, 67, 2, true, false, true},
        {"i8 with input scales, K % 4 != 0, batch 3", false, 70, 33, 9, 3, false, false, false},
        {"i8, up bias, up first", false, 1001, 130, 7, 1, false, true, true},
    };
    uint64_t seed = kSeed + 90;
    for (const SplitCase & c : cases) {
        SCOPED_TRACE(c.name);
        expect_rule_bit_identical<SplitSite>(vk(), kSplitRule, c, ++seed);
    }
}

const SplitCase kSmallSplit{"small", true, 256, 40, 20, 1, false, false, false};

// Left to the linear kernels and the native GLU: five F32 vectors (more than the 4 slots), linears
// over different activations, and a linear with another consumer (the runtime's legality check).
TEST_F(SdInt8Vulkan, SplitSwigluFusionMatchesOnlyWhatItComputes) {
    {
        SCOPED_TRACE("packed (input scales), both weight scales and both biases");
        expect_rule_left_alone<SplitSite>(
            vk(), kSplitRule, SplitCase{"five", true, 256, 40, 20, 1, true, true, false}, kSeed + 100);
    }
    {
        SCOPED_TRACE("different activations");
        const SplitSite::Edit other_input = [](ggml_context * x, SplitSite & s) {
            s.up = s.new_linear(true, 256, 40, 20, 1, false);
            s.out->src[1] = s.up;
            rebuild_from_out(x, s);
        };
        expect_rule_left_alone<SplitSite>(vk(), kSplitRule, kSmallSplit, kSeed + 101, other_input);
    }
    const SplitSite::Edit observe_up = [](ggml_context * x, SplitSite & s) { observe(x, s, s.up); };
    SplitSite observed(vk(), kSmallSplit, kSeed + 102, observe_up);
    EXPECT_FALSE(observed.fused(kSplitRule)) << observed.plan();
    // The reason, from the runtime's legality check of the range gate, up, SWIGLU.
    const std::string reason = fusion_rejection(observed.graph, {observed.gate, observed.up, observed.out});
    EXPECT_NE(reason.find("rule 'external uses' fails at 'up'"), std::string::npos) << reason;
    expect_rule_left_alone<SplitSite>(vk(), kSplitRule, kSmallSplit, kSeed + 102, observe_up);
}

// A node between the linears (independent of them) is crossed by the optimize: the range becomes
// consecutive and fuses; with the rule disabled nothing moves.
TEST_F(SdInt8Vulkan, SplitSwigluOptimizeMakesTheLinearsConsecutive) {
    const SplitSite::Edit interleave = [](ggml_context * x, SplitSite & s) {
        ggml_tensor * other = ggml_silu(x, s.input(new_tensor(x, GGML_TYPE_F32, {8, 1, 1, 1})));
        ggml_set_name(other, "other");
        ggml_set_output(other);
        s.graph = ggml_new_graph(x);
        ggml_build_forward_expand(s.graph, s.gate);
        ggml_build_forward_expand(s.graph, other);
        ggml_build_forward_expand(s.graph, s.out);
    };
    const SplitCase i8{"i8", false, 96, 40, 12, 1, false, false, false};
    expect_rule_bit_identical<SplitSite>(vk(), kSplitRule, i8, kSeed + 110, interleave);
    EXPECT_EQ(SplitSite(vk(), i8, kSeed + 110, interleave).order(),
              (std::vector<std::string>{"other", "gate", "up", "out"}));
    DisableVulkanFusion off("1");
    EXPECT_EQ(SplitSite(vk(), i8, kSeed + 110, interleave).order(),
              (std::vector<std::string>{"gate", "other", "up", "out"}));
}

// ---- the fusion sd.linear_i8 [-> SCALE -> MUL -> ADD] -> CONCAT along rows ------------------------

constexpr const char * kConcatRule = "sd.linear_i8_concat.vulkan";

// What the linear's value is concatenated with.
enum class Other {
    kInput,       // an F32 input
    kTransposed,  // an F32 input read through a transposed view (strided)
    kLinear,      // a second linear over activations of its own (two GEMMs written directly)
};

// A linear [n, tokens, batch] (or its gated chain) concatenated with another operand along dim.
struct ConcatCase {
    const char * name;
    bool packed;
    int64_t k, n, tokens, batch;
    int dim;
    int64_t other_extent;  // the other operand's extent along dim
    Other other;
    bool value_first;  // CONCAT(value, other) rather than CONCAT(other, value)
    bool gated;        // the value is linear -> SCALE -> MUL(gate [n]) -> ADD(residual)
};

struct ConcatSite : Site {
    using Edit = std::function<void(ggml_context *, ConcatSite &)>;

    // over_bias: the output placed by hand one buffer alignment past the start of the linear's bias.
    ConcatSite(ggml_backend_t vk, const ConcatCase & c, uint64_t seed, bool over_bias = false,
               const Edit & edit = {}) {
        ggml_context * x = ctx.get();
        value = new_linear(c.packed, c.k, c.n, c.tokens, c.batch);
        ggml_set_name(value, "linear");
        first_bias = bias;
        if (c.gated) {
            ggml_tensor * gate = input(new_tensor(x, GGML_TYPE_F32, {c.n, 1, 1, 1}));
            ggml_tensor * residual = input(new_tensor(x, GGML_TYPE_F32, {c.n, c.tokens, c.batch, 1}));
            value = ggml_add(x, ggml_mul(x, ggml_scale(x, value, 0.375f), gate), residual);
        }
        std::array<int64_t, 4> ne{c.n, c.tokens, c.batch, 1};
        ne[size_t(c.dim)] = c.other_extent;
        other = new_other(c, ne);
        out = c.value_first ? ggml_concat(x, value, other, c.dim) : ggml_concat(x, other, value, c.dim);
        ggml_set_name(out, "out");
        ggml_set_output(out);
        graph = ggml_new_graph(x);
        ggml_build_forward_expand(graph, out);
        if (edit) edit(x, *this);
        if (over_bias) place_over_bias(vk);
        compute(vk, seed);
    }

    ggml_tensor * new_other(const ConcatCase & c, const std::array<int64_t, 4> & ne) {
        ggml_context * x = ctx.get();
        switch (c.other) {
            case Other::kInput:
                return input(new_tensor(x, GGML_TYPE_F32, ne));
            case Other::kTransposed:
                return ggml_transpose(x, input(new_tensor(x, GGML_TYPE_F32, {ne[1], ne[0], ne[2], ne[3]})));
            case Other::kLinear:
                return new_linear(!c.packed, c.k, c.n, ne[1], ne[2]);
        }
        return nullptr;
    }

    void place_over_bias(ggml_backend_t vk) {
        const size_t shift = ggml_backend_get_alignment(vk);
        ASSERT_LT(shift, ggml_nbytes(first_bias));  // a partial overlap
        placed.reset(ggml_backend_alloc_buffer(vk, shift + ggml_nbytes(out)));
        char * base = static_cast<char *>(ggml_backend_buffer_get_base(placed.get()));
        ASSERT_EQ(ggml_backend_tensor_alloc(placed.get(), first_bias, base), GGML_STATUS_SUCCESS);
        ASSERT_EQ(ggml_backend_tensor_alloc(placed.get(), out, base + shift), GGML_STATUS_SUCCESS)
            << ggml_backend_get_last_error();
    }

    ggml_tensor *value, *other, *first_bias;
};

// Fused against the unfused chain (the linear kernel, native SCALE, MUL, ADD and CONCAT), BIT FOR BIT
// (bound: 0 ulp): the values are the linear's or the gated fusion's, and the concatenation a copy.
// Dims 1, 2 and 3, both operand orders; the other operand copied as one range (service copy) or
// through the strided-copy shader (a slice of several ranges, or a transposed operand); two linears.
TEST_F(SdInt8Vulkan, ConcatFusionIsBitIdenticalToTheUnfusedChain) {
    const ConcatCase cases[] = {
        {"packed, CONCAT(linear, input), dim 1", true, 256, 72, 40, 1, 1, 24, Other::kInput, true, false},
        {"i8 K % 4 != 0, CONCAT(input, linear), dim 1, batch 2", false, 70, 65, 9, 2, 1, 5, Other::kInput,
         false, false},
        {"packed, CONCAT(linear, transposed), dim 2", true, 256, 40, 20, 2, 2, 3, Other::kTransposed, true,
         false},
        {"i8, CONCAT(input, linear), dim 3", false, 96, 33, 7, 2, 3, 2, Other::kInput, false, false},
        {"packed gated chain, CONCAT(input, chain), dim 1", true, 512, 96, 45, 1, 1, 19, Other::kInput, false,
         true},
        {"i8 gated chain, CONCAT(chain, transposed), dim 2", false, 100, 70, 12, 2, 2, 1, Other::kTransposed,
         true, true},
        {"two linears (packed, i8), dim 1", true, 256, 70, 33, 1, 1, 20, Other::kLinear, true, false},
        {"two linears (i8, packed), CONCAT(second, first), dim 2", false, 256, 33, 7, 2, 2, 3, Other::kLinear,
         false, false},
    };
    uint64_t seed = kSeed + 120;
    for (const ConcatCase & c : cases) {
        SCOPED_TRACE(c.name);
        expect_rule_bit_identical<ConcatSite>(vk(), kConcatRule, c, ++seed);
    }
}

// Placed by hand a little into the linear's bias: computed in the workspace and copied (the unfused
// linear reads the bias before the concatenation writes).
TEST_F(SdInt8Vulkan, ConcatFusionHandlesAnOutputOverAnInput) {
    const ConcatCase c{"over the bias", true, 256, 200, 20, 1, 1, 7, Other::kInput, true, false};
    expect_rule_bit_identical<ConcatSite>(vk(), kConcatRule, c, kSeed + 130, true);
    const ConcatCase gated{"gated, over the bias", false, 96,  200, 20, 2, 2, 1,
                           Other::kTransposed,     false, true};
    expect_rule_bit_identical<ConcatSite>(vk(), kConcatRule, gated, kSeed + 131, true);
}

const ConcatCase kSmallConcat{"small", true, 256, 40, 20, 1, 1, 6, Other::kInput, true, false};

// Left to ordinary execution: a feature concatenation (dim 0), a concatenation of the linear with
// itself (no operand outside the range to copy), an intermediate with another consumer, and with the
// rule disabled.
TEST_F(SdInt8Vulkan, ConcatFusionMatchesOnlyWhatItComputes) {
    {
        SCOPED_TRACE("dim 0");
        ConcatCase features = kSmallConcat;
        features.dim = 0;
        expect_rule_left_alone<ConcatSite>(vk(), kConcatRule, features, kSeed + 140);
        ConcatSite(vk(), features, kSeed + 140).expect_unmatched(kConcatRule);
    }
    {
        SCOPED_TRACE("CONCAT(linear, linear)");
        const ConcatSite::Edit itself = [](ggml_context * x, ConcatSite & s) {
            s.out = ggml_concat(x, s.value, s.value, 1);
            ggml_set_output(s.out);
            rebuild_from_out(x, s);
        };
        expect_rule_left_alone<ConcatSite>(vk(), kConcatRule, kSmallConcat, kSeed + 141, false, itself);
    }
    {
        SCOPED_TRACE("an observed linear");
        const ConcatSite::Edit observe_linear = [](ggml_context * x, ConcatSite & s) {
            observe(x, s, s.value);
        };
        expect_rule_left_alone<ConcatSite>(vk(), kConcatRule, kSmallConcat, kSeed + 142, false,
                                           observe_linear);
        ConcatSite observed(vk(), kSmallConcat, kSeed + 142, false, observe_linear);
        EXPECT_FALSE(observed.fused(kConcatRule)) << observed.plan();
        // The reason, from the runtime's legality check of the range linear, CONCAT.
        const std::string reason = fusion_rejection(observed.graph, {observed.linears[0], observed.out});
        EXPECT_NE(reason.find("rule 'external uses' fails at 'linear'"), std::string::npos) << reason;
    }
    {
        SCOPED_TRACE("an observed product of the gated chain: the gated fusion alone does not fire either");
        ConcatCase gated = kSmallConcat;
        gated.gated = true;
        const ConcatSite::Edit observe_product = [](ggml_context * x, ConcatSite & s) {
            observe(x, s, s.value->src[0]);
        };
        expect_rule_left_alone<ConcatSite>(vk(), kConcatRule, gated, kSeed + 143, false, observe_product);
    }
    DisableVulkanFusion off("1");
    ConcatSite(vk(), kSmallConcat, kSeed + 144).expect_unmatched(kConcatRule);
}

// The other linear's quantize node sits between the two linears as the graph is built: the optimize
// delays the first linear past it, and the pair fuses with the concatenation.
TEST_F(SdInt8Vulkan, ConcatOptimizeMakesTwoLinearsConsecutive) {
    const ConcatCase c{"i8, then packed", false, 256, 40, 20, 1, 1, 6, Other::kLinear, true, false};
    expect_rule_bit_identical<ConcatSite>(vk(), kConcatRule, c, kSeed + 150);
    ConcatSite site(vk(), c, kSeed + 150);
    ASSERT_EQ(site.compute_status, GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
    EXPECT_TRUE(site.fused(kConcatRule)) << site.plan();
    // One fused range: the first linear, the second, the concatenation.
    const auto fused_ranges = ggx::tools::fused_node_names(site.sched.get(), kConcatRule);
    ASSERT_EQ(fused_ranges.size(), 1u) << site.plan();
    ASSERT_EQ(fused_ranges[0].size(), 3u) << site.plan();
    EXPECT_EQ(fused_ranges[0].front(), "linear");
    EXPECT_EQ(fused_ranges[0].back(), "out");
    // The positions of out and the first linear: [linear, (second linear), out], or as built, with the
    // second linear's quantize node between them.
    const auto distance = [](const ConcatSite & s) {
        const std::vector<std::string> order = s.order();
        return std::find(order.begin(), order.end(), "out") - std::find(order.begin(), order.end(), "linear");
    };
    EXPECT_EQ(distance(site), 2);
    DisableVulkanFusion off("1");
    EXPECT_EQ(distance(ConcatSite(vk(), c, kSeed + 150)), 3);
}

}  // namespace
