// ggx-bench: benchmarks of the runtime itself, as one JSON report on stdout.
//
//   ggx-bench [memory] [sched] [ext] [fusion] [sd-rope] [sd-int8] [sd-vulkan] [replay]   (all when none is named)
//
// memory: peak activation memory the graph allocator plans for a 24-layer transformer (hidden 2048,
//         16 heads, 512 tokens), as a ratio to the liveness lower bound: the maximum over steps of
//         the bytes of tensors live at that step.
// sched:  scheduler overhead per node for a graph of 5,000 tiny ops: placing + allocating on a
//         reused scheduler, and dispatching, against the CPU backend computing the same graph directly.
// ext:    extension dispatch per node (ext.cpp): 1,000 tiny SCALE nodes run by an override kernel vs
//         native, through a scheduler whose plan is reused.
// fusion: a memory-bound chain of 4 pointwise ops on 64 MiB tensors (fusion.cpp): native kernels vs
//         one fused pass of a fusion rule, speedup and bandwidth as a ratio to the roofline.
// sd-rope: the sd pack's RMSNorm -> Mul -> RoPE at x = [128, 24, 4096, 1] (sd_rope.cpp): fused vs the
//         three separate ops (and vs sd.cpp's decomposed native graph), bandwidth vs the roofline.
// sd-int8: the sd pack's INT8 linear (K = N = 3072, M = 256, ConvRot 256, packed input reused) vs F32
//         mul_mat, against the int8 peak; ConvRot quantization of [3072, 4096] vs DRAM (sd_int8.cpp).
// sd-vulkan: each of the sd pack's Vulkan fusion rules fused vs unfused on Vulkan0 (sd_vulkan.cpp; built
//         with the Vulkan backend only).
// replay: host and wall time per step of ggx-run's DiT on Vulkan0 with plan replay off and on
//         (replay.cpp; built with the Vulkan backend only).
#include <ggml-ext-params.h>
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-ext.h>
#include <ggml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct ContextDeleter {
    void operator()(ggml_context * ctx) const { ggml_free(ctx); }
};
using Context = std::unique_ptr<ggml_context, ContextDeleter>;

Context no_alloc_context(size_t bytes) { return Context(ggml_init({bytes, nullptr, true})); }

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---------------------------------------------------------------------------------------------
// memory

struct TransformerShape {
    int layers = 24, hidden = 2048, heads = 16, tokens = 512, ffn = 5632;
};

// One layer's weights, shared by every layer (the benchmark measures activations).
struct Weights {
    ggml_tensor *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *w_gate, *w_up, *w_down;
};

Weights make_weights(ggml_context * ctx, const TransformerShape & s) {
    const auto matrix = [&](int64_t in, int64_t out) {
        return ggml_new_tensor_2d(ctx, GGML_TYPE_F16, in, out);
    };
    Weights w;
    w.attn_norm = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, s.hidden);
    w.ffn_norm = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, s.hidden);
    w.wq = matrix(s.hidden, s.hidden);
    w.wk = matrix(s.hidden, s.hidden);
    w.wv = matrix(s.hidden, s.hidden);
    w.wo = matrix(s.hidden, s.hidden);
    w.w_gate = matrix(s.hidden, s.ffn);
    w.w_up = matrix(s.hidden, s.ffn);
    w.w_down = matrix(s.ffn, s.hidden);
    return w;
}

