// `ggx-ops check`: every case on every device, compared with the oracle under the bound table,
// with guard bytes around every tensor.
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml-graph.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "bounds.h"
#include "guarded.h"
#include "inputs.h"
#include "reference/reference.h"
#include "reference/sd.h"
#include "runner.h"

namespace ggx::ops {

namespace {

constexpr size_t kContextBytes = size_t{4} << 20;
constexpr size_t kGraphSize = 256;
constexpr size_t kSchedGraphSize = 1024;  // the plan graph adds input copies and views

struct Outcome {
    enum class Status { Pass, Fail, Skip };
    Status status = Status::Pass;
    std::string message;
};

Outcome fail(std::string message) { return {Outcome::Status::Fail, std::move(message)}; }

bool is_layout_op(ggml_op op) {
    return op == GGML_OP_NONE || op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE ||
           op == GGML_OP_TRANSPOSE;
}

// Names every unnamed tensor ("leaf2", "node5 MUL_MAT") so messages can point at it.
void name_tensors(ggml_context * ctx) {
    int index = 0;
    for (ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t), ++index) {
        if (t->name[0]) continue;
        if (t->op == GGML_OP_NONE) {
            ggml_format_name(t, "leaf%d", index);
        } else {
            ggml_format_name(t, "node%d %s", index, ggml_op_desc(t));
        }
    }
}

std::string describe(const ggml_tensor * t) {
    return format("'%s' %s ", t->name, ggml_type_name(t->type)) +
           str(Shape{t->ne[0], t->ne[1], t->ne[2], t->ne[3]});
}

// The element where actual and expected differ most (a NaN/Inf disagreement first).
std::string worst_element(const std::vector<double> & actual, const std::vector<double> & expected) {
    if (actual.empty()) return "no elements";
    size_t worst = 0;
    double worst_diff = -1.0;
    for (size_t i = 0; i < actual.size(); ++i) {
        const double a = actual[i], e = expected[i];
        const bool both_nan = std::isnan(a) && std::isnan(e);
        double diff =
            std::isfinite(a) && std::isfinite(e) ? std::fabs(a - e) : (a == e || both_nan ? 0.0 : INFINITY);
        if (diff > worst_diff) {
            worst = i;
            worst_diff = diff;
        }
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "worst element %zu: got %.9g, expected %.9g", worst, actual[worst],
                  expected[worst]);
    return buf;
}

bool within(double error, double bound) { return bound == 0.0 ? error == 0.0 : error <= bound; }

// A packed ConvRot quantization (compared dequantized when its input carries rounding error).
bool is_packed_quantize(const ggml_tensor * t) {
    const char * name = ggml_ext_op_name(ggml_ext_node_op(t));
    return name && std::strcmp(name, ggx::ref::sd::kQuantize) == 0;
}

// A scheduler over the device's backend (and a CPU backend, the scheduler's last, for another
// device), freed with its CPU backend.
class Sched {
public:
    explicit Sched(ggml_backend_t backend, bool is_cpu) {
        backends_.push_back(backend);
        if (!is_cpu) {
            cpu_ = ggml_backend_cpu_init();
            if (cpu_) backends_.push_back(cpu_);
        }
        if (is_cpu || cpu_) {
            sched_ = ggml_backend_sched_new(backends_.data(), nullptr, static_cast<int>(backends_.size()),
                                            kSchedGraphSize, false, false);
        }
    }
    ~Sched() {
        if (sched_) ggml_backend_sched_free(sched_);
        if (cpu_) ggml_backend_free(cpu_);
    }
    Sched(const Sched &) = delete;
    Sched & operator=(const Sched &) = delete;
    ggml_backend_sched_t get() const { return sched_; }

private:
    std::vector<ggml_backend_t> backends_;
    ggml_backend_t cpu_ = nullptr;
    ggml_backend_sched_t sched_ = nullptr;
};

class CaseRun {
public:
    CaseRun(const Case & c, const Device & device, uint64_t seed, Usage & usage)
        : case_(c), device_(device), usage_(usage), rng_(seed), ctx_(nullptr, &ggml_free) {}

