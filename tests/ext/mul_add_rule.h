// A toy fusion rule shared by the fusion and graph-delay suites: a MUL followed by an ADD that reads
// it, fused into out = a * b + c, on a virtual device of its own (natively MUL, ADD and SQR) beside
// a CPU backend. Optionally its optimize callback delays each MUL to just before its ADD.
#pragma once

#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "support/test_util.h"

namespace ggx::test {

struct MulAddRule {
    std::atomic<int> matches{0}, executes{0}, delays{0};
};

// The operand of add that a MUL produced, or nullptr.
inline const ggml_tensor * mul_operand(const ggml_tensor * add) {
    for (const ggml_tensor * src : {add->src[0], add->src[1]})
        if (src && src->op == GGML_OP_MUL) return src;
    return nullptr;
}

inline int match_mul_add(ggml_backend_dev_t, const ggml_cgraph * graph, int first, void * user) {
    ++static_cast<MulAddRule *>(user)->matches;
    if (first + 1 >= ggml_graph_n_nodes(graph)) return 0;
    const ggml_tensor * mul = ggml_graph_node(graph, first);
    const ggml_tensor * add = ggml_graph_node(graph, first + 1);
    return mul->op == GGML_OP_MUL && add->op == GGML_OP_ADD && mul_operand(add) == mul &&
                   ggml_are_same_shape(mul, add) && ggml_are_same_shape(mul->src[0], mul->src[1]) &&
                   ggml_are_same_shape(add->src[0], add->src[1])
               ? 2
               : 0;
}

// One rounding for the product, one for the sum, in the ADD's operand order: equal to native.
inline ggml_status execute_mul_add(const ggml_ext_fusion_execute_params * params) {
    ++static_cast<MulAddRule *>(params->user_data)->executes;
    const ggml_tensor * mul = params->nodes[0];
    const ggml_tensor * add = params->nodes[1];
    const bool mul_first = add->src[0] == mul;
    const auto * a = static_cast<const float *>(mul->src[0]->data);
    const auto * b = static_cast<const float *>(mul->src[1]->data);
    const auto * c = static_cast<const float *>((mul_first ? add->src[1] : add->src[0])->data);
    auto * out = static_cast<float *>(add->data);
    for (int64_t i = 0; i < ggml_nelements(add); ++i) {
        const float product = a[i] * b[i];
        out[i] = mul_first ? product + c[i] : c[i] + product;
    }
    return GGML_STATUS_SUCCESS;
}

// Delays every MUL read by an ADD to just before that ADD (idempotent: adjacent pairs stay).
inline void optimize_mul_add(ggml_backend_dev_t, ggml_cgraph * graph, void * user) {
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        const ggml_tensor * add = ggml_graph_node(graph, i);
        const ggml_tensor * mul = add->op == GGML_OP_ADD ? mul_operand(add) : nullptr;
        if (!mul) continue;
        for (int j = 0; j < i - 1; ++j)
            if (ggml_graph_node(graph, j) == mul && ggml_ext_graph_delay(graph, j, 1, i - 1))
                ++static_cast<MulAddRule *>(user)->delays;
    }
}

// The rule registered under `name` on a fresh virtual device named `device_prefix` + a counter.
struct MulAddRig {
    MulAddRig(const char * device_prefix, const char * name, bool with_optimize, uint32_t flags = 0) {
        static std::atomic<int> counter{0};
        const std::string device_name = device_prefix + std::to_string(counter++);
        const ggml_op ops[] = {GGML_OP_MUL, GGML_OP_ADD, GGML_OP_SQR};
        device = ggml_backend_cpu_add_virtual_device(device_name.c_str(), ops, 3);
        backend.reset(ggml_backend_dev_init(device, nullptr));
        cpu.reset(ggml_backend_cpu_init());
        ggml_ext_fusion_desc d{};
        d.struct_size = sizeof d;
        d.version = GGML_EXT_FUSION_DESC_VERSION;
        d.name = name;
        d.optimize = with_optimize ? optimize_mul_add : nullptr;
        d.match = match_mul_add;
        d.execute = execute_mul_add;
        d.user_data = &rule;
        d.flags = flags;
        EXPECT_TRUE(ggml_ext_register_fusion(device, &d)) << ggml_backend_get_last_error();
    }
    Sched sched(bool parallel = false) {
        ggml_backend_t list[] = {backend.get(), cpu.get()};
        return Sched(ggml_backend_sched_new(list, nullptr, 2, 256, parallel, false));
    }
    MulAddRule rule;
    ggml_backend_dev_t device;
    Backend backend, cpu;
};

}  // namespace ggx::test
