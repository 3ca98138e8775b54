// Graphs: topologically ordered nodes and leafs, a visited hash set with per-tensor use counts and
// (graphs made with grads) gradient slots, graph views, and the public graph access API of
// ggml-graph.h. The backward pass that fills the gradient slots is core/backward.cpp.
#include <ggml-graph.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/internal.h"

// A graph and everything it points to live in one arena block of its context. A view shares the
// nodes and the hash set (with its use counts) of the graph it views.
struct ggml_cgraph {
    ggml_context * ctx;
    int size;  // capacity of nodes and of leafs
    int n_nodes;
    int n_leafs;
    ggml_tensor ** nodes;
    ggml_tensor ** leafs;
    size_t hash_capacity;  // power of two, at least 4 * size
    const ggml_tensor ** hash_keys;
    int32_t * use_counts;  // parallel to hash_keys
    ggml_tensor ** grads;  // parallel to hash_keys; nullptr in a graph without gradients
    ggml_tensor ** grad_accs;  // likewise: the accumulators the gradients are summed into
    bool valid;
    bool is_view;
    bool has_uncomputed;  // ggml_build_forward_order or _select added nodes not (yet) computed
};

namespace {

using namespace ggx::core;

size_t hash_capacity_for(size_t size) {
    size_t capacity = 16;
    while (capacity < 4 * size)
        capacity *= 2;
    return capacity;
}

// Slot of tensor in the hash set: where it is, or the empty slot where it would go.
size_t hash_slot(const ggml_cgraph * graph, const ggml_tensor * tensor) {
    const size_t mask = graph->hash_capacity - 1;
    size_t slot = (reinterpret_cast<uintptr_t>(tensor) >> 4) * 0x9E3779B97F4A7C15ull & mask;
    while (graph->hash_keys[slot] && graph->hash_keys[slot] != tensor)
        slot = (slot + 1) & mask;
    return slot;
}

bool hash_contains(const ggml_cgraph * graph, const ggml_tensor * tensor) {
    return graph->hash_keys[hash_slot(graph, tensor)] == tensor;
}

void hash_insert(ggml_cgraph * graph, const ggml_tensor * tensor) {
    graph->hash_keys[hash_slot(graph, tensor)] = tensor;
}

void count_uses(ggml_cgraph * graph, const ggml_tensor * node) {
    for (const ggml_tensor * src : node->src) {
        if (src) graph->use_counts[hash_slot(graph, src)]++;
    }
}

void invalidate(ggml_cgraph * graph, const std::string & why) {
    graph->valid = false;
    report_error(graph->ctx, why);
}

bool append_node(ggml_cgraph * graph, ggml_tensor * tensor, bool compute) {
    if (graph->n_nodes >= graph->size) {
        invalidate(graph, "ggml_build_forward_expand: graph is full (" + std::to_string(graph->size) +
                              " nodes); use ggml_new_graph_custom with a larger size");
        return false;
    }
    // As in ggml the flag is only ever set: a tensor another graph computes stays computed.
    if (compute) tensor->flags |= GGML_TENSOR_FLAG_COMPUTE;
    if (!(tensor->flags & GGML_TENSOR_FLAG_COMPUTE)) graph->has_uncomputed = true;
    graph->nodes[graph->n_nodes++] = tensor;
    count_uses(graph, tensor);
    return true;
}

bool append_leaf(ggml_cgraph * graph, ggml_tensor * tensor) {
    if (graph->n_leafs >= graph->size) {
        invalidate(graph,
                   "ggml_build_forward_expand: graph is full (" + std::to_string(graph->size) + " leafs)");
        return false;
    }
    graph->leafs[graph->n_leafs++] = tensor;
    return true;
}

// Flags root and every node it depends on for computation (nodes an earlier
// ggml_build_forward_order added without the flag included).
void mark_computed(ggml_tensor * root) {
    std::vector<ggml_tensor *> stack{root};
    std::unordered_set<const ggml_tensor *> seen{root};
    while (!stack.empty()) {
        ggml_tensor * tensor = stack.back();
        stack.pop_back();
        if (tensor->op != GGML_OP_NONE) tensor->flags |= GGML_TENSOR_FLAG_COMPUTE;
        for (ggml_tensor * src : tensor->src) {
            if (src && seen.insert(src).second) stack.push_back(src);
        }
    }
}

// Depth-first walk with an explicit stack, so deep chains cannot overflow the call stack: every
// source is added before its consumer, each tensor once. New nodes are flagged for computation
// when compute is set.
void add_missing(ggml_cgraph * graph, ggml_tensor * root, bool compute) {
    struct Frame {
        ggml_tensor * tensor;
        int next_src;
    };
    if (hash_contains(graph, root)) return;
    hash_insert(graph, root);
    std::vector<Frame> stack{{root, 0}};
    while (!stack.empty()) {
        Frame & frame = stack.back();
        if (frame.next_src < GGML_MAX_SRC) {
            ggml_tensor * src = frame.tensor->src[frame.next_src++];
            if (src && !hash_contains(graph, src)) {
                hash_insert(graph, src);
                stack.push_back({src, 0});
            }
            continue;
        }
        ggml_tensor * tensor = frame.tensor;
        stack.pop_back();
        // As in ggml, trainable parameters are nodes (they get gradients); other op-less tensors are leafs.
        const bool is_leaf = tensor->op == GGML_OP_NONE && !(tensor->flags & GGML_TENSOR_FLAG_PARAM);
        const bool added = is_leaf ? append_leaf(graph, tensor) : append_node(graph, tensor, compute);
        if (!added) return;
    }
}

void expand(ggml_cgraph * graph, ggml_tensor * root, bool compute) {
    add_missing(graph, root, compute);
    if (compute && graph->has_uncomputed) mark_computed(root);
}

size_t graph_bytes(size_t size, bool grads) {
    const size_t capacity = hash_capacity_for(size);
    const size_t slots = align_up(capacity * sizeof(ggml_tensor *), kArenaAlign);
    return align_up(sizeof(ggml_cgraph), kArenaAlign) +
           2 * align_up(size * sizeof(ggml_tensor *), kArenaAlign) + slots +
           align_up(capacity * sizeof(int32_t), kArenaAlign) + (grads ? 2 * slots : 0);
}

void clear_gradients(ggml_cgraph * graph) {
    if (!graph->grads) return;
    std::fill_n(graph->grads, graph->hash_capacity, nullptr);
    std::fill_n(graph->grad_accs, graph->hash_capacity, nullptr);
}

void clear_hash(ggml_cgraph * graph) {
    std::fill_n(graph->hash_keys, graph->hash_capacity, nullptr);
    std::fill_n(graph->use_counts, graph->hash_capacity, 0);
    clear_gradients(graph);
}

// Slot index of tensor in graph's hash set, when the graph has gradients and holds tensor.
std::optional<size_t> gradient_index(const ggml_cgraph * graph, const ggml_tensor * tensor) {
    if (!graph->grads || !tensor) return std::nullopt;
    const size_t slot = hash_slot(graph, tensor);
    if (graph->hash_keys[slot] != tensor) return std::nullopt;
    return slot;
}

// Copies src's gradients of the nodes dst holds too (dst has gradient slots).
void copy_gradients(const ggml_cgraph * src, ggml_cgraph * dst) {
    for (int i = 0; i < src->n_nodes; ++i) {
        const auto from = gradient_index(src, src->nodes[i]), to = gradient_index(dst, src->nodes[i]);
        if (!from || !to) continue;
        dst->grads[*to] = src->grads[*from];
        dst->grad_accs[*to] = src->grad_accs[*from];
    }
}

// Replaces graph's contents with nodes, leafs and, per tensor, the given use count.
template <class UseCount>
void assign(ggml_cgraph * graph, const std::vector<ggml_tensor *> & nodes,
            const std::vector<ggml_tensor *> & leafs, UseCount use_count) {
    clear_hash(graph);
    std::copy(nodes.begin(), nodes.end(), graph->nodes);
    std::copy(leafs.begin(), leafs.end(), graph->leafs);
    graph->n_nodes = static_cast<int>(nodes.size());
    graph->n_leafs = static_cast<int>(leafs.size());
    for (const auto * list : {&nodes, &leafs}) {
        for (ggml_tensor * tensor : *list) {
            const size_t slot = hash_slot(graph, tensor);
            graph->hash_keys[slot] = tensor;
            graph->use_counts[slot] = use_count(tensor);
        }
    }
    graph->valid = true;
}

ggml_tensor * at_index(ggml_tensor * const * items, int count, int i) {
    if (i < 0) i += count;
    return i >= 0 && i < count ? items[i] : nullptr;
}

bool is_mutable(const ggml_cgraph * graph, const char * op_name) {
    if (graph->is_view) report_error(graph->ctx, std::string(op_name) + ": a graph view cannot be modified");
    return !graph->is_view;
}

}  // namespace

