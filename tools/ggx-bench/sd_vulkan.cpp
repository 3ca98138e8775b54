// ggx-bench sd-vulkan: the sd pack's Vulkan kernels and fusion rules at DiT-sized sites, on a
// scheduler over Vulkan0 and the CPU, inputs in a Vulkan buffer, best of kRepeats computations after
// a warm-up (which creates the pipelines):
//   fusions: each rule fused against the same graph unfused (GGML_VK_DISABLE_FUSION=1: the pack's
//            single-node Vulkan kernels and native Vulkan ops): the speedup, whether the rule fired
//            (and only when enabled) and whether both outputs are bit-identical.
//   kernels: each kernel against the native Vulkan graph doing that job (the decomposed RoPE sd.cpp
//            builds without the pack, an F16-weight MUL_MAT of the linear's shape, an F32 -> F16 copy
//            of the quantized activations): the speedup.
// Without a GPU, Vulkan0 is Mesa lavapipe (a CPU driver): its ratios say how much work a kernel or
// fusion saves, not what a GPU gains.
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

#include "common/plan_steps.h"
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

using Build = std::function<ggml_tensor *(Site &)>;  // the output

struct Case {
    const char * name;
    const char * rule;  // the fusion rule expected to fire
    Build build;
};

struct Comparison {
    const char * name;
    Build kernel, native;
};

ggml_tensor * rope_input(Site & s) {
    ggml_tensor * x = s.f32(kHeadDim, 8, 1024);
    return ggml_mul(s.ops.get(), ggml_rms_norm(s.ops.get(), x, 1e-6f), s.f32(kHeadDim));
}

ggml_tensor * rope_pe(Site & s) { return s.f32(2, 2, kHeadDim / 2, 1024); }

std::vector<Comparison> comparisons() {
    return {
        {"sd.rope_apply vs decomposed native RoPE, [128, 8, 1024]",
         [](Site & s) { return ggml_rope_apply(s.ops.get(), s.f32(kHeadDim, 8, 1024), rope_pe(s), true); },
         [](Site & s) {
             return sd_ggml_rope_apply_decomposed(s.ops.get(), s.f32(kHeadDim, 8, 1024), rope_pe(s), true);
         }},
        {"sd.quantize_i8_convrot + sd.linear_i8 vs MUL_MAT F16 weights, K = N = 1024, M = 256",
         [](Site & s) {
             return ggml_mul_mat_i8_tensorwise(s.ops.get(), s.codes(kHidden, kHidden), s.packed(kHidden),
                                               s.weight_scale(kHidden), nullptr, kGroup, nullptr);
         },
         [](Site & s) {
             ggml_tensor * w = ggml_new_tensor_2d(s.inputs.get(), GGML_TYPE_F16, kHidden, kHidden);
             return ggml_mul_mat(s.ops.get(), w, s.f32(kHidden, kTokens));
         }},
        {"sd.quantize_i8_convrot G256 vs CPY F32 -> F16, [1024, 1024]",
         [](Site & s) { return ggml_quantize_i8_convrot(s.ops.get(), s.f32(kHidden, 1024), kGroup); },
         [](Site & s) { return ggml_cast(s.ops.get(), s.f32(kHidden, 1024), GGML_TYPE_F16); }},
    };
}

std::vector<Case> cases() {
    return {
        {"rms_norm_mul_rope [128, 8, 1024]", "sd.rms_norm_mul_rope.vulkan",
         [](Site & s) { return ggml_rope_apply(s.ops.get(), rope_input(s), rope_pe(s), true); }},
        {"rms_norm_mul_rope_scale_f16 [128, 8, 1024]", "sd.rms_norm_mul_rope_scale_f16.vulkan",
         [](Site & s) {
             ggml_tensor * roped = ggml_rope_apply(s.ops.get(), rope_input(s), rope_pe(s), true);
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
        if (t->type == GGML_TYPE_F16) {
            std::vector<ggml_fp16_t> h(n);
            ggml_fp32_to_fp16_row(v.data(), h.data(), static_cast<int64_t>(n));
            ggml_backend_tensor_set(t, h.data(), 0, ggml_nbytes(t));
        }
    }
}

struct Timing {
    double seconds = 1e30;
    bool fired = false;
    std::vector<uint8_t> out;
};

using Sched = std::unique_ptr<ggml_backend_sched, decltype(&ggml_backend_sched_free)>;

// Builds the graph of `build`, computes it kRepeats + 1 times with fusion on or off, keeps the best
// time and whether `rule` (if any) fired.
bool time_graph(const char * name, const Build & build, const char * rule, ggml_backend_t vk,
                ggml_backend_t cpu, bool fusion, Timing & t, std::string & error) {
    if (fusion)
        unsetenv("GGML_VK_DISABLE_FUSION");
    else
        setenv("GGML_VK_DISABLE_FUSION", "1", 1);
    Site site;
    ggml_tensor * out = build(site);
    if (!out) {
        error = std::string(name) + ": graph construction failed";
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
    if (!buffer || !ggml_backend_sched_alloc_graph(sched.get(), graph)) {
        error = std::string(name) + ": " + ggml_backend_get_last_error();
        return false;
    }
    t.fired = rule && ggx::tools::fusion_fired(sched.get(), rule);
    fill(site.inputs.get());
    for (int r = 0; r <= kRepeats; ++r) {  // the first run warms up (pipelines are created on it)
        const auto start = std::chrono::steady_clock::now();
        if (ggml_backend_sched_graph_compute(sched.get(), graph) != GGML_STATUS_SUCCESS) {
            error = std::string(name) + ": " + ggml_backend_get_last_error();
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

std::string comparison_report(const Comparison & c, const Timing & kernel, const Timing & native) {
    char out[512];
    std::snprintf(out, sizeof out,
                  "{\"case\": \"%s\", \"kernel_ms\": %.3f, \"native_ms\": %.3f, \"speedup\": %.2f}", c.name,
                  kernel.seconds * 1e3, native.seconds * 1e3, native.seconds / kernel.seconds);
    return out;
}

// The fusion cases' and comparisons' reports, as "fusions" and "kernels" JSON arrays.
std::string reports(ggml_backend_t vk, ggml_backend_t cpu, std::string & error) {
    std::string fusions, kernels;
    for (const Case & c : cases()) {
        Timing fused, unfused;
        if (!time_graph(c.name, c.build, c.rule, vk, cpu, true, fused, error) ||
            !time_graph(c.name, c.build, c.rule, vk, cpu, false, unfused, error))
            return "";
        fusions += (fusions.empty() ? "" : ", ") + case_report(c, fused, unfused);
    }
    for (const Comparison & c : comparisons()) {
        Timing kernel, native;
        if (!time_graph(c.name, c.kernel, nullptr, vk, cpu, true, kernel, error) ||
            !time_graph(c.name, c.native, nullptr, vk, cpu, true, native, error))
            return "";
        kernels += (kernels.empty() ? "" : ", ") + comparison_report(c, kernel, native);
    }
    return "\"fusions\": [" + fusions + "], \"kernels\": [" + kernels + "]";
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
    const std::string device = ggml_backend_dev_description(ggml_backend_get_device(vk));
    std::string error;
    const std::string body = reports(vk, cpu, error);
    if (saved)
        setenv("GGML_VK_DISABLE_FUSION", restore.c_str(), 1);
    else
        unsetenv("GGML_VK_DISABLE_FUSION");
    ggml_backend_free(cpu);
    ggml_backend_free(vk);
    if (!error.empty()) return "{\"error\": \"" + error.substr(0, 400) + "\"}";
    return "{\"device\": \"" + device + "\", " + body + "}";
}
