// CPU kernels of the normalisation, softmax, rope, indexing and im2col families, compared with the
// double-precision oracle (tests/reference) on every accepted dtype, strided and permuted inputs,
// odd sizes and 1..3 threads.
//
// NMSE bounds (nmse = sum (got - want)^2 / sum want^2):
//  - NORM / RMS_NORM / L2_NORM / GROUP_NORM: statistics in double, one F32 rounding of the mean
//    split (hi + lo) and of the scale, then ~3 F32 operations per element: per-element relative
//    error <= ~4 * 2^-24, so nmse <= ~1e-13; the bound is 1e-12.
//  - SOFT_MAX: the F32 argument a*scale + slope*mask carries |v| * 2^-24 absolute error, which exp
//    turns into relative error; |v| <= ~20 here, plus Highway's Exp (~1 ulp) and the F32
//    normalisation: relative error ~1e-6 at worst, so nmse <= 1e-10.
//  - ROPE F32: angles in double, cos/sin rounded to F32 and a 2-term F32 rotation: nmse <= 1e-12.
//    F16: the oracle rounds its double result to F16 too, so only results whose F32 value lands on
//    the other side of an F16 rounding boundary differ, by one F16 ulp (<= 2^-10 relative); even if
//    every element flipped, nmse <= 2^-20 ~ 1e-6, and flips are rare in practice (measured ~5e-10).
//  - GET_ROWS, SET_ROWS, IM2COL: copies and conversions with the library's own rounding and
//    (de)quantization, exactly what the oracle does: nmse == 0.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "reference/reference.h"

namespace {

using Rng = std::mt19937;
using Shape = std::array<int64_t, 4>;
using Build = std::function<ggml_tensor *(ggml_context *, Rng &)>;
constexpr double kInf = std::numeric_limits<double>::infinity();

struct ContextDeleter {
    void operator()(ggml_context * ctx) const { ggml_free(ctx); }
};
using Context = std::unique_ptr<ggml_context, ContextDeleter>;

ggml_backend_t backend() {
    static ggml_backend_t cpu = ggml_backend_cpu_init();
    return cpu;
}

Context host_context() { return Context(ggml_init({64 << 20, nullptr, false})); }

std::vector<double> uniform(Rng & rng, int64_t n, double lo, double hi) {
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> v(static_cast<size_t>(n));
    for (double & x : v)
        x = dist(rng);
    return v;
}

// A contiguous tensor of random values in [lo, hi).
ggml_tensor * random_tensor(ggml_context * ctx, ggml_type type, Shape ne, Rng & rng, double lo = -1.0,
                            double hi = 1.0) {
    ggml_tensor * t = ggml_new_tensor(ctx, type, 4, ne.data());
    if (t) ggx::ref::write_tensor(t, uniform(rng, ggml_nelements(t), lo, hi));
    return t;
}

// Random values with dims 0 and 1 stored swapped: nb[0] is a whole row of the storage.
ggml_tensor * transposed_tensor(ggml_context * ctx, ggml_type type, Shape ne, Rng & rng, double lo = -1.0,
                                double hi = 1.0) {
    return ggml_transpose(ctx, random_tensor(ctx, type, {ne[1], ne[0], ne[2], ne[3]}, rng, lo, hi));
}

// Random values in dense rows with a gap of pad elements after each row (and an offset of pad).
ggml_tensor * gapped_tensor(ggml_context * ctx, ggml_type type, Shape ne, Rng & rng, int64_t pad = 3,
                            double lo = -1.0, double hi = 1.0) {
    ggml_tensor * t = random_tensor(ctx, type, {ne[0] + 2 * pad, ne[1], ne[2], ne[3]}, rng, lo, hi);
    return ggml_view_4d(ctx, t, ne[0], ne[1], ne[2], ne[3], t->nb[1], t->nb[2], t->nb[3],
                        ggml_row_size(type, pad));
}

// I32 indices in [0, rows).
ggml_tensor * index_tensor(ggml_context * ctx, Shape ne, int64_t rows, Rng & rng) {
    ggml_tensor * t = ggml_new_tensor(ctx, GGML_TYPE_I32, 4, ne.data());
    std::uniform_int_distribution<int64_t> dist(0, rows - 1);
    std::vector<double> v(static_cast<size_t>(ggml_nelements(t)));
    for (double & x : v)
        x = static_cast<double>(dist(rng));
    ggx::ref::write_tensor(t, v);
    return t;
}

ggml_tensor * values_tensor(ggml_context * ctx, ggml_type type, Shape ne, const std::vector<double> & v) {
    ggml_tensor * t = ggml_new_tensor(ctx, type, 4, ne.data());
    ggx::ref::write_tensor(t, v);
    return t;
}

struct Result {
    std::vector<double> got, want;
};

// Builds the graph of build (same seed each time), evaluates the oracle first (in-place ops and
// SET_ROWS overwrite their inputs), then computes it on the CPU backend with n_threads threads.
Result run(const Build & build, int n_threads, uint32_t seed) {
    Context ctx = host_context();
    Rng rng(seed);
    ggml_tensor * out = build(ctx.get(), rng);
    EXPECT_NE(out, nullptr) << ggml_get_error(ctx.get());
    if (!out) return {};
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, out);
    ggx::ref::Evaluator oracle;
    oracle.compute(graph);
    Result r{{}, oracle.values(out)};
    ggml_backend_cpu_set_n_threads(backend(), n_threads);
    EXPECT_EQ(ggml_backend_graph_compute(backend(), graph), GGML_STATUS_SUCCESS)
        << ggml_backend_get_last_error();
    r.got = ggx::ref::read_tensor(out);
    return r;
}

