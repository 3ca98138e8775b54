// The sd pack's INT8 operators on CPU (sd-ops.md section 3): ConvRot, activation quantization and the
// packed layout byte for byte, the INT8 GEMM exact against an int64 reference for every input kind,
// on every Highway target this machine runs (AVX3_DL: AMX tiles where the CPU has them, and VNNI;
// AVX3/AVX2: maddubs; SSE4/SSSE3/EMU128: the portable path), ggml_ext_check_kernel on both kernels, constructor errors, cancellation and the
// per-context cache of ggml_ext_linear_i8_tensorwise. Compiled with -ffp-contract=off so the
// references round every F32 step separately, as the spec orders.
// The VNNI target of cpu/int8.cpp is only iterated when this TU generates it too.
#define HWY_WANT_AVX3_DL
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml.h>
#include <gtest/gtest.h>
#include <hwy/highway.h>
#include <hwy/targets.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/int8.h"
#include "cpu/int8_amx.h"
#include "sd-ggml-ext.h"
#include "support/check_util.h"
#include "support/test_util.h"

namespace {

using namespace sd::int8;

constexpr uint64_t kSeed = 20240607;

using ggx::test::Backend;
using ggx::test::check_case;
using ggx::test::check_kernel;
using ggx::test::CheckResult;
using ggx::test::random_floats;
using Ctx = ggx::test::Context;

ggml_backend_t cpu() {
    static Backend backend(ggml_backend_cpu_init());
    return backend.get();
}

class Int8Test : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        const sd_ggml_ext_status st = sd_ggml_register_extensions();
        ASSERT_TRUE(st == SD_GGML_EXT_REGISTERED || st == SD_GGML_EXT_ALREADY_REGISTERED)
            << ggml_backend_get_last_error();
    }
};

// ---- scalar references ------------------------------------------------------------------------

// The butterfly of sd-ops.md 3.2 in the spec's order.
void ref_rotate(float * v, int g) {
    if (g <= 1) return;
    const float s = 1.0f / std::sqrt(static_cast<float>(g));
    for (int i = 0; i < g; ++i)
        v[i] *= s;
    for (int st = 1; st < g; st *= 4)
        for (int base = 0; base < g; base += 4 * st)
            for (int j = 0; j < st; ++j) {
                float * p = v + base + j;
                const float a = p[0], b = p[st], c = p[2 * st], d = p[3 * st];
                p[0] = a + b + c - d;
                p[st] = a + b - c + d;
                p[2 * st] = a - b + c + d;
                p[3 * st] = -a + b + c + d;
            }
}

// The digit formula: H_G[r][c] = prod_k H4[r_k][c_k] / sqrt(G).
double digit_entry(int r, int c, int g) {
    static const int h4[4][4] = {{1, 1, 1, -1}, {1, 1, -1, 1}, {1, -1, 1, 1}, {-1, 1, 1, 1}};
    double p = 1.0;
    for (int n = g; n > 1; n /= 4, r /= 4, c /= 4)
        p *= h4[r % 4][c % 4];
    return p / std::sqrt(static_cast<double>(g));
}

// Row quantization of sd-ops.md 3.3 (division-free: multiply by the reciprocal; lrintf rounding).
void ref_quantize_row(const float * x, int64_t k, int g, int8_t * q, float * scale) {
    std::vector<float> v(x, x + k);
    for (int64_t i = 0; i < k; i += std::max(g, 1))
        ref_rotate(v.data() + i, g);
    float amax = 0.0f;
    for (float f : v)
        amax = std::max(amax, std::fabs(f));
    *scale = amax / 127.0f;
    const float inv = *scale == 0.0f ? 0.0f : 1.0f / *scale;
    for (int64_t i = 0; i < k; ++i)
        q[i] = static_cast<int8_t>(std::clamp<long>(std::lrintf(v[i] * inv), -127, 127));
}

// The packed layout (3.3) with zeroed padding and tail bytes, as the kernel writes it.
std::vector<int8_t> ref_packed(const float * x, int64_t k, int64_t rows, int g) {
    const int64_t rows_pad = packed_rows_pad(rows), total = k * (rows_pad + packed_scale_rows(rows, k));
    std::vector<int8_t> out(size_t(total), 0);
    for (int64_t r = 0; r < rows; ++r) {
        float s;
        ref_quantize_row(x + r * k, k, g, out.data() + r * k, &s);
        std::memcpy(out.data() + k * rows_pad + 4 * r, &s, 4);
    }
    return out;
}

float ref_linear(int64_t acc, const float * sx, const float * sw, const float * b, int64_t r, int64_t o) {
    float y = static_cast<float>(acc);
    if (sx) y = y * sx[r];
    if (sw) y = y * sw[o];
    if (b) y = y + b[o];
    return y;
}

// ---- helpers ----------------------------------------------------------------------------------

std::vector<int8_t> random_codes(std::mt19937_64 & rng, size_t n) {
    std::uniform_int_distribution<int> u(-127, 127);
    std::vector<int8_t> v(n);
    for (auto & c : v)
        c = static_cast<int8_t>(u(rng));
    return v;
}

ggml_tensor * tensor(ggml_context * ctx, ggml_type t, std::initializer_list<int64_t> ne, const void * data) {
    int64_t d[4] = {1, 1, 1, 1};
    int i = 0;
    for (int64_t v : ne)
        d[i++] = v;
    ggml_tensor * x = ggml_new_tensor_4d(ctx, t, d[0], d[1], d[2], d[3]);
    if (data) std::memcpy(x->data, data, ggml_nbytes(x));
    return x;
}

