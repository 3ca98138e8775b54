// CPU implementation of sd.rope_apply.v1 (sd-ops.md 1.3, partial rotation per ggml-extensions.md) and
// of the RMSNorm -> Mul(1-D weight) -> RoPE fusion (sd-ops.md 2).
//
// Numerics. Every rotated value is p*m0 + q*m1 (interleaved: all four matrix entries; split-half:
// p*c - q*s and p*s + q*c) with each product rounded to f32 and one f32 add or subtract: no FMA
// (this file is compiled with -ffp-contract=off, and Highway's Mul/Add/Sub are separate
// instructions). That is exactly what the unfused ggml_mul/ggml_mul/ggml_add graph computes, so the
// result is bit-identical to it. The fused chain repeats the native CPU RMS_NORM and MUL arithmetic
// in the same order (src/cpu/kernels/norm.cpp, elementwise.cpp): the sum of squares in double with
// the same two-accumulator Highway loop, scale = float(1 / sqrt(sum / D + eps)) in double, then
// (x * scale) * w in f32; so it is bit-identical to the three separate ops on the same Highway target.
//
// Work is split over output rows in token-major order (every head and batch item of a token before
// the next token), so each thread prepares one token's rotation matrices once and reuses them for
// all heads; rows of a (or of the norm's input) may have any float-aligned strides.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/rope.cpp"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <ggml-ext.h>
#include <ggml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#ifndef SD_CPU_ROPE_SHARED
#define SD_CPU_ROPE_SHARED
namespace sd::rope_cpu {

// One execution: plain rope (w == nullptr) or the fused chain (w the 1-D weight).
struct Work {
    const ggml_tensor * x;   // [D, H, L, B]: a, or the RMS_NORM input when fused
    const ggml_tensor * w;   // fused: the MUL's weight [D]; else nullptr
    const ggml_tensor * pe;  // [2, 2, P, L]
    ggml_tensor * out;       // contiguous [D, L, H*B]
    bool interleaved;
    double eps;  // fused: the RMS_NORM epsilon
    const ggml_ext_cpu_parallel_v1 * service;
};

inline float load_f32(const char * p) {
    float v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

}  // namespace sd::rope_cpu
#endif

HWY_BEFORE_NAMESPACE();
namespace sd::rope_cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Output rows are written once and not read again by the kernel: when y is vector-aligned, streaming
// stores spare the read-for-ownership of lines about to be overwritten whole (the rows are far
// apart in the transposed output, so the cache would not keep them anyway).
template <class D, class V>
HWY_INLINE void store_out(V v, D d, float * HWY_RESTRICT y, bool aligned) {
    if (aligned)
        hn::Stream(v, d, y);
    else
        hn::StoreU(v, d, y);
}

template <class D>
HWY_INLINE bool vector_aligned(D d, const float * y) {
    return reinterpret_cast<uintptr_t>(y) % (hn::Lanes(d) * sizeof(float)) == 0;
}

// y[i] for the n = 2P rotated channels, interleaved pairs: a[2j] = M00, a[2j+1] = M10,
// b[2j] = M01, b[2j+1] = M11, so y[2j] = p*M00 + q*M01 and y[2j+1] = p*M10 + q*M11.
HWY_INLINE void rotate_interleaved(const float * HWY_RESTRICT x, const float * HWY_RESTRICT a,
                                   const float * HWY_RESTRICT b, float * HWY_RESTRICT y, int64_t n) {
    int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));  // even
    const bool aligned = vector_aligned(d, y);
    for (; i + lanes <= n; i += lanes) {
        const auto v = hn::LoadU(d, x + i);
        const auto p = hn::DupEven(v), q = hn::DupOdd(v);
        store_out(hn::Add(hn::Mul(p, hn::LoadU(d, a + i)), hn::Mul(q, hn::LoadU(d, b + i))), d, y + i,
                  aligned);
    }
#endif
    for (; i < n; i += 2) {
        const float p = x[i], q = x[i + 1];
        y[i] = p * a[i] + q * b[i];
        y[i + 1] = p * a[i + 1] + q * b[i + 1];
    }
}