// The CPU result of build matches the oracle within bound (0: exactly) with 1, 2 and 3 threads.
void expect_matches(const Build & build, double bound, uint32_t seed = 42) {
    for (int n_threads = 1; n_threads <= 3; ++n_threads) {
        const Result r = run(build, n_threads, seed);
        ASSERT_EQ(r.got.size(), r.want.size());
        const double error = ggx::ref::nmse(r.got, r.want);
        if (bound == 0.0) {
            EXPECT_EQ(error, 0.0) << n_threads << " threads";
        } else {
            EXPECT_LE(error, bound) << n_threads << " threads";
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Normalisation

constexpr double kNormBound = 1e-12;

using RowNorm = ggml_tensor * (*)(ggml_context *, ggml_tensor *, float);

struct RowNormCase {
    const char * name;
    RowNorm op;
};

class RowNorms : public testing::TestWithParam<RowNormCase> {};

TEST_P(RowNorms, ContiguousOddSizes) {
    for (int64_t n : {1, 7, 33, 100, 4097}) {
        SCOPED_TRACE(n);
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return GetParam().op(ctx, random_tensor(ctx, GGML_TYPE_F32, {n, 5, 2, 3}, rng, -2.0, 3.0),
                                     1e-5f);
            },
            kNormBound);
    }
}

TEST_P(RowNorms, TransposedAndGappedInputs) {
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            return GetParam().op(ctx, transposed_tensor(ctx, GGML_TYPE_F32, {37, 6, 3, 2}, rng), 1e-6f);
        },
        kNormBound);
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            return GetParam().op(ctx, gapped_tensor(ctx, GGML_TYPE_F32, {129, 4, 3, 1}, rng), 1e-6f);
        },
        kNormBound);
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            ggml_tensor * a = random_tensor(ctx, GGML_TYPE_F32, {19, 3, 4, 2}, rng);
            return GetParam().op(ctx, ggml_permute(ctx, a, 0, 2, 3, 1), 0.0f);
        },
        kNormBound);
}

// Rows far from zero: the mean is subtracted in double precision (the F32 mean alone would leave
// |mean| * 2^-24 / sigma of error in every result).
TEST_P(RowNorms, LargeOffsetAndLargeEps) {
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            return GetParam().op(ctx, random_tensor(ctx, GGML_TYPE_F32, {300, 8, 1, 1}, rng, 1000.0, 1001.0),
                                 1e-5f);
        },
        kNormBound);
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            return GetParam().op(ctx, random_tensor(ctx, GGML_TYPE_F32, {64, 8, 1, 1}, rng, -1e-3, 1e-3),
                                 0.5f);
        },
        kNormBound);
}

TEST_P(RowNorms, AllZeroRowsStayZero) {
    expect_matches(
        [&](ggml_context * ctx, Rng &) {
            return GetParam().op(
                ctx, values_tensor(ctx, GGML_TYPE_F32, {16, 2, 1, 1}, std::vector<double>(32, 0.0)), 1e-5f);
        },
        0.0);
}

INSTANTIATE_TEST_SUITE_P(Cpu, RowNorms,
                         testing::Values(RowNormCase{"norm", ggml_norm},
                                         RowNormCase{"rms_norm", ggml_rms_norm},
                                         RowNormCase{"l2_norm", ggml_l2_norm}),
                         [](const auto & param_info) { return std::string(param_info.param.name); });

TEST(InPlaceNorms, WriteOverTheirInput) {
    for (RowNorm op : {ggml_norm_inplace, ggml_rms_norm_inplace}) {
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return op(ctx, random_tensor(ctx, GGML_TYPE_F32, {65, 7, 2, 1}, rng), 1e-5f);
            },
            kNormBound);
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return op(ctx, transposed_tensor(ctx, GGML_TYPE_F32, {21, 9, 1, 2}, rng), 1e-5f);
            },
            kNormBound);
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return op(ctx, gapped_tensor(ctx, GGML_TYPE_F32, {40, 3, 2, 1}, rng), 1e-5f);
            },
            kNormBound);
    }
}