// A kernel path: a Highway target, and on AVX3_DL with AMX available, with or without the AMX GEMM.
struct Path {
    int64_t target;
    bool amx;
    std::string name() const { return std::string(hwy::TargetName(target)) + (amx ? " + AMX" : ""); }
    void select() const {
        hwy::SetSupportedTargetsForTest(target);
        sd::int8::cpu::amx::set_enabled(amx);
    }
};

const std::vector<Path> & paths() {
    static const std::vector<Path> all = [] {
        std::vector<Path> p;
        for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
            if (target == HWY_AVX3_DL && sd::int8::cpu::amx::available()) p.push_back({target, true});
            p.push_back({target, false});
        }
        return p;
    }();
    return all;
}

struct PathReset {
    ~PathReset() {
        hwy::SetSupportedTargetsForTest(0);
        sd::int8::cpu::amx::set_enabled(true);
    }
};

// Computes graph ending in out with 1 and 3 threads on every path; check() each time.
template <typename Check>
void compute_everywhere(ggml_cgraph * graph, ggml_tensor * out, Check check) {
    PathReset reset;
    for (const Path & path : paths())
        for (int threads : {1, 3}) {
            SCOPED_TRACE(path.name() + ", " + std::to_string(threads) + " thread(s)");
            path.select();
            std::memset(out->data, 0x5A, ggml_nbytes(out));
            ggml_backend_cpu_set_n_threads(cpu(), threads);
            ASSERT_EQ(ggml_backend_graph_compute(cpu(), graph), GGML_STATUS_SUCCESS)
                << ggml_backend_get_last_error();
            check();
        }
}

// ---- ConvRot --------------------------------------------------------------------------------

TEST(SdInt8ConvRot, ButterflyEqualsDigitFormulaAndIsSelfInverse) {
    for (int g : {1, 4, 16, 64, 256}) {
        SCOPED_TRACE("G = " + std::to_string(g));
        for (int c = 0; c < g; ++c) {  // column c of H_G = H_G applied to the unit vector e_c
            std::vector<float> e(size_t(g), 0.0f);
            e[size_t(c)] = 1.0f;
            ref_rotate(e.data(), g);
            for (int r = 0; r < g; ++r)
                ASSERT_EQ(static_cast<double>(e[size_t(r)]), digit_entry(r, c, g)) << r << ", " << c;
        }
        std::mt19937_64 rng(kSeed);
        std::vector<float> v = random_floats(rng, g, -4.0f, 4.0f), w = v;
        ref_rotate(w.data(), g);
        ref_rotate(w.data(), g);
        for (int i = 0; i < g; ++i)
            EXPECT_NEAR(w[size_t(i)], v[size_t(i)], 1e-5f);
    }
}

// ---- quantization and the packed layout ----------------------------------------------------

// Quantizes random F32 [k, ne1, ne2] (one zero row, one row with a large outlier) and compares the
// packed output byte for byte with ref_packed on every target and thread count.
void expect_packed_matches(int64_t k, int64_t ne1, int64_t ne2, int g) {
    SCOPED_TRACE("K " + std::to_string(k) + " rows " + std::to_string(ne1 * ne2) + " G " + std::to_string(g));
    Ctx ctx(ggml_init({64u << 20, nullptr, false}));
    std::mt19937_64 rng(kSeed + uint64_t(k));
    const int64_t rows = ne1 * ne2;
    std::vector<float> x = random_floats(rng, k * rows, -3.0f, 3.0f);
    std::fill_n(x.begin() + k, k, 0.0f);  // a zero row: scale 0, all-zero codes
    if (rows > 2) {                       // a row with one large outlier: clamping and tiny codes
        x[size_t(2 * k)] = 1e6f;
    }
    ggml_tensor * a = tensor(ctx.get(), GGML_TYPE_F32, {k, ne1, ne2}, x.data());
    ggml_tensor * q = ggml_quantize_i8_convrot(ctx.get(), a, g);
    ASSERT_NE(q, nullptr) << ggml_get_error(ctx.get());
    ASSERT_EQ(q->ne[0], k);
    ASSERT_EQ(q->ne[1], packed_rows_pad(rows) + (rows * 4 + k - 1) / k);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, q);
    const std::vector<int8_t> expected = ref_packed(x.data(), k, rows, g);
    compute_everywhere(graph, q,
                       [&] { ASSERT_EQ(0, std::memcmp(q->data, expected.data(), expected.size())); });
}

TEST_F(Int8Test, QuantizePackedLayoutByteForByte) {
    struct Case {
        int64_t k, ne1, ne2;
        int g;
    };
    for (const Case c : {Case{256, 5, 1, 256}, Case{64, 7, 2, 64}, Case{48, 3, 1, 16}, Case{12, 9, 1, 4},
                         Case{37, 6, 1, 1}, Case{3, 5, 1, 1}, Case{8192, 3, 1, 256}, Case{5120, 2, 1, 64}})
        expect_packed_matches(c.k, c.ne1, c.ne2, c.g);
}

// Every group size with one group per row, an odd number of groups (vector and 64-value tails) and one
// group more than the 4096-value buffer (chunked rows with a one-group last chunk), odd row counts.
TEST_F(Int8Test, QuantizeEveryGroupSizeAndRowLength) {
    for (int g : {1, 4, 16, 64, 256})
        for (int64_t k : {int64_t(g), int64_t(5 * g), int64_t(4096 + g)})
            expect_packed_matches(k, 7, g == 16 ? 3 : 1, g);
}

