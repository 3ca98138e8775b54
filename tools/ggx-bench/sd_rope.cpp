// ggx-bench sd-rope: the sd pack's Q/K norm chain RMSNorm -> Mul(weight) -> sd.rope_apply at
// x = [128, 24, 4096, 1] (head dim 128, 24 heads, 4096 tokens; interleaved, full rotation), on the
// CPU backend with every hardware thread, through a scheduler whose plan is reused:
//  - fused: the CPU fusion rule sd.rms_norm_mul_rope.cpu (one pass per row);
//  - three ops: the same graph with fusion off (a scheduler with an eval callback that observes
//    nothing keeps individual operations): native RMS_NORM, native MUL, the sd.rope_apply.cpu kernel.
//    (ggml_ext_dev_set_enabled(cpu, false) cannot be used for this: it also removes the only kernel
//    of the custom rope node);
//  - decomposed: what sd.cpp runs without the pack, the extension kernels disabled and RoPE as
//    permute/cont/repeat/mul/mul/add native ops.
// Reports the best time per run of each, the speedups, and the fused pass's bandwidth (x read, pe
// read, output written) as a ratio to the roofline's DRAM triad figure (GGX_ROOFLINE or
// ../shared/tools/roofline). results_agree: fused, three ops and decomposed bit-identical.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/plan_steps.h"
#include "common/roofline.h"
#include "sd-ggml-ext.h"

namespace {

constexpr int64_t kDim = 128, kHeads = 24, kTokens = 4096, kBatch = 1, kPairs = kDim / 2;
constexpr int kRepeats = 10;

struct Graph {
    ggml_context * ctx = nullptr;
    ggml_tensor *x = nullptr, *w = nullptr, *pe = nullptr, *y = nullptr;
    ggml_cgraph * graph = nullptr;
};

Graph build(bool decomposed) {
    Graph g;
    g.ctx = ggml_init({ggml_tensor_overhead() * 64 + ggml_graph_overhead(), nullptr, true});
    g.x = ggml_new_tensor_4d(g.ctx, GGML_TYPE_F32, kDim, kHeads, kTokens, kBatch);
    g.w = ggml_new_tensor_1d(g.ctx, GGML_TYPE_F32, kDim);
    g.pe = ggml_new_tensor_4d(g.ctx, GGML_TYPE_F32, 2, 2, kPairs, kTokens);
    for (ggml_tensor * t : {g.x, g.w, g.pe})
        ggml_set_input(t);
    ggml_tensor * m = ggml_mul(g.ctx, ggml_rms_norm(g.ctx, g.x, 1e-6f), g.w);
    g.y = decomposed ? sd_ggml_rope_apply_decomposed(g.ctx, m, g.pe, true)
                     : ggml_rope_apply(g.ctx, m, g.pe, true);
    if (!g.y) return g;
    ggml_set_output(g.y);
    g.graph = ggml_new_graph(g.ctx);
    ggml_build_forward_expand(g.graph, g.y);
    return g;
}

void fill(const Graph & g) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<float> v(static_cast<size_t>(ggml_nelements(g.x)));
    for (float & f : v)
        f = dist(rng);
    ggml_backend_tensor_set(g.x, v.data(), 0, ggml_nbytes(g.x));
    v.resize(kDim);
    for (float & f : v)
        f = dist(rng);
    ggml_backend_tensor_set(g.w, v.data(), 0, ggml_nbytes(g.w));
    std::vector<float> pe(static_cast<size_t>(4 * kPairs * kTokens));
    for (int64_t t = 0; t < kTokens; ++t)
        for (int64_t j = 0; j < kPairs; ++j) {
            const float angle = static_cast<float>(t) * std::pow(10000.0f, -static_cast<float>(j) / kPairs);
            const float c = std::cos(angle), s = std::sin(angle);
            float * m = &pe[static_cast<size_t>(4 * (j + kPairs * t))];
            m[0] = c, m[1] = -s, m[2] = s, m[3] = c;
        }
    ggml_backend_tensor_set(g.pe, pe.data(), 0, ggml_nbytes(g.pe));
}

bool never_observe(ggml_tensor *, bool ask, void *) { return !ask; }

struct Timing {
    double seconds = 0.0;
    bool fused = false;
    std::vector<float> y;
};

