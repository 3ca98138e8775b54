// The steps of a scheduler's current plan through the public plan query (ggml_ext_sched_get_step),
// for the tools' reports: which fusion rules fired and which extension kernels run.
#pragma once

#include <ggml-ext.h>

#include <cstring>
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

// Whether the plan has a step fused by rule.
inline bool fusion_fired(ggml_backend_sched_t sched, const char * rule) {
    for (const ggml_ext_sched_step & s : plan_steps(sched))
        if (s.kind == GGML_EXT_STEP_FUSION && std::strcmp(s.name, rule) == 0) return true;
    return false;
}

}  // namespace ggx::tools
