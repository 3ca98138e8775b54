// The sd pack's Vulkan RoPE: the kernel "sd.rope_apply.vulkan" for sd.rope_apply.v1
// (shaders/rope_apply.comp), the fusion rule "sd.rms_norm_mul_rope.vulkan" for RMS_NORM ->
// MUL(1-D weight) -> sd.rope_apply.v1 (shaders/rms_norm_mul_rope.comp) and the rule
// "sd.rms_norm_mul_rope_scale_f16.vulkan" continuing it with -> SCALE -> CPY into F16 (the same
// shader with SCALE_F16), all one workgroup per output row, reading the input rows, pe and the weight
// through their strides. The F16 rule writes any destination layout (e.g. a view of a K/V cache);
// a destination overlapping an input is computed into the plan workspace and copied. The first
// rule's optimize delays the leading links of every such chain past the independent nodes between
// them (ggml_ext_graph_delay), so that the chain becomes consecutive and can match.
//
// Numerics (shaders/rope.glsl): the rotation rounds each product separately (no FMA), so the kernel
// is bit-identical to the CPU kernel. The fused normalisation repeats the native Vulkan RMS_NORM's
// F32 reduction order with the same workgroup size; it is not claimed bit-identical to the native
// RMS_NORM -> MUL -> rope chain (the driver may contract the native sum of squares differently). The
// F16 rule then computes the native SCALE's x * scale + bias with both operations rounded and the
// native CPY's round-to-nearest-even F16 conversion.
//
// GGML_VK_DISABLE_FUSION set to anything but "0" makes the fusion rules match nothing (and optimize
// move nothing).
#include <ggml.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/pack.h"
#include "common/rope.h"
#include "vulkan/sd_vulkan.h"

namespace sd::vulkan {
namespace {

ggml_ext_op_t g_rope_op = nullptr;

// The largest binding the device accepts, less the slack of an unaligned first byte.
uint64_t max_binding_bytes(ggml_backend_dev_t device) {
    ggml_ext_vulkan_device_info info{};
    info.struct_size = sizeof info;
    if (!service() || !service()->device_info(device, &info)) return 0;
    return info.max_storage_range > info.storage_offset_alignment
               ? info.max_storage_range - info.storage_offset_alignment
               : 0;
}

// Of type (F32 or F16), element-aligned strides, and small enough for one binding with 32-bit
// element indices.
bool bindable(ggml_backend_dev_t device, const ggml_tensor * t, ggml_type type) {
    const size_t unit = ggml_type_size(type);
    const uint64_t limit = std::min<uint64_t>(max_binding_bytes(device), uint64_t{4} << 30);
    return t && t->type == type && ggml_nbytes(t) <= limit &&
           std::all_of(t->nb, t->nb + GGML_MAX_DIMS, [unit](size_t nb) { return nb % unit == 0; });
}

// A sd.rope_apply.v1 node the shaders compute: every tensor bindable, the contiguous output of the
// schema (the schema already checked the shapes).
bool rope_node_ok(ggml_backend_dev_t device, const ggml_tensor * node) {
    if (!node || !g_rope_op || ggml_ext_node_op(node) != g_rope_op) return false;
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * pe = node->src[1];
    return bindable(device, a, GGML_TYPE_F32) && bindable(device, pe, GGML_TYPE_F32) &&
           bindable(device, node, GGML_TYPE_F32) && ggml_is_contiguous(node);
}

// Workgroup size for n elements per row: a power of two in [32, 256], as the native norm chooses it.
uint32_t block_size(int64_t n) {
    return static_cast<uint32_t>(
        std::clamp<uint64_t>(std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(n, 1))), 32, 256));
}

struct Push {
    uint32_t dim, heads, tokens, rows;
    uint32_t pairs;
    uint32_t x_off, x_s[4];
    uint32_t pe_off, pe_s[4];
    uint32_t y_off;
    uint32_t w_off, w_s0;
    float eps;
    float scale, bias;
    uint32_t d_ne[3];
    uint32_t d_s[4];
};
static_assert(sizeof(Push) <= 128, "push constants are at most 128 bytes");

// What one dispatch computes: the rows of the rope node, from x (its input, or the RMS_NORM input
// when the MUL weight w is set), and with cpy set continued by the SCALE node and the terminal CPY
// into F16.
struct Job {
    const char * what;
    const ggml_tensor * x;
    const ggml_tensor * w;
    float eps;
    const ggml_tensor * rope;
    const ggml_tensor * scale;
    const ggml_tensor * cpy;
};

// A range bound for the shader: its binding, where it is, and its first element (of `unit` bytes)
// in the binding.
struct Operand {
    ggml_ext_vulkan_binding binding;
    ggml_ext_vulkan_buffer_info info;
    uint32_t offset;
};

