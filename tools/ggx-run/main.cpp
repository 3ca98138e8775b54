// ggx-run: a diffusion-transformer forward pass end to end, with and without the sd extension pack.
//
//   ggx-run [--device NAME] [--threads N] [--layers N] [--hidden N] [--heads N] [--tokens N]
//           [--weights int8-convrot|f32|f16|bf16|BLOCK-FORMAT] [--ext on|off|compare] [--steps N]
//           [--seed N] [--reference-device NAME] [--no-profile] [--json]
//
// Builds the built-in Z-Image/Flux-style DiT (model.h) with deterministic synthetic weights and runs
// --steps Euler steps of a flow-matching sampler (sigma 1 -> 0) from a fixed noise latent: each step
// one forward pass through a scheduler whose plan is reused. With --ext compare (the default) it runs
// the ext-on variant (sd pack kernels and fusions) and then the ext-off variant (native ops only, the
// extension kernels of every device disabled with ggml_ext_dev_set_enabled), profiles one forward
// pass of each node by node, and compares the outputs. With --reference-device it also runs the
// compared variant (ext off, or ext on with --ext on) on that device and compares the two devices.
// Exit status: 0 success, 1 a difference exceeded its bound, 2 usage or runtime error.
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/plan_steps.h"
#include "ggx-run/model.h"
#include "ggx-run/report.h"
#include "sd-ggml-ext.h"

namespace {

using namespace ggx::run;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Options {
    ModelConfig cfg;
    std::string device = "CPU";
    int threads = 0;
    std::string ext = "compare";
    int steps = 3;
    bool json = false;
    bool profile = true;
    std::string model_path, export_path;
    std::string reference_device;  // empty: no cross-device comparison
};

void usage(FILE * out) {
    std::fprintf(
        out,
        "usage: ggx-run [--device NAME] [--threads N] [--layers N] [--hidden N] [--heads N] [--tokens N]\n"
        "               [--weights int8-convrot|f32|f16|bf16|BLOCK-FORMAT] [--ext on|off|compare] [--steps N]\n"
        "               [--seed N] [--model PATH.gguf] [--export PATH.gguf] [--reference-device NAME]\n"
        "               [--no-profile] [--json]\n"
        "Runs a built-in diffusion transformer (defaults: 4 layers, hidden 1024, 8 heads, 1024 tokens,\n"
        "int8-convrot weights, 3 steps) with the sd extension pack on and off and compares them; with\n"
        "--reference-device, also compares the device's results with that device's (e.g. CPU).\n"
        "BLOCK-FORMAT: any block format ggx converts, by its ggml name (q8_0, q4_0, q4_K, iq4_nl, ...).\n");
}

bool parse_int(const char * s, int & v) {
    char * end = nullptr;
    const long x = std::strtol(s, &end, 10);
    if (!s[0] || *end || x < 0 || x > 1 << 24) return false;
    v = static_cast<int>(x);
    return true;
}

// 0: parsed; 1: --help printed; 2: error printed.
int parse(int argc, char ** argv, Options & o) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 1;
        }
        if (a == "--json") {
            o.json = true;
            continue;
        }
        if (a == "--no-profile") {
            o.profile = false;
            continue;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "ggx-run: %s needs a value (or is unknown)\n", a.c_str());
            usage(stderr);
            return 2;
        }
        const char * v = argv[++i];
        bool ok = true;
        if (a == "--device")
            o.device = v;
        else if (a == "--model")
            o.model_path = v;
        else if (a == "--export")
            o.export_path = v;
        else if (a == "--reference-device")
            o.reference_device = v;
        else if (a == "--threads")
            ok = parse_int(v, o.threads);
        else if (a == "--layers")
            ok = parse_int(v, o.cfg.layers);
        else if (a == "--hidden")
            ok = parse_int(v, o.cfg.hidden);
        else if (a == "--heads")
            ok = parse_int(v, o.cfg.heads);
        else if (a == "--tokens")
            ok = parse_int(v, o.cfg.tokens);
        else if (a == "--steps")
            ok = parse_int(v, o.steps) && o.steps >= 1;
        else if (a == "--seed") {
            char * end = nullptr;
            o.cfg.seed = std::strtoull(v, &end, 10);
            ok = *v && !*end;
        } else if (a == "--weights")
            ok = parse_weight_type(v, o.cfg.weights);
        else if (a == "--ext") {
            o.ext = v;
            ok = o.ext == "on" || o.ext == "off" || o.ext == "compare";
        } else {
            std::fprintf(stderr, "ggx-run: unknown option %s\n", a.c_str());
            usage(stderr);
            return 2;
        }
        if (!ok) {
            std::fprintf(stderr, "ggx-run: bad value '%s' for %s\n", v, a.c_str());
            return 2;
        }
    }
    return 0;
}