TEST(GroupNorm, GroupsOfCeilChannelsWithASmallerLastGroup) {
    struct Case {
        Shape ne;
        int groups;
    };
    // C = 10, G = 4: groups of 3, 3, 3, 1. C = 10, G = 6: groups of 2 (five of them). C = G.
    for (const Case & c : {Case{{5, 3, 10, 2}, 4}, Case{{5, 3, 10, 2}, 6}, Case{{7, 1, 8, 3}, 8},
                           Case{{16, 16, 32, 1}, 1}, Case{{3, 5, 9, 2}, 3}}) {
        SCOPED_TRACE(c.groups);
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_group_norm(ctx, random_tensor(ctx, GGML_TYPE_F32, c.ne, rng, 5.0, 7.0), c.groups,
                                       1e-6f);
            },
            kNormBound);
    }
}

TEST(GroupNorm, StridedInputs) {
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            return ggml_group_norm(ctx, transposed_tensor(ctx, GGML_TYPE_F32, {6, 5, 12, 2}, rng), 5, 1e-5f);
        },
        kNormBound);
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            ggml_tensor * a = random_tensor(ctx, GGML_TYPE_F32, {7, 6, 2, 5}, rng);
            return ggml_group_norm(ctx, ggml_permute(ctx, a, 0, 1, 3, 2), 2, 1e-5f);  // [7, 6, 5, 2]
        },
        kNormBound);
}

// ---------------------------------------------------------------------------------------------
// Softmax

constexpr double kSoftMaxBound = 1e-10;

// A mask of random values in [-2, 2) with about a quarter of the entries -inf (never a whole row:
// entry 0 of each row is finite).
ggml_tensor * mask_tensor(ggml_context * ctx, ggml_type type, Shape ne, Rng & rng) {
    std::vector<double> v = uniform(rng, ne[0] * ne[1] * ne[2] * ne[3], -2.0, 2.0);
    std::bernoulli_distribution masked(0.25);
    for (size_t i = 0; i < v.size(); ++i)
        if (i % static_cast<size_t>(ne[0]) != 0 && masked(rng)) v[i] = -kInf;
    return values_tensor(ctx, type, ne, v);
}

TEST(SoftMax, PlainRowsOfOddSizes) {
    for (int64_t n : {1, 5, 16, 33, 1000}) {
        SCOPED_TRACE(n);
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                return ggml_soft_max(ctx, random_tensor(ctx, GGML_TYPE_F32, {n, 7, 3, 2}, rng, -8.0, 8.0));
            },
            kSoftMaxBound);
    }
}

TEST(SoftMax, StridedInputsAndInPlace) {
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            return ggml_soft_max(ctx, transposed_tensor(ctx, GGML_TYPE_F32, {35, 6, 2, 2}, rng, -5.0, 5.0));
        },
        kSoftMaxBound);
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            return ggml_soft_max_inplace(ctx,
                                         random_tensor(ctx, GGML_TYPE_F32, {70, 6, 2, 1}, rng, -5.0, 5.0));
        },
        kSoftMaxBound);
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            return ggml_soft_max_inplace(
                ctx, transposed_tensor(ctx, GGML_TYPE_F32, {23, 4, 3, 1}, rng, -5.0, 5.0));
        },
        kSoftMaxBound);
}

TEST(SoftMax, MasksOfBothTypesBroadcastAndScaled) {
    for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16}) {
        SCOPED_TRACE(ggml_type_name(type));
        // Mask with more rows than a, broadcast over all of a's dims 2 and 3.
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                ggml_tensor * a = random_tensor(ctx, GGML_TYPE_F32, {37, 5, 4, 2}, rng, -4.0, 4.0);
                return ggml_soft_max_ext(ctx, a, mask_tensor(ctx, type, {37, 8, 1, 1}, rng), 0.7f, 0.0f);
            },
            kSoftMaxBound);
        // Mask tiled by modulo over dims 2 and 3, strided mask rows, strided a.
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                ggml_tensor * a = transposed_tensor(ctx, GGML_TYPE_F32, {19, 3, 4, 4}, rng, -4.0, 4.0);
                ggml_tensor * mask = ggml_view_4d(ctx, mask_tensor(ctx, type, {40, 3, 2, 2}, rng), 19, 3, 2,
                                                  2, 40 * ggml_type_size(type), 120 * ggml_type_size(type),
                                                  240 * ggml_type_size(type), 0);
                return ggml_soft_max_ext(ctx, a, mask, 1.3f, 0.0f);
            },
            kSoftMaxBound);
    }
}

TEST(SoftMax, AlibiSlopesForPowerOfTwoAndOtherHeadCounts) {
    for (int64_t heads : {1, 4, 6, 12}) {
        SCOPED_TRACE(heads);
        for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16}) {
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    ggml_tensor * a = random_tensor(ctx, GGML_TYPE_F32, {24, 6, heads, 2}, rng, -3.0, 3.0);
                    return ggml_soft_max_ext(ctx, a, mask_tensor(ctx, type, {24, 6, 1, 1}, rng), 0.125f,
                                             8.0f);
                },
                kSoftMaxBound);
        }
    }
}

