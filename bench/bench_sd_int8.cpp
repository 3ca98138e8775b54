// Benchmark of the sd pack's INT8 GEMM (sd.linear_i8.v1 with I8 activations, weight scales and bias)
// through the CPU backend (all hardware threads unless GGX_THREADS is set).
//
//  LinearI8/<K>/<N>/<M>/<amx>: weight I8 [K, N] times activations I8 [K, M]; amx 1 uses the AMX
//    tiles where the CPU has them (skipped elsewhere), 0 the AVX-512 VNNI / AVX2 path. Counter GOPs
//    (2 M N K per second). Shapes: K = N = 3072, M = 256 (ggx-bench sd-int8), and ggx-run's DiT
//    linears at 1024 tokens (hidden 1024, FFN 2816), and K = 1024, N = 512, M = 256 (every operand
//    L2-resident: the tile loop's own speed).
//
// With GGX_ROOFLINE set to the JSON of ../shared/tools/roofline, peak_ratio is GOPs over the peak of
// the unit that ran: amx_int8_gops_all with AMX, int8_dot_gops_all otherwise.
#include <benchmark/benchmark.h>

#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>

#include "common/roofline.h"
#include "cpu/int8_amx.h"
#include "sd-ggml-ext.h"

namespace {

struct BackendDeleter {
    void operator()(ggml_backend_t backend) const { ggml_backend_free(backend); }
};
struct ContextDeleter {
    void operator()(ggml_context * ctx) const { ggml_free(ctx); }
};

ggml_backend_t backend() {
    static const std::unique_ptr<ggml_backend, BackendDeleter> cpu([] {
        sd_ggml_register_extensions();
        ggml_backend_t b = ggml_backend_cpu_init();
        if (const char * t = std::getenv("GGX_THREADS")) ggml_backend_cpu_set_n_threads(b, std::atoi(t));
        return b;
    }());
    return cpu.get();
}

void fill(ggml_tensor * t, std::mt19937 & rng) {
    if (t->type == GGML_TYPE_I8) {
        std::uniform_int_distribution<int> u(-127, 127);
        for (int64_t i = 0; i < ggml_nelements(t); ++i)
            static_cast<int8_t *>(t->data)[i] = static_cast<int8_t>(u(rng));
    } else {
        std::uniform_real_distribution<float> u(0.001f, 0.01f);
        for (int64_t i = 0; i < ggml_nelements(t); ++i)
            static_cast<float *>(t->data)[i] = u(rng);
    }
}

void BM_LinearI8(benchmark::State & state) {
    const int64_t K = state.range(0), N = state.range(1), M = state.range(2);
    const bool amx = state.range(3) != 0;
    if (amx && !sd::int8::cpu::amx::available()) {
        state.SkipWithError("no AMX-INT8 on this CPU");
        return;
    }
    sd::int8::cpu::amx::set_enabled(amx);
    const size_t mem = size_t(K * (N + M)) + sizeof(float) * size_t(N * M + 2 * N + M) + (1u << 20);
    std::unique_ptr<ggml_context, ContextDeleter> ctx(ggml_init({mem, nullptr, false}));
    std::mt19937 rng(7);
    ggml_tensor * w = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_I8, K, N);
    ggml_tensor * x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_I8, K, M);
    ggml_tensor * sw = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, N);
    ggml_tensor * bias = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, N);
    ggml_tensor * sx = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, M);
    for (ggml_tensor * t : {w, x, sw, bias, sx})
        fill(t, rng);
    ggml_tensor * y = ggml_mul_mat_i8_tensorwise(ctx.get(), w, x, sw, bias, 0, sx);
    ggml_cgraph * graph = ggml_new_graph(ctx.get());
    ggml_build_forward_expand(graph, y);
    if (!y || ggml_backend_graph_compute(backend(), graph) != GGML_STATUS_SUCCESS) {
        state.SkipWithError(ggml_backend_get_last_error());
        return;
    }
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state)
        ggml_backend_graph_compute(backend(), graph);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                           double(std::max<int64_t>(1, state.iterations()));
    const double ops = 2.0 * double(M) * double(N) * double(K);
    state.counters["GOPs"] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    const double peak = ggx::tools::roofline_from_env(amx ? "amx_int8_gops_all" : "int8_dot_gops_all");
    if (peak > 0 && seconds > 0) state.counters["peak_ratio"] = ops / seconds / (peak * 1e9);
    sd::int8::cpu::amx::set_enabled(true);
}

void shapes(benchmark::internal::Benchmark * b) {
    for (int amx : {1, 0}) {
        b->Args({3072, 3072, 256, amx});
        b->Args({1024, 512, 256, amx});    // every operand L2-resident
        b->Args({1024, 1024, 1024, amx});  // ggx-run: attention projections
        b->Args({1024, 5632, 1024, amx});  // MLP gate and up, packed
        b->Args({2816, 1024, 1024, amx});  // MLP down
    }
}

BENCHMARK(BM_LinearI8)->Apply(shapes)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
