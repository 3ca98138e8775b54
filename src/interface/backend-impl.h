// The interface every backend implements: abstract registry, device, buffer type, buffer, backend
// and event classes behind the opaque handles of ggml-backend.h.
#pragma once

#include <ggml-backend.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "interface/kernel.h"

namespace ggx {

// A node of a native batch: its index in the plan's graph, its kernel (from its device's table)
// and what that kernel's prepare returned.
struct NativeNode {
    int index;
    ggml_tensor * node;
    const Kernel * kernel;
    void * state;
};

// The plan's workspace as a backend receives it: a region of a buffer of the backend's device.
struct Workspace {
    ggml_backend_buffer_t buffer = nullptr;
    void * data = nullptr;  // the region's base in the backend's representation
    size_t size = 0;
    // Shares ownership of buffer where its owner allows it (the scheduler's workspaces): a plan's
    // recording keeps the workspace it recorded alive. Empty for other workspaces.
    std::shared_ptr<ggml_backend_buffer> owner = {};
};

// Device replay (spec: replayable plans): the device work of one plan execution, recorded while it
// ran, resubmitted without the host calls that recorded it. It owns its device resources and stays
// valid after its backend is freed (they belong to the device).
class PlanRecording {
public:
    virtual ~PlanRecording() = default;
    // Submits the recorded work again and waits for it: the status of its completion.
    virtual ggml_status replay() = 0;
};

// The recordings of released REPLAY_REUSABLE plans, kept by their backend so that an equivalent plan
// of a later scheduler rebuild replays at once. An entry is found by its key, an exact description
// of what the plan computed (graph structure, tensor metadata and addresses, selected kernels,
// workspace requirement), built while the plan's graph was alive: no old graph object is read.
class RetiredRecordings {
public:
    static constexpr size_t kMaxEntries = 16;
    static constexpr size_t kMaxWorkspaceBytes = size_t{256} << 20;

    struct Entry {
        std::string key;
        std::unique_ptr<PlanRecording> recording;
        std::shared_ptr<ggml_backend_buffer> workspace;  // the one the recording uses (may be empty)
    };

    // Keeps entry, evicting the oldest ones beyond kMaxEntries entries or kMaxWorkspaceBytes of
    // workspace; an entry whose workspace alone is larger is dropped (its plan kept a plan-local
    // recording only). An entry of an equal key replaces the older one.
    void retire(Entry entry);
    // The entry of key, taken out of the cache; an empty entry when there is none.
    Entry take(const std::string & key);
    size_t size() const { return entries_.size(); }
    size_t workspace_bytes() const { return workspace_bytes_; }

private:
    static size_t bytes_of(const Entry & entry);
    std::vector<Entry> entries_;  // oldest first
    size_t workspace_bytes_ = 0;
};

}  // namespace ggx

namespace ggx::backend {

// Records the calling thread's last error (see ggml_backend_get_last_error).
void set_last_error(std::string message);
// Empties the calling thread's last error (cheap when it is empty already).
void clear_last_error();
// Shorthand: records message and returns status.
ggml_status fail(ggml_status status, std::string message);

// The registered device of this name (compared ignoring case), or nullptr. The registry of backends
// (src/registry, in libggml above the backends) installs the lookup when it loads, so that a backend
// (the CPU's virtual devices) can keep device names unique without linking it; until then no device
// is registered and the answer is nullptr.
ggml_backend_dev_t registered_device(const char * name);
void set_device_lookup(ggml_backend_dev_t (*lookup)(const char * name));

// "node 3 'name' (ADD f32 [4, 1, 1, 1])", for error messages.
std::string describe_node(int index, const ggml_tensor * node);
// Whether a node runs a kernel (false for layout-only ops and empty tensors).
bool needs_compute(const ggml_tensor * node);

}  // namespace ggx::backend

struct ggml_backend_buffer_type {
    virtual ~ggml_backend_buffer_type() = default;
    virtual const char * name() const = 0;
    // A new buffer, or nullptr after set_last_error.
    virtual ggml_backend_buffer_t alloc_buffer(size_t size) = 0;
    virtual size_t alignment() const = 0;
    virtual size_t max_size() const { return SIZE_MAX; }
    virtual size_t alloc_size(const ggml_tensor * tensor) const { return ggml_nbytes(tensor); }
    virtual bool is_host() const = 0;
    virtual ggml_backend_dev_t device() const = 0;
};

struct ggml_backend_buffer {
    ggml_backend_buffer(ggml_backend_buffer_type_t type, size_t bytes) : buft(type), size(bytes) {}
    virtual ~ggml_backend_buffer() = default;
    ggml_backend_buffer(const ggml_backend_buffer &) = delete;
    ggml_backend_buffer & operator=(const ggml_backend_buffer &) = delete;

    virtual void * base() = 0;
    virtual ggml_status init_tensor(ggml_tensor *) { return GGML_STATUS_SUCCESS; }
    // Ranges are validated by the caller: within the tensor and the buffer.
    virtual void set_tensor(ggml_tensor * tensor, const void * data, size_t offset, size_t bytes) = 0;
    virtual void get_tensor(const ggml_tensor * tensor, void * data, size_t offset, size_t bytes) = 0;
    virtual void memset_tensor(ggml_tensor * tensor, uint8_t value, size_t offset, size_t bytes) = 0;
    // Copy src (any buffer) into dst (in this buffer) directly; false when not possible this way.
    virtual bool copy_tensor(const ggml_tensor *, ggml_tensor *) { return false; }
    virtual void clear(uint8_t value) = 0;

