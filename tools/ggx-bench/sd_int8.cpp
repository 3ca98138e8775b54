// ggx-bench sd-int8: the sd pack's INT8 linear and ConvRot quantization on the CPU backend (all its
// threads), graphs computed directly on the backend:
//   linear:  K = N = 3072, M = 256, ConvRot G = 256, the packed activation reused: one
//            sd.quantize_i8_convrot.v1 node feeding kLinears sd.linear_i8.v1 nodes. The GEMM time
//            per linear is (t(quantize + linears) - t(quantize)) / kLinears. Compared with the
//            native F32 GGML_OP_MUL_MAT of the same shape (goal: >= 1.5x its throughput), and as int8
//            GOP/s (2 M N K per product) against the peak of the unit the kernel runs on
//            (../shared/tools/roofline's amx_int8_gops_all where the CPU backend reports AMX_INT8,
//            else int8_dot_gops_all; twice the FP32 FMA peak when the roofline has neither).
//   convrot: sd.quantize_i8_convrot.v1 of F32 [3072, 4096], G = 256: bytes read + written per
//            second against the roofline's DRAM triad bandwidth (goal: >= 50%).
// Median of kRuns after a warm-up. The roofline JSON comes from GGX_ROOFLINE (text or file) or the tool.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/roofline.h"
#include "sd-ggml-ext.h"

