#include "vulkan/recorder.h"

#include <algorithm>

#include "vulkan/buffer.h"

namespace ggx::vulkan {

namespace {

constexpr uint32_t kSetsPerPool = 512;

}  // namespace

DescriptorArena::~DescriptorArena() {
    for (VkDescriptorPool pool : pools_)
        vkDestroyDescriptorPool(device_.handle(), pool, nullptr);
}

VkDescriptorSet DescriptorArena::allocate() {
    const VkDescriptorSetLayout layout = device_.set_layout();
    for (; current_ < pools_.size(); ++current_) {
        VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        info.descriptorPool = pools_[current_];
        info.descriptorSetCount = 1;
        info.pSetLayouts = &layout;
        VkDescriptorSet set = VK_NULL_HANDLE;
        const VkResult result = vkAllocateDescriptorSets(device_.handle(), &info, &set);
        if (result == VK_SUCCESS) return set;
        if (result != VK_ERROR_OUT_OF_POOL_MEMORY && result != VK_ERROR_FRAGMENTED_POOL)
            check(result, "vkAllocateDescriptorSets");
    }
    const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kMaxBindings};
    VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    info.maxSets = kSetsPerPool;
    info.poolSizeCount = 1;
    info.pPoolSizes = &size;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    check(vkCreateDescriptorPool(device_.handle(), &info, nullptr, &pool), "vkCreateDescriptorPool");
    pools_.push_back(pool);
    return allocate();
}

void DescriptorArena::reset() {
    for (VkDescriptorPool pool : pools_)
        vkResetDescriptorPool(device_.handle(), pool, 0);
    current_ = 0;
}

Arg Recorder::arg(const ggml_tensor * tensor, bool written) const {
    const Buffer * buffer = buffer_of(tensor);
    if (!buffer || &buffer->vulkan() != &device_) {
        throw Error(std::string("tensor '") + tensor->name + "' is not in this Vulkan device's memory");
    }
    const VkDeviceSize alignment = device_.limits().storage_offset_alignment;
    const VkDeviceSize first = buffer->offset_of(tensor);
    const VkDeviceSize begin = first / alignment * alignment;
    const VkDeviceSize end = std::min<VkDeviceSize>((first + ggml_nbytes(tensor) + 3) / 4 * 4, buffer->size);
    if (end - begin > device_.limits().max_storage_range) {
        throw Error(std::string("tensor '") + tensor->name + "' spans more bytes than one binding may");
    }
    return {buffer->handle(), begin, std::max<VkDeviceSize>(end - begin, 4), written};
}

uint32_t Recorder::element_offset(const ggml_tensor * tensor, uint32_t unit) const {
    const VkDeviceSize within =
        buffer_of(tensor)->offset_of(tensor) % device_.limits().storage_offset_alignment;
    if (within % unit != 0) {
        throw Error(std::string("tensor '") + tensor->name + "' is not aligned to its " +
                    std::to_string(unit) + "-byte elements");
    }
    return static_cast<uint32_t>(within / unit);
}

Groups Recorder::groups_for(uint64_t n, uint32_t local_size) const {
    const uint64_t groups = std::max<uint64_t>(1, (n + local_size - 1) / local_size);
    const uint64_t max_x = device_.limits().max_workgroup_count[0];
    const uint64_t x = std::min(groups, max_x);
    const uint64_t y = (groups + x - 1) / x;
    if (y > device_.limits().max_workgroup_count[1]) throw Error("too many workgroups for one dispatch");
    return {static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1};
}

bool Recorder::overlaps(const std::vector<Range> & ranges, const Arg & arg) {
    return std::any_of(ranges.begin(), ranges.end(), [&](const Range & r) {
        return r.buffer == arg.buffer && r.begin < arg.offset + arg.range && arg.offset < r.end;
    });
}

void Recorder::barrier_if_needed(const std::vector<Arg> & args) {
    const bool hazard = std::any_of(args.begin(), args.end(), [&](const Arg & a) {
        return overlaps(written_, a) || (a.written && overlaps(read_, a));
    });
    if (hazard) {
        // Dispatches and copies both read and write: order every kind after every kind.
        constexpr VkPipelineStageFlags stages =
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
        VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
        barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
        vkCmdPipelineBarrier(commands_, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
        written_.clear();
        read_.clear();
        ++n_barriers_;
    }
    for (const Arg & a : args)
        (a.written ? written_ : read_).push_back({a.buffer, a.offset, a.offset + a.range});
}

void Recorder::dispatch(const std::string & shader, const std::vector<Arg> & args, const void * push,
                        size_t push_bytes, Groups groups, const std::vector<uint32_t> & constants) {
    dispatch(device_.pipeline(shader, constants), args, push, push_bytes, groups);
}

void Recorder::dispatch(const Pipeline & pipeline, const std::vector<Arg> & args, const void * push,
                        size_t push_bytes, Groups groups) {
    if (args.size() > kMaxBindings || push_bytes > kPushConstantBytes)
        throw Error("too many dispatch arguments");
    barrier_if_needed(args);

    const VkDescriptorSet set = arena_.allocate();
    VkDescriptorBufferInfo infos[kMaxBindings];
    VkWriteDescriptorSet writes[kMaxBindings];
    for (uint32_t i = 0; i < args.size(); ++i) {
        infos[i] = {args[i].buffer, args[i].offset, args[i].range};
        writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[i].dstSet = set;
        writes[i].dstBinding = i;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(device_.handle(), static_cast<uint32_t>(args.size()), writes, 0, nullptr);
    vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle);
    vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, device_.pipeline_layout(), 0, 1, &set,
                            0, nullptr);
    if (push_bytes) {
        vkCmdPushConstants(commands_, device_.pipeline_layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           static_cast<uint32_t>(push_bytes), push);
    }
    vkCmdDispatch(commands_, groups.x, groups.y, groups.z);
    ++n_dispatches_;
}

void Recorder::copy(const Arg & dst, const Arg & src) {
    barrier_if_needed({src, dst});
    const VkBufferCopy region{src.offset, dst.offset, src.range};
    vkCmdCopyBuffer(commands_, src.buffer, dst.buffer, 1, &region);
    ++n_copies_;
}

}  // namespace ggx::vulkan
