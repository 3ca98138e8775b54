#include "vulkan/buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace ggx::vulkan {

namespace {

constexpr VkBufferUsageFlags kUsage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;

// GGX_VULKAN_STAGING=1 reaches even host-visible memory through staging copies, so that the path
// of discrete GPUs is also exercised on unified-memory devices.
bool force_staging() {
    const char * value = std::getenv("GGX_VULKAN_STAGING");
    return value && std::strcmp(value, "0") != 0;
}

// A VkBuffer bound to its own allocation of the requested memory kind.
struct Allocation {
    Device & device;
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint32_t type = 0;

    Allocation(Device & owner, VkDeviceSize bytes, bool host_visible) : device(owner) {
        VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        info.size = std::max<VkDeviceSize>(bytes, 4);
        info.usage = kUsage;
        info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
        check(vkCreateBuffer(device.handle(), &info, nullptr, &buffer), "vkCreateBuffer");
        VkMemoryRequirements requirements;
        vkGetBufferMemoryRequirements(device.handle(), buffer, &requirements);
        try {
            type = device.memory_type(requirements.memoryTypeBits, host_visible);
            VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
            alloc.allocationSize = requirements.size;
            alloc.memoryTypeIndex = type;
            check(vkAllocateMemory(device.handle(), &alloc, nullptr, &memory), "vkAllocateMemory");
            check(vkBindBufferMemory(device.handle(), buffer, memory, 0), "vkBindBufferMemory");
        } catch (...) {
            release();
            throw;
        }
    }
    ~Allocation() { release(); }
    Allocation(const Allocation &) = delete;
    Allocation & operator=(const Allocation &) = delete;

    void release() {
        if (memory) vkFreeMemory(device.handle(), memory, nullptr);
        if (buffer) vkDestroyBuffer(device.handle(), buffer, nullptr);
        memory = VK_NULL_HANDLE;
        buffer = VK_NULL_HANDLE;
    }
    uint8_t * map() {
        void * pointer = nullptr;
        check(vkMapMemory(device.handle(), memory, 0, VK_WHOLE_SIZE, 0, &pointer), "vkMapMemory");
        return static_cast<uint8_t *>(pointer);
    }
};

void copy_buffer(Device & device, VkBuffer from, VkDeviceSize from_offset, VkBuffer to, VkDeviceSize to_offset,
                 VkDeviceSize bytes) {
    device.run_commands([&](VkCommandBuffer commands) {
        const VkBufferCopy region{from_offset, to_offset, bytes};
        vkCmdCopyBuffer(commands, from, to, 1, &region);
    });
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

Buffer::Buffer(BufferType * type, size_t bytes) : ggml_backend_buffer(type, bytes), device_(type->vulkan()) {
    const size_t page = 4096;
    reserved_ = (std::max<size_t>(bytes, 1) + page - 1) / page * page;
    base_ = mmap(nullptr, reserved_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base_ == MAP_FAILED) throw Error("cannot reserve address space for the buffer");
    try {
        Allocation allocation(device_, bytes, false);
        if (device_.is_host_visible(allocation.type) && !force_staging()) mapped_ = allocation.map();
        buffer_ = allocation.buffer;
        memory_ = allocation.memory;
        allocation.buffer = VK_NULL_HANDLE;
        allocation.memory = VK_NULL_HANDLE;
    } catch (...) {
        munmap(base_, reserved_);
        throw;
    }
}

Buffer::~Buffer() {
    if (mapped_) vkUnmapMemory(device_.handle(), memory_);
    vkFreeMemory(device_.handle(), memory_, nullptr);
    vkDestroyBuffer(device_.handle(), buffer_, nullptr);
    munmap(base_, reserved_);
}

VkDeviceSize Buffer::offset_of(const ggml_tensor * tensor) const {
    return static_cast<VkDeviceSize>(static_cast<const uint8_t *>(tensor->data) - static_cast<const uint8_t *>(base_));
}

void Buffer::write(VkDeviceSize offset, const void * data, size_t bytes) {
    if (bytes == 0) return;
    if (mapped_) {
        std::memcpy(mapped_ + offset, data, bytes);
        return;
    }
    Allocation staging(device_, bytes, true);
    std::memcpy(staging.map(), data, bytes);
    copy_buffer(device_, staging.buffer, 0, buffer_, offset, bytes);
}

void Buffer::read(VkDeviceSize offset, void * data, size_t bytes) {
    if (bytes == 0) return;
    if (mapped_) {
        std::memcpy(data, mapped_ + offset, bytes);
        return;
    }
    Allocation staging(device_, bytes, true);
    copy_buffer(device_, buffer_, offset, staging.buffer, 0, bytes);
    std::memcpy(data, staging.map(), bytes);
}

void Buffer::fill(VkDeviceSize offset, uint8_t value, size_t bytes) {
    if (bytes == 0) return;
    if (mapped_) {
        std::memset(mapped_ + offset, value, bytes);
        return;
    }
    Allocation staging(device_, bytes, true);
    std::memset(staging.map(), value, bytes);
    copy_buffer(device_, staging.buffer, 0, buffer_, offset, bytes);
}

// Transfers run synchronously; a failure here (device lost, out of memory for staging) cannot be
// returned through the void interface, so it is fatal with the reason.
template <class F>
void or_abort(const char * what, F f) {
    try {
        f();
    } catch (const Error & e) {
        std::fprintf(stderr, "ggx vulkan: %s failed: %s\n", what, e.what());
        std::abort();
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
             [&] { copy_buffer(device_, from->buffer_, from->offset_of(src), buffer_, offset_of(dst), bytes); });
    return true;
}

Buffer * buffer_of(const ggml_tensor * tensor) {
    const ggml_tensor * owner = tensor->view_src ? tensor->view_src : tensor;
    return owner->buffer ? dynamic_cast<Buffer *>(owner->buffer) : nullptr;
}

}  // namespace ggx::vulkan