// Allocates g once on a fresh scheduler, then reports the best of kRepeats computations.
bool time_graph(ggml_backend_t cpu, const Graph & g, bool fusion_off, Timing & t, std::string & error) {
    std::unique_ptr<ggml_backend_sched, decltype(&ggml_backend_sched_free)> sched(
        ggml_backend_sched_new(&cpu, nullptr, 1, GGML_DEFAULT_GRAPH_SIZE, false, false),
        &ggml_backend_sched_free);
    if (fusion_off) ggml_backend_sched_set_eval_callback(sched.get(), never_observe, nullptr);
    if (!ggml_backend_sched_alloc_graph(sched.get(), g.graph)) {
        error = ggml_backend_get_last_error();
        return false;
    }
    t.fused = ggx::tools::fusion_fired(sched.get(), "sd.rms_norm_mul_rope.cpu");
    fill(g);
    t.seconds = 1e30;
    for (int r = 0; r <= kRepeats; ++r) {  // the first run warms up
        const auto start = std::chrono::steady_clock::now();
        if (ggml_backend_sched_graph_compute(sched.get(), g.graph) != GGML_STATUS_SUCCESS) {
            error = ggml_backend_get_last_error();
            return false;
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (r > 0) t.seconds = std::min(t.seconds, s);
    }
    t.y.resize(static_cast<size_t>(ggml_nelements(g.y)));
    ggml_backend_tensor_get(g.y, t.y.data(), 0, ggml_nbytes(g.y));
    return true;
}

double dram_gbs() {
    std::string json;
    if (const char * env = std::getenv("GGX_ROOFLINE"); env && *env) {
        json = ggx::tools::roofline_json(env);
    } else {
        const std::string tool = std::string(GGX_BENCH_SOURCE_DIR) + "/../shared/tools/roofline";
        std::unique_ptr<FILE, decltype(&pclose)> pipe(popen((tool + " 2>/dev/null").c_str(), "r"), &pclose);
        char buf[512];
        while (pipe && std::fgets(buf, sizeof buf, pipe.get()))
            json += buf;
    }
    return std::max(ggx::tools::roofline_number(json, "dram_triad_gbs_all"),
                    ggx::tools::roofline_number(json, "dram_triad_gbs_1t"));
}

}  // namespace

std::string sd_rope_report() {
    const double roof_gbs = dram_gbs();  // before the big buffers exist
    const sd_ggml_ext_status registered = sd_ggml_register_extensions();
    if (registered == SD_GGML_EXT_FAILED)
        return std::string("{\"error\": \"sd_ggml_register_extensions: ") + ggml_backend_get_last_error() +
               "\"}";
    ggml_backend_t cpu = ggml_backend_cpu_init();
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ggml_backend_cpu_set_n_threads(cpu, threads);
    ggml_backend_dev_t device = ggml_backend_get_device(cpu);

    // A fresh graph per scheduler: a freed scheduler leaves its tensors pointing at freed buffers.
    std::string error;
    Timing fused, separate, decomposed;
    const auto run = [&](bool decomposed_graph, bool fusion_off, Timing & t) {
        Graph g = build(decomposed_graph);
        if (!g.graph)
            error = "graph construction failed";
        else
            time_graph(cpu, g, fusion_off, t, error);
        ggml_free(g.ctx);
    };
    run(false, false, fused);
    if (error.empty()) run(false, true, separate);
    const bool was_enabled = ggml_ext_dev_get_enabled(device);
    ggml_ext_dev_set_enabled(device, false);
    if (error.empty()) run(true, false, decomposed);
    ggml_ext_dev_set_enabled(device, was_enabled);
    ggml_backend_free(cpu);
    if (!error.empty()) return "{\"error\": \"" + error.substr(0, 400) + "\"}";

    const auto same = [](const std::vector<float> & a, const std::vector<float> & b) {
        return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    const double elems = static_cast<double>(kDim * kHeads * kTokens * kBatch);
    const double bytes = 4.0 * (2.0 * elems + 4.0 * kPairs * kTokens + kDim);  // x, out, pe, w
    const double gbs = bytes / fused.seconds / 1e9;
    char out[1024];
    std::snprintf(
        out, sizeof out,
        "{\"x\": [%lld, %lld, %lld, %lld], \"interleaved\": true, \"threads\": %d, "
        "\"fusion_fired\": %s, \"fused_ms\": %.3f, \"three_ops_ms\": %.3f, \"decomposed_native_ms\": %.3f, "
        "\"speedup_vs_three_ops\": %.2f, \"goal_speedup\": 2.0, \"speedup_vs_decomposed\": %.2f, "
        "\"fused_bytes\": %.0f, \"fused_gbs\": %.2f, \"roofline_dram_triad_gbs\": %.2f, "
        "\"bandwidth_ratio\": %.3f, \"results_agree\": %s}",
        static_cast<long long>(kDim), static_cast<long long>(kHeads), static_cast<long long>(kTokens),
        static_cast<long long>(kBatch), threads, fused.fused && !separate.fused ? "true" : "false",
        fused.seconds * 1e3, separate.seconds * 1e3, decomposed.seconds * 1e3,
        separate.seconds / fused.seconds, decomposed.seconds / fused.seconds, bytes, gbs, roof_gbs,
        roof_gbs > 0.0 ? gbs / roof_gbs : 0.0,
        same(fused.y, separate.y) && same(fused.y, decomposed.y) ? "true" : "false");
    return out;
}
