// ggx-bench fusion: what fusing a memory-bound pointwise chain saves. y = ((x * a + b) * c) * s on
// x of 4096 x 4096 F32 (64 MiB, far larger than L3; a, b, c are F32 rows of 4096 broadcast over the
// rows, like a norm's weight and bias), on the CPU device with all its threads:
//   unfused: the device's native kernels, four passes over 64 MiB tensors (the device's extensions
//            disabled with ggml_ext_dev_set_enabled, then the scheduler reset and re-allocated);
//   fused:   one fusion rule registered on the CPU device for this process only, whose execute makes
//            one pass through the ggml_ext_cpu_parallel_v1 service with a plain loop the compiler
//            vectorizes, in the native kernels' float operation order (so the results agree bit for
//            bit: MUL, ADD, MUL one rounding each, SCALE as x * s + 0, which is fma(x, s, 0) except
//            for underflow to -0).
// Reported: the median (and best) time per run of both, the speedup (goal >= 2.5x), and the fused
// run's bandwidth (read x + write y) as a ratio to the machine's DRAM triad bandwidth from
// ../shared/tools/roofline (or the GGX_ROOFLINE environment variable: the JSON or a file holding it).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ggx-bench/fusion.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace ggx_bench_fusion {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// y[i] = ((x[i] * a[i] + b[i]) * c[i]) * s + 0 for n values, one rounding per operation (the native
// kernels' order). y is written once and not read again here: streaming stores spare the
// read-for-ownership of lines that are about to be overwritten whole; y may be x.
void ChainRow(const float * x, const float * a, const float * b, const float * c, float * y, int64_t n,
              float s) {
    const hn::ScalableTag<float> d;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
    const auto vs = hn::Set(d, s), zero = hn::Zero(d);
    int64_t i = 0;
    const bool aligned = reinterpret_cast<uintptr_t>(y) % (lanes * sizeof(float)) == 0;
    for (; aligned && i + lanes <= n; i += lanes) {
        const auto t =
            hn::Mul(hn::Add(hn::Mul(hn::LoadU(d, x + i), hn::LoadU(d, a + i)), hn::LoadU(d, b + i)),
                    hn::LoadU(d, c + i));
        hn::Stream(hn::Add(hn::Mul(t, vs), zero), d, y + i);
    }
    for (; i < n; ++i)
        y[i] = ((x[i] * a[i] + b[i]) * c[i]) * s + 0.0f;
}

}  // namespace HWY_NAMESPACE
}  // namespace ggx_bench_fusion
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <ggml-ext-params.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml.h>
#include <hwy/cache_control.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/roofline.h"

namespace ggx_bench_fusion {
HWY_EXPORT(ChainRow);
}  // namespace ggx_bench_fusion