    Outcome run() {
        if (std::string error = build(); !error.empty()) return fail(error);
        if (const ggml_tensor * node = unsupported_node()) {
            std::string message = device_.name + " does not support " + describe(node);
            return device_.is_cpu ? fail(message) : Outcome{Outcome::Status::Skip, message};
        }
        GuardedBuffer buffer(device_.buft, ctx_.get());
        if (!buffer.error().empty()) return fail("allocation: " + buffer.error());
        if (std::string error = set_inputs(buffer); !error.empty()) return fail(error);
        if (std::string error = case_.sched ? compute_scheduled() : compute_direct(); !error.empty())
            return fail(error);
        try {
            oracle_.compute(graph_);
        } catch (const std::exception & e) {
            return fail(std::string("oracle: ") + e.what());
        }
        if (!buffer.download()) return fail(std::string("download: ") + ggml_backend_get_last_error());
        if (std::string error = buffer.check_guards(); !error.empty()) return fail(error);
        return compare_all(buffer);
    }

private:
    std::string build() {
        ctx_.reset(ggml_init({kContextBytes, nullptr, true}));
        if (!ctx_) return "cannot create a context";
        Graph g(ctx_.get());
        ggml_tensor * out = case_.build(g);
        const char * error = ggml_get_error(ctx_.get());
        if (!out || error) return std::string("constructor failed: ") + (error ? error : "no result");
        graph_ = ggml_new_graph_custom(ctx_.get(), kGraphSize, false);
        if (graph_) ggml_build_forward_expand(graph_, out);
        if (!graph_ || !ggml_graph_is_valid(graph_)) return "cannot build the graph";
        gens_ = std::move(g);
        name_tensors(ctx_.get());
        return "";
    }

    // Direct execution (never fuses); the extension kernels it selects are recorded.
    std::string compute_direct() {
        if (ggml_backend_graph_compute(device_.backend, graph_) != GGML_STATUS_SUCCESS)
            return std::string("compute: ") + ggml_backend_get_last_error();
        for (int i = 0; i < ggml_graph_n_nodes(graph_); ++i) {
            const char * kernel = ggml_ext_dev_selected_kernel(device_.dev, ggml_graph_node(graph_, i));
            if (kernel && std::strcmp(kernel, "native") != 0) usage_.kernels.insert(kernel);
        }
        return "";
    }

    // Through a scheduler, with every tensor already in the guarded buffer (the scheduler keeps
    // caller-allocated storage), so fusion rules can fire. The plan query says which kernels and
    // rules ran on the device; a fused range's intermediates are never computed, so they are not
    // compared.
    std::string compute_scheduled() {
        Sched sched(device_.backend, device_.is_cpu);
        if (!sched.get()) return std::string("scheduler: ") + ggml_backend_get_last_error();
        if (!ggml_backend_sched_alloc_graph(sched.get(), graph_))
            return std::string("scheduler allocation: ") + ggml_backend_get_last_error();
        if (ggml_backend_sched_graph_compute(sched.get(), graph_) != GGML_STATUS_SUCCESS)
            return std::string("scheduled compute: ") + ggml_backend_get_last_error();
        ggml_ext_sched_step step{};
        step.struct_size = sizeof step;
        for (int i = 0; ggml_ext_sched_get_step(sched.get(), i, &step); ++i) {
            if (step.backend != device_.backend) continue;
            if (step.kind == GGML_EXT_STEP_KERNEL) usage_.kernels.insert(step.name);
            if (step.kind != GGML_EXT_STEP_FUSION) continue;
            usage_.fusions.insert(step.name);
            fused_.push_back(step.name);
            for (int k = 0; k + 1 < step.n_nodes; ++k)
                eliminated_.insert(step.nodes[k]);
        }
        return "";
    }

    const ggml_tensor * unsupported_node() const {
        for (int i = 0; i < ggml_graph_n_nodes(graph_); ++i) {
            const ggml_tensor * node = ggml_graph_node(graph_, i);
            if (!ggml_backend_supports_op(device_.backend, node)) return node;
        }
        return nullptr;
    }

