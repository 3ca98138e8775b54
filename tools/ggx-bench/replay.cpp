// ggx-bench replay: ggx-run's DiT (tools/ggx-run/model.h, ext on, INT8 ConvRot weights) on a
// scheduler over Vulkan0 and the CPU, one step after another as ggx-run runs them, with plan replay
// off (Vulkan's default) and on (GGX_VULKAN_PLAN_REPLAY=1): per step, the wall time and the host
// time (CPU time of the thread that calls ggml_backend_sched_graph_compute, which records the
// commands or resubmits the recording, then waits), medians of kSteps steps after the warm-up and
// recording steps, and whether both runs' outputs are bit-identical.
// Without a GPU, Vulkan0 is Mesa lavapipe, whose shaders run on other threads of this process: the
// host time still is the calling thread's own work, the wall time includes the CPU's shader work.
#include <ggml-backend.h>
#include <ggml-ext.h>
#include <ggml-vulkan.h>
#include <ggml.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ggx-run/model.h"
#include "sd-ggml-ext.h"

namespace {

constexpr int kWarmSteps = 2;  // ordinary, then recording (with replay on)
constexpr int kSteps = 5;

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Run {
    std::vector<double> wall, host;
    std::vector<float> out;
    std::string error;
};

struct Backends {
    ggml_backend_t vulkan = ggml_backend_vk_init(0);
    ggml_backend_t cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
    ~Backends() {
        if (vulkan) ggml_backend_free(vulkan);
        if (cpu) ggml_backend_free(cpu);
    }
};

// One run of kWarmSteps + kSteps forward passes of the same inputs on a fresh model and scheduler.
Run run_steps(const ggx::run::ModelConfig & cfg, bool replay) {
    Run r;
    if (replay)
        setenv("GGX_VULKAN_PLAN_REPLAY", "1", 1);
    else
        unsetenv("GGX_VULKAN_PLAN_REPLAY");
    Backends b;
    if (!b.vulkan || !b.cpu) {
        r.error = "no Vulkan0 or CPU backend";
        return r;
    }
    ggx::run::Model model;
    ggx::run::Forward fwd;
    if (!ggx::run::create_model(model, cfg, /*ext=*/true, b.vulkan, r.error) ||
        !ggx::run::build_forward(fwd, model, r.error))
        return r;
    ggml_backend_t list[] = {b.vulkan, b.cpu};
    ggml_backend_sched_t sched = ggml_backend_sched_new(list, nullptr, 2, ggml_graph_size(fwd.graph) + 64,
                                                        false, false);
    if (!sched || !ggml_backend_sched_alloc_graph(sched, fwd.graph)) {
        r.error = std::string("scheduling the DiT failed: ") + ggml_backend_get_last_error();
        if (sched) ggml_backend_sched_free(sched);
        return r;
    }
    const std::vector<float> pe = ggx::run::rope_pe(model.cfg);
    const std::vector<float> x(static_cast<size_t>(ggml_nelements(fwd.x)), 0.5f);
    const float t = 500.0f;
    for (int step = 0; step < kWarmSteps + kSteps && r.error.empty(); ++step) {
        ggml_backend_tensor_set(fwd.pe, pe.data(), 0, ggml_nbytes(fwd.pe));
        ggml_backend_tensor_set(fwd.x, x.data(), 0, ggml_nbytes(fwd.x));
        ggml_backend_tensor_set(fwd.t, &t, 0, sizeof t);
        const auto wall_start = std::chrono::steady_clock::now();
        const double host_start = thread_cpu_seconds();
        if (ggml_backend_sched_graph_compute(sched, fwd.graph) != GGML_STATUS_SUCCESS)
            r.error = std::string("compute failed: ") + ggml_backend_get_last_error();
        if (step < kWarmSteps) continue;
        r.host.push_back(thread_cpu_seconds() - host_start);
        r.wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count());
    }
    r.out.resize(static_cast<size_t>(ggml_nelements(fwd.out)));
    if (r.error.empty()) ggml_backend_tensor_get(fwd.out, r.out.data(), 0, ggml_nbytes(fwd.out));
    ggml_backend_sched_free(sched);
    unsetenv("GGX_VULKAN_PLAN_REPLAY");
    return r;
}

}  // namespace

std::string replay_report() {
    if (sd_ggml_register_extensions() == SD_GGML_EXT_FAILED)
        return std::string("{\"error\": \"sd_ggml_register_extensions: ") + ggml_backend_get_last_error() + "\"}";
    ggx::run::ModelConfig cfg;
    cfg.layers = 2;
    cfg.hidden = 256;
    cfg.heads = 2;
    cfg.tokens = 256;
    std::string error;
    if (!cfg.derive(error)) return "{\"error\": \"" + error + "\"}";
    const Run off = run_steps(cfg, false), on = run_steps(cfg, true);
    if (!off.error.empty() || !on.error.empty())
        return "{\"error\": \"" + (off.error.empty() ? on.error : off.error) + "\"}";
    const double off_host = median(off.host), on_host = median(on.host);
    const double off_wall = median(off.wall), on_wall = median(on.wall);
    const ggml_backend_dev_t device = ggml_backend_dev_by_name("Vulkan0");
    char out[768];
    std::snprintf(out, sizeof out,
                  "{\"model\": \"ggx-run DiT, %d layers, hidden %d, %d heads, %d tokens, int8-convrot, ext on\", "
                  "\"device\": \"%s\", \"steps\": %d, \"host_ms_per_step\": {\"ordinary\": %.3f, \"replay\": %.3f}, "
                  "\"wall_ms_per_step\": {\"ordinary\": %.3f, \"replay\": %.3f}, "
                  "\"host_time_replay_over_ordinary\": %.3f, \"wall_time_replay_over_ordinary\": %.3f, "
                  "\"outputs_bit_identical\": %s}",
                  cfg.layers, cfg.hidden, cfg.heads, cfg.tokens,
                  device ? ggml_backend_dev_description(device) : "?", kSteps, 1e3 * off_host,
                  1e3 * on_host, 1e3 * off_wall, 1e3 * on_wall, on_host / off_host, on_wall / off_wall,
                  off.out == on.out ? "true" : "false");
    return out;
}
