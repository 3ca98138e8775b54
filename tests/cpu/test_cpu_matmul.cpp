// CPU kernels of MUL_MAT (with GGML_PREC_F32), MUL_MAT_ID, OUT_PROD and FLASH_ATTN_EXT against the
// double-precision oracle: every accepted dtype
// combination, broadcasting over dims 2/3, transposed / permuted / strided operands, odd sizes that
// leave partial register tiles and cache blocks, N == 1 (matrix-vector paths) and N > 1 (GEMM), the
// independent-batch mode, GQA, masks with broadcast, softcap, ALiBi, fully masked rows and key blocks,
// 1..3 threads, abort.
//
// NMSE bounds (sum of squared errors over sum of squared expected values).
//  - Float and quantized a with N > 1 (quantized: rows not whole 256-value runs, or N > 8), and float
//    a with N == 1: F16/BF16 inputs and dequantized
//    Q8_0/Q4_0 weights (d * q: an 11-bit times an 8-bit significand) are exact in F32, so the only
//    error is F32 accumulation: each product and sum rounds with relative error 2^-24 and K <= ~600
//    terms accumulate, NMSE <= ~K * 2^-48 ~ 1e-12 in the worst case here: bound 1e-10.
//  - Quantized a with N == 1, and Q8_0 / Q4_0 a with N >= 16 on AMX-INT8 tiles: the kernel also
//    quantizes b to int8 per 32-block (d = amax / 127,
//    round to nearest), an error of at most d / 2 per element; independent of a, this gives
//    NMSE ~ (amax / 127)^2 / 12 / E[b^2], about 1.6e-5 for b uniform in [-2, 2] (amax ~ 2): bound
//    1e-4 over >= 32 outputs, and every element also within its rigorous bound
//    sum_k |a_k| * d_block(k) / 2 (plus F32 slack).
//  - BF16 a with N >= 16 on AMX-BF16 tiles: b rounded to BF16 (8 significant bits, relative error
//    up to 2^-9): NMSE ~ 2^-18 / 3 ~ 1.3e-6: bound 1e-5 (product_bound).
//  - Flash attention: F32 scores (rounding 2^-24 relative, so absolute ~1e-6 at |s| ~ 10), exp/tanh
//    from Highway's polynomials (a few ulp), F32 accumulation over n_kv <= 300 keys and D <= 128:
//    relative errors ~1e-6 per output at worst, NMSE ~1e-12: bound 1e-9.
// The AVX-512 VNNI target (and the AMX paths it takes) is only iterated when this TU generates it.
#define HWY_WANT_AVX3_DL
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/types.h"
#include "cpu/kernel.h"
#include "cpu/kernels/common.h"
#include "cpu/quant_decode.h"
#include "reference/reference.h"
#include "support/test_util.h"

