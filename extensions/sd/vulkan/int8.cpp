// The sd pack's INT8 GEMM on Vulkan (sd-ops.md 3.4), bit-identical to the CPU kernel (ConvRot
// quantization is vulkan/convrot.cpp):
//  * sd.linear_i8.v1 for int8 activations: the packed output of the quantize op, or ordinary I8
//    codes with an optional input_scale (shaders/linear_i8.comp, a tiled GEMM with exact int32 sums
//    and the F32 epilogue in the spec's order). F32 activations (quantized inside the op) are
//    unsupported here and run on the CPU.
//  * the fusion rule "sd.linear_i8_gated_residual.vulkan": sd.linear_i8.v1 (as above) -> optional
//    SCALE (no bias) -> MUL(gate) -> ADD(residual), gate and residual repeated over the output as
//    ggml_can_repeat allows, in one pass (linear_i8.comp with GATED_RESIDUAL): the epilogue goes on
//    with * scale, * gate, + residual, each rounded once in the native nodes' order, so the result
//    is bit-identical to the unfused chain on Vulkan (native SCALE, MUL and ADD round each operation
//    once too). Only the chain's last node is an output; the runtime refuses intermediates with
//    other consumers. The output may be the residual exactly (in place); any other overlap of the
//    output with an input is computed in the plan workspace and copied. The rule's optimize delays
//    a chain's leading links past the independent nodes between them (the gate's producer or its
//    view of the modulation, as a DiT block emits them) so that the chain becomes consecutive.
//  * the fusion rule "sd.linear_i8_swiglu.vulkan": sd.linear_i8.v1 (as above) -> SWIGLU of its merged
//    output [2F, ...] (ggml_swiglu or ggml_swiglu_swapped) into a contiguous F32 output, in one GEMM
//    pass (linear_i8.comp with SWIGLU: both halves' sums, their epilogues, then the native GLU's
//    silu(x) * g expression, not `precise`, as the native shader), bit-identical to the unfused linear
//    and native GLU on Vulkan: the epilogue is the linear's, and the SiLU (whose exp and division
//    Vulkan does not round correctly) is the same expression for the driver to compile. An output
//    overlapping an input is refused at execution, as for the linear alone.
// GGML_VK_DISABLE_FUSION set to anything but "0" makes the fusion rules match and reorder nothing.
// All need 256 invocations per workgroup and a few KiB of shared memory; a device without them
// registers none (the gated-residual fusion also needs 8 bindings). The allocator never places an
// extension node over its inputs; a linear output that overlaps an input anyway (a hand-made layout)
// is refused at execution.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/int8.h"
#include "common/pack.h"
#include "vulkan/sd_vulkan.h"

namespace sd::vulkan {
namespace {

using namespace sd::int8;

constexpr uint32_t kInvocations = 256;   // linear_i8.comp's workgroup size (16 x 16)
constexpr uint32_t kSharedBytes = 4608;  // linear_i8.comp's two tiles
constexpr int64_t kGemmTile = 64;        // linear_i8.comp: outputs and activation rows per workgroup
constexpr int64_t kMaxGroups = 65535;

// The codes of an I8 tensor as whole 32-bit words: a binding ends at a multiple of 4 bytes (a partial
// last word would be cut off), so it extends over the bytes after the tensor up to the next word
// boundary, which the shader reads but never uses.
bool bind_codes(ggml_backend_t backend, const ggml_tensor * t, Bound * out) {
    ggml_backend_buffer_t buffer = t->view_src ? t->view_src->buffer : t->buffer;
    if (!buffer) return bind(backend, t, false, out);  // (reports the missing allocation)
    const auto offset = static_cast<size_t>(static_cast<const char *>(t->data) -
                                            static_cast<const char *>(ggml_backend_buffer_get_base(buffer)));
    const size_t end = (offset + ggml_nbytes(t) + 3) / 4 * 4;
    if (end > ggml_backend_buffer_get_size(buffer)) {
        ggml_ext_set_error("sd.linear_i8.vulkan: the codes' last word extends past their buffer");
        return false;
    }
    out->binding = {{nullptr, buffer, offset, end - offset}, false};
    return service()->buffer_info(backend, &out->binding.range, &out->info);
}

// ---- sd.linear_i8.v1 ----------------------------------------------------------------------------

bool linear_supports(ggml_backend_dev_t device, const ggml_tensor * node, void *) {
    if (ggml_ext_node_op(node) != linear_op() || node->type != GGML_TYPE_F32) return false;
    const LinearShape in = linear_shape(node);
    if (in.attrs.kind != kInputPacked && in.attrs.kind != kInputI8) return false;  // F32: the CPU quantizes
    return in.w->type == GGML_TYPE_I8 && ggml_is_contiguous(in.w) && in.x->type == GGML_TYPE_I8 &&
           ggml_is_contiguous(in.x) && (in.n + kGemmTile - 1) / kGemmTile <= kMaxGroups &&
           (in.rows + kGemmTile - 1) / kGemmTile <= kMaxGroups && fits_binding(device, ggml_nbytes(in.w)) &&
           fits_binding(device, ggml_nbytes(in.x)) && fits_binding(device, ggml_nbytes(node));
}

struct LinearPush {
    uint32_t k, n, m, w_byte, x_byte, y_offset, sx_offset, sw_offset, b_offset;
};

// The inputs of a linear node bound for linear_i8.comp, with its constants and workgroup counts;
// push.y_offset is the caller's (see bind_output).
struct LinearCall {
    Bound w, x, sx, sw, b;
    LinearPush push;
    uint32_t aligned, has_xs, has_ws, has_bias;
    uint32_t groups_x, groups_y;

