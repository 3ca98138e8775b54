// For suites that run ggml_ext_check_kernel on their kernels: the parameters and report filled in
// one place.
#pragma once

#include <ggml-backend.h>
#include <ggml-ext.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace ggx::test {

struct CheckResult {
    bool passed;  // ggml_ext_check_kernel's answer
    ggml_ext_check_report report;
};

// ggml_ext_check_kernel for kernel over cases on backend (and its device), with the reference for
// nodes native does not support.
inline CheckResult check_kernel(ggml_backend_t backend, const ggml_ext_kernel_desc * kernel,
                                const std::vector<ggml_ext_check_case> & cases, double max_nmse,
                                uint64_t seed, ggml_ext_check_reference_fn reference = nullptr) {
    ggml_ext_check_params params{};
    params.struct_size = sizeof params;
    params.version = GGML_EXT_CHECK_PARAMS_VERSION;
    params.device = ggml_backend_get_device(backend);
    params.backend = backend;
    params.kernel = kernel;
    params.cases = cases.data();
    params.n_cases = static_cast<int>(cases.size());
    params.max_nmse = max_nmse;
    params.reference = reference;
    params.seed = seed;
    CheckResult result{false, {}};
    result.report.struct_size = sizeof result.report;
    result.report.version = GGML_EXT_CHECK_REPORT_VERSION;
    result.passed = ggml_ext_check_kernel(&params, &result.report);
    return result;
}

// A case over inputs of these types and shapes, with a custom operator's attributes (or none, for a
// built-in op: set build), tried in every layout (non_contiguous). I8 inputs cover the whole code
// range [-127, 127]; other inputs use the default range.
inline ggml_ext_check_case check_case(
    const char * name, const std::vector<std::pair<ggml_type, std::array<int64_t, 4>>> & inputs,
    const void * attrs = nullptr, size_t attr_size = 0) {
    ggml_ext_check_case c{};
    c.struct_size = sizeof c;
    c.version = GGML_EXT_CHECK_CASE_VERSION;
    c.name = name;
    c.n_inputs = static_cast<int>(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
        c.types[i] = inputs[i].first;
        std::copy(inputs[i].second.begin(), inputs[i].second.end(), c.ne[i]);
        if (inputs[i].first == GGML_TYPE_I8) c.range[i][0] = -127, c.range[i][1] = 128;
    }
    c.attrs = attrs;
    c.attr_size = attr_size;
    c.non_contiguous = true;
    return c;
}

}  // namespace ggx::test
