// CPU fusions ending in sd.quantize_i8_convrot.v1 (ggml-extensions.md, the ConvRot fusions):
//   Scale -> ConvRot, SwiGLU -> ConvRot (packed, swapped or separate gate/up inputs), and
//   SiLU/Sigmoid -> Mul -> ConvRot.
// Each task computes one row of the quantize input at a time into a buffer, with the native CPU
// kernels' F32 arithmetic in their order (src/cpu/kernels/elementwise.cpp: SCALE is one MulAdd, SILU
// x / (1 + e^-x), SIGMOID 1 / (1 + e^-x), both with e^x from Highway's Exp of the clamped argument and
// NaN kept, MUL and SWIGLU's product one F32 multiply), each operation rounded to F32 as the separate
// nodes store it; then the ConvRot row kernel of "sd.quantize_i8_convrot.cpu" quantizes the row. So
// the packed result is bit-identical to the unfused chain on the same Highway target. The
// intermediates are never materialised (the rules declare GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE).
// An output that overlaps an input is computed into the workspace and copied over.
//
// This file is compiled with the flags of the native element-wise kernels (FMA contraction as they
// have it), so the shared Highway math compiles to the same instructions.

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/convrot_fusions.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include <ggml-ext.h>
#include <ggml.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#ifndef SD_CONVROT_FUSIONS_SHARED
#define SD_CONVROT_FUSIONS_SHARED
#include "common/convrot_chain.h"

namespace sd::convrot_fusion {

using convrot_chain::Chain;
using convrot_chain::Producer;

inline const float * row_of(const ggml_tensor * t, int64_t i1, int64_t i2, int64_t i3) {
    return reinterpret_cast<const float *>(static_cast<const char *>(t->data) + i1 * t->nb[1] +
                                           i2 * t->nb[2] + i3 * t->nb[3]);
}

}  // namespace sd::convrot_fusion
#endif  // SD_CONVROT_FUSIONS_SHARED

HWY_BEFORE_NAMESPACE();
namespace sd::convrot_fusion::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// The native kernels' e^x with its clamp, and NaN kept (elementwise.cpp).
HWY_INLINE V exp_clamped(V x) {
    const D d;
    return hn::Exp(d, hn::Min(hn::Max(x, hn::Set(d, -105.0f)), hn::Set(d, 89.0f)));
}
HWY_INLINE V keep_nan(V x, V y) { return hn::IfThenElse(hn::IsNaN(x), x, y); }
HWY_INLINE V silu(V x) {
    const D d;
    return keep_nan(x, hn::Div(x, hn::Add(hn::Set(d, 1.0f), exp_clamped(hn::Mul(hn::Set(d, -1.0f), x)))));
}
HWY_INLINE V sigmoid(V x) {
    const D d;
    const V one = hn::Set(d, 1.0f);
    return keep_nan(x, hn::Div(one, hn::Add(one, exp_clamped(hn::Neg(x)))));
}

// y[i] = f(a[i], b[i]) for i < n, the tail through zero-padded vectors as the native kernels do.
template <class F>
HWY_INLINE void transform(const float * a, const float * b, float * y, int64_t n, F f) {
    const D d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(f(hn::LoadU(d, a + i), b ? hn::LoadU(d, b + i) : hn::Zero(d)), d, y + i);
    if (i == n) return;
    HWY_ALIGN float ta[HWY_MAX_BYTES / sizeof(float)] = {};
    HWY_ALIGN float tb[HWY_MAX_BYTES / sizeof(float)] = {};
    std::copy(a + i, a + n, ta);
    if (b) std::copy(b + i, b + n, tb);
    hn::Store(f(hn::Load(d, ta), hn::Load(d, tb)), d, ta);
    std::copy(ta, ta + (n - i), y + i);
}

// Row (i1, i2, i3) of the quantize input into y (k values).
void ProduceRow(const Chain & c, int64_t i1, int64_t i2, int64_t i3, float * HWY_RESTRICT y) {
    const D d;
    const float * x = row_of(c.x, i1, i2, i3);
    const float * o = nullptr;
    if (c.other) {
        const ggml_tensor * t = c.other;
        o = row_of(t, i1 % t->ne[1], i2 % t->ne[2], i3 % t->ne[3]);
    }
    switch (c.producer) {
        case Producer::scale: {
            const V s = hn::Set(d, c.scale), b = hn::Set(d, c.bias);
            return transform(x, nullptr, y, c.k, [&](V v, V) { return hn::MulAdd(v, s, b); });
        }
        case Producer::silu_mul:
        case Producer::sigmoid_mul: {
            const bool is_silu = c.producer == Producer::silu_mul;
            const bool first = c.activation_first;
            return transform(x, o, y, c.k, [&](V v, V w) {
                const V act = is_silu ? silu(v) : sigmoid(v);
                return first ? hn::Mul(act, w) : hn::Mul(w, act);
            });
        }
        case Producer::swiglu: {
            const float * gate = x + (c.swapped ? c.k : 0);
            const float * up = o ? o : x + (c.swapped ? 0 : c.k);
            return transform(gate, up, y, c.k, [](V v, V w) { return hn::Mul(silu(v), w); });
        }
    }
}

}  // namespace sd::convrot_fusion::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <atomic>
#include <string>
#include <vector>

