// Fusion: the runtime's legality check (spec "Fusion") and the matching of a device's rules over a
// node range. One central check serves every rule and every backend.
#include <ggml-graph.h>

#include <string>

#include "ext/registry.h"
#include "interface/backend-impl.h"

namespace ggx::ext {
namespace {

const ggml_tensor * storage_root(const ggml_tensor * t) {
    while (t->view_src)
        t = t->view_src;
    return t;
}

// Position of t among nodes [first, first + n), or -1.
int position_in(const ggml_cgraph * graph, int first, int n, const ggml_tensor * t) {
    for (int k = 0; k < n; ++k)
        if (ggml_graph_node(graph, first + k) == t) return k;
    return -1;
}

// Uses of t by nodes [first + from, first + n).
int uses_within(const ggml_cgraph * graph, int first, int from, int n, const ggml_tensor * t) {
    int uses = 0;
    for (int k = from; k < n; ++k)
        for (const ggml_tensor * src : ggml_graph_node(graph, first + k)->src)
            uses += src == t;
    return uses;
}

bool exact_cover(const ggml_tensor * view, const ggml_tensor * owner) {
    return view->type == owner->type && ggml_are_same_shape(view, owner) &&
           ggml_are_same_stride(view, owner) && view->view_offs == 0;
}

struct Verdict {
    bool legal = true;
    std::string rule;
    const ggml_tensor * node = nullptr;
    std::string detail;
};

Verdict reject(const char * rule, const ggml_tensor * node, std::string detail) {
    return {false, rule, node, std::move(detail)};
}

Verdict check(const ggml_cgraph * graph, int first, int n) {
    if (n < 2 || first < 0 || first + n > ggml_graph_n_nodes(graph))
        return reject("range", nullptr, "a fusion replaces at least 2 nodes inside the graph");
    const ggml_tensor * out = ggml_graph_node(graph, first + n - 1);
    // The owner the output writes back into, when it does so legally (its OUTPUT flag is kept).
    const ggml_tensor * writeback_owner = nullptr;
    if (out->view_src && out->op != GGML_OP_CPY) {
        const int owner = position_in(graph, first, n - 1, out->view_src);
        if (owner < 0)
            return reject("in-place writes stay inside the match", out,
                          "the output writes into storage outside the match and is not a terminal CPY");
        if (out->view_src->view_src || !exact_cover(out, out->view_src))
            return reject("writeback covers its owner exactly", out,
                          "the output must cover exactly the owner's full shape, type, strides and offset");
        writeback_owner = out->view_src;
    }
    for (int k = 0; k < n; ++k) {
        const ggml_tensor * node = ggml_graph_node(graph, first + k);
        if (!(node->flags & GGML_TENSOR_FLAG_COMPUTE))
            return reject("compute flags", node, "the node is not flagged for computation");
        if (ggml_get_custom_kind(node) == GGML_CUSTOM_KIND_CPU_CALLBACK)
            return reject("pure operators", node, "a CPU callback node has unknown side effects");
        if (k == n - 1) break;
        // An intermediate: eliminated, so nothing outside the match may see it.
        const int uses = ggml_graph_get_use_count(graph, node);
        if (uses_within(graph, first, k + 1, n, node) != uses)
            return reject("external uses", node, "a consumer outside the match reads this intermediate");
        if ((node->flags & GGML_TENSOR_FLAG_OUTPUT) && node != writeback_owner)
            return reject("output flags", node,
                          "an intermediate flagged as a graph output cannot be eliminated");
        if (node->view_src && position_in(graph, first, k, storage_root(node)) < 0)
            return reject(node->op == GGML_OP_VIEW || node->op == GGML_OP_RESHAPE ||
                                  node->op == GGML_OP_PERMUTE || node->op == GGML_OP_TRANSPOSE
                              ? "internal views"
                              : "in-place intermediates",
                          node, "its storage owner is not an earlier node of the match");
    }
    return {};
}

}  // namespace

bool fusion_is_legal(const ggml_cgraph * graph, int first, int n) {
    const Verdict v = check(graph, first, n);
    if (v.legal) return true;
    std::string message = "fusion of nodes [" + std::to_string(first) + ", " + std::to_string(first + n) +
                          "): rule '" + v.rule + "' fails";
    if (v.node) message += " at " + describe(v.node);
    backend::set_last_error(message + ": " + v.detail);
    return false;
}

}  // namespace ggx::ext

extern "C" bool ggml_ext_fusion_is_legal(const ggml_cgraph * graph, int first, int n) {
    return graph && ggx::ext::fusion_is_legal(graph, first, n);
}
