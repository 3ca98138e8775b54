// Devices, case filters and the coverage check.
#include <ggml-ext.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "reference/reference.h"
#include "runner.h"

namespace ggx::ops {

namespace {

std::string upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return s;
}

void duplicate_names(const std::vector<Case> & cases, std::vector<std::string> & problems) {
    std::set<std::string> seen;
    for (const Case & c : cases) {
        if (!seen.insert(c.name).second) problems.push_back("two cases are named '" + c.name + "'");
    }
}

// Every registered extension operator has a case.
void extension_op_coverage(const std::set<std::string> & ext_ops, std::vector<std::string> & problems) {
    for (int i = 0; i < ggml_ext_get_n_ops(); ++i) {
        const char * name = ggml_ext_op_name(ggml_ext_get_op(i));
        if (name && !ext_ops.count(name))
            problems.push_back(std::string("extension op ") + name + " has no case");
    }
}

// Every kernel and fusion rule registered on a device ran in some case on it.
void device_coverage(ggml_backend_dev_t dev, const Usage & used, std::vector<std::string> & problems) {
    ggml_ext_kernel_info info{};
    info.struct_size = sizeof info;
    for (int i = 0; ggml_ext_dev_get_kernel(dev, i, &info); ++i) {
        if (!used.kernels.count(info.name))
            problems.push_back("kernel " + std::string(info.name) + " registered on " + used.device +
                               " is selected by no case there");
    }
    for (int i = 0; i < ggml_ext_dev_get_n_fusions(dev); ++i) {
        const char * name = ggml_ext_dev_get_fusion_name(dev, i);
        if (name && !used.fusions.count(name))
            problems.push_back("fusion rule " + std::string(name) + " registered on " + used.device +
                               " fires in no case there");
    }
}

// Every unary and GLU sub-op has a case, and the oracle evaluates it.
void sub_op_coverage(const std::set<std::string> & subs, std::vector<std::string> & problems) {
    const auto check = [&](const char * kind, const char * name, bool evaluated) {
        if (!evaluated)
            problems.push_back(std::string(kind) + " " + name + " is not evaluated by the oracle");
        if (!subs.count(name)) problems.push_back(std::string(kind) + " " + name + " has no case");
    };
    for (int i = 0; i < GGML_UNARY_OP_COUNT; ++i) {
        const auto op = static_cast<ggml_unary_op>(i);
        check("unary op", ggml_unary_op_name(op), ref::evaluates(op));
    }
    for (int i = 0; i < GGML_GLU_OP_COUNT; ++i) {
        const auto op = static_cast<ggml_glu_op>(i);
        check("glu op", ggml_glu_op_name(op), ref::evaluates(op));
    }
}

// Ops no graph can hold: ggml_flash_attn_back is always an error, as in ggml (docs/ops.md).
bool cannot_be_built(ggml_op op) { return op == GGML_OP_FLASH_ATTN_BACK; }

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
        if (op != ggml_op_name(c.op) && op != c.sub && op != upper(c.ext_op) && !(op == "FUSION" && c.sched))
            return false;
    }
    return options.match.empty() || c.name.find(options.match) != std::string::npos;
}

std::vector<std::string> coverage_problems(const std::vector<Case> & cases,
                                           const std::map<ggml_backend_dev_t, Usage> & usage) {
    std::vector<std::string> problems;
    std::map<ggml_op, int> checks;
    std::set<std::string> subs, ext_ops;
    for (const Case & c : cases) {
        if (c.perf) continue;
        ++checks[c.op];
        if (!c.sub.empty()) subs.insert(c.sub);
        if (!c.ext_op.empty()) ext_ops.insert(c.ext_op);
    }
    // Every op a graph can hold has cases, and the oracle evaluates it.
    for (int i = GGML_OP_NONE + 1; i < GGML_OP_COUNT; ++i) {
        const auto op = static_cast<ggml_op>(i);
        if (cannot_be_built(op)) continue;
        if (!ref::evaluates(op))
            problems.push_back(std::string("op ") + ggml_op_name(op) + " is not evaluated by the oracle");
        if (!checks.count(op)) problems.push_back(std::string("op ") + ggml_op_name(op) + " has no case");
    }
    sub_op_coverage(subs, problems);
    extension_op_coverage(ext_ops, problems);
    for (const auto & [dev, used] : usage)
        device_coverage(dev, used, problems);
    duplicate_names(cases, problems);
    return problems;
}

}  // namespace ggx::ops