namespace {

using namespace ggx::test;

constexpr uint32_t kSeed = 4321;
constexpr ggml_type kATypes[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0,
                                 GGML_TYPE_Q4_0};

constexpr double kExactBound = 1e-10;       // F32 accumulation only
constexpr double kQuantVecBound = 1e-4;     // int8 activations (quantized a, N == 1)
constexpr double kBf16ColumnsBound = 1e-5;  // BF16-rounded activations (BF16 a, N >= 16, AMX)

// Whether a product rounds b to int8 per 32-block: quantized a with N == 1 (the matrix-vector
// paths), and Q8_0 / Q4_0 a with N >= 16 on AMX-INT8 tiles (taken by the AVX3_DL target only).
bool int8_columns(ggml_type ta, int64_t N, int64_t target) {
    if (!ggml_is_quantized(ta)) return false;
    const bool amx_int8 = (ta == GGML_TYPE_Q8_0 || ta == GGML_TYPE_Q4_0) && target == HWY_AVX3_DL &&
                          ggml_cpu_has_amx_int8() != 0;
    return N == 1 || (N >= 16 && amx_int8);
}

// A product's NMSE bound on a target.
using BoundOf = std::function<double(int64_t target)>;

BoundOf product_bound(ggml_type ta, int64_t N) {
    return [ta, N](int64_t target) {
        if (int8_columns(ta, N, target)) return kQuantVecBound;
        return ta == GGML_TYPE_BF16 && N >= 16 ? kBf16ColumnsBound : kExactBound;
    };
}
constexpr double kAttentionBound = 1e-9;  // F32 scores, polynomial exp / tanh

std::string shape_str(const ggml_tensor * t) {
    return std::string(ggml_type_name(t->type)) + "[" + std::to_string(t->ne[0]) + "," +
           std::to_string(t->ne[1]) + "," + std::to_string(t->ne[2]) + "," + std::to_string(t->ne[3]) + "]";
}

// Fills t (any layout) with uniform values in [lo, hi), rounded / quantized to its type.
ggml_tensor * fill(ggml_tensor * t, Rng & rng, double lo = -2.0, double hi = 2.0) {
    std::vector<double> values(static_cast<size_t>(ggml_nelements(t)));
    for (double & v : values)
        v = rng.uniform(lo, hi);
    ggx::ref::write_tensor(t, values);
    return t;
}

ggml_tensor * input(ggml_context * ctx, Rng & rng, ggml_type type, const Shape & ne, double lo = -2.0,
                    double hi = 2.0) {
    return fill(ggml_new_tensor(ctx, type, 4, ne.data()), rng, lo, hi);
}

// Logical shape ne stored with dims 0 and 1 swapped (a transposed view: nb0 > nb1).
ggml_tensor * transposed_input(ggml_context * ctx, Rng & rng, ggml_type type, const Shape & ne) {
    ggml_tensor * t = input(ctx, rng, type, {ne[1], ne[0], ne[2], ne[3]});
    return ggml_transpose(ctx, t);
}

// Logical shape ne as a permutation (2, 0, 3, 1) of another storage shape.
ggml_tensor * permuted_input(ggml_context * ctx, Rng & rng, ggml_type type, const Shape & ne) {
    constexpr int axes[4] = {2, 0, 3, 1};
    ggml_tensor * t = input(ctx, rng, type, {ne[axes[0]], ne[axes[1]], ne[axes[2]], ne[axes[3]]});
    return ggml_permute(ctx, t, axes[0], axes[1], axes[2], axes[3]);
}

// Rows of ne[0] elements with a gap after each row (dense rows, nb1 larger than a row).
ggml_tensor * gapped_input(ggml_context * ctx, Rng & rng, ggml_type type, const Shape & ne) {
    const int64_t pad = ggml_blck_size(type) * 2;
    ggml_tensor * t = input(ctx, rng, type, {ne[0] + pad, ne[1], ne[2], ne[3]});
    return ggml_view_4d(ctx, t, ne[0], ne[1], ne[2], ne[3], t->nb[1], t->nb[2], t->nb[3], 0);
}

// Every SIMD target compiled into the kernels that this machine runs (the kernels dispatch at run
// time; each target has its own code paths, e.g. AVX2 vs AVX-512 register tiles).
const std::vector<int64_t> & targets() {
    static const std::vector<int64_t> all = hwy::SupportedAndGeneratedTargets();
    return all;
}

struct Result {
    std::vector<double> actual, expected;
    ggml_tensor * out = nullptr;
    ggml_cgraph * graph = nullptr;
    int64_t target = 0;  // the SIMD target the kernels ran
};

// Builds the graph in a fresh context (same random inputs each time), evaluates the oracle, then
// computes on the CPU with 1, 2 and 3 threads and calls check for each.
void run_all_threads(const Build & build, const std::string & what,
                     const std::function<void(const Result &)> & check) {
    SCOPED_TRACE(what);
    std::unique_ptr<ggml_context, ContextDeleter> ctx(ggml_init({16u << 20, nullptr, false}));
    ASSERT_NE(ctx, nullptr);
    Rng rng(kSeed);
    SCOPED_TRACE(rng.trace());
    Result r;
    r.out = build(ctx.get(), rng);
    ASSERT_NE(r.out, nullptr) << ggml_get_error(ctx.get());
    const ggx::Kernel & kernel = ggx::cpu::kernel_table()[r.out->op];
    ASSERT_TRUE(kernel.supports(kernel, nullptr, r.out));
    r.graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(r.graph, r.out);
    ggx::ref::Evaluator oracle;
    oracle.compute(r.graph);
    r.expected = oracle.values(r.out);
    // The inputs are never written, so the same graph is recomputed for every configuration.
    for (int64_t target : targets())
        for (int n_threads : {1, 2, 3}) {
            SCOPED_TRACE(std::to_string(n_threads) + " thread(s), " + hwy::TargetName(target));
            hwy::SetSupportedTargetsForTest(target);
            r.target = target;
            std::fill_n(static_cast<float *>(r.out->data), ggml_nelements(r.out), std::nanf(""));
            ggml_backend_cpu_set_n_threads(cpu_backend(), n_threads);
            ASSERT_EQ(ggml_backend_graph_compute(cpu_backend(), r.graph), GGML_STATUS_SUCCESS);
            r.actual = ggx::ref::read_tensor(r.out);
            check(r);
        }
    hwy::SetSupportedTargetsForTest(0);
}

void expect_matches(const Build & build, const BoundOf & bound, const std::string & what) {
    run_all_threads(build, what, [&](const Result & r) {
        for (double v : r.actual) {
            ASSERT_TRUE(std::isfinite(v)) << "non-finite result";
        }
        EXPECT_LE(ggx::ref::nmse(r.actual, r.expected), bound(r.target));
    });
}

void expect_matches(const Build & build, double bound, const std::string & what) {
    expect_matches(build, [bound](int64_t) { return bound; }, what);
}

// ---- MUL_MAT ------------------------------------------------------------------------------------

struct Dims {
    int64_t K, M, N;
};

// Quantized types need K to be a multiple of 32.
int64_t fit_k(ggml_type type, int64_t K) {
    return ggml_is_quantized(type) ? std::max<int64_t>(32, (K + 31) / 32 * 32) : K;
}

// The rigorous error bound of the int8-activation path for output (m, n = 0, i2, i3) of a plain
// (unbroadcast) product: sum_k |a[k, m]| * d_block(k) / 2, d = amax(b block) / 127, plus F32 slack.
std::vector<double> quant_vec_bounds(const ggml_tensor * out) {
    const ggml_tensor * a = out->src[0];
    const ggml_tensor * b = out->src[1];
    const std::vector<double> av = ggx::ref::read_tensor(a), bv = ggx::ref::read_tensor(b);
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1];
    std::vector<double> bounds(static_cast<size_t>(M * N));
    for (int64_t n = 0; n < N; ++n)
        for (int64_t m = 0; m < M; ++m) {
            const double * x = bv.data() + n * K;
            double s = 0.0, mag = 0.0;
            for (int64_t k0 = 0; k0 < K; k0 += 32) {
                double amax = 0.0;
                for (int64_t k = k0; k < k0 + 32; ++k)
                    amax = std::max(amax, std::fabs(x[k]));
                for (int64_t k = k0; k < k0 + 32; ++k) {
                    const double ak = std::fabs(av[static_cast<size_t>(m * K + k)]);
                    s += ak * amax / 127.0 / 2.0;
                    mag += ak * std::fabs(x[k]);
                }
            }
            bounds[static_cast<size_t>(n * M + m)] = s * 1.001 + mag * 1e-5 + 1e-6;
        }
    return bounds;
}