// Split halves of the 2 * half rotated channels: y[j] = p*c - q*s, y[j + half] = p*s + q*c.
HWY_INLINE void rotate_split(const float * HWY_RESTRICT x, const float * HWY_RESTRICT c,
                             const float * HWY_RESTRICT s, float * HWY_RESTRICT y, int64_t half) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    const bool aligned = vector_aligned(d, y) && vector_aligned(d, y + half);
    int64_t j = 0;
    for (; j + lanes <= half; j += lanes) {
        const auto p = hn::LoadU(d, x + j), q = hn::LoadU(d, x + half + j);
        const auto vc = hn::LoadU(d, c + j), vs = hn::LoadU(d, s + j);
        store_out(hn::Sub(hn::Mul(p, vc), hn::Mul(q, vs)), d, y + j, aligned);
        store_out(hn::Add(hn::Mul(p, vs), hn::Mul(q, vc)), d, y + half + j, aligned);
    }
    for (; j < half; ++j) {
        const float p = x[j], q = x[half + j];
        y[j] = p * c[j] - q * s[j];
        y[half + j] = p * s[j] + q * c[j];
    }
}

// The native RMS_NORM's sum of squares (norm.cpp, sum_deviations<true> with shift 0): F32 promoted
// to F64, two accumulators over blocks of 2 * lanes, their lane sum, then the tail in order.
HWY_INLINE double sum_squares(const float * HWY_RESTRICT x, int64_t n) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
    auto acc0 = hn::Zero(dd), acc1 = hn::Zero(dd);
    int64_t i = 0;
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
        const auto d0 = hn::PromoteTo(dd, hn::LoadU(df, x + i));
        const auto d1 = hn::PromoteTo(dd, hn::LoadU(df, x + i + lanes));
        acc0 = hn::MulAdd(d0, d0, acc0);
        acc1 = hn::MulAdd(d1, d1, acc1);
    }
    double total = hn::GetLane(hn::SumOfLanes(dd, hn::Add(acc0, acc1)));
    for (; i < n; ++i) {
        const double v = static_cast<double>(x[i]);
        total += v * v;
    }
    return total;
}

// y = (x * scale) * w: the native RMS_NORM's scaling, then the native MUL.
HWY_INLINE void scale_mul(const float * HWY_RESTRICT x, float scale, const float * HWY_RESTRICT w,
                          float * HWY_RESTRICT y, int64_t n) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    const auto vs = hn::Set(d, scale);
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes)
        hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, x + i), vs), hn::LoadU(d, w + i)), d, y + i);
    for (; i < n; ++i)
        y[i] = (x[i] * scale) * w[i];
}

// Output rows [begin, end) in token-major order (idx = hb + HB * t) of one task.
void RunRows(const Work & work, const ggml_ext_cpu_task * task, int64_t begin, int64_t end) {
    const ggml_tensor * x = work.x;
    const ggml_tensor * pe = work.pe;
    const int64_t dim = x->ne[0], heads = x->ne[1], tokens = x->ne[2];
    const int64_t hb_count = heads * x->ne[3];
    const int64_t pairs = pe->ne[2], rot = 2 * pairs;
    const bool dense_x = x->nb[0] == sizeof(float);

    // Scratch: a gathered input row, the normalised row, the dense weight, the token's matrices.
    std::vector<float> scratch(static_cast<size_t>(3 * dim + 4 * pairs));
    float * xbuf = scratch.data();
    float * nbuf = xbuf + dim;
    float * wbuf = nbuf + dim;
    float * ma = wbuf + dim;  // interleaved: M00, M10 per pair; split: c per pair
    float * mb = ma + rot;    // interleaved: M01, M11 per pair; split: s per pair
    if (work.w) {
        const char * wp = static_cast<const char *>(work.w->data);
        for (int64_t i = 0; i < dim; ++i)
            wbuf[i] = load_f32(wp + i * work.w->nb[0]);
    }
    const char * x_data = static_cast<const char *>(x->data);
    const char * pe_data = static_cast<const char *>(pe->data);
    auto * out = static_cast<float *>(work.out->data);

    int64_t token = -1;
    for (int64_t idx = begin; idx < end; ++idx) {
        if ((idx - begin) % 32 == 0 && work.service->should_stop(task)) return;
        const int64_t t = idx / hb_count, hb = idx % hb_count, h = hb % heads, b = hb / heads;
        if (t != token) {  // this token's rotation matrices, pe[c, r, j, t] = M[r][c]
            token = t;
            for (int64_t j = 0; j < pairs; ++j) {
                const char * m = pe_data + j * pe->nb[2] + t * pe->nb[3];
                const float m00 = load_f32(m), m01 = load_f32(m + pe->nb[0]);
                const float m10 = load_f32(m + pe->nb[1]), m11 = load_f32(m + pe->nb[0] + pe->nb[1]);
                if (work.interleaved) {
                    ma[2 * j] = m00, ma[2 * j + 1] = m10;
                    mb[2 * j] = m01, mb[2 * j + 1] = m11;
                } else {
                    ma[j] = m00, mb[j] = m10;
                }
            }
        }
        const char * row = x_data + h * x->nb[1] + t * x->nb[2] + b * x->nb[3];
        const float * src = reinterpret_cast<const float *>(row);
        if (!dense_x) {
            for (int64_t i = 0; i < dim; ++i)
                xbuf[i] = load_f32(row + i * x->nb[0]);
            src = xbuf;
        }
        if (work.w) {
            const double squares = sum_squares(src, dim);
            const auto scale =
                static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(dim) + work.eps));
            scale_mul(src, scale, wbuf, nbuf, dim);
            src = nbuf;
        }
        float * y = out + (t + tokens * hb) * dim;
        if (work.interleaved)
            rotate_interleaved(src, ma, mb, y, rot);
        else
            rotate_split(src, ma, mb, y, pairs);
        if (rot < dim) std::memcpy(y + rot, src + rot, static_cast<size_t>(dim - rot) * sizeof(float));
    }
    hwy::FlushStream();  // streamed rows are visible before the task returns
}

}  // namespace HWY_NAMESPACE
}  // namespace sd::rope_cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <string>