// false (error set) when the range cannot be resolved or addressed in units.
bool resolve(ggml_backend_t backend, const char * what, const ggml_ext_vulkan_range & range, size_t unit,
             bool written, Operand & operand) {
    operand.binding = {range, written};
    if (!service()->buffer_info(backend, &range, &operand.info)) return false;
    if (operand.info.shader_offset % unit != 0) {
        ggml_ext_set_error((std::string(what) + ": tensor '" + (range.tensor ? range.tensor->name : "") +
                            "' is not aligned to its element size")
                               .c_str());
        return false;
    }
    operand.offset = static_cast<uint32_t>(operand.info.shader_offset / unit);
    return true;
}

bool overlap(const Operand & a, const Operand & b) {
    return a.info.storage == b.info.storage && a.info.begin < b.info.end && b.info.begin < a.info.end;
}

void set_strides(const ggml_tensor * t, size_t unit, uint32_t (&s)[4]) {
    for (int i = 0; i < 4; ++i)
        s[i] = static_cast<uint32_t>(t->nb[i] / unit);
}

Push push_of(const Job & job) {
    const ggml_tensor * pe = job.rope->src[1];
    Push push{};
    push.dim = static_cast<uint32_t>(job.x->ne[0]);
    push.heads = static_cast<uint32_t>(job.x->ne[1]);
    push.tokens = static_cast<uint32_t>(job.x->ne[2]);
    push.rows = static_cast<uint32_t>(ggml_nrows(job.rope));
    push.pairs = static_cast<uint32_t>(pe->ne[2]);
    push.eps = job.eps;
    set_strides(job.x, sizeof(float), push.x_s);
    set_strides(pe, sizeof(float), push.pe_s);
    if (job.w) push.w_s0 = static_cast<uint32_t>(job.w->nb[0] / sizeof(float));
    if (job.cpy) {
        const auto scale = sd::native_params<ggml_ext_scale_params>(job.scale);
        push.scale = scale.scale;
        push.bias = scale.bias;
        for (int i = 0; i < 3; ++i)
            push.d_ne[i] = static_cast<uint32_t>(job.cpy->ne[i]);
        set_strides(job.cpy, sizeof(uint16_t), push.d_s);
    }
    return push;
}

// Records the job's dispatch writing into y (the rope node, the CPY node or the workspace).
ggml_status dispatch_job(ggml_backend_t backend, const Job & job, Push push, const Operand & x,
                         const Operand & pe, const Operand * w, const Operand & y) {
    push.x_off = x.offset;
    push.pe_off = pe.offset;
    push.y_off = y.offset;
    const uint32_t interleaved = rope::attrs_of(job.rope).interleaved != 0;
    const uint32_t gx = std::min<uint32_t>(push.rows, 65535), gy = (push.rows + gx - 1) / gx;
    if (!w)  // the plain kernel only walks the D/2 pairs of a row
        return dispatch(backend, "sd_rope_apply", {x.binding, pe.binding, y.binding},
                        {block_size(job.x->ne[0] / 2), interleaved}, &push, sizeof push, gx, gy);
    // The fused shaders reduce over the row's D channels as the native RMS_NORM does.
    push.w_off = w->offset;
    return dispatch(backend, job.cpy ? "sd_rms_norm_mul_rope_scale_f16" : "sd_rms_norm_mul_rope",
                    {x.binding, pe.binding, y.binding, w->binding}, {block_size(job.x->ne[0]), interleaved},
                    &push, sizeof push, gx, gy);
}

// The F16 destination overlaps an input: the dispatch writes the destination's extent in the
// workspace (first copied from the destination, so that a strided destination's gaps survive),
// which is then copied over the destination.
ggml_status record_staged(ggml_backend_t backend, const Job & job, const Push & push, const Operand & x,
                          const Operand & pe, const Operand * w, const Operand & y,
                          const ggml_ext_vulkan_range & workspace) {
    const uint64_t bytes = y.info.end - y.info.begin;
    if (!workspace.buffer || workspace.size < bytes || y.info.begin % 4 != 0 || bytes % 4 != 0) {
        ggml_ext_set_error((std::string(job.what) +
                            ": the F16 destination overlaps an input and cannot be staged (that needs "
                            "the workspace and an extent 4-byte aligned in offset and size)")
                               .c_str());
        return GGML_STATUS_FAILED;
    }
    const ggml_ext_vulkan_range staged{nullptr, workspace.buffer, workspace.offset, bytes};
    Operand ws;
    if (!resolve(backend, job.what, staged, sizeof(uint16_t), true, ws)) return GGML_STATUS_FAILED;
    ggml_status status = service()->copy(backend, &staged, &y.binding.range);
    if (status == GGML_STATUS_SUCCESS) status = dispatch_job(backend, job, push, x, pe, w, ws);
    if (status == GGML_STATUS_SUCCESS) status = service()->copy(backend, &y.binding.range, &staged);
    return status;
}

