// ggx-ops: proves every operator right on every device (check) and measures it (perf).
#include <ggml-ext.h>
#include <sd-ggml-ext.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "reference/sd.h"
#include "runner.h"

namespace {

void usage() {
    std::printf(
        "usage: ggx-ops check|perf [options]\n"
        "  check            run every case on every device against the reference; the last line\n"
        "                   is 'N passed, M failed'\n"
        "  perf             time the large-shape cases: time, GFLOP/s or GB/s, ratio to the roofline\n"
        "                   of the unit the kernel runs on (FMA, int8 dot, AMX-INT8, AMX-BF16)\n"
        "  --device D       only device D (default: every device; check also runs the CPU with three\n"
        "                   threads as device CPU/3t)\n"
        "  --op OP          only cases of op OP (MUL_MAT), sub-op (SILU, SWIGLU), extension op\n"
        "                   (sd.linear_i8.v1) or FUSION (the scheduled cases where fusion rules fire)\n"
        "  --case TEXT      only cases whose name contains TEXT\n"
        "  --seed S         run seed (default 1234); every failure prints it\n"
        "  --list           list the selected cases instead of running them\n"
        "  --verbose        print passing and skipped cases too\n"
        "  --roofline R     perf: roofline JSON text or a file holding it (default: run\n"
        "                   ../shared/tools/roofline)\n");
}

int list_cases(const std::vector<ggx::ops::Case> & cases, const ggx::ops::Options & options, bool perf) {
    int n = 0;
    for (const ggx::ops::Case & c : cases) {
        if (c.perf != perf || !ggx::ops::selected(c, options)) continue;
        std::printf("%s\n", c.name.c_str());
        ++n;
    }
    std::printf("%d cases\n", n);
    return 0;
}

}  // namespace

int main(int argc, char ** argv) {
    // A case whose constructor fails is one FAIL line naming ggml_get_error; the others still run.
    ggml_ext_set_error_mode(GGML_EXT_ERROR_RETURN);
    ggx::ops::Options options;
    std::string mode;
    bool list = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "check" || arg == "perf") {
            mode = arg;
        } else if (arg == "--list") {
            list = true;
        } else if (arg == "--verbose" || arg == "-v") {
            options.verbose = true;
        } else if (arg == "--device" && has_value) {
            options.device = argv[++i];
        } else if (arg == "--op" && has_value) {
            options.op = argv[++i];
        } else if (arg == "--case" && has_value) {
            options.match = argv[++i];
        } else if (arg == "--seed" && has_value) {
            options.seed = std::strtoull(argv[++i], nullptr, 0);
        } else if (arg == "--roofline" && has_value) {
            options.roofline = argv[++i];
        } else {
            usage();
            return arg == "--help" || arg == "-h" ? 0 : 2;
        }
    }
    if (mode.empty() && !list) {
        usage();
        return 2;
    }
    // The sd extension pack: its operators, kernels and fusion rules are checked like native ops.
    if (sd_ggml_register_extensions() == SD_GGML_EXT_FAILED) {
        std::printf("FAIL  sd_ggml_register_extensions: %s\n", ggml_backend_get_last_error());
        return 1;
    }
    ggx::ref::sd::register_ops();
    const std::vector<ggx::ops::Case> cases = ggx::ops::all_cases();
    if (list) return list_cases(cases, options, mode == "perf");
    return mode == "check" ? ggx::ops::run_check(cases, options) : ggx::ops::run_perf(cases, options);
}
