// The graph allocator: liveness from recorded use counts, best-fit blocks with merging, in-place reuse,
// and the ggml_gallocr_* C API over it.
#include "runtime/graph_alloc.h"

#include <ggml-graph.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "interface/backend-impl.h"

namespace ggx::backend {

namespace {

size_t align_up(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

// Offsets of one buffer. Freed blocks are kept by offset, merged with free neighbours, and reused
// best-fit (the smallest block that fits; the lowest offset among equals); a freed block that ends
// the used region shrinks it instead. peak() is the largest extent the region ever had.
class BlockPool {
public:
    size_t allocate(size_t bytes) {
        auto best = free_.end();
        for (auto it = free_.begin(); it != free_.end(); ++it) {
            if (it->second >= bytes && (best == free_.end() || it->second < best->second)) best = it;
        }
        if (best == free_.end()) {
            const size_t offset = top_;
            top_ += bytes;
            peak_ = std::max(peak_, top_);
            return offset;
        }
        const size_t offset = best->first, rest = best->second - bytes;
        free_.erase(best);
        if (rest > 0) free_.emplace(offset + bytes, rest);
        return offset;
    }

    void release(size_t offset, size_t bytes) {
        auto next = free_.lower_bound(offset);
        if (next != free_.end() && next->first == offset + bytes) {
            bytes += next->second;
            next = free_.erase(next);
        }
        if (next != free_.begin()) {
            const auto prev = std::prev(next);
            if (prev->first + prev->second == offset) {
                offset = prev->first;
                bytes += prev->second;
                free_.erase(prev);
            }
        }
        if (offset + bytes == top_) {
            top_ = offset;
        } else {
            free_.emplace(offset, bytes);
        }
    }

    size_t peak() const { return peak_; }

private:
    std::map<size_t, size_t> free_;  // offset -> bytes
    size_t top_ = 0;
    size_t peak_ = 0;
};

const ggml_tensor * storage_root(const ggml_tensor * t) {
    while (t->view_src)
        t = t->view_src;
    return t;
}

bool same_layout(const ggml_tensor * a, const ggml_tensor * b) {
    return a->type == b->type && ggml_are_same_shape(a, b) && ggml_are_same_stride(a, b);
}

std::string tensor_name(const ggml_tensor * t) {
    std::string quoted(1, '\'');
    quoted.append(t->name);
    quoted.push_back('\'');
    return quoted;
}

// One planning pass over a graph. Tensors are tracked in slots: storage owners (no view_src) and
// views, each view pointing at the slot of its storage root.
class Planner {
public:
    Planner(const GraphAllocator & galloc, const ggml_cgraph * graph, AllocationPlan & out,
            const PlanExtras & extras)
        : galloc_(galloc),
          graph_(graph),
          out_(out),
          pools_(galloc.n_buffers()),
          no_storage_(extras.no_storage.begin(), extras.no_storage.end()) {
        for (const InplaceSource & c : extras.inplace_sources)
            inplace_sources_.emplace(c.node, c);
    }

    bool run(std::span<const int> node_ids, std::span<const int> leaf_ids,
             std::span<const KeepAlive> keep_alive);

private:
    struct Slot {
        ggml_tensor * tensor = nullptr;
        int root = -1;       // slot of the storage owner (its own index for owners)
        int remaining = 0;   // consumers that have not run yet
        int live_views = 0;  // owners: views born and not dead
        int buffer_id = -1;  // owners
        size_t offset = 0;   // owners, once placed
        size_t bytes = 0;    // owners, once placed: the block (aligned)
        bool is_view = false;
        bool needs = false;     // owner: storage from this allocator; view: data to initialise
        bool pinned = false;    // never dies
        bool at_start = false;  // placed (owners) or born (views) before the first node
        bool placed = false;
        bool dead = false;    // owner whose block went back to the pool or to an in-place node
        bool listed = false;  // view already in out_.views
    };

    bool unplaced(const ggml_tensor * t) const {
        return (t->data == nullptr && t->buffer == nullptr) || galloc_.owns(t->buffer);
    }

    int slot_of(ggml_tensor * t);
    void set_buffer_id(int s, int id) {
        const int r = slots_[s].root;
        if (slots_[r].buffer_id < 0) slots_[r].buffer_id = id;
    }
    void mark_start(int s);
    void place(int s);
    bool birth(int s);
    void list_view(int s);
    bool try_inplace(int s);
    void consume(int s);
    void maybe_free(int r);
    bool fail(const std::string & message) {
        set_last_error("ggml_gallocr: " + message);
        return false;
    }

    const GraphAllocator & galloc_;
    const ggml_cgraph * graph_;
    AllocationPlan & out_;
    std::vector<BlockPool> pools_;
    std::vector<Slot> slots_;
    std::unordered_map<const ggml_tensor *, int> index_;
    std::unordered_map<const ggml_tensor *, int> node_pos_;  // position among the graph's nodes
    std::unordered_set<const ggml_tensor *> leafs_;
    std::vector<int> start_;  // slots placed / born before the first node, in order
    std::unordered_set<const ggml_tensor *> no_storage_;
    std::unordered_map<const ggml_tensor *, InplaceSource> inplace_sources_;
};

int Planner::slot_of(ggml_tensor * t) {
    if (const auto it = index_.find(t); it != index_.end()) return it->second;
    int root = -1;
    if (t->view_src) root = slot_of(const_cast<ggml_tensor *>(storage_root(t)));
    const int s = static_cast<int>(slots_.size());
    index_.emplace(t, s);
    Slot slot;
    slot.tensor = t;
    slot.remaining = ggml_graph_get_use_count(graph_, t);
    slot.pinned = slot.remaining == 0;  // a result nobody consumes stays until the end
    if (root >= 0) {
        slot.is_view = true;
        slot.root = root;
        slot.needs = unplaced(t) && (slots_[root].needs || slots_[root].tensor->buffer != nullptr);
    } else {
        slot.root = s;
        slot.needs = unplaced(t) && !no_storage_.count(t);
    }
    slots_.push_back(slot);
    return s;
}

// Pins s and has it exist from the start (a view's storage root with it).
void Planner::mark_start(int s) {
    if (slots_[s].is_view) mark_start(slots_[s].root);
    slots_[s].pinned = true;
    if (slots_[s].at_start) return;
    slots_[s].at_start = true;
    start_.push_back(s);
}

void Planner::place(int s) {
    Slot & slot = slots_[s];
    if (slot.buffer_id < 0) slot.buffer_id = 0;
    ggml_backend_buffer_type_t buft = galloc_.buffer_type(slot.buffer_id);
    slot.bytes =
        align_up(ggml_backend_buft_get_alloc_size(buft, slot.tensor), ggml_backend_buft_get_alignment(buft));
    // A tensor of no bytes sits at offset 0: a valid address inside the (possibly empty) buffer.
    slot.offset = slot.bytes == 0 ? 0 : pools_[slot.buffer_id].allocate(slot.bytes);
    slot.placed = true;
    out_.placements.push_back({slot.tensor, slot.buffer_id, slot.offset});
    out_.buffer_used[slot.buffer_id] = true;
}

// A view comes alive: it keeps its owner's storage until it dies itself.
bool Planner::birth(int s) {
    const int r = slots_[s].root;
    if (slots_[r].needs) {
        if (!slots_[r].placed || slots_[r].dead) {
            return fail("view " + tensor_name(slots_[s].tensor) + " of " + tensor_name(slots_[r].tensor) +
                        ": the viewed storage is not live at this point of the graph");
        }
        slots_[r].live_views++;
    }
    if (slots_[s].needs) list_view(s);
    return true;
}

void Planner::list_view(int s) {
    if (slots_[s].listed) return;
    ggml_tensor * src = slots_[s].tensor->view_src;
    if (src->view_src) {  // a view of a view: initialise the inner one first
        const int inner = slot_of(src);
        if (slots_[inner].needs) list_view(inner);
    }
    slots_[s].listed = true;
    out_.views.push_back(slots_[s].tensor);
}

// Places node s over the block of its src[0] (or of its InplaceSource) when the op allows it and
// that storage dies here.
bool Planner::try_inplace(int s) {
    ggml_tensor * node = slots_[s].tensor;
    if (!ggml_op_can_inplace(node)) return false;
    const auto hint = inplace_sources_.find(node);
    const ggml_tensor * src = hint != inplace_sources_.end() ? hint->second.source : node->src[0];
    const int expected_remaining = hint != inplace_sources_.end() ? hint->second.remaining : 1;
    const auto at = index_.find(src);
    if (at == index_.end()) return false;
    const int p = at->second;
    const int r = slots_[p].root;
    const Slot &in = slots_[p], &owner = slots_[r];
    if (!owner.needs || !owner.placed || owner.dead || owner.pinned || owner.bytes == 0) return false;
    if (owner.buffer_id != slots_[s].buffer_id || !same_layout(node, src)) return false;
    if (in.is_view && (!in.needs || in.pinned || src->view_offs != 0)) return false;
    for (int j = 0; j < GGML_MAX_SRC; ++j) {  // another source reading the same storage
        if (node->src[j] && node->src[j] != src && slots_[index_.at(node->src[j])].root == r) return false;
    }
    if (in.remaining != expected_remaining) return false;  // src is read again later
    if (in.is_view ? owner.remaining != 0 || owner.live_views != 1 : owner.live_views != 0) return false;
    ggml_backend_buffer_type_t buft = galloc_.buffer_type(owner.buffer_id);
    const size_t bytes =
        align_up(ggml_backend_buft_get_alloc_size(buft, node), ggml_backend_buft_get_alignment(buft));
    if (bytes == 0 || bytes > owner.bytes) return false;

    slots_[r].dead = true;  // the block now belongs to node
    Slot & slot = slots_[s];
    slot.placed = true;
    slot.offset = slots_[r].offset;
    slot.bytes = slots_[r].bytes;
    out_.placements.push_back({node, slot.buffer_id, slot.offset});
    out_.buffer_used[slot.buffer_id] = true;
    out_.n_inplace++;
    return true;
}

void Planner::consume(int s) {
    Slot & slot = slots_[s];
    if (slot.remaining == 0 || --slot.remaining > 0 || slot.pinned) return;
    if (!slot.is_view) return maybe_free(s);
    const int r = slot.root;
    if (!slots_[r].needs) return;
    slots_[r].live_views--;
    maybe_free(r);
}

void Planner::maybe_free(int r) {
    Slot & owner = slots_[r];
    if (!owner.needs || !owner.placed || owner.dead || owner.pinned || owner.remaining > 0 ||
        owner.live_views > 0)
        return;
    owner.dead = true;
    if (owner.bytes > 0) pools_[owner.buffer_id].release(owner.offset, owner.bytes);
}

bool Planner::run(std::span<const int> node_ids, std::span<const int> leaf_ids,
                  std::span<const KeepAlive> keep_alive) {
    const int n_nodes = ggml_graph_n_nodes(graph_), n_leafs = ggml_graph_n_leafs(graph_);
    const int n_bufs = galloc_.n_buffers();
    if (!node_ids.empty() && static_cast<int>(node_ids.size()) != n_nodes)
        return fail("expected " + std::to_string(n_nodes) + " node buffer ids, got " +
                    std::to_string(node_ids.size()));
    if (!leaf_ids.empty() && static_cast<int>(leaf_ids.size()) != n_leafs)
        return fail("expected " + std::to_string(n_leafs) + " leaf buffer ids, got " +
                    std::to_string(leaf_ids.size()));
    for (auto [ids, what] : {std::pair{node_ids, "node"}, std::pair{leaf_ids, "leaf"}}) {
        for (size_t i = 0; i < ids.size(); ++i) {
            if (ids[i] < 0 || ids[i] >= n_bufs)
                return fail(std::string(what) + " " + std::to_string(i) + " has buffer id " +
                            std::to_string(ids[i]) + ", but the allocator has " + std::to_string(n_bufs) +
                            " buffer(s)");
        }
    }
    const auto node_id = [&](int i) { return node_ids.empty() ? 0 : node_ids[i]; };
    const auto leaf_id = [&](int i) { return leaf_ids.empty() ? 0 : leaf_ids[i]; };
    out_ = AllocationPlan{};
    out_.buffer_sizes.assign(n_bufs, 0);
    out_.buffer_used.assign(n_bufs, false);

    ggml_tensor ** nodes = ggml_graph_nodes(graph_);
    ggml_tensor ** leafs = ggml_graph_leafs(graph_);
    for (int i = 0; i < n_nodes; ++i)
        node_pos_.emplace(nodes[i], i);
    for (int i = 0; i < n_leafs; ++i)
        leafs_.insert(leafs[i]);
    const auto in_graph = [&](const ggml_tensor * t) { return node_pos_.count(t) || leafs_.count(t); };

    // Who lives from the start: leafs, INPUT tensors, and tensors this graph reads but does not hold
    // (sources and storage roots outside a graph view). OUTPUT tensors never die.
    for (int i = 0; i < n_leafs; ++i) {
        const int s = slot_of(leafs[i]);
        set_buffer_id(s, leaf_id(i));
        mark_start(s);
    }
    for (int i = 0; i < n_nodes; ++i) {
        const int s = slot_of(nodes[i]);
        if (!slots_[s].is_view) set_buffer_id(s, node_id(i));
        if (nodes[i]->flags & GGML_TENSOR_FLAG_INPUT) mark_start(s);
        if (nodes[i]->flags & GGML_TENSOR_FLAG_OUTPUT) slots_[s].pinned = true;
    }
    for (int i = 0; i < n_nodes; ++i) {
        const auto external = [&](ggml_tensor * t) {
            const int s = slot_of(t);
            set_buffer_id(s, node_id(i));
            if (!in_graph(t)) mark_start(s);
            const int r = slots_[s].root;
            if (!in_graph(slots_[r].tensor)) mark_start(r);
        };
        if (nodes[i]->view_src) external(nodes[i]);
        for (ggml_tensor * src : nodes[i]->src) {
            if (!src) continue;
            if (const auto it = node_pos_.find(src); it != node_pos_.end() && it->second >= i) {
                return fail("node " + tensor_name(nodes[i]) + " reads " + tensor_name(src) +
                            ", which the graph computes only at node " + std::to_string(it->second));
            }
            external(src);
        }
    }

    std::unordered_multimap<int, int> kept_until;  // node -> slot whose extra use ends there
    for (const KeepAlive & k : keep_alive) {
        const auto it = index_.find(k.tensor);
        if (it == index_.end() || k.until < 0 || k.until >= n_nodes)
            return fail("keep-alive of " + tensor_name(k.tensor) + " through node " +
                        std::to_string(k.until) + ": not a tensor of the graph, or no such node");
        slots_[it->second].remaining++;
        kept_until.emplace(k.until, it->second);
    }

    for (const int s : start_) {
        if (slots_[s].is_view) {
            if (!birth(s)) return false;
        } else if (slots_[s].needs && !slots_[s].placed) {
            place(s);
        }
    }
    for (int i = 0; i < n_nodes; ++i) {
        const int s = index_.at(nodes[i]);
        if (slots_[s].is_view) {
            if (!slots_[s].at_start && !birth(s)) return false;
        } else if (slots_[s].needs && !slots_[s].placed && !try_inplace(s)) {
            place(s);
        }
        for (const ggml_tensor * src : nodes[i]->src) {
            if (src) consume(index_.at(src));
        }
        for (auto [it, end] = kept_until.equal_range(i); it != end; ++it)
            consume(it->second);
    }
    for (int id = 0; id < n_bufs; ++id)
        out_.buffer_sizes[id] = pools_[id].peak();
    return true;
}

}  // namespace

GraphAllocator::GraphAllocator(std::vector<ggml_backend_buffer_type_t> bufts)
    : bufts_(std::move(bufts)), buffers_(bufts_.size(), nullptr) {}

GraphAllocator::~GraphAllocator() {
    for (ggml_backend_buffer_t buffer : buffers_)
        ggml_backend_buffer_free(buffer);
}

size_t GraphAllocator::buffer_size(int id) const {
    return buffers_[id] ? ggml_backend_buffer_get_size(buffers_[id]) : 0;
}

bool GraphAllocator::owns(const ggml_backend_buffer * buffer) const {
    return buffer != nullptr && std::find(buffers_.begin(), buffers_.end(), buffer) != buffers_.end();
}

bool GraphAllocator::plan(const ggml_cgraph * graph, std::span<const int> node_ids,
                          std::span<const int> leaf_ids, AllocationPlan & out,
                          const PlanExtras & extras) const {
    return Planner(*this, graph, out, extras).run(node_ids, leaf_ids, extras.keep_alive);
}

bool GraphAllocator::reserve(std::span<const size_t> sizes, const std::vector<bool> & used) {
    std::vector<ggml_backend_buffer_t> fresh(buffers_.size(), nullptr);
    const auto drop_fresh = [&fresh] {
        for (ggml_backend_buffer_t buffer : fresh)
            ggml_backend_buffer_free(buffer);
    };
    for (size_t id = 0; id < buffers_.size(); ++id) {
        const size_t have = buffer_size(static_cast<int>(id)), need = sizes[id];
        const bool wanted = need > 0 || (id < used.size() && used[id]);
        if (need <= have && (buffers_[id] || !wanted)) continue;
        const size_t bytes = std::max(need, have);
        fresh[id] = ggml_backend_buft_alloc_buffer(bufts_[id], bytes);
        if (!fresh[id]) {
            const std::string why = ggml_backend_get_last_error();
            drop_fresh();
            set_last_error("ggml_gallocr: cannot allocate buffer " + std::to_string(id) + " (" +
                           ggml_backend_buft_name(bufts_[id]) + ") of " + std::to_string(bytes) +
                           " bytes: " + why);
            return false;
        }
        ggml_backend_buffer_set_usage(fresh[id], GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    }
    for (size_t id = 0; id < buffers_.size(); ++id) {
        if (!fresh[id]) continue;
        ggml_backend_buffer_free(buffers_[id]);
        buffers_[id] = fresh[id];
    }
    return true;
}

bool GraphAllocator::apply(const AllocationPlan & plan) {
    if (!reserve(plan.buffer_sizes, plan.buffer_used)) return false;
    const auto clear_all = [&plan] {
        for (const TensorPlacement & p : plan.placements) {
            p.tensor->data = nullptr;
            p.tensor->buffer = nullptr;
        }
        for (ggml_tensor * view : plan.views) {
            view->data = nullptr;
            view->buffer = nullptr;
        }
    };
    clear_all();  // tensors placed by an earlier plan of this allocator are placed again
    for (const TensorPlacement & p : plan.placements) {
        ggml_backend_buffer_t buffer = buffers_[p.buffer_id];
        char * base = static_cast<char *>(ggml_backend_buffer_get_base(buffer));
        if (ggml_backend_tensor_alloc(buffer, p.tensor, base + p.offset) != GGML_STATUS_SUCCESS) {
            clear_all();
            return false;
        }
    }
    for (ggml_tensor * view : plan.views) {
        if (ggml_backend_view_init(view) != GGML_STATUS_SUCCESS) {
            clear_all();
            return false;
        }
    }
    return true;
}

}  // namespace ggx::backend

using ggx::backend::AllocationPlan;
using ggx::backend::GraphAllocator;
using ggx::backend::set_last_error;

struct ggml_gallocr {
    explicit ggml_gallocr(std::vector<ggml_backend_buffer_type_t> bufts) : galloc(std::move(bufts)) {}
    GraphAllocator galloc;
    // Buffer ids of the last reserve_n (empty: everything in buffer 0).
    std::vector<int> node_ids, leaf_ids;
    bool have_ids = false;
};

namespace {

std::span<const int> ids_of(const int * ids, int count) {
    return ids ? std::span<const int>(ids, static_cast<size_t>(count)) : std::span<const int>();
}

bool check_graph(const ggml_cgraph * graph, const char * what) {
    if (graph == nullptr) {
        set_last_error(std::string(what) + ": graph is NULL");
        return false;
    }
    if (!ggml_graph_is_valid(graph)) {
        set_last_error(std::string(what) + ": graph is invalid (it was given a NULL tensor or overflowed)");
        return false;
    }
    return true;
}

}  // namespace

extern "C" {

ggml_gallocr_t ggml_gallocr_new(ggml_backend_buffer_type_t buft) { return ggml_gallocr_new_n(&buft, 1); }

ggml_gallocr_t ggml_gallocr_new_n(ggml_backend_buffer_type_t * bufts, int n_bufs) {
    if (bufts == nullptr || n_bufs <= 0) {
        set_last_error("ggml_gallocr_new_n: need at least one buffer type");
        return nullptr;
    }
    if (std::find(bufts, bufts + n_bufs, nullptr) != bufts + n_bufs) {
        set_last_error("ggml_gallocr_new_n: a buffer type is NULL");
        return nullptr;
    }
    return new ggml_gallocr(std::vector<ggml_backend_buffer_type_t>(bufts, bufts + n_bufs));
}

void ggml_gallocr_free(ggml_gallocr_t galloc) { delete galloc; }

bool ggml_gallocr_reserve(ggml_gallocr_t galloc, ggml_cgraph * graph) {
    return ggml_gallocr_reserve_n(galloc, graph, nullptr, nullptr);
}

bool ggml_gallocr_reserve_n(ggml_gallocr_t galloc, ggml_cgraph * graph, const int * node_buffer_ids,
                            const int * leaf_buffer_ids) {
    if (!check_graph(graph, "ggml_gallocr_reserve_n")) return false;
    const auto node_ids = ids_of(node_buffer_ids, ggml_graph_n_nodes(graph));
    const auto leaf_ids = ids_of(leaf_buffer_ids, ggml_graph_n_leafs(graph));
    AllocationPlan plan;
    if (!galloc->galloc.plan(graph, node_ids, leaf_ids, plan)) return false;
    if (!galloc->galloc.reserve(plan.buffer_sizes, plan.buffer_used)) return false;
    galloc->node_ids.assign(node_ids.begin(), node_ids.end());
    galloc->leaf_ids.assign(leaf_ids.begin(), leaf_ids.end());
    galloc->have_ids = node_buffer_ids || leaf_buffer_ids;
    return true;
}

void ggml_gallocr_measure_n(ggml_gallocr_t galloc, ggml_cgraph * graph, const int * node_buffer_ids,
                            const int * leaf_buffer_ids, size_t * sizes) {
    const int n_bufs = galloc->galloc.n_buffers();
    std::fill(sizes, sizes + n_bufs, size_t{0});
    if (!check_graph(graph, "ggml_gallocr_measure_n")) return;
    AllocationPlan plan;
    if (!galloc->galloc.plan(graph, ids_of(node_buffer_ids, ggml_graph_n_nodes(graph)),
                             ids_of(leaf_buffer_ids, ggml_graph_n_leafs(graph)), plan)) {
        return;
    }
    std::copy(plan.buffer_sizes.begin(), plan.buffer_sizes.end(), sizes);
}

void ggml_gallocr_reserve_n_size(ggml_gallocr_t galloc, ggml_cgraph * graph, const int * node_buffer_ids,
                                 const int * leaf_buffer_ids, size_t * sizes) {
    ggml_gallocr_measure_n(galloc, graph, node_buffer_ids, leaf_buffer_ids, sizes);
}

bool ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, ggml_cgraph * graph) {
    if (!check_graph(graph, "ggml_gallocr_alloc_graph")) return false;
    std::span<const int> node_ids, leaf_ids;
    if (galloc->have_ids) {
        const size_t n_nodes = ggml_graph_n_nodes(graph), n_leafs = ggml_graph_n_leafs(graph);
        const bool nodes_match = galloc->node_ids.empty() || galloc->node_ids.size() == n_nodes;
        const bool leafs_match = galloc->leaf_ids.empty() || galloc->leaf_ids.size() == n_leafs;
        if (!nodes_match || !leafs_match) {
            set_last_error(
                "ggml_gallocr_alloc_graph: the graph has " + std::to_string(n_nodes) + " nodes and " +
                std::to_string(n_leafs) + " leafs, but the buffer ids of the last reserve_n were for " +
                std::to_string(galloc->node_ids.size()) + " nodes and " +
                std::to_string(galloc->leaf_ids.size()) + " leafs; call ggml_gallocr_reserve_n again");
            return false;
        }
        node_ids = galloc->node_ids;
        leaf_ids = galloc->leaf_ids;
    }
    AllocationPlan plan;
    if (!galloc->galloc.plan(graph, node_ids, leaf_ids, plan)) return false;
    return galloc->galloc.apply(plan);
}

size_t ggml_gallocr_get_buffer_size(ggml_gallocr_t galloc, int buffer_id) {
    if (buffer_id < 0 || buffer_id >= galloc->galloc.n_buffers()) return 0;
    return galloc->galloc.buffer_size(buffer_id);
}

}  // extern "C"