namespace {

constexpr int64_t kCols = 4096, kRows = 4096;  // 16M elements, 64 MiB per F32 tensor
constexpr float kScale = 0.5f;
constexpr int kRuns = 10;

std::atomic<int> g_fused_executes{0};

bool contiguous_f32(const ggml_tensor * t) { return t->type == GGML_TYPE_F32 && ggml_is_contiguous(t); }

// A row vector [ne0] broadcast over `over`.
bool row_of(const ggml_tensor * row, const ggml_tensor * over) {
    return contiguous_f32(row) && row->ne[0] == over->ne[0] && ggml_nelements(row) == row->ne[0];
}

// MUL(x, a), ADD(_, b), MUL(_, c), SCALE(_) with bias 0, each reading the previous as src0.
int match_chain(ggml_backend_dev_t, const ggml_cgraph * graph, int first, void *) {
    if (first + 4 > ggml_graph_n_nodes(graph)) return 0;
    const ggml_op ops[4] = {GGML_OP_MUL, GGML_OP_ADD, GGML_OP_MUL, GGML_OP_SCALE};
    for (int k = 0; k < 4; ++k) {
        const ggml_tensor * node = ggml_graph_node(graph, first + k);
        if (node->op != ops[k] || !contiguous_f32(node) || !contiguous_f32(node->src[0]) ||
            !ggml_are_same_shape(node, node->src[0]))
            return 0;
        if (k > 0 && node->src[0] != ggml_graph_node(graph, first + k - 1)) return 0;
        if (k < 3 && !row_of(node->src[1], node)) return 0;
        if (k == 3) {
            ggml_ext_scale_params scale{};
            if (!ggml_ext_get_op_params(node, GGML_OP_SCALE, &scale, sizeof scale) || scale.bias != 0.0f) return 0;
        }
    }
    return 4;
}

struct Job {
    const ggml_ext_cpu_parallel_v1 * service;
    const float *x, *a, *b, *c;
    float * y;
    float s;
    int64_t ne0, rows;
};

// Rows [ith * rows / nth, (ith + 1) * rows / nth); y may be x (element by element, read before write).
void fused_rows(const ggml_ext_cpu_task * task) {
    const Job & job = *static_cast<const Job *>(task->user_data);
    const int64_t begin = job.rows * task->ith / task->nth, end = job.rows * (task->ith + 1) / task->nth;
    const float *a = job.a, *b = job.b, *c = job.c;
    const float s = job.s;
    for (int64_t r = begin; r < end; ++r) {
        if ((r & 63) == 0 && job.service->should_stop(task)) return;
        HWY_DYNAMIC_DISPATCH(ggx_bench_fusion::ChainRow)
        (job.x + r * job.ne0, a, b, c, job.y + r * job.ne0, job.ne0, s);
    }
    hwy::FlushStream();  // the streamed rows are visible before the task returns
}

ggml_status execute_chain(const ggml_ext_fusion_execute_params * params) {
    ++g_fused_executes;
    static const auto * service = static_cast<const ggml_ext_cpu_parallel_v1 *>(
        ggml_backend_reg_get_proc_address(ggml_backend_cpu_reg(), GGML_EXT_CPU_PARALLEL_V1));
    if (!service) {
        ggml_ext_set_error("no ggml_ext_cpu_parallel_v1 service");
        return GGML_STATUS_FAILED;
    }
    ggml_tensor *mul0 = params->nodes[0], *add = params->nodes[1], *mul1 = params->nodes[2],
                *out = params->nodes[3];
    ggml_ext_scale_params scale{};
    ggml_ext_get_op_params(out, GGML_OP_SCALE, &scale, sizeof scale);
    const float s = scale.scale;
    Job job{service,
            static_cast<const float *>(mul0->src[0]->data),
            static_cast<const float *>(mul0->src[1]->data),
            static_cast<const float *>(add->src[1]->data),
            static_cast<const float *>(mul1->src[1]->data),
            static_cast<float *>(out->data),
            s,
            out->ne[0],
            ggml_nrows(out)};
    return service->run(params->backend, fused_rows, &job, 0);
}

bool register_rule(ggml_backend_dev_t cpu) {
    static const bool registered = [cpu] {
        ggml_ext_fusion_desc desc{};
        desc.struct_size = sizeof desc;
        desc.version = GGML_EXT_FUSION_DESC_VERSION;
        desc.name = "ggx_bench.mul_add_mul_scale";
        desc.match = match_chain;
        desc.execute = execute_chain;
        desc.flags = GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE;  // it reads only the chain's inputs
        return ggml_ext_register_fusion(cpu, &desc);
    }();
    return registered;
}

struct Timing {
    double median_ms = 0.0, best_ms = 0.0;
    std::vector<float> y;
};

// Resets and allocates the scheduler (the selection policy may have changed), fills the inputs,
// computes once to warm up, then times kRuns computations.
bool time_graph(ggml_backend_sched_t sched, ggml_cgraph * graph, ggml_tensor * const inputs[4],
                ggml_tensor * y, Timing & t) {
    ggml_backend_sched_reset(sched);
    if (!ggml_backend_sched_alloc_graph(sched, graph)) return false;
    std::vector<float> values(static_cast<size_t>(kCols * kRows));
    for (int k = 0; k < 4; ++k) {
        const size_t n = static_cast<size_t>(ggml_nelements(inputs[k]));
        for (size_t i = 0; i < n; ++i)  // deterministic, varied values
            values[i] =
                static_cast<float>(static_cast<int>((i * 2654435761u + k * 97u) % 2001u) - 1000) / 512.0f;
        ggml_backend_tensor_set(inputs[k], values.data(), 0, ggml_nbytes(inputs[k]));
    }
    if (ggml_backend_sched_graph_compute(sched, graph) != GGML_STATUS_SUCCESS) return false;
    std::vector<double> ms;
    for (int r = 0; r < kRuns; ++r) {
        const auto start = std::chrono::steady_clock::now();
        if (ggml_backend_sched_graph_compute(sched, graph) != GGML_STATUS_SUCCESS) return false;
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    t.median_ms = ms[ms.size() / 2];
    t.best_ms = ms.front();
    t.y.resize(static_cast<size_t>(ggml_nelements(y)));
    ggml_backend_tensor_get(y, t.y.data(), 0, ggml_nbytes(y));
    return true;
}

// DRAM triad bandwidth (GB/s) from GGX_ROOFLINE or the roofline tool; 0 when unavailable.
double dram_gbs(std::string & source) {
    std::string json;
    if (const char * env = std::getenv("GGX_ROOFLINE"); env && *env) {
        json = ggx::tools::roofline_json(env);
        source = "GGX_ROOFLINE";
    } else {
        const std::string tool = std::string(GGX_BENCH_SOURCE_DIR) + "/../shared/tools/roofline";
        std::unique_ptr<FILE, decltype(&pclose)> pipe(popen((tool + " 2>/dev/null").c_str(), "r"), &pclose);
        char buf[512];
        while (pipe && std::fgets(buf, sizeof buf, pipe.get()))
            json += buf;
        source = "../shared/tools/roofline";
    }
    return std::max(ggx::tools::roofline_number(json, "dram_triad_gbs_all"),
                    ggx::tools::roofline_number(json, "dram_triad_gbs_1t"));
}

}  // namespace

std::string fusion_report() {
    std::string roofline_source;
    const double roof_gbs = dram_gbs(roofline_source);  // before the big buffers exist

    ggml_backend_t cpu = ggml_backend_cpu_init();
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ggml_backend_cpu_set_n_threads(cpu, threads);
    ggml_backend_dev_t device = ggml_backend_get_device(cpu);
    ggml_context * ctx = ggml_init({ggml_tensor_overhead() * 16 + ggml_graph_overhead(), nullptr, true});
    ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, kCols, kRows);
    ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, kCols);
    ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, kCols);
    ggml_tensor * c = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, kCols);
    ggml_tensor * const inputs[4] = {x, a, b, c};
    for (ggml_tensor * t : inputs)
        ggml_set_input(t);
    ggml_tensor * y = ggml_scale(ctx, ggml_mul(ctx, ggml_add(ctx, ggml_mul(ctx, x, a), b), c), kScale);
    ggml_set_output(y);
    ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, y);
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, nullptr, 1, 64, false, false);

    std::string error;
    Timing unfused, fused;
    const bool was_enabled = ggml_ext_dev_get_enabled(device);
    if (!register_rule(device)) error = ggml_backend_get_last_error();
    ggml_ext_dev_set_enabled(device, false);
    if (error.empty() && !time_graph(sched, graph, inputs, y, unfused)) error = ggml_backend_get_last_error();
    const int executes_unfused = g_fused_executes.load();
    ggml_ext_dev_set_enabled(device, true);
    if (error.empty() && !time_graph(sched, graph, inputs, y, fused)) error = ggml_backend_get_last_error();
    const int executes_fused = g_fused_executes.load() - executes_unfused;
    ggml_ext_dev_set_enabled(device, was_enabled);
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
    ggml_backend_free(cpu);

    char out[1024];
    if (error.empty() && (executes_unfused != 0 || executes_fused != kRuns + 1))
        error = "the fused rule ran " + std::to_string(executes_unfused) + " times unfused and " +
                std::to_string(executes_fused) + " times fused (expected 0 and " + std::to_string(kRuns + 1) +
                ")";
    if (!error.empty()) {
        std::snprintf(out, sizeof out, "{\"error\": \"%s\"}", error.substr(0, 400).c_str());
        return out;
    }
    size_t bit_mismatches = 0, value_mismatches = 0;
    for (size_t i = 0; i < fused.y.size(); ++i) {
        bit_mismatches += std::memcmp(&fused.y[i], &unfused.y[i], sizeof(float)) != 0;
        value_mismatches += !(fused.y[i] == unfused.y[i]);
    }
    const double mib = static_cast<double>(kCols * kRows * sizeof(float)) / (1024.0 * 1024.0);
    const double fused_bytes = 2.0 * static_cast<double>(kCols * kRows * sizeof(float));  // read x, write y
    const double fused_gbs = fused_bytes / (fused.median_ms * 1e-3) / 1e9;
    std::snprintf(
        out, sizeof out,
        "{\"expression\": \"y = ((x * a + b) * c) * %.1f\", \"x\": [%lld, %lld], \"tensor_mib\": %.0f, "
        "\"threads\": %d, \"runs\": %d, \"unfused_ms\": %.3f, \"unfused_best_ms\": %.3f, "
        "\"fused_ms\": %.3f, \"fused_best_ms\": %.3f, \"speedup\": %.3f, \"goal_speedup\": 2.5, "
        "\"fused_gbs\": %.2f, \"roofline_dram_triad_gbs\": %.2f, \"fused_bandwidth_ratio\": %.3f, "
        "\"roofline_source\": \"%s\", \"results_bit_identical\": %s, \"bit_mismatches\": %zu, "
        "\"value_mismatches\": %zu}",
        kScale, static_cast<long long>(kCols), static_cast<long long>(kRows), mib, threads, kRuns,
        unfused.median_ms, unfused.best_ms, fused.median_ms, fused.best_ms,
        unfused.median_ms / fused.median_ms, fused_gbs, roof_gbs, roof_gbs > 0.0 ? fused_gbs / roof_gbs : 0.0,
        roofline_source.c_str(), bit_mismatches == 0 ? "true" : "false", bit_mismatches, value_mismatches);
    return out;
}

#endif  // HWY_ONCE
