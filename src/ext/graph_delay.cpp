// ggml_ext_graph_delay (spec "Fusion", optimize callbacks): move a producer range after independent
// nodes. The only change is the order of the node array; the hash set, the recorded use counts (keyed
// by tensor, not by position), the leafs and every tensor's metadata stay as they are.
//
// Moving nodes [first, first + n) after node `after` makes every crossed node (first + n .. after) run
// before every moved node, so each (moved, crossed) pair must commute. The check works on storage
// footprints: the storage owner of a tensor (the root of its view_src chain) and the byte range
// [offset, offset + ggml_nbytes) it spans there. ggml_nbytes reaches the last element through the
// strides, so a non-contiguous view is covered by its full extent (conservative).
#include <ggml-ext.h>
#include <ggml-graph.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/internal.h"
#include "interface/backend-impl.h"

namespace ggx::ext {
namespace {

struct Footprint {
    const ggml_tensor * owner;
    size_t begin, end;  // byte range inside the owner's storage
};

Footprint footprint_of(const ggml_tensor * t) {
    size_t offset = 0;
    while (t->view_src) {
        offset += t->view_offs;
        t = t->view_src;
    }
    return {t, offset, offset};
}

Footprint footprint(const ggml_tensor * t) {
    Footprint f = footprint_of(t);
    f.end = f.begin + ggml_nbytes(t);
    return f;
}

bool overlap(const Footprint & a, const Footprint & b) {
    return a.owner == b.owner && a.begin < b.end && b.begin < a.end;
}

// What running a node touches: the storage its sources span (a CPY's destination, src[1], is only
// written), and the storage it writes (none for layout ops, which only describe storage; an in-place
// result or a CPY writes into its view_src's storage).
struct Access {
    const ggml_tensor * node;
    std::vector<std::pair<const ggml_tensor *, Footprint>> reads;  // per source read
    bool writes = false;
    Footprint written{};
};

Access access_of(const ggml_tensor * node) {
    Access a{node, {}, false, {}};
    for (int i = 0; i < GGML_MAX_SRC; ++i) {
        const ggml_tensor * src = node->src[i];
        if (src && !(node->op == GGML_OP_CPY && i == 1)) a.reads.emplace_back(src, footprint(src));
    }
    if (!core::is_layout_op(node->op)) {
        a.writes = true;
        a.written = footprint(node);
    }
    return a;
}

std::string name_of(const ggml_tensor * t, int index) {
    return "node " + std::to_string(index) + " '" + t->name + "' (" + ggml_op_desc(t) + ")";
}

bool has_unknown_side_effects(const ggml_tensor * t) {
    return ggml_get_custom_kind(t) == GGML_CUSTOM_KIND_CPU_CALLBACK;
}

// Why crossed node c cannot run before moved node m because c names m (an edge), or an empty string.
std::string edge_conflict(const Access & m, const Access & c, const std::string & moved) {
    // Edges: a crossed node that names a moved node (as a source or as the storage it views or
    // writes) would run before its own input.
    for (int i = 0; i < GGML_MAX_SRC; ++i) {
        if (c.node->src[i] != m.node) continue;
        if (core::is_layout_op(c.node->op))
            return "is a view of moved " + moved + ": a view must follow the node that produces its source";
        if (c.node->op == GGML_OP_CPY && i == 1) return "copies into the result of moved " + moved;
        return "reads the result of moved " + moved;
    }
    if (c.node->view_src == m.node) return "writes into the storage of moved " + moved;
    return {};
}

// Why crossed node c cannot run before moved node m because of the storage they touch (read after
// write, write after read, write after write), or an empty string.
std::string storage_conflict(const Access & m, const Access & c, const std::string & moved) {
    if (m.writes) {
        for (const auto & [src, f] : c.reads)
            if (overlap(f, m.written))
                return m.node->view_src
                           ? "reads storage that moved " + moved + " writes in place (through '" +
                                 std::string(src->name) + "')"
                           : "reads the result of moved " + moved + " through the view or shared storage '" +
                                 std::string(src->name) + "'";
    }
    if (c.writes) {
        for (const auto & [src, f] : m.reads)
            if (overlap(c.written, f))
                return "writes storage that aliases input '" + std::string(src->name) + "' of moved " + moved;
        if (m.writes && overlap(c.written, m.written))
            return "writes storage that aliases the output of moved " + moved;
    }
    return {};
}

bool refuse(int first, int n, int after, const std::string & why) {
    backend::set_last_error("ggml_ext_graph_delay(first " + std::to_string(first) + ", n " +
                            std::to_string(n) + ", after " + std::to_string(after) + "): " + why);
    return false;
}

}  // namespace

bool graph_delay(ggml_cgraph * graph, int first, int n, int after) {
    if (!graph) return refuse(first, n, after, "graph is NULL");
    if (core::graph_is_view(graph))
        return refuse(first, n, after,
                      "a graph view cannot be reordered: it shares the node array of the graph it views");
    const int n_nodes = ggml_graph_n_nodes(graph);
    if (n < 1) return refuse(first, n, after, "the moved range needs at least one node");
    if (first < 0 || first > n_nodes - n || after < first + n || after >= n_nodes)
        return refuse(first, n, after,
                      "the range must satisfy 0 <= first, first + n <= after < n_nodes (" +
                          std::to_string(n_nodes) + ")");
    ggml_tensor ** nodes = ggml_graph_nodes(graph);

    std::vector<Access> moved;
    moved.reserve(static_cast<size_t>(n));
    for (int i = first; i < first + n; ++i) {
        if (has_unknown_side_effects(nodes[i]))
            return refuse(
                first, n, after,
                "moved " + name_of(nodes[i], i) + " is a CPU callback node with unknown side effects");
        moved.push_back(access_of(nodes[i]));
    }
    for (int j = first + n; j <= after; ++j) {
        if (has_unknown_side_effects(nodes[j]))
            return refuse(
                first, n, after,
                "crossed " + name_of(nodes[j], j) + " is a CPU callback node with unknown side effects");
        const Access crossed = access_of(nodes[j]);
        for (auto conflict : {edge_conflict, storage_conflict}) {
            for (int k = 0; k < n; ++k) {
                const std::string why =
                    conflict(moved[static_cast<size_t>(k)], crossed, name_of(nodes[first + k], first + k));
                if (!why.empty())
                    return refuse(first, n, after, "crossed " + name_of(nodes[j], j) + " " + why);
            }
        }
    }
    std::rotate(nodes + first, nodes + first + n, nodes + after + 1);
    return true;
}

}  // namespace ggx::ext

extern "C" bool ggml_ext_graph_delay(ggml_cgraph * graph, int first, int n, int after) {
    return ggx::ext::graph_delay(graph, first, n, after);
}