#include "common/pack.h"
#include "common/rope.h"

namespace sd::rope_cpu {
HWY_EXPORT(RunRows);

namespace {

const ggml_ext_cpu_parallel_v1 * g_parallel = nullptr;
ggml_ext_op_t g_op = nullptr;

bool float_strides(const ggml_tensor * t) {
    return std::all_of(t->nb, t->nb + GGML_MAX_DIMS, [](size_t nb) { return nb % sizeof(float) == 0; });
}

// A rope node this implementation computes: F32 everywhere, float-aligned input strides, the
// contiguous [D, L, H*B] output of the schema.
bool rope_node_ok(const ggml_tensor * node) {
    if (node == nullptr || ggml_ext_node_op(node) != g_op) return false;
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * pe = node->src[1];
    if (!a || !pe || a->type != GGML_TYPE_F32 || pe->type != GGML_TYPE_F32 || node->type != GGML_TYPE_F32)
        return false;
    const int64_t dim = a->ne[0];
    return dim > 0 && dim % 2 == 0 && pe->ne[0] == 2 && pe->ne[1] == 2 && pe->ne[2] >= 1 &&
           2 * pe->ne[2] <= dim && pe->ne[3] == a->ne[2] && node->ne[0] == dim && node->ne[1] == a->ne[2] &&
           node->ne[2] == a->ne[1] * a->ne[3] && node->ne[3] == 1 && ggml_is_contiguous(node) &&
           float_strides(a) && float_strides(pe);
}

// The bytes [lo, hi) a tensor's elements span through its strides.
void span_of(const ggml_tensor * t, const char *& lo, const char *& hi) {
    size_t last = ggml_type_size(t->type);
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        last += static_cast<size_t>(t->ne[i] - 1) * t->nb[i];
    lo = static_cast<const char *>(t->data);
    hi = lo + last;
}

bool overlaps(const ggml_tensor * a, const ggml_tensor * b) {
    const char *a0, *a1, *b0, *b1;
    span_of(a, a0, a1);
    span_of(b, b0, b1);
    return a0 < b1 && b0 < a1;
}

bool float_aligned(const ggml_tensor * t) {
    return reinterpret_cast<uintptr_t>(t->data) % alignof(float) == 0;
}

void task_fn(const ggml_ext_cpu_task * task) {
    const auto & work = *static_cast<const Work *>(task->user_data);
    const int64_t rows = work.x->ne[1] * work.x->ne[2] * work.x->ne[3];
    const int64_t per_task = (rows + task->nth - 1) / task->nth;
    const int64_t begin = std::min(rows, task->ith * per_task), end = std::min(rows, begin + per_task);
    if (begin < end) HWY_DYNAMIC_DISPATCH(RunRows)(work, task, begin, end);
}

ggml_status run(ggml_backend_t backend, const char * what, Work & work) {
    work.service = g_parallel;
    const ggml_tensor * inputs[] = {work.x, work.pe, work.w};
    for (const ggml_tensor * in : inputs) {
        if (!in) continue;
        if (!float_aligned(in)) {
            ggml_ext_set_error(
                (std::string(what) + ": input '" + in->name + "' is not float-aligned").c_str());
            return GGML_STATUS_FAILED;
        }
        // The allocator never places a custom node over its inputs and keeps a fused range's external
        // inputs alive through its output, so an overlap means a caller-made layout we do not support.
        if (overlaps(work.out, in)) {
            ggml_ext_set_error(
                (std::string(what) + ": the output overlaps input '" + in->name + "'; not supported")
                    .c_str());
            return GGML_STATUS_FAILED;
        }
    }
    const int64_t rows = work.x->ne[1] * work.x->ne[2] * work.x->ne[3];
    if (rows == 0) return GGML_STATUS_SUCCESS;
    // About 16 Ki elements per task at least: tiny nodes stay on few threads.
    const int64_t want = std::max<int64_t>(1, rows * work.x->ne[0] / 16384);
    const int n_threads = std::max(1, g_parallel->n_threads(backend));
    const int n_tasks = static_cast<int>(std::min<int64_t>({want, n_threads, rows}));
    return g_parallel->run(backend, task_fn, &work, n_tasks);
}

// ---- the single-node kernel ------------------------------------------------------------------

bool kernel_supports(ggml_backend_dev_t, const ggml_tensor * node, void *) { return rope_node_ok(node); }

ggml_status kernel_execute(const ggml_ext_execute_params * params) {
    ggml_tensor * node = params->node;
    Work work{node->src[0], nullptr, node->src[1], node, rope::attrs_of(node).interleaved != 0, 0.0, nullptr};
    return run(params->backend, "sd.rope_apply.cpu", work);
}

// ---- the fusion RMS_NORM -> MUL(1-D weight) -> sd.rope_apply ----------------------------------

int fusion_match(ggml_backend_dev_t, const ggml_cgraph * graph, int first, void *) {
    if (first + 3 > ggml_graph_n_nodes(graph)) return 0;
    const ggml_tensor * norm = ggml_graph_node(graph, first);
    const ggml_tensor * mul = ggml_graph_node(graph, first + 1);
    const ggml_tensor * rope = ggml_graph_node(graph, first + 2);
    if (norm->op != GGML_OP_RMS_NORM || mul->op != GGML_OP_MUL || !rope_node_ok(rope)) return 0;
    const ggml_tensor * x = norm->src[0];
    const ggml_tensor * w = mul->src[1];
    if (!x || x->type != GGML_TYPE_F32 || norm->type != GGML_TYPE_F32 || !ggml_are_same_shape(x, norm) ||
        !float_strides(x))
        return 0;
    if (mul->src[0] != norm || mul->type != GGML_TYPE_F32 || !ggml_are_same_shape(mul, norm) || !w ||
        w->type != GGML_TYPE_F32 || w->ne[0] != norm->ne[0] || ggml_nelements(w) != w->ne[0] ||
        !float_strides(w))
        return 0;
    if (rope->src[0] != mul) return 0;
    return 3;  // the runtime checks legality (uses, flags, views) before accepting
}

ggml_status fusion_execute(const ggml_ext_fusion_execute_params * params) {
    const ggml_tensor * norm = params->nodes[0];
    const ggml_tensor * mul = params->nodes[1];
    ggml_tensor * rope = params->nodes[2];
    const float eps = sd::native_params<ggml_ext_norm_params>(norm).eps;
    Work work{norm->src[0],
              mul->src[1],
              rope->src[1],
              rope,
              rope::attrs_of(rope).interleaved != 0,
              static_cast<double>(eps),
              nullptr};
    return run(params->backend, "sd.rms_norm_mul_rope.cpu", work);
}

}  // namespace
}  // namespace sd::rope_cpu

