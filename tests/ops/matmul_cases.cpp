// ggx-ops case table: MUL_MAT for every weight dtype (F32, F16, BF16, Q8_0, Q4_0) times every
// activation dtype, odd and empty sizes, broadcasting over dims 2 and 3, and transposed, permuted
// and strided operands.
#include <span>

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
    const auto layouts =
        block ? std::span<const LayoutPair>(kBlockLayouts) : std::span<const LayoutPair>(kFloatLayouts);
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
    for (ggml_type ta : kWeightTypes) {
        for (int64_t n : {1, 8, 512}) {
            list.add_perf(GGML_OP_MUL_MAT, "perf " + str(ta) + " m=4096 k=14336 n=" + std::to_string(n),
                          2.0 * static_cast<double>(m * n * k), [=](Graph & g) {
                              ggml_tensor * a = g.input(ta, {k, m, 1, 1});
                              return ggml_mul_mat(g.ctx(), a, g.input(GGML_TYPE_F32, {k, n, 1, 1}));
                          });
        }
    }
}

}  // namespace

void add_matmul_cases(CaseList & list) {
    for (ggml_type ta : kWeightTypes) {
        for (ggml_type tb : kFloatTypes)
            add_type_pair(list, ta, tb);
    }
    add_perf_cases(list);
}

}  // namespace ggx::ops