    ggml_backend_buffer_type_t const buft;
    const size_t size;
    ggml_backend_buffer_usage usage = GGML_BACKEND_BUFFER_USAGE_ANY;
};

struct ggml_backend_event {
    virtual ~ggml_backend_event() = default;
    virtual void record(ggml_backend_t backend) = 0;
    virtual void synchronize() = 0;
    virtual void wait(ggml_backend_t backend) = 0;
};

struct ggml_backend {
    virtual ~ggml_backend() = default;
    virtual const char * name() const = 0;
    // Identifies the backend's implementation (one per backend class; see ggml_backend_guid).
    virtual ggml_guid_t guid() const;
    virtual ggml_backend_dev_t device() const = 0;
    // Asynchronous transfers default to synchronous ones.
    virtual void set_tensor_async(ggml_tensor * tensor, const void * data, size_t offset, size_t bytes);
    virtual void get_tensor_async(const ggml_tensor * tensor, void * data, size_t offset, size_t bytes);
    virtual bool copy_tensor_async(ggml_backend_t, const ggml_tensor *, ggml_tensor *) { return false; }
    virtual void synchronize() {}
    // Runs nodes, consecutive native nodes of a plan, in order as one batch: each with its kernel
    // (kNative, of this backend's device) and the plan's workspace. Support, allocation and
    // reachable memory were checked when the plan was built: nothing is checked here. FAILED (error
    // set, naming the node by its index) when a kernel fails, ABORTED when the abort callback asked.
    virtual ggml_status compute_native(std::span<const ggx::NativeNode> nodes,
                                       const ggx::Workspace & workspace) = 0;
    // Whether the kernels may read and write memory of buft, or memory of no buffer when buft is NULL.
    virtual bool can_access(ggml_backend_buffer_type_t buft) const = 0;
    // Changes when a setting changes what the device's kernels prepare (the CPU's thread count):
    // plans prepared under another value are stale.
    virtual uint64_t config_epoch() const { return 0; }
    // Bracket one execution of a plan (its native ranges and extension steps, in order): a backend
    // may queue the native ranges and the extensions' device work and complete it all in end_plan,
    // which returns the status of that completion. Plans do not nest.
    virtual void begin_plan() {}
    virtual ggml_status end_plan() { return GGML_STATUS_SUCCESS; }
    // After an extension step of a plan ran nodes (its kernel or fusion succeeded): a backend that
    // queues work counts them toward its submission thresholds as it counts native nodes (spec:
    // scheduled Vulkan plans share FLOP thresholds across native fragments and extension callbacks).
    virtual ggml_status end_extension_step(std::span<ggml_tensor * const>) { return GGML_STATUS_SUCCESS; }

    // Device replay (spec: replayable plans). Whether this backend can record a plan execution's
    // device work, its native ranges and the extension steps' queued work alike, and replay it.
    virtual bool can_record_plans() const { return false; }
    // Right after begin_plan: keep what this execution queues, as well as running it.
    virtual void record_plan() {}
    // After end_plan: the recording record_plan began (nullptr when the execution failed or queued
    // nothing).
    virtual std::unique_ptr<ggx::PlanRecording> take_plan_recording() { return nullptr; }

    // The workspace of direct graph computations' temporary plans, kept for the next one.
    std::unique_ptr<ggml_backend_buffer> direct_workspace;
    // Released once the backend's own destructor synchronized its queue.
    ggx::RetiredRecordings retired_recordings;
};

struct ggml_backend_device {
    virtual ~ggml_backend_device() = default;
    virtual const char * name() const = 0;
    virtual const char * description() const = 0;
    virtual void memory(size_t * free, size_t * total) const = 0;
    virtual enum ggml_backend_dev_type type() const = 0;
    virtual ggml_backend_dev_caps caps() const = 0;
    virtual ggml_backend_reg_t reg() const = 0;
    virtual ggml_backend_t init_backend(const char * params) = 0;
    virtual ggml_backend_buffer_type_t buffer_type() = 0;
    virtual ggml_backend_buffer_type_t host_buffer_type() { return nullptr; }
    // A buffer over host memory [ptr, ptr + size), for devices that can use it; nullptr (error set)
    // by default.
    virtual ggml_backend_buffer_t buffer_from_host_ptr(void * ptr, size_t size, size_t max_tensor_size);
    // The device's own kernel for op (its table's entry, when that entry supports op), or nullptr.
    virtual const ggx::Kernel * native_kernel(const ggml_tensor * op) const = 0;
    bool supports_op(const ggml_tensor * op) const { return native_kernel(op) != nullptr; }
    virtual bool supports_buft(ggml_backend_buffer_type_t buft) const = 0;
    virtual bool offload_op(const ggml_tensor *) const { return false; }
    virtual ggml_backend_event_t new_event() { return nullptr; }
};

struct ggml_backend_reg {
    virtual ~ggml_backend_reg() = default;
    virtual const char * name() const = 0;
    virtual size_t device_count() const = 0;
    virtual ggml_backend_dev_t device(size_t index) = 0;
    virtual void * proc_address(const char *) { return nullptr; }
};