// The backends of a run: the chosen device first, a CPU backend last (the scheduler's fallback).
struct Backends {
    std::vector<ggml_backend_t> list;
    ggml_backend_t main = nullptr;
    ~Backends() {
        for (ggml_backend_t b : list)
            ggml_backend_free(b);
    }
};

bool init_backends(const Options & o, Backends & b, std::string & error) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_name(o.device.c_str());
    if (!dev) {
        error = "no device named '" + o.device + "'; devices:";
        for (size_t i = 0; i < ggml_backend_dev_count(); ++i)
            error += std::string(" ") + ggml_backend_dev_name(ggml_backend_dev_get(i));
        return false;
    }
    b.main = ggml_backend_dev_init(dev, nullptr);
    if (!b.main) {
        error = "cannot initialise device '" + o.device + "': " + ggml_backend_get_last_error();
        return false;
    }
    b.list.push_back(b.main);
    if (!ggml_backend_is_cpu(b.main)) {
        ggml_backend_t cpu = ggml_backend_cpu_init();
        if (!cpu) {
            error = "cannot initialise the CPU backend";
            return false;
        }
        b.list.push_back(cpu);
    }
    for (ggml_backend_t be : b.list)
        if (ggml_backend_is_cpu(be) && o.threads > 0) ggml_backend_cpu_set_n_threads(be, o.threads);
    return true;
}

void set_ext_enabled(const Backends & b, bool enabled) {
    for (ggml_backend_t be : b.list)
        ggml_ext_dev_set_enabled(ggml_backend_get_device(be), enabled);
}

// Fused ranges, extension kernels and the node count after fusion, from the plan query.
void count_plan_steps(ggml_backend_sched_t sched, VariantResult & v) {
    int removed = 0;
    for (const ggml_ext_sched_step & step : ggx::tools::plan_steps(sched)) {
        if (step.kind == GGML_EXT_STEP_FUSION) {
            ++v.fusions[step.name];
            removed += step.n_nodes - 1;
        } else if (step.kind == GGML_EXT_STEP_KERNEL) {
            ++v.ext_kernels[step.name];
        }
    }
    v.nodes_after_fusion = v.nodes - removed;
}

// Op family of a node for the profile: the extension operator's name, the native op (MUL_MAT split
// by weight type), or "views" for nodes that compute nothing.
std::string family(const ggml_tensor * t) {
    if (const ggml_ext_op_t op = ggml_ext_node_op(t)) return ggml_ext_op_name(op);
    switch (t->op) {
        case GGML_OP_VIEW:
        case GGML_OP_RESHAPE:
        case GGML_OP_PERMUTE:
        case GGML_OP_TRANSPOSE:
        case GGML_OP_NONE:
            return "views";
        case GGML_OP_MUL_MAT:
            return std::string("MUL_MAT ") + ggml_type_name(t->src[0]->type) +
                   (t->src[0]->type == GGML_TYPE_I8 ? " (sd.linear_i8)" : "");
        default:
            return ggml_op_desc(t);
    }
}

