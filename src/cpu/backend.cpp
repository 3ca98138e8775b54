// The CPU registry, device, host buffer type and backend (graph execution on the thread pool).
#include "cpu/backend.h"

#include <ggml-ext.h>
#include <hwy/targets.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "core/internal.h"
#include "cpu/kernel.h"
#include "interface/host_buffer.h"
#include "interface/module.h"

namespace ggx::cpu {

void host_memory(size_t * free, size_t * total) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    *total = page * static_cast<size_t>(sysconf(_SC_PHYS_PAGES));
    *free = page * static_cast<size_t>(sysconf(_SC_AVPHYS_PAGES));
}

namespace {

int default_thread_count() { return std::max(1u, std::thread::hardware_concurrency()); }

std::string cpu_model_name() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    }
    return "CPU";
}

class CpuBufferType final : public ggml_backend_buffer_type {
public:
    explicit CpuBufferType(ggml_backend_dev_t device) : device_(device) {}
    const char * name() const override { return "CPU"; }
    ggml_backend_buffer_t alloc_buffer(size_t size) override {
        return backend::HostBuffer::allocate(this, size, kAlignment);
    }
    size_t alignment() const override { return kAlignment; }
    bool is_host() const override { return true; }
    ggml_backend_dev_t device() const override { return device_; }

private:
    ggml_backend_dev_t device_;
};

class CpuDevice final : public ggml_backend_device {
public:
    explicit CpuDevice(ggml_backend_reg_t reg)
        : reg_(reg), buffer_type_(this), description_(cpu_model_name()) {}

    const char * name() const override { return "CPU"; }
    const char * description() const override { return description_.c_str(); }
    void memory(size_t * free, size_t * total) const override { host_memory(free, total); }
    enum ggml_backend_dev_type type() const override { return GGML_BACKEND_DEVICE_TYPE_CPU; }
    ggml_backend_dev_caps caps() const override { return {false, false, true, false}; }
    ggml_backend_reg_t reg() const override { return reg_; }
    ggml_backend_t init_backend(const char *) override { return new CpuBackend(this); }
    ggml_backend_buffer_type_t buffer_type() override { return &buffer_type_; }
    ggml_backend_buffer_t buffer_from_host_ptr(void * ptr, size_t size, size_t) override {
        return backend::HostBuffer::wrap(&buffer_type_, ptr, size);
    }
    // Metadata only: where the sources live is checked when a plan is validated.
    const Kernel * native_kernel(const ggml_tensor * op) const override {
        if (op->op < 0 || op->op >= GGML_OP_COUNT) return nullptr;
        const Kernel & kernel = kernel_table()[op->op];
        return kernel.supports(kernel, const_cast<CpuDevice *>(this), op) ? &kernel : nullptr;
    }
    bool supports_buft(ggml_backend_buffer_type_t buft) const override { return buft->is_host(); }

private:
    ggml_backend_reg_t reg_;
    CpuBufferType buffer_type_;
    std::string description_;
};

// The CPU device first, then the virtual devices in the order they were added. Devices are never
// removed, so an index below a count read earlier stays valid.
class CpuReg final : public ggml_backend_reg {
public:
    CpuReg() : device_(this) {}
    const char * name() const override { return "CPU"; }
    size_t device_count() const override {
        std::lock_guard lock(mutex_);
        return 1 + added_.size();
    }
    ggml_backend_dev_t device(size_t index) override {
        if (index == 0) return &device_;
        std::lock_guard lock(mutex_);
        return index - 1 < added_.size() ? added_[index - 1].get() : nullptr;
    }
    void * proc_address(const char * name) override;

    ggml_backend_dev_t cpu_device() { return &device_; }
    ggml_backend_dev_t append(std::unique_ptr<ggml_backend_device> device) {
        std::lock_guard lock(mutex_);
        added_.push_back(std::move(device));
        return added_.back().get();
    }

private:
    CpuDevice device_;
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<ggml_backend_device>> added_;
};

CpuReg & cpu_reg() {
    static CpuReg * reg = new CpuReg;  // process lifetime: devices outlive every backend
    return *reg;
}

CpuBackend * as_cpu(ggml_backend_t backend) { return dynamic_cast<CpuBackend *>(backend); }

// While alive and enabled, Highway dispatches every kernel to the baseline target the library was
// compiled for: the portable paths, without the instruction-set specific ones. Highway's target
// choice is process-wide, so this holds for every computation running meanwhile.
class BaselineTargetOnly {
public:
    explicit BaselineTargetOnly(bool enabled) : enabled_(enabled) {
        if (enabled_) hwy::SetSupportedTargetsForTest(HWY_STATIC_TARGET);
    }
    ~BaselineTargetOnly() {
        if (enabled_) hwy::SetSupportedTargetsForTest(0);
    }
    BaselineTargetOnly(const BaselineTargetOnly &) = delete;
    BaselineTargetOnly & operator=(const BaselineTargetOnly &) = delete;

private:
    bool enabled_;
};

void set_n_threads_service(ggml_backend_t backend, int n_threads) {
    ggml_backend_cpu_set_n_threads(backend, n_threads);
}

void * CpuReg::proc_address(const char * name) {
    if (std::string_view(name) == "ggml_backend_set_n_threads") {
        return reinterpret_cast<void *>(&set_n_threads_service);
    }
    if (std::string_view(name) == "ggml_backend_get_features") {
        return reinterpret_cast<void *>(+[](ggml_backend_reg_t) { return feature_list(); });
    }
    if (std::string_view(name) == GGML_EXT_CPU_PARALLEL_V1) {
        return const_cast<ggml_ext_cpu_parallel_v1 *>(parallel_service());
    }
    return nullptr;
}

}  // namespace

