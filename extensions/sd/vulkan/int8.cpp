// The sd pack's INT8 GEMM on Vulkan (sd-ops.md 3.4), bit-identical to the CPU kernel (ConvRot
// quantization is vulkan/convrot.cpp):
//  * sd.linear_i8.v1 for int8 activations: the packed output of the quantize op, or ordinary I8
//    codes with an optional input_scale (shaders/linear_i8.comp, a tiled GEMM with exact int32 sums
//    and the F32 epilogue in the spec's order), and for contiguous F32 activations with K % 4 == 0,
//    quantized first into the plan workspace (vulkan/convrot.cpp's record_quantize, the node's group)
//    and then read as a packed input, as the CPU kernel does (other F32 layouts run on the CPU).
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
//  * the fusion rule "sd.linear_i8_swiglu_split.vulkan": two sd.linear_i8.v1 nodes (in either order)
//    over the same activations (the same packed or I8 tensor and input scales) with weights of the same
//    K and N -> SWIGLU(gate, up) (ggml_swiglu_split; the native split GLU has no swapped form), as the
//    Z-Image FFN builds it, in one GEMM pass (linear_i8.comp with SWIGLU and SPLIT: the weight tile's
//    up rows come from the second weights, with their own scales and bias), bit-identical to both
//    linears and the native GLU on Vulkan for the same reasons as above. A dispatch binds at most 8
//    buffers: W, X, Y and the up weights, and 4 slots for the optional F32 vectors (input scales, each
//    linear's weight scale and bias), so a pair with all five vectors is left unfused. Its optimize
//    moves the first linear past independent nodes up to the second and both up to the GLU.
//  * the fusion rule "sd.linear_i8_concat.vulkan": sd.linear_i8.v1 or a gated chain as above ->
//    CONCAT along dim 1, 2 or 3 (rows, never features: per-row quantization does not compose with a
//    dim-0 concatenation) into a contiguous F32 output, the chain's value either operand; or two
//    linears -> CONCAT of both. Each GEMM writes its rows straight into its slice (linear_i8.comp
//    places rows at the output's strides of dims 2 and 3); the other operand (any bindable F32 tensor
//    outside the range) is copied into its slice as raw bits, by one service copy when both are one
//    contiguous range, else by shaders/concat_copy.comp, so the bytes are the native CONCAT's. An output
//    overlapping any input is computed in the workspace and copied. Asked before the gated rule (whose
//    chain it extends); its optimize makes a chain (or pair of linears) end just before its CONCAT.
// GGML_VK_DISABLE_FUSION set to anything but "0" makes the fusion rules match and reorder nothing.
// All need 256 invocations per workgroup and a few KiB of shared memory; a device without them
// registers none (the gated-residual, split SWIGLU and concat fusions also need 8 bindings and 128
// bytes of push constants). The allocator never places an
// extension node over its inputs; a linear output that overlaps an input anyway (a hand-made layout)
// is refused at execution.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <string>
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

// A linear whose activations are already int8 (packed ConvRot or I8 codes): what linear_i8.comp
// and the fusions consume.
bool gemm_supports(ggml_backend_dev_t device, const ggml_tensor * node, void *) {
    if (ggml_ext_node_op(node) != linear_op() || node->type != GGML_TYPE_F32) return false;
    const LinearShape in = linear_shape(node);
    if (in.attrs.kind != kInputPacked && in.attrs.kind != kInputI8) return false;
    return in.w->type == GGML_TYPE_I8 && ggml_is_contiguous(in.w) && in.x->type == GGML_TYPE_I8 &&
           ggml_is_contiguous(in.x) && (in.n + kGemmTile - 1) / kGemmTile <= kMaxGroups &&
           (in.rows + kGemmTile - 1) / kGemmTile <= kMaxGroups && fits_binding(device, ggml_nbytes(in.w)) &&
           fits_binding(device, ggml_nbytes(in.x)) && fits_binding(device, ggml_nbytes(node));
}

// A linear with F32 activations, which the kernel quantizes into the workspace first (contiguous,
// K a multiple of 4 for the word-wise codes).
bool f32_input_supports(ggml_backend_dev_t device, const ggml_tensor * node) {
    if (ggml_ext_node_op(node) != linear_op() || node->type != GGML_TYPE_F32) return false;
    const LinearShape in = linear_shape(node);
    return in.attrs.kind == kInputF32 && in.w->type == GGML_TYPE_I8 && ggml_is_contiguous(in.w) &&
           ggml_is_contiguous(in.x) && in.k % 4 == 0 && (in.n + kGemmTile - 1) / kGemmTile <= kMaxGroups &&
           (in.rows + kGemmTile - 1) / kGemmTile <= kMaxGroups && fits_binding(device, ggml_nbytes(in.w)) &&
           fits_binding(device, ggml_nbytes(in.x)) && fits_binding(device, packed_bytes(in.k, in.rows)) &&
           fits_binding(device, ggml_nbytes(node));
}