// A product that rounded b to int8 blocks: every element within its rigorous bound, and the NMSE
// within kQuantVecBound over 32 or more rows.
void check_int8_columns(const Result & r, int64_t M) {
    const std::vector<double> bounds = quant_vec_bounds(r.out);
    for (size_t i = 0; i < bounds.size(); ++i) {
        ASSERT_LE(std::fabs(r.actual[i] - r.expected[i]), bounds[i]) << "element " << i;
    }
    if (M >= 32) {
        EXPECT_LE(ggx::ref::nmse(r.actual, r.expected), kQuantVecBound);
    }
}

TEST(CpuMulMat, AllTypeCombinationsAndOddSizes) {
    const Dims dims[] = {{3, 1, 1},    {31, 3, 1}, {33, 65, 1},   {257, 33, 1}, {65, 31, 3},
                         {33, 33, 31}, {1, 7, 13}, {257, 65, 33}, {96, 257, 5}, {31, 1, 65}};
    for (ggml_type ta : kATypes)
        for (ggml_type tb : kFloatTypes)
            for (const Dims & d : dims) {
                const int64_t K = fit_k(ta, d.K);
                const std::string what = std::string(ggml_type_name(ta)) + " x " + ggml_type_name(tb) +
                                         " K=" + std::to_string(K) + " M=" + std::to_string(d.M) +
                                         " N=" + std::to_string(d.N);
                const Build build = [&](ggml_context * ctx, Rng & rng) {
                    return ggml_mul_mat(ctx, input(ctx, rng, ta, {K, d.M, 1, 1}),
                                        input(ctx, rng, tb, {K, d.N, 1, 1}));
                };
                run_all_threads(build, what, [&](const Result & r) {
                    if (int8_columns(ta, d.N, r.target))
                        check_int8_columns(r, d.M);
                    else
                        EXPECT_LE(ggx::ref::nmse(r.actual, r.expected), product_bound(ta, d.N)(r.target));
                });
            }
}

// The formats with an int8 decoder (cpu/quant_decode.h): the matrix-vector product (N = 1, beyond
// Q8_0 and Q4_0, which have their own) and the small-N product of decoded rows against int8 columns
// (N = 3, 8; runs of 256 values, odd M, two runs per row and a partial chunk of runs) on every
// target, within the int8-activation bound.
TEST(CpuMulMat, DecodedFormatsOnEveryTarget) {
    std::vector<ggml_type> types;
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const auto type = static_cast<ggml_type>(t);
        if (ggx::cpu::quant::decoder_of(type) && ggx::core::has_conversion(type)) types.push_back(type);
    }
    if (types.empty()) GTEST_SKIP() << "no decoded block format has a conversion";
    for (ggml_type ta : types)
        for (int64_t K : {512, 256 * 11})
            for (int64_t N : {1, 3, 8}) {
                if (N == 1 && (ta == GGML_TYPE_Q8_0 || ta == GGML_TYPE_Q4_0)) continue;
                const std::string what = std::string(ggml_type_name(ta)) + " K=" + std::to_string(K) +
                                         " M=37 N=" + std::to_string(N);
                const Build build = [&](ggml_context * ctx, Rng & rng) {
                    return ggml_mul_mat(ctx, input(ctx, rng, ta, {K, 37, 1, 1}),
                                        input(ctx, rng, GGML_TYPE_F32, {K, N, 1, 1}));
                };
                run_all_threads(build, what, [&](const Result & r) {
                    const std::vector<double> bounds = quant_vec_bounds(r.out);
                    for (size_t m = 0; m < bounds.size(); ++m)
                        ASSERT_LE(std::fabs(r.actual[m] - r.expected[m]), bounds[m]) << "row " << m;
                    EXPECT_LE(ggx::ref::nmse(r.actual, r.expected), kQuantVecBound);
                });
            }
}