// Records the job. An output overlapping an input is a caller-made layout (custom nodes are never
// placed over their inputs, and a fused range's external inputs stay allocated through its output):
// the F16 continuation handles it through the workspace, the F32 outputs refuse it (as on CPU).
ggml_status record(ggml_backend_t backend, const Job & job, const ggml_ext_vulkan_range & workspace = {}) {
    if (ggml_nelements(job.rope) == 0) return GGML_STATUS_SUCCESS;
    const ggml_tensor * out = job.cpy ? job.cpy : job.rope;
    const size_t out_unit = job.cpy ? sizeof(uint16_t) : sizeof(float);
    Operand x, pe, w, y;
    if (!resolve(backend, job.what, {job.x, nullptr, 0, 0}, sizeof(float), false, x) ||
        !resolve(backend, job.what, {job.rope->src[1], nullptr, 0, 0}, sizeof(float), false, pe) ||
        (job.w && !resolve(backend, job.what, {job.w, nullptr, 0, 0}, sizeof(float), false, w)) ||
        !resolve(backend, job.what, {out, nullptr, 0, 0}, out_unit, true, y))
        return GGML_STATUS_FAILED;
    const Operand * weight = job.w ? &w : nullptr;
    const Push push = push_of(job);
    if (!overlap(y, x) && !overlap(y, pe) && !(weight && overlap(y, w)))
        return dispatch_job(backend, job, push, x, pe, weight, y);
    if (job.cpy) return record_staged(backend, job, push, x, pe, weight, y, workspace);
    ggml_ext_set_error((std::string(job.what) + ": the output overlaps an input; not supported").c_str());
    return GGML_STATUS_FAILED;
}

// ---- the single-node kernel ------------------------------------------------------------------

bool kernel_supports(ggml_backend_dev_t device, const ggml_tensor * node, void *) {
    return rope_node_ok(device, node);
}

ggml_status kernel_execute(const ggml_ext_execute_params * params) {
    const ggml_tensor * node = params->node;
    return record(params->backend,
                  {"sd.rope_apply.vulkan", node->src[0], nullptr, 0.0f, node, nullptr, nullptr});
}

// ---- the fusions RMS_NORM -> MUL(1-D weight) -> sd.rope_apply [-> SCALE -> CPY into F16] ---------

constexpr const char * kFusion = "sd.rms_norm_mul_rope.vulkan";
constexpr const char * kScaledFusion = "sd.rms_norm_mul_rope_scale_f16.vulkan";

// Whether nodes first, first + 1, first + 2 are RMS_NORM -> MUL(1-D weight) -> rope as the fused
// shaders compute them (the runtime checks legality: uses, flags, views).
bool norm_mul_rope_at(ggml_backend_dev_t device, const ggml_cgraph * graph, int first) {
    if (first + 3 > ggml_graph_n_nodes(graph)) return false;
    const ggml_tensor * norm = ggml_graph_node(graph, first);
    const ggml_tensor * mul = ggml_graph_node(graph, first + 1);
    const ggml_tensor * rope = ggml_graph_node(graph, first + 2);
    if (norm->op != GGML_OP_RMS_NORM || mul->op != GGML_OP_MUL || !rope_node_ok(device, rope)) return false;
    const ggml_tensor * x = norm->src[0];
    const ggml_tensor * w = mul->src[1];
    if (!bindable(device, x, GGML_TYPE_F32) || norm->type != GGML_TYPE_F32 || !ggml_are_same_shape(x, norm))
        return false;
    return mul->src[0] == norm && mul->type == GGML_TYPE_F32 && ggml_are_same_shape(mul, norm) &&
           bindable(device, w, GGML_TYPE_F32) && w->ne[0] == norm->ne[0] && ggml_nelements(w) == w->ne[0] &&
           rope->src[0] == mul;
}

int fusion_match(ggml_backend_dev_t device, const ggml_cgraph * graph, int first, void *) {
    return !fusion_disabled() && norm_mul_rope_at(device, graph, first) ? 3 : 0;
}

