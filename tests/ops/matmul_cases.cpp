// ggx-ops case table: MUL_MAT, MUL_MAT_ID and OUT_PROD for every weight dtype (F32, F16, BF16, Q8_0,
// Q4_0; every other block format with fewer shapes) times every activation dtype, odd and empty sizes, broadcasting over dims 2 and 3 (MUL_MAT_ID:
// over the expert slots), transposed, permuted and strided operands, MUL_MAT with GGML_PREC_F32; perf
// cases for an FFN projection and for MoE expert products next to the equivalent dense products.
#include <span>
#include <vector>

#include "ggx-ops/case.h"

namespace ggx::ops {

namespace {

struct Dims {
    int64_t k, m, n;
};
const Dims kFloatDims[] = {{1, 1, 1},    {3, 7, 1},   {16, 16, 3}, {33, 5, 8},
                           {65, 33, 17}, {128, 7, 1}, {7, 0, 3},   {16, 4, 0}};
// K a multiple of the Q8_0/Q4_0 block.
const Dims kBlockDims[] = {{32, 1, 1},  {32, 7, 3},  {64, 16, 8}, {96, 33, 17},
                           {256, 7, 1}, {256, 5, 9}, {64, 0, 3}};
// Sizes past small-matrix shortcuts: long rows, many columns, tile remainders.
const Dims kLargeDims[] = {{256, 67, 33},  {1024, 16, 5}, {4096, 3, 2},
                           {128, 130, 70}, {512, 64, 64}, {320, 70, 250}};

// Mostly positive operands keep dot products away from zero, where a relative bound means little;
// results of fewer than 16 elements (no averaging) take positive operands.
const Gen kOperands = Gen::uniform(-0.5, 1.0);
const Gen kPositive = Gen::uniform(0.1, 1.0);

struct Batch {
    int64_t a2, a3, b2, b3;
};
const Batch kBatches[] = {{1, 1, 1, 1}, {1, 1, 2, 3}, {2, 1, 4, 3}, {2, 3, 2, 3}};

using LayoutPair = std::pair<Layout, Layout>;
const LayoutPair kFloatLayouts[] = {{Layout::Contiguous, Layout::Contiguous},
                                    {Layout::Transposed, Layout::Permuted},
                                    {Layout::Strided, Layout::Transposed},
                                    {Layout::Permuted, Layout::Strided}};
const LayoutPair kBlockLayouts[] = {{Layout::Contiguous, Layout::Contiguous},
                                    {Layout::Strided, Layout::Transposed},
                                    {Layout::Contiguous, Layout::Permuted},
                                    {Layout::Strided, Layout::Strided}};

std::span<const LayoutPair> layouts_of(ggml_type ta) {
    return ggml_is_quantized(ta) ? std::span<const LayoutPair>(kBlockLayouts)
                                 : std::span<const LayoutPair>(kFloatLayouts);
}

void add_case(CaseList & list, ggml_type ta, ggml_type tb, Dims d, Batch batch, LayoutPair layout) {
    const Shape a_ne = {d.k, d.m, batch.a2, batch.a3}, b_ne = {d.k, d.n, batch.b2, batch.b3};
    const Gen gen = d.m * d.n * batch.b2 * batch.b3 < 16 ? kPositive : kOperands;
    list.add(GGML_OP_MUL_MAT,
             str(ta) + "x" + str(tb) + " a=" + str(a_ne) + " b=" + str(b_ne) +
                 " a:" + layout_name(layout.first) + " b:" + layout_name(layout.second),
             [=](Graph & g) {
                 ggml_tensor * a = g.input(ta, a_ne, layout.first, gen);
                 return ggml_mul_mat(g.ctx(), a, g.input(tb, b_ne, layout.second, gen));
             });
}

// Every layout pair with the plain and the mixed batch; the other batches contiguous only.
void add_type_pair(CaseList & list, ggml_type ta, ggml_type tb) {
    const bool block = ggml_is_quantized(ta);
    const auto dims = block ? std::span<const Dims>(kBlockDims) : std::span<const Dims>(kFloatDims);
    const auto layouts = layouts_of(ta);
    for (const Dims & d : dims) {
        for (size_t b = 0; b < std::size(kBatches); ++b) {
            const bool all_layouts = b == 0 || b == 2;
            for (const LayoutPair & layout : all_layouts ? layouts : layouts.first(1)) {
                add_case(list, ta, tb, d, kBatches[b], layout);
            }
        }
    }
    for (const Dims & d : kLargeDims) {
        for (const LayoutPair & layout : layouts.first(2))
            add_case(list, ta, tb, d, kBatches[0], layout);
    }
}

// Perf: a 4096 x 14336 weight (an FFN projection) times 1, 8 and 512 activation columns.
void add_perf_cases(CaseList & list) {
    const int64_t m = 4096, k = 14336;
    std::vector<ggml_type> types(std::begin(kWeightTypes), std::end(kWeightTypes));
    types.insert(types.end(), more_block_types().begin(), more_block_types().end());
    for (ggml_type ta : types) {
        for (int64_t n : {1, 8, 512}) {
            list.add_perf(GGML_OP_MUL_MAT, "perf " + str(ta) + " m=4096 k=14336 n=" + std::to_string(n),
                          2.0 * static_cast<double>(m * n * k), [=](Graph & g) {
                              ggml_tensor * a = g.input(ta, {k, m, 1, 1});
                              return ggml_mul_mat(g.ctx(), a, g.input(GGML_TYPE_F32, {k, n, 1, 1}));
                          });
        }
    }
}

// MUL_MAT with GGML_PREC_F32 (quantized weights: no int8 rounding of the activations).
void add_prec_cases(CaseList & list) {
    for (ggml_type ta : kWeightTypes) {
        for (const Dims & d : {Dims{64, 33, 1}, Dims{256, 7, 3}, Dims{96, 40, 20}}) {
            const Shape a_ne = {d.k, d.m, 1, 1}, b_ne = {d.k, d.n, 1, 1};
            const std::string name = "prec f32 " + str(ta) + " a=" + str(a_ne) + " b=" + str(b_ne);
            list.add(GGML_OP_MUL_MAT, name, [=](Graph & g) {
                ggml_tensor * r = ggml_mul_mat(g.ctx(), g.input(ta, a_ne, Layout::Contiguous, kOperands),
                                               g.input(GGML_TYPE_F32, b_ne, Layout::Contiguous, kOperands));
                ggml_mul_mat_set_prec(r, GGML_PREC_F32);
                return r;
            });
        }
    }
}

// MUL_MAT_ID: as [K, M, n_as], b [K, n_b, T], ids [n_used, T]; the last shapes route more rows to
// an expert than one product takes.
struct Routed {
    int64_t k, m, n_as, n_used, n_b, t;
};
const Routed kRoutedFloat[] = {{1, 1, 1, 1, 1, 1},    {16, 8, 4, 2, 1, 3},    {33, 7, 3, 2, 2, 5},
                               {65, 33, 8, 4, 4, 17}, {128, 20, 6, 6, 1, 40}, {7, 0, 2, 1, 1, 2},
                               {16, 4, 2, 2, 1, 0},   {0, 5, 2, 2, 2, 3},     {16, 5, 2, 2, 1, 700}};
const Routed kRoutedBlock[] = {{32, 8, 4, 2, 1, 3},
                               {64, 16, 8, 4, 2, 9},
                               {96, 33, 4, 4, 4, 20},
                               {256, 40, 3, 2, 1, 64},
                               {32, 5, 2, 2, 2, 600}};

std::string routed_name(const Routed & r) {
    return format("K=%lld M=%lld experts=%lld used=%lld n_b=%lld T=%lld", static_cast<long long>(r.k),
                  static_cast<long long>(r.m), static_cast<long long>(r.n_as),
                  static_cast<long long>(r.n_used), static_cast<long long>(r.n_b),
                  static_cast<long long>(r.t));
}

ggml_tensor * routed_product(Graph & g, ggml_type ta, ggml_type tb, const Routed & r, LayoutPair layout,
                             Gen ids_gen) {
    ggml_tensor * as = g.input(ta, {r.k, r.m, r.n_as, 1}, layout.first, kOperands);
    ggml_tensor * b = g.input(tb, {r.k, r.n_b, r.t, 1}, layout.second, kOperands);
    ggml_tensor * ids = g.input(GGML_TYPE_I32, {r.n_used, r.t, 1, 1}, Layout::Contiguous, ids_gen);
    return ggml_mul_mat_id(g.ctx(), as, b, ids);
}

void add_mul_mat_id_cases(CaseList & list) {
    for (ggml_type ta : kWeightTypes) {
        const bool block = ggml_is_quantized(ta);
        const auto dims =
            block ? std::span<const Routed>(kRoutedBlock) : std::span<const Routed>(kRoutedFloat);
        const auto layouts = layouts_of(ta);
        for (ggml_type tb : kFloatTypes) {
            for (const Routed & r : dims) {
                // Distinct experts per token (as routers pick them) and repeats (allowed).
                for (const Gen & ids :
                     {Gen::distinct(r.n_as), Gen::integer(0, static_cast<double>(r.n_as))}) {
                    const bool distinct = ids.kind == Gen::Kind::Distinct;
                    for (const LayoutPair & layout : distinct ? layouts : layouts.first(1)) {
                        list.add(GGML_OP_MUL_MAT_ID,
                                 str(ta) + "x" + str(tb) + " " + routed_name(r) +
                                     (distinct ? " distinct" : " repeats") +
                                     " as:" + layout_name(layout.first) + " b:" + layout_name(layout.second),
                                 [=](Graph & g) { return routed_product(g, ta, tb, r, layout, ids); });
                    }
                }
            }
        }
    }
    // ids as a transposed view.
    list.add(GGML_OP_MUL_MAT_ID, "f32xf32 ids:transposed", [](Graph & g) {
        ggml_tensor * as = g.input(GGML_TYPE_F32, {24, 9, 5, 1}, Layout::Contiguous, kOperands);
        ggml_tensor * b = g.input(GGML_TYPE_F32, {24, 3, 4, 1}, Layout::Contiguous, kOperands);
        ggml_tensor * ids = g.input(GGML_TYPE_I32, {3, 4, 1, 1}, Layout::Transposed, Gen::integer(0, 5));
        return ggml_mul_mat_id(g.ctx(), as, b, ids);
    });
}

// OUT_PROD: a [M, N, A2, A3], b [P, N, B2, B3].
void add_out_prod_cases(CaseList & list) {
    const Dims kOuterFloat[] = {{1, 1, 1}, {7, 3, 5}, {16, 33, 8}, {65, 17, 40}, {5, 0, 3}, {0, 4, 3}};
    const Dims kOuterBlock[] = {{32, 5, 3}, {64, 17, 9}, {96, 40, 33}};
    for (ggml_type ta : kWeightTypes) {
        const bool block = ggml_is_quantized(ta);
        const auto dims = block ? std::span<const Dims>(kOuterBlock) : std::span<const Dims>(kOuterFloat);
        const auto layouts = layouts_of(ta);
        for (ggml_type tb : kFloatTypes) {
            for (const Dims & d : dims) {  // k: M, m: N (the summed dimension), n: P
                for (size_t bi = 0; bi < std::size(kBatches); ++bi) {
                    const Batch batch = kBatches[bi];
                    for (const LayoutPair & layout : bi == 0 ? layouts : layouts.first(1)) {
                        const Shape a_ne = {d.k, d.m, batch.a2, batch.a3},
                                    b_ne = {d.n, d.m, batch.b2, batch.b3};
                        list.add(GGML_OP_OUT_PROD,
                                 str(ta) + "x" + str(tb) + " a=" + str(a_ne) + " b=" + str(b_ne) +
                                     " a:" + layout_name(layout.first) + " b:" + layout_name(layout.second),
                                 [=](Graph & g) {
                                     return ggml_out_prod(g.ctx(), g.input(ta, a_ne, layout.first, kOperands),
                                                          g.input(tb, b_ne, layout.second, kOperands));
                                 });
                    }
                }
            }
        }
    }
}

// Perf: OUT_PROD as a weight gradient, dW [1024, 1024] = sum over 512 tokens of x dy^T, next to the
// MUL_MAT of the same size with the summed dimension innermost.
void add_out_prod_perf_cases(CaseList & list) {
    const int64_t m = 1024, p = 1024, n = 512;
    const double flops = 2.0 * static_cast<double>(m * p * n);
    for (ggml_type ta : {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_Q8_0}) {
        list.add_perf(GGML_OP_OUT_PROD, "perf " + str(ta) + " M=1024 P=1024 N=512", flops, [=](Graph & g) {
            return ggml_out_prod(g.ctx(), g.input(ta, {m, n, 1, 1}), g.input(GGML_TYPE_F32, {p, n, 1, 1}));
        });
        list.add_perf(
            GGML_OP_MUL_MAT, "perf out-prod-dense " + str(ta) + " M=1024 P=1024 N=512", flops,
            [=](Graph & g) {
                return ggml_mul_mat(g.ctx(), g.input(ta, {n, m, 1, 1}), g.input(GGML_TYPE_F32, {n, p, 1, 1}));
            });
    }
}

// Perf: a MoE layer's expert products (64 experts of [2048 -> 1408], 8 used per token) for one
// token and for a batch of 128, each next to the dense products of the same size: the used
// experts' matrix-vector products (one batch each), and the products of every expert with the
// rows a uniform router would give it (128 * 8 / 64 = 16).
void add_moe_perf_cases(CaseList & list) {
    const int64_t k = 2048, m = 1408, n_as = 64, n_used = 8;
    for (ggml_type ta : kWeightTypes) {
        for (int64_t t : {1, 128}) {
            const double flops = 2.0 * static_cast<double>(k * m * n_used * t);
            const std::string shape = format("%s K=2048 M=1408 experts=64 used=8 T=%lld", str(ta).c_str(),
                                             static_cast<long long>(t));
            list.add_perf(GGML_OP_MUL_MAT_ID, "perf moe " + shape, flops, [=](Graph & g) {
                return routed_product(g, ta, GGML_TYPE_F32, {k, m, n_as, n_used, 1, t},
                                      {Layout::Contiguous, Layout::Contiguous}, Gen::distinct(n_as));
            });
            const int64_t groups = t == 1 ? n_used : n_as, cols = n_used * t / groups;
            list.add_perf(GGML_OP_MUL_MAT, "perf moe-dense " + shape, flops, [=](Graph & g) {
                ggml_tensor * a = g.input(ta, {k, m, groups, 1});
                return ggml_mul_mat(g.ctx(), a, g.input(GGML_TYPE_F32, {k, cols, groups, 1}));
            });
        }
    }
}

// The other block formats: rows of kFormatRow elements and multiples, one-column, small-N and GEMM
// products, empty ones, broadcasts, strided and transposed operands, GGML_PREC_F32, one routed and
// one outer product each; the FFN perf shapes as for kWeightTypes.
void add_format_cases(CaseList & list) {
    const int64_t k = kFormatRow;
    const Dims dims[] = {{k, 7, 1}, {k, 5, 3}, {2 * k, 33, 17}, {k, 0, 3}};
    for (ggml_type ta : more_block_types()) {
        for (ggml_type tb : {GGML_TYPE_F32, GGML_TYPE_F16}) {
            for (const Dims & d : dims) {
                for (const LayoutPair & layout : std::span(kBlockLayouts).first(2))
                    add_case(list, ta, tb, d, kBatches[0], layout);
            }
            add_case(list, ta, tb, {k, 9, 2}, kBatches[2], kBlockLayouts[0]);
        }
        const std::string name = "prec f32 " + str(ta) + " a=" + str(Shape{k, 7, 1, 1});
        list.add(GGML_OP_MUL_MAT, name, [=](Graph & g) {
            ggml_tensor * r = ggml_mul_mat(g.ctx(), g.input(ta, {k, 7, 1, 1}, Layout::Contiguous, kOperands),
                                           g.input(GGML_TYPE_F32, {k, 3, 1, 1}, Layout::Contiguous, kOperands));
            ggml_mul_mat_set_prec(r, GGML_PREC_F32);
            return r;
        });
        const Routed routed = {k, 16, 4, 2, 1, 9};
        list.add(GGML_OP_MUL_MAT_ID, str(ta) + "xf32 " + routed_name(routed), [=](Graph & g) {
            return routed_product(g, ta, GGML_TYPE_F32, routed, kBlockLayouts[0], Gen::distinct(routed.n_as));
        });
        list.add(GGML_OP_OUT_PROD, str(ta) + "xf32 a=" + str(Shape{k, 17, 1, 1}), [=](Graph & g) {
            return ggml_out_prod(g.ctx(), g.input(ta, {k, 17, 1, 1}, Layout::Contiguous, kOperands),
                                 g.input(GGML_TYPE_F32, {9, 17, 1, 1}, Layout::Contiguous, kOperands));
        });
    }
}

}  // namespace

void add_matmul_cases(CaseList & list) {
    for (ggml_type ta : kWeightTypes) {
        for (ggml_type tb : kFloatTypes)
            add_type_pair(list, ta, tb);
    }
    add_format_cases(list);
    add_prec_cases(list);
    add_mul_mat_id_cases(list);
    add_out_prod_cases(list);
    add_perf_cases(list);
    add_moe_perf_cases(list);
    add_out_prod_perf_cases(list);
}

}  // namespace ggx::ops
