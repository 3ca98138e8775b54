// Virtual devices of the CPU registry: GPU-typed devices with their own memory space (host memory
// behind a non-host buffer type) whose backends compute with the CPU kernels. They let placement,
// cross-device copies and fallbacks be tested on machines without a GPU.
#include <array>
#include <mutex>

#include "core/internal.h"
#include "cpu/backend.h"
#include "cpu/kernel.h"
#include "interface/host_buffer.h"

namespace ggx::cpu {

namespace {

// Host memory that generic code must treat as device memory: is_host() is false, so tensor data
// goes through set_tensor/get_tensor and the CPU device refuses to read it.
class VirtualBufferType final : public ggml_backend_buffer_type {
public:
    VirtualBufferType(ggml_backend_dev_t device, std::string name)
        : device_(device), name_(std::move(name)) {}
    const char * name() const override { return name_.c_str(); }
    ggml_backend_buffer_t alloc_buffer(size_t size) override {
        return backend::HostBuffer::allocate(this, size, kAlignment);
    }
    size_t alignment() const override { return kAlignment; }
    bool is_host() const override { return false; }
    ggml_backend_dev_t device() const override { return device_; }

private:
    ggml_backend_dev_t device_;
    std::string name_;
};

constexpr int64_t kOffloadMinBatch = 32;

// A CPU backend that refuses nodes touching memory outside its device, so that a missing
// cross-device copy fails loudly instead of silently reading host memory.
class VirtualBackend final : public CpuBackend {
public:
    VirtualBackend(ggml_backend_dev_t device, ggml_backend_buffer_type_t buft)
        : CpuBackend(device), buft_(buft) {}

protected:
    bool can_access(ggml_backend_buffer_type_t buft) const override { return buft == buft_; }

private:
    ggml_backend_buffer_type_t buft_;
};

class VirtualDevice final : public ggml_backend_device {
public:
    VirtualDevice(std::string name, const std::array<bool, GGML_OP_COUNT> & ops)
        : name_(std::move(name)),
          description_("virtual device '" + name_ + "' on the CPU kernels"),
          buffer_type_(this, name_ + "_buffer"),
          ops_(ops) {}

    const char * name() const override { return name_.c_str(); }
    const char * description() const override { return description_.c_str(); }
    void memory(size_t * free, size_t * total) const override { host_memory(free, total); }
    enum ggml_backend_dev_type type() const override { return GGML_BACKEND_DEVICE_TYPE_GPU; }
    ggml_backend_dev_caps caps() const override { return {false, false, false, false}; }
    ggml_backend_reg_t reg() const override { return ggml_backend_cpu_reg(); }
    ggml_backend_t init_backend(const char *) override { return new VirtualBackend(this, &buffer_type_); }
    ggml_backend_buffer_type_t buffer_type() override { return &buffer_type_; }
    // Metadata only: where the sources live is the scheduler's business (it inserts copies). Ops
    // that compute nothing (views) are always admitted: they touch no memory.
    const Kernel * native_kernel(const ggml_tensor * op) const override {
        if (op->op < 0 || op->op >= GGML_OP_COUNT) return nullptr;
        if (!ops_[op->op] && !core::is_layout_op(op->op)) return nullptr;
        const Kernel & kernel = kernel_table()[op->op];
        return kernel.supports(kernel, const_cast<VirtualDevice *>(this), op) ? &kernel : nullptr;
    }
    bool supports_buft(ggml_backend_buffer_type_t buft) const override { return buft == &buffer_type_; }
    // Like a GPU: worth taking an admitted matrix product from the CPU when the batch is large.
    bool offload_op(const ggml_tensor * op) const override {
        return op->op == GGML_OP_MUL_MAT && supports_op(op) && op->src[1]->ne[1] >= kOffloadMinBatch;
    }

private:
    std::string name_;
    std::string description_;
    VirtualBufferType buffer_type_;
    std::array<bool, GGML_OP_COUNT> ops_;
};

ggml_backend_dev_t fail_to_add(const std::string & why) {
    backend::set_last_error("ggml_backend_cpu_add_virtual_device: " + why);
    return nullptr;
}

}  // namespace

}  // namespace ggx::cpu

using namespace ggx::cpu;

extern "C" ggml_backend_dev_t ggml_backend_cpu_add_virtual_device(const char * name, const enum ggml_op * ops,
                                                                  int n_ops) {
    if (!name || !*name) return fail_to_add("the name is NULL or empty");
    if (n_ops < 0 || (n_ops > 0 && !ops)) {
        return fail_to_add("device '" + std::string(name) + "': bad op list (" + std::to_string(n_ops) +
                           " ops)");
    }
    std::array<bool, GGML_OP_COUNT> admitted{};
    for (int i = 0; i < n_ops; ++i) {
        if (ops[i] < 0 || ops[i] >= GGML_OP_COUNT) {
            return fail_to_add("device '" + std::string(name) + "': op " + std::to_string(i) + " (" +
                               std::to_string(static_cast<int>(ops[i])) + ") is not a ggml_op");
        }
        admitted[ops[i]] = true;
    }
    // One addition at a time, so that two threads cannot both find a name free. The registry's own
    // lock is not held here: enumerating devices takes the registry's lock, then the CPU registry's.
    static std::mutex adding;
    std::lock_guard lock(adding);
    if (ggx::backend::registered_device(name)) {
        return fail_to_add("a device named '" + std::string(name) + "' already exists (names are unique, " +
                           "compared ignoring case)");
    }
    return append_device(std::make_unique<VirtualDevice>(name, admitted));
}
