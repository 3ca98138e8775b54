// Buffers in aligned host memory, for every device whose memory the host addresses directly.
#pragma once

#include "interface/backend-impl.h"

namespace ggx::backend {

class HostBuffer final : public ggml_backend_buffer {
public:
    // A zero-initialised-free buffer of size bytes at the given alignment; nullptr with an error
    // when the memory cannot be allocated.
    static ggml_backend_buffer_t allocate(ggml_backend_buffer_type_t type, size_t size, size_t alignment);
    ~HostBuffer() override;

    void * base() override { return memory_; }
    void set_tensor(ggml_tensor * tensor, const void * data, size_t offset, size_t bytes) override;
    void get_tensor(const ggml_tensor * tensor, void * data, size_t offset, size_t bytes) override;
    void memset_tensor(ggml_tensor * tensor, uint8_t value, size_t offset, size_t bytes) override;
    bool copy_tensor(const ggml_tensor * src, ggml_tensor * dst) override;
    void clear(uint8_t value) override;

private:
    HostBuffer(ggml_backend_buffer_type_t type, size_t bytes, void * memory, size_t alignment)
        : ggml_backend_buffer(type, bytes), memory_(memory), alignment_(alignment) {}
    void * memory_;
    size_t alignment_;
};

}  // namespace ggx::backend