#include "common/int8.h"
#include "common/pack.h"

namespace sd::convrot_fusion {
HWY_EXPORT(ProduceRow);

namespace {

const ggml_ext_cpu_parallel_v1 * g_parallel = nullptr;

// The rule of the chains of kNodes nodes starting with a node of kOp.
template <ggml_op kOp, int kNodes>
int match(ggml_backend_dev_t, const ggml_cgraph * graph, int first, void *) {
    Chain c;
    return convrot_chain::match(graph, first, kOp, kNodes, &c);
}

void activation_optimize(ggml_backend_dev_t, ggml_cgraph * graph, void *) {
    make_chains_consecutive(graph, [&](int i) { return convrot_chain::activation_chain(graph, i); });
}

// Rows [next, ...) in chunks, each computed into the task's buffer and quantized.
struct Job {
    Chain chain;
    int64_t rows;
    int8_t * codes;
    float * scales;
    const ggml_tensor * shape;  // the quantize input, whose rows are enumerated
    std::atomic<int64_t> next{0};
};

void task_fn(const ggml_ext_cpu_task * task) {
    auto & job = *static_cast<Job *>(task->user_data);
    const Chain & c = job.chain;
    const int64_t ne1 = job.shape->ne[1], ne2 = job.shape->ne[2];
    std::vector<float> row(static_cast<size_t>(c.k));
    constexpr int64_t kChunk = 8;
    for (int64_t r0; (r0 = job.next.fetch_add(kChunk, std::memory_order_relaxed)) < job.rows;) {
        if (g_parallel->should_stop(task)) return;
        for (int64_t r = r0; r < std::min(job.rows, r0 + kChunk); ++r) {
            HWY_DYNAMIC_DISPATCH(ProduceRow)(c, r % ne1, r / ne1 % ne2, r / (ne1 * ne2), row.data());
            int8::cpu::convrot_row(row.data(), c.k, c.group, job.codes + r * c.k, job.scales + r);
        }
    }
}

bool overlaps(const ggml_tensor * a, const ggml_tensor * b) {
    if (!a || !b) return false;
    const auto pa = reinterpret_cast<uintptr_t>(a->data), pb = reinterpret_cast<uintptr_t>(b->data);
    return pa < pb + ggml_nbytes(b) && pb < pa + ggml_nbytes(a);
}

ggml_status execute(const ggml_ext_fusion_execute_params * params) {
    ggml_tensor * quantize = params->nodes[params->n_nodes - 1];
    Job job;
    if (!convrot_chain::parse(params->nodes, params->n_nodes, &job.chain)) {
        ggml_ext_set_error("sd ConvRot fusion (CPU): the nodes are not a chain it computes");
        return GGML_STATUS_FAILED;
    }
    const Chain & c = job.chain;
    const size_t bytes = ggml_nbytes(quantize);
    const bool alias = overlaps(quantize, c.x) || overlaps(quantize, c.other);
    if (alias && params->workspace_size < bytes) {
        ggml_ext_set_error("sd ConvRot fusion (CPU): workspace smaller than the output it needs");
        return GGML_STATUS_FAILED;
    }
    auto * out = static_cast<int8_t *>(alias ? params->workspace_data : quantize->data);
    job.shape = quantize->src[0];
    job.rows = ggml_nrows(job.shape);
    job.codes = out;
    job.scales = reinterpret_cast<float *>(out + c.k * int8::packed_rows_pad(job.rows));
    if (job.rows > 0) {
        const int nth = static_cast<int>(
            std::min<int64_t>(job.rows, std::max(1, g_parallel->n_threads(params->backend))));
        const ggml_status st = g_parallel->run(params->backend, task_fn, &job, nth);
        if (st != GGML_STATUS_SUCCESS) return st;
    }
    int8::zero_packed_padding(out, c.k, job.rows, bytes);
    if (alias) std::memmove(quantize->data, out, bytes);
    return GGML_STATUS_SUCCESS;
}

}  // namespace
}  // namespace sd::convrot_fusion

namespace sd::int8 {

bool register_cpu_convrot_fusions(ggml_backend_dev_t device) {
    using namespace sd::convrot_fusion;
    g_parallel = static_cast<const ggml_ext_cpu_parallel_v1 *>(
        ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(device), GGML_EXT_CPU_PARALLEL_V1));
    if (!g_parallel || g_parallel->struct_size < sizeof(ggml_ext_cpu_parallel_v1) ||
        g_parallel->version < GGML_EXT_CPU_PARALLEL_V1_VERSION) {
        ggml_ext_set_error("sd ConvRot fusions: the CPU registry offers no ggml_ext_cpu_parallel_v1 service");
        return false;
    }
    return register_fusion(device, "sd.scale_convrot.cpu", match<GGML_OP_SCALE, 2>, execute) &&
           register_fusion(device, "sd.swiglu_convrot.cpu", match<GGML_OP_GLU, 2>, execute) &&
           register_fusion(device, "sd.activation_mul_convrot.cpu", match<GGML_OP_UNARY, 3>, execute,
                           activation_optimize);
}

}  // namespace sd::int8

#endif  // HWY_ONCE