// Pre-norm attention (explicit softmax of scaled scores, causal mask, RoPE) and a SwiGLU MLP.
ggml_tensor * transformer_layer(ggml_context * ctx, ggml_tensor * x, const Weights & w, ggml_tensor * pos,
                                ggml_tensor * mask, const TransformerShape & s) {
    const int64_t d = s.hidden / s.heads, t = s.tokens;
    ggml_tensor * h = ggml_mul(ctx, ggml_rms_norm(ctx, x, 1e-6f), w.attn_norm);
    const auto heads = [&](ggml_tensor * m) {
        return ggml_reshape_3d(ctx, ggml_mul_mat(ctx, m, h), d, s.heads, t);
    };
    const auto rope = [&](ggml_tensor * a) {
        return ggml_rope_ext(ctx, a, pos, nullptr, static_cast<int>(d), GGML_ROPE_TYPE_NEOX, 0, 10000.0f,
                             1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    };
    ggml_tensor * q = ggml_permute(ctx, rope(heads(w.wq)), 0, 2, 1, 3);            // [d, t, heads]
    ggml_tensor * k = ggml_permute(ctx, rope(heads(w.wk)), 0, 2, 1, 3);            // [d, t, heads]
    ggml_tensor * v = ggml_cont(ctx, ggml_permute(ctx, heads(w.wv), 1, 2, 0, 3));  // [t, d, heads]
    ggml_tensor * scores = ggml_mul_mat(ctx, k, q);                                // [t_k, t_q, heads]
    ggml_tensor * probs = ggml_soft_max_ext(ctx, scores, mask, 1.0f / std::sqrt(static_cast<float>(d)), 0.0f);
    ggml_tensor * attn = ggml_mul_mat(ctx, v, probs);  // [d, t_q, heads]
    attn = ggml_reshape_2d(ctx, ggml_cont(ctx, ggml_permute(ctx, attn, 0, 2, 1, 3)), s.hidden, t);
    x = ggml_add(ctx, x, ggml_mul_mat(ctx, w.wo, attn));
    h = ggml_mul(ctx, ggml_rms_norm(ctx, x, 1e-6f), w.ffn_norm);
    ggml_tensor * gated =
        ggml_swiglu_split(ctx, ggml_mul_mat(ctx, w.w_gate, h), ggml_mul_mat(ctx, w.w_up, h));
    return ggml_add(ctx, x, ggml_mul_mat(ctx, w.w_down, gated));
}

// Bytes live at the worst step: a tensor with storage of its own is live from the node producing
// it (leafs: from the start) to its last reader, reading through views included (outputs: to the end).
size_t liveness_lower_bound(ggml_cgraph * graph, size_t alignment) {
    const int n = ggml_graph_n_nodes(graph);
    struct Span {
        int first, last;
        size_t bytes;
    };
    std::map<const ggml_tensor *, Span> spans;
    const auto owner = [](const ggml_tensor * t) { return t->view_src ? t->view_src : t; };
    const auto touch = [&](const ggml_tensor * t, int step) {
        const ggml_tensor * o = owner(t);
        if (o->data || o->buffer) return;  // weights: not activations
        auto [it, fresh] =
            spans.try_emplace(o, Span{step, step, (ggml_nbytes(o) + alignment - 1) / alignment * alignment});
        it->second.first = std::min(it->second.first, step);
        it->second.last = std::max(it->second.last, step);
        if (o->flags & GGML_TENSOR_FLAG_OUTPUT) it->second.last = n - 1;
    };
    for (int i = 0; i < n; ++i) {
        ggml_tensor * node = ggml_graph_node(graph, i);
        for (const ggml_tensor * src : node->src)
            if (src) touch(src, src->op == GGML_OP_NONE && !src->view_src ? 0 : i);
        touch(node, i);
    }
    std::vector<int64_t> delta(n + 1, 0);
    for (const auto & [tensor, span] : spans) {
        delta[span.first] += static_cast<int64_t>(span.bytes);
        delta[span.last + 1] -= static_cast<int64_t>(span.bytes);
    }
    int64_t live = 0, peak = 0;
    for (int i = 0; i < n; ++i)
        peak = std::max(peak, live += delta[i]);
    return static_cast<size_t>(peak);
}

// A fusion rule for the memory suite: RMS_NORM then MUL by a 1-D weight, one pass per row (the
// normalised row never exists in memory). Registered on the CPU device of this process only, and
// matching only while the memory suite measures (registrations are permanent; the other suites'
// rules must not lose their nodes to it).
bool g_norm_mul_active = false;

int match_norm_mul(ggml_backend_dev_t, const ggml_cgraph * graph, int first, void *) {
    if (!g_norm_mul_active || first + 1 >= ggml_graph_n_nodes(graph)) return 0;
    const ggml_tensor * norm = ggml_graph_node(graph, first);
    const ggml_tensor * mul = ggml_graph_node(graph, first + 1);
    const bool f32 =
        norm->type == GGML_TYPE_F32 && norm->src[0]->type == GGML_TYPE_F32 && mul->type == GGML_TYPE_F32;
    return norm->op == GGML_OP_RMS_NORM && mul->op == GGML_OP_MUL && mul->src[0] == norm && f32 &&
                   ggml_is_contiguous(norm->src[0]) && ggml_is_contiguous(mul) &&
                   mul->src[1]->type == GGML_TYPE_F32 && ggml_nelements(mul->src[1]) == norm->ne[0] &&
                   ggml_is_contiguous(mul->src[1])
               ? 2
               : 0;
}

ggml_status execute_norm_mul(const ggml_ext_fusion_execute_params * params) {
    const ggml_tensor * norm = params->nodes[0];
    const ggml_tensor * mul = params->nodes[1];
    ggml_ext_norm_params norm_params{};
    ggml_ext_get_op_params(norm, norm->op, &norm_params, sizeof norm_params);
    const float eps = norm_params.eps;
    const int64_t n = norm->ne[0], rows = ggml_nrows(norm);
    const auto * w = static_cast<const float *>(mul->src[1]->data);
    for (int64_t r = 0; r < rows; ++r) {
        const float * x = static_cast<const float *>(norm->src[0]->data) + r * n;
        float * y = static_cast<float *>(mul->data) + r * n;
        double sum = 0.0;
        for (int64_t i = 0; i < n; ++i)
            sum += static_cast<double>(x[i]) * x[i];
        const float scale = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(n) + eps));
        for (int64_t i = 0; i < n; ++i)
            y[i] = x[i] * scale * w[i];
    }
    return GGML_STATUS_SUCCESS;
}

