// ggml_backend_graph_copy (a graph's tensors copied into one buffer of another backend) and
// ggml_backend_compare_graph_backend, which computes a graph and its copy node by node.
#include <ggml-alloc.h>
#include <ggml-ext.h>
#include <ggml-graph.h>

#include <iterator>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/internal.h"

namespace {

// The graph's leafs, then its nodes in order: sources before their consumers.
std::vector<ggml_tensor *> graph_tensors(ggml_cgraph * graph) {
    std::vector<ggml_tensor *> tensors(ggml_graph_leafs(graph), ggml_graph_leafs(graph) + ggml_graph_n_leafs(graph));
    tensors.insert(tensors.end(), ggml_graph_nodes(graph), ggml_graph_nodes(graph) + ggml_graph_n_nodes(graph));
    return tensors;
}

// How many tensors the graph reaches: its own, their sources and storage owners.
size_t count_reachable(const std::vector<ggml_tensor *> & roots) {
    std::vector<const ggml_tensor *> stack(roots.begin(), roots.end());
    std::unordered_set<const ggml_tensor *> seen;
    while (!stack.empty()) {
        const ggml_tensor * t = stack.back();
        stack.pop_back();
        if (!t || !seen.insert(t).second) continue;
        stack.push_back(t->view_src);
        stack.insert(stack.end(), std::begin(t->src), std::end(t->src));
    }
    return seen.size();
}

// Copies of a graph's tensors: storage owners in one context, views in another, edges remapped.
class TensorCopier {
public:
    TensorCopier(ggml_context * owners, ggml_context * views) : owners_(owners), views_(views) {}

    ggml_tensor * copy_of(ggml_tensor * original) {
        if (!original) return nullptr;
        if (const auto found = copies_.find(original); found != copies_.end()) return found->second;
        ggml_tensor * copy = ggml_dup_tensor(original->view_src ? views_ : owners_, original);
        if (!copy) return nullptr;
        *copy = *original;
        copy->buffer = nullptr;
        copy->data = nullptr;
        copy->extra = nullptr;
        copies_.emplace(original, copy);
        copy->view_src = copy_of(original->view_src);
        for (ggml_tensor *& src : copy->src)
            src = copy_of(src);
        return copy;
    }

    static ggml_tensor * map(const ggml_tensor * original, void * self) {
        return static_cast<TensorCopier *>(self)->copies_.at(original);
    }

    const std::unordered_map<const ggml_tensor *, ggml_tensor *> & copies() const { return copies_; }

private:
    ggml_context * owners_;
    ggml_context * views_;
    std::unordered_map<const ggml_tensor *, ggml_tensor *> copies_;
};

// Places the views on their owners' storage and copies the owners' data from the originals.
bool initialise_copies(const TensorCopier & copier) {
    for (const auto & [original, copy] : copier.copies()) {
        if (copy->view_src) {
            if (ggml_backend_view_init(copy) != GGML_STATUS_SUCCESS) return false;
        } else if (original->data && ggml_nbytes(original) > 0) {
            const ggml_status status = original->buffer
                                           ? ggml_ext_backend_tensor_copy(original, copy)
                                           : ggml_ext_backend_tensor_set(copy, original->data, 0, ggml_nbytes(original));
            if (status != GGML_STATUS_SUCCESS) return false;
        }
    }
    return true;
}

ggml_context * new_metadata_context(size_t bytes) { return ggml_init({bytes, nullptr, true}); }

}  // namespace

extern "C" {

struct ggml_backend_graph_copy ggml_backend_graph_copy(ggml_backend_t backend, ggml_cgraph * graph) {
    const std::vector<ggml_tensor *> tensors = graph_tensors(graph);
    const size_t metadata = (count_reachable(tensors) + 1) * ggml_tensor_overhead();
    struct ggml_backend_graph_copy copy {};
    copy.ctx_allocated =
        new_metadata_context(metadata + ggml_graph_overhead_custom(static_cast<size_t>(ggml_graph_size(graph)), false));
    copy.ctx_unallocated = new_metadata_context(metadata);
    bool ok = copy.ctx_allocated && copy.ctx_unallocated;
    TensorCopier copier(copy.ctx_allocated, copy.ctx_unallocated);
    // In graph order each copy's sources are copied already: copy_of recurses only into tensors
    // outside the graph.
    for (size_t i = 0; ok && i < tensors.size(); ++i)
        ok = copier.copy_of(tensors[i]) != nullptr;
    if (ok) copy.graph = ggml_new_graph_custom(copy.ctx_allocated, static_cast<size_t>(ggml_graph_size(graph)), false);
    ok = ok && copy.graph && ggml_graph_copy_mapped(copy.graph, graph, &TensorCopier::map, &copier);
    if (ok) copy.buffer = ggml_backend_alloc_ctx_tensors(copy.ctx_allocated, backend);
    ok = ok && (copy.buffer || ggml_get_first_tensor(copy.ctx_allocated) == nullptr) && initialise_copies(copier);
    if (!ok) {
        ggml_backend_graph_copy_free(copy);
        return {};
    }
    return copy;
}

void ggml_backend_graph_copy_free(struct ggml_backend_graph_copy copy) {
    ggml_backend_buffer_free(copy.buffer);
    ggml_free(copy.ctx_allocated);
    ggml_free(copy.ctx_unallocated);
}

bool ggml_backend_compare_graph_backend(ggml_backend_t backend1, ggml_backend_t backend2, ggml_cgraph * graph,
                                        ggml_backend_eval_callback callback, void * user_data,
                                        const ggml_tensor * const * test_nodes, size_t num_test_nodes) {
    const struct ggml_backend_graph_copy copy = ggml_backend_graph_copy(backend2, graph);
    if (!copy.graph) return false;
    const std::unordered_set<const ggml_tensor *> tested(test_nodes, test_nodes + num_test_nodes);
    bool ok = true;
    for (int i = 0; ok && i < ggml_graph_n_nodes(graph); ++i) {
        ok = ggml_backend_graph_compute_range(backend1, graph, i, i + 1) == GGML_STATUS_SUCCESS &&
             ggml_backend_graph_compute_range(backend2, copy.graph, i, i + 1) == GGML_STATUS_SUCCESS;
        ggml_tensor * node = ggml_graph_node(graph, i);
        const bool compare = num_test_nodes == 0 ? !ggx::core::is_layout_op(node->op) : tested.count(node) > 0;
        if (ok && compare && !callback(i, node, ggml_graph_node(copy.graph, i), user_data)) break;
    }
    ggml_backend_graph_copy_free(copy);
    return ok;
}

}  // extern "C"
