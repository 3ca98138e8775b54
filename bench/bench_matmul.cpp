// Benchmarks of the CPU MUL_MAT and FLASH_ATTN_EXT kernels through the CPU backend (all hardware
// threads unless GGX_THREADS is set).
//
//  MulMat/<a type>/<n>: a [K = 14336, M = 4096] of F32/F16/BF16/Q8_0/Q4_0 times b F32 [K, n]; counters
//    GFLOPs (2 M N K per second) and GBs (bytes of a read per second).
//  FlashAttn/<tokens>: D = Dv = 128, n_q = n_kv = tokens, 4 heads, F16 K/V, no mask; counter GFLOPs
//    counted as 4 D n_q n_kv per head.
//  FlashAttnDecode/<n_kv>: one query, 32 heads over 8 kv heads (GQA), F16 K/V; counter GBs of K/V.
//
// With GGX_ROOFLINE set to the JSON of ../shared/tools/roofline (the text or a file holding it), the
// counters peak_ratio (GFLOPs / fp32_fma_gflops_all; n > 8 and attention) and bw_ratio
// (GBs / dram_read_gbs_all; n == 1 and decoding) are added, e.g.
//   GGX_ROOFLINE="$(../shared/tools/roofline)" ./bench_matmul
#include <benchmark/benchmark.h>

#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>
#include "common/roofline.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

struct BackendDeleter {
    void operator()(ggml_backend_t backend) const { ggml_backend_free(backend); }
};
struct ContextDeleter {
    void operator()(ggml_context * ctx) const { ggml_free(ctx); }
};

ggml_backend_t backend() {
    static const std::unique_ptr<ggml_backend, BackendDeleter> cpu([] {
        ggml_backend_t b = ggml_backend_cpu_init();
        if (const char * t = std::getenv("GGX_THREADS")) ggml_backend_cpu_set_n_threads(b, std::atoi(t));
        return b;
    }());
    return cpu.get();
}

// Ratios to the roofline from this benchmark's own real time per iteration.
void add_ratios(benchmark::State & state, double seconds, double flops, double bytes) {
    const double peak = ggx::tools::roofline_from_env("fp32_fma_gflops_all"),
                 bw = ggx::tools::roofline_from_env("dram_read_gbs_all");
    if (seconds <= 0.0) return;
    if (peak > 0 && flops > 0) state.counters["peak_ratio"] = flops / seconds / (peak * 1e9);
    if (bw > 0 && bytes > 0) state.counters["bw_ratio"] = bytes / seconds / (bw * 1e9);
}

// Deterministic pseudo-random values in [-1, 1).
struct Lcg {
    uint64_t s = 0x9E3779B97F4A7C15ull;
    float next() {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<float>(static_cast<int64_t>(s >> 40) - (int64_t(1) << 23)) /
               static_cast<float>(1 << 23);
    }
};

// Fills a contiguous tensor row by row, converting / quantizing F32 values to its type.
void fill(ggml_tensor * t, Lcg & rng, float scale = 1.0f) {
    const int64_t n0 = t->ne[0];
    std::vector<float> row(static_cast<size_t>(n0));
    for (int64_t r = 0; r < ggml_nrows(t); ++r) {
        for (float & v : row)
            v = rng.next() * scale;
        char * dst = static_cast<char *>(t->data) + r * t->nb[1];
        if (t->type == GGML_TYPE_F32)
            std::copy(row.begin(), row.end(), reinterpret_cast<float *>(dst));
        else
            ggml_quantize_row(t->type, row.data(), dst, n0);
    }
}

// Runs the graph once to warm up, then per iteration; returns the mean real seconds per iteration.
double run_graph(benchmark::State & state, ggml_cgraph * graph) {
    if (ggml_backend_graph_compute(backend(), graph) != GGML_STATUS_SUCCESS) {
        state.SkipWithError("graph_compute failed");
        return 0.0;
    }
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state)
        ggml_backend_graph_compute(backend(), graph);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return state.iterations() > 0 ? seconds / static_cast<double>(state.iterations()) : 0.0;
}