namespace ggx::core {

bool graph_is_view(const ggml_cgraph * graph) { return graph->is_view; }

bool graph_copy(const ggml_cgraph * src, ggml_cgraph * dst) {
    if (!is_mutable(dst, "ggml_graph_cpy")) return false;
    if (src->n_nodes > dst->size || src->n_leafs > dst->size) {
        report_error(dst->ctx, "ggml_graph_cpy: destination holds " + std::to_string(dst->size) +
                                   " nodes, source has " + std::to_string(src->n_nodes) + " nodes and " +
                                   std::to_string(src->n_leafs) + " leafs");
        return false;
    }
    if (src->grads && !dst->grads) {
        report_error(dst->ctx,
                     "ggml_graph_cpy: the source has gradients, the destination none (create it "
                     "with ggml_new_graph_custom(ctx, size, true))");
        return false;
    }
    const std::vector<ggml_tensor *> nodes(src->nodes, src->nodes + src->n_nodes);
    const std::vector<ggml_tensor *> leafs(src->leafs, src->leafs + src->n_leafs);
    assign(dst, nodes, leafs, [src](const ggml_tensor * t) { return ggml_graph_get_use_count(src, t); });
    if (src->grads) copy_gradients(src, dst);
    dst->valid = src->valid;
    dst->has_uncomputed = src->has_uncomputed;
    return true;
}

bool graph_add_node(ggml_cgraph * cgraph, ggml_tensor * tensor) {
    if (!is_mutable(cgraph, "ggml_graph_add_node")) return false;
    Check check(cgraph->ctx, "ggml_graph_add_node", {{"tensor", tensor}});
    if (!check) return false;
    check.require(!hash_contains(cgraph, tensor), "tensor is already in the graph")
        .require(cgraph->n_nodes < cgraph->size, "graph is full");
    if (!check) return false;
    hash_insert(cgraph, tensor);
    return append_node(cgraph, tensor, true);
}

}  // namespace ggx::core

