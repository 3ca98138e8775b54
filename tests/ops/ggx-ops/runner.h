// ggx-ops modes: check (every case on every device against the oracle) and perf.
#pragma once

#include <ggml-backend.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "case.h"

namespace ggx::ops {

struct Options {
    std::string device;    // device name filter (case-insensitive); empty: every device
    std::string op;        // op or sub-op name filter (e.g. MUL_MAT, SILU); empty: every op
    std::string match;     // case-name substring filter; empty: every case
    uint64_t seed = 1234;  // run seed; each case mixes in its name
    bool verbose = false;  // print passing cases too
    std::string roofline;  // perf: roofline JSON text or a file holding it; empty: run the tool
};

struct Device {
    ggml_backend_dev_t dev = nullptr;
    ggml_backend_t backend = nullptr;
    ggml_backend_buffer_type_t buft = nullptr;
    std::string name;     // the device's name, with the thread count when it is set explicitly
    bool is_cpu = false;  // the CPU must support every documented case: unsupported is a failure
};

// Backends on every device matching the filter (the caller frees them with free_devices). When
// with_thread_variant is set, a CPU device is opened a second time with an odd thread count
// (three), so work splitting is checked beyond the default pool size.
std::vector<Device> open_devices(const std::string & filter, bool with_thread_variant = false);
void free_devices(std::vector<Device> & devices);

// True when c passes the --op and --case filters.
bool selected(const Case & c, const Options & options);

// What the cases ran on one device (every backend opened on it): the extension kernels selected
// for their nodes and the fusion rules that fired (from the plan query).
struct Usage {
    std::string device;  // the device's name
    std::set<std::string> kernels, fusions;
};

// Problems of the case tables: ops, sub-ops or registered extension operators without a case,
// duplicate names; and for each device in usage, a kernel registered there (ggml-ext.h's
// enumeration) that no case selected, or a fusion rule registered there that never fired.
std::vector<std::string> coverage_problems(const std::vector<Case> & cases,
                                           const std::map<ggml_backend_dev_t, Usage> & usage);

// The modes; each returns the process exit status.
int run_check(const std::vector<Case> & cases, const Options & options);
int run_perf(const std::vector<Case> & cases, const Options & options);

}  // namespace ggx::ops