namespace {

constexpr int64_t kK = 3072, kN = 3072, kM = 256;
constexpr int64_t kQK = 3072, kQRows = 4096;
constexpr int kG = 256, kLinears = 4, kRuns = 7;

struct CtxDeleter {
    void operator()(ggml_context * c) const { ggml_free(c); }
};

double median_seconds(ggml_backend_t backend, ggml_cgraph * graph) {
    ggml_backend_graph_compute(backend, graph);  // warm-up
    std::vector<double> t;
    for (int r = 0; r < kRuns; ++r) {
        const auto start = std::chrono::steady_clock::now();
        ggml_backend_graph_compute(backend, graph);
        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

std::string roofline() {
    if (const char * env = std::getenv("GGX_ROOFLINE"); env && *env) return ggx::tools::roofline_json(env);
    std::string json;
    const std::string tool = std::string(GGX_BENCH_SOURCE_DIR) + "/../shared/tools/roofline";
    std::unique_ptr<FILE, decltype(&pclose)> pipe(popen((tool + " 2>/dev/null").c_str(), "r"), &pclose);
    char buf[512];
    while (pipe && std::fgets(buf, sizeof buf, pipe.get()))
        json += buf;
    return json;
}

void fill(ggml_tensor * t, std::mt19937 & rng) {
    if (t->type == GGML_TYPE_I8) {
        std::uniform_int_distribution<int> u(-127, 127);
        for (int64_t i = 0; i < ggml_nelements(t); ++i)
            static_cast<int8_t *>(t->data)[i] = static_cast<int8_t>(u(rng));
    } else {
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (int64_t i = 0; i < ggml_nelements(t); ++i)
            static_cast<float *>(t->data)[i] = u(rng);
    }
}

// The int8 unit sd.linear_i8 runs on and its peak in GOP/s.
std::pair<const char *, double> int8_unit(const std::string & json) {
    const bool amx = ggx::tools::cpu_has_feature("AMX_INT8");
    const double peak = ggx::tools::roofline_number(json, amx ? "amx_int8_gops_all" : "int8_dot_gops_all");
    if (peak > 0) return {amx ? "amx" : "int8_dot", peak};
    return {"2x_fp32_fma", 2.0 * std::max(ggx::tools::roofline_number(json, "fp32_fma_gflops_all"),
                                          ggx::tools::roofline_number(json, "fp32_fma_gflops_1t"))};
}

}  // namespace

std::string sd_int8_report() {
    const std::string json = roofline();
    const auto [unit, int8_peak] = int8_unit(json);
    const double dram_gbs = std::max(ggx::tools::roofline_number(json, "dram_triad_gbs_all"),
                                     ggx::tools::roofline_number(json, "dram_triad_gbs_1t"));
    if (sd_ggml_register_extensions() == SD_GGML_EXT_FAILED)
        return std::string("{\"error\": \"registration failed\"}");
    ggml_backend_t cpu = ggml_backend_cpu_init();
    std::mt19937 rng(7);
    std::unique_ptr<ggml_context, CtxDeleter> ctx(ggml_init({size_t(256) << 20, nullptr, false}));
    ggml_context * c = ctx.get();

    // INT8: one packed activation, kLinears products reading it.
    ggml_tensor * x = ggml_new_tensor_2d(c, GGML_TYPE_F32, kK, kM);
    fill(x, rng);
    ggml_tensor * packed = ggml_quantize_i8_convrot(c, x, kG);
    ggml_cgraph * gq = ggml_new_graph(c);
    ggml_build_forward_expand(gq, packed);
    ggml_cgraph * gl = ggml_new_graph(c);
    for (int i = 0; i < kLinears; ++i) {
        ggml_tensor * w = ggml_new_tensor_2d(c, GGML_TYPE_I8, kK, kN);
        ggml_tensor * s = ggml_new_tensor_1d(c, GGML_TYPE_F32, kN);
        ggml_tensor * b = ggml_new_tensor_1d(c, GGML_TYPE_F32, kN);
        fill(w, rng), fill(s, rng), fill(b, rng);
        ggml_build_forward_expand(gl, ggml_mul_mat_i8_tensorwise(c, w, packed, s, b, kG, nullptr));
    }
    // F32 baseline of the same shape.
    ggml_tensor * wf = ggml_new_tensor_2d(c, GGML_TYPE_F32, kK, kN);
    fill(wf, rng);
    ggml_cgraph * gf = ggml_new_graph(c);
    ggml_build_forward_expand(gf, ggml_mul_mat(c, wf, x));

    const double t_q = median_seconds(cpu, gq);
    const double t_all = median_seconds(cpu, gl);
    const double t_gemm = std::max(1e-9, (t_all - t_q) / kLinears);
    const double t_f32 = median_seconds(cpu, gf);
    const double ops = 2.0 * double(kM) * double(kN) * double(kK);
    const double int8_gops = ops / t_gemm * 1e-9, f32_gflops = ops / t_f32 * 1e-9;

    // ConvRot quantization of [3072, 4096].
    ggml_tensor * xq = ggml_new_tensor_2d(c, GGML_TYPE_F32, kQK, kQRows);
    fill(xq, rng);
    ggml_tensor * pq = ggml_quantize_i8_convrot(c, xq, kG);
    ggml_cgraph * gc = ggml_new_graph(c);
    ggml_build_forward_expand(gc, pq);
    const double t_c = median_seconds(cpu, gc);
    const double bytes = double(ggml_nbytes(xq) + ggml_nbytes(pq));
    const double quant_gbs = bytes / t_c * 1e-9;

    char out[1024];
    std::snprintf(
        out, sizeof out,
        "{\"hw_threads\": %d, \"linear\": {\"K\": %lld, \"N\": %lld, \"M\": %lld, \"G\": %d, "
        "\"linears_per_packed\": %d, "
        "\"int8_gemm_ms\": %.3f, \"quantize_ms\": %.3f, \"f32_mul_mat_ms\": %.3f, \"int8_gops\": %.1f, "
        "\"f32_gflops\": %.1f, \"speedup_vs_f32\": %.2f, \"goal_speedup\": 1.5, \"int8_unit\": \"%s\", "
        "\"int8_peak_gops\": %.1f, \"int8_fraction_of_peak\": %.3f}, "
        "\"convrot\": {\"shape\": [%lld, %lld], \"G\": %d, \"ms\": %.3f, \"gbs\": %.2f, \"dram_triad_gbs\": "
        "%.2f, "
        "\"fraction_of_dram\": %.3f, \"goal_fraction\": 0.5}}",
        static_cast<int>(std::thread::hardware_concurrency()), (long long)kK, (long long)kN, (long long)kM,
        kG, kLinears, t_gemm * 1e3, t_q * 1e3, t_f32 * 1e3, int8_gops, f32_gflops, t_f32 / t_gemm, unit,
        int8_peak, int8_peak > 0 ? int8_gops / int8_peak : 0.0, (long long)kQK,
        (long long)kQRows, kG, t_c * 1e3, quant_gbs, dram_gbs, dram_gbs > 0 ? quant_gbs / dram_gbs : 0.0);
    ggml_backend_free(cpu);
    return out;
}