    // Seeded values for every leaf owner, written in its type, uploaded, read back from the
    // device and handed to the oracle exactly as the device holds them.
    std::string set_inputs(GuardedBuffer & buffer) {
        buffer.prefill();
        std::vector<ggml_tensor *> leaves;
        for (ggml_tensor * t = ggml_get_first_tensor(ctx_.get()); t;
             t = ggml_get_next_tensor(ctx_.get(), t)) {
            if (t->view_src || t->op != GGML_OP_NONE) continue;
            ggml_tensor host = buffer.host(t);
            ggx::ref::write_tensor(&host, generate(gens_.gen_of(t), rng_, t->ne));
            leaves.push_back(t);
        }
        if (!buffer.upload() || !buffer.download())
            return std::string("transfer: ") + ggml_backend_get_last_error();
        for (ggml_tensor * leaf : leaves) {
            ggml_tensor host = buffer.host(leaf);
            oracle_.set_input(leaf, ggx::ref::read_tensor(&host), true);
        }
        return "";
    }

    std::string compare(GuardedBuffer & buffer, const ggml_tensor * t, double bound) {
        ggml_tensor host = buffer.host(t);
        std::vector<double> actual = ggx::ref::read_tensor(&host);
        std::vector<double> expected = oracle_.values(t);
        if (bound > 0.0 && is_packed_quantize(t)) {
            // Codes are exact only for exact inputs: compare code * scale, allowing requantization.
            actual = ggx::ref::sd::dequantize_packed(t, actual);
            expected = ggx::ref::sd::dequantize_packed(t, expected);
            bound = std::max(bound, kRequantizeNmse);
        }
        const double error = ggx::ref::nmse(actual, expected);
        if (bound > 0.0 && error / bound >= worst_ratio_) {
            worst_ratio_ = error / bound;
            worst_ = "(worst: " + describe(t) + " nmse " + str(error) + ", bound " + str(bound) + "; " +
                     worst_element(actual, expected) + ")";
        }
        if (within(error, bound)) return "";
        char buf[96];
        std::snprintf(buf, sizeof buf, ": nmse %.3g > bound %.3g; ", error, bound);
        return describe(t) + buf + worst_element(actual, expected);
    }

    // The bound of a node: its own, or the loosest of the computed tensors it reads, since a copy
    // of a computed result carries that result's error. Recorded for the node's storage owner too.
    double propagate_bound(const ggml_tensor * node) {
        double bound = is_layout_op(node->op) ? 0.0 : nmse_bound(node);
        for (const ggml_tensor * src : node->src) {
            if (!src) continue;
            const ggml_tensor * owner = src->view_src ? src->view_src : src;
            for (const ggml_tensor * t : {src, owner}) {
                if (const auto it = bounds_.find(t); it != bounds_.end()) bound = std::max(bound, it->second);
            }
        }
        bounds_[node] = bound;
        if (node->view_src) bounds_[node->view_src] = std::max(bounds_[node->view_src], bound);
        // An AdamW step also updates its moments m and v (sources 2 and 3) in place.
        if (node->op == GGML_OP_OPT_STEP_ADAMW) {
            for (const ggml_tensor * moment : {node->src[2], node->src[3]}) {
                const ggml_tensor * owner = moment->view_src ? moment->view_src : moment;
                bounds_[owner] = std::max(bounds_[owner], bound);
            }
        }
        return bound;
    }

    // Every computed node under its bound; every leaf owner unchanged, or, when nodes write into
    // it (in-place results, copies into views), under the loosest bound of those nodes.
    Outcome compare_all(GuardedBuffer & buffer) {
        for (int i = 0; i < ggml_graph_n_nodes(graph_); ++i) {
            const ggml_tensor * node = ggml_graph_node(graph_, i);
            const double bound = propagate_bound(node);
            if (is_layout_op(node->op) || eliminated_.count(node)) continue;
            if (std::string error = compare(buffer, node, bound); !error.empty()) return fail(error);
        }
        for (ggml_tensor * t = ggml_get_first_tensor(ctx_.get()); t;
             t = ggml_get_next_tensor(ctx_.get(), t)) {
            if (t->view_src || t->op != GGML_OP_NONE) continue;
            const auto it = bounds_.find(t);
            if (std::string error = compare(buffer, t, it == bounds_.end() ? 0.0 : it->second);
                !error.empty()) {
                return fail("input changed: " + error);
            }
        }
        std::string note = worst_;
        for (const std::string & rule : fused_)
            note += " [fused by " + rule + "]";
        return {Outcome::Status::Pass, note};
    }

