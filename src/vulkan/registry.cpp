// The Vulkan registry and its ggml devices: the Vulkan instance, one device per usable physical
// device (GGML_VK_VISIBLE_DEVICES restricts and orders them), and the C entry points of ggml-vulkan.h.
#include <ggml-vulkan.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "core/internal.h"
#include "interface/module.h"
#include "core/log.h"
#include "vulkan/backend.h"
#include "vulkan/ext_service.h"
#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

// A MUL_MAT whose src1 has this many columns is worth moving weights to the device for.
constexpr int64_t kOffloadBatch = 32;

class VulkanDevice final : public ggml_backend_device {
public:
    VulkanDevice(ggml_backend_reg_t reg, std::unique_ptr<Device> device, size_t index)
        : reg_(reg),
          device_(std::move(device)),
          name_("Vulkan" + std::to_string(index)),
          buffer_type_(this, *device_),
          pinned_type_(this, *device_) {}

    const char * name() const override { return name_.c_str(); }
    const char * description() const override { return device_->name().c_str(); }
    void memory(size_t * free, size_t * total) const override { device_->memory(free, total); }
    // Every Vulkan device is a separate memory space for the scheduler, CPU drivers (lavapipe) too.
    enum ggml_backend_dev_type type() const override { return GGML_BACKEND_DEVICE_TYPE_GPU; }
    ggml_backend_dev_caps caps() const override { return {false, true, false, false}; }
    ggml_backend_reg_t reg() const override { return reg_; }
    ggml_backend_t init_backend(const char *) override {
        try {
            return new Backend(this, buffer_type_);
        } catch (const Error & e) {
            backend::set_last_error(name_ + ": " + e.what());
            return nullptr;
        }
    }
    ggml_backend_buffer_type_t buffer_type() override { return &buffer_type_; }
    ggml_backend_buffer_type_t host_buffer_type() override { return &pinned_type_; }
    const Kernel * native_kernel(const ggml_tensor * op) const override {
        if (op->op < 0 || op->op >= GGML_OP_COUNT) return nullptr;
        const Kernel & kernel = kernel_table()[op->op];
        return kernel.supports(kernel, const_cast<VulkanDevice *>(this), op) ? &kernel : nullptr;
    }
    bool supports_buft(ggml_backend_buffer_type_t buft) const override { return buft == &buffer_type_; }
    bool offload_op(const ggml_tensor * op) const override {
        return op->op == GGML_OP_MUL_MAT && op->src[1] && op->src[1]->ne[1] >= kOffloadBatch;
    }
    Device & vulkan() const { return *device_; }

private:
    ggml_backend_reg_t reg_;
    std::unique_ptr<Device> device_;
    std::string name_;
    BufferType buffer_type_;
    PinnedBufferType pinned_type_;
};

// The variable naming the physical devices to open: ggml's GGML_VK_VISIBLE_DEVICES, else ggx's
// earlier name GGX_VULKAN_DEVICES; {nullptr, nullptr} when neither is set.
std::pair<const char *, const char *> visible_devices_variable() {
    for (const char * name : {"GGML_VK_VISIBLE_DEVICES", "GGX_VULKAN_DEVICES"}) {
        if (const char * value = std::getenv(name)) return {name, value};
    }
    return {nullptr, nullptr};
}

// The physical-device indices the variable lists (comma-separated, in that order), or every index
// below count.
std::vector<uint32_t> selected_devices(uint32_t count) {
    std::vector<uint32_t> indices;
    const auto [variable, list] = visible_devices_variable();
    if (!list) {
        for (uint32_t i = 0; i < count; ++i)
            indices.push_back(i);
        return indices;
    }
    std::stringstream stream(list);
    for (std::string item; std::getline(stream, item, ',');) {
        char * end = nullptr;
        const unsigned long index = std::strtoul(item.c_str(), &end, 10);
        if (end != item.c_str() && *end == '\0' && index < count) {
            indices.push_back(static_cast<uint32_t>(index));
        } else {
            core::log(GGML_LOG_LEVEL_WARN, "ggx vulkan: %s: ignoring '%s' (%u devices)\n", variable, item.c_str(),
                      count);
        }
    }
    return indices;
}

