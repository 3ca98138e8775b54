// The CPU backend class, shared by the CPU device and the virtual devices of the CPU registry
// (virtual_device.cpp): every backend that computes with the CPU kernels on its own thread pool.
#pragma once

#include <ggml-cpu.h>

#include <memory>
#include <span>
#include <string>

#include "cpu/threadpool.h"
#include "interface/backend-impl.h"

struct ggml_ext_cpu_parallel_v1;

namespace ggx::cpu {

// Alignment of CPU buffers and of the compute workspace.
inline constexpr size_t kAlignment = 64;

// Physical and available host memory in bytes.
void host_memory(size_t * free, size_t * total);

// The one ggml_ext_cpu_parallel_v1 service table (ext_service.cpp), which the CPU registry's
// proc_address returns.
const ggml_ext_cpu_parallel_v1 * parallel_service();

// The features of the CPU running the process (features.cpp), for proc address
// "ggml_backend_get_features"; NULL-name terminated.
ggml_backend_feature * feature_list();
// Whether AMX-BF16 tiles are usable (ggml-cpu.h has only ggml_cpu_has_amx_int8).
bool has_amx_bf16();

// Appends a device to the CPU registry, which owns it for the rest of the process. Safe while other
// threads enumerate devices.
ggml_backend_dev_t append_device(std::unique_ptr<ggml_backend_device> device);

// Executes graphs with the CPU kernel table on a persistent thread pool. Its name is its device's.
class CpuBackend : public ggml_backend {
public:
    explicit CpuBackend(ggml_backend_dev_t device);

    const char * name() const override;
    ggml_guid_t guid() const override;
    ggml_backend_dev_t device() const override { return device_; }
    ggml_status compute_native(std::span<const NativeNode> nodes, const Workspace & workspace) final;
    // Whether the kernels may read and write memory of buft, or context memory of no buffer when buft
    // is NULL (a plan touching other memory is refused before anything runs, so a missing
    // cross-device copy fails loudly): host memory by default.
    bool can_access(ggml_backend_buffer_type_t buft) const override { return !buft || buft->is_host(); }
    // Changes with the thread count, which the kernels' workspace requests depend on.
    uint64_t config_epoch() const override { return threads_epoch_; }

    // Sets the size of the backend's own pool (an attached pool keeps its size).
    void set_n_threads(int n);
    int n_threads() const { return pool_->n_threads(); }
    void set_abort_callback(ggml_abort_callback cb, void * data) {
        abort_callback_ = cb;
        abort_data_ = data;
    }
    // Computes on pool (owned by the caller, who keeps it alive while attached) instead of the
    // backend's own; nullptr returns to the own pool.
    void attach_pool(ThreadPool * pool);
    // Later computations run the portable kernels only (see compute_native).
    void set_use_ref(bool use_ref) { use_ref_ = use_ref; }
    // Runs task on the pool that computes graphs (the caller is thread 0; same contract as
    // ThreadPool::run, so never from inside a task) and returns whether the run was aborted.
    bool run_on_pool(TaskRef task);

private:
    ggml_backend_dev_t device_;
    ThreadPool own_pool_;
    ThreadPool * pool_ = &own_pool_;
    ggml_abort_callback abort_callback_ = nullptr;
    void * abort_data_ = nullptr;
    uint64_t threads_epoch_ = 0;
    bool use_ref_ = false;
};

}  // namespace ggx::cpu