// 2 <= N <= 8 (the small-N path): every N, K with partial chunks and vector tails, M not a multiple of
// the row group.
// Q8_0 / Q4_0 a with 16 or more columns on AMX-INT8 tiles (AVX3_DL target): M and N around the
// 16-row tiles and 2 x 2 blocks, K of one block, an odd number of blocks and more than one chunk
// of 8 blocks, every float type of b. The other targets compute the same products exactly.
TEST(CpuMulMat, AmxInt8OddShapes) {
    if (!ggml_cpu_has_amx_int8()) GTEST_SKIP() << "this CPU (or process) has no AMX-INT8 tiles";
    const Dims dims[] = {{32, 1, 16},  {96, 17, 17},  {288, 15, 31}, {544, 33, 67},
                         {64, 67, 16}, {320, 48, 33}, {32, 64, 64}};
    for (ggml_type ta : {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0})
        for (ggml_type tb : kFloatTypes)
            for (const Dims & d : dims) {
                const std::string what = std::string(ggml_type_name(ta)) + " x " + ggml_type_name(tb) +
                                         " K=" + std::to_string(d.K) + " M=" + std::to_string(d.M) +
                                         " N=" + std::to_string(d.N);
                const Build build = [&](ggml_context * ctx, Rng & rng) {
                    return ggml_mul_mat(ctx, input(ctx, rng, ta, {d.K, d.M, 1, 1}),
                                        input(ctx, rng, tb, {d.K, d.N, 1, 1}));
                };
                run_all_threads(build, what, [&](const Result & r) {
                    if (int8_columns(ta, d.N, r.target))
                        check_int8_columns(r, d.M);
                    else
                        EXPECT_LE(ggx::ref::nmse(r.actual, r.expected), kExactBound);
                });
            }
}

TEST(CpuMulMat, SmallN) {
    for (ggml_type ta : kATypes)
        for (int64_t N = 2; N <= 8; ++N) {
            const int64_t K = fit_k(ta, 301);
            const std::string what =
                std::string(ggml_type_name(ta)) + " K=" + std::to_string(K) + " M=37 N=" + std::to_string(N);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return ggml_mul_mat(ctx, input(ctx, rng, ta, {K, 37, 1, 1}),
                                        input(ctx, rng, GGML_TYPE_BF16, {K, N, 1, 1}));
                },
                kExactBound, what);
        }
}

// Sizes crossing the cache blocks (k blocks of 512, m blocks of 256) and a K whose last block is
// partial; quantized and float, N == 1 and N > 1.
TEST(CpuMulMat, CrossesCacheBlocks) {
    const Dims dims[] = {{1100, 300, 40}, {544, 530, 13}, {1056, 70, 1}};
    for (ggml_type ta : {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_Q4_0, GGML_TYPE_Q8_0})
        for (const Dims & d : dims) {
            const int64_t K = fit_k(ta, d.K);
            const std::string what = std::string(ggml_type_name(ta)) + " K=" + std::to_string(K) +
                                     " M=" + std::to_string(d.M) + " N=" + std::to_string(d.N);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return ggml_mul_mat(ctx, input(ctx, rng, ta, {K, d.M, 1, 1}),
                                        input(ctx, rng, GGML_TYPE_F32, {K, d.N, 1, 1}));
                },
                product_bound(ta, d.N), what);
        }
}

// a [K, M, A2, A3] broadcast over b [K, N, B2, B3]: few large batches (threads share each batch) and
// many small ones (threads take whole batches).
TEST(CpuMulMat, BroadcastOverBatches) {
    struct Case {
        Shape a, b;
    };
    const Case cases[] = {
        {{64, 33, 2, 3}, {64, 17, 4, 6}}, {{96, 40, 1, 1}, {96, 9, 3, 2}},  {{64, 20, 2, 1}, {64, 1, 6, 1}},
        {{32, 70, 3, 1}, {32, 1, 3, 2}},  {{33, 65, 2, 2}, {33, 31, 2, 2}}, {{32, 16, 8, 1}, {32, 8, 8, 2}},
    };
    for (ggml_type ta : kATypes)
        for (const Case & c : cases) {
            if (ggml_is_quantized(ta) && c.a[0] % 32 != 0) continue;
            const std::string what = std::string(ggml_type_name(ta)) + " a " + std::to_string(c.a[1]) + "x" +
                                     std::to_string(c.a[2]) + "x" + std::to_string(c.a[3]) +
                                     " b N=" + std::to_string(c.b[1]) + " " + std::to_string(c.b[2]) + "x" +
                                     std::to_string(c.b[3]);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return ggml_mul_mat(ctx, input(ctx, rng, ta, c.a), input(ctx, rng, GGML_TYPE_F32, c.b));
                },
                product_bound(ta, c.b[1]), what);
        }
}

