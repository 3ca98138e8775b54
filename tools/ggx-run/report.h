// ggx-run's output: the progress bar on stderr, the table and the JSON report on stdout.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ggx-run/model.h"

namespace ggx::run {

// What one variant (ext on or ext off) did.
struct VariantResult {
    bool ran = false;
    bool ext = true;
    std::vector<double> step_seconds;
    double setup_seconds = 0.0;                    // weights generated and uploaded, graph built, plan made
    int nodes = 0;                                 // graph nodes as built
    int nodes_after_fusion = 0;                    // nodes minus those folded into accepted fusions
    std::map<std::string, int> fusions;            // accepted fusion rule -> ranges fused
    std::map<std::string, int> ext_kernels;        // extension kernel -> nodes it runs
    size_t compute_bytes = 0;  // ggml_backend_sched_get_buffer_size summed: activations + workspace
    size_t weight_bytes = 0;
    std::vector<std::pair<std::string, double>> profile;  // op family -> seconds (profiling run)
    double profile_seconds = 0.0;
    std::vector<std::pair<std::string, double>> stages;  // model stage -> seconds (profiling run)
    std::vector<float> velocity;                         // the first step's model output
    std::vector<float> latent;                           // the latent after all steps

    // FNV-1a of the first step's velocity bytes: equal checksums, bit-identical outputs.
    std::string velocity_checksum() const;
    double step_mean() const;
    double step_median() const;
};

struct Difference {
    double max_abs = 0.0, nmse = 0.0, ref_max_abs = 0.0;
    bool bit_identical = false;
};

Difference compare(const std::vector<float> & test, const std::vector<float> & reference);

struct Report {
    ModelConfig cfg;
    std::string device;
    std::string source;  // "built-in, seed N" or the --model path
    int threads = 0;
    int steps = 0;
    std::string ext_mode;
    VariantResult on, off;
    bool compared = false;
    Difference velocity, latent;
    double nmse_bound = 0.0, max_abs_bound = 0.0;  // max_abs bound relative to max |reference|
    // --reference-device: the compared variant on that device, and the device's difference from it.
    std::string reference_device;
    VariantResult reference;
    Difference device_velocity, device_latent;
    double device_nmse_bound = 0.0, device_max_abs_bound = 0.0;
    bool within_bounds = true;
    double wall_seconds = 0.0;
    long peak_rss_kib = 0;
};

void print_table(const Report & r);
void print_json(const Report & r);

// A progress bar redrawn on stderr by a background thread, shown only when stderr is a terminal
// and only once the run has taken more than a second.
class Progress {
public:
    explicit Progress(int total_units);
    ~Progress();
    void set(const std::string & phase, int units_done);
    void finish();

private:
    void loop();
    void draw(bool force);

    std::chrono::steady_clock::time_point start_;
    int total_;
    std::atomic<int> done_{0};
    std::mutex mutex_;
    std::string phase_;
    std::atomic<bool> stop_{false};
    bool enabled_ = false, drawn_ = false;
    std::thread thread_;
};

}  // namespace ggx::run