bool linear_supports(ggml_backend_dev_t device, const ggml_tensor * node, void *) {
    return gemm_supports(device, node, nullptr) || f32_input_supports(device, node);
}

struct LinearPush {
    uint32_t k, n, m, w_byte, x_byte, y_offset, sx_offset, sw_offset, b_offset;
    uint32_t ne1, ne2, y_nb2, y_nb3;  // the rows' layout in Y (see place_rows)
};

// Where a shader writes a value: a bound F32 range laid out as `dest` (the tensor itself, or a scratch
// copy of it in the workspace), the value from index `start` of dest's dimension `dim` (its slice of a
// row concatenation; 0 for the whole tensor).
struct Target {
    Bound y;
    const ggml_tensor * dest;
    int dim = 1;
    int64_t start = 0;
};

// The target `dest` in `range` (the tensor's own, or the workspace's).
bool bind_target(ggml_backend_t backend, const ggml_ext_vulkan_range & range, const ggml_tensor * dest,
                 Target * t) {
    t->dest = dest;
    return bind_output(backend, range, &t->y);
}

// The first float of the value's slice in the target.
uint32_t slice_offset(const Target & t) {
    return t.y.info.shader_offset / 4 + static_cast<uint32_t>(t.start * int64_t(t.dest->nb[t.dim]) / 4);
}

// Where linear_i8.comp writes the rows of `value` (rows of p->n floats over its extents 1 .. 3): t's
// strides of dims 2 and 3 (dim 1's is n, since dest has value's extent 0).
void place_rows(LinearPush * p, const ggml_tensor * value, const Target & t) {
    p->y_offset = slice_offset(t);
    p->ne1 = static_cast<uint32_t>(value->ne[1]);
    p->ne2 = static_cast<uint32_t>(value->ne[2]);
    p->y_nb2 = static_cast<uint32_t>(t.dest->nb[2] / sizeof(float));
    p->y_nb3 = static_cast<uint32_t>(t.dest->nb[3] / sizeof(float));
}

template <typename Inputs>
bool overlaps_any(const Inputs & inputs, const Bound & out) {
    return std::any_of(inputs.begin(), inputs.end(), [&out](const Bound * b) { return overlaps(*b, out); });
}

// The inputs of a linear node bound for linear_i8.comp, with its constants and workgroup counts;
// where it writes is the caller's (see place_rows).
struct LinearCall {
    Bound w, x, sx, sw, b;
    LinearPush push;
    uint32_t aligned, has_xs, has_ws, has_bias;
    uint32_t groups_x, groups_y;

    std::array<const Bound *, 5> inputs() const { return {&w, &x, &sx, &sw, &b}; }
};

// With `packed` the activations are that packed range (codes, then row scales) instead of in.x.
bool bind_linear(ggml_backend_t backend, const LinearShape & in, LinearCall * c,
                 const ggml_ext_vulkan_range * packed = nullptr) {
    const auto codes_bytes = size_t(in.k * packed_rows_pad(in.rows)),
               scale_bytes = sizeof(float) * size_t(in.rows);
    bool bound = false;
    if (packed) {
        const ggml_ext_vulkan_range codes{nullptr, packed->buffer, packed->offset, codes_bytes},
            scales{nullptr, packed->buffer, packed->offset + codes_bytes, scale_bytes};
        c->x.binding = {codes, false};
        c->sx.binding = {scales, false};
        bound = service()->buffer_info(backend, &codes, &c->x.info) &&
                service()->buffer_info(backend, &scales, &c->sx.info);
    } else {
        // Absent optional inputs bind the weights (declared by the shader, never read: its constants say so).
        bound = bind_codes(backend, in.x, &c->x) &&
                (in.attrs.kind == kInputPacked ? bind(backend, in.x, false, &c->sx, codes_bytes, scale_bytes)
                                               : bind(backend, in.xs ? in.xs : in.w, false, &c->sx));
    }
    if (!bound || !bind_codes(backend, in.w, &c->w) || !bind(backend, in.ws ? in.ws : in.w, false, &c->sw) ||
        !bind(backend, in.bias ? in.bias : in.w, false, &c->b))
        return false;
    for (const Bound * floats : {&c->sx, &c->sw, &c->b})
        if (floats->info.shader_offset % 4 != 0) {
            ggml_ext_set_error("sd.linear_i8.vulkan: F32 tensors must start on a 4-byte boundary");
            return false;
        }
    c->aligned = in.k % 4 == 0 && c->w.info.shader_offset % 4 == 0 && c->x.info.shader_offset % 4 == 0;
    c->has_xs = in.attrs.kind != kInputI8 || in.xs != nullptr;
    c->has_ws = in.ws != nullptr;
    c->has_bias = in.bias != nullptr;
    c->push = {static_cast<uint32_t>(in.k),  static_cast<uint32_t>(in.n),  static_cast<uint32_t>(in.rows),
               c->w.info.shader_offset,      c->x.info.shader_offset,      0,
               c->sx.info.shader_offset / 4, c->sw.info.shader_offset / 4, c->b.info.shader_offset / 4};
    c->groups_x = static_cast<uint32_t>((in.n + kGemmTile - 1) / kGemmTile);
    c->groups_y = static_cast<uint32_t>((in.rows + kGemmTile - 1) / kGemmTile);
    return true;
}

