// The graph allocator behind ggml_gallocr_*: plans where a graph's tensors live in one buffer per buffer
// type (liveness from the graph's recorded use counts, best-fit reuse of freed blocks, in-place reuse),
// then grows its buffers and places the tensors. The scheduler may use it directly.
#pragma once

#include <ggml-alloc.h>

#include <span>
#include <string>
#include <vector>

namespace ggx::backend {

// Storage of one tensor that gets memory of its own: buffer_id and byte offset in that buffer.
struct TensorPlacement {
    ggml_tensor * tensor;
    int buffer_id;
    size_t offset;
};

// The outcome of GraphAllocator::plan. Applying it changes the listed tensors only.
struct AllocationPlan {
    std::vector<size_t> buffer_sizes;         // bytes each buffer must have
    std::vector<bool> buffer_used;            // a tensor (possibly of 0 bytes) is placed in the buffer
    std::vector<TensorPlacement> placements;  // tensors with storage of their own
    std::vector<ggml_tensor *> views;         // views to initialise, each after its view_src
    int n_inplace = 0;                        // placements that reuse their src[0]'s block
};

// A tensor that must stay live through node `until` of the graph although no node reads it there (a
// fused range's external inputs stay allocated through its last node).
struct KeepAlive {
    const ggml_tensor * tensor;
    int until;
};

// A node that may be placed in place over `source` instead of its src[0] (a fused range's output over
// the external input its eliminated in-place chain starts from), when source's uses still to come
// there number exactly `remaining` (its keep-alive entries and the node's own reads).
struct InplaceSource {
    const ggml_tensor * node;
    const ggml_tensor * source;
    int remaining;
};

// What a caller (the scheduler, for fused ranges) adds to a graph's own liveness.
struct PlanExtras {
    std::span<const KeepAlive> keep_alive;            // lifetimes extended through a later node
    std::span<const ggml_tensor * const> no_storage;  // owners nothing will compute or read: not placed
    std::span<const InplaceSource> inplace_sources;   // in-place candidates other than src[0]
};

class GraphAllocator {
public:
    // One buffer (allocated lazily) per buffer type; bufts must be non-empty and non-NULL.
    explicit GraphAllocator(std::vector<ggml_backend_buffer_type_t> bufts);
    ~GraphAllocator();
    GraphAllocator(const GraphAllocator &) = delete;
    GraphAllocator & operator=(const GraphAllocator &) = delete;

    int n_buffers() const { return static_cast<int>(bufts_.size()); }
    ggml_backend_buffer_type_t buffer_type(int id) const { return bufts_[id]; }
    // The buffer of id (NULL before it is first needed) and its size (0 without a buffer).
    ggml_backend_buffer_t buffer(int id) const { return buffers_[id]; }
    size_t buffer_size(int id) const;
    // True when buffer is one of this allocator's buffers (its tensors are placed again by plan).
    bool owns(const ggml_backend_buffer * buffer) const;

    // Plans graph's storage. node_ids / leaf_ids: the buffer id of each node / leaf of graph, or
    // empty for all 0. Touches no tensor. False (message in ggml_backend_get_last_error) on bad
    // ids or a graph whose order does not produce a view's source before the view. extras: each
    // keep-alive entry counts as one more use at node `until`; no_storage owners (and their views)
    // get no storage.
    bool plan(const ggml_cgraph * graph, std::span<const int> node_ids, std::span<const int> leaf_ids,
              AllocationPlan & out, const PlanExtras & extras = {}) const;
    // Grows each buffer to at least sizes[id] (and creates the used ones), all or nothing. False
    // (message set, buffers unchanged) when a buffer cannot be allocated.
    bool reserve(std::span<const size_t> sizes, const std::vector<bool> & used);
    // reserve for the plan, then places its tensors and initialises its views. False (message
    // set) when a buffer cannot be allocated (no tensor changed) or a buffer rejects a tensor (the
    // plan's tensors are left unallocated).
    bool apply(const AllocationPlan & plan);

private:
    std::vector<ggml_backend_buffer_type_t> bufts_;
    std::vector<ggml_backend_buffer_t> buffers_;
};

}  // namespace ggx::backend