TEST_F(Int8Test, QuantizeRoundsHalfToEvenAndClamps) {
    Ctx ctx(ggml_init({1u << 20, nullptr, false}));
    // G = 1, amax 127: scale 1, inv 1, so v * inv = v exactly. Ties go to even.
    const float row[16] = {127.0f, 0.5f,    1.5f,        2.5f, -0.5f,   -1.5f, -2.5f, 3.5f,
                           126.5f, -126.5f, 0.49999997f, 4.5f, -127.0f, 0.0f,  -0.0f, 5.5f};
    const int8_t want[16] = {127, 0, 2, 2, 0, -2, -2, 4, 126, -126, 0, 4, -127, 0, 0, 6};
    ggml_tensor * a = tensor(ctx.get(), GGML_TYPE_F32, {16, 1}, row);
    ggml_tensor * q = ggml_quantize_i8_convrot(ctx.get(), a, 1);
    ASSERT_NE(q, nullptr);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, q);
    compute_everywhere(graph, q, [&] {
        ASSERT_EQ(0, std::memcmp(q->data, want, 16));
        float s;
        std::memcpy(&s, static_cast<int8_t *>(q->data) + 16 * 4, 4);
        EXPECT_EQ(s, 1.0f);
        for (int i = 16; i < 64; ++i)  // padding rows (1..3) are zero
            ASSERT_EQ(static_cast<int8_t *>(q->data)[i], 0);
    });
}

// ---- GEMM ------------------------------------------------------------------------------------

enum class Kind { F32, Packed, I8 };

struct GemmCase {
    Kind kind;
    int64_t k, n, m, ne2;
    int g;
    bool scales, bias;
};

std::string name(const GemmCase & c) {
    static const char * kinds[] = {"f32", "packed", "i8"};
    return std::string(kinds[int(c.kind)]) + " K " + std::to_string(c.k) + " N " + std::to_string(c.n) +
           " M " + std::to_string(c.m) + "x" + std::to_string(c.ne2) + " G " + std::to_string(c.g) +
           (c.scales ? " scales" : "") + (c.bias ? " bias" : "");
}

void run_gemm_case(const GemmCase & c) {
    SCOPED_TRACE(name(c));
    Ctx ctx(ggml_init({64u << 20, nullptr, false}));
    std::mt19937_64 rng(kSeed + uint64_t(c.k * 131 + c.n * 7 + c.m));
    const int64_t rows = c.m * c.ne2;
    const std::vector<int8_t> w = random_codes(rng, size_t(c.k * c.n));
    const std::vector<float> sw = random_floats(rng, c.n, 0.001f, 0.02f);
    const std::vector<float> b = random_floats(rng, c.n, -1.0f, 1.0f);
    ggml_tensor * tw = tensor(ctx.get(), GGML_TYPE_I8, {c.k, c.n}, w.data());
    ggml_tensor * tsw = c.scales ? tensor(ctx.get(), GGML_TYPE_F32, {c.n}, sw.data()) : nullptr;
    ggml_tensor * tb = c.bias ? tensor(ctx.get(), GGML_TYPE_F32, {c.n}, b.data()) : nullptr;
    std::vector<int8_t> xq(size_t(c.k * rows));
    std::vector<float> sx(size_t(rows), 1.0f);
    ggml_tensor * out = nullptr;
    if (c.kind == Kind::I8) {
        xq = random_codes(rng, xq.size());
        sx = random_floats(rng, int64_t(sx.size()), 0.001f, 0.05f);
        ggml_tensor * tx = tensor(ctx.get(), GGML_TYPE_I8, {c.k, c.m, c.ne2}, xq.data());
        ggml_tensor * ts = c.scales ? tensor(ctx.get(), GGML_TYPE_F32, {c.m, c.ne2}, sx.data()) : nullptr;
        out = ggml_mul_mat_i8_tensorwise(ctx.get(), tw, tx, tsw, tb, 0, ts);
        if (!c.scales) std::fill(sx.begin(), sx.end(), 1.0f);
    } else {
        const std::vector<float> x = random_floats(rng, c.k * rows, -2.0f, 2.0f);
        for (int64_t r = 0; r < rows; ++r)
            ref_quantize_row(x.data() + r * c.k, c.k, c.g, xq.data() + r * c.k, &sx[size_t(r)]);
        ggml_tensor * tx = tensor(ctx.get(), GGML_TYPE_F32, {c.k, c.m, c.ne2}, x.data());
        ggml_tensor * in = c.kind == Kind::Packed ? ggml_quantize_i8_convrot(ctx.get(), tx, c.g) : tx;
        ASSERT_NE(in, nullptr) << ggml_get_error(ctx.get());
        out = ggml_mul_mat_i8_tensorwise(ctx.get(), tw, in, tsw, tb,
                                         c.kind == Kind::F32 && c.g == 1 ? 0 : c.g, nullptr);
    }
    ASSERT_NE(out, nullptr) << ggml_get_error(ctx.get());
    ASSERT_EQ(out->ne[0], c.n);
    ASSERT_EQ(out->ne[1], c.m);
    ASSERT_EQ(out->ne[2], c.ne2);
    std::vector<float> expected(size_t(c.n * rows));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < c.n; ++o) {
            int64_t acc = 0;
            for (int64_t i = 0; i < c.k; ++i)
                acc += int64_t(w[size_t(o * c.k + i)]) * int64_t(xq[size_t(r * c.k + i)]);
            const bool with_sx = c.kind != Kind::I8 || c.scales;
            expected[size_t(r * c.n + o)] =
                ref_linear(acc, with_sx ? sx.data() : nullptr, c.scales ? sw.data() : nullptr,
                           c.bias ? b.data() : nullptr, r, o);
        }
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, out);
    compute_everywhere(graph, out, [&] {
        const auto * y = static_cast<const float *>(out->data);
        for (size_t i = 0; i < expected.size(); ++i)
            ASSERT_EQ(std::memcmp(&y[i], &expected[i], 4), 0)
                << "element " << i << ": " << y[i] << " vs " << expected[i];
    });
}

