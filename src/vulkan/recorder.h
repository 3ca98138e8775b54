// Records a graph's dispatches into one command buffer: descriptor sets from a per-backend arena,
// push constants, and a pipeline barrier only where a dispatch touches memory that an earlier one
// since the last barrier wrote (or writes memory that one read).
#pragma once

#include <ggml.h>

#include <cstring>
#include <string>
#include <vector>

#include "vulkan/device.h"

namespace ggx::vulkan {

class Buffer;

// Descriptor pools that grow on demand and are reset together once their command buffer finished.
class DescriptorArena {
public:
    explicit DescriptorArena(Device & device) : device_(device) {}
    ~DescriptorArena();
    DescriptorArena(const DescriptorArena &) = delete;
    DescriptorArena & operator=(const DescriptorArena &) = delete;

    VkDescriptorSet allocate();
    void reset();

private:
    Device & device_;
    std::vector<VkDescriptorPool> pools_;
    size_t current_ = 0;  // the pool allocate() tries first
};

// One storage-buffer binding: a byte range of a VkBuffer, and whether the dispatch writes it.
struct Arg {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize offset = 0;  // aligned to minStorageBufferOffsetAlignment
    VkDeviceSize range = 0;
    bool written = false;
};

// Workgroup counts of a dispatch.
struct Groups {
    uint32_t x = 1, y = 1, z = 1;
};

class Recorder {
public:
    Recorder(Device & device, VkCommandBuffer commands, DescriptorArena & arena)
        : device_(device), commands_(commands), arena_(arena) {}

    Device & device() const { return device_; }
    // Continues in another command buffer (after the previous one was submitted).
    void set_commands(VkCommandBuffer commands) { commands_ = commands; }

    // The binding of tensor's bytes (a view's own extent), starting at the aligned offset at or below
    // its first byte. Throws Error when the tensor is not in this device's memory or its extent is
    // larger than one binding may be.
    Arg arg(const ggml_tensor * tensor, bool written) const;
    // Offset of tensor's first element from the start of its binding, in units of unit bytes (the
    // size of the shader's array element). Throws Error when it is not a whole number of units.
    uint32_t element_offset(const ggml_tensor * tensor, uint32_t unit) const;
    // The scratch memory of the graph being recorded (Kernel::workspace bytes, at offset 0).
    Arg workspace() const { return workspace_; }
    void set_workspace(const Arg & workspace) { workspace_ = workspace; }

    // Records shader (with specialisation constants) over args at bindings 0, 1, ... with push
    // constants push (at most kPushConstantBytes), after a barrier when a hazard requires one.
    void dispatch(const std::string & shader, const std::vector<Arg> & args, const void * push,
                  size_t push_bytes, Groups groups, const std::vector<uint32_t> & constants = {});
    void dispatch(const Pipeline & pipeline, const std::vector<Arg> & args, const void * push,
                  size_t push_bytes, Groups groups);
    template <class Push>
    void dispatch(const std::string & shader, const std::vector<Arg> & args, const Push & push, Groups groups,
                  const std::vector<uint32_t> & constants = {}) {
        static_assert(sizeof(Push) <= kPushConstantBytes && std::is_trivially_copyable_v<Push>);
        dispatch(shader, args, &push, sizeof push, groups, constants);
    }

    // Workgroup counts covering n invocations of workgroups of local_size, spread over x and y when
    // x alone would exceed the device's limit (the shader rebuilds the linear index; see common.glsl).
    Groups groups_for(uint64_t n, uint32_t local_size) const;

    // Records a copy of equal-size ranges (dst.written must be set), after a barrier when needed.
    void copy(const Arg & dst, const Arg & src);

    size_t n_dispatches() const { return n_dispatches_; }
    size_t n_barriers() const { return n_barriers_; }
    size_t n_commands() const { return n_dispatches_ + n_copies_; }

private:
    struct Range {
        VkBuffer buffer;
        VkDeviceSize begin, end;
    };
    static bool overlaps(const std::vector<Range> & ranges, const Arg & arg);
    void barrier_if_needed(const std::vector<Arg> & args);

    Device & device_;
    VkCommandBuffer commands_;
    DescriptorArena & arena_;
    Arg workspace_{};
    std::vector<Range> written_;  // since the last barrier
    std::vector<Range> read_;     // since the last barrier
    size_t n_dispatches_ = 0;
    size_t n_copies_ = 0;
    size_t n_barriers_ = 0;
};

}  // namespace ggx::vulkan