// Non-contiguous operands: transposed and permuted a (float types) and b, rows with gaps (also
// quantized a, whose rows must stay dense).
TEST(CpuMulMat, StridedOperands) {
    for (ggml_type ta : kFloatTypes)
        for (ggml_type tb : kFloatTypes)
            for (int64_t N : {1, 5, 33}) {
                const std::string what =
                    std::string(ggml_type_name(ta)) + " x " + ggml_type_name(tb) + " N=" + std::to_string(N);
                expect_matches(
                    [&](ggml_context * ctx, Rng & rng) {
                        return ggml_mul_mat(ctx, transposed_input(ctx, rng, ta, {37, 29, 1, 1}),
                                            transposed_input(ctx, rng, tb, {37, N, 1, 1}));
                    },
                    kExactBound, what + " transposed");
                expect_matches(
                    [&](ggml_context * ctx, Rng & rng) {
                        return ggml_mul_mat(ctx, permuted_input(ctx, rng, ta, {41, 19, 2, 3}),
                                            permuted_input(ctx, rng, tb, {41, N, 4, 3}));
                    },
                    kExactBound, what + " permuted");
                expect_matches(
                    [&](ggml_context * ctx, Rng & rng) {
                        return ggml_mul_mat(ctx, gapped_input(ctx, rng, ta, {45, 21, 2, 1}),
                                            gapped_input(ctx, rng, tb, {45, N, 2, 1}));
                    },
                    product_bound(ta, N), what + " gapped rows");
            }
    for (ggml_type ta : {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0})
        for (int64_t N : {1, 7, 33}) {
            const std::string what = std::string(ggml_type_name(ta)) + " N=" + std::to_string(N);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return ggml_mul_mat(ctx, gapped_input(ctx, rng, ta, {96, 37, 2, 1}),
                                        permuted_input(ctx, rng, GGML_TYPE_F16, {96, N, 2, 1}));
                },
                product_bound(ta, N), what + " gapped a, permuted b");
        }
}

TEST(CpuMulMat, EmptyReduction) {
    expect_matches(
        [](ggml_context * ctx, Rng & rng) {
            return ggml_mul_mat(ctx, input(ctx, rng, GGML_TYPE_F32, {0, 5, 1, 1}),
                                input(ctx, rng, GGML_TYPE_F32, {0, 3, 1, 1}));
        },
        0.0, "K = 0");
}

TEST(CpuMulMat, SupportsExactlyTheDocumentedTypes) {
    std::unique_ptr<ggml_context, ContextDeleter> ctx(ggml_init({1u << 20, nullptr, true}));
    const ggx::cpu::Kernel & kernel = ggx::cpu::kernels::mul_mat;
    for (ggml_type ta : kATypes)
        for (ggml_type tb : kFloatTypes) {
            ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), ta, 64, 4);
            ggml_tensor * b = ggml_new_tensor_2d(ctx.get(), tb, 64, 3);
            ggml_tensor * out = ggml_mul_mat(ctx.get(), a, b);
            ASSERT_NE(out, nullptr);
            EXPECT_TRUE(kernel.supports(kernel, nullptr, out)) << shape_str(a) << " x " << shape_str(b);
        }
    // Combinations the constructor rejects, forged on an accepted node.
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 64, 4);
    ggml_tensor * b = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 64, 3);
    ggml_tensor * out = ggml_mul_mat(ctx.get(), a, b);
    for (ggml_type bad : {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_I32, GGML_TYPE_I8}) {
        b->type = bad;
        EXPECT_FALSE(kernel.supports(kernel, nullptr, out)) << ggml_type_name(bad) << " b";
    }
    b->type = GGML_TYPE_F32;
    a->type = GGML_TYPE_I32;
    EXPECT_FALSE(kernel.supports(kernel, nullptr, out));
    a->type = GGML_TYPE_F32;
    out->type = GGML_TYPE_F16;
    EXPECT_FALSE(kernel.supports(kernel, nullptr, out));
}

// A long product stops early when the abort callback asks, and the graph reports ABORTED.
TEST(CpuMulMat, Aborts) {
    for (int64_t N : {1, 256}) {
        std::unique_ptr<ggml_context, ContextDeleter> ctx(ggml_init({256u << 20, nullptr, false}));
        ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 4096, 4096);
        ggml_tensor * b = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 4096, N);
        std::fill_n(static_cast<float *>(a->data), ggml_nelements(a), 0.5f);
        std::fill_n(static_cast<float *>(b->data), ggml_nelements(b), 0.25f);
        ggml_cgraph * graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, ggml_mul_mat(ctx.get(), a, b));
        std::atomic<int> calls{0};
        ggml_backend_cpu_set_n_threads(cpu_backend(), 2);
        ggml_backend_cpu_set_abort_callback(
            cpu_backend(),
            [](void * data) { return static_cast<std::atomic<int> *>(data)->fetch_add(1) >= 0; }, &calls);
        EXPECT_EQ(ggml_backend_graph_compute(cpu_backend(), graph), GGML_STATUS_ABORTED);
        ggml_backend_cpu_set_abort_callback(cpu_backend(), nullptr, nullptr);
        EXPECT_GE(calls.load(), 1);
    }
}

// GGML_PREC_F32 keeps b in F32 where the default precision rounds it (int8 for a quantized a with
// up to 8 columns, BF16 for a BF16 a with 16 or more on AMX), so the product is as exact as the
// float paths.
TEST(CpuMulMat, PrecF32KeepsActivationsExact) {
    const std::pair<ggml_type, int64_t> cases[] = {
        {GGML_TYPE_Q8_0, 1}, {GGML_TYPE_Q4_0, 1}, {GGML_TYPE_Q4_K, 5}, {GGML_TYPE_BF16, 33}};
    for (const auto & [ta, N] : cases)
        for (int64_t K : {256, 288 * 8}) {
            if (K % ggml_blck_size(ta) != 0) continue;
            const std::string what =
                std::string(ggml_type_name(ta)) + " K=" + std::to_string(K) + " N=" + std::to_string(N);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    ggml_tensor * r = ggml_mul_mat(ctx, input(ctx, rng, ta, {K, 45, 1, 1}),
                                                   input(ctx, rng, GGML_TYPE_F32, {K, N, 1, 1}));
                    ggml_mul_mat_set_prec(r, GGML_PREC_F32);
                    return r;
                },
                kExactBound, what);
        }
}

