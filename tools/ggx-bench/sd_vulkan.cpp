// ggx-bench sd-vulkan: each of the sd pack's Vulkan fusion rules at a DiT-sized site, fused against
// the same graph unfused (GGML_VK_DISABLE_FUSION=1: the pack's single-node Vulkan kernels and native
// Vulkan ops), on a scheduler over Vulkan0 and the CPU, inputs in a Vulkan buffer. Per case: the
// best of kRepeats computations after a warm-up for each, the speedup, whether the rule fired (and
// only when enabled) and whether the two outputs are bit-identical. Without a GPU, Vulkan0 is Mesa
// lavapipe (a CPU driver): its speedups say how much work a fusion saves, not what a GPU gains.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml-vulkan.h>
#include <ggml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sd-ggml-ext.h"

namespace {

constexpr int kRepeats = 3;
constexpr int64_t kHidden = 1024, kTokens = 256, kHeadDim = 128, kGroup = 256;

struct ContextDeleter {
    void operator()(ggml_context * ctx) const { ggml_free(ctx); }
};
using Context = std::unique_ptr<ggml_context, ContextDeleter>;

// A case's tensors: inputs (allocated in one Vulkan buffer, filled at random) and the ops on them.
struct Site {
    Context inputs{ggml_init({ggml_tensor_overhead() * 32, nullptr, true})};
    Context ops{ggml_init({ggml_tensor_overhead() * 64 + ggml_graph_overhead(), nullptr, true})};

