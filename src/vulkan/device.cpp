#include "vulkan/device.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "vulkan/coopmat.h"
#include "vulkan/shaders.h"

namespace ggx::vulkan {

namespace {

// Host transfers to memory the host cannot map go through a staging buffer of this size.
constexpr size_t kStagingBytes = size_t{8} << 20;

const char * result_name(VkResult result) {
    switch (result) {
        case VK_NOT_READY:
            return "VK_NOT_READY";
        case VK_TIMEOUT:
            return "VK_TIMEOUT";
        case VK_ERROR_OUT_OF_HOST_MEMORY:
            return "VK_ERROR_OUT_OF_HOST_MEMORY";
        case VK_ERROR_OUT_OF_DEVICE_MEMORY:
            return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
        case VK_ERROR_INITIALIZATION_FAILED:
            return "VK_ERROR_INITIALIZATION_FAILED";
        case VK_ERROR_DEVICE_LOST:
            return "VK_ERROR_DEVICE_LOST";
        case VK_ERROR_MEMORY_MAP_FAILED:
            return "VK_ERROR_MEMORY_MAP_FAILED";
        case VK_ERROR_FEATURE_NOT_PRESENT:
            return "VK_ERROR_FEATURE_NOT_PRESENT";
        case VK_ERROR_INCOMPATIBLE_DRIVER:
            return "VK_ERROR_INCOMPATIBLE_DRIVER";
        case VK_ERROR_TOO_MANY_OBJECTS:
            return "VK_ERROR_TOO_MANY_OBJECTS";
        case VK_ERROR_OUT_OF_POOL_MEMORY:
            return "VK_ERROR_OUT_OF_POOL_MEMORY";
        default:
            return "VkResult error";
    }
}

// The first queue family with compute, preferring one without graphics (a dedicated compute queue).
uint32_t find_compute_family(VkPhysicalDevice physical) {
    uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
    uint32_t found = UINT32_MAX;
    for (uint32_t i = 0; i < count; ++i) {
        const VkQueueFlags flags = families[i].queueFlags;
        if (!(flags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (found == UINT32_MAX || !(flags & VK_QUEUE_GRAPHICS_BIT)) found = i;
        if (!(flags & VK_QUEUE_GRAPHICS_BIT)) break;
    }
    if (found == UINT32_MAX) throw Error("no compute queue");
    return found;
}

std::vector<VkExtensionProperties> device_extensions(VkPhysicalDevice physical) {
    uint32_t count = 0;
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
    std::vector<VkExtensionProperties> extensions(count);
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data());
    extensions.resize(count);
    return extensions;
}

bool has_extension(const std::vector<VkExtensionProperties> & extensions, const char * name) {
    return std::any_of(extensions.begin(), extensions.end(), [&](const VkExtensionProperties & e) {
        return std::strcmp(e.extensionName, name) == 0;
    });
}

// The cooperativeMatrix features of both extensions: queried, then passed to vkCreateDevice to
// enable what the device has. A structure is chained only when its extension is advertised.
struct CoopmatFeatures {
    bool nv_advertised = false, khr_advertised = false;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV nv{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR khr{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};

    explicit CoopmatFeatures(const std::vector<VkExtensionProperties> & extensions)
        : nv_advertised(has_extension(extensions, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)),
          khr_advertised(has_extension(extensions, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) {}
    bool nv_usable() const { return nv_advertised && nv.cooperativeMatrix; }
    bool khr_usable() const { return khr_advertised && khr.cooperativeMatrix; }
    // Puts the advertised extensions' structures in front of next for the feature query.
    void * chain_query(void * next) { return chain(nv_advertised, khr_advertised, next); }
    // The same for vkCreateDevice: only usable extensions, cooperativeMatrix alone.
    void * chain_enable(void * next) {
        nv.cooperativeMatrixRobustBufferAccess = khr.cooperativeMatrixRobustBufferAccess = VK_FALSE;
        return chain(nv_usable(), khr_usable(), next);
    }

private:
    void * chain(bool with_nv, bool with_khr, void * next) {
        if (with_khr) khr.pNext = std::exchange(next, &khr);
        if (with_nv) nv.pNext = std::exchange(next, &nv);
        return next;
    }
};

// Every entry vkGetPhysicalDeviceCooperativeMatrixProperties{NV,KHR} (named function) lists, or
// none when the loader lacks the function or the query fails.
template <class Properties>
std::vector<Properties> coopmat_properties(VkInstance instance, VkPhysicalDevice physical,
                                           const char * function, VkStructureType type) {
    using Query = VkResult(VKAPI_PTR *)(VkPhysicalDevice, uint32_t *, Properties *);
    const auto query = reinterpret_cast<Query>(vkGetInstanceProcAddr(instance, function));
    uint32_t n = 0;
    if (!query || query(physical, &n, nullptr) != VK_SUCCESS) return {};
    Properties blank{};
    blank.sType = type;
    std::vector<Properties> all(n, blank);
    if (query(physical, &n, all.data()) < 0) return {};  // VK_INCOMPLETE keeps the first n
    all.resize(n);
    return all;
}

VkShaderStageFlags khr_coopmat_stages(VkPhysicalDevice physical) {
    VkPhysicalDeviceCooperativeMatrixPropertiesKHR coopmat{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR};
    VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &coopmat};
    vkGetPhysicalDeviceProperties2(physical, &properties);
    return coopmat.cooperativeMatrixSupportedStages;
}

}  // namespace

ggml_ext_vulkan_coopmat_shape coopmat_shape(const VkCooperativeMatrixPropertiesKHR & p) {
    return {GGML_EXT_VULKAN_COOPMAT_KHR,
            p.MSize,
            p.NSize,
            p.KSize,
            static_cast<uint32_t>(p.AType),
            static_cast<uint32_t>(p.BType),
            static_cast<uint32_t>(p.CType),
            static_cast<uint32_t>(p.ResultType),
            static_cast<uint32_t>(p.scope),
            p.saturatingAccumulation != VK_FALSE};
}

ggml_ext_vulkan_coopmat_shape coopmat_shape(const VkCooperativeMatrixPropertiesNV & p) {
    return {GGML_EXT_VULKAN_COOPMAT_NV,
            p.MSize,
            p.NSize,
            p.KSize,
            static_cast<uint32_t>(p.AType),
            static_cast<uint32_t>(p.BType),
            static_cast<uint32_t>(p.CType),
            static_cast<uint32_t>(p.DType),
            static_cast<uint32_t>(p.scope),
            false};
}

ggml_ext_vulkan_coopmat legacy_coopmat(const ggml_ext_vulkan_coopmat_shape & s) {
    return {s.m, s.n, s.k, s.a_type, s.b_type, s.c_type, s.result_type, s.scope};
}

void check(VkResult result, const char * what) {
    if (result != VK_SUCCESS) throw Error(std::string(what) + ": " + result_name(result));
}

Device::Device(VkInstance instance, VkPhysicalDevice physical) : physical_(physical) {
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &subgroup};
    vkGetPhysicalDeviceProperties2(physical, &properties);
    const VkPhysicalDeviceLimits & limits = properties.properties.limits;
    name_ = properties.properties.deviceName;
    if (properties.properties.apiVersion < VK_API_VERSION_1_2) throw Error("Vulkan 1.2 is required");
    type_ = properties.properties.deviceType;
    limits_.storage_offset_alignment = limits.minStorageBufferOffsetAlignment;
    limits_.max_storage_range = limits.maxStorageBufferRange;
    std::copy_n(limits.maxComputeWorkGroupCount, 3, limits_.max_workgroup_count);
    limits_.max_shared_memory = limits.maxComputeSharedMemorySize;
    limits_.subgroup_size = subgroup.subgroupSize;
    VkPhysicalDeviceMaintenance3Properties maintenance{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 more{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &maintenance};
    vkGetPhysicalDeviceProperties2(physical, &more);
    limits_.max_allocation = maintenance.maxMemoryAllocationSize;
    vkGetPhysicalDeviceMemoryProperties(physical, &memory_properties_);

    const std::vector<VkExtensionProperties> extensions = device_extensions(physical);
    CoopmatFeatures coopmat(extensions);
    VkPhysicalDevice8BitStorageFeatures storage8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
                                                 coopmat.chain_query(nullptr)};
    VkPhysicalDeviceShaderFloat16Int8Features float16_int8{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, &storage8};
    VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
                                                   &float16_int8};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &storage16};
    vkGetPhysicalDeviceFeatures2(physical, &features);
    if (!storage16.storageBuffer16BitAccess) throw Error("no 16-bit storage-buffer access");
    read_info(properties.properties, subgroup, extensions);
    info_.storage_buffer_8bit = storage8.storageBuffer8BitAccess;
    info_.shader_int8 = float16_int8.shaderInt8;
    info_.shader_float16 = float16_int8.shaderFloat16;
    read_coopmat(instance, coopmat.nv_usable(), coopmat.khr_usable());