// ---- MUL_MAT_ID ---------------------------------------------------------------------------------

// ids [n_used, T]: token t's slots name distinct experts, drawn at random.
ggml_tensor * expert_ids(ggml_context * ctx, Rng & rng, int64_t n_as, int64_t n_used, int64_t T) {
    ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, n_used, T);
    std::vector<int32_t> order(static_cast<size_t>(n_as));
    for (int64_t t = 0; t < T; ++t) {
        for (int64_t e = 0; e < n_as; ++e)
            order[static_cast<size_t>(e)] = static_cast<int32_t>(e);
        std::shuffle(order.begin(), order.end(), rng.gen);
        std::copy_n(order.begin(), n_used, static_cast<int32_t *>(ids->data) + t * n_used);
    }
    return ids;
}

// Groups of one row (matrix-vector), of 2..8 rows (small N), more (GEMM) and more than one product
// takes (> 512 rows on an expert); one b row shared by every slot and one per slot.
TEST(CpuMulMatId, MatchesOracle) {
    struct Routed {
        int64_t K, M, n_as, n_used, n_b, T;
    };
    const Routed shapes[] = {{64, 37, 8, 2, 1, 1},
                             {64, 37, 4, 2, 2, 5},
                             {96, 70, 4, 3, 1, 40},
                             {32, 19, 2, 2, 2, 600},
                             {288, 33, 16, 4, 4, 13}};
    for (ggml_type ta : kATypes)
        for (const Routed & r : shapes) {
            const std::string what = std::string(ggml_type_name(ta)) + " K=" + std::to_string(r.K) +
                                     " M=" + std::to_string(r.M) + " experts=" + std::to_string(r.n_as) +
                                     " used=" + std::to_string(r.n_used) + " T=" + std::to_string(r.T);
            // Experts that receive a single row take the int8-activation path for quantized weights.
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    ggml_tensor * as = input(ctx, rng, ta, {r.K, r.M, r.n_as, 1});
                    ggml_tensor * b = input(ctx, rng, GGML_TYPE_F32, {r.K, r.n_b, r.T, 1});
                    return ggml_mul_mat_id(ctx, as, b, expert_ids(ctx, rng, r.n_as, r.n_used, r.T));
                },
                ggml_is_quantized(ta) ? BoundOf([](int64_t) { return kQuantVecBound; }) : product_bound(ta, 16), what);
        }
}

// An expert id outside [0, n_as) fails the computation instead of reading past the weights.
TEST(CpuMulMatId, RejectsExpertIdsOutOfRange) {
    for (int32_t bad : {-1, 4}) {
        std::unique_ptr<ggml_context, ContextDeleter> ctx(ggml_init({1u << 20, nullptr, false}));
        Rng rng(kSeed);
        ggml_tensor * as = input(ctx.get(), rng, GGML_TYPE_F32, {16, 8, 4, 1});
        ggml_tensor * b = input(ctx.get(), rng, GGML_TYPE_F32, {16, 1, 3, 1});
        ggml_tensor * ids = expert_ids(ctx.get(), rng, 4, 2, 3);
        static_cast<int32_t *>(ids->data)[3] = bad;
        ggml_cgraph * graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, ggml_mul_mat_id(ctx.get(), as, b, ids));
        ggml_backend_cpu_set_n_threads(cpu_backend(), 2);
        EXPECT_EQ(ggml_backend_graph_compute(cpu_backend(), graph), GGML_STATUS_FAILED) << "id " << bad;
    }
}

// ---- OUT_PROD -----------------------------------------------------------------------------------

// Contiguous a (rows of r are a's columns: strided packing) and transposed a (adjacent rows).
TEST(CpuOutProd, MatchesOracle) {
    const Dims dims[] = {{1, 1, 1}, {64, 33, 17}, {96, 70, 3}, {32, 600, 40}};  // M, N (summed), P
    for (ggml_type ta : kATypes)
        for (const Dims & d : dims)
            for (bool transposed : {false, true}) {
                if (transposed && ggml_is_quantized(ta)) continue;  // quantized rows stay dense
                const int64_t M = fit_k(ta, d.K);
                const std::string what = std::string(ggml_type_name(ta)) + " M=" + std::to_string(M) +
                                         " N=" + std::to_string(d.M) + " P=" + std::to_string(d.N) +
                                         (transposed ? " a transposed" : "");
                expect_matches(
                    [&](ggml_context * ctx, Rng & rng) {
                        const Shape a_ne = {M, d.M, 1, 1};
                        ggml_tensor * a =
                            transposed ? transposed_input(ctx, rng, ta, a_ne) : input(ctx, rng, ta, a_ne);
                        return ggml_out_prod(ctx, a, input(ctx, rng, GGML_TYPE_F32, {d.N, d.M, 1, 1}));
                    },
                    kExactBound, what);
            }
}