    const Case & case_;
    const Device & device_;
    Usage & usage_;
    Rng rng_;
    std::unique_ptr<ggml_context, decltype(&ggml_free)> ctx_;
    Graph gens_{nullptr};
    ggml_cgraph * graph_ = nullptr;
    ggx::ref::Evaluator oracle_;
    std::unordered_map<const ggml_tensor *, double> bounds_;  // per node and written storage owner
    double worst_ratio_ = 0.0;                                // largest nmse / bound seen
    std::string worst_;                                       // where it was seen
    std::vector<std::string> fused_;                          // rules that fired (scheduled cases)
    std::unordered_set<const ggml_tensor *> eliminated_;      // their ranges' intermediates
};

Outcome run_one(const Case & c, const Device & device, uint64_t seed, Usage & usage) {
    try {
        return CaseRun(c, device, case_seed(seed, c.name), usage).run();
    } catch (const std::exception & e) {
        return fail(std::string("exception: ") + e.what());
    }
}

struct Tally {
    int passed = 0, failed = 0, skipped = 0;
};

void report(const Outcome & outcome, const Case & c, const Device & device, const Options & options,
            Tally & tally) {
    switch (outcome.status) {
        case Outcome::Status::Pass:
            ++tally.passed;
            if (options.verbose)
                std::printf("ok    %s | %s %s\n", device.name.c_str(), c.name.c_str(),
                            outcome.message.c_str());
            return;
        case Outcome::Status::Skip:
            ++tally.skipped;
            if (options.verbose)
                std::printf("skip  %s | %s: %s\n", device.name.c_str(), c.name.c_str(),
                            outcome.message.c_str());
            return;
        case Outcome::Status::Fail:
            ++tally.failed;
            std::printf("FAIL  %s | %s: %s (seed %llu)\n", device.name.c_str(), c.name.c_str(),
                        outcome.message.c_str(), static_cast<unsigned long long>(options.seed));
            return;
    }
}

void check_coverage(const std::vector<Case> & cases, const std::map<ggml_backend_dev_t, Usage> & usage,
                    Tally & tally) {
    const std::vector<std::string> problems = coverage_problems(cases, usage);
    for (const std::string & problem : problems)
        std::printf("FAIL  coverage: %s\n", problem.c_str());
    ++(problems.empty() ? tally.passed : tally.failed);
}

}  // namespace

int run_check(const std::vector<Case> & cases, const Options & options) {
    const auto start = std::chrono::steady_clock::now();
    Tally tally;
    std::vector<Device> devices = open_devices(options.device, true);
    if (devices.empty()) {
        std::printf("FAIL  no device matches '%s'\n", options.device.c_str());
        ++tally.failed;
    }
    std::map<ggml_backend_dev_t, Usage> usage;  // per device (its thread variants together)
    for (const Device & device : devices) {
        Usage & used = usage[device.dev];
        used.device = ggml_backend_dev_name(device.dev);
        for (const Case & c : cases) {
            if (!c.perf && selected(c, options))
                report(run_one(c, device, options.seed, used), c, device, options, tally);
        }
    }
    if (options.op.empty() && options.match.empty()) check_coverage(cases, usage, tally);
    const size_t n_devices = devices.size();
    free_devices(devices);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%zu device(s), seed %llu, %.1f s; %d skipped (not supported by a non-CPU device)\n",
                n_devices, static_cast<unsigned long long>(options.seed), seconds, tally.skipped);
    if (tally.failed > 0) {
        std::printf("replay one failure with: ggx-ops check --seed %llu --device DEVICE --case 'CASE NAME'\n",
                    static_cast<unsigned long long>(options.seed));
    }
    std::printf("%d passed, %d failed\n", tally.passed, tally.failed);
    return tally.failed == 0 ? 0 : 1;
}

}  // namespace ggx::ops