TEST_F(Int8Test, GemmExactAllInputKinds) {
    const GemmCase cases[] = {
        {Kind::I8, 37, 5, 3, 1, 0, true, true},         {Kind::I8, 37, 5, 3, 1, 0, false, false},
        {Kind::I8, 200, 13, 9, 2, 0, true, false},      {Kind::I8, 64, 4, 4, 1, 0, false, true},
        {Kind::I8, 1, 3, 2, 1, 0, true, true},          {Kind::F32, 48, 7, 5, 1, 16, true, true},
        {Kind::F32, 100, 9, 3, 1, 1, false, false},     {Kind::F32, 256, 17, 6, 2, 256, true, false},
        {Kind::F32, 300, 11, 70, 1, 4, false, true},    {Kind::Packed, 256, 51, 67, 1, 256, true, true},
        {Kind::Packed, 192, 6, 3, 1, 64, false, false}, {Kind::Packed, 129, 5, 1, 1, 1, true, true},
        {Kind::I8, 1000, 50, 70, 1, 0, true, true},
    };
    for (const GemmCase & c : cases)
        run_gemm_case(c);
}

// ---- outputs over their inputs -------------------------------------------------------------------

std::vector<uint8_t> bytes_of(const ggml_tensor * t) {
    const auto * p = static_cast<const uint8_t *>(t->data);
    return {p, p + ggml_nbytes(t)};
}

// Computes graph (ending in out) with out in storage of its own, then with out placed offset bytes
// into input's storage (as the allocator's in-place reuse places an output; input's bytes restored
// before and after): out's bytes must be the same, with 1 and 3 threads.
void expect_same_over_input(ggml_cgraph * graph, ggml_tensor * out, ggml_tensor * input, size_t offset) {
    SCOPED_TRACE("output over '" + std::string(input->name) + "' + " + std::to_string(offset));
    ASSERT_LE(offset + ggml_nbytes(out), ggml_nbytes(input));
    const std::vector<uint8_t> original = bytes_of(input);
    void * own = out->data;
    for (int threads : {1, 3}) {
        ggml_backend_cpu_set_n_threads(cpu(), threads);
        out->data = own;
        ASSERT_EQ(ggml_backend_graph_compute(cpu(), graph), GGML_STATUS_SUCCESS)
            << ggml_backend_get_last_error();
        const std::vector<uint8_t> expected = bytes_of(out);
        out->data = static_cast<char *>(input->data) + offset;
        ASSERT_EQ(ggml_backend_graph_compute(cpu(), graph), GGML_STATUS_SUCCESS)
            << ggml_backend_get_last_error();
        EXPECT_EQ(bytes_of(out), expected) << threads << " thread(s)";
        std::memcpy(input->data, original.data(), original.size());
    }
    out->data = own;
}

// An output may overlap an input (the allocator's in-place reuse); the CPU kernels then compute into
// the workspace and copy (cpu/int8.cpp). Quantization over its F32 input, and the GEMM over its activations
// (F32, I8 and packed) and over its weights, exactly or partly overlapping.
TEST_F(Int8Test, OutputsOverTheirInputsMatchOutputsOfTheirOwn) {
    Ctx ctx(ggml_init({16u << 20, nullptr, false}));
    std::mt19937_64 rng(kSeed + 5);
    const std::vector<float> xf = random_floats(rng, 256 * 12, -2.0f, 2.0f);
    const std::vector<int8_t> w_codes = random_codes(rng, 256 * 17), x_codes = random_codes(rng, 256 * 12);
    const std::vector<float> sw = random_floats(rng, 17, 0.001f, 0.02f),
                             sx = random_floats(rng, 12, 0.01f, 0.05f);
    ggml_tensor * w = tensor(ctx.get(), GGML_TYPE_I8, {256, 17}, w_codes.data());
    ggml_tensor * tsw = tensor(ctx.get(), GGML_TYPE_F32, {17}, sw.data());
    ggml_tensor * x32 = tensor(ctx.get(), GGML_TYPE_F32, {256, 6, 2}, xf.data());
    ggml_tensor * x8 = tensor(ctx.get(), GGML_TYPE_I8, {256, 6, 2}, x_codes.data());
    ggml_tensor * tsx = tensor(ctx.get(), GGML_TYPE_F32, {6, 2}, sx.data());
    ggml_set_name(w, "w");
    ggml_set_name(x32, "x f32");
    ggml_set_name(x8, "x i8");

    const auto graph_of = [&](ggml_tensor * out) {
        EXPECT_NE(out, nullptr) << ggml_get_error(ctx.get());
        ggml_cgraph * graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, out);
        return graph;
    };
    ggml_tensor * q = ggml_quantize_i8_convrot(ctx.get(), x32, 64);
    ggml_cgraph * quantize = graph_of(q);
    expect_same_over_input(quantize, q, x32, 0);
    expect_same_over_input(quantize, q, x32, 100);

    ggml_tensor * y_f32 = ggml_mul_mat_i8_tensorwise(ctx.get(), w, x32, tsw, nullptr, 16, nullptr);
    ggml_tensor * y_i8 = ggml_mul_mat_i8_tensorwise(ctx.get(), w, x8, tsw, nullptr, 0, tsx);
    ggml_tensor * packed = ggml_quantize_i8_convrot(ctx.get(), x32, 256);
    ggml_set_name(packed, "packed");
    ggml_tensor * y_packed = ggml_mul_mat_i8_tensorwise(ctx.get(), w, packed, tsw, nullptr, 256, nullptr);
    ggml_cgraph * f32 = graph_of(y_f32);
    ggml_cgraph * i8 = graph_of(y_i8);
    ggml_cgraph * from_packed = graph_of(y_packed);
    for (size_t offset : {size_t{0}, size_t{36}}) {
        expect_same_over_input(f32, y_f32, x32, offset);
        expect_same_over_input(f32, y_f32, w, offset);
        expect_same_over_input(i8, y_i8, x8, offset);
        expect_same_over_input(i8, y_i8, w, offset);
        expect_same_over_input(from_packed, y_packed, packed, offset);
    }
}

