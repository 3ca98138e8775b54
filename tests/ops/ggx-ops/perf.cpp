// `ggx-ops perf`: large-shape cases timed on every device, as GFLOP/s or GB/s and as a fraction of
// the machine's roofline (../shared/tools/roofline) for the compute unit the case's kernel runs on
// (FMA, int8 dot, AMX-INT8, AMX-BF16), so no ratio is measured against another unit's roof.
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

// The compute units whose peaks the roofline tool measures.
enum Unit { kFma, kInt8Dot, kAmxInt8, kAmxBf16, kUnits };
constexpr const char * kUnitNames[kUnits] = {"FMA", "int8 dot", "AMX-INT8", "AMX-BF16"};
constexpr const char * kUnitKeys[kUnits] = {"fp32_fma_gflops_all", "int8_dot_gops_all", "amx_int8_gops_all",
                                            "amx_bf16_gflops_all"};

struct Roofline {
    double peak[kUnits] = {};  // G(FL)OP/s of each unit, 0 where the machine has none
    double gbs = 0.0;          // best DRAM bandwidth measured
    std::string note;          // why the ratio is unavailable, if it is
};

// The unit the CPU kernels run a case's heaviest node on (docs/quantization.md, docs/ops.md): the
// int8 products of quantized weights with up to 8 columns, BF16 weights with 16 or more on AMX-BF16,
// Q8_0 / Q4_0 weights with 16 or more and sd.linear_i8 on AMX-INT8 (sd.linear_i8 on int8 dots without
// it); FMA otherwise and on other devices.
Unit unit_of(const ggml_cgraph * graph, const Device & device, const Roofline & roof) {
    if (!device.is_cpu) return kFma;
    Unit unit = kFma;
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        const ggml_tensor * node = ggml_graph_node(graph, i);
        const ggml_tensor * a = node->src[0];
        if (node->op == GGML_OP_MUL_MAT && a && node->src[1]) {
            const int64_t n = node->src[1]->ne[1];
            if (ggml_is_quantized(a->type) && n <= 8 && a->ne[0] % 256 == 0) unit = kInt8Dot;
            if (a->type == GGML_TYPE_BF16 && n >= 16 && tools::cpu_has_feature("AMX_BF16")) unit = kAmxBf16;
            const bool amx_int8_weights = a->type == GGML_TYPE_Q8_0 || a->type == GGML_TYPE_Q4_0;
            if (amx_int8_weights && n >= 16 && tools::cpu_has_feature("AMX_INT8")) unit = kAmxInt8;
        } else if (node->op == GGML_OP_CUSTOM && a && a->type == GGML_TYPE_I8) {
            unit = tools::cpu_has_feature("AMX_INT8") ? kAmxInt8 : kInt8Dot;
        }
    }
    return roof.peak[unit] > 0.0 ? unit : kFma;
}

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
    for (int u = 0; u < kUnits; ++u)
        r.peak[u] = tools::roofline_number(json, kUnitKeys[u]);
    r.peak[kFma] = std::max(r.peak[kFma], tools::roofline_number(json, "fp32_fma_gflops_1t"));
    for (const char * key :
         {"dram_triad_gbs_all", "dram_read_gbs_all", "dram_triad_gbs_1t", "dram_read_gbs_1t"}) {
        r.gbs = std::max(r.gbs, tools::roofline_number(json, key));
    }
    if (r.peak[kFma] <= 0.0 || r.gbs <= 0.0) {
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

void print_result(const Case & c, const Device & device, double seconds, double bytes, Unit unit,
                  const Roofline & roof) {
    const double gflops = c.flops / seconds * 1e-9, gbs = bytes / seconds * 1e-9;
    std::printf("%-64s %-5s %10.3f ms %9.1f GFLOP/s %8.1f GB/s", c.name.c_str(), device.name.c_str(),
                seconds * 1e3, gflops, gbs);
    if (!roof.note.empty()) {
        std::printf("  ratio unavailable\n");
        return;
    }
    const double flop_time = c.flops * 1e-9 / roof.peak[unit], byte_time = bytes * 1e-9 / roof.gbs;
    std::printf("  %5.2f of roofline (%s-bound, %s)\n", std::max(flop_time, byte_time) / seconds,
                flop_time > byte_time ? "compute" : "memory", kUnitNames[unit]);
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
    print_result(c, device, seconds, owner_bytes(ctx.get()), unit_of(graph, device, roof), roof);
    return "";
}

}  // namespace

int run_perf(const std::vector<Case> & cases, const Options & options) {
    const Roofline roof = load_roofline(options.roofline);
    if (roof.note.empty()) {
        std::printf("roofline (../shared/tools/roofline):");
        for (int u = 0; u < kUnits; ++u)
            if (roof.peak[u] > 0.0) std::printf(" %s %.1f G(FL)OP/s,", kUnitNames[u], roof.peak[u]);
        std::printf(" DRAM %.1f GB/s; each case's ratio is to the unit its kernel runs on\n", roof.gbs);
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
