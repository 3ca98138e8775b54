// For the fusion suites: reading a scheduler's explanation (ggml_ext_sched_set_explain) for one rule,
// and switching the Vulkan fusion rules off for a scope.
#pragma once

#include <ggml-backend.h>
#include <ggml-ext.h>
#include <ggml.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace ggx::test {

// The explanation's line about the rule's candidate range ("" when the rule matched nothing).
inline std::string candidate_line(const std::string & explanation, const std::string & rule) {
    const size_t at = explanation.find("fusion '" + rule + "' matched nodes");
    if (at == std::string::npos) return "";
    return explanation.substr(at, explanation.find('\n', at) - at);
}

// Whether the rule matched a range and the runtime accepted it.
inline bool fusion_accepted(const std::string & explanation, const std::string & rule) {
    const std::string line = candidate_line(explanation, rule);
    const std::string accepted = ": accepted";
    return line.size() > accepted.size() &&
           line.compare(line.size() - accepted.size(), accepted.size(), accepted) == 0;
}

// Plans graph on sched with explanations on: whether it was allocated, and the explanation.
inline bool alloc_explained(ggml_backend_sched_t sched, ggml_cgraph * graph, std::string * explanation) {
    ggml_ext_sched_set_explain(sched, true);
    const bool allocated = ggml_backend_sched_alloc_graph(sched, graph);
    *explanation = ggml_ext_sched_explanation(sched);
    return allocated;
}

// The names of graph's nodes in order (to observe a reordering).
inline std::vector<std::string> node_names(const ggml_cgraph * graph) {
    std::vector<std::string> names;
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i)
        names.emplace_back(ggml_graph_node(graph, i)->name);
    return names;
}

// Sets GGML_VK_DISABLE_FUSION to value for one scope.
struct DisableVulkanFusion {
    explicit DisableVulkanFusion(const char * value) { setenv("GGML_VK_DISABLE_FUSION", value, 1); }
    ~DisableVulkanFusion() { unsetenv("GGML_VK_DISABLE_FUSION"); }
    DisableVulkanFusion(const DisableVulkanFusion &) = delete;
    DisableVulkanFusion & operator=(const DisableVulkanFusion &) = delete;
};

}  // namespace ggx::test