// Weight scales stored as the checkpoint's [out, 1] (ggml [1, N]) and input scales shaped like the rows.
// Tile edges (issue 20): K off the 64-byte tile row, N and M from 1 to 67 around the 16-row tiles
// and the 2 x 2 blocks.
TEST_F(Int8Test, GemmExactOnTileEdges) {
    for (int64_t k : {1, 63, 65, 200})
        for (int64_t n : {1, 15, 17, 33, 67})
            for (int64_t m : {1, 16, 31, 67})
                run_gemm_case({Kind::I8, k, n, m, 1, 0, (n + m) % 2 == 0, n % 2 == 1});
}

TEST(SdInt8Amx, AvailableExactlyWhenTheCpuBackendReportsAmxInt8) {
    EXPECT_EQ(sd::int8::cpu::amx::available(), ggml_cpu_has_amx_int8() != 0);
    if (!sd::int8::cpu::amx::available()) GTEST_SKIP() << "this CPU (or kernel) offers no AMX-INT8 tiles";
}

TEST_F(Int8Test, ScaleShapesAccepted) {
    Ctx ctx(ggml_init({1u << 20, nullptr, true}));
    ggml_tensor * w = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_I8, 32, 6);
    ggml_tensor * x = ggml_new_tensor_3d(ctx.get(), GGML_TYPE_I8, 32, 5, 2);
    EXPECT_NE(ggml_mul_mat_i8_tensorwise(ctx.get(), w, x, ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 1, 6),
                                         nullptr, 0, ggml_new_tensor_3d(ctx.get(), GGML_TYPE_F32, 1, 5, 2)),
              nullptr)
        << ggml_get_error(ctx.get());
    EXPECT_NE(ggml_mul_mat_i8_tensorwise(ctx.get(), w, x, nullptr, nullptr, 0,
                                         ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 10)),
              nullptr);
    EXPECT_NE(ggml_mul_mat_i8_tensorwise(ctx.get(), w, x, nullptr, nullptr, 0,
                                         ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 5, 2)),
              nullptr);
}

// stable-diffusion.cpp's six-argument call builds the node the seven-argument form builds without
// input_scale (same operator, inputs and attributes).
TEST_F(Int8Test, SixArgumentFormIsTheFormWithoutInputScale) {
    Ctx ctx(ggml_init({1u << 20, nullptr, true}));
    ggml_tensor * w = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_I8, 32, 6);
    ggml_tensor * x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 32, 5);
    ggml_tensor * scale = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 6);
    ggml_tensor * six = ggml_mul_mat_i8_tensorwise(ctx.get(), w, x, scale, nullptr, 4);
    ggml_tensor * seven = ggml_mul_mat_i8_tensorwise(ctx.get(), w, x, scale, nullptr, 4, nullptr);
    ggml_tensor * ex = ggml_mul_mat_i8_tensorwise_ex(ctx.get(), w, x, scale, nullptr, 4, nullptr);
    ASSERT_NE(six, nullptr) << ggml_get_error(ctx.get());
    for (const ggml_tensor * other : {seven, ex}) {
        ASSERT_NE(other, nullptr);
        EXPECT_EQ(ggml_ext_node_op(other), ggml_ext_node_op(six));
        EXPECT_TRUE(ggml_are_same_shape(other, six));
        EXPECT_EQ(std::memcmp(other->op_params, six->op_params, sizeof six->op_params), 0);
        for (int i = 0; i < GGML_MAX_SRC; ++i)
            EXPECT_EQ(other->src[i], six->src[i]) << i;
    }
}

// ---- constructor errors -------------------------------------------------------------------------

void expect_error(ggml_context * ctx, ggml_tensor * t, const char * fragment) {
    EXPECT_EQ(t, nullptr);
    const char * e = ggml_get_error(ctx);
    ASSERT_NE(e, nullptr);
    EXPECT_NE(std::string(e).find(fragment), std::string::npos) << e;
    ggml_clear_error(ctx);
}

