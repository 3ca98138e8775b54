// ggml.h's process utilities: version, time, files, status names, GUIDs, thread-pool parameters.
#include <ggml.h>

#include <chrono>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#ifndef GGX_COMMIT
#define GGX_COMMIT "unknown"
#endif

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point & time_origin() {
    static Clock::time_point origin = Clock::now();
    return origin;
}

template <class Unit>
int64_t elapsed() {
    return std::chrono::duration_cast<Unit>(Clock::now() - time_origin()).count();
}

}  // namespace

extern "C" {

const char * ggml_version(void) { return "0.21.0"; }
const char * ggml_commit(void) { return GGX_COMMIT; }

void ggml_time_init(void) { time_origin() = Clock::now(); }
int64_t ggml_time_ms(void) { return elapsed<std::chrono::milliseconds>(); }
int64_t ggml_time_us(void) { return elapsed<std::chrono::microseconds>(); }

// The time-stamp counter where there is one; elsewhere the steady clock in nanoseconds.
int64_t ggml_cycles(void) {
#if defined(__x86_64__) || defined(__i386__)
    return static_cast<int64_t>(__rdtsc());
#else
    return elapsed<std::chrono::nanoseconds>();
#endif
}

// Measured once over 10 ms of the steady clock.
int64_t ggml_cycles_per_ms(void) {
    static const int64_t per_ms = [] {
        const auto start = Clock::now();
        const int64_t first = ggml_cycles();
        while (Clock::now() - start < std::chrono::milliseconds(10)) {
        }
        const auto seconds = std::chrono::duration<double>(Clock::now() - start).count();
        return static_cast<int64_t>(static_cast<double>(ggml_cycles() - first) / (seconds * 1000.0));
    }();
    return per_ms;
}

// POSIX paths are byte strings: UTF-8 needs no conversion.
FILE * ggml_fopen(const char * fname, const char * mode) { return std::fopen(fname, mode); }

const char * ggml_status_to_string(enum ggml_status status) {
    switch (status) {
        case GGML_STATUS_ALLOC_FAILED: return "GGML status: error (failed to allocate memory)";
        case GGML_STATUS_FAILED: return "GGML status: error (operation failed)";
        case GGML_STATUS_SUCCESS: return "GGML status: success";
        case GGML_STATUS_ABORTED: return "GGML status: warning (operation aborted)";
    }
    return "GGML status: unknown";
}

bool ggml_guid_matches(ggml_guid_t guid_a, ggml_guid_t guid_b) {
    return std::memcmp(guid_a, guid_b, sizeof(ggml_guid)) == 0;
}

void ggml_unused_vars_impl(int, ...) {}

void ggml_threadpool_params_init(struct ggml_threadpool_params * p, int n_threads) {
    std::memset(p, 0, sizeof *p);
    p->n_threads = n_threads;
    p->prio = GGML_SCHED_PRIO_NORMAL;
    p->poll = 50;
}

struct ggml_threadpool_params ggml_threadpool_params_default(int n_threads) {
    ggml_threadpool_params p;
    ggml_threadpool_params_init(&p, n_threads);
    return p;
}

bool ggml_threadpool_params_match(const struct ggml_threadpool_params * p0,
                                  const struct ggml_threadpool_params * p1) {
    return p0->n_threads == p1->n_threads && p0->prio == p1->prio && p0->poll == p1->poll &&
           p0->strict_cpu == p1->strict_cpu && std::memcmp(p0->cpumask, p1->cpumask, sizeof p0->cpumask) == 0;
}

}  // extern "C"