// Records linear_i8.comp for the bound linear c writing `value` into t: the linear's own output, or
// with glu its merged SWIGLU `value` (p.n = F, 32 outputs per workgroup; constant 4 its `swapped`).
ggml_status dispatch_linear(ggml_backend_t backend, LinearCall c, const ggml_tensor * value, bool glu,
                            const Target & t) {
    uint32_t swapped = 0;
    if (glu) {
        c.push.n = static_cast<uint32_t>(value->ne[0]);
        c.groups_x = static_cast<uint32_t>((value->ne[0] + kGemmTile / 2 - 1) / (kGemmTile / 2));
        swapped = sd::native_params<ggml_ext_glu_params>(value).swapped != 0;
    }
    place_rows(&c.push, value, t);
    return dispatch(backend, glu ? "sd_linear_i8_swiglu" : "sd_linear_i8",
                    {c.w.binding, c.x.binding, t.y.binding, c.sx.binding, c.sw.binding, c.b.binding},
                    {c.aligned, c.has_xs, c.has_ws, c.has_bias, swapped}, &c.push, sizeof c.push, c.groups_x,
                    c.groups_y);
}

// Records the linear `node` writing `value` (itself, or its merged SWIGLU), which must not overlap
// its inputs; with `packed`, its activations quantized there.
ggml_status record_linear(ggml_backend_t backend, const ggml_tensor * node, const ggml_tensor * value,
                          bool glu, const ggml_ext_vulkan_range * packed = nullptr) {
    const LinearShape in = linear_shape(node);
    if (in.rows == 0 || in.n == 0) return GGML_STATUS_SUCCESS;
    LinearCall c;
    Target t;
    if (!bind_linear(backend, in, &c, packed) || !bind_target(backend, {value, nullptr, 0, 0}, value, &t))
        return GGML_STATUS_FAILED;
    if (overlaps_any(c.inputs(), t.y)) return fail("sd.linear_i8.vulkan: the output overlaps an input");
    return dispatch_linear(backend, c, value, glu, t);
}

// F32 activations: the packed quantization in the workspace.
ggml_status linear_prepare(const ggml_ext_prepare_params * params, void ** state, size_t * workspace_bytes) {
    *state = nullptr;
    const LinearShape in = linear_shape(params->node);
    *workspace_bytes = in.attrs.kind == kInputF32 ? packed_bytes(in.k, in.rows) : 0;
    return GGML_STATUS_SUCCESS;
}

