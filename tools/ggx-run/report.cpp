#include "ggx-run/report.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

namespace ggx::run {

double VariantResult::step_mean() const {
    double s = 0.0;
    for (double t : step_seconds)
        s += t;
    return step_seconds.empty() ? 0.0 : s / static_cast<double>(step_seconds.size());
}

std::string VariantResult::velocity_checksum() const {
    uint64_t h = 0xCBF29CE484222325ull;
    const auto * bytes = reinterpret_cast<const unsigned char *>(velocity.data());
    for (size_t i = 0; i < velocity.size() * sizeof(float); ++i)
        h = (h ^ bytes[i]) * 0x100000001B3ull;
    char buf[20];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

double VariantResult::step_median() const {
    if (step_seconds.empty()) return 0.0;
    std::vector<double> t = step_seconds;
    std::sort(t.begin(), t.end());
    const size_t n = t.size();
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

Difference compare(const std::vector<float> & test, const std::vector<float> & ref) {
    Difference d;
    if (test.size() != ref.size() || ref.empty()) {
        d.max_abs = d.nmse = INFINITY;
        return d;
    }
    double err = 0.0, norm = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double a = test[i], b = ref[i], e = a - b;
        if (!std::isfinite(a) || !std::isfinite(b)) {
            d.max_abs = d.nmse = INFINITY;
            return d;
        }
        d.max_abs = std::max(d.max_abs, std::fabs(e));
        d.ref_max_abs = std::max(d.ref_max_abs, std::fabs(b));
        err += e * e;
        norm += b * b;
    }
    d.nmse = norm > 0.0 ? err / norm : (err > 0.0 ? INFINITY : 0.0);
    d.bit_identical = std::memcmp(test.data(), ref.data(), ref.size() * sizeof(float)) == 0;
    return d;
}

namespace {

double mib(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

std::string join_counts(const std::map<std::string, int> & m) {
    std::string s;
    for (const auto & [name, n] : m) {
        if (!s.empty()) s += ", ";
        s += name + " x" + std::to_string(n);
    }
    return s.empty() ? "none" : s;
}

std::string json_string(const std::string & s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
            continue;
        }
        out += c;
    }
    return out + "\"";
}

std::string json_number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::string json_counts(const std::map<std::string, int> & m) {
    std::string s = "{";
    for (const auto & [name, n] : m)
        s += (s.size() > 1 ? ", " : "") + json_string(name) + ": " + std::to_string(n);
    return s + "}";
}

std::string json_variant(const VariantResult & v) {
    std::string s = "{";
    s += "\"time_per_step_ms\": " + json_number(v.step_mean() * 1e3);
    s += ", \"time_per_step_median_ms\": " + json_number(v.step_median() * 1e3);
    s += ", \"step_ms\": [";
    for (size_t i = 0; i < v.step_seconds.size(); ++i)
        s += (i ? ", " : "") + json_number(v.step_seconds[i] * 1e3);
    s += "], \"setup_ms\": " + json_number(v.setup_seconds * 1e3);
    s += ", \"velocity_fnv1a\": " + json_string(v.velocity_checksum());
    s += ", \"nodes\": " + std::to_string(v.nodes);
    s += ", \"nodes_after_fusion\": " + std::to_string(v.nodes_after_fusion);
    s += ", \"fusions\": " + json_counts(v.fusions);
    s += ", \"extension_kernels\": " + json_counts(v.ext_kernels);
    s += ", \"compute_buffer_bytes\": " + std::to_string(v.compute_bytes);
    s += ", \"weight_bytes\": " + std::to_string(v.weight_bytes);
    s += ", \"profile_ms\": {";
    for (size_t i = 0; i < v.profile.size(); ++i)
        s +=
            (i ? ", " : "") + json_string(v.profile[i].first) + ": " + json_number(v.profile[i].second * 1e3);
    s += "}, \"profile_total_ms\": " + json_number(v.profile_seconds * 1e3);
    s += ", \"stages_ms\": {";
    for (size_t i = 0; i < v.stages.size(); ++i)
        s += (i ? ", " : "") + json_string(v.stages[i].first) + ": " + json_number(v.stages[i].second * 1e3);
    s += "}";
    return s + "}";
}

std::string json_diff(const Difference & d) {
    return "{\"max_abs\": " + json_number(d.max_abs) + ", \"nmse\": " + json_number(d.nmse) +
           ", \"reference_max_abs\": " + json_number(d.ref_max_abs) +
           ", \"bit_identical\": " + (d.bit_identical ? "true" : "false") + "}";
}

void print_row(const char * label, const std::string & on, const std::string & off,
               const std::string & note = "") {
    std::printf("  %-34s %16s %16s  %s\n", label, on.c_str(), off.c_str(), note.c_str());
}

std::string fmt(const char * f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

// The velocity and latent differences of one comparison, and whether they are within bounds.
void print_differences(const Report & r, const char * title, const Difference & velocity,
                       const Difference & latent, double nmse_bound, double max_abs_bound,
                       const char * what) {
    std::printf("\n  %-40s %9s %10s %10s %12s\n", title, "max-abs", "max|ref|", "nmse", "bound nmse");
    const auto line = [&](const std::string & label, const Difference & d) {
        std::printf("  %-40s %9.3g %10.3g %10.3g %12.3g  %s\n", label.c_str(), d.max_abs, d.ref_max_abs,
                    d.nmse, nmse_bound, d.bit_identical ? "bit-identical" : "");
    };
    line("velocity, step 1", velocity);
    line(fmt("latent after %.0f steps", r.steps), latent);
    const bool ok = velocity.nmse <= nmse_bound && latent.nmse <= nmse_bound &&
                    velocity.max_abs <= max_abs_bound * velocity.ref_max_abs &&
                    latent.max_abs <= max_abs_bound * latent.ref_max_abs;
    std::printf("  check: %s%s %s (bounds: nmse <= %.3g, max-abs <= %.3g x max|ref|)\n",
                ok ? "" : "EXCEEDED: ", what, ok ? "within bounds" : "outside bounds", nmse_bound,
                max_abs_bound);
}

}  // namespace

void print_table(const Report & r) {
    const ModelConfig & c = r.cfg;
    std::printf(
        "ggx-run: DiT, %d layers, hidden %d, %d heads x %d, %d tokens (%dx%d patches), ffn %d, "
        "weights %s (%s), %d step%s, device %s, %d threads\n\n",
        c.layers, c.hidden, c.heads, c.head_dim, c.tokens, c.grid_h, c.grid_w, c.ffn,
        weight_type_name(c.weights).c_str(), r.source.c_str(), r.steps, r.steps == 1 ? "" : "s", r.device.c_str(),
        r.threads);
    const VariantResult &on = r.on, &off = r.off;
    const auto both = [&](auto fn) {
        return std::make_pair(on.ran ? fn(on) : std::string("-"), off.ran ? fn(off) : std::string("-"));
    };
    std::printf("  %-34s %16s %16s\n", "", "ext on", "ext off");
    {
        auto [a, b] = both([](const VariantResult & v) { return fmt("%.1f", v.step_mean() * 1e3); });
        std::string note;
        if (on.ran && off.ran && on.step_mean() > 0)
            note = fmt("speedup %.2fx", off.step_mean() / on.step_mean());
        print_row("time per step (ms)", a, b, note);
    }
    {
        auto [a, b] = both([](const VariantResult & v) { return fmt("%.0f", v.setup_seconds * 1e3); });
        print_row("setup: weights, graph, plan (ms)", a, b);
    }
    {
        auto [a, b] = both([](const VariantResult & v) { return std::to_string(v.nodes); });
        print_row("graph nodes", a, b);
    }
    {
        auto [a, b] = both([](const VariantResult & v) { return std::to_string(v.nodes_after_fusion); });
        print_row("nodes after fusion", a, b);
    }
    {
        auto [a, b] = both([](const VariantResult & v) { return fmt("%.1f", mib(v.compute_bytes)); });
        print_row("compute buffer (MiB)", a, b, "activations + workspace, planned");
    }
    {
        auto [a, b] = both([](const VariantResult & v) { return fmt("%.1f", mib(v.weight_bytes)); });
        print_row("weights (MiB)", a, b);
    }
    {
        auto [a, b] = both([](const VariantResult & v) { return v.velocity_checksum(); });
        print_row("velocity checksum (FNV-1a)", a, b, "first step's output bytes");
    }
    std::printf("  %-34s %16s\n", "peak resident memory (MiB)", fmt("%.1f", r.peak_rss_kib / 1024.0).c_str());
    for (const VariantResult * v : {&on, &off}) {
        if (!v->ran) continue;
        const char * name = v->ext ? "ext on" : "ext off";
        std::printf("\n  fusions fired (%s): %s\n", name, join_counts(v->fusions).c_str());
        std::printf("  extension kernels (%s): %s\n", name, join_counts(v->ext_kernels).c_str());
    }

    // Profile: families in the order of their largest time.
    std::set<std::string> names;
    std::map<std::string, double> a, b;
    for (const auto & [n, s] : on.profile)
        names.insert(n), a[n] = s;
    for (const auto & [n, s] : off.profile)
        names.insert(n), b[n] = s;
    std::vector<std::string> order(names.begin(), names.end());
    std::sort(order.begin(), order.end(), [&](const std::string & x, const std::string & y) {
        return std::max(a[x], b[x]) > std::max(a[y], b[y]);
    });
    if (!names.empty()) {
        std::printf(
            "\n  profile: one forward pass per variant, timed node by node (an eval callback, so no "
            "fusion)\n");
        std::printf("  %-34s %9s %5s %9s %5s\n", "op family", "on ms", "%", "off ms", "%");
        const auto cell = [](const std::map<std::string, double> & m, const std::string & n, double total,
                             bool ran) {
            if (!ran) return std::string("        -     -");
            auto it = m.find(n);
            if (it == m.end()) return std::string("        -     -");
            return fmt("%9.1f", it->second * 1e3) +
                   fmt(" %5.1f", total > 0 ? 100.0 * it->second / total : 0.0);
        };
        for (const std::string & n : order)
            std::printf("  %-34s %s %s\n", n.c_str(), cell(a, n, on.profile_seconds, on.ran).c_str(),
                        cell(b, n, off.profile_seconds, off.ran).c_str());
        std::printf("  %-34s %9s %5s %9s %5s\n", "total",
                    on.ran ? fmt("%.1f", on.profile_seconds * 1e3).c_str() : "-", "",
                    off.ran ? fmt("%.1f", off.profile_seconds * 1e3).c_str() : "-", "");
    }

    if (!on.stages.empty() || !off.stages.empty()) {
        std::printf("\n  %-34s %9s %9s %8s\n", "by model stage (same profile)", "on ms", "off ms", "off/on");
        std::map<std::string, double> sa(on.stages.begin(), on.stages.end());
        std::map<std::string, double> sb(off.stages.begin(), off.stages.end());
        for (const auto & stage : on.stages.empty() ? off.stages : on.stages) {
            const double x = sa[stage.first], y = sb[stage.first];
            std::printf("  %-34s %9s %9s %8s\n", stage.first.c_str(),
                        on.ran ? fmt("%.1f", x * 1e3).c_str() : "-",
                        off.ran ? fmt("%.1f", y * 1e3).c_str() : "-",
                        on.ran && off.ran && x > 0 ? fmt("%.2fx", y / x).c_str() : "");
        }
    }

    if (r.compared) {
        print_differences(r, "ext on vs ext off (reference: ext off)", r.velocity, r.latent, r.nmse_bound,
                          r.max_abs_bound, "ext-on vs ext-off");
    }
    if (r.reference.ran) {
        const std::string title = r.device + " vs " + r.reference_device +
                                  " (reference: " + r.reference_device + ", ext " +
                                  (r.reference.ext ? "on" : "off") + ")";
        print_differences(r, title.c_str(), r.device_velocity, r.device_latent, r.device_nmse_bound,
                          r.device_max_abs_bound, (r.device + " vs " + r.reference_device).c_str());
    }
    std::printf("\n  wall time %.1f s\n", r.wall_seconds);
    std::fflush(stdout);
}

void print_json(const Report & r) {
    const ModelConfig & c = r.cfg;
    std::string s = "{";
    s += "\"model\": {\"layers\": " + std::to_string(c.layers) + ", \"hidden\": " + std::to_string(c.hidden) +
         ", \"heads\": " + std::to_string(c.heads) + ", \"head_dim\": " + std::to_string(c.head_dim) +
         ", \"tokens\": " + std::to_string(c.tokens) + ", \"grid\": [" + std::to_string(c.grid_h) + ", " +
         std::to_string(c.grid_w) + "], \"ffn\": " + std::to_string(c.ffn) +
         ", \"patch_dim\": " + std::to_string(c.patch_dim) +
         ", \"weights\": " + json_string(weight_type_name(c.weights)) +
         ", \"seed\": " + std::to_string(c.seed) + "}";
    s += ", \"source\": " + json_string(r.source);
    s += ", \"device\": " + json_string(r.device) + ", \"threads\": " + std::to_string(r.threads);
    s += ", \"steps\": " + std::to_string(r.steps) + ", \"ext\": " + json_string(r.ext_mode);
    s += ", \"ext_on\": " + (r.on.ran ? json_variant(r.on) : std::string("null"));
    s += ", \"ext_off\": " + (r.off.ran ? json_variant(r.off) : std::string("null"));
    s += ", \"speedup\": " + (r.on.ran && r.off.ran && r.on.step_mean() > 0
                                  ? json_number(r.off.step_mean() / r.on.step_mean())
                                  : std::string("null"));
    if (r.compared) {
        s += ", \"difference\": {\"velocity\": " + json_diff(r.velocity) +
             ", \"latent\": " + json_diff(r.latent) + ", \"nmse_bound\": " + json_number(r.nmse_bound) +
             ", \"max_abs_bound_relative\": " + json_number(r.max_abs_bound) + "}";
    } else {
        s += ", \"difference\": null";
    }
    if (r.reference.ran) {
        s += ", \"reference\": {\"device\": " + json_string(r.reference_device) +
             ", \"ext\": " + (r.reference.ext ? "true" : "false") +
             ", \"variant\": " + json_variant(r.reference) +
             ", \"velocity\": " + json_diff(r.device_velocity) +
             ", \"latent\": " + json_diff(r.device_latent) +
             ", \"nmse_bound\": " + json_number(r.device_nmse_bound) +
             ", \"max_abs_bound_relative\": " + json_number(r.device_max_abs_bound) + "}";
    }
    s += std::string(", \"within_bounds\": ") + (r.within_bounds ? "true" : "false");
    s += ", \"peak_rss_bytes\": " + std::to_string(static_cast<long long>(r.peak_rss_kib) * 1024);
    s += ", \"wall_s\": " + json_number(r.wall_seconds) + "}";
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
}

Progress::Progress(int total_units)
    : start_(std::chrono::steady_clock::now()), total_(std::max(1, total_units)) {
    enabled_ = isatty(STDERR_FILENO) != 0;
    if (enabled_) thread_ = std::thread([this] { loop(); });
}

Progress::~Progress() { finish(); }

void Progress::set(const std::string & phase, int units_done) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        phase_ = phase;
    }
    done_ = units_done;
}

void Progress::finish() {
    if (stop_.exchange(true)) return;
    if (thread_.joinable()) thread_.join();
    if (drawn_) std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
}

void Progress::loop() {
    while (!stop_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        draw(false);
    }
}

void Progress::draw(bool) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (elapsed < 1.0) return;
    std::string phase;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        phase = phase_;
    }
    constexpr int kWidth = 30;
    const int done = std::min(done_.load(), total_);
    const int filled = done * kWidth / total_;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(kWidth - filled), '.');
    std::fprintf(stderr, "\r\033[K[%s] %3d%%  %-36s %6.1f s", bar.c_str(), done * 100 / total_, phase.c_str(),
                 elapsed);
    std::fflush(stderr);
    drawn_ = true;
}

}  // namespace ggx::run
