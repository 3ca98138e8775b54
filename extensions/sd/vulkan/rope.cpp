// The sd pack's Vulkan RoPE: the kernel "sd.rope_apply.vulkan" for sd.rope_apply.v1
// (shaders/rope_apply.comp) and the fusion rule "sd.rms_norm_mul_rope.vulkan" for
// RMS_NORM -> MUL(1-D weight) -> sd.rope_apply.v1 (shaders/rms_norm_mul_rope.comp), both one
// workgroup per output row, reading the input rows, pe and the weight through their strides.
//
// Numerics (shaders/rope.glsl): the rotation rounds each product separately (no FMA), so the kernel
// is bit-identical to the CPU kernel. The fused normalisation repeats the native Vulkan RMS_NORM's
// F32 reduction order with the same workgroup size; it is not claimed bit-identical to the native
// RMS_NORM -> MUL -> rope chain (the driver may contract the native sum of squares differently).
//
// GGML_VK_DISABLE_FUSION set to anything but "0" makes the fusion rule match nothing.
#include <ggml.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/rope.h"
#include "vulkan/vulkan.h"

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

// F32, float-aligned strides, and small enough for one binding with 32-bit float indices.
bool bindable_f32(ggml_backend_dev_t device, const ggml_tensor * t) {
    const uint64_t limit = std::min<uint64_t>(max_binding_bytes(device), uint64_t{4} << 30);
    return t && t->type == GGML_TYPE_F32 && ggml_nbytes(t) <= limit &&
           std::all_of(t->nb, t->nb + GGML_MAX_DIMS, [](size_t nb) { return nb % sizeof(float) == 0; });
}

// A sd.rope_apply.v1 node the shaders compute: every tensor bindable, the contiguous output of the
// schema (the schema already checked the shapes).
bool rope_node_ok(ggml_backend_dev_t device, const ggml_tensor * node) {
    if (!node || !g_rope_op || ggml_ext_node_op(node) != g_rope_op) return false;
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * pe = node->src[1];
    return bindable_f32(device, a) && bindable_f32(device, pe) && bindable_f32(device, node) &&
           ggml_is_contiguous(node);
}

// Workgroup size for n elements per row: a power of two in [32, 256], as the native norm chooses it.
uint32_t block_size(int64_t n) {
    return static_cast<uint32_t>(
        std::clamp<uint64_t>(std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(n, 1))), 32, 256));
}

struct Push {
    uint32_t dim, heads, tokens, rows;
    uint32_t pairs;
    uint32_t x_off, x_s0, x_s1, x_s2, x_s3;
    uint32_t pe_off, pe_s0, pe_s1, pe_s2, pe_s3;
    uint32_t y_off;
    uint32_t w_off, w_s0;
    float eps;
};

// The range of t, resolved: its binding, and its first float in the binding (offset). false
// (error set) when it is not float-aligned or overlaps the output out.
bool bind(ggml_backend_t backend, const char * what, const ggml_tensor * t, const ggml_tensor * out,
          bool written, ggml_ext_vulkan_binding & binding, uint32_t & offset) {
    binding = {{t, nullptr, 0, 0}, written};
    ggml_ext_vulkan_buffer_info info;
    if (!service()->buffer_info(backend, &binding.range, &info)) return false;
    if (info.shader_offset % sizeof(float) != 0) {
        ggml_ext_set_error((std::string(what) + ": tensor '" + t->name + "' is not float-aligned").c_str());
        return false;
    }
    offset = info.shader_offset / sizeof(float);
    if (t == out) return true;
    // Custom nodes are never placed over their inputs, and a fused range's external inputs stay
    // allocated through its output: an overlap is a caller-made layout, not supported (as on CPU).
    const ggml_ext_vulkan_range out_range{out, nullptr, 0, 0};
    ggml_ext_vulkan_buffer_info out_info;
    if (!service()->buffer_info(backend, &out_range, &out_info)) return false;
    if (out_info.storage == info.storage && out_info.begin < info.end && info.begin < out_info.end) {
        ggml_ext_set_error(
            (std::string(what) + ": the output overlaps input '" + t->name + "'; not supported").c_str());
        return false;
    }
    return true;
}

void set_strides(const ggml_tensor * t, uint32_t & s0, uint32_t & s1, uint32_t & s2, uint32_t & s3) {
    s0 = static_cast<uint32_t>(t->nb[0] / sizeof(float));
    s1 = static_cast<uint32_t>(t->nb[1] / sizeof(float));
    s2 = static_cast<uint32_t>(t->nb[2] / sizeof(float));
    s3 = static_cast<uint32_t>(t->nb[3] / sizeof(float));
}