// ---- FLASH_ATTN_EXT -----------------------------------------------------------------------------

struct Attn {
    int64_t D, Dv, NQ, NKV, H, HK, B, BK;
    ggml_type kt, vt;
    int mask;  // 0 none, 1 random with -inf entries (F16, broadcast), 2 causal (F32), 3 fully masked rows
    float softcap, max_bias;
};

std::string describe(const Attn & c) {
    return "D=" + std::to_string(c.D) + " Dv=" + std::to_string(c.Dv) + " NQ=" + std::to_string(c.NQ) +
           " NKV=" + std::to_string(c.NKV) + " H=" + std::to_string(c.H) + "/" + std::to_string(c.HK) +
           " B=" + std::to_string(c.B) + "/" + std::to_string(c.BK) + " k " + ggml_type_name(c.kt) + " v " +
           ggml_type_name(c.vt) + " mask " + std::to_string(c.mask) + " softcap " +
           std::to_string(c.softcap) + " max_bias " + std::to_string(c.max_bias);
}

ggml_tensor * build_attention(ggml_context * ctx, Rng & rng, const Attn & c, bool strided) {
    ggml_tensor *q, *k, *v;
    if (strided) {
        // q stored [D, H, NQ, B] (the usual projection layout), k and v [D, HK, NKV, BK].
        q = ggml_permute(ctx, input(ctx, rng, GGML_TYPE_F32, {c.D, c.H, c.NQ, c.B}), 0, 2, 1, 3);
        k = ggml_permute(ctx, input(ctx, rng, c.kt, {c.D, c.HK, c.NKV, c.BK}), 0, 2, 1, 3);
        v = ggml_permute(ctx, input(ctx, rng, c.vt, {c.Dv, c.HK, c.NKV, c.BK}), 0, 2, 1, 3);
    } else {
        q = input(ctx, rng, GGML_TYPE_F32, {c.D, c.NQ, c.H, c.B});
        k = input(ctx, rng, c.kt, {c.D, c.NKV, c.HK, c.BK});
        v = input(ctx, rng, c.vt, {c.Dv, c.NKV, c.HK, c.BK});
    }
    ggml_tensor * mask = nullptr;
    const double inf = std::numeric_limits<double>::infinity();
    if (c.mask == 1) {
        // [NKV, NQ + 3, 2 (if H even), 1]: random values, a third of them -inf.
        const int64_t m2 = c.H % 2 == 0 ? 2 : 1;
        mask = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, c.NKV, c.NQ + 3, m2, 1);
        std::vector<double> values(static_cast<size_t>(ggml_nelements(mask)));
        for (double & x : values)
            x = rng.uniform(0.0, 1.0) < 0.33 ? -inf : rng.uniform(-1.0, 1.0);
        ggx::ref::write_tensor(mask, values);
    } else if (c.mask == 2 || c.mask == 3) {
        // Causal: query t sees keys j <= t + NKV - NQ. Mode 3 also masks every key of rows t % 3 == 1.
        mask = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, c.NKV, c.NQ, 1, 1);
        std::vector<double> values(static_cast<size_t>(ggml_nelements(mask)));
        for (int64_t t = 0; t < c.NQ; ++t)
            for (int64_t j = 0; j < c.NKV; ++j) {
                const bool hidden = j > t + c.NKV - c.NQ || (c.mask == 3 && t % 3 == 1);
                values[static_cast<size_t>(t * c.NKV + j)] = hidden ? -inf : 0.0;
            }
        ggx::ref::write_tensor(mask, values);
    }
    return ggml_flash_attn_ext(ctx, q, k, v, mask, 1.0f / std::sqrt(static_cast<float>(c.D)), c.max_bias,
                               c.softcap);
}

TEST(CpuFlashAttn, MatchesOracle) {
    constexpr ggml_type F16 = GGML_TYPE_F16, F32 = GGML_TYPE_F32;
    const Attn cases[] = {
        // Row path (NQ < 16).
        {64, 64, 1, 100, 4, 2, 1, 1, F16, F16, 0, 0.0f, 0.0f},
        {40, 24, 3, 37, 4, 4, 2, 1, F32, F32, 1, 0.0f, 0.0f},
        {32, 32, 5, 300, 8, 2, 1, 1, F16, F32, 2, 20.0f, 0.0f},
        {16, 8, 7, 50, 6, 3, 1, 1, F32, F16, 1, 0.0f, 8.0f},
        {24, 24, 6, 40, 2, 1, 1, 1, F16, F16, 3, 0.0f, 0.0f},
        {32, 32, 2, 300, 16, 1, 1, 1, F16, F16, 1, 0.0f, 4.0f},  // GQA group larger than a register tile
        // Tile path: partial tiles, partial key blocks, GQA, batch broadcast, masks, softcap, ALiBi.
        {64, 64, 16, 96, 2, 1, 1, 1, F16, F16, 0, 0.0f, 0.0f},
        {64, 48, 70, 97, 4, 2, 2, 1, F16, F16, 1, 0.0f, 0.0f},
        {33, 17, 40, 200, 4, 1, 1, 1, F32, F32, 1, 30.0f, 0.0f},
        {32, 32, 50, 70, 8, 2, 1, 1, F16, F32, 1, 0.0f, 8.0f},
        {32, 40, 33, 150, 6, 3, 1, 1, F32, F16, 0, 0.0f, 4.0f},
        {128, 128, 130, 300, 2, 2, 1, 1, F16, F16, 2, 0.0f, 0.0f},
        {48, 48, 100, 250, 2, 1, 2, 2, F16, F16, 3, 15.0f, 2.0f},
        {3, 5, 20, 9, 2, 2, 1, 1, F32, F32, 2, 0.0f, 0.0f},
    };
    for (const Attn & c : cases)
        for (bool strided : {false, true})
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) { return build_attention(ctx, rng, c, strided); },
                kAttentionBound, describe(c) + (strided ? " strided" : ""));
}