// Rows whose values are all -inf (fully masked) give zeros, where the exact formula gives 0/0;
// the oracle yields NaN there, so those rows are checked separately.
TEST(SoftMax, FullyMaskedRowsAreZero) {
    const int64_t n = 9, rows = 4;
    for (int n_threads = 1; n_threads <= 3; ++n_threads) {
        const Result r = run(
            [&](ggml_context * ctx, Rng & rng) {
                std::vector<double> m = uniform(rng, n * rows, -1.0, 1.0);
                std::fill(m.begin() + n, m.begin() + 2 * n, -kInf);  // row 1
                ggml_tensor * a = random_tensor(ctx, GGML_TYPE_F32, {n, rows, 1, 1}, rng);
                return ggml_soft_max_ext(ctx, a, values_tensor(ctx, GGML_TYPE_F16, {n, rows, 1, 1}, m), 1.0f,
                                         0.0f);
            },
            n_threads, 7);
        ASSERT_EQ(r.got.size(), static_cast<size_t>(n * rows));
        std::vector<double> got = r.got, want = r.want;
        for (int64_t i = n; i < 2 * n; ++i) {
            EXPECT_EQ(got[i], 0.0);
            got[i] = want[i] = 0.0;
        }
        EXPECT_LE(ggx::ref::nmse(got, want), kSoftMaxBound);
    }
}

// A NaN, or +inf (inf - inf), anywhere in a row makes the whole row NaN; other rows are unaffected.
TEST(SoftMax, NaNAndInfinityPropagateToTheirRow) {
    const int64_t n = 40, rows = 3;
    const Result r = run(
        [&](ggml_context * ctx, Rng & rng) {
            std::vector<double> v = uniform(rng, n * rows, -1.0, 1.0);
            v[17] = std::numeric_limits<double>::quiet_NaN();  // row 0
            v[n + 33] = kInf;                                  // row 1
            return ggml_soft_max(ctx, values_tensor(ctx, GGML_TYPE_F32, {n, rows, 1, 1}, v));
        },
        2, 3);
    ASSERT_EQ(r.got.size(), static_cast<size_t>(n * rows));
    for (int64_t i = 0; i < 2 * n; ++i)
        EXPECT_TRUE(std::isnan(r.got[i])) << i;
    double sum = 0.0;
    for (int64_t i = 2 * n; i < 3 * n; ++i)
        sum += r.got[i];
    EXPECT_NEAR(sum, 1.0, 1e-6);
    EXPECT_LE(ggx::ref::nmse(r.got, r.want), kSoftMaxBound);  // NaN positions agree and are skipped
}

// ---------------------------------------------------------------------------------------------
// The Highway kernels (norms, softmax) on every SIMD target this machine runs, with sizes around
// the 4-, 8- and 16-lane widths so that every tail path is taken.

TEST(SimdTargets, NormsAndSoftMaxOnEveryTarget) {
    for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
        SCOPED_TRACE(hwy::TargetName(target));
        hwy::SetSupportedTargetsForTest(target);
        for (int64_t n : {1, 3, 9, 17, 31, 67}) {
            SCOPED_TRACE(n);
            for (RowNorm op : {ggml_norm, ggml_rms_norm, ggml_l2_norm}) {
                expect_matches(
                    [&](ggml_context * ctx, Rng & rng) {
                        return op(ctx, random_tensor(ctx, GGML_TYPE_F32, {n, 3, 2, 1}, rng, 10.0, 12.0),
                                  1e-5f);
                    },
                    kNormBound);
            }
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    return ggml_group_norm(ctx, random_tensor(ctx, GGML_TYPE_F32, {n, 2, 5, 2}, rng), 2,
                                           1e-5f);
                },
                kNormBound);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    ggml_tensor * a = random_tensor(ctx, GGML_TYPE_F32, {n, 4, 3, 1}, rng, -6.0, 6.0);
                    return ggml_soft_max_ext(ctx, a, mask_tensor(ctx, GGML_TYPE_F16, {n, 4, 1, 1}, rng), 0.5f,
                                             4.0f);
                },
                kSoftMaxBound);
        }
    }
    hwy::SetSupportedTargetsForTest(0);  // back to the best target
}

// The gradients (RMS_NORM_BACK, SOFT_MAX_BACK) and softmax sinks on every SIMD target.
TEST(SimdTargets, GradientsAndSinksOnEveryTarget) {
    for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
        SCOPED_TRACE(hwy::TargetName(target));
        hwy::SetSupportedTargetsForTest(target);
        for (int64_t n : {1, 3, 9, 17, 31, 67}) {
            SCOPED_TRACE(n);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    ggml_tensor * dy = random_tensor(ctx, GGML_TYPE_F32, {n, 3, 2, 1}, rng);
                    return ggml_rms_norm_back(ctx, dy, random_tensor(ctx, GGML_TYPE_F32, {n, 3, 2, 1}, rng),
                                              1e-5f);
                },
                kNormBound);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    ggml_tensor * dy = random_tensor(ctx, GGML_TYPE_F32, {n, 4, 3, 1}, rng);
                    ggml_tensor * y = random_tensor(ctx, GGML_TYPE_F32, {n, 4, 3, 1}, rng, 0.0, 1.0);
                    return ggml_soft_max_ext_back(ctx, dy, y, 0.5f, 0.0f);
                },
                kSoftMaxBound);
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    ggml_tensor * a = random_tensor(ctx, GGML_TYPE_F32, {n, 4, 3, 1}, rng, -6.0, 6.0);
                    ggml_tensor * r = ggml_soft_max_ext(ctx, a, nullptr, 0.5f, 0.0f);
                    ggml_soft_max_add_sinks(r,
                                            random_tensor(ctx, GGML_TYPE_F32, {3, 1, 1, 1}, rng, -3.0, 3.0));
                    return r;
                },
                kSoftMaxBound);
        }
    }
    hwy::SetSupportedTargetsForTest(0);  // back to the best target
}

