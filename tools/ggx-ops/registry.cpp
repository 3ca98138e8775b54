// Devices, case filters and the coverage check.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "runner.h"

#ifdef GGX_OPS_CPU_KERNEL_TABLE
#include "cpu/kernel.h"
#endif

namespace ggx::ops {

namespace {

std::string upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return s;
}

// Ops the CPU device's kernel table claims (a kernel with a supports function).
std::vector<ggml_op> cpu_claimed_ops() {
    std::vector<ggml_op> ops;
#ifdef GGX_OPS_CPU_KERNEL_TABLE
    const auto & table = ggx::cpu::kernel_table();
    for (int op = 0; op < GGML_OP_COUNT; ++op) {
        if (table[op].supports && op != GGML_OP_NONE) ops.push_back(static_cast<ggml_op>(op));
    }
#endif
    return ops;
}

void duplicate_names(const std::vector<Case> & cases, std::vector<std::string> & problems) {
    std::set<std::string> seen;
    for (const Case & c : cases) {
        if (!seen.insert(c.name).second) problems.push_back("two cases are named '" + c.name + "'");
    }
}

void sub_op_coverage(const std::set<std::string> & subs, std::vector<std::string> & problems) {
    for (int op = 0; op < GGML_UNARY_OP_COUNT; ++op) {
        const char * name = ggml_unary_op_name(static_cast<ggml_unary_op>(op));
        if (!subs.count(name)) problems.push_back(std::string("unary op ") + name + " has no case");
    }
    for (int op = 0; op < GGML_GLU_OP_COUNT; ++op) {
        const char * name = ggml_glu_op_name(static_cast<ggml_glu_op>(op));
        if (!subs.count(name)) problems.push_back(std::string("glu op ") + name + " has no case");
    }
}

}  // namespace

std::vector<Device> open_devices(const std::string & filter, bool with_thread_variant) {
    constexpr int kOddThreads = 3;
    std::vector<Device> devices;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        const std::string name = ggml_backend_dev_name(dev);
        const bool is_cpu = ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU;
        auto set_n_threads = reinterpret_cast<ggml_backend_set_n_threads_t>(ggml_backend_reg_get_proc_address(
            ggml_backend_dev_backend_reg(dev), "ggml_backend_set_n_threads"));
        const int variants = is_cpu && with_thread_variant && set_n_threads ? 2 : 1;
        for (int variant = 0; variant < variants; ++variant) {
            const std::string shown = variant == 1 ? name + "/" + std::to_string(kOddThreads) + "t" : name;
            if (!filter.empty() && upper(filter) != upper(name) && upper(filter) != upper(shown)) continue;
            ggml_backend_t backend = ggml_backend_dev_init(dev, nullptr);
            if (!backend) continue;
            if (variant == 1) set_n_threads(backend, kOddThreads);
            devices.push_back({dev, backend, ggml_backend_dev_buffer_type(dev), shown, is_cpu});
        }
    }
    return devices;
}

void free_devices(std::vector<Device> & devices) {
    for (Device & device : devices)
        ggml_backend_free(device.backend);
    devices.clear();
}

bool selected(const Case & c, const Options & options) {
    if (!options.op.empty()) {
        const std::string op = upper(options.op);
        if (op != ggml_op_name(c.op) && op != c.sub) return false;
    }
    return options.match.empty() || c.name.find(options.match) != std::string::npos;
}

std::vector<std::string> coverage_problems(const std::vector<Case> & cases) {
    std::vector<std::string> problems;
    std::map<ggml_op, int> checks;
    std::set<std::string> subs;
    for (const Case & c : cases) {
        if (c.perf) continue;
        ++checks[c.op];
        if (!c.sub.empty()) subs.insert(c.sub);
    }
    for (int op = GGML_OP_NONE + 1; op < GGML_OP_COUNT; ++op) {
        if (!checks.count(static_cast<ggml_op>(op))) {
            problems.push_back(std::string("op ") + ggml_op_name(static_cast<ggml_op>(op)) + " has no case");
        }
    }
    for (ggml_op op : cpu_claimed_ops()) {
        if (!checks.count(op)) {
            problems.push_back(std::string("the CPU kernel table claims ") + ggml_op_name(op) +
                               " but no case tests it");
        }
    }
    sub_op_coverage(subs, problems);
    duplicate_names(cases, problems);
    return problems;
}

}  // namespace ggx::ops