ggml_backend_dev_t append_device(std::unique_ptr<ggml_backend_device> device) {
    return cpu_reg().append(std::move(device));
}

CpuBackend::CpuBackend(ggml_backend_dev_t device) : device_(device), own_pool_(default_thread_count()) {}

const char * CpuBackend::name() const { return device_->name(); }

ggml_guid_t CpuBackend::guid() const {
    static ggml_guid cpu = {0x67, 0x67, 0x78, 0x2d, 0x63, 0x70, 0x75, 0x2d,
                            0x62, 0x61, 0x63, 0x6b, 0x65, 0x6e, 0x64, 0x00};  // "ggx-cpu-backend"
    return &cpu;
}

void CpuBackend::set_n_threads(int n) {
    const int before = n_threads();
    own_pool_.set_n_threads(n == 0 ? default_thread_count() : n);
    if (n_threads() != before) ++threads_epoch_;
}

void CpuBackend::attach_pool(ThreadPool * pool) {
    const int before = n_threads();
    pool_ = pool ? pool : &own_pool_;
    if (n_threads() != before) ++threads_epoch_;
}

// The abort callback is the backend's, and an attached pool may serve several backends: hand it
// to the pool for each run.
bool CpuBackend::run_on_pool(TaskRef task) {
    pool_->set_abort_callback(abort_callback_, abort_data_);
    pool_->run(task);
    return pool_->aborted();
}

int prepared_threads(ggml_backend_t backend) {
    const auto * cpu = dynamic_cast<const CpuBackend *>(backend);
    return cpu ? cpu->n_threads() : 1;
}

ggml_status CpuBackend::compute_native(std::span<const NativeNode> nodes, const Workspace & workspace) {
    // Kernels' requests are padded by kWorkspaceAlignment - 1 bytes: align the region's start.
    auto * const base = static_cast<char *>(workspace.data);
    const size_t skip =
        base ? (kWorkspaceAlignment - reinterpret_cast<uintptr_t>(base) % kWorkspaceAlignment) %
                   kWorkspaceAlignment
             : 0;
    char * const scratch = base ? base + skip : nullptr;
    const size_t scratch_size = workspace.size > skip ? workspace.size - skip : 0;

    std::atomic<bool> failed{false};
    std::atomic<size_t> failed_node{0};
    std::string error;
    const BaselineTargetOnly reference_kernels(use_ref_);
    const bool aborted = run_on_pool([&](const ThreadContext & thread) {
        const ComputeParams params(thread, scratch, scratch_size, failed, error);
        for (size_t i = 0; i < nodes.size(); ++i) {
            const NativeNode & n = nodes[i];
            const KernelCall call{this,
                                  &n.node,
                                  1,
                                  n.state,
                                  workspace.buffer,
                                  workspace.data,
                                  workspace.size,
                                  const_cast<ComputeParams *>(&params)};
            n.kernel->execute(*n.kernel, call);
            if (thread.ith == 0) thread.poll_abort();
            if (failed.load()) failed_node.store(i);  // the failing node's threads have all finished it
            if (thread.barrier_and_should_abort()) break;
        }
    });
    if (failed.load()) {
        const NativeNode & n = nodes[failed_node.load()];
        return backend::fail(GGML_STATUS_FAILED, std::string(name()) + ": " +
                                                     backend::describe_node(n.index, n.node) + ": " + error);
    }
    return aborted ? GGML_STATUS_ABORTED : GGML_STATUS_SUCCESS;
}

}  // namespace ggx::cpu

using namespace ggx::cpu;

extern "C" {

ggml_backend_reg_t ggml_backend_cpu_reg(void) { return &cpu_reg(); }
ggml_backend_t ggml_backend_cpu_init(void) { return cpu_reg().cpu_device()->init_backend(nullptr); }
// Only backends of the CPU device: a virtual device's backends compute with the CPU kernels (and
// take the thread and abort settings below) but stand for a separate device.
bool ggml_backend_is_cpu(ggml_backend_t backend) {
    return backend && as_cpu(backend) && backend->device() == cpu_reg().cpu_device();
}
ggml_backend_buffer_type_t ggml_backend_cpu_buffer_type(void) {
    return cpu_reg().cpu_device()->buffer_type();
}

ggml_backend_buffer_t ggml_backend_cpu_buffer_from_ptr(void * ptr, size_t size) {
    return cpu_reg().cpu_device()->buffer_from_host_ptr(ptr, size, size);
}

void ggml_backend_cpu_set_n_threads(ggml_backend_t backend, int n_threads) {
    if (CpuBackend * cpu = as_cpu(backend); cpu && n_threads >= 0 && n_threads <= kMaxThreads) {
        cpu->set_n_threads(n_threads);
    }
}

int ggml_backend_cpu_get_n_threads(ggml_backend_t backend) {
    const CpuBackend * cpu = as_cpu(backend);
    return cpu ? cpu->n_threads() : 0;
}

void ggml_backend_cpu_set_abort_callback(ggml_backend_t backend, ggml_abort_callback cb, void * data) {
    if (CpuBackend * cpu = as_cpu(backend)) cpu->set_abort_callback(cb, data);
}

}  // extern "C"

GGML_BACKEND_DL_IMPL(ggml_backend_cpu_reg)