// The chain continued by SCALE (any scale and bias) and a terminal CPY of the scaled rope into F16,
// any destination layout (a view of a K/V cache, or an owning cast).
int scaled_fusion_match(ggml_backend_dev_t device, const ggml_cgraph * graph, int first, void *) {
    if (fusion_disabled() || first + 5 > ggml_graph_n_nodes(graph) || !norm_mul_rope_at(device, graph, first))
        return 0;
    const ggml_tensor * rope = ggml_graph_node(graph, first + 2);
    const ggml_tensor * scale = ggml_graph_node(graph, first + 3);
    const ggml_tensor * cpy = ggml_graph_node(graph, first + 4);
    return scale->op == GGML_OP_SCALE && scale->src[0] == rope && scale->type == GGML_TYPE_F32 &&
                   cpy->op == GGML_OP_CPY && cpy->src[0] == scale && bindable(device, cpy, GGML_TYPE_F16)
               ? 5
               : 0;
}

// The destination may overlap an input only in caller-placed memory (the allocator never places
// distinct live tensors over each other), which metadata cannot tell: the workspace is requested
// always, bounded by the destination's extent rounded up to 4 bytes (a K/V cache slice: the output
// in F16).
ggml_status scaled_fusion_prepare(const ggml_ext_fusion_prepare_params * params, void ** state,
                                  size_t * workspace_bytes) {
    *state = nullptr;
    *workspace_bytes = (ggml_nbytes(params->nodes[params->n_nodes - 1]) + 3) / 4 * 4;
    return GGML_STATUS_SUCCESS;
}

ggml_status fusion_execute(const ggml_ext_fusion_execute_params * params) {
    ggml_tensor * const * nodes = params->nodes;
    const bool scaled = params->n_nodes == 5;
    const Job job{scaled ? kScaledFusion : kFusion, nodes[0]->src[0], nodes[1]->src[1],
                  sd::native_params<ggml_ext_norm_params>(nodes[0]).eps,         nodes[2],         scaled ? nodes[3] : nullptr,
                  scaled ? nodes[4] : nullptr};
    return record(params->backend, job,
                  workspace_range(params->workspace, params->workspace_data, params->workspace_size));
}

// ---- graph delay: making a chain consecutive ------------------------------------------------------

// Whether node is link k (1 MUL, 2 rope, 3 SCALE, 4 CPY) of a chain, given link k - 1.
bool is_link(const ggml_tensor * node, size_t k, const ggml_tensor * previous) {
    static constexpr ggml_op kOps[] = {GGML_OP_RMS_NORM, GGML_OP_MUL, GGML_OP_CUSTOM, GGML_OP_SCALE,
                                       GGML_OP_CPY};
    return node->src[0] == previous && node->op == kOps[k] && (k != 2 || ggml_ext_node_op(node) == g_rope_op);
}

// The positions of the chain RMS_NORM -> MUL -> rope [-> SCALE -> CPY] starting with the RMS_NORM
// at `first`, each link the first later node consuming the previous one; empty when there is no
// rope. match checks the rest.
std::vector<int> chain_at(const ggml_cgraph * graph, int first) {
    if (ggml_graph_node(graph, first)->op != GGML_OP_RMS_NORM) return {};
    std::vector<int> chain{first};
    for (int i = first + 1; i < ggml_graph_n_nodes(graph) && chain.size() < 5; ++i)
        if (is_link(ggml_graph_node(graph, i), chain.size(), ggml_graph_node(graph, chain.back())))
            chain.push_back(i);
    if (chain.size() == 4) chain.pop_back();  // a SCALE without the CPY: the 3-node fusion
    return chain.size() >= 3 ? chain : std::vector<int>{};
}

// Both fusions' optimize (registered once): every chain becomes consecutive. Idempotent.
void fusion_optimize(ggml_backend_dev_t, ggml_cgraph * graph, void *) {
    make_chains_consecutive(graph, [&](int i) { return chain_at(graph, i); });
}

}  // namespace

const ggml_ext_kernel_desc * rope_kernel_desc() {
    static const ggml_ext_kernel_desc kernel =
        custom_kernel_desc("sd.rope_apply.vulkan", rope::op(), kernel_supports, kernel_execute);
    return &kernel;
}

bool register_rope(ggml_backend_dev_t device, ggml_ext_op_t rope_op) {
    g_rope_op = rope_op;
    if (!register_replayable_kernel(device, rope_kernel_desc())) return false;
    ggml_ext_fusion_desc fusion = fusion_desc(kFusion, fusion_match, fusion_execute);
    fusion.optimize = fusion_optimize;
    ggml_ext_fusion_desc scaled = fusion;
    scaled.name = kScaledFusion;
    scaled.priority = 1;  // tried first: it takes the longer range
    scaled.optimize = nullptr;
    scaled.match = scaled_fusion_match;
    scaled.prepare = scaled_fusion_prepare;
    return register_replayable_fusion(device, &fusion) && register_replayable_fusion(device, &scaled);
}

}  // namespace sd::vulkan