// Compute-buffer bytes the scheduler plans for graph on the CPU, with the device's fusion rules on or off.
// The buffer size (tensors and workspace) a scheduler over cpu reserves for graph.
size_t scheduled_bytes(ggml_backend_t cpu, ggml_cgraph * graph, bool fusion) {
    ggml_backend_dev_t device = ggml_backend_get_device(cpu);
    ggml_ext_dev_set_enabled(device, fusion);
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, nullptr, 1, 8192, false, false);
    const size_t bytes =
        ggml_backend_sched_reserve(sched, graph) ? ggml_backend_sched_get_buffer_size(sched, cpu) : 0;
    ggml_backend_sched_free(sched);
    ggml_ext_dev_set_enabled(device, true);
    return bytes;
}

// The workspace of graph's plan on cpu (the largest step request, native scratch included), from the
// plan query. It allocates graph, whose tensors then point into the freed scheduler's buffer: call
// it last.
size_t planned_workspace(ggml_backend_t cpu, ggml_cgraph * graph) {
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, nullptr, 1, 8192, false, false);
    size_t bytes = 0;
    if (ggml_backend_sched_alloc_graph(sched, graph)) {
        ggml_ext_sched_step step{};
        step.struct_size = sizeof step;
        for (int i = 0; ggml_ext_sched_get_step(sched, i, &step); ++i)
            bytes = std::max(bytes, step.workspace_bytes);
    }
    ggml_backend_sched_free(sched);
    return bytes;
}