TEST_F(Int8Test, ConstructorErrors) {
    Ctx ctx(ggml_init({1u << 20, nullptr, true}));
    ggml_context * c = ctx.get();
    ggml_tensor * a = ggml_new_tensor_2d(c, GGML_TYPE_F32, 256, 4);
    expect_error(c, ggml_quantize_i8_convrot(c, a, 1024), "group_size 1024 unsupported");
    expect_error(c, ggml_quantize_i8_convrot(c, a, 2), "group_size 2 unsupported");
    expect_error(c, ggml_quantize_i8_convrot(c, ggml_new_tensor_2d(c, GGML_TYPE_F32, 48, 4), 64),
                 "must divide K");
    expect_error(c, ggml_quantize_i8_convrot(c, ggml_new_tensor_2d(c, GGML_TYPE_F16, 256, 4), 16),
                 "contiguous f32");
    expect_error(c, ggml_quantize_i8_convrot(c, ggml_transpose(c, a), 4), "contiguous f32");

    ggml_tensor * w = ggml_new_tensor_2d(c, GGML_TYPE_I8, 256, 8);
    ggml_tensor * ws = ggml_new_tensor_1d(c, GGML_TYPE_F32, 8);
    ggml_tensor * xi = ggml_new_tensor_2d(c, GGML_TYPE_I8, 256, 4);
    expect_error(c,
                 ggml_mul_mat_i8_tensorwise(c, ggml_new_tensor_2d(c, GGML_TYPE_F16, 256, 8), a, ws, nullptr,
                                            0, nullptr),
                 "weight must be a contiguous 2-D i8");
    expect_error(c,
                 ggml_mul_mat_i8_tensorwise(c, ggml_new_tensor_3d(c, GGML_TYPE_I8, 256, 8, 2), a, ws, nullptr,
                                            0, nullptr),
                 "weight must be a contiguous 2-D i8");
    expect_error(c,
                 ggml_mul_mat_i8_tensorwise(c, w, ggml_new_tensor_2d(c, GGML_TYPE_F32, 128, 4), ws, nullptr,
                                            0, nullptr),
                 "ne0 must be K");
    expect_error(
        c, ggml_mul_mat_i8_tensorwise(c, w, a, ggml_new_tensor_1d(c, GGML_TYPE_F32, 7), nullptr, 0, nullptr),
        "weight_scale must be");
    expect_error(
        c, ggml_mul_mat_i8_tensorwise(c, w, a, ggml_new_tensor_1d(c, GGML_TYPE_F16, 8), nullptr, 0, nullptr),
        "weight_scale must be");
    expect_error(
        c,
        ggml_mul_mat_i8_tensorwise(c, w, a, ggml_new_tensor_2d(c, GGML_TYPE_F32, 2, 4), nullptr, 0, nullptr),
        "weight_scale must be");
    expect_error(c,
                 ggml_mul_mat_i8_tensorwise(c, w, a, ws, ggml_new_tensor_1d(c, GGML_TYPE_F32, 9), 0, nullptr),
                 "bias must be");
    expect_error(c, ggml_mul_mat_i8_tensorwise(c, w, a, ws, nullptr, 3, nullptr),
                 "convrot_group_size 3 unsupported");
    expect_error(c, ggml_mul_mat_i8_tensorwise(c, w, a, ws, nullptr, 1024, nullptr),
                 "convrot_group_size 1024");
    expect_error(c,
                 ggml_mul_mat_i8_tensorwise(c, w, a, ws, nullptr, 0, ggml_new_tensor_1d(c, GGML_TYPE_F32, 4)),
                 "input_scale applies to i8 activations only");
    expect_error(
        c, ggml_mul_mat_i8_tensorwise(c, w, xi, ws, nullptr, 0, ggml_new_tensor_1d(c, GGML_TYPE_F32, 5)),
        "input_scale must be");
    expect_error(c, ggml_mul_mat_i8_tensorwise(c, w, xi, ws, nullptr, 16, nullptr), "already quantized");
    expect_error(
        c,
        ggml_mul_mat_i8_tensorwise(c, w, ggml_transpose(c, ggml_new_tensor_2d(c, GGML_TYPE_I8, 4, 256)), ws,
                                   nullptr, 0, nullptr),
        "i8 activations must be contiguous");
    ggml_tensor * packed = ggml_quantize_i8_convrot(c, a, 64);
    ASSERT_NE(packed, nullptr);
    expect_error(c, ggml_mul_mat_i8_tensorwise(c, w, packed, ws, nullptr, 256, nullptr),
                 "differs from the packed");
    expect_error(
        c, ggml_mul_mat_i8_tensorwise(c, w, packed, ws, nullptr, 64, ggml_new_tensor_1d(c, GGML_TYPE_F32, 4)),
        "carries its own row scales");
    expect_error(c,
                 ggml_mul_mat_i8_tensorwise(c, ggml_new_tensor_2d(c, GGML_TYPE_I8, 200000, 2),
                                            ggml_new_tensor_2d(c, GGML_TYPE_I8, 200000, 1), nullptr, nullptr,
                                            0, nullptr),
                 "int32 accumulation");
    EXPECT_NE(ggml_mul_mat_i8_tensorwise(c, w, packed, ws, nullptr, 64, nullptr), nullptr)
        << ggml_get_error(c);
}

// ---- ggml_ext_check_kernel -----------------------------------------------------------------------

bool check_reference(const ggml_tensor * node, const double * const * in, double * out, void *) {
    const auto values = [](const double * v, size_t n) {
        std::vector<float> f(n);
        for (size_t i = 0; i < n; ++i)
            f[i] = static_cast<float>(v[i]);
        return f;
    };
    if (ggml_ext_node_op(node) == quantize_op()) {
        const ggml_tensor * a = node->src[0];
        const int64_t k = a->ne[0], rows = ggml_nrows(a);
        const std::vector<int8_t> p =
            ref_packed(values(in[0], size_t(k * rows)).data(), k, rows, quantize_attrs_of(node).group);
        for (size_t i = 0; i < p.size(); ++i)
            out[i] = p[i];
        return true;
    }
    const LinearAttrs attrs = linear_attrs_of(node);
    const ggml_tensor * w = node->src[0];
    const int64_t k = w->ne[0], n = w->ne[1], rows = attrs.ne[0] * attrs.ne[1] * attrs.ne[2];
    std::vector<int8_t> xq(size_t(k * rows));
    std::vector<float> sx(size_t(rows), 1.0f);
    bool with_sx = true;
    int next = 2;
    if (attrs.kind == kInputF32) {
        const std::vector<float> x = values(in[1], size_t(k * rows));
        for (int64_t r = 0; r < rows; ++r)
            ref_quantize_row(x.data() + r * k, k, std::max(attrs.group, 1), xq.data() + r * k,
                             &sx[size_t(r)]);
    } else {
        const size_t total = size_t(ggml_nelements(node->src[1]));
        std::vector<int8_t> bytes(total);
        for (size_t i = 0; i < total; ++i)
            bytes[i] = static_cast<int8_t>(in[1][i]);
        std::memcpy(xq.data(), bytes.data(), xq.size());
        if (attrs.kind == kInputPacked)
            std::memcpy(sx.data(), bytes.data() + k * packed_rows_pad(rows), 4 * size_t(rows));
        else
            with_sx = false;
    }
    std::vector<float> sw, b;
    if (attrs.flags & kHasWeightScale) sw = values(in[next++], size_t(n));
    if (attrs.flags & kHasBias) b = values(in[next++], size_t(n));
    if (attrs.flags & kHasInputScale) sx = values(in[next++], size_t(rows)), with_sx = true;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < n; ++o) {
            int64_t acc = 0;
            for (int64_t i = 0; i < k; ++i)
                acc += int64_t(static_cast<int8_t>(in[0][o * k + i])) * xq[size_t(r * k + i)];
            out[r * n + o] = ref_linear(acc, with_sx ? sx.data() : nullptr, sw.empty() ? nullptr : sw.data(),
                                        b.empty() ? nullptr : b.data(), r, o);
        }
    return true;
}