namespace sd::rope {

using rope_cpu::g_op;

const ggml_ext_kernel_desc * cpu_kernel_desc() {
    static const ggml_ext_kernel_desc kernel = custom_kernel_desc(
        "sd.rope_apply.cpu", g_op ? g_op : op(), rope_cpu::kernel_supports, rope_cpu::kernel_execute);
    return &kernel;
}

bool register_cpu(ggml_backend_dev_t device, ggml_ext_op_t rope_op) {
    using namespace sd::rope_cpu;
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(device);
    const auto * service = static_cast<const ggml_ext_cpu_parallel_v1 *>(
        reg ? ggml_backend_reg_get_proc_address(reg, GGML_EXT_CPU_PARALLEL_V1) : nullptr);
    if (!service || service->struct_size < sizeof(ggml_ext_cpu_parallel_v1) ||
        service->version < GGML_EXT_CPU_PARALLEL_V1_VERSION) {
        ggml_ext_set_error("sd.rope_apply.cpu: the CPU registry offers no ggml_ext_cpu_parallel_v1 service");
        return false;
    }
    g_parallel = service;
    g_op = rope_op;

    if (!ggml_ext_register_kernel(device, cpu_kernel_desc())) return false;

    ggml_ext_fusion_desc fusion = fusion_desc("sd.rms_norm_mul_rope.cpu", fusion_match, fusion_execute);
    return ggml_ext_register_fusion(device, &fusion);
}

}  // namespace sd::rope

#endif  // HWY_ONCE
