// The CPU thread pool: dispatch, chunking, barrier ordering, resizing, abort polling and teardown.
// Shared state written by tasks is deliberately plain (non-atomic) where the pool's barrier or run
// completion is what orders it, so that ThreadSanitizer checks those guarantees.
#include "cpu/threadpool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using ggx::cpu::chunk_range;
using ggx::cpu::ThreadContext;
using ggx::cpu::ThreadPool;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs once on pool and checks that each index 0 .. n-1 ran exactly once with nth == n.
void expect_each_index_once(ThreadPool & pool) {
    const int n = pool.n_threads();
    std::vector<int> runs(static_cast<size_t>(n), 0);
    std::atomic<int> bad_nth{0};
    pool.run([&](const ThreadContext & ctx) {
        if (ctx.nth != n) bad_nth.fetch_add(1);
        ++runs[static_cast<size_t>(ctx.ith)];  // a duplicated ith would also be a data race
    });
    EXPECT_EQ(bad_nth.load(), 0);
    for (int i = 0; i < n; ++i)
        EXPECT_EQ(runs[static_cast<size_t>(i)], 1) << "ith " << i << " of " << n;
}

TEST(ThreadPool, RejectsBadThreadCounts) {
    EXPECT_THROW(ThreadPool(0), std::invalid_argument);
    EXPECT_THROW(ThreadPool(-1), std::invalid_argument);
    EXPECT_THROW(ThreadPool(ggx::cpu::kMaxThreads + 1), std::invalid_argument);

    ThreadPool pool(2);
    EXPECT_THROW(pool.set_n_threads(0), std::invalid_argument);
    EXPECT_THROW(pool.set_n_threads(ggx::cpu::kMaxThreads + 1), std::invalid_argument);
    EXPECT_EQ(pool.n_threads(), 2);
    expect_each_index_once(pool);
}

TEST(ThreadPool, EveryThreadIndexRunsOncePerRun) {
    for (int n : {1, 2, 3, 4, 8, 16}) {
        ThreadPool pool(n);
        EXPECT_EQ(pool.n_threads(), n);
        for (int run = 0; run < 20; ++run)
            expect_each_index_once(pool);
    }
}

