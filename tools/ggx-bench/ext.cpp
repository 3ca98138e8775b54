// ggx-bench ext: the cost of dispatching an extension kernel. A chain of 1,000 SCALE nodes on 16 floats,
// allocated once by a scheduler on the CPU backend (one thread) and computed many times, once with a
// registered override selected for every node (preferred; it does the same scalar work on the calling
// thread) and once native (the device's extension kernels disabled, so the plan is one native range).
#include <ggml-ext-params.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kNodes = 1000;
constexpr int kComputes = 200;  // per timed repeat
constexpr int kRepeats = 7;     // the best repeat is reported

bool scale_supports(ggml_backend_dev_t, const ggml_tensor * node, void *) {
    return node->type == GGML_TYPE_F32 && node->src[0]->type == GGML_TYPE_F32 &&
           ggml_is_contiguous(node->src[0]);
}
bool scale_preferred(ggml_backend_dev_t, const ggml_tensor *, void *) { return true; }

ggml_status scale_execute(const ggml_ext_execute_params * params) {
    const ggml_tensor * y = params->node;
    ggml_ext_scale_params p{};
    ggml_ext_get_op_params(y, GGML_OP_SCALE, &p, sizeof p);
    const float s = p.scale, b = p.bias;
    const auto * in = static_cast<const float *>(y->src[0]->data);
    auto * out = static_cast<float *>(y->data);
    const int64_t n = ggml_nelements(y);
    for (int64_t i = 0; i < n; ++i)
        out[i] = in[i] * s + b;
    return GGML_STATUS_SUCCESS;
}

bool register_override(ggml_backend_dev_t device) {
    static const bool registered = [device] {
        ggml_ext_kernel_desc desc{};
        desc.struct_size = sizeof desc;
        desc.version = GGML_EXT_KERNEL_DESC_VERSION;
        desc.name = "ggx_bench.scale.cpu";
        desc.op = GGML_OP_SCALE;
        desc.supports = scale_supports;
        desc.preferred = scale_preferred;
        desc.execute = scale_execute;
        return ggml_ext_register_kernel(device, &desc);
    }();
    return registered;
}

struct Timing {
    double us_per_node = 0.0;
    std::string selected;
    float checksum = 0.0f;
};

// Places and allocates the graph once (after a reset: the selection policy may have changed), then
// times kComputes computations per repeat.
bool time_graph(ggml_backend_sched_t sched, ggml_cgraph * graph, ggml_tensor * x, ggml_tensor * y,
                Timing & t) {
    ggml_backend_sched_reset(sched);
    t.selected =
        ggml_ext_dev_selected_kernel(ggml_backend_get_device(ggml_backend_sched_get_backend(sched, 0)), y);
    bool ok = ggml_backend_sched_alloc_graph(sched, graph);
    const std::vector<float> ones(16, 1.0f);
    if (ok) ggml_backend_tensor_set(x, ones.data(), 0, sizeof(float) * ones.size());
    double best = 1e30;
    for (int r = 0; ok && r < kRepeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; ok && i < kComputes; ++i)
            ok = ggml_backend_sched_graph_compute(sched, graph) == GGML_STATUS_SUCCESS;
        best =
            std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    if (ok) ggml_backend_tensor_get(y, &t.checksum, 0, sizeof t.checksum);
    t.us_per_node = best / kComputes / kNodes * 1e6;
    return ok;
}

}  // namespace

std::string ext_report() {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(cpu, 1);
    ggml_backend_dev_t device = ggml_backend_get_device(cpu);
    ggml_context * ctx = ggml_init(
        {ggml_tensor_overhead() * (kNodes + 16) + ggml_graph_overhead_custom(kNodes + 16, false), nullptr, true});
    ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    ggml_set_input(x);
    ggml_tensor * y = x;
    for (int i = 0; i < kNodes; ++i)
        y = ggml_scale(ctx, y, i % 2 ? 2.0f : 0.5f);
    ggml_set_output(y);
    ggml_cgraph * graph = ggml_new_graph_custom(ctx, kNodes + 16, false);
    ggml_build_forward_expand(graph, y);
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, nullptr, 1, kNodes + 16, false, false);

    std::string error;
    Timing native, extension;
    const bool was_enabled = ggml_ext_dev_get_enabled(device);
    if (!register_override(device)) error = ggml_backend_get_last_error();
    ggml_ext_dev_set_enabled(device, false);
    if (error.empty() && !time_graph(sched, graph, x, y, native)) error = ggml_backend_get_last_error();
    ggml_ext_dev_set_enabled(device, true);
    if (error.empty() && !time_graph(sched, graph, x, y, extension)) error = ggml_backend_get_last_error();
    ggml_ext_dev_set_enabled(device, was_enabled);
    ggml_backend_sched_free(sched);
    ggml_free(ctx);
    ggml_backend_free(cpu);

    char out[640];
    if (!error.empty()) {
        std::snprintf(out, sizeof out, "{\"error\": \"%s\"}", error.substr(0, 400).c_str());
        return out;
    }
    std::snprintf(out, sizeof out,
                  "{\"nodes\": %d, \"elements\": 16, \"threads\": 1, \"computes\": %d, "
                  "\"native_selected\": \"%s\", \"extension_selected\": \"%s\", "
                  "\"native_us_per_node\": %.4f, \"extension_us_per_node\": %.4f, "
                  "\"extension_overhead_us_per_node\": %.4f, \"goal_overhead_us_per_node\": 1.0, "
                  "\"results_agree\": %s}",
                  kNodes, kComputes, native.selected.c_str(), extension.selected.c_str(), native.us_per_node,
                  extension.us_per_node, extension.us_per_node - native.us_per_node,
                  native.checksum == extension.checksum ? "true" : "false");
    return out;
}
