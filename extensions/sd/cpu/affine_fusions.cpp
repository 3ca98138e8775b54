// CPU affine fusions (ggml-extensions.md, the affine rules):
//   "sd.mul_add.cpu":        F32 Mul(gate) -> Add(residual), y = (x * gate) + residual;
//   "sd.concat_f16.cpu":     Concat -> [Permute] -> F16 copy;
//   "sd.cont_scale_f16.cpu": Contiguous -> Scale -> Permute -> F16 copy.
// Bit-identical to the unfused nodes: the product and the sum are separate F32 operations in the
// operands' order (this file is compiled with -ffp-contract=off), Scale is the native kernel's one
// MulAdd per element on the same Highway target, Concat, Permute and Contiguous move values
// unchanged, and the F16 conversion is the native copy's (ggml_fp32_to_fp16_row for dense
// destination rows, ggml_fp32_to_fp16 per element otherwise). No intermediate is materialised.
// Outputs that overlap an input are computed into the workspace and copied over, except an output
// exactly in place over a same-shaped Mul/Add input (each element is read before it is written).

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/affine_fusions.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

#include <ggml-ext.h>
#include <ggml.h>

#include <algorithm>
#include <cstdint>

#ifndef SD_AFFINE_FUSIONS_SHARED
#define SD_AFFINE_FUSIONS_SHARED
namespace sd::affine {

// y[i] = op(a[i], b[i]) rows of the Mul/Add chain: t = x * gate, then t + residual (or residual + t).
struct MulAddRow {
    const float * x;
    const float * gate;      // k values, or one repeated
    const float * residual;  // k values, or one repeated
    bool gate_scalar, residual_scalar, mul_first;
    int64_t k;
};

}  // namespace sd::affine
#endif  // SD_AFFINE_FUSIONS_SHARED

HWY_BEFORE_NAMESPACE();
namespace sd::affine::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void ComputeMulAdd(const MulAddRow & r, float * HWY_RESTRICT y) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    const auto load = [&](const float * p, bool scalar, int64_t i) {
        return scalar ? hn::Set(d, p[0]) : hn::LoadU(d, p + i);
    };
    int64_t i = 0;
    for (; i + lanes <= r.k; i += lanes) {
        const auto t = hn::Mul(hn::LoadU(d, r.x + i), load(r.gate, r.gate_scalar, i));
        const auto res = load(r.residual, r.residual_scalar, i);
        hn::StoreU(r.mul_first ? hn::Add(t, res) : hn::Add(res, t), d, y + i);
    }
    for (; i < r.k; ++i) {
        const float t = r.x[i] * r.gate[r.gate_scalar ? 0 : i];
        const float res = r.residual[r.residual_scalar ? 0 : i];
        y[i] = r.mul_first ? t + res : res + t;
    }
}

// v[i] = v[i] * s + b, the native SCALE's MulAdd (its tail through a padded vector).
void ScaleRow(float * v, int64_t n, float s, float b) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    const auto vs = hn::Set(d, s), vb = hn::Set(d, b);
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(hn::MulAdd(hn::LoadU(d, v + i), vs, vb), d, v + i);
    if (i == n) return;
    HWY_ALIGN float t[HWY_MAX_BYTES / sizeof(float)] = {};
    std::copy(v + i, v + n, t);
    hn::Store(hn::MulAdd(hn::Load(d, t), vs, vb), d, t);
    std::copy(t, t + (n - i), v + i);
}

}  // namespace sd::affine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <cstring>
#include <vector>

#include "common/affine_chain.h"
#include "common/pack.h"
#ifdef SD_VULKAN
#include "vulkan/sd_vulkan.h"
#endif

