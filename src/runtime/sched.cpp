// The multi-backend scheduler (ggml_backend_sched_*): placement, splits, input copies, allocation
// through the graph allocator, and split-by-split execution with the eval callback.
//
// The caller's graph is never rewritten for good. Where a node reads a tensor that lives on another
// backend, the plan records a source rewrite (node, slot, copy); rewrites are applied only while
// the allocator plans the graph and while the node's split is being dispatched, and undone
// afterwards. Backends read graph metadata only during graph_compute (backend-impl.h).
#include <ggml-alloc.h>
#include <ggml-ext.h>
#include <ggml-graph.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/internal.h"
#include "core/log.h"
#include "interface/backend-impl.h"
#include "runtime/graph_alloc.h"
#include "runtime/plan.h"

namespace ggx::backend {
namespace {

constexpr int kNoBackend = -1;

// The tensor that owns t's storage.
const ggml_tensor * owner_of(const ggml_tensor * t) { return t->view_src ? t->view_src : t; }

// GGX_EXPLAIN=1 turns explain mode on for every scheduler, printing to stderr.
bool explain_from_environment() {
    const char * value = std::getenv("GGX_EXPLAIN");
    return value && std::strcmp(value, "1") == 0;
}

bool is_view_op(const ggml_tensor * t) { return core::is_layout_op(t->op); }

std::string describe(const ggml_tensor * t) {
    std::string text = "'";
    text.append(t->name).append("' (").append(ggml_op_desc(t)).append(")");
    return text;
}

// A node's source slot pointed at another tensor (an input copy, or the same view of it) while the
// rewrite is applied: while the allocator plans (copy 0) and while the node's split runs.
struct Rewrite {
    ggml_tensor * node;
    int slot;
    ggml_tensor * original;
    std::array<ggml_tensor *, GGML_SCHED_MAX_COPIES> replacement;  // per pipeline copy
};

// Applies rewrites (for pipeline copy `copy`) and undoes them when it goes out of scope.
class RewriteScope {
public:
    RewriteScope(std::span<const Rewrite> rewrites, int copy) : rewrites_(rewrites) {
        for (const Rewrite & r : rewrites_)
            r.node->src[r.slot] = r.replacement[copy];
    }
    ~RewriteScope() {
        for (const Rewrite & r : rewrites_)
            r.node->src[r.slot] = r.original;
    }
    RewriteScope(const RewriteScope &) = delete;
    RewriteScope & operator=(const RewriteScope &) = delete;

private:
    std::span<const Rewrite> rewrites_;
};

// A tensor of another backend copied into a split's backend before the split runs.
struct Input {
    ggml_tensor * source;  // a storage owner
    int backend;
    std::array<ggml_tensor *, GGML_SCHED_MAX_COPIES> copies;
};

struct Split {
    Split(int on, int first) : backend(on), begin(first) {}
    int backend;
    int begin, end = 0;                // nodes [begin, end): of the caller's graph, then of the plan graph
    int compute_begin = 0;             // plan graph: the input copies come first, then the nodes computed
    std::vector<int> inputs;           // indices into inputs, refreshed before the split runs
    std::vector<ggml_tensor *> views;  // views of those copies that the split's nodes read
    size_t first_rewrite = 0, n_rewrites = 0;  // the split's nodes' rewrites, a range of rewrites
    std::vector<ext::FusedGroup> fused;        // legal fusion matches among the computed nodes
    ExecutionPlan plan;                        // the computed nodes' native ranges and extension steps
};

// A hash of the metadata of g's nodes and their sources (not their storage): a graph changed after
// it was allocated must be planned again.
uint64_t metadata_hash(const ggml_cgraph * g) {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    const auto mix = [&h](const void * p, size_t n) {  // n: a multiple of 8 bytes (word at a time)
        for (size_t i = 0; i < n; i += sizeof(uint64_t)) {
            uint64_t word;
            std::memcpy(&word, static_cast<const char *>(p) + i, sizeof word);
            h = (h ^ word) * 0xff51afd7ed558ccdull;
            h ^= h >> 32;
        }
    };
    for (int i = 0; i < ggml_graph_n_nodes(g); ++i) {
        const ggml_tensor * t = ggml_graph_node(g, i);
        const uint64_t scalars[] = {reinterpret_cast<uintptr_t>(t),
                                    static_cast<uint64_t>(t->type),
                                    static_cast<uint64_t>(t->op),
                                    static_cast<uint64_t>(t->flags),
                                    reinterpret_cast<uintptr_t>(t->view_src),
                                    t->view_offs};
        mix(scalars, sizeof scalars);
        mix(t->ne, sizeof t->ne);
        mix(t->nb, sizeof t->nb);
        mix(t->op_params, sizeof t->op_params);
        mix(t->src, sizeof t->src);
    }
    return h;
}

}  // namespace
}  // namespace ggx::backend

struct ggml_backend_sched {
    using Rewrite = ggx::backend::Rewrite;
    using Input = ggx::backend::Input;
    using Split = ggx::backend::Split;

