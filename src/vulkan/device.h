// One Vulkan physical device opened for compute: its logical device, compute queue, memory types,
// limits, the shared descriptor-set and pipeline layouts, and the pipeline cache.
#pragma once

#include <ggml-ext-vulkan.h>
#include <vulkan/vulkan.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "vulkan/pipeline_cache.h"

namespace ggx::vulkan {

// A failed Vulkan call or an impossible request; caught at the ggml API boundary and turned into a
// status with ggml_backend_get_last_error.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Throws Error("what: VK_ERROR_...") unless result is VK_SUCCESS.
void check(VkResult result, const char * what);

// Every kernel binds at most this many storage buffers, at consecutive bindings from zero, and
// passes at most kPushConstantBytes of push constants (the minimum every device guarantees).
inline constexpr uint32_t kMaxBindings = 8;
inline constexpr uint32_t kPushConstantBytes = 128;
// Specialisation constants per pipeline that ggml_ext_vulkan_v1 accepts.
inline constexpr uint32_t kMaxConstants = 64;

struct Limits {
    VkDeviceSize storage_offset_alignment = 0;  // minStorageBufferOffsetAlignment
    VkDeviceSize max_storage_range = 0;         // maxStorageBufferRange: the largest binding
    VkDeviceSize max_allocation = 0;            // maxMemoryAllocationSize
    uint32_t max_workgroup_count[3] = {};
    uint32_t max_shared_memory = 0;
    uint32_t subgroup_size = 0;
};

class Device;

// A VkBuffer (storage and transfer usage) bound to its own memory allocation: device-local when
// possible, host-visible and coherent when asked. Throws Error when it cannot be created.
class Allocation {
public:
    Allocation(Device & device, VkDeviceSize bytes, bool host_visible);
    ~Allocation();
    Allocation(const Allocation &) = delete;
    Allocation & operator=(const Allocation &) = delete;

    VkBuffer buffer() const { return buffer_; }
    bool host_visible() const;
    // The persistent host mapping of host-visible memory (mapped on first use).
    uint8_t * map();

private:
    Device & device_;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    uint32_t type_ = 0;
    uint8_t * mapped_ = nullptr;
};

class Device {
public:
    // Opens physical for compute; throws Error when it has no compute queue or lacks 16-bit storage.
    Device(VkInstance instance, VkPhysicalDevice physical);
    ~Device();
    Device(const Device &) = delete;
    Device & operator=(const Device &) = delete;

    VkDevice handle() const { return device_; }
    VkPhysicalDevice physical() const { return physical_; }
    const std::string & name() const { return name_; }
    VkPhysicalDeviceType type() const { return type_; }
    const Limits & limits() const { return limits_; }
    // Limits and enabled features as the extension service reports them.
    const ggml_ext_vulkan_device_info & info() const { return info_; }
    uint32_t queue_family() const { return queue_family_; }
    VkDescriptorSetLayout set_layout() const { return set_layout_; }
    VkPipelineLayout pipeline_layout() const { return pipeline_layout_; }
    // Total and currently free bytes of the device-local heaps.
    void memory(size_t * free, size_t * total) const;
    // Index of the memory type for requirements: device-local preferred, host-visible required when
    // asked; throws Error when there is none.
    uint32_t memory_type(uint32_t type_bits, bool host_visible) const;
    bool is_host_visible(uint32_t memory_type) const;

    // Submits to the device's compute queue (queues need external synchronisation).
    void submit(const VkSubmitInfo & info, VkFence fence);
    // Records commands into a one-time command buffer, submits it and waits for it.
    void run_commands(const std::function<void(VkCommandBuffer)> & record);
    // Synchronous transfers between host memory and a buffer range, through a persistent staging
    // buffer in chunks (for memory the host cannot map), and between two buffers of the device.
    void upload(VkBuffer to, VkDeviceSize offset, const void * data, size_t bytes);
    void download(VkBuffer from, VkDeviceSize offset, void * data, size_t bytes);
    void fill(VkBuffer to, VkDeviceSize offset, uint8_t value, size_t bytes);
    void copy(VkBuffer from, VkDeviceSize from_offset, VkBuffer to, VkDeviceSize to_offset, size_t bytes);
    // A device buffer holding a copy of the bytes at data (a read-only table of the shaders, such as
    // the i-quant grids), uploaded on the first call for data and kept for the device's lifetime.
    VkBuffer constant_table(const void * data, size_t bytes);

    // The pipeline of shader name with the given 32-bit specialisation constants (ids 0, 1, ...),
    // created on first use and cached for the device's lifetime. Throws Error for an unknown name.
    const Pipeline & pipeline(const std::string & shader, const std::vector<uint32_t> & constants = {});
    size_t n_pipelines() const {
        std::lock_guard lock(pipeline_mutex_);
        return pipelines_.n_pipelines();
    }
    // The same for an application's SPIR-V module, cached under its complete words and constants
    // (name is for error messages).
    const Pipeline & pipeline(const std::string & name, std::span<const uint32_t> words,
                              const std::vector<uint32_t> & constants);

private:
    VkPhysicalDevice physical_;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    uint32_t queue_family_ = 0;
    std::string name_;
    VkPhysicalDeviceType type_ = VK_PHYSICAL_DEVICE_TYPE_OTHER;
    Limits limits_;
    ggml_ext_vulkan_device_info info_{};
    VkPhysicalDeviceMemoryProperties memory_properties_{};
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkPipelineLayout pipeline_layout_ = VK_NULL_HANDLE;
    std::mutex queue_mutex_;
    void record_and_wait(const std::function<void(VkCommandBuffer)> & record);  // transfer_mutex_ held
    void read_info(const VkPhysicalDeviceProperties & properties,
                   const VkPhysicalDeviceSubgroupProperties & subgroup,
                   const std::vector<VkExtensionProperties> & extensions);
    // The cooperative-matrix shapes of the extensions enabled on the device (nv, khr).
    void read_coopmat(VkInstance instance, bool nv, bool khr);
    void add_coopmat_shape(const ggml_ext_vulkan_coopmat_shape & shape);
    // module's pipeline for constants, created (with the module's handle) on first use; mutex held.
    const Pipeline & pipeline_of(PipelineCache::Module & module, const std::string & name,
                                 const std::vector<uint32_t> & constants);
    // Stages host data through staging_ (created on first use) in chunks of at most its size.
    template <class Chunk>
    void staged(size_t bytes, Chunk chunk);

    std::mutex transfer_mutex_;  // guards transfer_pool_ and staging_
    VkCommandPool transfer_pool_ = VK_NULL_HANDLE;
    std::unique_ptr<Allocation> staging_;
    std::mutex tables_mutex_;  // guards tables_
    std::unordered_map<const void *, std::unique_ptr<Allocation>> tables_;
    mutable std::mutex pipeline_mutex_;  // guards pipelines_ and builtins_
    PipelineCache pipelines_;
    std::unordered_map<std::string, PipelineCache::Module *> builtins_;  // the built-in shaders' by name
};

}  // namespace ggx::vulkan
