// The steps of a scheduler's current plan through the public plan query (ggml_ext_sched_get_step),
// for the tools' reports and the tests: which fusion rules fired, on which nodes, and which extension
// kernels run. (Explain mode's text is for people; programs read the plan from here.)
#pragma once

#include <ggml-backend.h>
#include <ggml-ext.h>
#include <ggml.h>

#include <cstring>
#include <string>
#include <vector>

namespace ggx::tools {

inline std::vector<ggml_ext_sched_step> plan_steps(ggml_backend_sched_t sched) {
    std::vector<ggml_ext_sched_step> steps;
    ggml_ext_sched_step step{};
    step.struct_size = sizeof step;
    for (int i = 0; ggml_ext_sched_get_step(sched, i, &step); ++i)
        steps.push_back(step);
    return steps;
}

// The number of steps of the plan of kind named name (a kernel's or fusion rule's name, "native"; NULL:
// any name).
inline int count_steps(ggml_backend_sched_t sched, ggml_ext_step_kind kind, const char * name = nullptr) {
    int n = 0;
    for (const ggml_ext_sched_step & s : plan_steps(sched))
        n += s.kind == kind && (!name || std::strcmp(s.name, name) == 0);
    return n;
}

// Whether the plan has a step fused by rule.
inline bool fusion_fired(ggml_backend_sched_t sched, const char * rule) {
    return count_steps(sched, GGML_EXT_STEP_FUSION, rule) > 0;
}

// The names of the nodes of each step fused by rule, in plan order.
inline std::vector<std::vector<std::string>> fused_node_names(ggml_backend_sched_t sched, const char * rule) {
    std::vector<std::vector<std::string>> ranges;
    for (const ggml_ext_sched_step & s : plan_steps(sched)) {
        if (s.kind != GGML_EXT_STEP_FUSION || std::strcmp(s.name, rule) != 0) continue;
        std::vector<std::string> names;
        for (int k = 0; k < s.n_nodes; ++k)
            names.emplace_back(s.nodes[k]->name);
        ranges.push_back(std::move(names));
    }
    return ranges;
}

// The plan in one line, for failure messages: "split 0 on Vulkan0: native x3, sd.linear_i8.vulkan
// (kernel), sd.linear_i8_swiglu.vulkan (fusion of 2); split 1 on CPU: ...".
inline std::string describe_plan(ggml_backend_sched_t sched) {
    std::string text;
    int split = -1;
    for (const ggml_ext_sched_step & s : plan_steps(sched)) {
        if (s.split != split) {
            if (split >= 0) text += "; ";
            split = s.split;
            text += "split " + std::to_string(split) + " on " + ggml_backend_name(s.backend) + ": ";
        } else {
            text += ", ";
        }
        text += s.name;
        if (s.kind == GGML_EXT_STEP_NATIVE) text += " x" + std::to_string(s.n_nodes);
        if (s.kind == GGML_EXT_STEP_KERNEL) text += " (kernel)";
        if (s.kind == GGML_EXT_STEP_FUSION) text += " (fusion of " + std::to_string(s.n_nodes) + ")";
    }
    return text.empty() ? "no plan steps" : "plan: " + text;
}

}  // namespace ggx::tools