// ---------------------------------------------------------------------------------------------
// Rope

struct RopeCase {
    const char * name;
    int mode;
    int64_t head_dim;
    int n_dims;
    float freq_scale, ext_factor, attn_factor;
    bool freq_factors;
};

class Rope : public testing::TestWithParam<std::tuple<RopeCase, ggml_type>> {};

ggml_tensor * positions(ggml_context * ctx, int64_t n, Rng & rng) {
    std::vector<double> v = uniform(rng, n, 0.0, 5000.0);
    for (double & x : v)
        x = std::floor(x);
    v[0] = 0.0;
    return values_tensor(ctx, GGML_TYPE_I32, {n, 1, 1, 1}, v);
}

Build rope_graph(const RopeCase & c, ggml_type type, bool strided) {
    return [=](ggml_context * ctx, Rng & rng) {
        const int64_t heads = 3, tokens = 5, batch = 2;
        // Strided: a [D, T, H, B] permuted to [D, H, T, B].
        ggml_tensor * a =
            strided ? ggml_permute(ctx, random_tensor(ctx, type, {c.head_dim, tokens, heads, batch}, rng), 0,
                                   2, 1, 3)
                    : random_tensor(ctx, type, {c.head_dim, heads, tokens, batch}, rng);
        ggml_tensor * ff = c.freq_factors
                               ? random_tensor(ctx, GGML_TYPE_F32, {c.n_dims / 2 + 1, 1, 1, 1}, rng, 1.0, 4.0)
                               : nullptr;
        return ggml_rope_ext(ctx, a, positions(ctx, tokens, rng), ff, c.n_dims, c.mode, 4096, 10000.0f,
                             c.freq_scale, c.ext_factor, c.attn_factor, 32.0f, 1.0f);
    };
}

TEST_P(Rope, MatchesTheOracle) {
    const auto & [c, type] = GetParam();
    const double bound = type == GGML_TYPE_F32 ? 1e-12 : 1e-6;
    expect_matches(rope_graph(c, type, false), bound);
    expect_matches(rope_graph(c, type, true), bound);
}

// ROPE_BACK, rotation offsets and the multi-axis modes (four positions per token) on every SIMD target.
TEST(RopeForms, BackOffsetsAndMultiAxisModesOnEveryTarget) {
    struct Form {
        ggml_op op;
        int mode, n_dims, offset;
        int sections[GGML_MROPE_SECTIONS];
    };
    const Form forms[] = {{GGML_OP_ROPE_BACK, GGML_ROPE_TYPE_NORMAL, 16, 0, {}},
                          {GGML_OP_ROPE_BACK, GGML_ROPE_TYPE_NEOX, 10, 6, {}},
                          {GGML_OP_ROPE, GGML_ROPE_TYPE_NORMAL, 12, 8, {}},
                          {GGML_OP_ROPE, GGML_ROPE_TYPE_MROPE, 16, 0, {3, 2, 2, 1}},
                          {GGML_OP_ROPE_BACK, GGML_ROPE_TYPE_IMROPE, 20, 0, {4, 3, 3, 0}},
                          {GGML_OP_ROPE, GGML_ROPE_TYPE_VISION, 10, 0, {3, 2, 0, 0}}};
    for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
        SCOPED_TRACE(hwy::TargetName(target));
        hwy::SetSupportedTargetsForTest(target);
        for (const Form & f : forms) {
            SCOPED_TRACE(std::string(ggml_op_name(f.op)) + " mode " + std::to_string(f.mode));
            expect_matches(
                [&](ggml_context * ctx, Rng & rng) {
                    const bool multi = f.sections[0] + f.sections[1] + f.sections[2] + f.sections[3] > 0;
                    const int64_t tokens = 5, head_dim = f.mode == GGML_ROPE_TYPE_VISION ? 2 * f.n_dims : 22;
                    ggml_tensor * a = random_tensor(ctx, GGML_TYPE_F32, {head_dim, 3, tokens, 2}, rng);
                    ggml_tensor * pos = positions(ctx, multi ? 4 * tokens : tokens, rng);
                    int sections[GGML_MROPE_SECTIONS];
                    std::copy(f.sections, f.sections + GGML_MROPE_SECTIONS, sections);
                    ggml_tensor * r = multi ? (f.op == GGML_OP_ROPE ? ggml_rope_multi : ggml_rope_multi_back)(
                                                  ctx, a, pos, nullptr, f.n_dims, sections, f.mode, 4096,
                                                  10000.0f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f)
                                            : (f.op == GGML_OP_ROPE ? ggml_rope_ext : ggml_rope_ext_back)(
                                                  ctx, a, pos, nullptr, f.n_dims, f.mode, 4096, 10000.0f,
                                                  0.5f, 1.0f, 1.0f, 32.0f, 1.0f);
                    return f.offset ? ggml_rope_set_offset(r, f.offset) : r;
                },
                1e-12);
        }
    }
    hwy::SetSupportedTargetsForTest(0);
}

