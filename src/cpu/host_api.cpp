// ggml-cpu.h's thread pools and their use by CPU backends.
#include <ggml-cpu.h>

#include <memory>
#include <string>
#include <system_error>

#include "cpu/backend.h"

struct ggml_threadpool {
    explicit ggml_threadpool(const ggml_threadpool_params & p) : params(p), pool(p.n_threads) {}
    ggml_threadpool_params params;
    ggx::cpu::ThreadPool pool;
};

namespace {

ggx::cpu::CpuBackend * as_cpu(ggml_backend_t backend) { return dynamic_cast<ggx::cpu::CpuBackend *>(backend); }

}  // namespace

extern "C" {

ggml_threadpool * ggml_threadpool_new(ggml_threadpool_params * params) {
    if (params->n_threads < 1 || params->n_threads > GGML_MAX_N_THREADS) return nullptr;
    try {
        auto threadpool = std::make_unique<ggml_threadpool>(*params);
        if (params->paused) threadpool->pool.pause();
        return threadpool.release();
    } catch (const std::system_error & e) {  // a worker could not be started
        ggx::backend::set_last_error(std::string("ggml_threadpool_new: ") + e.what());
        return nullptr;
    }
}

void ggml_threadpool_free(ggml_threadpool * threadpool) { delete threadpool; }
int ggml_threadpool_get_n_threads(ggml_threadpool * threadpool) { return threadpool->pool.n_threads(); }
void ggml_threadpool_pause(ggml_threadpool * threadpool) { threadpool->pool.pause(); }
void ggml_threadpool_resume(ggml_threadpool * threadpool) { threadpool->pool.resume(); }

void ggml_backend_cpu_set_threadpool(ggml_backend_t backend_cpu, ggml_threadpool_t threadpool) {
    if (ggx::cpu::CpuBackend * cpu = as_cpu(backend_cpu)) cpu->attach_pool(threadpool ? &threadpool->pool : nullptr);
}

void ggml_backend_cpu_set_use_ref(ggml_backend_t backend_cpu, bool use_ref) {
    if (ggx::cpu::CpuBackend * cpu = as_cpu(backend_cpu)) cpu->set_use_ref(use_ref);
}

}  // extern "C"