    ggml_tensor * f32(int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1, int64_t ne3 = 1) {
        return ggml_new_tensor_4d(inputs.get(), GGML_TYPE_F32, ne0, ne1, ne2, ne3);
    }
    // Weight scales are named "scale" so that fill() makes them small and positive.
    ggml_tensor * weight_scale(int64_t n) {
        ggml_tensor * t = f32(n);
        ggml_set_name(t, "scale");
        return t;
    }
    ggml_tensor * codes(int64_t k, int64_t n) { return ggml_new_tensor_2d(inputs.get(), GGML_TYPE_I8, k, n); }
    // The ConvRot-packed activations [k, tokens] every INT8 case starts from.
    ggml_tensor * packed(int64_t k) { return ggml_quantize_i8_convrot(ops.get(), f32(k, kTokens), kGroup); }
};

struct Case {
    const char * name;
    const char * rule;                           // the fusion rule expected to fire
    std::function<ggml_tensor *(Site &)> build;  // the output
};

std::vector<Case> cases() {
    return {
        {"rms_norm_mul_rope [128, 8, 1024]", "sd.rms_norm_mul_rope.vulkan",
         [](Site & s) {
             ggml_tensor * x = s.f32(kHeadDim, 8, 1024);
             ggml_tensor * normed =
                 ggml_mul(s.ops.get(), ggml_rms_norm(s.ops.get(), x, 1e-6f), s.f32(kHeadDim));
             return ggml_rope_apply(s.ops.get(), normed, s.f32(2, 2, kHeadDim / 2, 1024), true);
         }},
        {"rms_norm_mul_rope_scale_f16 [128, 8, 1024]", "sd.rms_norm_mul_rope_scale_f16.vulkan",
         [](Site & s) {
             ggml_tensor * x = s.f32(kHeadDim, 8, 1024);
             ggml_tensor * normed =
                 ggml_mul(s.ops.get(), ggml_rms_norm(s.ops.get(), x, 1e-6f), s.f32(kHeadDim));
             ggml_tensor * roped =
                 ggml_rope_apply(s.ops.get(), normed, s.f32(2, 2, kHeadDim / 2, 1024), true);
             ggml_tensor * cache = ggml_new_tensor_3d(s.inputs.get(), GGML_TYPE_F16, kHeadDim, 8, 1024);
             return ggml_cpy(s.ops.get(), ggml_scale(s.ops.get(), roped, 0.125f), cache);
         }},
        {"linear_i8 -> gate -> residual, K = N = 1024, M = 256", "sd.linear_i8_gated_residual.vulkan",
         [](Site & s) {
             ggml_tensor * y =
                 ggml_mul_mat_i8_tensorwise(s.ops.get(), s.codes(kHidden, kHidden), s.packed(kHidden),
                                            s.weight_scale(kHidden), s.f32(kHidden), kGroup, nullptr);
             return ggml_add(s.ops.get(), ggml_mul(s.ops.get(), y, s.f32(kHidden)), s.f32(kHidden, kTokens));
         }},
        {"linear_i8 [2F] -> swiglu, K = 1024, F = 1024, M = 256", "sd.linear_i8_swiglu.vulkan",
         [](Site & s) {
             ggml_tensor * y =
                 ggml_mul_mat_i8_tensorwise(s.ops.get(), s.codes(kHidden, 2 * kHidden), s.packed(kHidden),
                                            s.weight_scale(2 * kHidden), nullptr, kGroup, nullptr);
             return ggml_swiglu(s.ops.get(), y);
         }},
        {"linear_i8 x2 -> swiglu_split, K = 1024, F = 1024, M = 256", "sd.linear_i8_swiglu_split.vulkan",
         [](Site & s) {
             ggml_tensor * x = s.packed(kHidden);
             const auto linear = [&] {
                 return ggml_mul_mat_i8_tensorwise(s.ops.get(), s.codes(kHidden, kHidden), x,
                                                   s.weight_scale(kHidden), nullptr, kGroup, nullptr);
             };
             ggml_tensor * gate = linear();
             return ggml_swiglu_split(s.ops.get(), gate, linear());
         }},
        {"linear_i8 -> concat(prefix, dim 1), K = N = 1024, M = 256 + 64", "sd.linear_i8_concat.vulkan",
         [](Site & s) {
             ggml_tensor * y =
                 ggml_mul_mat_i8_tensorwise(s.ops.get(), s.codes(kHidden, kHidden), s.packed(kHidden),
                                            s.weight_scale(kHidden), s.f32(kHidden), kGroup, nullptr);
             return ggml_concat(s.ops.get(), s.f32(kHidden, 64), y, 1);
         }},
        {"norm -> modulate -> ConvRot, [1024, 256]", "sd.modulate_convrot.vulkan",
         [](Site & s) {
             ggml_context * c = s.ops.get();
             ggml_tensor * n = ggml_norm(c, s.f32(kHidden, kTokens), 1e-6f);
             ggml_tensor * modulated = ggml_add(c, ggml_mul(c, n, s.f32(kHidden)), s.f32(kHidden));
             return ggml_quantize_i8_convrot(c, modulated, kGroup);
         }},
    };
}

// Random inputs: weight scales in [1e-4, 1e-2], other floats in [-1, 1], codes in [-127, 127].
void fill(ggml_context * inputs) {
    std::mt19937 rng(7);
    for (ggml_tensor * t = ggml_get_first_tensor(inputs); t; t = ggml_get_next_tensor(inputs, t)) {
        const auto n = static_cast<size_t>(ggml_nelements(t));
        if (t->type == GGML_TYPE_I8) {
            std::uniform_int_distribution<int> code(-127, 127);
            std::vector<int8_t> v(n);
            for (int8_t & c : v)
                c = static_cast<int8_t>(code(rng));
            ggml_backend_tensor_set(t, v.data(), 0, n);
            continue;
        }
        const bool scale = std::strcmp(ggml_get_name(t), "scale") == 0;
        std::uniform_real_distribution<float> value(scale ? 1e-4f : -1.0f, scale ? 1e-2f : 1.0f);
        std::vector<float> v(n);
        for (float & f : v)
            f = value(rng);
        if (t->type == GGML_TYPE_F32) ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
    }
}

struct Timing {
    double seconds = 1e30;
    bool fired = false;
    std::vector<uint8_t> out;
};

using Sched = std::unique_ptr<ggml_backend_sched, decltype(&ggml_backend_sched_free)>;

// Builds the case's graph, computes it kRepeats + 1 times with fusion on or off, keeps the best time.
bool time_case(const Case & c, ggml_backend_t vk, ggml_backend_t cpu, bool fusion, Timing & t,
               std::string & error) {
    if (fusion)
        unsetenv("GGML_VK_DISABLE_FUSION");
    else
        setenv("GGML_VK_DISABLE_FUSION", "1", 1);
    Site site;
    ggml_tensor * out = c.build(site);
    if (!out) {
        error = std::string(c.name) + ": graph construction failed";
        return false;
    }
    ggml_cgraph * graph = ggml_new_graph(site.ops.get());
    ggml_build_forward_expand(graph, out);
    ggml_set_output(out);
    std::unique_ptr<ggml_backend_buffer, decltype(&ggml_backend_buffer_free)> buffer(
        ggml_backend_alloc_ctx_tensors(site.inputs.get(), vk), &ggml_backend_buffer_free);
    ggml_backend_t backends[] = {vk, cpu};
    Sched sched(ggml_backend_sched_new(backends, nullptr, 2, GGML_DEFAULT_GRAPH_SIZE, false, false),
                &ggml_backend_sched_free);
    ggml_ext_sched_set_explain(sched.get(), true);
    if (!buffer || !ggml_backend_sched_alloc_graph(sched.get(), graph)) {
        error = std::string(c.name) + ": " + ggml_backend_get_last_error();
        return false;
    }
    const std::string explanation = ggml_ext_sched_explanation(sched.get());
    t.fired = explanation.find(std::string("'") + c.rule + "' matched") != std::string::npos &&
              explanation.find("accepted") != std::string::npos;
    fill(site.inputs.get());
    for (int r = 0; r <= kRepeats; ++r) {  // the first run warms up (pipelines are created on it)
        const auto start = std::chrono::steady_clock::now();
        if (ggml_backend_sched_graph_compute(sched.get(), graph) != GGML_STATUS_SUCCESS) {
            error = std::string(c.name) + ": " + ggml_backend_get_last_error();
            return false;
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (r > 0) t.seconds = std::min(t.seconds, s);
    }
    t.out.resize(ggml_nbytes(out));
    ggml_backend_tensor_get(out, t.out.data(), 0, t.out.size());
    return true;
}

std::string case_report(const Case & c, const Timing & fused, const Timing & unfused) {
    char out[512];
    std::snprintf(out, sizeof out,
                  "{\"case\": \"%s\", \"rule\": \"%s\", \"fired\": %s, \"fused_ms\": %.3f, "
                  "\"unfused_ms\": %.3f, \"speedup\": %.2f, \"bit_identical\": %s}",
                  c.name, c.rule, fused.fired && !unfused.fired ? "true" : "false", fused.seconds * 1e3,
                  unfused.seconds * 1e3, unfused.seconds / fused.seconds,
                  fused.out == unfused.out ? "true" : "false");
    return out;
}

}  // namespace

std::string sd_vulkan_report() {
    if (ggml_backend_vk_get_device_count() == 0) return "{\"error\": \"no Vulkan device\"}";
    if (sd_ggml_register_extensions() == SD_GGML_EXT_FAILED)
        return std::string("{\"error\": \"sd_ggml_register_extensions: ") + ggml_backend_get_last_error() +
               "\"}";
    const char * saved = std::getenv("GGML_VK_DISABLE_FUSION");
    const std::string restore = saved ? saved : "";
    ggml_backend_t vk = ggml_backend_vk_init(0);
    ggml_backend_t cpu = ggml_backend_cpu_init();
    std::string report = std::string("{\"device\": \"") +
                         ggml_backend_dev_description(ggml_backend_get_device(vk)) + "\", \"cases\": [";
    std::string error;
    bool first = true;
    for (const Case & c : cases()) {
        Timing fused, unfused;
        if (!time_case(c, vk, cpu, true, fused, error) || !time_case(c, vk, cpu, false, unfused, error))
            break;
        report += (first ? "" : ", ") + case_report(c, fused, unfused);
        first = false;
    }
    if (saved)
        setenv("GGML_VK_DISABLE_FUSION", restore.c_str(), 1);
    else
        unsetenv("GGML_VK_DISABLE_FUSION");
    ggml_backend_free(cpu);
    ggml_backend_free(vk);
    if (!error.empty()) return "{\"error\": \"" + error.substr(0, 400) + "\"}";
    return report + "]}";
}
