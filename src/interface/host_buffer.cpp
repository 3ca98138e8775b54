#include "interface/host_buffer.h"

#include <cstring>
#include <new>

namespace ggx::backend {

ggml_backend_buffer_t HostBuffer::allocate(ggml_backend_buffer_type_t type, size_t size, size_t alignment) {
    // Round up so that a zero-size buffer still has a valid, unique base address.
    const size_t bytes = (size + alignment) / alignment * alignment;
    void * memory = ::operator new (bytes, std::align_val_t{alignment}, std::nothrow);
    if (!memory) {
        set_last_error(std::string(type->name()) + ": failed to allocate " + std::to_string(size) + " bytes");
        return nullptr;
    }
    return new HostBuffer(type, size, memory, alignment);
}

ggml_backend_buffer_t HostBuffer::wrap(ggml_backend_buffer_type_t type, void * memory, size_t size,
                                       std::shared_ptr<void> keep_alive) {
    return new HostBuffer(type, size, memory, 0, std::move(keep_alive));
}

HostBuffer::~HostBuffer() {
    if (alignment_ != 0) ::operator delete (memory_, std::align_val_t{alignment_});
}

void HostBuffer::set_tensor(ggml_tensor * tensor, const void * data, size_t offset, size_t bytes) {
    std::memcpy(static_cast<char *>(tensor->data) + offset, data, bytes);
}

void HostBuffer::get_tensor(const ggml_tensor * tensor, void * data, size_t offset, size_t bytes) {
    std::memcpy(data, static_cast<const char *>(tensor->data) + offset, bytes);
}

void HostBuffer::memset_tensor(ggml_tensor * tensor, uint8_t value, size_t offset, size_t bytes) {
    std::memset(static_cast<char *>(tensor->data) + offset, value, bytes);
}

bool HostBuffer::copy_tensor(const ggml_tensor * src, ggml_tensor * dst) {
    if (!src->buffer->buft->is_host()) return false;
    std::memmove(dst->data, src->data, ggml_nbytes(src));
    return true;
}

void HostBuffer::clear(uint8_t value) { std::memset(memory_, value, size); }

}  // namespace ggx::backend
