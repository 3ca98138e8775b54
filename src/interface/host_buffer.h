// Buffers in aligned host memory, for every device whose memory the host addresses directly.
#pragma once

#include <memory>

#include "interface/backend-impl.h"

namespace ggx::backend {

class HostBuffer final : public ggml_backend_buffer {
public:
    // A zero-initialised-free buffer of size bytes at the given alignment; nullptr with an error
    // when the memory cannot be allocated.
    static ggml_backend_buffer_t allocate(ggml_backend_buffer_type_t type, size_t size, size_t alignment);
    // A buffer over memory [memory, memory + size) that someone else owns: the caller, or keep_alive,
    // which the buffer holds until it is freed.
    static ggml_backend_buffer_t wrap(ggml_backend_buffer_type_t type, void * memory, size_t size,
                                      std::shared_ptr<void> keep_alive = {});
    ~HostBuffer() override;

    void * base() override { return memory_; }
    void set_tensor(ggml_tensor * tensor, const void * data, size_t offset, size_t bytes) override;
    void get_tensor(const ggml_tensor * tensor, void * data, size_t offset, size_t bytes) override;
    void memset_tensor(ggml_tensor * tensor, uint8_t value, size_t offset, size_t bytes) override;
    bool copy_tensor(const ggml_tensor * src, ggml_tensor * dst) override;
    void clear(uint8_t value) override;

private:
    HostBuffer(ggml_backend_buffer_type_t type, size_t bytes, void * memory, size_t alignment,
               std::shared_ptr<void> keep_alive = {})
        : ggml_backend_buffer(type, bytes), memory_(memory), alignment_(alignment), keep_alive_(std::move(keep_alive)) {}
    void * memory_;
    size_t alignment_;  // 0 for wrapped memory
    std::shared_ptr<void> keep_alive_;
};

}  // namespace ggx::backend