class VulkanReg final : public ggml_backend_reg {
public:
    VulkanReg() {
        VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
        app.pApplicationName = "ggx";
        app.apiVersion = VK_API_VERSION_1_2;
        VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
        info.pApplicationInfo = &app;
        if (vkCreateInstance(&info, nullptr, &instance_) != VK_SUCCESS) {
            instance_ = VK_NULL_HANDLE;  // no loader or driver: a registry without devices
            return;
        }
        uint32_t count = 0;
        vkEnumeratePhysicalDevices(instance_, &count, nullptr);
        std::vector<VkPhysicalDevice> physical(count);
        vkEnumeratePhysicalDevices(instance_, &count, physical.data());
        for (uint32_t index : selected_devices(count)) {
            try {
                devices_.push_back(std::make_unique<VulkanDevice>(
                    this, std::make_unique<Device>(instance_, physical[index]), devices_.size()));
            } catch (const Error & e) {
                VkPhysicalDeviceProperties properties;
                vkGetPhysicalDeviceProperties(physical[index], &properties);
                core::log(GGML_LOG_LEVEL_WARN, "ggx vulkan: skipping device %u (%s): %s\n", index,
                          properties.deviceName, e.what());
            }
        }
    }

    const char * name() const override { return "Vulkan"; }
    void * proc_address(const char * name) override {
        return std::string_view(name) == GGML_EXT_VULKAN_V1 ? const_cast<ggml_ext_vulkan_v1 *>(ext_service())
                                                            : nullptr;
    }
    size_t device_count() const override { return devices_.size(); }
    ggml_backend_dev_t device(size_t index) override {
        return index < devices_.size() ? devices_[index].get() : nullptr;
    }

private:
    VkInstance instance_ = VK_NULL_HANDLE;
    std::vector<std::unique_ptr<VulkanDevice>> devices_;
};

VulkanReg & vulkan_reg() {
    static VulkanReg * reg = new VulkanReg;  // process lifetime: devices outlive every backend
    return *reg;
}

}  // namespace

Device * vulkan_device(ggml_backend_dev_t device) {
    auto * vk = dynamic_cast<VulkanDevice *>(device);
    return vk ? &vk->vulkan() : nullptr;
}

}  // namespace ggx::vulkan

using ggx::vulkan::vulkan_reg;

extern "C" {

ggml_backend_reg_t ggml_backend_vk_reg(void) { return &vulkan_reg(); }

int ggml_backend_vk_get_device_count(void) { return static_cast<int>(vulkan_reg().device_count()); }

ggml_backend_t ggml_backend_vk_init(size_t device_index) {
    ggml_backend_dev_t device = vulkan_reg().device(device_index);
    if (!device) {
        ggx::backend::set_last_error("ggml_backend_vk_init: no Vulkan device " +
                                     std::to_string(device_index));
        return nullptr;
    }
    return device->init_backend(nullptr);
}

bool ggml_backend_is_vk(ggml_backend_t backend) {
    return backend && dynamic_cast<ggx::vulkan::Backend *>(backend) != nullptr;
}

ggml_backend_buffer_type_t ggml_backend_vk_buffer_type(size_t device_index) {
    ggml_backend_dev_t device = vulkan_reg().device(device_index);
    return device ? device->buffer_type() : nullptr;
}

void ggml_backend_vk_get_device_description(int device, char * description, size_t description_size) {
    ggml_backend_dev_t dev = device >= 0 ? vulkan_reg().device(static_cast<size_t>(device)) : nullptr;
    std::snprintf(description, description_size, "%s", dev ? dev->description() : "");
}

void ggml_backend_vk_get_device_memory(int device, size_t * free, size_t * total) {
    ggml_backend_dev_t dev = device >= 0 ? vulkan_reg().device(static_cast<size_t>(device)) : nullptr;
    if (dev) {
        dev->memory(free, total);
    } else {
        *free = *total = 0;
    }
}

// Pinned memory of the first device, as in ggml (one host buffer type for the whole registry).
ggml_backend_buffer_type_t ggml_backend_vk_host_buffer_type(void) {
    ggml_backend_dev_t device = vulkan_reg().device(0);
    return device ? device->host_buffer_type() : nullptr;
}

}  // extern "C"

GGML_BACKEND_DL_IMPL(ggml_backend_vk_reg)