// Rows whose every key is masked give zeros, in both paths.
TEST(CpuFlashAttn, FullyMaskedRowsAreZero) {
    for (int64_t NQ : {4, 40}) {
        const Attn c{32, 32, NQ, 130, 2, 1, 1, 1, GGML_TYPE_F16, GGML_TYPE_F16, 3, 0.0f, 0.0f};
        run_all_threads(
            [&](ggml_context * ctx, Rng & rng) { return build_attention(ctx, rng, c, false); }, describe(c),
            [&](const Result & r) {
                for (int64_t t = 1; t < NQ; t += 3)
                    for (int64_t i = 0; i < c.H * c.Dv; ++i)
                        ASSERT_EQ(r.actual[static_cast<size_t>(t * c.H * c.Dv + i)], 0.0) << "row " << t;
                EXPECT_LE(ggx::ref::nmse(r.actual, r.expected), kAttentionBound);
            });
    }
}

TEST(CpuFlashAttn, SupportsExactlyTheDocumentedTypes) {
    std::unique_ptr<ggml_context, ContextDeleter> ctx(ggml_init({1u << 20, nullptr, true}));
    const ggx::cpu::Kernel & kernel = ggx::cpu::kernels::flash_attn_ext;
    for (ggml_type kt : {GGML_TYPE_F32, GGML_TYPE_F16})
        for (ggml_type vt : {GGML_TYPE_F32, GGML_TYPE_F16})
            for (ggml_type mt : {GGML_TYPE_F32, GGML_TYPE_F16}) {
                ggml_tensor * q = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, 64, 8, 4, 1);
                ggml_tensor * k = ggml_new_tensor_4d(ctx.get(), kt, 64, 32, 2, 1);
                ggml_tensor * v = ggml_new_tensor_4d(ctx.get(), vt, 64, 32, 2, 1);
                ggml_tensor * m = ggml_new_tensor_4d(ctx.get(), mt, 32, 8, 1, 1);
                ggml_tensor * out = ggml_flash_attn_ext(ctx.get(), q, k, v, m, 0.125f, 0.0f, 0.0f);
                ASSERT_NE(out, nullptr);
                EXPECT_TRUE(kernel.supports(kernel, nullptr, out));
                ggml_tensor * no_mask = ggml_flash_attn_ext(ctx.get(), q, k, v, nullptr, 0.125f, 0.0f, 0.0f);
                EXPECT_TRUE(kernel.supports(kernel, nullptr, no_mask));
                for (ggml_type bad : {GGML_TYPE_BF16, GGML_TYPE_Q8_0}) {
                    const ggml_type saved = k->type;
                    k->type = bad;
                    EXPECT_FALSE(kernel.supports(kernel, nullptr, out));
                    k->type = saved;
                    q->type = bad;
                    EXPECT_FALSE(kernel.supports(kernel, nullptr, out));
                    q->type = GGML_TYPE_F32;
                    m->type = bad;
                    EXPECT_FALSE(kernel.supports(kernel, nullptr, out));
                    m->type = mt;
                }
            }
}

TEST(CpuFlashAttn, Aborts) {
    std::unique_ptr<ggml_context, ContextDeleter> ctx(ggml_init({64u << 20, nullptr, false}));
    Rng rng(kSeed);
    SCOPED_TRACE(rng.trace());
    const Attn c{128, 128, 2048, 2048, 2, 2, 1, 1, GGML_TYPE_F16, GGML_TYPE_F16, 0, 0.0f, 0.0f};
    ggml_tensor * out = build_attention(ctx.get(), rng, c, false);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, out);
    std::atomic<int> calls{0};
    ggml_backend_cpu_set_n_threads(cpu_backend(), 2);
    ggml_backend_cpu_set_abort_callback(
        cpu_backend(), [](void * data) { return static_cast<std::atomic<int> *>(data)->fetch_add(1) >= 0; },
        &calls);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(ggml_backend_graph_compute(cpu_backend(), graph), GGML_STATUS_ABORTED);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ggml_backend_cpu_set_abort_callback(cpu_backend(), nullptr, nullptr);
    EXPECT_GE(calls.load(), 1);
    EXPECT_LT(seconds, 1.0);  // the whole computation takes several times longer
}

}  // namespace