extern "C" {

size_t ggml_graph_overhead_custom(size_t size, bool grads) { return graph_bytes(size, grads); }
size_t ggml_graph_overhead(void) { return graph_bytes(GGML_DEFAULT_GRAPH_SIZE, false); }

ggml_cgraph * ggml_new_graph_custom(ggml_context * ctx, size_t size, bool grads) {
    Check check(ctx, "ggml_new_graph_custom", {});
    check.require(size >= 1 && size <= INT32_MAX / 4, "bad size");
    if (!check) return nullptr;
    auto * block = static_cast<unsigned char *>(
        arena_alloc(ctx, graph_bytes(size, grads), GGML_OBJECT_TYPE_GRAPH, "ggml_new_graph"));
    if (!block) return nullptr;
    const size_t capacity = hash_capacity_for(size);
    unsigned char * cursor = block;
    auto take = [&cursor](size_t bytes) {
        unsigned char * start = cursor;
        cursor += align_up(bytes, kArenaAlign);
        return start;
    };
    auto * graph = new (take(sizeof(ggml_cgraph))) ggml_cgraph{};
    graph->ctx = ctx;
    graph->size = static_cast<int>(size);
    graph->nodes = reinterpret_cast<ggml_tensor **>(take(size * sizeof(ggml_tensor *)));
    graph->leafs = reinterpret_cast<ggml_tensor **>(take(size * sizeof(ggml_tensor *)));
    graph->hash_capacity = capacity;
    graph->hash_keys = reinterpret_cast<const ggml_tensor **>(take(capacity * sizeof(ggml_tensor *)));
    graph->use_counts = reinterpret_cast<int32_t *>(take(capacity * sizeof(int32_t)));
    if (grads) {
        graph->grads = reinterpret_cast<ggml_tensor **>(take(capacity * sizeof(ggml_tensor *)));
        graph->grad_accs = reinterpret_cast<ggml_tensor **>(take(capacity * sizeof(ggml_tensor *)));
    }
    graph->valid = true;
    clear_hash(graph);
    return graph;
}

ggml_cgraph * ggml_new_graph(ggml_context * ctx) {
    return ggml_new_graph_custom(ctx, GGML_DEFAULT_GRAPH_SIZE, false);
}

void ggml_build_forward_expand(ggml_cgraph * cgraph, ggml_tensor * tensor) {
    if (!is_mutable(cgraph, "ggml_build_forward_expand")) return;
    if (!tensor) {
        invalidate(cgraph, "ggml_build_forward_expand: tensor is NULL (an earlier constructor failed)");
        return;
    }
    if (cgraph->valid) expand(cgraph, tensor, true);
}

void ggml_build_forward_order(ggml_cgraph * cgraph, ggml_tensor * tensor) {
    if (!is_mutable(cgraph, "ggml_build_forward_order")) return;
    if (!tensor) {
        invalidate(cgraph, "ggml_build_forward_order: tensor is NULL (an earlier constructor failed)");
        return;
    }
    if (cgraph->valid) expand(cgraph, tensor, false);
}

ggml_tensor * ggml_build_forward_select(ggml_cgraph * cgraph, ggml_tensor ** tensors, int n_tensors, int idx) {
    if (idx < 0 || idx >= n_tensors) {
        invalidate(cgraph, "ggml_build_forward_select: index " + std::to_string(idx) + " outside [0, " +
                               std::to_string(n_tensors) + ")");
        return nullptr;
    }
    for (int i = 0; i < n_tensors; ++i)
        ggml_build_forward_order(cgraph, tensors[i]);
    ggml_build_forward_expand(cgraph, tensors[idx]);
    return tensors[idx];
}

bool ggml_graph_is_valid(const ggml_cgraph * cgraph) { return cgraph->valid; }

ggml_cgraph * ggml_graph_view(ggml_context * ctx, ggml_cgraph * cgraph, int i0, int i1) {
    Check check(ctx, "ggml_graph_view", {});
    if (!check.require(0 <= i0 && i0 <= i1 && i1 <= cgraph->n_nodes,
                       "range must lie within the graph's nodes")) {
        return nullptr;
    }
    auto * view = static_cast<ggml_cgraph *>(arena_alloc(ctx, sizeof(ggml_cgraph), GGML_OBJECT_TYPE_GRAPH, "ggml_graph_view"));
    if (!view) return nullptr;
    *view = *cgraph;
    view->ctx = ctx;
    view->size = i1 - i0;
    view->n_nodes = i1 - i0;
    view->n_leafs = 0;
    view->nodes = cgraph->nodes + i0;
    view->grads = nullptr;  // as in ggml: gradients belong to the whole graph
    view->grad_accs = nullptr;
    view->is_view = true;
    return view;
}


void ggml_graph_cpy(const ggml_cgraph * src, ggml_cgraph * dst) { ggx::core::graph_copy(src, dst); }

ggml_cgraph * ggml_graph_dup(ggml_context * ctx, ggml_cgraph * cgraph, bool force_grads) {
    ggml_cgraph * copy =
        ggml_new_graph_custom(ctx, static_cast<size_t>(cgraph->size), cgraph->grads || force_grads);
    if (copy && !ggx::core::graph_copy(cgraph, copy)) return nullptr;
    return copy;
}

ggml_tensor * ggml_graph_get_grad(const ggml_cgraph * cgraph, const ggml_tensor * node) {
    const auto i = gradient_index(cgraph, node);
    return i ? cgraph->grads[*i] : nullptr;
}

ggml_tensor * ggml_graph_get_grad_acc(const ggml_cgraph * cgraph, const ggml_tensor * node) {
    const auto i = gradient_index(cgraph, node);
    return i ? cgraph->grad_accs[*i] : nullptr;
}

void ggml_graph_reset(ggml_cgraph * cgraph) {
    if (!cgraph) return;
    if (!cgraph->grads) {
        report_error(cgraph->ctx,
                     "ggml_graph_reset: the graph has no gradients (create it with "
                     "ggml_new_graph_custom(ctx, size, true))");
        return;
    }
    for (int i = 0; i < cgraph->n_nodes; ++i) {
        ggml_tensor * node = cgraph->nodes[i];
        if (node->op == GGML_OP_OPT_STEP_ADAMW) {  // the optimizer's moments start again from zero
            ggml_set_zero(node->src[2]);
            ggml_set_zero(node->src[3]);
        }
        ggml_tensor * acc = ggml_graph_get_grad_acc(cgraph, node);
        if (!acc) continue;
        if (node->flags & GGML_TENSOR_FLAG_LOSS) {
            const float one = 1.0f;  // d loss / d loss
            write_tensor(acc, &one, 0, sizeof one);
        } else {
            ggml_set_zero(acc);
        }
    }
}

void ggml_graph_clear(ggml_cgraph * cgraph) {
    if (!is_mutable(cgraph, "ggml_graph_clear")) return;
    cgraph->n_nodes = 0;
    cgraph->n_leafs = 0;
    cgraph->valid = true;
    cgraph->has_uncomputed = false;
    clear_hash(cgraph);
}

int ggml_graph_size(const ggml_cgraph * cgraph) { return cgraph->size; }
int ggml_graph_n_nodes(const ggml_cgraph * cgraph) { return cgraph->n_nodes; }
ggml_tensor * ggml_graph_node(const ggml_cgraph * cgraph, int i) {
    return at_index(cgraph->nodes, cgraph->n_nodes, i);
}
ggml_tensor ** ggml_graph_nodes(const ggml_cgraph * cgraph) { return cgraph->nodes; }


void ggml_graph_add_node(ggml_cgraph * cgraph, ggml_tensor * tensor) { ggx::core::graph_add_node(cgraph, tensor); }

ggml_tensor * ggml_graph_get_tensor(const ggml_cgraph * cgraph, const char * name) {
    for (int i = 0; i < cgraph->n_leafs; ++i) {
        if (std::strcmp(cgraph->leafs[i]->name, name) == 0) return cgraph->leafs[i];
    }
    for (int i = 0; i < cgraph->n_nodes; ++i) {
        if (std::strcmp(cgraph->nodes[i]->name, name) == 0) return cgraph->nodes[i];
    }
    return nullptr;
}

int ggml_graph_n_leafs(const ggml_cgraph * cgraph) { return cgraph->n_leafs; }
ggml_tensor * ggml_graph_leaf(const ggml_cgraph * cgraph, int i) {
    return at_index(cgraph->leafs, cgraph->n_leafs, i);
}
ggml_tensor ** ggml_graph_leafs(const ggml_cgraph * cgraph) { return cgraph->leafs; }

bool ggml_graph_add_leaf(ggml_cgraph * cgraph, ggml_tensor * tensor) {
    if (!is_mutable(cgraph, "ggml_graph_add_leaf")) return false;
    Check check(cgraph->ctx, "ggml_graph_add_leaf", {{"tensor", tensor}});
    if (!check) return false;
    check.require(tensor->op == GGML_OP_NONE, "a leaf must have no op")
        .require(!hash_contains(cgraph, tensor), "tensor is already in the graph")
        .require(cgraph->n_leafs < cgraph->size, "the leaf array is full");
    if (!check) return false;
    hash_insert(cgraph, tensor);
    cgraph->leafs[cgraph->n_leafs++] = tensor;
    return true;
}

bool ggml_graph_contains(const ggml_cgraph * cgraph, const ggml_tensor * tensor) {
    return tensor && hash_contains(cgraph, tensor);
}

int ggml_graph_get_use_count(const ggml_cgraph * cgraph, const ggml_tensor * tensor) {
    if (!tensor) return 0;
    const size_t slot = hash_slot(cgraph, tensor);
    return cgraph->hash_keys[slot] == tensor ? cgraph->use_counts[slot] : 0;
}

bool ggml_graph_copy_mapped(ggml_cgraph * dst, const ggml_cgraph * src, ggml_graph_tensor_map_t map,
                            void * user_data) {
    if (!is_mutable(dst, "ggml_graph_copy_mapped")) return false;
    auto fail = [dst](const std::string & why) {
        report_error(dst->ctx, "ggml_graph_copy_mapped: " + why);
        return false;
    };
    if (src->n_nodes > dst->size || src->n_leafs > dst->size) return fail("destination graph is too small");

    // The image of every node and leaf, checked before dst is touched.
    std::vector<ggml_tensor *> nodes, leafs;
    std::vector<const ggml_tensor *> originals;
    for (auto [items, count, out] :
         {std::tuple{src->nodes, src->n_nodes, &nodes}, {src->leafs, src->n_leafs, &leafs}}) {
        for (int i = 0; i < count; ++i) {
            ggml_tensor * image = map(items[i], user_data);
            if (!image) return fail(std::string("tensor '") + items[i]->name + "' maps to NULL");
            out->push_back(image);
            originals.push_back(items[i]);
        }
    }
    std::vector<ggml_tensor *> images(nodes);
    images.insert(images.end(), leafs.begin(), leafs.end());
    std::unordered_map<const ggml_tensor *, size_t> index_of_original, index_of_image;
    for (size_t i = 0; i < images.size(); ++i) {
        index_of_original.emplace(originals[i], i);
        if (!index_of_image.emplace(images[i], i).second) return fail("two tensors map to one copy");
    }
    for (int i = 0; i < src->n_nodes; ++i) {
        for (int j = 0; j < GGML_MAX_SRC; ++j) {
            const auto edge = index_of_original.find(src->nodes[i]->src[j]);
            if (edge != index_of_original.end() && nodes[i]->src[j] != images[edge->second]) {
                return fail(std::string("source ") + std::to_string(j) + " of '" + src->nodes[i]->name +
                            "' is not remapped to its copy");
            }
        }
    }
    assign(dst, nodes, leafs, [&](const ggml_tensor * image) {
        return ggml_graph_get_use_count(src, originals[index_of_image.at(image)]);
    });
    // A copy computes exactly when its original does.
    for (int i = 0; i < src->n_nodes; ++i) {
        nodes[i]->flags = (nodes[i]->flags & ~GGML_TENSOR_FLAG_COMPUTE) |
                          (src->nodes[i]->flags & GGML_TENSOR_FLAG_COMPUTE);
    }
    dst->has_uncomputed = src->has_uncomputed;
    return true;
}

void ggml_graph_copy_use_counts(ggml_cgraph * segment, const ggml_cgraph * source) {
    if (!is_mutable(segment, "ggml_graph_copy_use_counts")) return;
    for (int i = 0; i < segment->n_nodes + segment->n_leafs; ++i) {
        const ggml_tensor * tensor =
            i < segment->n_nodes ? segment->nodes[i] : segment->leafs[i - segment->n_nodes];
        segment->use_counts[hash_slot(segment, tensor)] = ggml_graph_get_use_count(source, tensor);
    }
}

}  // extern "C"

