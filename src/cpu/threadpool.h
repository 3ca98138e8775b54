// The CPU backend's persistent thread pool. run() executes one task on n threads (the caller is thread 0)
// and returns when all of them have finished; the threads of a run share a reusable barrier and a
// cooperative abort flag. Workers outlive runs and block on a futex-backed std::atomic::wait when idle.
//
// Contract for tasks:
//  - A task must not throw: an exception escaping a task calls std::terminate.
//  - The one task object is called by all threads at once: it must not modify its own state (a mutable
//    lambda's captures included) except through per-thread slots such as ones indexed by ctx.ith.
//  - All threads of a run must call barrier() the same number of times, or the run never completes. The
//    abort flag can be set at any moment, so threads that read should_abort() may disagree; to leave a
//    loop of barriers together, use barrier_and_should_abort(), whose answer is the same on every thread.
//  - run(), set_n_threads(), set_abort_callback() and the destructor are for one thread at a time and
//    never from inside a task; a call while another of them is in progress prints a message and aborts
//    the process in every build mode (a reentrant run() would otherwise deadlock).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace ggx::cpu {

// Upper bound on a pool's size, a sanity check against nonsense values.
inline constexpr int kMaxThreads = 512;

// Returns true to stop the current run. Called by at most one thread at a time; must not throw.
using AbortCallback = bool (*)(void * data);

// Thread ith's share [begin, end) of [0, n) (n >= 0) split into nth contiguous chunks in index order,
// whose sizes differ by at most one (the first n % nth chunks are the longer ones).
std::pair<int64_t, int64_t> chunk_range(int64_t n, int ith, int nth);

class ThreadContext;
class TaskRef;

namespace detail {
struct PoolState;

// An object (not a function: pass &fn) callable as f(const ThreadContext &); not a TaskRef itself.
template <typename F>
concept TaskCallable =
    !std::is_same_v<std::remove_cvref_t<F>, TaskRef> && std::is_object_v<std::remove_reference_t<F>> &&
    std::is_invocable_v<std::remove_reference_t<F> &, const ThreadContext &>;
}  // namespace detail

// What one thread of a run sees. Only the pool creates these.
class ThreadContext {
public:
    int ith;  // 0 .. nth-1; 0 is the thread that called run()
    int nth;

    // Returns once all nth threads of the run have reached it; everything a thread wrote before the
    // barrier is visible to every thread after it. Spins briefly, then blocks.
    void barrier() const;
    // barrier(), then whether the run has been aborted as the last thread to arrive saw it: every thread
    // gets the same answer, so `if (ctx.barrier_and_should_abort()) break;` leaves a loop in step.
    bool barrier_and_should_abort() const;
    // Whether the run has been aborted (a relaxed load; cheap enough for inner loops).
    bool should_abort() const { return abort_->load(std::memory_order_relaxed); }
    // Asks the abort callback, unless another thread is asking it right now, and returns should_abort().
    bool poll_abort() const noexcept;
    // Sets the abort flag (for instance when a kernel fails), without asking the callback.
    void request_abort() const;
    std::pair<int64_t, int64_t> chunk(int64_t n) const { return chunk_range(n, ith, nth); }

private:
    friend class ThreadPool;
    ThreadContext(int i, int n, detail::PoolState * state);

    detail::PoolState * state_;
    const std::atomic<bool> * abort_;
};

// A non-owning reference to a callable taking (const ThreadContext &): two pointers, no allocation.
// The callable must outlive the TaskRef (a temporary lambda passed straight to run() does). Plain
// functions are passed by pointer: run(&fn).
class TaskRef {
public:
    // Implicit, so that run() takes a lambda as it is.
    template <detail::TaskCallable F>
    TaskRef(F && f) noexcept
        : object_(const_cast<void *>(static_cast<const void *>(std::addressof(f)))),
          call_(&invoke<std::remove_reference_t<F>>) {}

    // noexcept: a throwing task terminates here instead of unwinding through the pool.
    void operator()(const ThreadContext & ctx) const noexcept { call_(object_, ctx); }

private:
    template <typename F>
    static void invoke(void * object, const ThreadContext & ctx) {
        (*static_cast<F *>(object))(ctx);
    }

    void * object_;
    void (*call_)(void *, const ThreadContext &);
};

class ThreadPool {
public:
    // Starts n_threads - 1 workers. Throws std::invalid_argument unless 1 <= n_threads <= kMaxThreads,
    // and std::system_error when a thread cannot be started.
    explicit ThreadPool(int n_threads);
    // Stops and joins the workers; they are idle (no run is in progress), so this returns promptly.
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool & operator=(const ThreadPool &) = delete;

    // Threads a run uses (also while paused).
    int n_threads() const { return paused_ ? paused_threads_ : n_threads_; }
    // Starts or stops workers so that runs use n threads; same errors as the constructor (on a failed
    // start the pool keeps the workers it has). While paused, only records n for resume().
    void set_n_threads(int n);
    // pause() stops every worker (no thread of the pool exists but the callers'); resume() starts them
    // again. A run on a paused pool resumes it first. Same threading rules as run().
    void pause();
    void resume();
    bool paused() const { return paused_; }
    // The callback poll_abort() asks during runs; nullptr (the default) never aborts.
    void set_abort_callback(AbortCallback callback, void * data);

    // Runs task on n_threads() threads, the caller as thread 0, and returns when all have finished.
    // With one thread no worker is involved. The abort flag is cleared when the run starts.
    void run(TaskRef task);
    // Whether the last run was aborted.
    bool aborted() const;
    // Whether the calling thread is running a task of any pool right now (as a worker or as thread 0 of
    // a run), where calling run() would be a nested run: lets callers refuse one instead of aborting.
    static bool in_task() noexcept;

private:
    class Exclusive;

    static void worker_main(detail::PoolState * s, int ith, uint32_t seen, int spin);
    void start_workers(int n);
    void stop_workers(int first);
    void resume_workers();
    void publish(const TaskRef * task, int stop_from);
    void wait_for_workers();

    std::unique_ptr<detail::PoolState> state_;
    std::vector<std::thread> workers_;  // workers_[i] runs as thread i + 1
    int n_threads_ = 1;
    bool paused_ = false;
    int paused_threads_ = 1;  // the thread count resume() restores
    std::atomic<bool> busy_{false};
};

}  // namespace ggx::cpu
