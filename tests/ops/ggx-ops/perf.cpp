// `ggx-ops perf`: large-shape cases timed on every device, as GFLOP/s or GB/s and as a fraction of
// the machine's roofline (../shared/tools/roofline).
#include <ggml-alloc.h>
#include <ggml-ext.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "common/roofline.h"
#include "inputs.h"
#include "runner.h"

namespace ggx::ops {

namespace {

constexpr size_t kContextBytes = size_t{4} << 20;
constexpr double kMinSeconds = 1.0;
constexpr int kMinRuns = 3, kMaxRuns = 200;

struct Roofline {
    double gflops = 0.0, gbs = 0.0;  // best FP32 FMA rate and best DRAM bandwidth measured
    std::string note;                // why the ratio is unavailable, if it is
};

std::string roofline_tool() { return std::string(GGX_OPS_SOURCE_DIR) + "/../shared/tools/roofline"; }

std::string run_roofline_tool() {
    std::unique_ptr<FILE, decltype(&pclose)> pipe(popen((roofline_tool() + " 2>/dev/null").c_str(), "r"),
                                                  &pclose);
    std::string out;
    char buf[512];
    while (pipe && std::fgets(buf, sizeof buf, pipe.get()))
        out += buf;
    return out;
}

Roofline load_roofline(const std::string & option) {
    const std::string json = option.empty() ? run_roofline_tool() : tools::roofline_json(option);
    Roofline r;
    r.gflops = std::max(tools::roofline_number(json, "fp32_fma_gflops_all"),
                        tools::roofline_number(json, "fp32_fma_gflops_1t"));
    for (const char * key :
         {"dram_triad_gbs_all", "dram_read_gbs_all", "dram_triad_gbs_1t", "dram_read_gbs_1t"}) {
        r.gbs = std::max(r.gbs, tools::roofline_number(json, key));
    }
    if (r.gflops <= 0.0 || r.gbs <= 0.0) {
        r.note = "roofline unavailable (no figures from " +
                 (option.empty() ? roofline_tool() : "'" + option + "'") + ")";
    }
    return r;
}

// Seeded values for every leaf owner, converted row by row with the library's row conversion.
bool fill_leaves(ggml_context * ctx, const Graph & g, Rng & rng) {
    for (ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (t->view_src || t->op != GGML_OP_NONE) continue;
        const size_t row_bytes = ggml_row_size(t->type, t->ne[0]);
        std::vector<uint8_t> host(ggml_nbytes(t));
        std::vector<double> values(static_cast<size_t>(t->ne[0]));
        std::vector<float> row(values.size());
        for (int64_t r = 0; r < ggml_nrows(t); ++r) {
            generate_row(g.gen_of(t), rng, r, values.data(), t->ne[0]);
            std::copy(values.begin(), values.end(), row.begin());
            ggml_quantize_row(t->type, row.data(), host.data() + r * row_bytes, t->ne[0]);
        }
        if (ggml_ext_backend_tensor_set(t, host.data(), 0, host.size()) != GGML_STATUS_SUCCESS) return false;
    }
    return true;
}

double owner_bytes(ggml_context * ctx) {
    double bytes = 0.0;
    for (ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (!t->view_src) bytes += static_cast<double>(ggml_nbytes(t));
    }
    return bytes;
}

// Median seconds per run (after one warm-up run), or a negative value when compute fails.
double time_graph(ggml_backend_t backend, ggml_cgraph * graph) {
    if (ggml_backend_graph_compute(backend, graph) != GGML_STATUS_SUCCESS) return -1.0;
    std::vector<double> runs;
    double total = 0.0;
    while (runs.size() < kMaxRuns && (runs.size() < kMinRuns || total < kMinSeconds)) {
        const auto start = std::chrono::steady_clock::now();
        if (ggml_backend_graph_compute(backend, graph) != GGML_STATUS_SUCCESS) return -1.0;
        runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        total += runs.back();
    }
    std::nth_element(runs.begin(), runs.begin() + runs.size() / 2, runs.end());
    return runs[runs.size() / 2];
}

void print_result(const Case & c, const Device & device, double seconds, double bytes,
                  const Roofline & roof) {
    const double gflops = c.flops / seconds * 1e-9, gbs = bytes / seconds * 1e-9;
    std::printf("%-64s %-5s %10.3f ms %9.1f GFLOP/s %8.1f GB/s", c.name.c_str(), device.name.c_str(),
                seconds * 1e3, gflops, gbs);
    if (!roof.note.empty()) {
        std::printf("  ratio unavailable\n");
        return;
    }
    const double flop_time = c.flops * 1e-9 / roof.gflops, byte_time = bytes * 1e-9 / roof.gbs;
    std::printf("  %5.2f of roofline (%s-bound)\n", std::max(flop_time, byte_time) / seconds,
                flop_time > byte_time ? "compute" : "memory");
}

std::string run_one(const Case & c, const Device & device, uint64_t seed, const Roofline & roof) {
    std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx(ggml_init({kContextBytes, nullptr, true}),
                                                            &ggml_free);
    Graph g(ctx.get());
    ggml_tensor * out = c.build(g);
    if (!out)
        return std::string("constructor failed: ") +
               (ggml_get_error(ctx.get()) ? ggml_get_error(ctx.get()) : "");
    ggml_cgraph * graph = ggml_new_graph_custom(ctx.get(), 256, false);
    ggml_build_forward_expand(graph, out);
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        if (!ggml_backend_supports_op(device.backend, ggml_graph_node(graph, i)))
            return "skipped: not supported";
    }
    std::unique_ptr<ggml_backend_buffer, decltype(&ggml_backend_buffer_free)> buffer(
        ggml_backend_alloc_ctx_tensors_from_buft(ctx.get(), device.buft), &ggml_backend_buffer_free);
    Rng rng(case_seed(seed, c.name));
    if (!buffer || !fill_leaves(ctx.get(), g, rng))
        return std::string("allocation: ") + ggml_backend_get_last_error();
    const double seconds = time_graph(device.backend, graph);
    if (seconds < 0.0) return std::string("compute: ") + ggml_backend_get_last_error();
    print_result(c, device, seconds, owner_bytes(ctx.get()), roof);
    return "";
}

}  // namespace

int run_perf(const std::vector<Case> & cases, const Options & options) {
    const Roofline roof = load_roofline(options.roofline);
    if (roof.note.empty()) {
        std::printf(
            "roofline: %.1f GFLOP/s FP32 FMA, %.1f GB/s DRAM (best figures of ../shared/tools/roofline)\n",
            roof.gflops, roof.gbs);
    } else {
        std::printf("%s: printing absolute figures only\n", roof.note.c_str());
    }
    std::vector<Device> devices = open_devices(options.device);
    int failed = 0;
    for (const Device & device : devices) {
        for (const Case & c : cases) {
            if (!c.perf || !selected(c, options)) continue;
            const std::string error = run_one(c, device, options.seed, roof);
            if (error.empty()) continue;
            std::printf("%-64s %-5s %s\n", c.name.c_str(), device.name.c_str(), error.c_str());
            failed += error.rfind("skipped", 0) != 0;
        }
    }
    const bool any_device = !devices.empty();
    if (!any_device) std::printf("no device matches '%s'\n", options.device.c_str());
    free_devices(devices);
    return failed == 0 && any_device ? 0 : 1;
}

}  // namespace ggx::ops