INSTANTIATE_TEST_SUITE_P(
    Cpu, Rope,
    testing::Combine(
        testing::Values(
            RopeCase{"normal_full", GGML_ROPE_TYPE_NORMAL, 16, 16, 1.0f, 0.0f, 1.0f, false},
            RopeCase{"neox_full", GGML_ROPE_TYPE_NEOX, 16, 16, 1.0f, 0.0f, 1.0f, false},
            RopeCase{"normal_partial", GGML_ROPE_TYPE_NORMAL, 22, 10, 1.0f, 0.0f, 1.0f, false},
            RopeCase{"neox_partial", GGML_ROPE_TYPE_NEOX, 22, 10, 1.0f, 0.0f, 1.0f, false},
            RopeCase{"normal_linear_scaled", GGML_ROPE_TYPE_NORMAL, 8, 8, 0.25f, 0.0f, 0.8f, false},
            RopeCase{"normal_yarn", GGML_ROPE_TYPE_NORMAL, 64, 64, 0.25f, 1.0f, 1.0f, false},
            RopeCase{"neox_yarn_partial", GGML_ROPE_TYPE_NEOX, 40, 32, 0.125f, 0.5f, 0.9f, false},
            RopeCase{"normal_freq_factors", GGML_ROPE_TYPE_NORMAL, 12, 12, 1.0f, 0.0f, 1.0f, true},
            RopeCase{"neox_yarn_freq_factors", GGML_ROPE_TYPE_NEOX, 24, 20, 0.5f, 1.0f, 1.0f, true}),
        testing::Values(GGML_TYPE_F32, GGML_TYPE_F16)),
    [](const auto & param_info) {
        return std::string(std::get<0>(param_info.param).name) + "_" +
               ggml_type_name(std::get<1>(param_info.param));
    });

// ---------------------------------------------------------------------------------------------
// GET_ROWS / SET_ROWS

class GetRows : public testing::TestWithParam<ggml_type> {};

TEST_P(GetRows, PicksRowsPerBatch) {
    const ggml_type type = GetParam();
    const bool quantized = ggml_is_quantized(type);
    const int64_t width = quantized ? 64 : 13;
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            ggml_tensor * a = random_tensor(ctx, type, {width, 7, 3, 2}, rng, -100.0, 100.0);
            return ggml_get_rows(ctx, a, index_tensor(ctx, {11, 3, 2, 1}, 7, rng));
        },
        0.0);
    // Gapped rows of a and transposed indices [n, A2, 1].
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            ggml_tensor * a =
                gapped_tensor(ctx, type, {width, 5, 4, 1}, rng, quantized ? 32 : 3, -100.0, 100.0);
            ggml_tensor * idx = ggml_transpose(ctx, index_tensor(ctx, {4, 6, 1, 1}, 5, rng));
            return ggml_get_rows(ctx, a, idx);
        },
        0.0);
    if (!quantized) {
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                ggml_tensor * a = transposed_tensor(ctx, type, {9, 8, 2, 1}, rng, -100.0, 100.0);
                return ggml_get_rows(ctx, a, index_tensor(ctx, {12, 2, 1, 1}, 8, rng));
            },
            0.0);
    }
}

// I32 values beyond 2^24 are copied exactly, not through F32.
TEST(GetRowsI32, CopiesLargeValuesExactly) {
    const Result r = run(
        [](ggml_context * ctx, Rng &) {
            ggml_tensor * a =
                values_tensor(ctx, GGML_TYPE_I32, {2, 2, 1, 1}, {16777217.0, -2147483647.0, 5.0, 6.0});
            return ggml_get_rows(ctx, a, values_tensor(ctx, GGML_TYPE_I32, {3, 1, 1, 1}, {1.0, 0.0, 0.0}));
        },
        2, 1);
    EXPECT_EQ(r.got, (std::vector<double>{5.0, 6.0, 16777217.0, -2147483647.0, 16777217.0, -2147483647.0}));
}

INSTANTIATE_TEST_SUITE_P(Cpu, GetRows,
                         testing::Values(GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0,
                                         GGML_TYPE_Q4_0, GGML_TYPE_I32),
                         [](const auto & param_info) {
                             return std::string(ggml_type_name(param_info.param));
                         });