    queue_family_ = find_compute_family(physical);
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue_info.queueFamilyIndex = queue_family_;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    // Enable what the service reports: 16-bit storage always, 8-bit storage, int8/float16
    // arithmetic and cooperative matrices (NV and KHR extensions) where the device has them.
    VkPhysicalDevice8BitStorageFeatures enable8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
                                                coopmat.chain_enable(nullptr)};
    enable8.storageBuffer8BitAccess = info_.storage_buffer_8bit;
    VkPhysicalDeviceShaderFloat16Int8Features enable_arith{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, &enable8};
    enable_arith.shaderInt8 = info_.shader_int8;
    enable_arith.shaderFloat16 = info_.shader_float16;
    VkPhysicalDevice16BitStorageFeatures enable16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
                                                  &enable_arith};
    enable16.storageBuffer16BitAccess = VK_TRUE;
    VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &enable16};
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    std::vector<const char *> enabled;
    if (info_.coopmat_nv) enabled.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    if (info_.coopmat_khr) enabled.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    device_info.enabledExtensionCount = static_cast<uint32_t>(enabled.size());
    device_info.ppEnabledExtensionNames = enabled.data();
    check(vkCreateDevice(physical, &device_info, nullptr, &device_), "vkCreateDevice");
    vkGetDeviceQueue(device_, queue_family_, 0, &queue_);

    VkDescriptorSetLayoutBinding bindings[kMaxBindings];
    for (uint32_t i = 0; i < kMaxBindings; ++i)
        bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    set_info.bindingCount = kMaxBindings;
    set_info.pBindings = bindings;
    check(vkCreateDescriptorSetLayout(device_, &set_info, nullptr, &set_layout_),
          "vkCreateDescriptorSetLayout");
    const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
    VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &set_layout_;
    layout_info.pushConstantRangeCount = 1;
    layout_info.pPushConstantRanges = &push;
    check(vkCreatePipelineLayout(device_, &layout_info, nullptr, &pipeline_layout_),
          "vkCreatePipelineLayout");
    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    pool_info.queueFamilyIndex = queue_family_;
    check(vkCreateCommandPool(device_, &pool_info, nullptr, &transfer_pool_), "vkCreateCommandPool");
}