struct Profiler {
    const Forward * fwd = nullptr;
    Clock::time_point last;
    std::map<std::string, double> seconds, stages;
    static bool callback(ggml_tensor * t, bool ask, void * user) {
        auto * p = static_cast<Profiler *>(user);
        if (ask) return true;
        const auto now = Clock::now();
        const double s = std::chrono::duration<double>(now - p->last).count();
        p->seconds[family(t)] += s;
        const auto it = p->fwd->stage.find(t);
        p->stages[it == p->fwd->stage.end() ? kStageOther : it->second] += s;
        p->last = now;
        return true;
    }
};

struct Sched {
    ggml_backend_sched_t s = nullptr;
    ~Sched() {
        if (s) ggml_backend_sched_free(s);
    }
};

struct Progressor {
    Progress & bar;
    int done = 0;
    void step(const std::string & phase) { bar.set(phase, done++); }
};

bool run_variant(const Options & o, const Backends & b, bool ext, const ModelFile * file, VariantResult & v,
                 Progressor & progress, std::string & error) {
    const char * label = ext ? "ext on" : "ext off";
    set_ext_enabled(b, ext);
    v.ext = ext;
    const auto setup_start = Clock::now();
    progress.step(std::string(label) + ": weights");
    Model model;
    if (!create_model(model, o.cfg, ext, b.main, error, file)) return false;
    v.weight_bytes = model.weight_bytes;
    Forward fwd;
    if (!build_forward(fwd, model, error)) return false;
    v.nodes = ggml_graph_n_nodes(fwd.graph);

    const size_t graph_size = static_cast<size_t>(ggml_graph_size(fwd.graph)) + 64;
    std::vector<ggml_backend_t> backends = b.list;
    Sched sched;
    sched.s = ggml_backend_sched_new(backends.data(), nullptr, static_cast<int>(backends.size()), graph_size,
                                     false, false);
    if (!sched.s) {
        error = std::string("ggml_backend_sched_new: ") + ggml_backend_get_last_error();
        return false;
    }
    if (!ggml_backend_sched_alloc_graph(sched.s, fwd.graph)) {
        error = std::string(label) + ": allocating the graph failed: " + ggml_backend_get_last_error();
        return false;
    }
    count_plan_steps(sched.s, v);
    for (ggml_backend_t be : backends)
        v.compute_bytes += ggml_backend_sched_get_buffer_size(sched.s, be);

    const ModelConfig & c = model.cfg;
    const std::vector<float> pe = rope_pe(c);
    std::vector<float> x = initial_latent(c), vel(x.size());
    v.setup_seconds = since(setup_start);

    const auto upload = [&](float sigma) {
        const float t = sigma * 1000.0f;
        ggml_backend_tensor_set(fwd.pe, pe.data(), 0, ggml_nbytes(fwd.pe));
        ggml_backend_tensor_set(fwd.x, x.data(), 0, ggml_nbytes(fwd.x));
        ggml_backend_tensor_set(fwd.t, &t, 0, sizeof t);
    };
    const auto forward = [&](ggml_backend_sched_t s, ggml_cgraph * graph, float sigma) {
        upload(sigma);
        return ggml_backend_sched_graph_compute(s, graph);
    };
    for (int step = 0; step < o.steps; ++step) {
        progress.step(std::string(label) + ": step " + std::to_string(step + 1) + "/" +
                      std::to_string(o.steps));
        const float sigma = 1.0f - static_cast<float>(step) / static_cast<float>(o.steps);
        const float next = 1.0f - static_cast<float>(step + 1) / static_cast<float>(o.steps);
        const auto start = Clock::now();
        if (const ggml_status st = forward(sched.s, fwd.graph, sigma); st != GGML_STATUS_SUCCESS) {
            error = std::string(label) + ": compute failed (status " + std::to_string(st) +
                    "): " + ggml_backend_get_last_error();
            return false;
        }
        ggml_backend_tensor_get(fwd.out, vel.data(), 0, ggml_nbytes(fwd.out));
        v.step_seconds.push_back(since(start));
        if (step == 0) v.velocity = vel;
        for (size_t i = 0; i < x.size(); ++i)  // Euler step of the flow-matching ODE
            x[i] += (next - sigma) * vel[i];
    }
    v.latent = x;

    if (o.profile) {
        // A second scheduler with an eval callback that observes every node: the scheduler then
        // runs node by node (and matches no fusion), so each node's time is the gap between callbacks.
        progress.step(std::string(label) + ": profile");
        ggml_backend_sched_reset(sched.s);
        Sched prof;
        prof.s = ggml_backend_sched_new(backends.data(), nullptr, static_cast<int>(backends.size()),
                                        graph_size, false, false);
        Profiler p;
        p.fwd = &fwd;
        ggml_backend_sched_set_eval_callback(prof.s, &Profiler::callback, &p);
        x = initial_latent(c);
        if (!prof.s || !ggml_backend_sched_alloc_graph(prof.s, fwd.graph)) {
            error = std::string(label) + ": profiling allocation failed: " + ggml_backend_get_last_error();
            return false;
        }
        upload(1.0f);  // the profile times the compute only
        const auto start = Clock::now();
        p.last = start;
        if (ggml_backend_sched_graph_compute(prof.s, fwd.graph) != GGML_STATUS_SUCCESS) {
            error = std::string(label) + ": profiling run failed: " + ggml_backend_get_last_error();
            return false;
        }
        v.profile_seconds = since(start);
        p.seconds.erase("views");
        for (const auto & [name, s] : p.seconds)
            v.profile.emplace_back(name, s);
        std::sort(v.profile.begin(), v.profile.end(),
                  [](auto & a, auto & b2) { return a.second > b2.second; });
        for (const char * stage : {kStageLinear, kStageRope, kStageAttention, kStageOther})
            v.stages.emplace_back(stage, p.stages[stage]);
    }
    v.ran = true;
    return true;
}