class SetRows : public testing::TestWithParam<ggml_type> {};

TEST_P(SetRows, WritesRowsWithBroadcastIndices) {
    const ggml_type type = GetParam();
    const bool quantized = ggml_is_quantized(type);
    const int64_t width = quantized ? 64 : 13;
    // idx [n, C2, C3] tiled over b's dims 2 and 3; indices may repeat (the last row written wins).
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            ggml_tensor * a = random_tensor(ctx, type, {width, 9, 4, 2}, rng, -3.0, 3.0);
            ggml_tensor * b = random_tensor(ctx, GGML_TYPE_F32, {width, 5, 4, 2}, rng, -3.0, 3.0);
            return ggml_set_rows(ctx, a, b, index_tensor(ctx, {5, 2, 1, 1}, 9, rng));
        },
        0.0);
    // Strided b (transposed) into a gapped view of the destination.
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            ggml_tensor * a = gapped_tensor(ctx, type, {width, 6, 2, 1}, rng, quantized ? 32 : 2, -3.0, 3.0);
            ggml_tensor * b = transposed_tensor(ctx, GGML_TYPE_F32, {width, 4, 2, 1}, rng, -3.0, 3.0);
            return ggml_set_rows(ctx, a, b, index_tensor(ctx, {4, 2, 1, 1}, 6, rng));
        },
        0.0);
}

INSTANTIATE_TEST_SUITE_P(Cpu, SetRows,
                         testing::Values(GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0,
                                         GGML_TYPE_Q4_0),
                         [](const auto & param_info) {
                             return std::string(ggml_type_name(param_info.param));
                         });

TEST(SetRowsDuplicates, TheLastSourceRowWins) {
    for (int n_threads = 1; n_threads <= 3; ++n_threads) {
        const Result r = run(
            [](ggml_context * ctx, Rng &) {
                ggml_tensor * a =
                    values_tensor(ctx, GGML_TYPE_F32, {2, 3, 1, 1}, std::vector<double>(6, 0.0));
                ggml_tensor * b = values_tensor(ctx, GGML_TYPE_F32, {2, 3, 1, 1}, {1, 2, 3, 4, 5, 6});
                return ggml_set_rows(ctx, a, b, values_tensor(ctx, GGML_TYPE_I32, {3, 1, 1, 1}, {2, 2, 0}));
            },
            n_threads, 1);
        EXPECT_EQ(r.got, (std::vector<double>{5, 6, 0, 0, 3, 4}));
    }
}

// An index outside [0, R) fails the graph with a message naming the node; nothing is read or
// written out of bounds (the sanitizer build checks that).
TEST(IndexErrors, OutOfRangeIndicesFailTheNode) {
    for (int n_threads = 1; n_threads <= 3; ++n_threads) {
        for (bool set : {false, true}) {
            SCOPED_TRACE(set ? "set_rows" : "get_rows");
            Context ctx = host_context();
            Rng rng(5);
            ggml_tensor * a = random_tensor(ctx.get(), GGML_TYPE_F32, {4, 5, 1, 1}, rng);
            ggml_tensor * idx =
                values_tensor(ctx.get(), GGML_TYPE_I32, {3, 1, 1, 1}, {1.0, set ? -1.0 : 7.0, 2.0});
            ggml_tensor * out =
                set ? ggml_set_rows(ctx.get(), a, random_tensor(ctx.get(), GGML_TYPE_F32, {4, 3, 1, 1}, rng),
                                    idx)
                    : ggml_get_rows(ctx.get(), a, idx);
            ASSERT_NE(out, nullptr);
            ggml_set_name(out, "picked_rows");
            ggml_cgraph * graph = ggml_new_graph(ctx.get());
            ggml_build_forward_expand(graph, out);
            ggml_backend_cpu_set_n_threads(backend(), n_threads);
            EXPECT_EQ(ggml_backend_graph_compute(backend(), graph), GGML_STATUS_FAILED);
            const std::string error = ggml_backend_get_last_error();
            EXPECT_NE(error.find("picked_rows"), std::string::npos) << error;
            EXPECT_NE(error.find(set ? "index -1 out of range [0, 5)" : "index 7 out of range [0, 5)"),
                      std::string::npos)
                << error;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// IM2COL

struct Im2colCase {
    int s0, s1, p0, p1, d0, d1;
};

class Im2col : public testing::TestWithParam<std::tuple<ggml_type, ggml_type>> {};

ggml_tensor * zeros(ggml_context * ctx, ggml_type type, Shape ne) {
    return values_tensor(ctx, type, ne,
                         std::vector<double>(static_cast<size_t>(ne[0] * ne[1] * ne[2] * ne[3]), 0.0));
}

TEST_P(Im2col, TwoDimensional) {
    const ggml_type in_type = std::get<0>(GetParam()), out_type = std::get<1>(GetParam());
    for (const Im2colCase & c :
         {Im2colCase{1, 1, 0, 0, 1, 1}, Im2colCase{2, 1, 1, 2, 1, 2}, Im2colCase{3, 2, 2, 0, 2, 1}}) {
        SCOPED_TRACE(testing::Message() << c.s0 << c.s1 << c.p0 << c.p1 << c.d0 << c.d1);
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                ggml_tensor * kernel = zeros(ctx, GGML_TYPE_F16, {3, 2, 3, 4});
                ggml_tensor * x = random_tensor(ctx, in_type, {9, 7, 3, 2}, rng, -5.0, 5.0);
                return ggml_im2col(ctx, kernel, x, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1, true, out_type);
            },
            0.0);
    }
    // Strided input: [W, C, H, N] permuted to [W, H, C, N].
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            ggml_tensor * kernel = zeros(ctx, GGML_TYPE_F32, {2, 3, 4, 1});
            ggml_tensor * x =
                ggml_permute(ctx, random_tensor(ctx, in_type, {6, 4, 5, 2}, rng, -5.0, 5.0), 0, 2, 1, 3);
            return ggml_im2col(ctx, kernel, x, 1, 2, 1, 1, 2, 1, true, out_type);
        },
        0.0);
}