namespace sd::affine {
HWY_EXPORT(ComputeMulAdd);
HWY_EXPORT(ScaleRow);

namespace {

const ggml_ext_cpu_parallel_v1 * g_parallel = nullptr;

ggml_status fail(const char * message) {
    ggml_ext_set_error(message);
    return GGML_STATUS_FAILED;
}

// The bytes [lo, hi) t's elements span through its strides.
std::pair<uintptr_t, uintptr_t> span_of(const ggml_tensor * t) {
    size_t last = ggml_type_size(t->type);
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        last += static_cast<size_t>(std::max<int64_t>(t->ne[i] - 1, 0)) * t->nb[i];
    const auto lo = reinterpret_cast<uintptr_t>(t->data);
    return {lo, lo + last};
}

bool overlaps(const ggml_tensor * a, const ggml_tensor * b) {
    const auto [a0, a1] = span_of(a);
    const auto [b0, b1] = span_of(b);
    return a0 < b1 && b0 < a1;
}

// Rows [0, rows) split among the pool's threads (about 16 Ki elements per task at least).
template <class F>
ggml_status parallel_rows(ggml_backend_t backend, int64_t rows, int64_t row_elements, F & per_row) {
    if (rows == 0) return GGML_STATUS_SUCCESS;
    struct Job {
        F * f;
        int64_t rows;
    } job{&per_row, rows};
    const int64_t want = std::max<int64_t>(1, rows * row_elements / 16384);
    const int n_tasks =
        static_cast<int>(std::min<int64_t>({want, std::max(1, g_parallel->n_threads(backend)), rows}));
    return g_parallel->run(
        backend,
        [](const ggml_ext_cpu_task * task) {
            const auto & j = *static_cast<const Job *>(task->user_data);
            const int64_t per = (j.rows + task->nth - 1) / task->nth;
            for (int64_t r = task->ith * per; r < std::min(j.rows, (task->ith + 1) * per); ++r) {
                if ((r - task->ith * per) % 32 == 0 && g_parallel->should_stop(task)) return;
                (*j.f)(r);
            }
        },
        &job, n_tasks);
}

// Row r of t (rows enumerated ne1 fastest).
char * row_at(const ggml_tensor * t, int64_t r) {
    const int64_t i1 = r % t->ne[1], i2 = r / t->ne[1] % t->ne[2], i3 = r / (t->ne[1] * t->ne[2]);
    return static_cast<char *>(t->data) + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

// Where an output is computed: over the output itself, or into the contiguous workspace when it
// overlaps an input it still reads (copied over after).
struct Destination {
    ggml_tensor * out;
    ggml_tensor staged;  // out's metadata over the workspace, contiguous
    bool in_workspace = false;

    ggml_status init(const ggml_ext_fusion_execute_params * p, ggml_tensor * node, bool overlapping) {
        out = node;
        staged = *node;
        in_workspace = overlapping;
        if (!overlapping) return GGML_STATUS_SUCCESS;
        const size_t bytes = ggml_nelements(node) * ggml_type_size(node->type);
        if (p->workspace_size < bytes)
            return fail("sd affine fusion (CPU): workspace smaller than prepare requested");
        staged.data = p->workspace_data;
        staged.nb[0] = ggml_type_size(node->type);
        for (int i = 1; i < GGML_MAX_DIMS; ++i)
            staged.nb[i] = staged.nb[i - 1] * static_cast<size_t>(node->ne[i - 1]);
        return GGML_STATUS_SUCCESS;
    }
    const ggml_tensor * target() const { return in_workspace ? &staged : out; }
    // The staged rows copied over the output.
    void commit() const {
        if (!in_workspace) return;
        const size_t elem = ggml_type_size(out->type);
        for (int64_t r = 0; r < ggml_nrows(out); ++r) {
            const char * src = row_at(&staged, r);
            char * dst = row_at(out, r);
            for (int64_t i = 0; i < out->ne[0]; ++i)
                std::memcpy(dst + i * out->nb[0], src + i * elem, elem);
        }
    }
};

// ---- Mul(gate) -> Add(residual) ------------------------------------------------------------------

int mul_add_match(ggml_backend_dev_t, const ggml_cgraph * graph, int first, void *) {
    if (first + 2 > ggml_graph_n_nodes(graph)) return 0;
    affine_chain::MulAdd m;
    return affine_chain::parse_mul_add(ggml_graph_node(graph, first), ggml_graph_node(graph, first + 1), &m)
               ? 2
               : 0;
}

// Reading input at the output's own addresses element by element is safe; any other overlap is not.
bool exactly_in_place(const ggml_tensor * input, const ggml_tensor * out) {
    return input->data == out->data && ggml_are_same_shape(input, out) && ggml_is_contiguous(input);
}

ggml_status mul_add_execute(const ggml_ext_fusion_execute_params * params) {
    ggml_tensor * add = params->nodes[1];
    affine_chain::MulAdd m;
    if (params->n_nodes != 2 || !affine_chain::parse_mul_add(params->nodes[0], add, &m))
        return fail("sd.mul_add.cpu: the nodes are not a chain it computes");
    bool overlapping = false;
    for (const ggml_tensor * in : {m.x, m.gate, m.residual})
        overlapping = overlapping || (overlaps(in, add) && !exactly_in_place(in, add));
    Destination dst;
    if (const ggml_status st = dst.init(params, add, overlapping); st != GGML_STATUS_SUCCESS) return st;
    const ggml_tensor * y = dst.target();
    const auto operand_row = [&](const ggml_tensor * t, int64_t r) {
        const int64_t i1 = r % add->ne[1], i2 = r / add->ne[1] % add->ne[2],
                      i3 = r / (add->ne[1] * add->ne[2]);
        return reinterpret_cast<const float *>(static_cast<const char *>(t->data) + i1 % t->ne[1] * t->nb[1] +
                                               i2 % t->ne[2] * t->nb[2] + i3 % t->ne[3] * t->nb[3]);
    };
    auto per_row = [&](int64_t r) {
        const MulAddRow row{operand_row(m.x, r),
                            operand_row(m.gate, r),
                            operand_row(m.residual, r),
                            m.gate->ne[0] == 1 && add->ne[0] != 1,
                            m.residual->ne[0] == 1 && add->ne[0] != 1,
                            m.mul_first,
                            add->ne[0]};
        HWY_DYNAMIC_DISPATCH(ComputeMulAdd)(row, reinterpret_cast<float *>(row_at(y, r)));
    };
    const ggml_status st = parallel_rows(params->backend, ggml_nrows(add), add->ne[0], per_row);
    if (st == GGML_STATUS_SUCCESS) dst.commit();
    return st;
}

// ---- [Concat | Contiguous -> Scale] -> [Permute] -> F16 copy -----------------------------------

template <ggml_op kFirst, int kNodes>
int copy_match(ggml_backend_dev_t, const ggml_cgraph * graph, int first, void *) {
    if (first + kNodes > ggml_graph_n_nodes(graph) || ggml_graph_node(graph, first)->op != kFirst) return 0;
    affine_chain::CopyChain ch;
    return affine_chain::parse_copy(ggml_graph_nodes(graph) + first, kNodes, &ch) ? kNodes : 0;
}

// Row r of the copy (the view's logical row) as F32 into v: each element read where c's value of
// that position comes from (an input of the Concat, or the Contiguous's input), then the Scale.
void gather_row(const affine_chain::CopyChain & ch, int64_t r, float * v) {
    const ggml_tensor * view = ch.view;
    int64_t at[GGML_MAX_DIMS] = {0, r % view->ne[1], r / view->ne[1] % view->ne[2],
                                 r / (view->ne[1] * view->ne[2])};
    int64_t coord[GGML_MAX_DIMS];  // in c
    int walk = -1;                 // c's dimension the row walks
    for (int d = 0; d < GGML_MAX_DIMS; ++d) {
        coord[d] = ch.axis_of[d] < 0 ? 0 : at[ch.axis_of[d]];
        if (ch.axis_of[d] == 0) walk = d;
    }
    for (int64_t i = 0; i < view->ne[0]; ++i) {
        if (walk >= 0) coord[walk] = i;
        const bool second = ch.b && coord[ch.dim] >= ch.a->ne[ch.dim];
        const ggml_tensor * src = second ? ch.b : ch.a;
        int64_t offset = 0;
        for (int d = 0; d < GGML_MAX_DIMS; ++d)
            offset +=
                (coord[d] - (second && d == ch.dim ? ch.a->ne[d] : 0)) * static_cast<int64_t>(src->nb[d]);
        std::memcpy(v + i, static_cast<const char *>(src->data) + offset, sizeof(float));
    }
    if (ch.scaled) HWY_DYNAMIC_DISPATCH(ScaleRow)(v, view->ne[0], ch.scale, ch.bias);
}

// The native copy's F32 -> F16 conversion of one row into dst (element stride nb0).
void store_f16_row(const float * v, int64_t n, char * dst, size_t nb0) {
    if (nb0 == sizeof(ggml_fp16_t)) return ggml_fp32_to_fp16_row(v, reinterpret_cast<ggml_fp16_t *>(dst), n);
    for (int64_t i = 0; i < n; ++i) {
        const ggml_fp16_t h = ggml_fp32_to_fp16(v[i]);
        std::memcpy(dst + i * nb0, &h, sizeof h);
    }
}

ggml_status copy_execute(const ggml_ext_fusion_execute_params * params) {
    ggml_tensor * cpy = params->nodes[params->n_nodes - 1];
    affine_chain::CopyChain ch;
    if (!affine_chain::parse_copy(params->nodes, params->n_nodes, &ch))
        return fail("sd F16 copy fusion (CPU): the nodes are not a chain it computes");
    const bool overlapping = overlaps(ch.a, cpy) || (ch.b && overlaps(ch.b, cpy));
    Destination dst;
    if (const ggml_status st = dst.init(params, cpy, overlapping); st != GGML_STATUS_SUCCESS) return st;
    const ggml_tensor * y = dst.target();
    auto per_row = [&](int64_t r) {
        std::vector<float> v(static_cast<size_t>(cpy->ne[0]));
        gather_row(ch, r, v.data());
        store_f16_row(v.data(), cpy->ne[0], row_at(y, r), y->nb[0]);
    };
    const ggml_status st = parallel_rows(params->backend, ggml_nrows(cpy), cpy->ne[0], per_row);
    if (st == GGML_STATUS_SUCCESS) dst.commit();
    return st;
}

// Concat -> Permute -> CPY first (the longer chain), then Concat -> CPY.
int concat_match(ggml_backend_dev_t device, const ggml_cgraph * graph, int first, void * user) {
    const int n = copy_match<GGML_OP_CONCAT, 3>(device, graph, first, user);
    return n ? n : copy_match<GGML_OP_CONCAT, 2>(device, graph, first, user);
}

}  // namespace
}  // namespace sd::affine

namespace sd {

bool register_affine() {
    using namespace sd::affine;
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    g_parallel = cpu ? static_cast<const ggml_ext_cpu_parallel_v1 *>(ggml_backend_reg_get_proc_address(
                           ggml_backend_dev_backend_reg(cpu), GGML_EXT_CPU_PARALLEL_V1))
                     : nullptr;
    if (!g_parallel || g_parallel->struct_size < sizeof(ggml_ext_cpu_parallel_v1) ||
        g_parallel->version < GGML_EXT_CPU_PARALLEL_V1_VERSION) {
        ggml_ext_set_error("sd affine fusions: no CPU device with the ggml_ext_cpu_parallel_v1 service");
        return false;
    }
    // Mul -> Add computes exactly in place (each element read before it is written), so its output may
    // take x's block as the unfused in-place Mul and Add would.
#ifdef SD_VULKAN
    for (ggml_backend_dev_t device : vulkan::devices())
        if (!vulkan::register_affine(device)) return false;
#endif
    // (No optimize callbacks: the specification's affine rules reorder nothing.)
    return register_fusion(cpu, "sd.mul_add.cpu", mul_add_match, mul_add_execute, nullptr,
                           GGML_EXT_FUSION_OUTPUT_IN_PLACE) &&
           register_fusion(cpu, "sd.concat_f16.cpu", concat_match, copy_execute) &&
           register_fusion(cpu, "sd.cont_scale_f16.cpu", copy_match<GGML_OP_CONT, 4>, copy_execute);
}

}  // namespace sd

#endif  // HWY_ONCE