TEST(ThreadPool, SingleThreadRunsOnTheCaller) {
    ThreadPool pool(1);
    std::thread::id ran_on;
    pool.run([&](const ThreadContext & ctx) {
        ran_on = std::this_thread::get_id();
        ctx.barrier();  // no-op with one thread
        EXPECT_EQ(ctx.ith, 0);
        EXPECT_EQ(ctx.nth, 1);
    });
    EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(ThreadPool, CallerIsThreadZero) {
    ThreadPool pool(3);
    std::thread::id zero;
    pool.run([&](const ThreadContext & ctx) {
        if (ctx.ith == 0) zero = std::this_thread::get_id();
    });
    EXPECT_EQ(zero, std::this_thread::get_id());
}

// TaskRef is two pointers, takes objects (functions by pointer) and respects const.
struct NonConstTask {
    void operator()(const ThreadContext &) {}
};
void plain_task(const ThreadContext &) {}
static_assert(std::is_trivially_copyable_v<ggx::cpu::TaskRef> &&
              sizeof(ggx::cpu::TaskRef) == 2 * sizeof(void *));
static_assert(std::is_constructible_v<ggx::cpu::TaskRef, decltype(&plain_task)>);
static_assert(std::is_constructible_v<ggx::cpu::TaskRef, NonConstTask &>);
static_assert(!std::is_constructible_v<ggx::cpu::TaskRef, const NonConstTask &>);
static_assert(!std::is_constructible_v<ggx::cpu::TaskRef, int>);

TEST(ThreadPool, AcceptsAnyCallable) {
    ThreadPool pool(2);
    std::atomic<int> calls{0};
    auto lambda = [&](const ThreadContext &) { calls.fetch_add(1); };
    pool.run(lambda);
    const auto const_lambda = lambda;
    pool.run(const_lambda);
    int mutable_count = 0;  // one lambda object serves every thread: only thread 0 may write it
    pool.run([&calls, mutable_count](const ThreadContext & ctx) mutable {
        if (ctx.ith == 0) ++mutable_count;
        calls.fetch_add(1);
    });
    static std::atomic<int> fn_calls;
    fn_calls.store(0);
    void (*fn)(const ThreadContext &) = [](const ThreadContext &) { fn_calls.fetch_add(1); };
    pool.run(fn);
    pool.run(&plain_task);
    EXPECT_EQ(calls.load(), 6);
    EXPECT_EQ(fn_calls.load(), 2);
}

// Checks chunk_range(n, *, nth) against its contract: contiguous, in order, sizes floor or ceil of
// n / nth with the longer chunks first.
void expect_exact_cover(int64_t n, int nth) {
    int64_t expected_begin = 0;
    for (int ith = 0; ith < nth; ++ith) {
        const auto [begin, end] = chunk_range(n, ith, nth);
        ASSERT_EQ(begin, expected_begin) << "n " << n << " ith " << ith << " nth " << nth;
        const int64_t size = n / nth + (ith < n % nth ? 1 : 0);
        ASSERT_EQ(end - begin, size) << "n " << n << " ith " << ith << " nth " << nth;
        expected_begin = end;
    }
    ASSERT_EQ(expected_begin, n) << "n " << n << " nth " << nth;
}

TEST(ChunkRange, CoversRangeExactly) {
    for (int nth = 1; nth <= 40; ++nth) {
        for (int64_t n = 0; n <= 150; ++n)
            expect_exact_cover(n, nth);
    }
    for (int nth : {1, 3, 7, 64, 511, 512}) {
        for (int64_t n : {int64_t{1} << 31, (int64_t{1} << 40) + 7, int64_t{999'999'999'999}}) {
            expect_exact_cover(n, nth);
        }
    }
}

TEST(ThreadPool, ChunksCoverRangeInsideRuns) {
    for (int nth : {1, 2, 3, 5, 8}) {
        ThreadPool pool(nth);
        for (int64_t n : {0, 1, 2, 3, 4, 7, 8, 9, 31, 100}) {
            std::vector<int> hits(static_cast<size_t>(n), 0);  // disjoint chunks: no race
            pool.run([&](const ThreadContext & ctx) {
                const auto [begin, end] = ctx.chunk(n);
                for (int64_t i = begin; i < end; ++i)
                    ++hits[static_cast<size_t>(i)];
            });
            for (int64_t i = 0; i < n; ++i) {
                EXPECT_EQ(hits[static_cast<size_t>(i)], 1) << "i " << i << " n " << n << " nth " << nth;
            }
        }
    }
}

// Phase k: every thread writes slot[ith] = k, meets the others, checks every slot holds k, and meets
// them again before the next phase overwrites anything.
void run_phases(ThreadPool & pool, int phases) {
    const int n = pool.n_threads();
    std::vector<int> slot(static_cast<size_t>(n), -1);
    std::vector<int> mismatches(static_cast<size_t>(n), 0);
    pool.run([&](const ThreadContext & ctx) {
        for (int k = 0; k < phases; ++k) {
            slot[static_cast<size_t>(ctx.ith)] = k;
            ctx.barrier();
            for (int j = 0; j < ctx.nth; ++j) {
                if (slot[static_cast<size_t>(j)] != k) ++mismatches[static_cast<size_t>(ctx.ith)];
            }
            ctx.barrier();
        }
    });
    for (int i = 0; i < n; ++i)
        EXPECT_EQ(mismatches[static_cast<size_t>(i)], 0) << "thread " << i;
    for (int i = 0; i < n; ++i)
        EXPECT_EQ(slot[static_cast<size_t>(i)], phases - 1);
}

TEST(ThreadPool, BarrierPublishesEachPhase) {
    for (int n : {1, 2, 3, 8}) {
        ThreadPool pool(n);
        run_phases(pool, n > 2 ? 100 : 500);
        run_phases(pool, 3);  // the barrier state carries over between runs
    }
}

// Back-to-back runs, resizing every few runs through 1, 2, 3 and 8 threads (oversubscribed on small
// machines). Each run also sums its chunks across a barrier.
TEST(ThreadPool, BackToBackRunsWithResizing) {
    ThreadPool pool(1);
    const int sizes[] = {1, 2, 3, 8, 3, 1, 8, 2};
    constexpr int64_t kItems = 1000;
    for (int run = 0; run < 1000; ++run) {
        if (run % 5 == 0) pool.set_n_threads(sizes[(run / 5) % 8]);
        const int n = pool.n_threads();
        std::vector<int64_t> partial(static_cast<size_t>(n), 0);
        std::vector<int> runs(static_cast<size_t>(n), 0);
        int64_t total = -1;
        pool.run([&](const ThreadContext & ctx) {
            ++runs[static_cast<size_t>(ctx.ith)];
            const auto [begin, end] = ctx.chunk(kItems);
            for (int64_t i = begin; i < end; ++i)
                partial[static_cast<size_t>(ctx.ith)] += i;
            ctx.barrier();
            if (ctx.ith == ctx.nth - 1) {
                total = 0;
                for (int64_t p : partial)
                    total += p;
            }
        });
        ASSERT_EQ(total, kItems * (kItems - 1) / 2) << "run " << run << " threads " << n;
        for (int i = 0; i < n; ++i)
            ASSERT_EQ(runs[static_cast<size_t>(i)], 1) << "run " << run;
    }
}

// An abort callback that trips once a deadline has passed (or after a number of calls) and records
// whether two threads were ever inside it at once. calls is plain: the pool serialises the callback.
struct AbortProbe {
    Clock::time_point trip_at = Clock::time_point::max();
    int trip_after_calls = 1 << 30;
    int calls = 0;
    std::atomic<int> inside{0};
    std::atomic<bool> overlapped{false};

    static bool callback(void * data) {
        auto & probe = *static_cast<AbortProbe *>(data);
        if (probe.inside.fetch_add(1) != 0) probe.overlapped.store(true);
        for (int i = 0; i < 100; ++i) {
            if (probe.inside.load() != 1) probe.overlapped.store(true);  // also widens the window
        }
        const bool trip = ++probe.calls >= probe.trip_after_calls || Clock::now() >= probe.trip_at;
        probe.inside.fetch_sub(1);
        return trip;
    }
};

// Every thread loops until it sees the abort (or a 10 s safety deadline); thread 0 polls every
// iteration, the others mostly read the flag and poll now and then.
void run_until_aborted(ThreadPool & pool, std::vector<int> & saw_abort) {
    saw_abort.assign(static_cast<size_t>(pool.n_threads()), 0);
    const auto start = Clock::now();
    pool.run([&](const ThreadContext & ctx) {
        for (int64_t i = 0; seconds_since(start) < 10.0; ++i) {
            const bool stop = ctx.ith == 0 || i % 16 == 0 ? ctx.poll_abort() : ctx.should_abort();
            if (stop) {
                saw_abort[static_cast<size_t>(ctx.ith)] = 1;
                break;
            }
        }
    });
}

TEST(ThreadPool, AbortStopsLongLoopPromptly) {
    for (int n : {1, 2, 4}) {
        ThreadPool pool(n);
        AbortProbe probe;
        probe.trip_at = Clock::now() + std::chrono::milliseconds(50);
        pool.set_abort_callback(&AbortProbe::callback, &probe);
        std::vector<int> saw_abort;
        run_until_aborted(pool, saw_abort);
        EXPECT_LT(seconds_since(probe.trip_at), 1.0) << n << " threads";  // generous for sanitizers
        EXPECT_TRUE(pool.aborted());
        EXPECT_GT(probe.calls, 1);
        EXPECT_FALSE(probe.overlapped.load()) << n << " threads";
        for (int i = 0; i < n; ++i)
            EXPECT_EQ(saw_abort[static_cast<size_t>(i)], 1) << "thread " << i;
    }
}

// A graph-like loop: each step does uneven work while any thread may poll or request an abort at any
// time. Every thread must get the same barrier_and_should_abort() answer at every step, or threads
// leaving on it would deadlock the others; the steps run to the end here so that a bug fails rather
// than hangs.
TEST(ThreadPool, BarrierAbortDecisionIsTheSameOnEveryThread) {
    constexpr int kSteps = 600;
    for (int n : {2, 3, 8}) {
        for (bool requested : {false, true}) {
            ThreadPool pool(n);
            AbortProbe probe;
            probe.trip_after_calls = requested ? 1 << 30 : 200;
            pool.set_abort_callback(&AbortProbe::callback, &probe);
            std::vector<std::vector<char>> decisions(static_cast<size_t>(n), std::vector<char>(kSteps));
            pool.run([&](const ThreadContext & ctx) {
                auto & mine = decisions[static_cast<size_t>(ctx.ith)];
                for (int step = 0; step < kSteps; ++step) {
                    for (int i = 0; i < (step * 7 + ctx.ith * 13) % 32; ++i) {
                        if (i % 8 == 0) ctx.poll_abort();
                    }
                    if (requested && ctx.ith == ctx.nth - 1 && step == 300) ctx.request_abort();
                    mine[static_cast<size_t>(step)] = ctx.barrier_and_should_abort() ? 1 : 0;
                }
            });
            EXPECT_TRUE(pool.aborted());
            for (size_t i = 1; i < decisions.size(); ++i) {
                const auto & d = decisions[i];
                const auto agree_until =
                    std::mismatch(d.begin(), d.end(), decisions[0].begin()).first - d.begin();
                EXPECT_EQ(agree_until, kSteps) << "thread " << i << " of " << n << " disagrees with thread 0";
            }
            const auto first = std::find(decisions[0].begin(), decisions[0].end(), 1);
            ASSERT_NE(first, decisions[0].end());
            EXPECT_TRUE(std::all_of(first, decisions[0].end(), [](char d) { return d == 1; }));
            if (requested) {
                EXPECT_EQ(first - decisions[0].begin(), 300);
            }
        }
    }
}

TEST(ThreadPool, AbortFlagResetsForNextRun) {
    ThreadPool pool(3);
    AbortProbe probe;
    probe.trip_after_calls = 1;  // aborts at the first poll, in every run
    pool.set_abort_callback(&AbortProbe::callback, &probe);
    for (int run = 0; run < 5; ++run) {
        std::vector<int> at_start(3, 1), after_poll(3, 0);
        pool.run([&](const ThreadContext & ctx) {
            at_start[static_cast<size_t>(ctx.ith)] = ctx.should_abort() ? 1 : 0;
            ctx.barrier();  // nobody polls before everybody has looked at the fresh flag
            after_poll[static_cast<size_t>(ctx.ith)] = ctx.poll_abort() ? 1 : 0;
            ctx.barrier();
        });
        EXPECT_TRUE(pool.aborted());
        for (int i = 0; i < 3; ++i) {
            EXPECT_EQ(at_start[static_cast<size_t>(i)], 0) << "run " << run << " thread " << i;
        }
        // A thread that found the callback busy may have returned before the flag was set.
        EXPECT_GE(after_poll[0] + after_poll[1] + after_poll[2], 1) << "run " << run;
    }

    pool.set_abort_callback(nullptr, nullptr);
    bool polled = true;
    pool.run([&](const ThreadContext & ctx) {
        const bool p = ctx.poll_abort() || ctx.should_abort();
        if (ctx.ith == 0) polled = p;
    });
    EXPECT_FALSE(polled);
    EXPECT_FALSE(pool.aborted());
}

TEST(ThreadPool, DestroysRightAfterConstruction) {
    for (int i = 0; i < 20; ++i) {
        ThreadPool pool(1 + i % 8);
    }
    ThreadPool grown(1);
    grown.set_n_threads(6);
}

TEST(ThreadPool, DestroysAfterRunsAndAborts) {
    for (int n : {1, 2, 5}) {
        ThreadPool pool(n);
        run_phases(pool, 10);
        pool.set_n_threads(n + 2);
        expect_each_index_once(pool);
    }
    ThreadPool aborted(3);
    AbortProbe probe;
    probe.trip_after_calls = 1;
    aborted.set_abort_callback(&AbortProbe::callback, &probe);
    std::vector<int> saw_abort;
    run_until_aborted(aborted, saw_abort);
    EXPECT_TRUE(aborted.aborted());
}

TEST(ThreadPool, IdlePoolBurnsNoCpu) {
    ThreadPool pool(4);
    expect_each_index_once(pool);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the workers' spin
    const std::clock_t cpu_before = std::clock();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const double cpu_seconds = static_cast<double>(std::clock() - cpu_before) / CLOCKS_PER_SEC;
    EXPECT_LT(cpu_seconds, 0.02);
}

TEST(ThreadPoolDeathTest, ReentrantRunAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            ThreadPool pool(1);
            pool.run([&](const ThreadContext &) { pool.run([](const ThreadContext &) {}); });
        },
        "not reentrant");
}

}  // namespace