TEST_P(Im2col, OneDimensional) {
    const ggml_type in_type = std::get<0>(GetParam()), out_type = std::get<1>(GetParam());
    for (const Im2colCase & c : {Im2colCase{1, 1, 0, 0, 1, 1}, Im2colCase{2, 1, 3, 0, 2, 1}}) {
        expect_matches(
            [&](ggml_context * ctx, Rng & rng) {
                ggml_tensor * kernel = zeros(ctx, GGML_TYPE_F32, {4, 3, 2, 1});
                ggml_tensor * x = random_tensor(ctx, in_type, {11, 3, 2, 1}, rng, -5.0, 5.0);
                return ggml_im2col(ctx, kernel, x, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1, false, out_type);
            },
            0.0);
    }
    expect_matches(
        [&](ggml_context * ctx, Rng & rng) {
            ggml_tensor * kernel = zeros(ctx, GGML_TYPE_F32, {3, 4, 1, 1});
            ggml_tensor * x = transposed_tensor(ctx, in_type, {10, 4, 3, 1}, rng, -5.0, 5.0);
            return ggml_im2col(ctx, kernel, x, 2, 1, 1, 0, 1, 1, false, out_type);
        },
        0.0);
}

INSTANTIATE_TEST_SUITE_P(Cpu, Im2col,
                         testing::Combine(testing::Values(GGML_TYPE_F32, GGML_TYPE_F16),
                                          testing::Values(GGML_TYPE_F32, GGML_TYPE_F16)),
                         [](const auto & param_info) {
                             return std::string(ggml_type_name(std::get<0>(param_info.param))) + "_to_" +
                                    ggml_type_name(std::get<1>(param_info.param));
                         });

// ---------------------------------------------------------------------------------------------
// supports(): a node whose types the contract rejects is refused, never computed wrongly.

TEST(Supports, RejectsTypesOutsideTheContract) {
    Context ctx(ggml_init({1 << 20, nullptr, true}));
    ggml_backend_dev_t cpu = ggml_backend_get_device(backend());
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, 8, 4);
    ggml_tensor * pos = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_I32, 1);
    ggml_tensor * x = ggml_new_tensor_3d(ctx.get(), GGML_TYPE_F32, 8, 4, 1);
    ggml_tensor * nodes[] = {ggml_norm(ctx.get(), a, 1e-5f), ggml_rms_norm(ctx.get(), a, 1e-5f),
                             ggml_l2_norm(ctx.get(), a, 1e-5f), ggml_soft_max(ctx.get(), a),
                             ggml_rope_ext(ctx.get(), x, pos, nullptr, 8, 0, 0, 1e4f, 1, 0, 1, 32, 1)};
    for (ggml_tensor * node : nodes) {
        ASSERT_NE(node, nullptr) << ggml_get_error(ctx.get());
        EXPECT_TRUE(ggml_backend_dev_supports_op(cpu, node)) << ggml_op_name(node->op);
        node->type = GGML_TYPE_BF16;  // F32-only results (rope: a's type)
        EXPECT_FALSE(ggml_backend_dev_supports_op(cpu, node)) << ggml_op_name(node->op);
    }
    ggml_tensor * idx = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_I32, 2);
    ggml_tensor * rows = ggml_get_rows(ctx.get(), a, idx);
    ASSERT_NE(rows, nullptr);
    EXPECT_TRUE(ggml_backend_dev_supports_op(cpu, rows));
    idx->type = GGML_TYPE_F32;  // indices must be I32
    EXPECT_FALSE(ggml_backend_dev_supports_op(cpu, rows));
    idx->type = GGML_TYPE_I32;
    a->type = GGML_TYPE_I8;  // I8 sources are not accepted
    EXPECT_FALSE(ggml_backend_dev_supports_op(cpu, rows));
}

}  // namespace