bool run_check(const ggml_ext_kernel_desc * kernel, const std::vector<ggml_ext_check_case> & cases,
               std::string * why) {
    const CheckResult r = check_kernel(cpu(), kernel, cases, 0.0, kSeed, check_reference);
    *why = r.report.first_failure;
    return r.passed && r.report.n_passed == r.report.n_cases;
}

TEST_F(Int8Test, CheckKernelQuantize) {
    const QuantizeAttrs g256{256}, g4{4}, g1{1};
    std::vector<ggml_ext_check_case> cases = {
        check_case("G256 [512, 7]", {{GGML_TYPE_F32, {512, 7, 1, 1}}}, &g256, sizeof g256),
        check_case("G4 [12, 5, 3]", {{GGML_TYPE_F32, {12, 5, 3, 1}}}, &g4, sizeof g4),
        check_case("G1 [37, 3]", {{GGML_TYPE_F32, {37, 3, 1, 1}}}, &g1, sizeof g1),
    };
    std::string why;
    PathReset reset;
    for (const Path & path : paths()) {
        path.select();
        EXPECT_TRUE(run_check(cpu_quantize_kernel(), cases, &why)) << path.name() << ": " << why;
    }
}

TEST_F(Int8Test, CheckKernelLinear) {
    LinearAttrs f32{kInputF32, 16, 16, kHasWeightScale | kHasBias, {5, 2, 1}};
    LinearAttrs f32_plain{kInputF32, 0, 0, 0, {3, 1, 1}};
    LinearAttrs i8{kInputI8, 0, 0, kHasWeightScale | kHasBias | kHasInputScale, {7, 1, 1}};
    LinearAttrs i8_plain{kInputI8, 0, 0, 0, {2, 3, 1}};
    LinearAttrs packed{kInputPacked, 64, 64, kHasBias, {3, 1, 1}};
    std::vector<ggml_ext_check_case> cases = {
        check_case("f32 G16 K48 N7 M5x2",
                   {{GGML_TYPE_I8, {48, 7, 1, 1}},
                    {GGML_TYPE_F32, {48, 5, 2, 1}},
                    {GGML_TYPE_F32, {7, 1, 1, 1}},
                    {GGML_TYPE_F32, {7, 1, 1, 1}}},
                   &f32, sizeof f32),
        check_case("f32 K37 N5 M3", {{GGML_TYPE_I8, {37, 5, 1, 1}}, {GGML_TYPE_F32, {37, 3, 1, 1}}},
                   &f32_plain, sizeof f32_plain),
        check_case("i8 K70 N9 M7",
                   {{GGML_TYPE_I8, {70, 9, 1, 1}},
                    {GGML_TYPE_I8, {70, 7, 1, 1}},
                    {GGML_TYPE_F32, {9, 1, 1, 1}},
                    {GGML_TYPE_F32, {9, 1, 1, 1}},
                    {GGML_TYPE_F32, {7, 1, 1, 1}}},
                   &i8, sizeof i8),
        check_case("i8 K130 N6 M2x3", {{GGML_TYPE_I8, {130, 6, 1, 1}}, {GGML_TYPE_I8, {130, 2, 3, 1}}},
                   &i8_plain, sizeof i8_plain),
        // Packed: K 64, 3 rows -> [64, 4 + 1]; scale bytes drawn from [56, 64) decode to finite positive
        // floats.
        check_case(
            "packed G64 K64 N5 M3",
            {{GGML_TYPE_I8, {64, 5, 1, 1}}, {GGML_TYPE_I8, {64, 5, 1, 1}}, {GGML_TYPE_F32, {5, 1, 1, 1}}},
            &packed, sizeof packed),
    };
    cases[4].range[1][0] = 56, cases[4].range[1][1] = 64;
    std::string why;
    PathReset reset;
    for (const Path & path : paths()) {
        path.select();
        EXPECT_TRUE(run_check(cpu_linear_kernel(), cases, &why)) << path.name() << ": " << why;
    }
}

// ---- cancellation ------------------------------------------------------------------------------

bool stop_now(void *) { return true; }

TEST_F(Int8Test, AbortCallbackCancels) {
    Ctx ctx(ggml_init({32u << 20, nullptr, false}));
    ggml_tensor * w = tensor(ctx.get(), GGML_TYPE_I8, {1024, 256}, nullptr);
    ggml_tensor * x = tensor(ctx.get(), GGML_TYPE_F32, {1024, 64}, nullptr);
    std::memset(w->data, 1, ggml_nbytes(w));
    std::memset(x->data, 0, ggml_nbytes(x));
    ggml_tensor * y = ggml_mul_mat_i8_tensorwise(ctx.get(), w, x, nullptr, nullptr, 256, nullptr);
    ASSERT_NE(y, nullptr);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y);
    ggml_backend_cpu_set_n_threads(cpu(), 2);
    ggml_backend_cpu_set_abort_callback(cpu(), stop_now, nullptr);
    const ggml_status st = ggml_backend_graph_compute(cpu(), graph);
    ggml_backend_cpu_set_abort_callback(cpu(), nullptr, nullptr);
    EXPECT_EQ(st, GGML_STATUS_ABORTED) << ggml_backend_get_last_error();
    EXPECT_EQ(ggml_backend_graph_compute(cpu(), graph), GGML_STATUS_SUCCESS) << ggml_backend_get_last_error();
}

