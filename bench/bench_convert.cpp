// Benchmarks of the row conversions of ggml.h on one thread, over rows of 16 Mi elements (larger than
// the last-level cache, so every pass streams from and to DRAM).
//
//  Convert/<name>: one call of the row function over the whole row per iteration; counter GBs counts
//    the bytes read plus the bytes written per second (e.g. 6 bytes per element for F32 -> F16).
//
// With GGX_ROOFLINE set to the JSON of ../shared/tools/roofline (the text or a file holding it), the
// counter bw_ratio (GBs / dram_triad_gbs_1t, the single-thread streaming bandwidth) is added, e.g.
//   GGX_ROOFLINE="$(../shared/tools/roofline)" ./bench_convert
#include <benchmark/benchmark.h>

#include <ggml.h>
#include "common/roofline.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int64_t kElements = int64_t(16) << 20;

// Deterministic pseudo-random values in [-1, 1).
std::vector<float> random_floats(int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (float & x : v) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x = static_cast<float>(static_cast<int64_t>(s >> 40) - (int64_t(1) << 23)) /
            static_cast<float>(1 << 23);
    }
    return v;
}

// Times `body` (one pass over the row) per iteration and sets the GBs / bw_ratio counters.
template <class Body>
void run(benchmark::State & state, double bytes_per_pass, Body && body) {
    body();  // warm-up: page in both buffers
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) {
        body();
        benchmark::ClobberMemory();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.counters["GBs"] =
        benchmark::Counter(bytes_per_pass * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    const double bw = ggx::tools::roofline_from_env("dram_triad_gbs_1t");
    if (bw > 0 && seconds > 0 && state.iterations() > 0)
        state.counters["bw_ratio"] =
            bytes_per_pass * static_cast<double>(state.iterations()) / seconds / (bw * 1e9);
}

// F32 -> type through ggml_quantize_row (F16 / BF16 / Q8_0 / Q4_0).
void BM_FromF32(benchmark::State & state, ggml_type type) {
    const std::vector<float> src = random_floats(kElements);
    std::vector<uint8_t> dst(ggml_row_size(type, kElements));
    const double bytes = static_cast<double>(kElements * sizeof(float) + dst.size());
    run(state, bytes, [&] { ggml_quantize_row(type, src.data(), dst.data(), kElements); });
}

// type -> F32 through ggml_dequantize_row.
void BM_ToF32(benchmark::State & state, ggml_type type) {
    const std::vector<float> values = random_floats(kElements);
    std::vector<uint8_t> src(ggml_row_size(type, kElements));
    ggml_quantize_row(type, values.data(), src.data(), kElements);
    std::vector<float> dst(static_cast<size_t>(kElements));
    const double bytes = static_cast<double>(src.size() + kElements * sizeof(float));
    run(state, bytes, [&] { ggml_dequantize_row(type, src.data(), dst.data(), kElements); });
}

// The dedicated F16 / BF16 row functions (the same code as the F16 / BF16 cases above, called directly).
void BM_Fp32ToFp16Row(benchmark::State & state) {
    const std::vector<float> src = random_floats(kElements);
    std::vector<ggml_fp16_t> dst(static_cast<size_t>(kElements));
    run(state, 6.0 * kElements, [&] { ggml_fp32_to_fp16_row(src.data(), dst.data(), kElements); });
}

void BM_Fp16ToFp32Row(benchmark::State & state) {
    const std::vector<float> values = random_floats(kElements);
    std::vector<ggml_fp16_t> src(static_cast<size_t>(kElements));
    ggml_fp32_to_fp16_row(values.data(), src.data(), kElements);
    std::vector<float> dst(static_cast<size_t>(kElements));
    run(state, 6.0 * kElements, [&] { ggml_fp16_to_fp32_row(src.data(), dst.data(), kElements); });
}

void BM_Fp32ToBf16Row(benchmark::State & state) {
    const std::vector<float> src = random_floats(kElements);
    std::vector<ggml_bf16_t> dst(static_cast<size_t>(kElements));
    run(state, 6.0 * kElements, [&] { ggml_fp32_to_bf16_row(src.data(), dst.data(), kElements); });
}

void BM_Bf16ToFp32Row(benchmark::State & state) {
    const std::vector<float> values = random_floats(kElements);
    std::vector<ggml_bf16_t> src(static_cast<size_t>(kElements));
    ggml_fp32_to_bf16_row(values.data(), src.data(), kElements);
    std::vector<float> dst(static_cast<size_t>(kElements));
    run(state, 6.0 * kElements, [&] { ggml_bf16_to_fp32_row(src.data(), dst.data(), kElements); });
}

}  // namespace

BENCHMARK_CAPTURE(BM_FromF32, f32_memcpy, GGML_TYPE_F32)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fp32ToFp16Row)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fp16ToFp32Row)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fp32ToBf16Row)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Bf16ToFp32Row)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FromF32, q8_0, GGML_TYPE_Q8_0)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ToF32, q8_0, GGML_TYPE_Q8_0)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FromF32, q4_0, GGML_TYPE_Q4_0)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ToF32, q4_0, GGML_TYPE_Q4_0)->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