void BM_MulMat(benchmark::State & state, ggml_type type) {
    const int64_t M = 4096, K = 14336, N = state.range(0);
    const size_t bytes_a = ggml_row_size(type, K) * M;
    const size_t mem = bytes_a + sizeof(float) * static_cast<size_t>(K * N + M * N) + (16u << 20);
    std::unique_ptr<ggml_context, ContextDeleter> ctx(ggml_init({mem, nullptr, false}));
    ggml_tensor * a = ggml_new_tensor_2d(ctx.get(), type, K, M);
    ggml_tensor * b = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, K, N);
    Lcg rng;
    fill(a, rng);
    fill(b, rng);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, ggml_mul_mat(ctx.get(), a, b));
    const double seconds = run_graph(state, graph);
    const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
    state.counters["GFLOPs"] =
        benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["GBs"] = benchmark::Counter(static_cast<double>(bytes_a) * 1e-9,
                                               benchmark::Counter::kIsIterationInvariantRate);
    add_ratios(state, seconds, N > 8 ? flops : 0.0, N == 1 ? static_cast<double>(bytes_a) : 0.0);
}

void BM_FlashAttn(benchmark::State & state) {
    const int64_t D = 128, T = state.range(0), H = 4;
    const size_t mem = sizeof(float) * static_cast<size_t>(D * T * H * 2) +
                       sizeof(uint16_t) * static_cast<size_t>(2 * D * T * H) + (16u << 20);
    std::unique_ptr<ggml_context, ContextDeleter> ctx(ggml_init({mem, nullptr, false}));
    ggml_tensor * q = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, D, T, H, 1);
    ggml_tensor * k = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F16, D, T, H, 1);
    ggml_tensor * v = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F16, D, T, H, 1);
    Lcg rng;
    fill(q, rng);
    fill(k, rng);
    fill(v, rng);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(
        graph, ggml_flash_attn_ext(ctx.get(), q, k, v, nullptr, 1.0f / std::sqrt(128.0f), 0.0f, 0.0f));
    const double seconds = run_graph(state, graph);
    const double flops = 4.0 * static_cast<double>(D) * static_cast<double>(T) * static_cast<double>(T) *
                         static_cast<double>(H);
    state.counters["GFLOPs"] =
        benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    add_ratios(state, seconds, flops, 0.0);
}

void BM_FlashAttnDecode(benchmark::State & state) {
    const int64_t D = 128, NKV = state.range(0), H = 32, HK = 8;
    const size_t mem = sizeof(float) * static_cast<size_t>(D * H * 2) +
                       sizeof(uint16_t) * static_cast<size_t>(2 * D * NKV * HK) + (16u << 20);
    std::unique_ptr<ggml_context, ContextDeleter> ctx(ggml_init({mem, nullptr, false}));
    ggml_tensor * q = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F32, D, 1, H, 1);
    ggml_tensor * k = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F16, D, NKV, HK, 1);
    ggml_tensor * v = ggml_new_tensor_4d(ctx.get(), GGML_TYPE_F16, D, NKV, HK, 1);
    Lcg rng;
    fill(q, rng);
    fill(k, rng);
    fill(v, rng);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(
        graph, ggml_flash_attn_ext(ctx.get(), q, k, v, nullptr, 1.0f / std::sqrt(128.0f), 0.0f, 0.0f));
    const double seconds = run_graph(state, graph);
    const double bytes = static_cast<double>(ggml_nbytes(k) + ggml_nbytes(v));
    state.counters["GBs"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    add_ratios(state, seconds, 0.0, bytes);
}

}  // namespace

BENCHMARK_CAPTURE(BM_MulMat, f32, GGML_TYPE_F32)
    ->Arg(1)
    ->Arg(8)
    ->Arg(512)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MulMat, f16, GGML_TYPE_F16)
    ->Arg(1)
    ->Arg(8)
    ->Arg(512)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MulMat, bf16, GGML_TYPE_BF16)
    ->Arg(1)
    ->Arg(8)
    ->Arg(512)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MulMat, q8_0, GGML_TYPE_Q8_0)
    ->Arg(1)
    ->Arg(8)
    ->Arg(512)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MulMat, q4_0, GGML_TYPE_Q4_0)
    ->Arg(1)
    ->Arg(8)
    ->Arg(512)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashAttn)->Arg(512)->Arg(4096)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashAttnDecode)->Arg(4096)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