bool within(const Difference & d, double nmse_bound, double max_abs_bound) {
    return d.nmse <= nmse_bound && d.max_abs <= max_abs_bound * d.ref_max_abs;
}

}  // namespace

int main(int argc, char ** argv) {
    const auto wall_start = Clock::now();
    // A model file's shapes are untrusted: a graph they break is reported ("graph construction
    // failed: ...") rather than aborted.
    ggml_ext_set_error_mode(GGML_EXT_ERROR_RETURN);
    Options o;
    if (const int rc = parse(argc, argv, o)) return rc == 1 ? 0 : 2;
    std::string error;
    std::unique_ptr<ModelFile> file;
    if (!o.model_path.empty()) {
        file = std::make_unique<ModelFile>();
        if (!file->open(o.model_path, error) || !config_from_gguf(*file, o.cfg, error)) {
            std::fprintf(stderr, "ggx-run: %s: %s\n", o.model_path.c_str(), error.c_str());
            return 2;
        }
    }
    if (!o.cfg.derive(error)) {
        std::fprintf(stderr, "ggx-run: %s\n", error.c_str());
        return 2;
    }
    if (sd_ggml_register_extensions() == SD_GGML_EXT_FAILED) {
        std::fprintf(stderr, "ggx-run: sd_ggml_register_extensions: %s\n", ggml_backend_get_last_error());
        return 2;
    }
    Backends b;
    if (!init_backends(o, b, error)) {
        std::fprintf(stderr, "ggx-run: %s\n", error.c_str());
        return 2;
    }

    Report r;
    r.cfg = o.cfg;
    r.device = ggml_backend_name(b.main);
    r.source = o.model_path.empty() ? "built-in, seed " + std::to_string(o.cfg.seed) : o.model_path;
    r.threads = ggml_backend_is_cpu(b.main) ? ggml_backend_cpu_get_n_threads(b.main)
                                            : static_cast<int>(std::thread::hardware_concurrency());
    r.steps = o.steps;
    r.ext_mode = o.ext;

    const bool want_on = o.ext != "off", want_off = o.ext != "on";
    const int per_variant = 1 + o.steps + (o.profile ? 1 : 0);
    const int reference_units = o.reference_device.empty() ? 0 : 1 + o.steps;
    Progress bar(per_variant * ((want_on ? 1 : 0) + (want_off ? 1 : 0)) + reference_units);
    Progressor progress{bar};
    bool ok = true;
    if (!o.export_path.empty()) {
        bar.set("export", 0);
        Model model;
        ok = create_model(model, o.cfg, true, b.main, error, file.get()) &&
             export_model(model, o.export_path, error);
        if (!ok) error = "--export " + o.export_path + ": " + error;
    }
    if (ok && want_on) ok = run_variant(o, b, true, file.get(), r.on, progress, error);
    if (ok && want_off) ok = run_variant(o, b, false, file.get(), r.off, progress, error);
    set_ext_enabled(b, true);
    // The reference device runs the variant compared across devices: ext off when it ran.
    Backends reference;
    if (ok && !o.reference_device.empty()) {
        Options ro = o;
        ro.device = o.reference_device;
        ro.profile = false;
        ok = init_backends(ro, reference, error) &&
             run_variant(ro, reference, !want_off, file.get(), r.reference, progress, error);
        set_ext_enabled(reference, true);
        if (ok) r.reference_device = ggml_backend_name(reference.main);
    }
    bar.finish();
    if (!ok) {
        std::fprintf(stderr, "ggx-run: %s\n", error.c_str());
        return 2;
    }

    // Bounds (docs in README.md): with float weights the only difference is RoPE, fused or as
    // sd.cpp's decomposed graph, which the pack documents as bit-identical; with int8-convrot, ext on
    // quantizes activations to int8 per row (ConvRot), ext off multiplies F32 activations by the
    // same (dequantized) weights.
    const bool int8 = o.cfg.weights.int8_convrot();
    r.nmse_bound = int8 ? 2e-3 : 1e-12;
    r.max_abs_bound = int8 ? 0.1 : 1e-5;
    if (r.on.ran && r.off.ran) {
        r.compared = true;
        r.velocity = compare(r.on.velocity, r.off.velocity);
        r.latent = compare(r.on.latent, r.off.latent);
        for (const Difference * d : {&r.velocity, &r.latent})
            r.within_bounds = r.within_bounds && within(*d, r.nmse_bound, r.max_abs_bound);
    }
    // Across devices the same ops run with different summation orders and transcendental functions.
    // With block-format weights the CPU's matrix-vector products (the modulation linears' one
    // column) also round the activations to int8 per 32 values (docs/quantization.md), which a GPU
    // does not: up to half a step, amax / 254, per element.
    const bool blocks = !int8 && ggml_is_quantized(o.cfg.weights.type);
    r.device_nmse_bound = blocks ? 1e-5 : 1e-6;
    r.device_max_abs_bound = blocks ? 5e-3 : 1e-3;
    if (r.reference.ran) {
        const VariantResult & compared = want_off ? r.off : r.on;
        r.device_velocity = compare(compared.velocity, r.reference.velocity);
        r.device_latent = compare(compared.latent, r.reference.latent);
        for (const Difference * d : {&r.device_velocity, &r.device_latent})
            r.within_bounds = r.within_bounds && within(*d, r.device_nmse_bound, r.device_max_abs_bound);
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    r.peak_rss_kib = usage.ru_maxrss;
    r.wall_seconds = since(wall_start);
    if (o.json)
        print_json(r);
    else
        print_table(r);
    return r.within_bounds ? 0 : 1;
}