    std::vector<ggml_backend_t> backends;
    std::vector<ggml_backend_buffer_type_t> bufts;
    std::unique_ptr<ggx::backend::GraphAllocator> galloc;
    size_t graph_size = 0;
    int n_copies = 1;
    int cur_copy = 0;
    bool op_offload = false;
    std::vector<std::array<ggml_backend_event_t, GGML_SCHED_MAX_COPIES>> events;  // per backend
    ggml_backend_sched_eval_callback eval_callback = nullptr;
    void * eval_user_data = nullptr;

    std::unordered_map<const ggml_tensor *, int> pins;  // set_tensor_backend

    // The plan of the last scheduled graph.
    std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx{nullptr, &ggml_free};
    ggml_cgraph * source = nullptr;  // the caller's graph
    uint64_t source_hash = 0;        // metadata_hash(source) when it was planned
    ggml_cgraph * graph = nullptr;   // the plan graph: the caller's nodes plus copies and re-views
    std::unordered_map<const ggml_tensor *, int> placement;  // tensor -> backend index
    std::vector<Input> inputs;
    std::vector<Rewrite> rewrites;
    std::vector<Split> splits;
    std::vector<int> node_ids, leaf_ids;   // buffer (= backend) index per plan node / leaf
    std::vector<size_t> workspace_needed;  // per backend: the largest extension workspace request
    // Shared with the recordings of plans that ran in them (they keep what they recorded alive).
    std::vector<std::shared_ptr<ggml_backend_buffer>> workspaces;
    bool allocated = false;
    bool explain = ggx::backend::explain_from_environment(), explain_to_stderr = explain;
    std::string explanation;                   // explain mode: the last scheduled graph's
    const ggml_tensor * uncopyable = nullptr;  // a non-contiguous owner split() would have to copy

    ~ggml_backend_sched() {
        for (auto & per_copy : events)
            for (ggml_backend_event_t e : per_copy)
                ggml_backend_event_free(e);
    }

    int backend_index(ggml_backend_t backend) const {
        const auto it = std::find(backends.begin(), backends.end(), backend);
        return it == backends.end() ? ggx::backend::kNoBackend : static_cast<int>(it - backends.begin());
    }

    // Storage that exists outside the scheduler (weights, caller-allocated tensors).
    bool has_foreign_storage(const ggml_tensor * t) const {
        const ggml_tensor * o = ggx::backend::owner_of(t);
        return o->buffer != nullptr && !galloc->owns(o->buffer);
    }

    // The backend whose buffer type holds foreign storage: its own first, then one that can read it.
    int backend_of_buffer(ggml_backend_buffer_t buffer) const {
        for (size_t i = 0; i < backends.size(); ++i)
            if (bufts[i] == buffer->buft) return static_cast<int>(i);
        for (size_t i = 0; i < backends.size(); ++i)
            if (ggml_backend_supports_buft(backends[i], buffer->buft)) return static_cast<int>(i);
        return ggx::backend::kNoBackend;
    }

    int placement_of(const ggml_tensor * t) const {
        const auto it = placement.find(t);
        return it == placement.end() ? ggx::backend::kNoBackend : it->second;
    }

    bool fail(const std::string & message) {
        ggx::backend::set_last_error("ggml_backend_sched: " + message);
        return false;
    }

    int cpu_index() const { return static_cast<int>(backends.size()) - 1; }
    // Spec: automatic extension fusion applies with one pipeline copy and no eval callback.
    bool fusion_enabled() const { return n_copies == 1 && !eval_callback; }

    bool schedule(ggml_cgraph * g);
    bool place(ggml_cgraph * g);
    int place_node(const ggml_tensor * node) const;
    bool split(ggml_cgraph * g);
    std::array<ggml_tensor *, GGML_SCHED_MAX_COPIES> input_copy(ggml_tensor * src, Split & split);
    bool build_plan_graph(ggml_cgraph * g);
    bool build_execution_plans();
    std::vector<ggx::backend::KeepAlive> fused_inputs_keep_alive() const;
    std::vector<const ggml_tensor *> fused_away_intermediates() const;
    std::vector<ggx::backend::InplaceSource> fused_inplace_sources(
        std::span<const ggx::backend::KeepAlive> keep) const;
    bool reserve_workspaces();
    size_t workspace_size(int b) const {
        return workspaces[b] ? ggml_backend_buffer_get_size(workspaces[b].get()) : 0;
    }
    bool plan_storage(ggx::backend::AllocationPlan & plan);
    bool allocate(bool measure_only);
    ggml_status copy_inputs(const Split & s);
    ggml_status run_split(Split & s);
    ggml_status compute(ggml_cgraph * g);
    void forget_plan();
};

