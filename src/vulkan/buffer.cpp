#include "vulkan/buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/log.h"
#include "interface/host_buffer.h"

namespace ggx::vulkan {

namespace {

// GGX_VULKAN_STAGING=1 reaches even host-visible memory through staging copies, so that the path
// of discrete GPUs is also exercised on unified-memory devices.
bool force_staging() {
    const char * value = std::getenv("GGX_VULKAN_STAGING");
    return value && std::strcmp(value, "0") != 0;
}

}  // namespace

BufferType::BufferType(ggml_backend_dev_t owner, Device & device)
    : owner_(owner), device_(device), name_(std::string(owner->name())) {}

ggml_backend_buffer_t BufferType::alloc_buffer(size_t size) {
    try {
        return new Buffer(this, size);
    } catch (const Error & e) {
        backend::set_last_error(name_ + ": cannot allocate " + std::to_string(size) + " bytes: " + e.what());
        return nullptr;
    }
}

size_t BufferType::alignment() const {
    return std::max<size_t>(64, static_cast<size_t>(device_.limits().storage_offset_alignment));
}

size_t BufferType::max_size() const { return static_cast<size_t>(device_.limits().max_allocation); }

PinnedBufferType::PinnedBufferType(ggml_backend_dev_t owner, Device & device)
    : owner_(owner), device_(device), name_(std::string(owner->name()) + "_Host") {}

ggml_backend_buffer_t PinnedBufferType::alloc_buffer(size_t size) {
    try {
        auto memory = std::make_shared<Allocation>(device_, std::max<size_t>(size, 1), true);
        return backend::HostBuffer::wrap(this, memory->map(), size, memory);
    } catch (const Error & e) {
        backend::set_last_error(name_ + ": cannot allocate " + std::to_string(size) + " bytes: " + e.what());
        return nullptr;
    }
}

Buffer::Buffer(BufferType * type, size_t bytes)
    : ggml_backend_buffer(type, bytes), device_(type->vulkan()), memory_(device_, bytes, false) {
    if (memory_.host_visible() && !force_staging()) mapped_ = memory_.map();
    const size_t page = 4096;
    reserved_ = (std::max<size_t>(bytes, 1) + page - 1) / page * page;
    base_ = mmap(nullptr, reserved_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base_ == MAP_FAILED) throw Error("cannot reserve address space for the buffer");
}

Buffer::~Buffer() { munmap(base_, reserved_); }

VkDeviceSize Buffer::offset_of(const ggml_tensor * tensor) const {
    return static_cast<VkDeviceSize>(static_cast<const uint8_t *>(tensor->data) -
                                     static_cast<const uint8_t *>(base_));
}

void Buffer::write(VkDeviceSize offset, const void * data, size_t bytes) {
    if (mapped_) {
        std::memcpy(mapped_ + offset, data, bytes);
    } else if (bytes) {
        device_.upload(handle(), offset, data, bytes);
    }
}

void Buffer::read(VkDeviceSize offset, void * data, size_t bytes) {
    if (mapped_) {
        std::memcpy(data, mapped_ + offset, bytes);
    } else if (bytes) {
        device_.download(handle(), offset, data, bytes);
    }
}

void Buffer::fill(VkDeviceSize offset, uint8_t value, size_t bytes) {
    if (mapped_) {
        std::memset(mapped_ + offset, value, bytes);
    } else if (bytes) {
        device_.fill(handle(), offset, value, bytes);
    }
}

// Transfers run synchronously; a failure here (device lost, out of memory for staging) cannot be
// returned through the void interface, so it is fatal with the reason.
template <class F>
void or_abort(const char * what, F f) {
    try {
        f();
    } catch (const Error & e) {
        core::fatal(std::string("ggx vulkan: ") + what + " failed: " + e.what());
    }
}

void Buffer::set_tensor(ggml_tensor * tensor, const void * data, size_t offset, size_t bytes) {
    or_abort("set_tensor", [&] { write(offset_of(tensor) + offset, data, bytes); });
}

void Buffer::get_tensor(const ggml_tensor * tensor, void * data, size_t offset, size_t bytes) {
    or_abort("get_tensor", [&] { read(offset_of(tensor) + offset, data, bytes); });
}

void Buffer::memset_tensor(ggml_tensor * tensor, uint8_t value, size_t offset, size_t bytes) {
    or_abort("memset_tensor", [&] { fill(offset_of(tensor) + offset, value, bytes); });
}

void Buffer::clear(uint8_t value) {
    or_abort("clear", [&] { fill(0, value, size); });
}

bool Buffer::copy_tensor(const ggml_tensor * src, ggml_tensor * dst) {
    const size_t bytes = ggml_nbytes(src);
    if (src->buffer->buft->is_host()) {
        set_tensor(dst, src->data, 0, bytes);
        return true;
    }
    Buffer * from = buffer_of(src);
    if (!from || &from->device_ != &device_) return false;
    or_abort("copy_tensor",
             [&] { device_.copy(from->handle(), from->offset_of(src), handle(), offset_of(dst), bytes); });
    return true;
}

Buffer * buffer_of(const ggml_tensor * tensor) {
    const ggml_tensor * owner = tensor->view_src ? tensor->view_src : tensor;
    return owner->buffer ? dynamic_cast<Buffer *>(owner->buffer) : nullptr;
}

}  // namespace ggx::vulkan