    std::array<const Bound *, 5> inputs() const { return {&w, &x, &sx, &sw, &b}; }
};

bool bind_linear(ggml_backend_t backend, const LinearShape & in, LinearCall * c) {
    if (!bind_codes(backend, in.w, &c->w) || !bind_codes(backend, in.x, &c->x)) return false;
    // Absent optional inputs bind the weights (declared by the shader, never read: its constants say so).
    const bool bound = in.attrs.kind == kInputPacked
                           ? bind(backend, in.x, false, &c->sx, size_t(in.k * packed_rows_pad(in.rows)),
                                  sizeof(float) * size_t(in.rows))
                           : bind(backend, in.xs ? in.xs : in.w, false, &c->sx);
    if (!bound || !bind(backend, in.ws ? in.ws : in.w, false, &c->sw) ||
        !bind(backend, in.bias ? in.bias : in.w, false, &c->b))
        return false;
    for (const Bound * floats : {&c->sx, &c->sw, &c->b})
        if (floats->info.shader_offset % 4 != 0) {
            ggml_ext_set_error("sd.linear_i8.vulkan: F32 tensors must start on a 4-byte boundary");
            return false;
        }
    c->aligned = in.k % 4 == 0 && c->w.info.shader_offset % 4 == 0 && c->x.info.shader_offset % 4 == 0;
    c->has_xs = in.attrs.kind == kInputPacked || in.xs != nullptr;
    c->has_ws = in.ws != nullptr;
    c->has_bias = in.bias != nullptr;
    c->push = {static_cast<uint32_t>(in.k),  static_cast<uint32_t>(in.n),  static_cast<uint32_t>(in.rows),
               c->w.info.shader_offset,      c->x.info.shader_offset,      0,
               c->sx.info.shader_offset / 4, c->sw.info.shader_offset / 4, c->b.info.shader_offset / 4};
    c->groups_x = static_cast<uint32_t>((in.n + kGemmTile - 1) / kGemmTile);
    c->groups_y = static_cast<uint32_t>((in.rows + kGemmTile - 1) / kGemmTile);
    return true;
}

// Records the linear `node` writing `out`, which must not overlap its inputs: the plain kernel, or
// with glu (the merged SWIGLU node out) the variant writing the GLU's outputs (p.n = F, 32 outputs
// per workgroup), constant 4 its `swapped`.
ggml_status record_linear(ggml_backend_t backend, const ggml_tensor * node, const ggml_tensor * out,
                          bool glu) {
    const LinearShape in = linear_shape(node);
    if (in.rows == 0 || in.n == 0) return GGML_STATUS_SUCCESS;
    LinearCall c;
    Bound y;
    if (!bind_linear(backend, in, &c) || !bind_output(backend, {out, nullptr, 0, 0}, &y))
        return GGML_STATUS_FAILED;
    for (const Bound * input : c.inputs())
        if (overlaps(*input, y)) return fail("sd.linear_i8.vulkan: the output overlaps an input");
    c.push.y_offset = y.info.shader_offset / 4;
    uint32_t swapped = 0;
    if (glu) {
        c.push.n = static_cast<uint32_t>(out->ne[0]);
        c.groups_x = static_cast<uint32_t>((out->ne[0] + kGemmTile / 2 - 1) / (kGemmTile / 2));
        swapped = out->op_params[1] != 0;
    }
    return dispatch(backend, glu ? "sd_linear_i8_swiglu" : "sd_linear_i8",
                    {c.w.binding, c.x.binding, y.binding, c.sx.binding, c.sw.binding, c.b.binding},
                    {c.aligned, c.has_xs, c.has_ws, c.has_bias, swapped}, &c.push, sizeof c.push, c.groups_x,
                    c.groups_y);
}

ggml_status linear_execute(const ggml_ext_execute_params * params) {
    return record_linear(params->backend, params->node, params->node, false);
}

// ---- the fusion sd.linear_i8 -> [SCALE] -> MUL(gate) -> ADD(residual) ------------------------

// A chain the fused shader computes: the linear, an optional SCALE without bias, the MUL by the gate
// and the ADD of the residual, the gate and residual tensors outside the chain, the output contiguous.
// The native SCALE computes x * s + b, which a driver may contract into an FMA when b != 0; with
// b = 0 the fused x * s differs from it at most in the sign of a zero (a driver may or may not fold
// the + 0), which reaches the output only as the sign of a zero result over a -0 residual.
struct GatedChain {
    const ggml_tensor *linear, *scale, *mul, *add, *gate, *residual;
    int n_nodes;
};

// The chain at nodes[0 .. n) (false when they do not start one).
bool parse_chain(ggml_backend_dev_t device, const ggml_tensor * const * nodes, int n, GatedChain * c) {
    if (n < 3 || !linear_supports(device, nodes[0], nullptr)) return false;
    c->linear = nodes[0];
    c->scale = nodes[1]->op == GGML_OP_SCALE ? nodes[1] : nullptr;
    if (c->scale && (c->scale->src[0] != c->linear || c->scale->type != GGML_TYPE_F32 ||
                     !ggml_are_same_shape(c->scale, c->linear) || op_param(c->scale, 1) != 0.0f))
        return false;
    c->n_nodes = c->scale ? 4 : 3;
    if (n < c->n_nodes) return false;
    c->mul = nodes[c->n_nodes - 2];
    c->add = nodes[c->n_nodes - 1];
    c->gate = repeated_operand(device, c->mul, GGML_OP_MUL, c->scale ? c->scale : c->linear);
    c->residual = repeated_operand(device, c->add, GGML_OP_ADD, c->mul);
    const auto outside = [c](const ggml_tensor * t) {
        return t && t != c->linear && t != c->scale && t != c->mul;
    };
    return outside(c->gate) && outside(c->residual) && ggml_is_contiguous(c->add) &&
           bindable_f32(device, c->add);
}

int gated_match(ggml_backend_dev_t device, const ggml_cgraph * graph, int first, void *) {
    if (fusion_disabled()) return 0;
    const ggml_tensor * nodes[4];
    const int n = std::min(4, ggml_graph_n_nodes(graph) - first);
    for (int i = 0; i < n; ++i)
        nodes[i] = ggml_graph_node(graph, first + i);
    GatedChain c;
    return parse_chain(device, nodes, n, &c) ? c.n_nodes : 0;  // the runtime checks legality
}

// Where addresses are known only at execution an input may overlap the output (a hand-made layout
// or the allocator's in-place reuse), so the output's size is always requested for scratch.
ggml_status gated_prepare(const ggml_ext_fusion_prepare_params * params, void ** state,
                          size_t * workspace_bytes) {
    *state = nullptr;
    *workspace_bytes = ggml_nbytes(params->nodes[params->n_nodes - 1]);
    return GGML_STATUS_SUCCESS;
}

struct GatedPush {
    LinearPush linear;
    uint32_t ne1, ne2;
    float scale;
    View gate, residual;
};

ggml_status gated_execute(const ggml_ext_fusion_execute_params * params) {
    ggml_backend_t backend = params->backend;
    GatedChain c;
    if (!parse_chain(ggml_backend_get_device(backend), params->nodes, params->n_nodes, &c))
        return fail("sd.linear_i8_gated_residual.vulkan: the nodes are not a chain it computes");
    const LinearShape in = linear_shape(c.linear);
    if (in.rows == 0 || in.n == 0) return GGML_STATUS_SUCCESS;
    LinearCall call;
    Bound out, gate, residual;
    if (!bind_linear(backend, in, &call) || !bind_output(backend, {c.add, nullptr, 0, 0}, &out) ||
        !bind(backend, c.gate, false, &gate) || !bind(backend, c.residual, false, &residual))
        return GGML_STATUS_FAILED;
    if (gate.info.shader_offset % 4 != 0 || residual.info.shader_offset % 4 != 0)
        return fail("sd.linear_i8_gated_residual.vulkan: F32 tensors must start on a 4-byte boundary");
    // Each invocation reads its residual element before writing it: an output that is exactly the
    // residual is computed in place; any other overlap goes through the workspace.
    const bool exact_residual = same_range(residual, out) && ggml_are_same_shape(c.residual, c.add) &&
                                ggml_are_same_stride(c.residual, c.add);
    bool scratch = overlaps(gate, out) || (overlaps(residual, out) && !exact_residual);
    for (const Bound * input : call.inputs())
        scratch = scratch || overlaps(*input, out);
    const size_t bytes = ggml_nbytes(c.add);
    Bound y = out;
    if (scratch) {
        if (!params->workspace || params->workspace_size < bytes)
            return fail("sd.linear_i8_gated_residual.vulkan: workspace smaller than prepare requested");
        if (!bind_output(backend, {nullptr, params->workspace, 0, bytes}, &y)) return GGML_STATUS_FAILED;
    }
    call.push.y_offset = y.info.shader_offset / 4;
    const GatedPush push{call.push,
                         static_cast<uint32_t>(c.add->ne[1]),
                         static_cast<uint32_t>(c.add->ne[2]),
                         c.scale ? op_param(c.scale, 0) : 1.0f,
                         view_of(gate, c.gate),
                         view_of(residual, c.residual)};
    const ggml_status status =
        dispatch(backend, "sd_linear_i8_gated_residual",
                 {call.w.binding, call.x.binding, y.binding, call.sx.binding, call.sw.binding, call.b.binding,
                  gate.binding, residual.binding},
                 {call.aligned, call.has_xs, call.has_ws, call.has_bias, uint32_t(c.scale != nullptr)}, &push,
                 sizeof push, call.groups_x, call.groups_y);
    if (status != GGML_STATUS_SUCCESS || !scratch) return status;
    return service()->copy(backend, &out.binding.range, &y.binding.range);
}

// ---- the fusion sd.linear_i8 -> SWIGLU of the merged output -----------------------------------

// Whether glu is a merged SWIGLU (either half order) of the linear the fused shader computes, into a
// contiguous F32 output.
bool swiglu_at(ggml_backend_dev_t device, const ggml_tensor * linear, const ggml_tensor * glu) {
    return linear_supports(device, linear, nullptr) && glu->op == GGML_OP_GLU &&
           ggml_get_glu_op(glu) == GGML_GLU_OP_SWIGLU && glu->src[0] == linear && glu->src[1] == nullptr &&
           glu->type == GGML_TYPE_F32 && 2 * glu->ne[0] == linear->ne[0] && ggml_is_contiguous(glu) &&
           fits_binding(device, ggml_nbytes(glu));
}

int swiglu_match(ggml_backend_dev_t device, const ggml_cgraph * graph, int first, void *) {
    if (fusion_disabled() || first + 2 > ggml_graph_n_nodes(graph)) return 0;
    return swiglu_at(device, ggml_graph_node(graph, first), ggml_graph_node(graph, first + 1)) ? 2 : 0;
}

// The output is refused where it overlaps an input, as for the linear alone: the runtime keeps a fused
// range's external inputs allocated through its output, so only a hand-made layout can do that.
ggml_status swiglu_execute(const ggml_ext_fusion_execute_params * params) {
    ggml_tensor * const * nodes = params->nodes;
    if (params->n_nodes != 2 || !swiglu_at(ggml_backend_get_device(params->backend), nodes[0], nodes[1]))
        return fail("sd.linear_i8_swiglu.vulkan: the nodes are not a chain it computes");
    return record_linear(params->backend, nodes[0], nodes[1], true);
}

const ggml_ext_fusion_desc * swiglu_fusion_desc() {
    static const ggml_ext_fusion_desc desc =
        fusion_desc("sd.linear_i8_swiglu.vulkan", swiglu_match, swiglu_execute);
    return &desc;
}

// ---- graph delay: making a chain consecutive ------------------------------------------------------

// Whether node is the link after `previous` in a chain linear -> [SCALE] -> MUL -> ADD.
bool is_next_link(const ggml_tensor * node, const ggml_tensor * previous) {
    if (node->src[0] != previous && node->src[1] != previous) return false;
    switch (previous->op) {
        case GGML_OP_CUSTOM:
            return node->op == GGML_OP_SCALE || node->op == GGML_OP_MUL;
        case GGML_OP_SCALE:
            return node->op == GGML_OP_MUL;
        case GGML_OP_MUL:
            return node->op == GGML_OP_ADD;
        default:
            return false;
    }
}

// The positions of the chain starting with a linear the device computes at `first`, each link the
// first later node consuming the previous one as the next link; empty when it does not reach an ADD.
// match checks the rest.
std::vector<int> chain_at(ggml_backend_dev_t device, const ggml_cgraph * graph, int first) {
    if (!linear_supports(device, ggml_graph_node(graph, first), nullptr)) return {};
    std::vector<int> chain{first};
    for (int i = first + 1; i < ggml_graph_n_nodes(graph); ++i) {
        const ggml_tensor * node = ggml_graph_node(graph, i);
        if (!is_next_link(node, ggml_graph_node(graph, chain.back()))) continue;
        chain.push_back(i);
        if (node->op == GGML_OP_ADD) return chain;
    }
    return {};
}

// Every chain becomes consecutive. Idempotent.
void gated_optimize(ggml_backend_dev_t device, ggml_cgraph * graph, void *) {
    if (fusion_disabled()) return;
    for (int i = 0; i < ggml_graph_n_nodes(graph); ++i) {
        const std::vector<int> chain = chain_at(device, graph, i);
        if (!chain.empty() && make_consecutive(graph, chain)) --i;  // a crossed node now sits at i
    }
}

const ggml_ext_fusion_desc * gated_fusion_desc() {
    static const ggml_ext_fusion_desc desc = [] {
        ggml_ext_fusion_desc d =
            fusion_desc("sd.linear_i8_gated_residual.vulkan", gated_match, gated_execute);
        d.optimize = gated_optimize;
        d.prepare = gated_prepare;
        return d;
    }();
    return &desc;
}

}  // namespace

const ggml_ext_kernel_desc * int8_linear_kernel_desc() {
    static const ggml_ext_kernel_desc desc =
        custom_kernel_desc("sd.linear_i8.vulkan", linear_op(), linear_supports, linear_execute);
    return &desc;
}

bool register_int8(ggml_backend_dev_t device) {
    ggml_ext_vulkan_device_info info{};
    info.struct_size = sizeof info;
    if (!service() || !service()->device_info(device, &info)) return false;
    if (info.max_workgroup_invocations < kInvocations || info.max_workgroup_size[0] < kInvocations ||
        info.max_workgroup_size[1] < 16 || info.max_shared_memory < kSharedBytes)
        return true;  // the scheduler runs the INT8 nodes on the CPU
    // The fused shader adds two bindings and its own push constants.
    const bool fusion = info.max_bindings >= 8 && info.max_push_constants >= sizeof(GatedPush);
    return ggml_ext_register_kernel(device, int8_linear_kernel_desc()) &&
           ggml_ext_register_fusion(device, swiglu_fusion_desc()) &&
           (!fusion || ggml_ext_register_fusion(device, gated_fusion_desc()));
}

}  // namespace sd::vulkan
