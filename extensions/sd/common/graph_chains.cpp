// Making fusion chains consecutive before matching: the optimize callbacks of the pack's rules.
#include "common/pack.h"

namespace sd {
namespace {

// Delays chain's leading links past the nodes before each next link; whether anything moved.
bool make_consecutive(ggml_cgraph * graph, const std::vector<int> & chain) {
    bool moved = false;
    int start = chain[0];  // links 0 .. k - 1 sit at [start, start + k)
    for (size_t k = 1; k < chain.size(); ++k) {
        const int n = static_cast<int>(k);
        if (chain[k] == start + n) continue;
        if (!ggml_ext_graph_delay(graph, start, n, chain[k] - 1)) return moved;
        start = chain[k] - n;  // later positions are unchanged by the move
        moved = true;
    }
    return moved;
}

}  // namespace

void make_chains_consecutive(ggml_cgraph * graph, const std::function<std::vector<int>(int)> & chain_at) {
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        const std::vector<int> chain = chain_at(i);
        if (!chain.empty() && make_consecutive(graph, chain)) --i;  // a crossed node now sits at i
    }
}

int next_consumer(const ggml_cgraph * graph, int producer, int from) {
    const ggml_tensor * p = ggml_graph_node(graph, producer);
    for (int i = from; i < ggml_graph_n_nodes(graph); ++i)
        for (const ggml_tensor * src : ggml_graph_node(graph, i)->src)
            if (src == p) return i;
    return -1;
}

}  // namespace sd