// ---- ggml_ext_linear_i8_tensorwise ---------------------------------------------------------------

TEST_F(Int8Test, LinearWiringCachesPackedInputPerContext) {
    Ctx ctx(ggml_init({1u << 20, nullptr, true}));
    ggml_context * c = ctx.get();
    ggml_tensor * x = ggml_new_tensor_2d(c, GGML_TYPE_F32, 256, 8);
    ggml_tensor * wq = ggml_new_tensor_2d(c, GGML_TYPE_I8, 256, 32);
    ggml_tensor * wk = ggml_new_tensor_2d(c, GGML_TYPE_I8, 256, 16);
    ggml_tensor * s = ggml_new_tensor_1d(c, GGML_TYPE_F32, 32);
    ggml_tensor * q = ggml_ext_linear_i8_tensorwise(c, x, wq, s, nullptr, 256, 1.0f);
    ggml_tensor * k = ggml_ext_linear_i8_tensorwise(c, x, wk, nullptr, nullptr, 256, 1.0f);
    ggml_tensor * v = ggml_ext_linear_i8_tensorwise(c, x, wk, nullptr, nullptr, 64, 1.0f);
    ASSERT_TRUE(q && k && v) << ggml_get_error(c);
    EXPECT_EQ(ggml_ext_node_op(q->src[1]), quantize_op());
    EXPECT_EQ(q->src[1], k->src[1]);  // one packed tensor per (input, G)
    EXPECT_NE(q->src[1], v->src[1]);  // another G: another packed tensor
    // A scaled module quantizes inside the product: scale -> linear (F32 input) -> scale -> add bias.
    ggml_tensor * b = ggml_new_tensor_1d(c, GGML_TYPE_F32, 32);
    ggml_tensor * o = ggml_ext_linear_i8_tensorwise(c, x, wq, s, b, 256, 1.0f / 32);
    ASSERT_NE(o, nullptr) << ggml_get_error(c);
    EXPECT_EQ(o->op, GGML_OP_ADD);
    EXPECT_EQ(o->src[0]->op, GGML_OP_SCALE);
    EXPECT_EQ(ggml_ext_node_op(o->src[0]->src[0]), linear_op());
    EXPECT_EQ(o->src[0]->src[0]->src[1]->op, GGML_OP_SCALE);
    // Another context never sees this context's packed tensors.
    Ctx other(ggml_init({1u << 20, nullptr, true}));
    ggml_tensor * q2 = ggml_ext_linear_i8_tensorwise(other.get(), x, wq, nullptr, nullptr, 256, 1.0f);
    ASSERT_NE(q2, nullptr);
    EXPECT_NE(q2->src[1], q->src[1]);
}

// The whole F32 path through a scheduler: the output may be placed over the input by the allocator.
TEST_F(Int8Test, SchedulerGraphMatchesDirect) {
    Ctx ctx(ggml_init({1u << 20, nullptr, true}));
    ggml_context * c = ctx.get();
    ggml_tensor * x = ggml_new_tensor_2d(c, GGML_TYPE_F32, 256, 9);
    ggml_tensor * w = ggml_new_tensor_2d(c, GGML_TYPE_I8, 256, 256);
    ggml_set_input(x);
    ggml_tensor * h = ggml_scale(c, x, 2.0f);  // an intermediate whose storage dies at the linear
    ggml_tensor * y = ggml_mul_mat_i8_tensorwise(c, w, h, nullptr, nullptr, 256, nullptr);
    ggml_set_output(y);
    ggml_cgraph * graph = ggml_new_graph(c);
    ggml_build_forward_expand(graph, y);
    ggml_backend_t be = cpu();
    ggml_backend_sched_t sched = ggml_backend_sched_new(&be, nullptr, 1, 256, false, false);
    ASSERT_TRUE(ggml_backend_sched_alloc_graph(sched, graph)) << ggml_backend_get_last_error();
    std::mt19937_64 rng(kSeed);
    const std::vector<float> xv = random_floats(rng, 256 * 9, -1.0f, 1.0f);
    const std::vector<int8_t> wv = random_codes(rng, 256 * 256);
    ggml_backend_tensor_set(x, xv.data(), 0, ggml_nbytes(x));
    ggml_backend_tensor_set(w, wv.data(), 0, ggml_nbytes(w));
    ASSERT_EQ(ggml_backend_sched_graph_compute(sched, graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    std::vector<float> got(256 * 9);
    ggml_backend_tensor_get(y, got.data(), 0, ggml_nbytes(y));
    for (int64_t r = 0; r < 9; ++r) {
        std::vector<float> row(256);
        for (int i = 0; i < 256; ++i)
            row[size_t(i)] = xv[size_t(r * 256 + i)] * 2.0f;
        int8_t q[256];
        float sx;
        ref_quantize_row(row.data(), 256, 256, q, &sx);
        for (int64_t o = 0; o < 256; ++o) {
            int64_t acc = 0;
            for (int i = 0; i < 256; ++i)
                acc += int64_t(wv[size_t(o * 256 + i)]) * q[i];
            ASSERT_EQ(got[size_t(r * 256 + o)], ref_linear(acc, &sx, nullptr, nullptr, 0, 0))
                << r << ", " << o;
        }
    }
    ggml_backend_sched_free(sched);
}

}  // namespace