void Device::read_info(const VkPhysicalDeviceProperties & properties,
                       const VkPhysicalDeviceSubgroupProperties & subgroup,
                       const std::vector<VkExtensionProperties> & extensions) {
    const VkPhysicalDeviceLimits & limits = properties.limits;
    info_.struct_size = sizeof info_;
    info_.api_version = properties.apiVersion;
    info_.vendor_id = properties.vendorID;
    info_.device_id = properties.deviceID;
    std::copy_n(limits.maxComputeWorkGroupCount, 3, info_.max_workgroup_count);
    std::copy_n(limits.maxComputeWorkGroupSize, 3, info_.max_workgroup_size);
    info_.max_workgroup_invocations = limits.maxComputeWorkGroupInvocations;
    info_.max_shared_memory = limits.maxComputeSharedMemorySize;
    info_.max_bindings = kMaxBindings;
    info_.max_push_constants = kPushConstantBytes;
    info_.max_constants = kMaxConstants;
    info_.storage_offset_alignment = limits.minStorageBufferOffsetAlignment;
    info_.max_storage_range = limits.maxStorageBufferRange;
    info_.subgroup_size = info_.min_subgroup_size = info_.max_subgroup_size = subgroup.subgroupSize;
    info_.subgroup_stages = subgroup.supportedStages;
    info_.subgroup_operations = subgroup.supportedOperations;
    info_.storage_buffer_16bit = true;
    if (has_extension(extensions, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME) ||
        properties.apiVersion >= VK_API_VERSION_1_3) {
        VkPhysicalDeviceSubgroupSizeControlPropertiesEXT control{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
        VkPhysicalDeviceProperties2 more{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &control};
        vkGetPhysicalDeviceProperties2(physical_, &more);
        info_.min_subgroup_size = control.minSubgroupSize;
        info_.max_subgroup_size = control.maxSubgroupSize;
    }
}

void Device::add_coopmat_shape(const ggml_ext_vulkan_coopmat_shape & shape) {
    if (info_.n_coopmat_shapes < GGML_EXT_VULKAN_MAX_COOPMAT_SHAPES)
        info_.coopmat_shapes[info_.n_coopmat_shapes++] = shape;
    if (shape.source == GGML_EXT_VULKAN_COOPMAT_NV && info_.n_coopmat < GGML_EXT_VULKAN_MAX_COOPMAT)
        info_.coopmat[info_.n_coopmat++] = legacy_coopmat(shape);
}

void Device::read_coopmat(VkInstance instance, bool nv, bool khr) {
    info_.coopmat_nv = nv;
    info_.coopmat_khr = khr;
    if (khr) {
        info_.coopmat_khr_stages = khr_coopmat_stages(physical_);
        for (const auto & p : coopmat_properties<VkCooperativeMatrixPropertiesKHR>(
                 instance, physical_, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR",
                 VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR))
            add_coopmat_shape(coopmat_shape(p));
    }
    if (nv) {
        for (const auto & p : coopmat_properties<VkCooperativeMatrixPropertiesNV>(
                 instance, physical_, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV",
                 VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV))
            add_coopmat_shape(coopmat_shape(p));
    }
}

Device::~Device() {
    if (!device_) return;
    staging_.reset();
    vkDeviceWaitIdle(device_);
    tables_.clear();
    pipelines_.for_each([&](PipelineCache::Module & module) {
        for (const auto & [constants, pipeline] : module.pipelines)
            vkDestroyPipeline(device_, pipeline.handle, nullptr);
        vkDestroyShaderModule(device_, module.handle, nullptr);
    });
    vkDestroyCommandPool(device_, transfer_pool_, nullptr);
    vkDestroyPipelineLayout(device_, pipeline_layout_, nullptr);
    vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
    vkDestroyDevice(device_, nullptr);
}

VkBuffer Device::constant_table(const void * data, size_t bytes) {
    std::lock_guard lock(tables_mutex_);
    std::unique_ptr<Allocation> & table = tables_[data];
    if (!table) {
        auto created = std::make_unique<Allocation>(*this, bytes, false);
        upload(created->buffer(), 0, data, bytes);
        table = std::move(created);
    }
    return table->buffer();
}

void Device::memory(size_t * free, size_t * total) const {
    VkDeviceSize bytes = 0;
    for (uint32_t i = 0; i < memory_properties_.memoryHeapCount; ++i) {
        if (memory_properties_.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
            bytes += memory_properties_.memoryHeaps[i].size;
    }
    *total = static_cast<size_t>(bytes);
    *free = *total;  // without VK_EXT_memory_budget the driver does not say what others use
}

uint32_t Device::memory_type(uint32_t type_bits, bool host_visible) const {
    const auto matches = [&](uint32_t i, VkMemoryPropertyFlags wanted) {
        return (type_bits & (1u << i)) &&
               (memory_properties_.memoryTypes[i].propertyFlags & wanted) == wanted;
    };
    const VkMemoryPropertyFlags visible =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags base = host_visible ? visible : 0;
    for (VkMemoryPropertyFlags wanted : {base | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, base}) {
        for (uint32_t i = 0; i < memory_properties_.memoryTypeCount; ++i) {
            if (matches(i, wanted)) return i;
        }
    }
    throw Error(host_visible ? "no host-visible memory type" : "no memory type for the buffer");
}

bool Device::is_host_visible(uint32_t memory_type) const {
    const VkMemoryPropertyFlags visible =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    return (memory_properties_.memoryTypes[memory_type].propertyFlags & visible) == visible;
}

void Device::submit(const VkSubmitInfo & info, VkFence fence) {
    std::lock_guard lock(queue_mutex_);
    check(vkQueueSubmit(queue_, 1, &info, fence), "vkQueueSubmit");
}

void Device::run_commands(const std::function<void(VkCommandBuffer)> & record) {
    std::lock_guard lock(transfer_mutex_);
    record_and_wait(record);
}

void Device::record_and_wait(const std::function<void(VkCommandBuffer)> & record) {
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = transfer_pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    VkCommandBuffer commands = VK_NULL_HANDLE;
    check(vkAllocateCommandBuffers(device_, &alloc, &commands), "vkAllocateCommandBuffers");
    VkFence fence = VK_NULL_HANDLE;
    const VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkResult result = vkCreateFence(device_, &fence_info, nullptr, &fence);
    if (result == VK_SUCCESS) {
        VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        result = vkBeginCommandBuffer(commands, &begin);
        if (result == VK_SUCCESS) {
            record(commands);
            result = vkEndCommandBuffer(commands);
        }
        if (result == VK_SUCCESS) {
            VkSubmitInfo submit_info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
            submit_info.commandBufferCount = 1;
            submit_info.pCommandBuffers = &commands;
            std::lock_guard queue_lock(queue_mutex_);
            result = vkQueueSubmit(queue_, 1, &submit_info, fence);
        }
        if (result == VK_SUCCESS) result = vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX);
        vkDestroyFence(device_, fence, nullptr);
    }
    vkFreeCommandBuffers(device_, transfer_pool_, 1, &commands);
    check(result, "transfer");
}

template <class Chunk>
void Device::staged(size_t bytes, Chunk chunk) {
    std::lock_guard lock(transfer_mutex_);
    if (!staging_) staging_ = std::make_unique<Allocation>(*this, kStagingBytes, true);
    for (size_t done = 0; done < bytes; done += kStagingBytes)
        chunk(done, std::min(kStagingBytes, bytes - done));
}

void Device::upload(VkBuffer to, VkDeviceSize offset, const void * data, size_t bytes) {
    staged(bytes, [&](size_t done, size_t n) {
        std::memcpy(staging_->map(), static_cast<const uint8_t *>(data) + done, n);
        record_and_wait([&](VkCommandBuffer commands) {
            const VkBufferCopy region{0, offset + done, n};
            vkCmdCopyBuffer(commands, staging_->buffer(), to, 1, &region);
        });
    });
}

void Device::download(VkBuffer from, VkDeviceSize offset, void * data, size_t bytes) {
    staged(bytes, [&](size_t done, size_t n) {
        record_and_wait([&](VkCommandBuffer commands) {
            const VkBufferCopy region{offset + done, 0, n};
            vkCmdCopyBuffer(commands, from, staging_->buffer(), 1, &region);
        });
        std::memcpy(static_cast<uint8_t *>(data) + done, staging_->map(), n);
    });
}

void Device::fill(VkBuffer to, VkDeviceSize offset, uint8_t value, size_t bytes) {
    staged(bytes, [&](size_t done, size_t n) {
        std::memset(staging_->map(), value, n);
        record_and_wait([&](VkCommandBuffer commands) {
            const VkBufferCopy region{0, offset + done, n};
            vkCmdCopyBuffer(commands, staging_->buffer(), to, 1, &region);
        });
    });
}

void Device::copy(VkBuffer from, VkDeviceSize from_offset, VkBuffer to, VkDeviceSize to_offset,
                  size_t bytes) {
    run_commands([&](VkCommandBuffer commands) {
        const VkBufferCopy region{from_offset, to_offset, bytes};
        vkCmdCopyBuffer(commands, from, to, 1, &region);
    });
}

Allocation::Allocation(Device & device, VkDeviceSize bytes, bool host_visible) : device_(device) {
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = std::max<VkDeviceSize>(bytes, 4);
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    check(vkCreateBuffer(device.handle(), &info, nullptr, &buffer_), "vkCreateBuffer");
    VkMemoryRequirements requirements;
    vkGetBufferMemoryRequirements(device.handle(), buffer_, &requirements);
    try {
        type_ = device.memory_type(requirements.memoryTypeBits, host_visible);
        VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
        alloc.allocationSize = requirements.size;
        alloc.memoryTypeIndex = type_;
        check(vkAllocateMemory(device.handle(), &alloc, nullptr, &memory_), "vkAllocateMemory");
        check(vkBindBufferMemory(device.handle(), buffer_, memory_, 0), "vkBindBufferMemory");
    } catch (...) {
        if (memory_) vkFreeMemory(device.handle(), memory_, nullptr);
        vkDestroyBuffer(device.handle(), buffer_, nullptr);
        throw;
    }
}

Allocation::~Allocation() {
    if (mapped_) vkUnmapMemory(device_.handle(), memory_);
    vkFreeMemory(device_.handle(), memory_, nullptr);
    vkDestroyBuffer(device_.handle(), buffer_, nullptr);
}

bool Allocation::host_visible() const { return device_.is_host_visible(type_); }

uint8_t * Allocation::map() {
    if (!mapped_) {
        void * pointer = nullptr;
        check(vkMapMemory(device_.handle(), memory_, 0, VK_WHOLE_SIZE, 0, &pointer), "vkMapMemory");
        mapped_ = static_cast<uint8_t *>(pointer);
    }
    return mapped_;
}

const Pipeline & Device::pipeline(const std::string & shader, const std::vector<uint32_t> & constants) {
    std::lock_guard lock(pipeline_mutex_);
    PipelineCache::Module *& module = builtins_[shader];
    if (!module) {
        const auto & table = shader_table();
        const auto code =
            std::find_if(table.begin(), table.end(), [&](const ShaderCode & c) { return shader == c.name; });
        if (code == table.end()) {
            builtins_.erase(shader);
            throw Error("no shader named '" + shader + "'");
        }
        module = &pipelines_.module({code->words, code->n_words});
    }
    return pipeline_of(*module, shader, constants);
}

const Pipeline & Device::pipeline(const std::string & name, std::span<const uint32_t> words,
                                  const std::vector<uint32_t> & constants) {
    std::lock_guard lock(pipeline_mutex_);
    return pipeline_of(pipelines_.module(words), name, constants);
}

const Pipeline & Device::pipeline_of(PipelineCache::Module & module, const std::string & name,
                                     const std::vector<uint32_t> & constants) {
    if (const auto it = module.pipelines.find(constants); it != module.pipelines.end()) return it->second;
    if (!module.handle) {
        VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
        info.codeSize = module.words.size() * sizeof(uint32_t);
        info.pCode = module.words.data();
        check(vkCreateShaderModule(device_, &info, nullptr, &module.handle),
              ("vkCreateShaderModule(" + name + ")").c_str());
    }
    std::vector<VkSpecializationMapEntry> entries(constants.size());
    for (uint32_t i = 0; i < entries.size(); ++i)
        entries[i] = {i, i * 4u, 4u};
    const VkSpecializationInfo specialization{static_cast<uint32_t>(entries.size()), entries.data(),
                                              constants.size() * 4u, constants.data()};
    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module.handle;
    info.stage.pName = "main";
    info.stage.pSpecializationInfo = constants.empty() ? nullptr : &specialization;
    info.layout = pipeline_layout_;
    Pipeline pipeline;
    check(vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline.handle),
          ("vkCreateComputePipelines(" + name + ")").c_str());
    return module.pipelines.emplace(constants, pipeline).first->second;
}

}  // namespace ggx::vulkan
