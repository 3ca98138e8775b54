// Overheads of the CPU backend's thread pool: one barrier among all threads, and one empty run()
// dispatched back to back and after the workers fell asleep.
#include <benchmark/benchmark.h>

#include <chrono>
#include <thread>

#include "cpu/threadpool.h"

namespace {

using ggx::cpu::ThreadContext;
using ggx::cpu::ThreadPool;

void BM_Barrier(benchmark::State & state) {
    ThreadPool pool(static_cast<int>(state.range(0)));
    constexpr int kBarriersPerRun = 1000;
    for (auto _ : state) {
        pool.run([](const ThreadContext & ctx) {
            for (int i = 0; i < kBarriersPerRun; ++i)
                ctx.barrier();
        });
    }
    state.SetItemsProcessed(state.iterations() * kBarriersPerRun);  // items/s = barriers/s
}
BENCHMARK(BM_Barrier)->Arg(2)->Arg(4);

void BM_EmptyRun(benchmark::State & state) {
    ThreadPool pool(static_cast<int>(state.range(0)));
    for (auto _ : state)
        pool.run([](const ThreadContext &) {});
}
BENCHMARK(BM_EmptyRun)->Arg(1)->Arg(2);

void BM_EmptyRunAfterSleep(benchmark::State & state) {
    ThreadPool pool(2);
    for (auto _ : state) {
        state.PauseTiming();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let the worker block
        state.ResumeTiming();
        pool.run([](const ThreadContext &) {});
    }
}
BENCHMARK(BM_EmptyRunAfterSleep);

}  // namespace

BENCHMARK_MAIN();