std::string memory_report() {
    const TransformerShape s;
    ggml_backend_t cpu = ggml_backend_cpu_init();
    Context weights_ctx = no_alloc_context(ggml_tensor_overhead() * 16);
    const Weights w = make_weights(weights_ctx.get(), s);
    ggml_backend_buffer_t weights = ggml_backend_alloc_ctx_tensors(weights_ctx.get(), cpu);

    Context ctx = no_alloc_context(ggml_tensor_overhead() * 64 * s.layers + ggml_graph_overhead_custom(8192, false));
    ggml_tensor * x = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, s.hidden, s.tokens);
    ggml_tensor * pos = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_I32, s.tokens);
    ggml_tensor * mask = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F16, s.tokens, s.tokens);
    for (ggml_tensor * input : {x, pos, mask})
        ggml_set_input(input);
    ggml_tensor * y = x;
    for (int l = 0; l < s.layers; ++l)
        y = transformer_layer(ctx.get(), y, w, pos, mask, s);
    ggml_set_output(y);
    ggml_cgraph * graph = ggml_new_graph_custom(ctx.get(), 8192, false);
    ggml_build_forward_expand(graph, y);

    ggml_backend_buffer_type_t buft = ggml_backend_cpu_buffer_type();
    ggml_gallocr_t galloc = ggml_gallocr_new(buft);
    size_t planned = 0;
    const auto start = Clock::now();
    ggml_gallocr_measure_n(galloc, graph, nullptr, nullptr, &planned);
    const double plan_seconds = seconds_since(start);
    const size_t bound = liveness_lower_bound(graph, ggml_backend_buft_get_alignment(buft));

    // The peak-memory effect of fusion (eliminated intermediates take no memory).
    ggml_ext_fusion_desc rule{};
    rule.struct_size = sizeof rule;
    rule.version = GGML_EXT_FUSION_DESC_VERSION;
    rule.name = "ggx_bench.rms_norm_mul";
    rule.match = match_norm_mul;
    rule.execute = execute_norm_mul;
    rule.flags = GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE;  // it reads only the chain's inputs
    ggml_ext_register_fusion(ggml_backend_get_device(cpu), &rule);
    g_norm_mul_active = true;
    const size_t unfused = scheduled_bytes(cpu, graph, false), fused = scheduled_bytes(cpu, graph, true);
    g_norm_mul_active = false;
    char out[768];
    std::snprintf(out, sizeof out,
                  "{\"layers\": %d, \"hidden\": %d, \"heads\": %d, \"tokens\": %d, \"nodes\": %d, "
                  "\"planned_bytes\": %zu, \"liveness_lower_bound_bytes\": %zu, \"ratio\": %.4f, "
                  "\"plan_ms\": %.3f, \"sched_bytes_unfused\": %zu, \"sched_workspace_bytes_unfused\": %zu, "
                  "\"sched_bytes_fused_rms_norm_mul\": %zu, \"fusion_saving\": %.4f}",
                  s.layers, s.hidden, s.heads, s.tokens, ggml_graph_n_nodes(graph), planned, bound,
                  static_cast<double>(planned) / static_cast<double>(bound), plan_seconds * 1e3, unfused,
                  planned_workspace(cpu, graph), fused,
                  1.0 - static_cast<double>(fused) / static_cast<double>(unfused));
    ggml_gallocr_free(galloc);
    ggml_backend_buffer_free(weights);
    ggml_backend_free(cpu);
    return out;
}

// ---------------------------------------------------------------------------------------------
// sched

constexpr int kTinyNodes = 5000;
constexpr int kRepeats = 20;

// kTinyNodes ops on 16-element tensors: adds, muls and scales feeding each other.
ggml_cgraph * tiny_graph(ggml_context * ctx, ggml_tensor ** input) {
    ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    ggml_set_input(x);
    ggml_tensor * t = x;
    for (int i = 0; i < kTinyNodes; ++i) {
        switch (i % 3) {
            case 0:
                t = ggml_add(ctx, t, x);
                break;
            case 1:
                t = ggml_mul(ctx, t, x);
                break;
            default:
                t = ggml_scale(ctx, t, 0.5f);
                break;
        }
    }
    ggml_set_output(t);
    ggml_cgraph * graph = ggml_new_graph_custom(ctx, kTinyNodes + 16, false);
    ggml_build_forward_expand(graph, t);
    *input = x;
    return graph;
}