// Records the rope of x (a, or the RMS_NORM input when w is set) into the rope node out.
ggml_status record(ggml_backend_t backend, const ggml_tensor * x, const ggml_tensor * w, float eps,
                   ggml_tensor * out) {
    if (ggml_nelements(out) == 0) return GGML_STATUS_SUCCESS;
    const char * what = w ? "sd.rms_norm_mul_rope.vulkan" : "sd.rope_apply.vulkan";
    const ggml_tensor * pe = out->src[1];
    Push push{};
    push.dim = static_cast<uint32_t>(x->ne[0]);
    push.heads = static_cast<uint32_t>(x->ne[1]);
    push.tokens = static_cast<uint32_t>(x->ne[2]);
    push.rows = static_cast<uint32_t>(ggml_nrows(out));
    push.pairs = static_cast<uint32_t>(pe->ne[2]);
    push.eps = eps;
    set_strides(x, push.x_s0, push.x_s1, push.x_s2, push.x_s3);
    set_strides(pe, push.pe_s0, push.pe_s1, push.pe_s2, push.pe_s3);
    ggml_ext_vulkan_binding bx, bpe, by, bw;
    if (!bind(backend, what, x, out, false, bx, push.x_off) ||
        !bind(backend, what, pe, out, false, bpe, push.pe_off) ||
        !bind(backend, what, out, out, true, by, push.y_off))
        return GGML_STATUS_FAILED;
    if (w) {
        if (!bind(backend, what, w, out, false, bw, push.w_off)) return GGML_STATUS_FAILED;
        push.w_s0 = static_cast<uint32_t>(w->nb[0] / sizeof(float));
    }
    const uint32_t interleaved = rope::attrs_of(out).interleaved != 0;
    // The fused shader reduces over the row's D channels as the native RMS_NORM does; the plain one
    // only walks the D/2 pairs.
    const uint32_t wg = w ? block_size(x->ne[0]) : block_size(x->ne[0] / 2);
    const uint32_t gx = std::min<uint32_t>(push.rows, 65535), gy = (push.rows + gx - 1) / gx;
    if (w)
        return dispatch(backend, "sd_rms_norm_mul_rope", {bx, bpe, by, bw}, {wg, interleaved}, &push,
                        sizeof push, gx, gy);
    return dispatch(backend, "sd_rope_apply", {bx, bpe, by}, {wg, interleaved}, &push, sizeof push, gx, gy);
}

// ---- the single-node kernel ------------------------------------------------------------------

bool kernel_supports(ggml_backend_dev_t device, const ggml_tensor * node, void *) {
    return rope_node_ok(device, node);
}

ggml_status kernel_execute(const ggml_ext_execute_params * params) {
    return record(params->backend, params->node->src[0], nullptr, 0.0f, params->node);
}

// ---- the fusion RMS_NORM -> MUL(1-D weight) -> sd.rope_apply ----------------------------------

bool fusion_disabled() {
    const char * value = std::getenv("GGML_VK_DISABLE_FUSION");
    return value && std::strcmp(value, "0") != 0;
}

int fusion_match(ggml_backend_dev_t device, const ggml_cgraph * graph, int first, void *) {
    if (fusion_disabled() || first + 3 > ggml_graph_n_nodes(graph)) return 0;
    const ggml_tensor * norm = ggml_graph_node(graph, first);
    const ggml_tensor * mul = ggml_graph_node(graph, first + 1);
    const ggml_tensor * rope = ggml_graph_node(graph, first + 2);
    if (norm->op != GGML_OP_RMS_NORM || mul->op != GGML_OP_MUL || !rope_node_ok(device, rope)) return 0;
    const ggml_tensor * x = norm->src[0];
    const ggml_tensor * w = mul->src[1];
    if (!bindable_f32(device, x) || norm->type != GGML_TYPE_F32 || !ggml_are_same_shape(x, norm)) return 0;
    if (mul->src[0] != norm || mul->type != GGML_TYPE_F32 || !ggml_are_same_shape(mul, norm) ||
        !bindable_f32(device, w) || w->ne[0] != norm->ne[0] || ggml_nelements(w) != w->ne[0])
        return 0;
    return rope->src[0] == mul ? 3 : 0;  // the runtime checks legality (uses, flags, views)
}

ggml_status fusion_execute(const ggml_ext_fusion_execute_params * params) {
    const ggml_tensor * norm = params->nodes[0];
    float eps;
    std::memcpy(&eps, norm->op_params, sizeof eps);
    return record(params->backend, norm->src[0], params->nodes[1]->src[1], eps, params->nodes[2]);
}

}  // namespace

const ggml_ext_kernel_desc * rope_kernel_desc() {
    static const ggml_ext_kernel_desc kernel = [] {
        ggml_ext_kernel_desc k{};
        k.struct_size = sizeof k;
        k.version = GGML_EXT_KERNEL_DESC_VERSION;
        k.name = "sd.rope_apply.vulkan";
        k.op = GGML_OP_CUSTOM;
        k.custom_op = rope::op();
        k.supports = kernel_supports;
        k.execute = kernel_execute;
        return k;
    }();
    return &kernel;
}

bool register_rope(ggml_backend_dev_t device, ggml_ext_op_t rope_op) {
    g_rope_op = rope_op;
    if (!ggml_ext_register_kernel(device, rope_kernel_desc())) return false;
    ggml_ext_fusion_desc fusion{};
    fusion.struct_size = sizeof fusion;
    fusion.version = GGML_EXT_FUSION_DESC_VERSION;
    fusion.name = "sd.rms_norm_mul_rope.vulkan";
    fusion.match = fusion_match;
    fusion.execute = fusion_execute;
    return ggml_ext_register_fusion(device, &fusion);
}

}  // namespace sd::vulkan
