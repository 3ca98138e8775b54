// Human-readable views of a graph: ggml_graph_print (to the log) and ggml_graph_dump_dot (Graphviz).
#include <ggml-graph.h>

#include <cinttypes>
#include <cstdio>

#include "core/log.h"

namespace {

using ggx::core::log;

// "IOPC": input, output, parameter, computed, or '-' for each flag that is not set.
void flag_letters(const ggml_tensor * t, char out[5]) {
    const int32_t flags[] = {GGML_TENSOR_FLAG_INPUT, GGML_TENSOR_FLAG_OUTPUT, GGML_TENSOR_FLAG_PARAM,
                             GGML_TENSOR_FLAG_COMPUTE};
    const char letters[] = "IOPC";
    for (int i = 0; i < 4; ++i)
        out[i] = (t->flags & flags[i]) ? letters[i] : '-';
    out[4] = '\0';
}

void log_tensor(const char * kind, int index, const ggml_tensor * t) {
    char flags[5];
    flag_letters(t, flags);
    log(GGML_LOG_LEVEL_INFO, " - %s %3d: [%5" PRId64 ", %5" PRId64 ", %5" PRId64 ", %5" PRId64 "] %-16s %-5s %s %s\n",
        kind, index, t->ne[0], t->ne[1], t->ne[2], t->ne[3], ggml_op_desc(t), ggml_type_name(t->type), flags,
        t->name);
}

const char * fill_colour(const ggml_tensor * t) {
    if (t->flags & GGML_TENSOR_FLAG_PARAM) return "yellow";
    if (t->flags & GGML_TENSOR_FLAG_INPUT) return "lightblue";
    if (t->flags & GGML_TENSOR_FLAG_OUTPUT) return "lightgreen";
    return t->op == GGML_OP_NONE ? "pink" : "white";
}

void dot_tensor(FILE * file, const ggml_tensor * t) {
    std::fprintf(file,
                 "  \"%p\" [style=filled, fillcolor=%s, shape=record, label=\"%s | %s | [%" PRId64 ", %" PRId64
                 ", %" PRId64 ", %" PRId64 "] | %s\"];\n",
                 static_cast<const void *>(t), fill_colour(t), t->name[0] ? t->name : "(unnamed)",
                 ggml_op_desc(t), t->ne[0], t->ne[1], t->ne[2], t->ne[3], ggml_type_name(t->type));
}

void dot_edges(FILE * file, const ggml_tensor * t) {
    for (int i = 0; i < GGML_MAX_SRC; ++i) {
        if (!t->src[i]) continue;
        std::fprintf(file, "  \"%p\" -> \"%p\" [label=\"src%d\"];\n", static_cast<const void *>(t->src[i]),
                     static_cast<const void *>(t), i);
    }
}

}  // namespace

extern "C" {

void ggml_graph_print(const ggml_cgraph * cgraph) {
    log(GGML_LOG_LEVEL_INFO, "=== GRAPH: %d nodes, %d leafs ===\n", ggml_graph_n_nodes(cgraph),
        ggml_graph_n_leafs(cgraph));
    for (int i = 0; i < ggml_graph_n_nodes(cgraph); ++i)
        log_tensor("node", i, ggml_graph_node(cgraph, i));
    for (int i = 0; i < ggml_graph_n_leafs(cgraph); ++i)
        log_tensor("leaf", i, ggml_graph_leaf(cgraph, i));
    log(GGML_LOG_LEVEL_INFO, "========================================\n");
}

void ggml_graph_dump_dot(const ggml_cgraph * gb, const ggml_cgraph *, const char * filename) {
    FILE * file = std::fopen(filename, "w");
    if (!file) {
        log(GGML_LOG_LEVEL_ERROR, "ggml_graph_dump_dot: cannot open '%s' for writing\n", filename);
        return;
    }
    std::fprintf(file, "digraph G {\n  newrank = true;\n  rankdir = TB;\n");
    for (int i = 0; i < ggml_graph_n_leafs(gb); ++i)
        dot_tensor(file, ggml_graph_leaf(gb, i));
    for (int i = 0; i < ggml_graph_n_nodes(gb); ++i) {
        dot_tensor(file, ggml_graph_node(gb, i));
        dot_edges(file, ggml_graph_node(gb, i));
    }
    std::fprintf(file, "}\n");
    std::fclose(file);
    log(GGML_LOG_LEVEL_INFO, "ggml_graph_dump_dot: wrote %s (render: dot -Tpng %s -o %s.png)\n", filename,
        filename, filename);
}

}  // extern "C"