// F32 activations are quantized (ConvRot of the node's group, 0 meaning none) into the workspace,
// which the GEMM then reads as a packed input: the CPU kernel's steps, so the same bytes.
ggml_status linear_execute(const ggml_ext_execute_params * params) {
    const ggml_tensor * node = params->node;
    const LinearShape in = linear_shape(node);
    if (in.attrs.kind != kInputF32 || in.rows == 0 || in.n == 0)
        return record_linear(params->backend, node, node, false);
    const size_t bytes = packed_bytes(in.k, in.rows);
    if (!params->workspace || params->workspace_size < bytes)
        return fail("sd.linear_i8.vulkan: workspace smaller than prepare requested");
    const ggml_ext_vulkan_range packed = workspace_range(params->workspace, params->workspace_data, bytes);
    Bound x, q;
    q.binding = {packed, true};
    if (!bind(params->backend, in.x, false, &x) || !service()->buffer_info(params->backend, &packed, &q.info))
        return GGML_STATUS_FAILED;
    const ggml_status quantized =
        record_quantize(params->backend, x, q, in.k, in.rows, std::max(in.attrs.group, int32_t{1}));
    return quantized != GGML_STATUS_SUCCESS ? quantized
                                            : record_linear(params->backend, node, node, false, &packed);
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
    if (n < 3 || !gemm_supports(device, nodes[0], nullptr)) return false;
    c->linear = nodes[0];
    c->scale = nodes[1]->op == GGML_OP_SCALE ? nodes[1] : nullptr;
    if (c->scale && (c->scale->src[0] != c->linear || c->scale->type != GGML_TYPE_F32 ||
                     !ggml_are_same_shape(c->scale, c->linear) || sd::native_params<ggml_ext_scale_params>(c->scale).bias != 0.0f))
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
ggml_status output_scratch_prepare(const ggml_ext_fusion_prepare_params * params, void ** state,
                                   size_t * workspace_bytes) {
    *state = nullptr;
    *workspace_bytes = ggml_nbytes(params->nodes[params->n_nodes - 1]);
    return GGML_STATUS_SUCCESS;
}

// The workspace as the target laid out as dest (false with the error set when prepare's request is
// missing).
bool bind_scratch(const ggml_ext_fusion_execute_params * params, const ggml_tensor * dest, const char * rule,
                  Target * t) {
    const size_t bytes = ggml_nbytes(dest);
    if (!params->workspace || params->workspace_size < bytes) {
        ggml_ext_set_error((std::string(rule) + ": workspace smaller than prepare requested").c_str());
        return false;
    }
    const Target whole = *t;
    if (!bind_target(params->backend, workspace_range(params->workspace, params->workspace_data, bytes), dest,
                     t))
        return false;
    t->dim = whole.dim;
    t->start = whole.start;
    return true;
}

struct GatedPush {
    LinearPush linear;
    float scale;
    View gate, residual;
};

// A gated chain bound for linear_i8.comp with GATED_RESIDUAL.
struct GatedCall {
    LinearCall linear;
    Bound gate, residual;

    std::array<const Bound *, 7> inputs() const {
        return {&linear.w, &linear.x, &linear.sx, &linear.sw, &linear.b, &gate, &residual};
    }
};

bool bind_gated(ggml_backend_t backend, const GatedChain & c, GatedCall * call) {
    if (!bind_linear(backend, linear_shape(c.linear), &call->linear) ||
        !bind(backend, c.gate, false, &call->gate) || !bind(backend, c.residual, false, &call->residual))
        return false;
    if (call->gate.info.shader_offset % 4 == 0 && call->residual.info.shader_offset % 4 == 0) return true;
    ggml_ext_set_error("sd.linear_i8_gated_residual.vulkan: F32 tensors must start on a 4-byte boundary");
    return false;
}

ggml_status dispatch_gated(ggml_backend_t backend, const GatedChain & c, const GatedCall & call,
                           const Target & t) {
    GatedPush push{call.linear.push, c.scale ? sd::native_params<ggml_ext_scale_params>(c.scale).scale : 1.0f, view_of(call.gate, c.gate),
                   view_of(call.residual, c.residual)};
    place_rows(&push.linear, c.add, t);
    const LinearCall & l = call.linear;
    return dispatch(backend, "sd_linear_i8_gated_residual",
                    {l.w.binding, l.x.binding, t.y.binding, l.sx.binding, l.sw.binding, l.b.binding,
                     call.gate.binding, call.residual.binding},
                    {l.aligned, l.has_xs, l.has_ws, l.has_bias, uint32_t(c.scale != nullptr)}, &push,
                    sizeof push, l.groups_x, l.groups_y);
}

ggml_status gated_execute(const ggml_ext_fusion_execute_params * params) {
    constexpr const char * kRule = "sd.linear_i8_gated_residual.vulkan";
    ggml_backend_t backend = params->backend;
    GatedChain c;
    if (!parse_chain(ggml_backend_get_device(backend), params->nodes, params->n_nodes, &c))
        return fail("sd.linear_i8_gated_residual.vulkan: the nodes are not a chain it computes");
    if (ggml_nelements(c.add) == 0) return GGML_STATUS_SUCCESS;
    GatedCall call;
    Target out;
    if (!bind_gated(backend, c, &call) || !bind_target(backend, {c.add, nullptr, 0, 0}, c.add, &out))
        return GGML_STATUS_FAILED;
    // Each invocation reads its residual element before writing it: an output that is exactly the
    // residual is computed in place; any other overlap goes through the workspace.
    const bool exact_residual = same_range(call.residual, out.y) && ggml_are_same_shape(c.residual, c.add) &&
                                ggml_are_same_stride(c.residual, c.add);
    std::vector<const Bound *> inputs;
    for (const Bound * input : call.inputs())
        if (input != &call.residual || !exact_residual) inputs.push_back(input);
    const bool scratch = overlaps_any(inputs, out.y);
    Target y = out;
    if (scratch && !bind_scratch(params, c.add, kRule, &y)) return GGML_STATUS_FAILED;
    const ggml_status status = dispatch_gated(backend, c, call, y);
    if (status != GGML_STATUS_SUCCESS || !scratch) return status;
    return service()->copy(backend, &out.y.binding.range, &y.y.binding.range);
}

// ---- the fusion sd.linear_i8 -> SWIGLU of the merged output -----------------------------------

// Whether glu is a merged SWIGLU (either half order) of the linear the fused shader computes, into a
// contiguous F32 output.
bool swiglu_at(ggml_backend_dev_t device, const ggml_tensor * linear, const ggml_tensor * glu) {
    return gemm_supports(device, linear, nullptr) && glu->op == GGML_OP_GLU &&
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

// ---- the fusion [sd.linear_i8 a, sd.linear_i8 b] -> SWIGLU(a, b) (ggml_swiglu_split) -------------

// The split variant's optional F32 vectors (the shared input scales, each linear's weight scale and
// bias) share 4 slots, bindings 4 .. 7: with W, X, Y and the up weights that is the 8 bindings a
// dispatch may have, so pairs with all five vectors are left unfused.
constexpr uint32_t kVectorSlots = 4;

// Two linears and the split SWIGLU of them: act(gate) * up (the native split GLU ignores `swapped`).
struct SplitSwiglu {
    const ggml_tensor *gate, *up, *glu;
};

// Whether one GEMM pass computes both linears: the same activations (and input scales), K and N.
bool same_activations(const LinearShape & a, const LinearShape & b) {
    return a.x == b.x && a.xs == b.xs && a.attrs.kind == b.attrs.kind && a.k == b.k && a.n == b.n &&
           a.rows == b.rows;
}

uint32_t vectors_of(const LinearShape & gate, const LinearShape & up) {
    const auto has = [](const void * p) { return p ? 1u : 0u; };
    return uint32_t(gate.attrs.kind == kInputPacked || gate.xs) + has(gate.ws) + has(gate.bias) + has(up.ws) +
           has(up.bias);
}

// The split SWIGLU of nodes[0] and nodes[1] (either order) at nodes[2], into a contiguous F32 output.
bool parse_split(ggml_backend_dev_t device, const ggml_tensor * const * nodes, SplitSwiglu * s) {
    const ggml_tensor * glu = nodes[2];
    if (glu->op != GGML_OP_GLU || ggml_get_glu_op(glu) != GGML_GLU_OP_SWIGLU || !glu->src[1]) return false;
    const bool in_order = glu->src[0] == nodes[0] && glu->src[1] == nodes[1];
    if (!in_order && !(glu->src[0] == nodes[1] && glu->src[1] == nodes[0])) return false;
    *s = {glu->src[0], glu->src[1], glu};
    if (!gemm_supports(device, s->gate, nullptr) || !gemm_supports(device, s->up, nullptr)) return false;
    const LinearShape gate = linear_shape(s->gate), up = linear_shape(s->up);
    return same_activations(gate, up) && vectors_of(gate, up) <= kVectorSlots && glu->type == GGML_TYPE_F32 &&
           ggml_are_same_shape(glu, s->gate) && ggml_is_contiguous(glu) &&
           fits_binding(device, ggml_nbytes(glu));
}

int split_match(ggml_backend_dev_t device, const ggml_cgraph * graph, int first, void *) {
    if (fusion_disabled() || first + 3 > ggml_graph_n_nodes(graph)) return 0;
    const ggml_tensor * nodes[3];
    for (int i = 0; i < 3; ++i)
        nodes[i] = ggml_graph_node(graph, first + i);
    SplitSwiglu s;
    return parse_split(device, nodes, &s) ? 3 : 0;
}

struct SplitPush {
    LinearPush linear;
    uint32_t w_up_byte, up_sw_offset, up_b_offset;
};

// The vectors the pair has, in the slots they get, and the constants naming each one's slot (the
// shader's XS_SLOT, WS_SLOT, BIAS_SLOT, UP_WS_SLOT, UP_BIAS_SLOT; kVectorSlots when absent).
struct Slots {
    std::vector<ggml_ext_vulkan_binding> bindings;
    std::array<uint32_t, 5> of;
};

Slots assign_slots(const LinearCall & gate, const LinearCall & up) {
    Slots slots;
    const std::array<std::pair<const Bound *, uint32_t>, 5> vectors = {{{&gate.sx, gate.has_xs},
                                                                        {&gate.sw, gate.has_ws},
                                                                        {&gate.b, gate.has_bias},
                                                                        {&up.sw, up.has_ws},
                                                                        {&up.b, up.has_bias}}};
    for (size_t i = 0; i < vectors.size(); ++i) {
        slots.of[i] = vectors[i].second ? static_cast<uint32_t>(slots.bindings.size()) : kVectorSlots;
        if (vectors[i].second) slots.bindings.push_back(vectors[i].first->binding);
    }
    while (slots.bindings.size() < kVectorSlots)
        slots.bindings.push_back(gate.w.binding);  // declared, never read
    return slots;
}

// The output is refused where it overlaps an input, as for the linears alone.
ggml_status split_execute(const ggml_ext_fusion_execute_params * params) {
    ggml_backend_t backend = params->backend;
    SplitSwiglu s;
    if (params->n_nodes != 3 || !parse_split(ggml_backend_get_device(backend), params->nodes, &s))
        return fail("sd.linear_i8_swiglu_split.vulkan: the nodes are not a chain it computes");
    const LinearShape gate_shape = linear_shape(s.gate), up_shape = linear_shape(s.up);
    if (gate_shape.rows == 0 || gate_shape.n == 0) return GGML_STATUS_SUCCESS;
    LinearCall gate, up;
    Target t;
    if (!bind_linear(backend, gate_shape, &gate) || !bind_linear(backend, up_shape, &up) ||
        !bind_target(backend, {s.glu, nullptr, 0, 0}, s.glu, &t))
        return GGML_STATUS_FAILED;
    if (overlaps_any(gate.inputs(), t.y) || overlaps_any(up.inputs(), t.y))
        return fail("sd.linear_i8_swiglu_split.vulkan: the output overlaps an input");
    SplitPush push{gate.push, up.push.w_byte, up.push.sw_offset, up.push.b_offset};
    place_rows(&push.linear, s.glu, t);
    const Slots slots = assign_slots(gate, up);
    const uint32_t aligned = gate.aligned && up.aligned;
    const auto groups_x = static_cast<uint32_t>((gate_shape.n + kGemmTile / 2 - 1) / (kGemmTile / 2));
    return dispatch(backend, "sd_linear_i8_swiglu_split",
                    {gate.w.binding, gate.x.binding, t.y.binding, up.w.binding, slots.bindings[0],
                     slots.bindings[1], slots.bindings[2], slots.bindings[3]},
                    {aligned, slots.of[0], slots.of[1], slots.of[2], slots.of[3], slots.of[4]}, &push,
                    sizeof push, groups_x, gate.groups_y);
}

// ---- the fusion sd.linear_i8 [-> SCALE -> MUL -> ADD] -> CONCAT along rows ------------------------

// Whether node is a concatenation the fused shaders can write slices of: F32, contiguous, along dim
// 1 .. 3 (per-row quantization does not compose with a feature concatenation, dim 0).
bool row_concat(ggml_backend_dev_t device, const ggml_tensor * node) {
    if (node->op != GGML_OP_CONCAT || !ggml_is_contiguous(node) || !bindable_f32(device, node)) return false;
    const int32_t dim = sd::native_params<ggml_ext_concat_params>(node).dim;
    return dim >= 1 && dim < GGML_MAX_DIMS;
}

// One operand of the concatenation: computed in the range (a linear, n_nodes 1, or a gated chain) or,
// n_nodes 0, a tensor outside the range copied into its slice.
struct ConcatPart {
    const ggml_tensor * value;
    GatedChain chain;
};

// A range ending at a row concatenation: one chain and the concatenation, or two linears and the
// concatenation of both.
struct ConcatSite {
    const ggml_tensor * concat;
    std::array<ConcatPart, 2> parts;  // for src[0] and src[1]
    int n_nodes;
};

GatedChain plain_linear(const ggml_tensor * linear) {
    return {linear, nullptr, nullptr, nullptr, nullptr, nullptr, 1};
}

// The chain at nodes[0 .. n) whose value ends it: a gated chain, else the linear alone.
bool parse_value_chain(ggml_backend_dev_t device, const ggml_tensor * const * nodes, int n, GatedChain * c) {
    if (parse_chain(device, nodes, n, c)) return true;
    *c = plain_linear(nodes[0]);
    return gemm_supports(device, nodes[0], nullptr);
}

bool parse_concat(ggml_backend_dev_t device, const ggml_tensor * const * nodes, int n, ConcatSite * s) {
    if (n >= 3 && row_concat(device, nodes[2]) && gemm_supports(device, nodes[0], nullptr) &&
        gemm_supports(device, nodes[1], nullptr)) {
        const ggml_tensor * concat = nodes[2];
        const bool in_order = concat->src[0] == nodes[0] && concat->src[1] == nodes[1];
        if (in_order || (concat->src[0] == nodes[1] && concat->src[1] == nodes[0])) {
            *s = {concat,
                  {{{concat->src[0], plain_linear(concat->src[0])},
                    {concat->src[1], plain_linear(concat->src[1])}}},
                  3};
            return true;
        }
    }
    GatedChain c;
    if (n < 2 || !parse_value_chain(device, nodes, n, &c) || c.n_nodes >= n) return false;
    const ggml_tensor * concat = nodes[c.n_nodes];
    const ggml_tensor * value = c.add ? c.add : c.linear;
    if (!row_concat(device, concat) || (concat->src[0] == value) == (concat->src[1] == value)) return false;
    const int computed = concat->src[0] == value ? 0 : 1;
    const ggml_tensor * other = concat->src[1 - computed];
    // The copied operand must exist: no node of the range (whose results the fusion eliminates).
    if (std::find(nodes, nodes + c.n_nodes, other) != nodes + c.n_nodes || !bindable_f32(device, other))
        return false;
    s->concat = concat;
    s->parts[size_t(computed)] = {value, c};
    s->parts[size_t(1 - computed)] = {other, GatedChain{}};
    s->n_nodes = c.n_nodes + 1;
    return true;
}

int concat_match(ggml_backend_dev_t device, const ggml_cgraph * graph, int first, void *) {
    if (fusion_disabled()) return 0;
    const ggml_tensor * nodes[5];
    const int n = std::min(5, ggml_graph_n_nodes(graph) - first);
    for (int i = 0; i < n; ++i)
        nodes[i] = ggml_graph_node(graph, first + i);
    ConcatSite s;
    return parse_concat(device, nodes, n, &s) ? s.n_nodes : 0;  // the runtime checks legality
}

// A part bound: the computed chain's inputs, or the copied tensor.
struct BoundPart {
    GatedCall call;  // a plain linear uses call.linear only
    Bound copied;

    void add_inputs(const ConcatPart & part, std::vector<const Bound *> * inputs) const {
        if (part.chain.n_nodes == 0) {
            inputs->push_back(&copied);
        } else {
            for (const Bound * input : call.inputs())
                if (part.chain.add || (input != &call.gate && input != &call.residual))
                    inputs->push_back(input);
        }
    }
};

bool bind_part(ggml_backend_t backend, const ConcatPart & part, BoundPart * b) {
    if (part.chain.n_nodes == 1)
        return bind_linear(backend, linear_shape(part.chain.linear), &b->call.linear);
    if (part.chain.n_nodes > 1) return bind_gated(backend, part.chain, &b->call);
    if (!bind(backend, part.value, false, &b->copied)) return false;
    if (b->copied.info.shader_offset % 4 == 0) return true;
    ggml_ext_set_error("sd.linear_i8_concat.vulkan: F32 tensors must start on a 4-byte boundary");
    return false;
}

struct CopyPush {
    View src, dst;
};

// The tensor `value` copied into its slice of t: one service copy when both are one contiguous range
// (value contiguous, t's dims above the concatenation's of extent 1), else concat_copy.comp.
ggml_status copy_into(ggml_backend_t backend, const Bound & src, const ggml_tensor * value,
                      const Target & t) {
    const bool one_range =
        ggml_is_contiguous(value) &&
        std::all_of(t.dest->ne + t.dim + 1, t.dest->ne + GGML_MAX_DIMS, [](int64_t ne) { return ne == 1; });
    if (one_range) {
        ggml_ext_vulkan_range dst = t.y.binding.range;
        dst.offset += static_cast<size_t>(t.start) * t.dest->nb[t.dim];
        dst.size = ggml_nbytes(value);
        return service()->copy(backend, &dst, &src.binding.range);
    }
    CopyPush push{view_of(src, value), view_of(t.y, t.dest)};
    push.dst.offset = slice_offset(t);
    const auto groups =
        static_cast<uint32_t>(std::min<int64_t>((ggml_nelements(value) + 255) / 256, kMaxGroups));
    return dispatch(backend, "sd_concat_copy", {src.binding, t.y.binding}, {}, &push, sizeof push, groups);
}

ggml_status record_part(ggml_backend_t backend, const ConcatPart & part, const BoundPart & b,
                        const Target & t) {
    if (part.chain.n_nodes == 0) return copy_into(backend, b.copied, part.value, t);
    if (part.chain.add) return dispatch_gated(backend, part.chain, b.call, t);
    return dispatch_linear(backend, b.call.linear, part.value, false, t);
}

// Each part writes its slice of the output (the parts' slices are disjoint); an output overlapping any
// input is computed in the workspace and copied.
ggml_status concat_execute(const ggml_ext_fusion_execute_params * params) {
    constexpr const char * kRule = "sd.linear_i8_concat.vulkan";
    ggml_backend_t backend = params->backend;
    ConcatSite s;
    if (!parse_concat(ggml_backend_get_device(backend), params->nodes, params->n_nodes, &s) ||
        s.n_nodes != params->n_nodes)
        return fail("sd.linear_i8_concat.vulkan: the nodes are not a chain it computes");
    if (ggml_nelements(s.concat) == 0) return GGML_STATUS_SUCCESS;
    std::array<BoundPart, 2> bound;
    std::vector<const Bound *> inputs;
    for (size_t i = 0; i < 2; ++i) {
        if (ggml_nelements(s.parts[i].value) == 0) continue;
        if (!bind_part(backend, s.parts[i], &bound[i])) return GGML_STATUS_FAILED;
        bound[i].add_inputs(s.parts[i], &inputs);
    }
    Target out;
    if (!bind_target(backend, {s.concat, nullptr, 0, 0}, s.concat, &out)) return GGML_STATUS_FAILED;
    out.dim = sd::native_params<ggml_ext_concat_params>(s.concat).dim;
    const bool scratch = overlaps_any(inputs, out.y);
    Target y = out;
    if (scratch && !bind_scratch(params, s.concat, kRule, &y)) return GGML_STATUS_FAILED;
    for (size_t i = 0; i < 2; ++i) {
        if (ggml_nelements(s.parts[i].value) == 0) continue;
        y.start = i == 0 ? 0 : s.parts[0].value->ne[y.dim];
        const ggml_status status = record_part(backend, s.parts[i], bound[i], y);
        if (status != GGML_STATUS_SUCCESS) return status;
    }
    if (!scratch) return GGML_STATUS_SUCCESS;
    return service()->copy(backend, &out.y.binding.range, &y.y.binding.range);
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
    if (!gemm_supports(device, ggml_graph_node(graph, first), nullptr)) return {};
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
    make_chains_consecutive(graph, [&](int i) { return chain_at(device, graph, i); });
}

// The position of node in graph before `before` (-1 when it is not there).
int position_before(const ggml_cgraph * graph, const ggml_tensor * node, int before) {
    for (int i = before - 1; i >= 0; --i)
        if (ggml_graph_node(graph, i) == node) return i;
    return -1;
}

// The positions of a split SWIGLU the rule computes at glu_at: both linears (in graph order) and the
// GLU; empty otherwise.
std::vector<int> split_at(ggml_backend_dev_t device, const ggml_cgraph * graph, int glu_at) {
    const ggml_tensor * glu = ggml_graph_node(graph, glu_at);
    if (glu->op != GGML_OP_GLU || !glu->src[1]) return {};
    const ggml_tensor * nodes[3] = {glu->src[0], glu->src[1], glu};
    SplitSwiglu s;
    if (!parse_split(device, nodes, &s)) return {};
    const int a = position_before(graph, glu->src[0], glu_at),
              b = position_before(graph, glu->src[1], glu_at);
    if (a < 0 || b < 0) return {};
    return {std::min(a, b), std::max(a, b), glu_at};
}

// Every split SWIGLU's linears end just before it. Idempotent (the GLU keeps its position).
void split_optimize(ggml_backend_dev_t device, ggml_cgraph * graph, void *) {
    make_chains_consecutive(graph, [&](int i) { return split_at(device, graph, i); });
}

// The positions of a range the concat rule fuses that starts with a linear at `first`: its chain (a
// gated chain, else the linear alone) and the first row concatenation of the chain's value, with the
// other operand's position in between when it is a later linear; empty when there is none.
std::vector<int> concat_chain_at(ggml_backend_dev_t device, const ggml_cgraph * graph, int first) {
    std::vector<int> chain = chain_at(device, graph, first);
    if (chain.empty()) {
        if (!gemm_supports(device, ggml_graph_node(graph, first), nullptr)) return {};
        chain = {first};
    }
    const ggml_tensor * value = ggml_graph_node(graph, chain.back());
    for (int i = chain.back() + 1; i < ggml_graph_n_nodes(graph); ++i) {
        const ggml_tensor * node = ggml_graph_node(graph, i);
        if ((node->src[0] != value && node->src[1] != value) || !row_concat(device, node)) continue;
        const ggml_tensor * other = node->src[0] == value ? node->src[1] : node->src[0];
        const int at = position_before(graph, other, i);
        if (chain.size() == 1 && at > first && gemm_supports(device, other, nullptr)) chain.push_back(at);
        chain.push_back(i);
        return chain;
    }
    return {};
}

// Every chain (or pair of linears) ends just before its row concatenation. Idempotent.
void concat_optimize(ggml_backend_dev_t device, ggml_cgraph * graph, void *) {
    make_chains_consecutive(graph, [&](int i) { return concat_chain_at(device, graph, i); });
}

const ggml_ext_fusion_desc * split_fusion_desc() {
    static const ggml_ext_fusion_desc desc = [] {
        ggml_ext_fusion_desc d = fusion_desc("sd.linear_i8_swiglu_split.vulkan", split_match, split_execute);
        d.optimize = split_optimize;
        return d;
    }();
    return &desc;
}

// Asked before the gated rule, whose chain it extends.
const ggml_ext_fusion_desc * concat_fusion_desc() {
    static const ggml_ext_fusion_desc desc = [] {
        ggml_ext_fusion_desc d = fusion_desc("sd.linear_i8_concat.vulkan", concat_match, concat_execute);
        d.priority = 1;
        d.optimize = concat_optimize;
        d.prepare = output_scratch_prepare;
        return d;
    }();
    return &desc;
}

const ggml_ext_fusion_desc * gated_fusion_desc() {
    static const ggml_ext_fusion_desc desc = [] {
        ggml_ext_fusion_desc d =
            fusion_desc("sd.linear_i8_gated_residual.vulkan", gated_match, gated_execute);
        d.optimize = gated_optimize;
        d.prepare = output_scratch_prepare;
        return d;
    }();
    return &desc;
}

}  // namespace

const ggml_ext_kernel_desc * int8_linear_kernel_desc() {
    static const ggml_ext_kernel_desc desc = custom_kernel_desc(
        "sd.linear_i8.vulkan", linear_op(), linear_supports, linear_execute, linear_prepare);
    return &desc;
}

bool register_int8(ggml_backend_dev_t device) {
    ggml_ext_vulkan_device_info info{};
    info.struct_size = sizeof info;
    if (!service() || !service()->device_info(device, &info)) return false;
    if (info.max_workgroup_invocations < kInvocations || info.max_workgroup_size[0] < kInvocations ||
        info.max_workgroup_size[1] < 16 || info.max_shared_memory < kSharedBytes)
        return true;  // the scheduler runs the INT8 nodes on the CPU
    // The gated and split shaders bind 8 buffers; the gated one has the most push constants.
    const bool fusion = info.max_bindings >= 8 && info.max_push_constants >= sizeof(GatedPush);
    return register_replayable_kernel(device, int8_linear_kernel_desc()) &&
           register_replayable_fusion(device, swiglu_fusion_desc()) &&
           (!fusion || (register_replayable_fusion(device, gated_fusion_desc()) &&
                        register_replayable_fusion(device, split_fusion_desc()) &&
                        register_replayable_fusion(device, concat_fusion_desc())));
}

}  // namespace sd::vulkan