namespace {

using ggx::backend::kNoBackend;
using ggx::backend::owner_of;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Placement.

// Where a node runs when nothing pins it (see ggml-backend.h, "Scheduler").
int ggml_backend_sched::place_node(const ggml_tensor * node) const {
    // A node that writes into another tensor's storage runs where that storage is.
    if (node->view_src) {
        const int owner = placement_of(node->view_src);
        if (owner != kNoBackend) return owner;
    }
    // Weights first: the backend holding a source's storage, when it supports the op.
    for (const ggml_tensor * src : node->src) {
        if (!src || !has_foreign_storage(src)) continue;
        const int b = backend_of_buffer(owner_of(src)->buffer);
        if (b == kNoBackend || !ggml_backend_supports_op(backends[b], node)) continue;
        if (op_offload) {
            for (int i = 0; i < b; ++i)
                if (ggml_backend_offload_op(backends[i], node) && ggml_backend_supports_op(backends[i], node))
                    return i;
        }
        return b;
    }
    for (size_t i = 0; i < backends.size(); ++i)
        if (ggml_backend_supports_op(backends[i], node)) return static_cast<int>(i);
    return kNoBackend;
}

bool ggml_backend_sched::place(ggml_cgraph * g) {
    placement.clear();
    const int cpu = cpu_index();
    const auto pinned = [&](const ggml_tensor * t) {
        const auto it = pins.find(t);
        return it == pins.end() ? kNoBackend : it->second;
    };
    for (int i = 0; i < ggml_graph_n_leafs(g); ++i) {
        const ggml_tensor * leaf = ggml_graph_leaf(g, i);
        int b = pinned(leaf);
        if (b == kNoBackend && has_foreign_storage(leaf)) b = backend_of_buffer(owner_of(leaf)->buffer);
        if (b == kNoBackend && (leaf->flags & GGML_TENSOR_FLAG_INPUT)) b = cpu;
        if (b != kNoBackend) placement[leaf] = b;
    }
    for (int i = 0; i < ggml_graph_n_nodes(g); ++i) {
        const ggml_tensor * node = ggml_graph_node(g, i);
        int b = pinned(node);
        if (b == kNoBackend && has_foreign_storage(node)) b = backend_of_buffer(owner_of(node)->buffer);
        if (b == kNoBackend) b = place_node(node);
        if (b == kNoBackend) return fail("no backend supports node " + ggx::backend::describe(node));
        if (!ggx::backend::is_view_op(node) && !ggml_backend_supports_op(backends[b], node)) {
            return fail("node " + ggx::backend::describe(node) + " must run on " + backends[b]->name() +
                        " (pinned there or writing into storage there), which does not support it");
        }
        placement[node] = b;
        // Storage it writes into that has no place yet (a leaf the scheduler allocates) goes with it.
        if (node->view_src && placement_of(node->view_src) == kNoBackend) placement[node->view_src] = b;
    }
    // Leafs without storage or pin live where their first consumer runs.
    for (int i = 0; i < ggml_graph_n_nodes(g); ++i) {
        const ggml_tensor * node = ggml_graph_node(g, i);
        for (const ggml_tensor * src : node->src)
            if (src && placement_of(src) == kNoBackend) placement[src] = placement_of(node);
    }
    return true;
}

// ---------------------------------------------------------------------------------------------
// Splits and input copies.

// What a node of split reads in place of src: src itself when the split's backend can read its
// storage, else the input copy of src's owner there (or the same view of it), per pipeline copy.
std::array<ggml_tensor *, GGML_SCHED_MAX_COPIES> ggml_backend_sched::input_copy(ggml_tensor * src,
                                                                                Split & split) {
    const int backend = split.backend;
    std::vector<int> & split_inputs = split.inputs;
    std::array<ggml_tensor *, GGML_SCHED_MAX_COPIES> read{};
    const ggml_tensor * owner = owner_of(src);
    const ggml_backend_buffer_type_t home =
        has_foreign_storage(owner) ? owner->buffer->buft : bufts[placement_of(owner)];
    if (home == bufts[backend] || ggml_backend_supports_buft(backends[backend], home)) return read;
    if (!ggml_is_contiguous(owner)) {  // reported by split()
        uncopyable = owner;
        return read;
    }
    // One copy per split that reads it: the copy is a node of the plan graph (a DUP of the owner at
    // the split's start), so the owner stays alive until then and the copy dies after its last use.
    auto found = std::find_if(split_inputs.begin(), split_inputs.end(),
                              [&](int i) { return inputs[i].source == owner; });
    if (found == split_inputs.end()) {
        Input in{const_cast<ggml_tensor *>(owner), backend, {}};
        for (int c = 0; c < n_copies; ++c) {
            ggml_tensor * copy = ggml_dup(ctx.get(), in.source);
            ggml_format_name(copy, "%s#%s#%d", owner->name, backends[backend]->name(), c);
            // Pipelined copies are filled while the backend may still read the previous one: pinned.
            if (n_copies > 1) ggml_set_input(copy);
            placement[copy] = backend;
            in.copies[c] = copy;
        }
        split_inputs.push_back(static_cast<int>(inputs.size()));
        inputs.push_back(in);
        found = split_inputs.end() - 1;
    }
    const Input & in = inputs[*found];
    for (int c = 0; c < n_copies; ++c) {
        read[c] = in.copies[c];
        if (src == owner) continue;
        // The same view of the copy: a node of the plan graph after the copies, so the allocator sees
        // the layout the reader really reads.
        ggml_tensor * view = ggml_view_tensor(ctx.get(), in.copies[c]);
        view->view_offs = src->view_offs;
        std::copy(std::begin(src->ne), std::end(src->ne), std::begin(view->ne));
        std::copy(std::begin(src->nb), std::end(src->nb), std::begin(view->nb));
        ggml_format_name(view, "%s#%s#%d", src->name, backends[backend]->name(), c);
        split.views.push_back(view);
        read[c] = view;
    }
    return read;
}

// Cuts g into splits (a split opens at each computing node whose backend differs from the current
// split's; nodes that compute nothing join the current split) and records their input copies.
bool ggml_backend_sched::split(ggml_cgraph * g) {
    uncopyable = nullptr;
    splits.clear();
    inputs.clear();
    rewrites.clear();
    bool split_computes = false;  // the current split has a computing node (not only views)
    for (int i = 0; i < ggml_graph_n_nodes(g); ++i) {
        ggml_tensor * node = ggml_graph_node(g, i);
        if (ggx::backend::is_view_op(node)) {
            if (splits.empty()) splits.emplace_back(kNoBackend, i);
            continue;
        }
        const int b = placement_of(node);
        if (splits.empty() || (split_computes && splits.back().backend != b)) splits.emplace_back(b, i);
        Split & s = splits.back();
        s.backend = b;  // a split of leading views takes its first computing node's backend
        split_computes = true;
        for (int slot = 0; slot < GGML_MAX_SRC; ++slot) {
            ggml_tensor * src = node->src[slot];
            if (!src) continue;
            const auto read = input_copy(src, s);
            if (!read[0]) continue;
            if (s.n_rewrites == 0) s.first_rewrite = rewrites.size();
            rewrites.push_back({node, slot, src, read});
            ++s.n_rewrites;
        }
    }
    if (!splits.empty() && splits.back().backend == kNoBackend) splits.back().backend = cpu_index();
    if (uncopyable) {
        return fail("tensor " + ggx::backend::describe(uncopyable) +
                    " is needed on another backend but its storage is not contiguous");
    }
    for (size_t i = 0; i < splits.size(); ++i)
        splits[i].end = i + 1 < splits.size() ? splits[i + 1].begin : ggml_graph_n_nodes(g);
    return true;
}

// ---------------------------------------------------------------------------------------------
// The plan graph (the caller's leafs and the input copies as leafs, the caller's nodes reading the
// copies' owners) and its allocation.

bool ggml_backend_sched::build_plan_graph(ggml_cgraph * g) {
    const int n_leafs = ggml_graph_n_leafs(g), n_nodes = ggml_graph_n_nodes(g);
    size_t n_copy_nodes = inputs.size() * n_copies;
    for (const Split & s : splits)
        n_copy_nodes += s.views.size();
    graph = ggml_new_graph_custom(ctx.get(), std::max<size_t>(n_nodes + n_copy_nodes, n_leafs), false);
    node_ids.clear();
    leaf_ids.clear();
    for (int i = 0; i < n_leafs; ++i) {
        ggml_tensor * leaf = ggml_graph_leaf(g, i);
        leaf_ids.push_back(std::max(0, placement_of(leaf)));
        if (!ggml_graph_add_leaf(graph, leaf)) return fail("could not build the plan graph");
    }
    ggx::backend::RewriteScope scope(rewrites, 0);
    const auto add_node = [&](ggml_tensor * node, int backend) {
        node_ids.push_back(backend);
        return ggx::core::graph_add_node(graph, node);
    };
    for (Split & s : splits) {
        const int first = s.begin;
        s.begin = ggml_graph_n_nodes(graph);
        for (int index : s.inputs)
            for (int c = 0; c < n_copies; ++c)
                if (!add_node(inputs[index].copies[c], s.backend))
                    return fail("could not build the plan graph");
        for (ggml_tensor * view : s.views)
            if (!add_node(view, s.backend)) return fail("could not build the plan graph");
        s.compute_begin = ggml_graph_n_nodes(graph);
        for (int i = first; i < s.end; ++i)
            if (!add_node(ggml_graph_node(g, i), placement_of(ggml_graph_node(g, i))))
                return fail("could not build the plan graph");
        s.end = ggml_graph_n_nodes(graph);
    }
    return true;
}

// Selects every computed node's implementation and prepares the extension steps, with the nodes
// reading what they will read when they run (copies, or views of copies: the same metadata).
bool ggml_backend_sched::build_execution_plans() {
    ggx::backend::RewriteScope scope(rewrites, 0);
    explanation.clear();
    std::optional<ggx::ext::ExplainScope> explaining;
    if (explain) explaining.emplace(&explanation);
    std::fill(workspace_needed.begin(), workspace_needed.end(), 0);
    for (Split & s : splits) {
        if (explain) {
            explanation += "split " + std::to_string(&s - splits.data()) + " on " +
                           backends[s.backend]->name() + ": nodes [" + std::to_string(s.compute_begin) +
                           ", " + std::to_string(s.end) + ")\n";
        }
        s.fused.clear();
        if (fusion_enabled())
            s.fused = ggx::ext::match_fusions(backends[s.backend]->device(), graph, s.compute_begin, s.end);
        if (!s.plan.build(backends[s.backend], graph, s.compute_begin, s.end, s.fused))
            return fail(ggml_backend_get_last_error());
        workspace_needed[s.backend] = std::max(workspace_needed[s.backend], s.plan.workspace_bytes());
    }
    return true;
}

// Grows each backend's extension workspace to what its splits need (the largest request).
bool ggml_backend_sched::reserve_workspaces() {
    for (size_t b = 0; b < backends.size(); ++b) {
        if (workspace_needed[b] <= workspace_size(static_cast<int>(b))) continue;
        ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(bufts[b], workspace_needed[b]);
        if (!buffer) {
            return fail("cannot allocate " + std::to_string(workspace_needed[b]) +
                        " bytes of extension workspace on " + backends[b]->name() + ": " +
                        ggml_backend_get_last_error());
        }
        workspaces[b] = std::shared_ptr<ggml_backend_buffer>(buffer, &ggml_backend_buffer_free);
    }
    return true;
}

// Spec: "External inputs stay allocated through the final node" of every fused range; so do the
// retained intermediates (below), which the rule's kernel may use while it computes the output.
std::vector<ggx::backend::KeepAlive> ggml_backend_sched::fused_inputs_keep_alive() const {
    std::vector<ggx::backend::KeepAlive> keep;
    for (const Split & s : splits) {
        for (const ggx::ext::FusedGroup & group : s.fused) {
            ggml_tensor * const * nodes = ggml_graph_nodes(graph) + group.first;
            const int last = group.first + group.n - 1;
            const auto inside = [&](const ggml_tensor * t) {
                return std::find(nodes, nodes + group.n, t) != nodes + group.n;
            };
            const bool retained = !(group.rule->desc.flags & GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE);
            for (int k = 0; k < group.n; ++k) {
                for (const ggml_tensor * src : nodes[k]->src)
                    if (src && !inside(src)) keep.push_back({src, last});
                if (retained && k + 1 < group.n) keep.push_back({nodes[k], last});
            }
        }
    }
    return keep;
}

// Spec: "Intermediate allocations are retained", unless the rule declares that its kernels never
// touch them (GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE): then the storage owners among the range's
// intermediates, which nothing else reads either (legality guarantees it), take no memory; the owner
// a writeback output writes into keeps its storage.
std::vector<const ggml_tensor *> ggml_backend_sched::fused_away_intermediates() const {
    std::vector<const ggml_tensor *> away;
    for (const Split & s : splits) {
        for (const ggx::ext::FusedGroup & group : s.fused) {
            if (!(group.rule->desc.flags & GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE)) continue;
            ggml_tensor * const * nodes = ggml_graph_nodes(graph) + group.first;
            const ggml_tensor * out = nodes[group.n - 1];
            for (int k = 0; k + 1 < group.n; ++k)
                if (!nodes[k]->view_src && nodes[k] != out->view_src) away.push_back(nodes[k]);
        }
    }
    return away;
}

// For the ranges of GGML_EXT_FUSION_OUTPUT_IN_PLACE rules: the output may take the block of the external
// input heading its src[0] chain of in-place operators, whose remaining uses there are its keep-alive
// entries and the output's own reads.
std::vector<ggx::backend::InplaceSource> ggml_backend_sched::fused_inplace_sources(
    std::span<const ggx::backend::KeepAlive> keep) const {
    std::vector<ggx::backend::InplaceSource> sources;
    for (const Split & s : splits) {
        for (const ggx::ext::FusedGroup & group : s.fused) {
            if (!(group.rule->desc.flags & GGML_EXT_FUSION_OUTPUT_IN_PLACE)) continue;
            ggml_tensor * const * nodes = ggml_graph_nodes(graph) + group.first;
            const ggml_tensor * out = nodes[group.n - 1];
            const ggml_tensor * head = out;
            for (int k = group.n - 1; k >= 0 && head == nodes[k] && ggml_op_can_inplace(head); --k)
                head = head->src[0];
            if (!head || std::find(nodes, nodes + group.n, head) != nodes + group.n) continue;
            const int last = group.first + group.n - 1;
            int remaining = static_cast<int>(std::count(std::begin(out->src), std::end(out->src), head));
            for (const ggx::backend::KeepAlive & k : keep)
                remaining += k.tensor == head && k.until == last;
            sources.push_back({out, head, remaining});
        }
    }
    return sources;
}

// Plans the plan graph's storage (with the rewrites applied); touches no buffer and no tensor.
bool ggml_backend_sched::plan_storage(ggx::backend::AllocationPlan & plan) {
    ggx::backend::RewriteScope scope(rewrites, 0);
    const std::vector<ggx::backend::KeepAlive> keep = fused_inputs_keep_alive();
    const std::vector<const ggml_tensor *> unseen = fused_away_intermediates();
    const std::vector<ggx::backend::InplaceSource> inplace = fused_inplace_sources(keep);
    return galloc->plan(graph, node_ids, leaf_ids, plan, {keep, unseen, inplace}) ||
           fail(ggml_backend_get_last_error());
}

// Plans the plan graph's storage and, unless only measuring, places it.
bool ggml_backend_sched::allocate(bool measure_only) {
    ggx::backend::AllocationPlan plan;
    if (!plan_storage(plan)) return false;
    if (!reserve_workspaces()) return false;
    if (measure_only) {
        if (!galloc->reserve(plan.buffer_sizes, plan.buffer_used)) return fail(ggml_backend_get_last_error());
        return true;
    }
    if (!galloc->apply(plan)) return fail(ggml_backend_get_last_error());
    for (const ggml_tensor * t : fused_away_intermediates()) {
        auto * away = const_cast<ggml_tensor *>(t);
        if (!galloc->owns(away->buffer)) continue;
        away->data = nullptr;  // no stale storage from an earlier plan
        away->buffer = nullptr;
    }
    return true;
}

// Places, splits and allocates g (the next graph_compute runs it).
bool ggml_backend_sched::schedule(ggml_cgraph * g) {
    forget_plan();
    const size_t bytes = ggml_graph_overhead_custom(2 * graph_size + 16, false) +
                         ggml_tensor_overhead() * (2 * n_copies + 1) * (ggml_graph_n_nodes(g) + 8) +
                         ggml_tensor_overhead() * ggml_graph_n_leafs(g) * n_copies;
    ctx.reset(ggml_init({bytes, nullptr, true}));
    if (!ctx) return fail("out of memory for the plan");
    ggml_set_abort_on_error(ctx.get(), false);  // a plan failure is a status, even in an aborting process
    if (fusion_enabled()) {
        // Spec: optimize callbacks run before matching and allocation (they reorder g only through
        // ggml_ext_graph_delay, which keeps every dependency).
        for (size_t b = 0; b < backends.size(); ++b)
            if (std::find(backends.begin(), backends.begin() + b, backends[b]) == backends.begin() + b)
                ggx::ext::optimize(backends[b]->device(), g);
    }
    if (!place(g) || !split(g) || !build_plan_graph(g) || !build_execution_plans()) return false;
    if (explain_to_stderr) ggx::core::log(GGML_LOG_LEVEL_INFO, "ggx explain:\n%s", explanation.c_str());
    source = g;
    source_hash = ggx::backend::metadata_hash(g);
    return true;
}

void ggml_backend_sched::forget_plan() {
    source = nullptr;
    graph = nullptr;
    placement.clear();
    inputs.clear();
    rewrites.clear();
    splits.clear();
    allocated = false;
    ctx.reset();
}

// ---------------------------------------------------------------------------------------------
// Execution.

ggml_status ggml_backend_sched::copy_inputs(const Split & s) {
    ggml_backend_t backend = backends[s.backend];
    ggml_backend_event_t done = events.empty() ? nullptr : events[s.backend][cur_copy];
    // The previous run that used this pipeline copy must be finished with it.
    if (done)
        ggml_backend_event_synchronize(done);
    else
        ggml_backend_synchronize(backend);
    for (int index : s.inputs) {
        const Input & in = inputs[index];
        int from = placement_of(in.source);
        if (from == kNoBackend && in.source->buffer) from = backend_of_buffer(in.source->buffer);
        if (from == kNoBackend) {
            if (const ggml_status status = ggml_ext_backend_tensor_copy(in.source, in.copies[cur_copy]))
                return status;
            continue;
        }
        ggml_backend_synchronize(backends[from]);  // the source is complete
        if (const ggml_status status =
                ggml_ext_backend_tensor_copy_async(backends[from], backend, in.source, in.copies[cur_copy]))
            return status;
    }
    return GGML_STATUS_SUCCESS;
}

// Runs one split; with an eval callback, in pieces that end at each node the callback observes.
ggml_status ggml_backend_sched::run_split(Split & s) {
    ggml_backend_t backend = backends[s.backend];
    if (const ggml_status status = copy_inputs(s)) return status;
    const std::span<const Rewrite> own =
        std::span<const Rewrite>(rewrites).subspan(s.first_rewrite, s.n_rewrites);
    ggx::backend::RewriteScope scope(own, cur_copy);
    ggml_backend_buffer_t buffer = workspaces[s.backend].get();
    const ggx::Workspace workspace{buffer, buffer ? ggml_backend_buffer_get_base(buffer) : nullptr,
                                   buffer ? ggml_backend_buffer_get_size(buffer) : 0, workspaces[s.backend]};
    ggml_status status = GGML_STATUS_SUCCESS;
    if (!eval_callback) {
        // Spec: multiple pipeline copies retain ordinary dispatch.
        using Execution = ggx::backend::ExecutionPlan::Execution;
        status = s.plan.run(s.compute_begin, s.end, workspace,
                            n_copies == 1 ? Execution::kReplayable : Execution::kBatched);
    } else {
        int begin = s.compute_begin;
        for (int i = s.compute_begin; i < s.end && status == GGML_STATUS_SUCCESS; ++i) {
            ggml_tensor * node = ggml_graph_node(graph, i);
            const bool observed = eval_callback(node, true, eval_user_data);
            if (!observed && i + 1 < s.end) continue;
            status = s.plan.run(begin, i + 1, workspace, ggx::backend::ExecutionPlan::Execution::kFragments);
            ggml_backend_synchronize(backend);
            begin = i + 1;
            if (status == GGML_STATUS_SUCCESS && observed && !eval_callback(node, false, eval_user_data))
                return GGML_STATUS_ABORTED;
        }
    }
    if (!events.empty() && events[s.backend][cur_copy])
        ggml_backend_event_record(events[s.backend][cur_copy], backend);
    return status;
}

ggml_status ggml_backend_sched::compute(ggml_cgraph * g) {
    // A backend setting that changes what its kernels prepare (the CPU's thread count) plans again.
    const bool settings_changed =
        std::any_of(splits.begin(), splits.end(), [](const Split & s) { return s.plan.settings_changed(); });
    if (!allocated || g != source || settings_changed) {
        if (!schedule(g) || !allocate(false)) return GGML_STATUS_ALLOC_FAILED;
        allocated = true;
    } else if (ggx::backend::metadata_hash(g) != source_hash) {
        fail(
            "the graph changed (node metadata or edges) since it was allocated; call "
            "ggml_backend_sched_reset and allocate it again");
        return GGML_STATUS_FAILED;
    }
    for (Split & s : splits) {
        if (const ggml_status status = run_split(s)) return status;
    }
    cur_copy = (cur_copy + 1) % n_copies;
    return GGML_STATUS_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// C API.

extern "C" {

ggml_backend_sched_t ggml_backend_sched_new(ggml_backend_t * backends, ggml_backend_buffer_type_t * bufts,
                                            int n_backends, size_t graph_size, bool parallel,
                                            bool op_offload) {
    using ggx::backend::set_last_error;
    if (!backends || n_backends < 1) {
        set_last_error("ggml_backend_sched_new: at least one backend is needed");
        return nullptr;
    }
    for (int i = 0; i < n_backends; ++i) {
        if (!backends[i]) {
            set_last_error("ggml_backend_sched_new: backend " + std::to_string(i) + " is NULL");
            return nullptr;
        }
    }
    if (ggml_backend_dev_type(ggml_backend_get_device(backends[n_backends - 1])) !=
        GGML_BACKEND_DEVICE_TYPE_CPU) {
        set_last_error("ggml_backend_sched_new: the last backend must be a CPU backend (the fallback), not " +
                       std::string(ggml_backend_name(backends[n_backends - 1])));
        return nullptr;
    }
    auto sched = std::make_unique<ggml_backend_sched>();
    for (int i = 0; i < n_backends; ++i) {
        sched->backends.push_back(backends[i]);
        ggml_backend_buffer_type_t buft =
            bufts && bufts[i] ? bufts[i] : ggml_backend_get_default_buffer_type(backends[i]);
        if (!ggml_backend_supports_buft(backends[i], buft)) {
            set_last_error("ggml_backend_sched_new: backend " + std::string(ggml_backend_name(backends[i])) +
                           " cannot use buffer type " + ggml_backend_buft_name(buft));
            return nullptr;
        }
        sched->bufts.push_back(buft);
        sched->workspaces.emplace_back();
    }
    sched->workspace_needed.assign(n_backends, 0);
    sched->galloc = std::make_unique<ggx::backend::GraphAllocator>(sched->bufts);
    sched->graph_size = std::max<size_t>(graph_size, 1);
    sched->n_copies = parallel ? GGML_SCHED_MAX_COPIES : 1;
    sched->op_offload = op_offload;
    if (sched->n_copies > 1) {
        sched->events.resize(n_backends);
        for (int i = 0; i < n_backends; ++i)
            for (int c = 0; c < sched->n_copies; ++c)
                sched->events[i][c] = ggml_backend_event_new(ggml_backend_get_device(backends[i]));
    }
    return sched.release();
}

void ggml_backend_sched_free(ggml_backend_sched_t sched) {
    if (!sched) return;
    ggml_backend_sched_synchronize(sched);
    delete sched;
}

bool ggml_backend_sched_reserve(ggml_backend_sched_t sched, ggml_cgraph * measure_graph) {
    ggml_backend_sched_synchronize(sched);
    const bool ok = sched->schedule(measure_graph) && sched->allocate(true);
    sched->forget_plan();
    return ok;
}

void ggml_backend_sched_reserve_size(ggml_backend_sched_t sched, ggml_cgraph * measure_graph, size_t * sizes) {
    ggml_backend_sched_synchronize(sched);
    ggx::backend::AllocationPlan plan;
    const bool planned = sched->schedule(measure_graph) && sched->plan_storage(plan);
    for (size_t b = 0; b < sched->backends.size(); ++b)
        sizes[b] = planned ? plan.buffer_sizes[b] + sched->workspace_needed[b] : 0;
    sched->forget_plan();
}

void ggml_backend_sched_split_graph(ggml_backend_sched_t sched, ggml_cgraph * graph) {
    ggml_backend_sched_synchronize(sched);
    sched->schedule(graph);
}

ggml_backend_buffer_type_t ggml_backend_sched_get_buffer_type(ggml_backend_sched_t sched, ggml_backend_t backend) {
    const int i = sched->backend_index(backend);
    return i == ggx::backend::kNoBackend ? nullptr : sched->bufts[i];
}

int ggml_backend_sched_get_n_backends(ggml_backend_sched_t sched) {
    return static_cast<int>(sched->backends.size());
}

ggml_backend_t ggml_backend_sched_get_backend(ggml_backend_sched_t sched, int i) {
    return i >= 0 && i < ggml_backend_sched_get_n_backends(sched) ? sched->backends[i] : nullptr;
}

int ggml_backend_sched_get_n_splits(ggml_backend_sched_t sched) {
    return static_cast<int>(sched->splits.size());
}

int ggml_backend_sched_get_n_copies(ggml_backend_sched_t sched) { return sched->n_copies; }

size_t ggml_backend_sched_get_buffer_size(ggml_backend_sched_t sched, ggml_backend_t backend) {
    const int i = sched->backend_index(backend);
    return i == ggx::backend::kNoBackend ? 0 : sched->galloc->buffer_size(i) + sched->workspace_size(i);
}

void ggml_backend_sched_set_tensor_backend(ggml_backend_sched_t sched, ggml_tensor * node,
                                           ggml_backend_t backend) {
    if (!backend) {
        sched->pins.erase(node);
        return;
    }
    const int i = sched->backend_index(backend);
    if (i == ggx::backend::kNoBackend) {
        ggx::backend::set_last_error(
            "ggml_backend_sched_set_tensor_backend: " + std::string(ggml_backend_name(backend)) +
            " is not one of the scheduler's backends");
        return;
    }
    sched->pins[node] = i;
    sched->allocated = false;  // the next compute places again
}

ggml_backend_t ggml_backend_sched_get_tensor_backend(ggml_backend_sched_t sched, ggml_tensor * node) {
    int i = sched->placement_of(node);
    if (i == ggx::backend::kNoBackend) {
        const auto pin = sched->pins.find(node);
        if (pin != sched->pins.end()) i = pin->second;
    }
    return i == ggx::backend::kNoBackend ? nullptr : sched->backends[i];
}

bool ggml_backend_sched_alloc_graph(ggml_backend_sched_t sched, ggml_cgraph * graph) {
    ggml_backend_sched_synchronize(sched);
    sched->allocated = sched->schedule(graph) && sched->allocate(false);
    return sched->allocated;
}

ggml_status ggml_backend_sched_graph_compute_async(ggml_backend_sched_t sched, ggml_cgraph * graph) {
    return sched->compute(graph);
}

ggml_status ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, ggml_cgraph * graph) {
    const ggml_status status = sched->compute(graph);
    ggml_backend_sched_synchronize(sched);
    return status;
}

void ggml_backend_sched_synchronize(ggml_backend_sched_t sched) {
    for (ggml_backend_t backend : sched->backends)
        ggml_backend_synchronize(backend);
}

void ggml_backend_sched_reset(ggml_backend_sched_t sched) {
    ggml_backend_sched_synchronize(sched);
    sched->forget_plan();
    sched->pins.clear();
}

void ggml_ext_sched_set_explain(ggml_backend_sched_t sched, bool enabled) {
    sched->explain = enabled || sched->explain_to_stderr;
}

const char * ggml_ext_sched_explanation(ggml_backend_sched_t sched) { return sched->explanation.c_str(); }

int ggml_ext_sched_get_n_steps(ggml_backend_sched_t sched) {
    size_t n = 0;
    for (const ggml_backend_sched::Split & s : sched->splits)
        n += s.plan.steps().size();
    return static_cast<int>(n);
}

bool ggml_ext_sched_get_step(ggml_backend_sched_t sched, int i, ggml_ext_sched_step * step) {
    using Kind = ggx::Kernel::Kind;
    if (!step || step->struct_size < sizeof(ggml_ext_sched_step) || i < 0) return false;
    for (size_t k = 0; k < sched->splits.size(); ++k) {
        const ggml_backend_sched::Split & s = sched->splits[k];
        const auto steps = s.plan.steps();
        if (static_cast<size_t>(i) >= steps.size()) {
            i -= static_cast<int>(steps.size());
            continue;
        }
        const ggx::backend::ExecutionPlan::Step & p = steps[i];
        step->kind = !p.kernel                         ? GGML_EXT_STEP_NATIVE
                     : p.kernel->kind == Kind::kFusion ? GGML_EXT_STEP_FUSION
                                                       : GGML_EXT_STEP_KERNEL;
        step->name = p.kernel ? p.kernel->name : "native";
        step->backend = sched->backends[s.backend];
        step->split = static_cast<int>(k);
        step->nodes = ggml_graph_nodes(sched->graph) + p.begin;
        step->n_nodes = p.end - p.begin;
        step->workspace_bytes = p.workspace_bytes;
        return true;
    }
    return false;
}

void ggml_backend_sched_set_eval_callback(ggml_backend_sched_t sched,
                                          ggml_backend_sched_eval_callback callback, void * user_data) {
    sched->eval_callback = callback;
    sched->eval_user_data = user_data;
    sched->allocated = false;  // fusion depends on it: plan again
}

}  // extern "C"
