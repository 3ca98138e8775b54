// Device memory of a Vulkan device as ggml buffers. A buffer is one VkBuffer over one allocation;
// tensors are placed at byte offsets in it. Its base() is a reserved, inaccessible host address
// range of the buffer's size, so tensor addresses are unique across buffers and a host access
// through one faults instead of reading stale memory.
#pragma once

#include "interface/backend-impl.h"
#include "vulkan/device.h"

namespace ggx::vulkan {

class BufferType final : public ggml_backend_buffer_type {
public:
    BufferType(ggml_backend_dev_t owner, Device & device);
    const char * name() const override { return name_.c_str(); }
    ggml_backend_buffer_t alloc_buffer(size_t size) override;
    size_t alignment() const override;
    size_t max_size() const override;
    bool is_host() const override { return false; }
    ggml_backend_dev_t device() const override { return owner_; }
    Device & vulkan() const { return device_; }

private:
    ggml_backend_dev_t owner_;
    Device & device_;
    std::string name_;
};

// Host-visible, coherent memory of a device (pinned: the driver keeps it resident for transfers),
// whose buffers the host reads and writes directly; the CPU device computes on it too.
class PinnedBufferType final : public ggml_backend_buffer_type {
public:
    PinnedBufferType(ggml_backend_dev_t owner, Device & device);
    const char * name() const override { return name_.c_str(); }
    ggml_backend_buffer_t alloc_buffer(size_t size) override;
    size_t alignment() const override { return 64; }
    bool is_host() const override { return true; }
    ggml_backend_dev_t device() const override { return owner_; }

private:
    ggml_backend_dev_t owner_;
    Device & device_;
    std::string name_;
};

class Buffer final : public ggml_backend_buffer {
public:
    // Throws Error when the memory cannot be allocated.
    Buffer(BufferType * type, size_t bytes);
    ~Buffer() override;

    void * base() override { return base_; }
    void set_tensor(ggml_tensor * tensor, const void * data, size_t offset, size_t bytes) override;
    void get_tensor(const ggml_tensor * tensor, void * data, size_t offset, size_t bytes) override;
    void memset_tensor(ggml_tensor * tensor, uint8_t value, size_t offset, size_t bytes) override;
    bool copy_tensor(const ggml_tensor * src, ggml_tensor * dst) override;
    void clear(uint8_t value) override;

    VkBuffer handle() const { return memory_.buffer(); }
    Device & vulkan() const { return device_; }
    // Byte offset of a tensor's (or view's) first element in this buffer.
    VkDeviceSize offset_of(const ggml_tensor * tensor) const;

private:
    // Host-visible memory is written through its mapping; otherwise through a staging buffer.
    void write(VkDeviceSize offset, const void * data, size_t bytes);
    void read(VkDeviceSize offset, void * data, size_t bytes);
    void fill(VkDeviceSize offset, uint8_t value, size_t bytes);

    Device & device_;
    Allocation memory_;
    uint8_t * mapped_ = nullptr;  // null: transfers go through the device's staging buffer
    void * base_ = nullptr;
    size_t reserved_ = 0;  // bytes of address space reserved at base_
};

// The Vulkan buffer holding tensor (or its view source), or nullptr for another kind of buffer.
Buffer * buffer_of(const ggml_tensor * tensor);

}  // namespace ggx::vulkan
