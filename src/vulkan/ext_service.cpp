// ggml_ext_vulkan_v1: extension kernels record their own SPIR-V dispatches and copies into the
// Vulkan backend's command buffer, with ranges validated before anything is recorded.
#include <ggml-ext.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "vulkan/backend.h"
#include "vulkan/ext_service.h"

namespace ggx::vulkan {

namespace {

// The Vulkan backend behind backend, or nullptr with an error.
Backend * vulkan_backend(ggml_backend_t backend, const char * what) {
    auto * vk = backend ? dynamic_cast<Backend *>(backend) : nullptr;
    if (!vk) ggml_ext_set_error((std::string(what) + ": not a Vulkan backend").c_str());
    return vk;
}

// A validated range: the buffer holding it and its exact byte interval there.
struct Resolved {
    const Buffer * buffer = nullptr;
    VkDeviceSize begin = 0, end = 0;
};

// Resolves range on device, or sets an error naming what (and returns false).
bool resolve(const Device & device, const ggml_ext_vulkan_range & range, const std::string & what,
             Resolved & out) {
    const auto reject = [&](const std::string & why) {
        ggml_ext_set_error((what + ": " + why).c_str());
        return false;
    };
    const ggml_backend_buffer_t holder =
        range.tensor ? (range.tensor->view_src ? range.tensor->view_src->buffer : range.tensor->buffer)
                     : range.buffer;
    if (!holder)
        return reject(range.tensor ? "the tensor is not allocated" : "neither a tensor nor a buffer");
    const auto * buffer = dynamic_cast<const Buffer *>(holder);
    if (!buffer || &buffer->vulkan() != &device) return reject("the memory is not on this Vulkan device");
    const VkDeviceSize base = range.tensor ? buffer->offset_of(range.tensor) : 0;
    const VkDeviceSize extent = range.tensor ? ggml_nbytes(range.tensor) : buffer->size;
    const VkDeviceSize size = range.size ? range.size : (range.offset < extent ? extent - range.offset : 0);
    if (size == 0 || range.offset + size > extent) {
        return reject("bytes [" + std::to_string(range.offset) + ", " + std::to_string(range.offset + size) +
                      ") are empty or outside the " + std::to_string(extent) + "-byte " +
                      (range.tensor ? "tensor" : "buffer"));
    }
    out = {buffer, base + range.offset, base + range.offset + size};
    return true;
}

// Whether vk is executing a plan (extension work is recorded only then); else sets the error.
bool in_plan(const Backend & vk, const std::string & what) {
    if (vk.in_plan()) return true;
    ggml_ext_set_error(
        (what + ": " + vk.name() + ": extension work can only be recorded while a plan executes").c_str());
    return false;
}

// Records through the backend (which counts it toward early submission); its error prefixed by what.
ggml_status record(Backend & vk, const std::string & what, const std::function<void(Recorder &)> & f) {
    const ggml_status status = vk.record_extension(f);
    if (status != GGML_STATUS_SUCCESS)
        ggml_ext_set_error((what + ": " + ggml_backend_get_last_error()).c_str());
    return status;
}

// Fills as much of info as the caller's struct_size covers (older callers know fewer fields).
bool device_info(ggml_backend_dev_t device, ggml_ext_vulkan_device_info * info) {
    const Device * vk = device ? vulkan_device(device) : nullptr;
    if (!vk || !info || info->struct_size < GGML_EXT_VULKAN_DEVICE_INFO_V1_SIZE) {
        ggml_ext_set_error(!vk ? "device_info: not a Vulkan device" : "device_info: struct_size too small");
        return false;
    }
    const size_t bytes = std::min(info->struct_size, sizeof *info);
    std::memcpy(static_cast<void *>(info), &vk->info(), bytes);
    info->struct_size = bytes;
    return true;
}

bool buffer_info(ggml_backend_t backend, const ggml_ext_vulkan_range * range,
                 ggml_ext_vulkan_buffer_info * info) {
    Backend * vk = vulkan_backend(backend, "buffer_info");
    Resolved r;
    if (!vk || !range || !info || !resolve(vk->vulkan(), *range, "buffer_info", r)) return false;
    const VkDeviceSize alignment = vk->vulkan().limits().storage_offset_alignment;
    const VkDeviceSize descriptor_offset = r.begin / alignment * alignment;
    *info = {reinterpret_cast<uint64_t>(r.buffer->handle()), r.begin, r.end, descriptor_offset,
             static_cast<uint32_t>(r.begin - descriptor_offset)};
    return true;
}

// The dispatch's problems, or "" when it can be recorded.
std::string check_dispatch(const Device & device, const ggml_ext_vulkan_dispatch & d) {
    const ggml_ext_vulkan_device_info & info = device.info();
    if (d.struct_size < sizeof d) return "struct_size too small";
    if (!d.spirv || d.spirv_bytes < 20 || d.spirv_bytes % 4 != 0 || d.spirv[0] != 0x07230203u)
        return "no SPIR-V module";
    if (d.n_bindings > info.max_bindings || (d.n_bindings && !d.bindings))
        return std::to_string(d.n_bindings) + " bindings (at most " + std::to_string(info.max_bindings) + ")";
    if (d.n_constants > info.max_constants || (d.n_constants && !d.constants))
        return std::to_string(d.n_constants) + " constants (at most " + std::to_string(info.max_constants) +
               ")";
    if (d.push_constants_bytes > info.max_push_constants || d.push_constants_bytes % 4 != 0 ||
        (d.push_constants_bytes && !d.push_constants))
        return std::to_string(d.push_constants_bytes) + " push-constant bytes (a multiple of 4, at most " +
               std::to_string(info.max_push_constants) + ")";
    for (int i = 0; i < 3; ++i) {
        if (d.groups[i] == 0 || d.groups[i] > info.max_workgroup_count[i])
            return "workgroup count " + std::to_string(d.groups[i]) + " in dimension " + std::to_string(i) +
                   " (1 .. " + std::to_string(info.max_workgroup_count[i]) + ")";
    }
    return "";
}

ggml_status dispatch(ggml_backend_t backend, const ggml_ext_vulkan_dispatch * d) {
    Backend * vk = vulkan_backend(backend, "dispatch");
    if (!vk || !d) return GGML_STATUS_FAILED;
    Device & device = vk->vulkan();
    const std::string what = std::string("dispatch '") + (d->name ? d->name : "?") + "'";
    if (const std::string problem = check_dispatch(device, *d); !problem.empty()) {
        ggml_ext_set_error((what + ": " + problem).c_str());
        return GGML_STATUS_FAILED;
    }
    std::vector<Arg> args;
    const VkDeviceSize alignment = device.limits().storage_offset_alignment;
    for (uint32_t i = 0; i < d->n_bindings; ++i) {
        Resolved r;
        if (!resolve(device, d->bindings[i].range, what + ": binding " + std::to_string(i), r))
            return GGML_STATUS_FAILED;
        const VkDeviceSize begin = r.begin / alignment * alignment;
        if (r.end - begin > device.limits().max_storage_range) {
            ggml_ext_set_error((what + ": binding " + std::to_string(i) + " spans more than " +
                                std::to_string(device.limits().max_storage_range) + " bytes")
                                   .c_str());
            return GGML_STATUS_FAILED;
        }
        args.push_back({r.buffer->handle(), begin, r.end - begin, d->bindings[i].written});
    }
    if (!in_plan(*vk, what)) return GGML_STATUS_FAILED;
    const Pipeline * pipeline = nullptr;
    try {
        pipeline = &device.pipeline(d->name ? d->name : "?", {d->spirv, d->spirv_bytes / 4},
                                    std::vector<uint32_t>(d->constants, d->constants + d->n_constants));
    } catch (const Error & e) {
        ggml_ext_set_error((what + ": " + e.what()).c_str());
        return GGML_STATUS_FAILED;
    }
    return record(*vk, what, [&](Recorder & r) {
        r.dispatch(*pipeline, args, d->push_constants, d->push_constants_bytes,
                   {d->groups[0], d->groups[1], d->groups[2]});
    });
}

ggml_status copy(ggml_backend_t backend, const ggml_ext_vulkan_range * dst,
                 const ggml_ext_vulkan_range * src) {
    Backend * vk = vulkan_backend(backend, "copy");
    Resolved to, from;
    if (!vk || !dst || !src || !resolve(vk->vulkan(), *dst, "copy: destination", to) ||
        !resolve(vk->vulkan(), *src, "copy: source", from))
        return GGML_STATUS_FAILED;
    const VkDeviceSize bytes = to.end - to.begin;
    const char * problem =
        bytes != from.end - from.begin             ? "the ranges differ in size"
        : (to.begin | from.begin | bytes) % 4 != 0 ? "offsets and size must be 4-byte aligned"
        : to.buffer == from.buffer && to.begin < from.end && from.begin < to.end ? "the ranges overlap"
                                                                                 : nullptr;
    if (problem) {
        ggml_ext_set_error((std::string("copy: ") + problem).c_str());
        return GGML_STATUS_FAILED;
    }
    if (!in_plan(*vk, "copy")) return GGML_STATUS_FAILED;
    return record(*vk, "copy", [&](Recorder & r) {
        r.copy({to.buffer->handle(), to.begin, bytes, true},
               {from.buffer->handle(), from.begin, bytes, false});
    });
}

const ggml_ext_vulkan_v1 kService = {
    sizeof(ggml_ext_vulkan_v1), GGML_EXT_VULKAN_V1_VERSION, device_info, buffer_info, dispatch, copy};

}  // namespace

const ggml_ext_vulkan_v1 * ext_service() { return &kService; }

}  // namespace ggx::vulkan
