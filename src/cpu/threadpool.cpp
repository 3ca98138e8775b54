#include "cpu/threadpool.h"

#include "core/log.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>

#if defined(_MSC_VER)
#include <intrin.h>
#endif

namespace ggx::cpu {
namespace detail {

// The command fields are written by the caller only while every worker is idle and published by the
// (release) increment of generation. The atomics each get a cache line: workers poll some of them while
// others write the rest.
struct alignas(64) PoolState {
    const TaskRef * task = nullptr;  // nullptr: a resize, no task
    int nth = 1;
    int stop_from = kMaxThreads;  // workers with ith >= stop_from exit
    int spin = 0;                 // pause iterations before blocking
    AbortCallback abort_callback = nullptr;
    void * abort_data = nullptr;

    alignas(64) std::atomic<uint32_t> generation{0};  // bumped once per command
    alignas(64) std::atomic<int> pending{0};          // workers that have not finished the command
    alignas(64) std::atomic<int> arrived{0};          // threads at the current barrier
    alignas(64) std::atomic<uint32_t> phase{0};       // barriers completed
    bool abort_at_barrier = false;                    // the abort flag when the last barrier completed
    alignas(64) std::atomic<bool> abort{false};
    alignas(64) std::atomic<bool> polling{false};  // held by the thread calling abort_callback
};

}  // namespace detail

namespace {

using detail::PoolState;

// Waits spin for up to ~1000 pauses (10-40 ns each, CPU dependent) before blocking: about the cost of a
// futex sleep and wake-up, so spinning at most doubles the cost of a wait that has to block anyway.
// Every kYieldEvery-th iteration yields instead: on a loaded machine the thread being waited for may
// share this core, and a pure spin would hold it off for the whole budget (measured: 110 us per 2-thread
// barrier under load, 3-6 us with yields). Oversubscribed pools do not spin at all.
constexpr int kSpinIterations = 1024;
constexpr int kYieldEvery = 16;

int spin_for(int n_threads) {
    const unsigned cores = std::thread::hardware_concurrency();
    return cores != 0 && static_cast<unsigned>(n_threads) > cores ? 0 : kSpinIterations;
}

inline void cpu_relax() {
#if defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
    _mm_pause();
#elif defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    asm volatile("yield" ::: "memory");
#endif
}

// Waits until done(value) holds and returns that value (acquire): spins, then blocks in atomic::wait.
// Every change a waiter may block on is made seq_cst: notify (libstdc++, libc++) skips the wake-up when it
// sees no sleeper, and only a seq_cst change is ordered before that check (store-buffering pattern).
template <typename T, typename Done>
T wait_until(const std::atomic<T> & a, Done done, int spin) {
    T value = a.load(std::memory_order_acquire);
    for (int i = 1; i <= spin && !done(value); ++i) {
        if (i % kYieldEvery == 0) {
            std::this_thread::yield();
        } else {
            cpu_relax();
        }
        value = a.load(std::memory_order_acquire);
    }
    while (!done(value)) {
        a.wait(value, std::memory_order_acquire);
        value = a.load(std::memory_order_acquire);
    }
    return value;
}

void check_thread_count(int n) {
    if (n < 1 || n > kMaxThreads) {
        throw std::invalid_argument("ggx::cpu::ThreadPool: thread count " + std::to_string(n) +
                                    " outside [1, " + std::to_string(kMaxThreads) + "]");
    }
}

// Tasks of any pool this thread is running (0 or 1: runs do not nest).
thread_local int tasks_running = 0;

// Calls task with ctx, counting it in tasks_running.
void call_task(const TaskRef & task, const ThreadContext & ctx) {
    ++tasks_running;
    task(ctx);
    --tasks_running;
}

void finish_command(PoolState & s) {
    if (s.pending.fetch_sub(1, std::memory_order_seq_cst) == 1) s.pending.notify_one();
}

}  // namespace

std::pair<int64_t, int64_t> chunk_range(int64_t n, int ith, int nth) {
    assert(n >= 0 && nth >= 1 && ith >= 0 && ith < nth);
    const int64_t base = n / nth;
    const int64_t extra = n % nth;
    const int64_t begin = ith * base + std::min<int64_t>(ith, extra);
    return {begin, begin + base + (ith < extra ? 1 : 0)};
}

ThreadContext::ThreadContext(int i, int n, detail::PoolState * state)
    : ith(i), nth(n), state_(state), abort_(&state->abort) {}

void ThreadContext::barrier() const { barrier_and_should_abort(); }

// The last thread to arrive resets the count, samples the abort flag and advances the phase; the acq_rel
// increments chain every arriving thread's writes into that (release) store, which the waiters acquire.
// No thread can poll while all are here, and abort_at_barrier is next written only once every thread
// has arrived at the next barrier, so each reads the sample of this one.
bool ThreadContext::barrier_and_should_abort() const {
    if (nth == 1) return should_abort();
    PoolState & s = *state_;
    const uint32_t phase = s.phase.load(std::memory_order_relaxed);  // cannot advance before we arrive
    if (s.arrived.fetch_add(1, std::memory_order_acq_rel) == nth - 1) {
        s.arrived.store(0, std::memory_order_relaxed);
        s.abort_at_barrier = s.abort.load(std::memory_order_relaxed);
        s.phase.store(phase + 1, std::memory_order_seq_cst);
        s.phase.notify_all();
        return s.abort_at_barrier;
    }
    const auto advanced = [phase](uint32_t p) { return p != phase; };
    wait_until(s.phase, advanced, s.spin);
    return s.abort_at_barrier;
}

bool ThreadContext::poll_abort() const noexcept {
    PoolState & s = *state_;
    if (s.abort.load(std::memory_order_relaxed)) return true;
    if (s.abort_callback == nullptr) return false;
    // Try-lock: a thread finding the callback busy reports the flag as it stands.
    if (s.polling.load(std::memory_order_relaxed) || s.polling.exchange(true, std::memory_order_acquire)) {
        return s.abort.load(std::memory_order_relaxed);
    }
    if (s.abort_callback(s.abort_data)) s.abort.store(true, std::memory_order_relaxed);
    s.polling.store(false, std::memory_order_release);
    return s.abort.load(std::memory_order_relaxed);
}

void ThreadContext::request_abort() const { state_->abort.store(true, std::memory_order_relaxed); }

// Marks the pool busy for one public call; overlapping calls are a bug in the caller.
class ThreadPool::Exclusive {
public:
    Exclusive(std::atomic<bool> & busy, const char * what) : busy_(busy) {
        if (busy_.exchange(true, std::memory_order_acquire)) {
            core::fatal(std::string("ggx::cpu::ThreadPool: ") + what +
                        " while another call is in progress (run() is not reentrant)");
        }
    }
    ~Exclusive() { busy_.store(false, std::memory_order_release); }
    Exclusive(const Exclusive &) = delete;
    Exclusive & operator=(const Exclusive &) = delete;

private:
    std::atomic<bool> & busy_;
};

ThreadPool::ThreadPool(int n_threads) : state_(std::make_unique<PoolState>()) {
    check_thread_count(n_threads);
    try {
        set_n_threads(n_threads);
    } catch (...) {
        stop_workers(1);  // the destructor does not run for a throwing constructor
        throw;
    }
}

ThreadPool::~ThreadPool() {
    Exclusive exclusive(busy_, "~ThreadPool");
    stop_workers(1);
}

void ThreadPool::set_n_threads(int n) {
    check_thread_count(n);
    Exclusive exclusive(busy_, "set_n_threads");
    state_->spin = spin_for(n);
    if (paused_) {
        paused_threads_ = n;
    } else if (n < n_threads_) {
        stop_workers(n);
    } else {
        start_workers(n);
    }
}

void ThreadPool::pause() {
    Exclusive exclusive(busy_, "pause");
    if (paused_) return;
    paused_threads_ = n_threads_;
    stop_workers(1);
    paused_ = true;
}

void ThreadPool::resume() {
    Exclusive exclusive(busy_, "resume");
    resume_workers();
}

void ThreadPool::resume_workers() {
    if (!paused_) return;
    start_workers(paused_threads_);
    paused_ = false;
}

void ThreadPool::set_abort_callback(AbortCallback callback, void * data) {
    Exclusive exclusive(busy_, "set_abort_callback");
    state_->abort_callback = callback;
    state_->abort_data = data;
}

void ThreadPool::run(TaskRef task) {
    Exclusive exclusive(busy_, "run");
    resume_workers();
    PoolState & s = *state_;
    s.abort.store(false, std::memory_order_relaxed);  // published to the workers with the command
    if (n_threads_ == 1) {
        call_task(task, ThreadContext(0, 1, &s));
        return;
    }
    publish(&task, kMaxThreads);
    call_task(task, ThreadContext(0, n_threads_, &s));
    wait_for_workers();
}

bool ThreadPool::aborted() const { return state_->abort.load(std::memory_order_relaxed); }

bool ThreadPool::in_task() noexcept { return tasks_running > 0; }

// A worker reads the command only between observing a new generation and finishing the command:
// after that the caller may already be writing the next one.
void ThreadPool::worker_main(PoolState * s, int ith, uint32_t seen, int spin) {
    for (;;) {
        const auto published = [seen](uint32_t g) { return g != seen; };
        seen = wait_until(s->generation, published, spin);
        const bool stop = ith >= s->stop_from;
        spin = s->spin;
        if (!stop && s->task != nullptr) call_task(*s->task, ThreadContext(ith, s->nth, s));
        finish_command(*s);
        if (stop) return;
    }
}

// New workers start in step with the current generation, so they wait for the next command.
void ThreadPool::start_workers(int n) {
    const uint32_t generation = state_->generation.load(std::memory_order_relaxed);
    workers_.reserve(static_cast<size_t>(n - 1));
    while (n_threads_ < n) {
        workers_.emplace_back(worker_main, state_.get(), n_threads_, generation, state_->spin);
        ++n_threads_;
    }
}

// Stops workers first .. n_threads_-1. The others acknowledge the command too, so that none is still
// reading it when the next one is written.
void ThreadPool::stop_workers(int first) {
    if (first >= n_threads_) return;
    publish(nullptr, first);
    wait_for_workers();
    const auto stopped = workers_.begin() + (first - 1);
    for (auto it = stopped; it != workers_.end(); ++it)
        it->join();
    workers_.erase(stopped, workers_.end());
    n_threads_ = first;
}

void ThreadPool::publish(const TaskRef * task, int stop_from) {
    PoolState & s = *state_;
    s.task = task;
    s.nth = n_threads_;
    s.stop_from = stop_from;
    s.pending.store(n_threads_ - 1, std::memory_order_relaxed);
    s.generation.fetch_add(1, std::memory_order_seq_cst);
    s.generation.notify_all();
}

void ThreadPool::wait_for_workers() {
    const auto all_done = [](int pending) { return pending == 0; };
    wait_until(state_->pending, all_done, state_->spin);
}

}  // namespace ggx::cpu