std::string sched_report(int n_threads) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(cpu, n_threads);
    Context ctx = no_alloc_context(ggml_tensor_overhead() * (kTinyNodes + 16) +
                                   ggml_graph_overhead_custom(kTinyNodes + 16, false));
    ggml_tensor * x = nullptr;
    ggml_cgraph * graph = tiny_graph(ctx.get(), &x);
    ggml_backend_sched_t sched = ggml_backend_sched_new(&cpu, nullptr, 1, kTinyNodes + 16, false, false);
    const std::vector<float> ones(16, 1.0f);

    // Warm-up: buffers reserved once.
    ggml_backend_sched_alloc_graph(sched, graph);
    ggml_backend_tensor_set(x, ones.data(), 0, sizeof(float) * 16);
    ggml_backend_sched_graph_compute(sched, graph);

    double alloc_s = 1e30, sched_compute_s = 1e30, direct_s = 1e30;
    for (int r = 0; r < kRepeats; ++r) {
        ggml_backend_sched_reset(sched);
        auto start = Clock::now();
        ggml_backend_sched_alloc_graph(sched, graph);
        alloc_s = std::min(alloc_s, seconds_since(start));
        ggml_backend_tensor_set(x, ones.data(), 0, sizeof(float) * 16);
        start = Clock::now();
        ggml_backend_sched_graph_compute(sched, graph);
        sched_compute_s = std::min(sched_compute_s, seconds_since(start));
        start = Clock::now();
        ggml_backend_graph_compute(cpu, graph);
        direct_s = std::min(direct_s, seconds_since(start));
    }
    const double per_node = 1e6 / kTinyNodes;
    char out[512];
    std::snprintf(out, sizeof out,
                  "{\"nodes\": %d, \"threads\": %d, \"alloc_us_per_node\": %.4f, "
                  "\"sched_compute_us_per_node\": %.4f, \"direct_compute_us_per_node\": %.4f, "
                  "\"alloc_plus_dispatch_overhead_us_per_node\": %.4f}",
                  ggml_graph_n_nodes(graph), n_threads, alloc_s * per_node, sched_compute_s * per_node,
                  direct_s * per_node, (alloc_s + sched_compute_s - direct_s) * per_node);
    ggml_backend_sched_free(sched);
    ggml_backend_free(cpu);
    return out;
}

}  // namespace

std::string ext_report();      // ext.cpp
std::string fusion_report();   // fusion.cpp
std::string sd_rope_report();  // sd_rope.cpp
std::string sd_int8_report();  // sd_int8.cpp
#ifdef GGX_BENCH_VULKAN
std::string sd_vulkan_report();  // sd_vulkan.cpp
std::string replay_report();     // replay.cpp
#endif

namespace {

std::string sched_reports() {
    std::string both(1, '[');
    both.append(sched_report(1)).append(", ").append(sched_report(2)).push_back(']');
    return both;
}

struct Suite {
    const char * name;  // on the command line; the JSON key has '_' for '-'
    std::string (*report)();
};

constexpr Suite kSuites[] = {
    {"memory", memory_report},       {"sched", sched_reports},    {"ext", ext_report},
    {"fusion", fusion_report},       {"sd-rope", sd_rope_report}, {"sd-int8", sd_int8_report},
#ifdef GGX_BENCH_VULKAN
    {"sd-vulkan", sd_vulkan_report}, {"replay", replay_report},
#endif
};

}  // namespace

int main(int argc, char ** argv) {
    // A suite whose graph cannot be built reports it in its "error" field; the others still run.
    ggml_ext_set_error_mode(GGML_EXT_ERROR_RETURN);
    std::vector<const Suite *> chosen;
    for (int i = 1; i < argc; ++i) {
        const auto it = std::find_if(std::begin(kSuites), std::end(kSuites),
                                     [&](const Suite & s) { return std::strcmp(argv[i], s.name) == 0; });
        if (it == std::end(kSuites)) {
            std::fprintf(
                stderr, "usage: ggx-bench [memory] [sched] [ext] [fusion] [sd-rope] [sd-int8] [sd-vulkan] [replay]\n");
            return 2;
        }
        chosen.push_back(it);
    }
    if (chosen.empty())
        for (const Suite & s : kSuites)
            chosen.push_back(&s);
    std::printf("{");
    for (size_t i = 0; i < chosen.size(); ++i) {
        std::string key = chosen[i]->name;
        std::replace(key.begin(), key.end(), '-', '_');
        std::printf("%s\"%s\": %s", i ? ", " : "", key.c_str(), chosen[i]->report().c_str());
        std::fflush(stdout);
    }
    std::printf("}\n");
    return 0;
}