// Gradient slots and graph states, for core/backward.cpp.
namespace ggx::core {

bool graph_has_grads(const ggml_cgraph * graph) { return graph->grads != nullptr; }

ggml_tensor ** grad_slot(ggml_cgraph * graph, const ggml_tensor * tensor) {
    const auto i = gradient_index(graph, tensor);
    return i ? &graph->grads[*i] : nullptr;
}

ggml_tensor ** grad_acc_slot(ggml_cgraph * graph, const ggml_tensor * tensor) {
    const auto i = gradient_index(graph, tensor);
    return i ? &graph->grad_accs[*i] : nullptr;
}

void clear_grads(ggml_cgraph * graph) { clear_gradients(graph); }

GraphState save_state(const ggml_cgraph * graph) {
    GraphState state{{graph->nodes, graph->nodes + graph->n_nodes},
                     {graph->leafs, graph->leafs + graph->n_leafs},
                     {},
                     {},
                     graph->valid,
                     graph->has_uncomputed};
    for (const ggml_tensor * t : state.nodes)
        state.node_uses.push_back(ggml_graph_get_use_count(graph, t));
    for (const ggml_tensor * t : state.leafs)
        state.leaf_uses.push_back(ggml_graph_get_use_count(graph, t));
    return state;
}

void restore_state(ggml_cgraph * graph, const GraphState & state) {
    std::unordered_map<const ggml_tensor *, int32_t> uses;
    for (size_t i = 0; i < state.nodes.size(); ++i)
        uses.emplace(state.nodes[i], state.node_uses[i]);
    for (size_t i = 0; i < state.leafs.size(); ++i)
        uses.emplace(state.leafs[i], state.leaf_uses[i]);
    assign(graph, state.nodes, state.leafs, [&uses](const ggml_tensor * t) { return uses.at(t); });
    graph->valid = state.valid;
    graph->has_uncomputed = state.has_uncomputed;
}

}  // namespace ggx::core
