// For the fusion suites: reading a scheduler's explanation (ggml_ext_sched_set_explain) for one rule,
// and switching the Vulkan fusion rules off for a scope.
#pragma once

#include <cstdlib>
#include <string>

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

// Sets GGML_VK_DISABLE_FUSION to value for one scope.
struct DisableVulkanFusion {
    explicit DisableVulkanFusion(const char * value) { setenv("GGML_VK_DISABLE_FUSION", value, 1); }
    ~DisableVulkanFusion() { unsetenv("GGML_VK_DISABLE_FUSION"); }
    DisableVulkanFusion(const DisableVulkanFusion &) = delete;
    DisableVulkanFusion & operator=(const DisableVulkanFusion &) = delete;
};

}  // namespace ggx::test
