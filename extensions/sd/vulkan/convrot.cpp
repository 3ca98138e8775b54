// The sd pack's ConvRot quantization on Vulkan (sd-ops.md 3.2, 3.3):
//  * the kernel "sd.quantize_i8_convrot.vulkan" for sd.quantize_i8_convrot.v1, every group size G in
//    {1, 4, 16, 64, 256} (shaders/convrot.comp over shaders/convrot.glsl, one workgroup per row, G a
//    specialisation constant), bit-identical to the CPU kernel. Codes are written as 32-bit words, so
//    rows of K % 4 != 0 codes (G = 1 only) run on the CPU.
//  * the fusion rule "sd.modulate_convrot.vulkan": [NORM | RMS_NORM](x) -> 1..4 steps ->
//    sd.quantize_i8_convrot.v1, each step an F32 MUL or ADD of the running value with an operand
//    repeated over it (ggml_can_repeat), or the ADD of the value before a MUL step and that MUL's
//    result (x * (1 + s) written as x + x * s), in one pass (shaders/modulate_convrot.comp). The
//    normalisation repeats the native Vulkan norm shader's expressions, reduction order and workgroup
//    size, each step rounds once in the nodes' order as the native MUL and ADD do, and the rotation
//    and quantization are the kernel's, so the codes and scales are bit-identical to the unfused
//    chain on Vulkan. Only the quantize node is an output (the runtime refuses intermediates with
//    other consumers). An output overlapping an input is computed in the plan workspace and copied.
//    The rule's optimize delays the leading links of every such chain past the independent nodes
//    between them (a modulation chunk's view and SCALE, as a DiT block emits them), so that the chain
//    becomes consecutive. GGML_VK_DISABLE_FUSION set to anything but "0" makes it match and reorder
//    nothing.
//  * the fusion rules "sd.scale_convrot.vulkan", "sd.swiglu_convrot.vulkan" (packed, swapped or split)
//    and "sd.activation_mul_convrot.vulkan" (SILU / SIGMOID -> MUL), the chains of
//    common/convrot_chain.h, in one pass (shaders/activation_convrot.comp): each row value is the
//    native Vulkan map / GLU / binary shaders' expression, then the kernel's rotation and
//    quantization. The SILU / SIGMOID rule's optimize makes its chain consecutive as the CPU rule's
//    does; overlapping outputs use the workspace; GGML_VK_DISABLE_FUSION is honoured.
#include <algorithm>
#include <bit>
#include <vector>

#include "common/convrot_chain.h"
#include "common/int8.h"
#include "common/pack.h"
#include "vulkan/sd_vulkan.h"

namespace sd::vulkan {
namespace {

using namespace sd::int8;

constexpr uint32_t kInvocations = 256;   // convrot.comp's workgroup size
constexpr uint32_t kSharedBytes = 9216;  // convrot.glsl: 2048 + 256 floats
constexpr int64_t kMaxGroups = 65535;

// The grid of a quantization of `rows` rows: one workgroup per row and one zeroing the padding, over
// two dimensions (convrot.glsl's workgroup_row).
struct RowGrid {
    uint32_t x, y;
};

RowGrid row_grid(int64_t rows) {
    const int64_t groups = rows + 1;
    const auto x = static_cast<uint32_t>(std::min(groups, kMaxGroups));
    return {x, static_cast<uint32_t>((groups + x - 1) / x)};
}

bool quantize_supports(ggml_backend_dev_t device, const ggml_tensor * node, void *) {
    if (ggml_ext_node_op(node) != quantize_op() || node->type != GGML_TYPE_I8) return false;
    const ggml_tensor * a = node->src[0];
    return a && a->type == GGML_TYPE_F32 && ggml_is_contiguous(a) && a->ne[0] % 4 == 0 &&
           fits_binding(device, ggml_nbytes(a)) && fits_binding(device, ggml_nbytes(node));
}

ggml_status quantize_execute(const ggml_ext_execute_params * params) {
    const ggml_tensor * node = params->node;
    const ggml_tensor * a = node->src[0];
    if (ggml_nbytes(node) == 0) return GGML_STATUS_SUCCESS;
    Bound in, out;
    if (!bind(params->backend, a, false, &in) || !bind(params->backend, node, true, &out))
        return GGML_STATUS_FAILED;
    if (overlaps(in, out)) return fail("sd.quantize_i8_convrot.vulkan: the output overlaps the input");
    return record_quantize(params->backend, in, out, a->ne[0], ggml_nrows(a), quantize_attrs_of(node).group);
}

// ---- the fusion [NORM | RMS_NORM] -> 1..4 steps -> quantize ----------------------------------------

constexpr int kMaxSteps = 4;
constexpr uint32_t kStepMul = 0, kStepAdd = 1, kStepAddBeforeMul = 2;  // modulate_convrot.comp's kinds
constexpr uint32_t kModulateConstants = 24;                            // G, WG, RMS, STEPS, kinds, extents

// A chain the fused shader computes: nodes norm, steps..., quantize.
struct ModulateChain {
    const ggml_tensor * norm;
    const ggml_tensor * quantize;
    int n_steps;
    uint32_t kinds[kMaxSteps];
    const ggml_tensor * operands[kMaxSteps];  // none for kStepAddBeforeMul

    int n_nodes() const { return n_steps + 2; }
};

bool norm_ok(ggml_backend_dev_t device, const ggml_tensor * norm) {
    const ggml_tensor * x = norm->src[0];
    return (norm->op == GGML_OP_NORM || norm->op == GGML_OP_RMS_NORM) && norm->type == GGML_TYPE_F32 && x &&
           bindable_f32(device, x) && ggml_are_same_shape(x, norm);
}

// Whether nodes[step + 1] is step `step` of c, after the norm and the steps before (nodes[0 .. step]).
bool parse_step(ggml_backend_dev_t device, const ggml_tensor * const * nodes, int step, ModulateChain * c) {
    const ggml_tensor * node = nodes[step + 1];
    const ggml_tensor * value = nodes[step];
    if (step > 0 && c->kinds[step - 1] == kStepMul && node->op == GGML_OP_ADD &&
        node->type == GGML_TYPE_F32 && ggml_are_same_shape(node, value)) {
        const ggml_tensor * before = nodes[step - 1];
        if ((node->src[0] == value && node->src[1] == before) ||
            (node->src[0] == before && node->src[1] == value)) {
            c->kinds[step] = kStepAddBeforeMul;
            c->operands[step] = nullptr;
            return true;
        }
    }
    const bool mul = node->op == GGML_OP_MUL;
    const ggml_tensor * operand = repeated_operand(device, node, mul ? GGML_OP_MUL : GGML_OP_ADD, value);
    if (!operand || std::find(nodes, nodes + step + 1, operand) != nodes + step + 1) return false;
    c->kinds[step] = mul ? kStepMul : kStepAdd;
    c->operands[step] = operand;
    return true;
}

// The chain at nodes[0 .. n) (false when they do not start one).
bool parse_chain(ggml_backend_dev_t device, const ggml_tensor * const * nodes, int n, ModulateChain * c) {
    if (n < 3 || !norm_ok(device, nodes[0])) return false;
    c->norm = nodes[0];
    c->n_steps = 0;
    for (int i = 1; i < n; ++i) {
        const ggml_tensor * node = nodes[i];
        if (c->n_steps > 0 && node->src[0] == nodes[i - 1] && ggml_ext_node_op(node) == quantize_op()) {
            c->quantize = node;
            return quantize_supports(device, node, nullptr);
        }
        if (c->n_steps == kMaxSteps || !parse_step(device, nodes, c->n_steps, c)) return false;
        ++c->n_steps;
    }
    return false;
}

int modulate_match(ggml_backend_dev_t device, const ggml_cgraph * graph, int first, void *) {
    if (fusion_disabled()) return 0;
    const ggml_tensor * nodes[kMaxSteps + 2];
    const int n = std::min(kMaxSteps + 2, ggml_graph_n_nodes(graph) - first);
    for (int i = 0; i < n; ++i)
        nodes[i] = ggml_graph_node(graph, first + i);
    ModulateChain c;
    return parse_chain(device, nodes, n, &c) ? c.n_nodes() : 0;  // the runtime checks legality
}

struct ModulatePush {
    uint32_t k, rows, ne1, ne2, q_offset;
    float eps;
    uint32_t x_offset, x_nb[4];
    uint32_t o_offset[kMaxSteps], o_nb[kMaxSteps][4];
};
static_assert(sizeof(ModulatePush) <= 128, "every device takes 128 bytes of push constants");

// The native norm's workgroup size for rows of n values: a power of two in [32, 256].
uint32_t norm_block_size(int64_t n) {
    return static_cast<uint32_t>(
        std::clamp<uint64_t>(std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(n, 1))), 32, 256));
}

// The specialisation constants of a chain (the extents after the first 8, 0 unless an operand tiles
// the output partially).
std::vector<uint32_t> modulate_constants(const ModulateChain & c) {
    std::vector<uint32_t> k{static_cast<uint32_t>(quantize_attrs_of(c.quantize).group),
                            norm_block_size(c.norm->ne[0]), uint32_t(c.norm->op == GGML_OP_RMS_NORM),
                            static_cast<uint32_t>(c.n_steps)};
    for (int i = 0; i < kMaxSteps; ++i)
        k.push_back(i < c.n_steps ? c.kinds[i] : kStepMul);
    for (int i = 0; i < kMaxSteps; ++i)
        for (int d = 0; d < 4; ++d) {
            const ggml_tensor * o = i < c.n_steps ? c.operands[i] : nullptr;
            const bool partial = o && o->ne[d] > 1 && o->ne[d] < c.norm->ne[d];
            k.push_back(partial ? static_cast<uint32_t>(o->ne[d]) : 0);
        }
    return k;
}

ModulatePush modulate_push(const ModulateChain & c, const Bound & x, const Bound (&operands)[kMaxSteps],
                           const Bound & q) {
    const ggml_tensor * n = c.norm;
    ModulatePush push{static_cast<uint32_t>(n->ne[0]),
                      static_cast<uint32_t>(ggml_nrows(n)),
                      static_cast<uint32_t>(n->ne[1]),
                      static_cast<uint32_t>(n->ne[2]),
                      q.info.shader_offset / 4,
                      sd::native_params<ggml_ext_norm_params>(n).eps,
                      x.info.shader_offset / 4,
                      {},
                      {},
                      {}};
    for (int d = 0; d < 4; ++d)
        push.x_nb[d] = static_cast<uint32_t>(n->src[0]->nb[d] / sizeof(float));
    for (int i = 0; i < c.n_steps; ++i) {
        const ggml_tensor * o = c.operands[i];
        if (!o) continue;
        push.o_offset[i] = operands[i].info.shader_offset / 4;
        for (int d = 0; d < 4; ++d)  // a broadcast dimension reads its one element
            push.o_nb[i][d] = o->ne[d] == 1 ? 0 : static_cast<uint32_t>(o->nb[d] / sizeof(float));
    }
    return push;
}

ggml_status modulate_execute(const ggml_ext_fusion_execute_params * params) {
    ggml_backend_t backend = params->backend;
    ModulateChain c;
    if (!parse_chain(ggml_backend_get_device(backend), params->nodes, params->n_nodes, &c) ||
        c.n_nodes() != params->n_nodes)
        return fail("sd.modulate_convrot.vulkan: the nodes are not a chain it computes");
    const size_t bytes = ggml_nbytes(c.quantize);
    if (bytes == 0) return GGML_STATUS_SUCCESS;
    Bound x, out, operands[kMaxSteps];
    if (!bind(backend, c.norm->src[0], false, &x) || !bind_output(backend, {c.quantize, nullptr, 0, 0}, &out))
        return GGML_STATUS_FAILED;
    bool scratch = overlaps(x, out);
    for (int i = 0; i < kMaxSteps; ++i) {
        operands[i] = x;  // absent operands bind x, declared by the shader but never read
        if (i >= c.n_steps || !c.operands[i]) continue;
        if (!bind(backend, c.operands[i], false, &operands[i])) return GGML_STATUS_FAILED;
        scratch = scratch || overlaps(operands[i], out);
    }
    for (const Bound * floats : {&x, &operands[0], &operands[1], &operands[2], &operands[3]})
        if (floats->info.shader_offset % 4 != 0)
            return fail("sd.modulate_convrot.vulkan: F32 tensors must start on a 4-byte boundary");
    Bound q = out;
    if (scratch && !bind_workspace(params, bytes, &q)) return GGML_STATUS_FAILED;
    const ModulatePush push = modulate_push(c, x, operands, q);
    const RowGrid grid = row_grid(ggml_nrows(c.norm));
    const ggml_status status =
        dispatch_vectors(backend, "sd_modulate_convrot",
                         {x.binding, q.binding, operands[0].binding, operands[1].binding, operands[2].binding,
                          operands[3].binding},
                         modulate_constants(c), &push, sizeof push, grid.x, grid.y);
    if (status != GGML_STATUS_SUCCESS || !scratch) return status;
    return service()->copy(backend, &out.binding.range, &q.binding.range);
}

// ---- graph delay: making a chain consecutive ------------------------------------------------------

// The positions of the chain starting with a norm at `first`: each link the first later node
// consuming the previous one, MUL or ADD steps (at most kMaxSteps) up to a quantize node; empty when
// there is none. match checks the rest.
std::vector<int> chain_at(const ggml_cgraph * graph, int first) {
    const ggml_op op = ggml_graph_node(graph, first)->op;
    if (op != GGML_OP_NORM && op != GGML_OP_RMS_NORM) return {};
    std::vector<int> chain{first};
    for (int i = first + 1; i < ggml_graph_n_nodes(graph); ++i) {
        const ggml_tensor * node = ggml_graph_node(graph, i);
        const ggml_tensor * previous = ggml_graph_node(graph, chain.back());
        if (node->src[0] != previous && node->src[1] != previous) continue;
        const bool quantize = node->src[0] == previous && ggml_ext_node_op(node) == quantize_op();
        if (quantize && chain.size() > 1) {
            chain.push_back(i);
            return chain;
        }
        if ((node->op != GGML_OP_MUL && node->op != GGML_OP_ADD) || chain.size() > kMaxSteps) return {};
        chain.push_back(i);
    }
    return {};
}

// Every chain becomes consecutive. Idempotent.
void modulate_optimize(ggml_backend_dev_t, ggml_cgraph * graph, void *) {
    make_chains_consecutive(graph, [&](int i) { return chain_at(graph, i); });
}

const ggml_ext_fusion_desc * modulate_fusion_desc() {
    static const ggml_ext_fusion_desc desc = [] {
        ggml_ext_fusion_desc d = fusion_desc("sd.modulate_convrot.vulkan", modulate_match, modulate_execute);
        d.optimize = modulate_optimize;
        d.prepare = output_sized_workspace;  // an output over an input (a hand-made layout)
        return d;
    }();
    return &desc;
}

// ---- the fusion SCALE | SWIGLU | SILU/SIGMOID -> MUL, then quantize --------------------------------

using convrot_chain::Chain;
using convrot_chain::Producer;

struct ActivationPush {
    uint32_t k, rows, ne1, ne2, q_offset;
    float s, b;
    uint32_t x_offset, x_nb[3];
    uint32_t o_offset, o_nb[3];
};
static_assert(sizeof(ActivationPush) <= 128, "every device takes 128 bytes of push constants");

// The chain with the Vulkan constraints: the quantize kernel's, and bindable inputs.
bool activation_chain_ok(ggml_backend_dev_t device, const Chain & c, const ggml_tensor * quantize) {
    return quantize_supports(device, quantize, nullptr) && bindable_f32(device, c.x) &&
           (!c.other || bindable_f32(device, c.other));
}

template <ggml_op kOp, int kNodes>
int activation_match(ggml_backend_dev_t device, const ggml_cgraph * graph, int first, void *) {
    Chain c;
    if (fusion_disabled() || !convrot_chain::match(graph, first, kOp, kNodes, &c)) return 0;
    return activation_chain_ok(device, c, ggml_graph_node(graph, first + kNodes - 1)) ? kNodes : 0;
}

void activation_optimize(ggml_backend_dev_t, ggml_cgraph * graph, void *) {
    make_chains_consecutive(graph, [&](int i) { return convrot_chain::activation_chain(graph, i); });
}

// activation_convrot.comp's OP.
uint32_t activation_op(const Chain & c) {
    switch (c.producer) {
        case Producer::scale:
            return 0;
        case Producer::silu_mul:
            return c.activation_first ? 1 : 2;
        case Producer::sigmoid_mul:
            return c.activation_first ? 3 : 4;
        case Producer::swiglu:
            break;
    }
    return 5;
}

// Floats from t's binding start to its row 0 (plus `column`), its row strides in floats (0 for a
// dimension broadcast over the output's rows).
void row_view(const Bound & bound, const ggml_tensor * t, const ggml_tensor * out, int64_t column,
              uint32_t * offset, uint32_t nb[3]) {
    *offset = bound.info.shader_offset / 4 + static_cast<uint32_t>(column);
    for (int d = 1; d < 4; ++d)
        nb[d - 1] = t->ne[d] == 1 && out->ne[d] != 1 ? 0 : static_cast<uint32_t>(t->nb[d] / sizeof(float));
}

ggml_status activation_execute(const ggml_ext_fusion_execute_params * params) {
    ggml_backend_t backend = params->backend;
    const ggml_tensor * quantize = params->nodes[params->n_nodes - 1];
    Chain c;
    if (!convrot_chain::parse(params->nodes, params->n_nodes, &c) ||
        !activation_chain_ok(ggml_backend_get_device(backend), c, quantize))
        return fail("sd.activation_convrot.vulkan: the nodes are not a chain it computes");
    const size_t bytes = ggml_nbytes(quantize);
    if (bytes == 0) return GGML_STATUS_SUCCESS;
    Bound x, other, out;
    if (!bind(backend, c.x, false, &x) || !bind_output(backend, {quantize, nullptr, 0, 0}, &out))
        return GGML_STATUS_FAILED;
    other = x;  // bound but never read without an operand
    if (c.other && !bind(backend, c.other, false, &other)) return GGML_STATUS_FAILED;
    if (x.info.shader_offset % 4 != 0 || other.info.shader_offset % 4 != 0)
        return fail("sd.activation_convrot.vulkan: F32 tensors must start on a 4-byte boundary");
    Bound q = out;
    const bool scratch = overlaps(x, out) || (c.other && overlaps(other, out));
    if (scratch && !bind_workspace(params, bytes, &q)) return GGML_STATUS_FAILED;
    const ggml_tensor * shape = quantize->src[0];
    ActivationPush push{static_cast<uint32_t>(c.k),
                        static_cast<uint32_t>(ggml_nrows(shape)),
                        static_cast<uint32_t>(shape->ne[1]),
                        static_cast<uint32_t>(shape->ne[2]),
                        q.info.shader_offset / 4,
                        c.scale,
                        c.bias,
                        0,
                        {},
                        0,
                        {}};
    const bool merged = c.producer == Producer::swiglu && !c.other;
    row_view(x, c.x, shape, merged && c.swapped ? c.k : 0, &push.x_offset, push.x_nb);
    if (merged)
        row_view(x, c.x, shape, c.swapped ? 0 : c.k, &push.o_offset, push.o_nb);
    else if (c.other)
        row_view(other, c.other, shape, 0, &push.o_offset, push.o_nb);
    const RowGrid grid = row_grid(ggml_nrows(shape));
    const ggml_status status =
        dispatch(backend, "sd_activation_convrot", {x.binding, q.binding, other.binding},
                 {static_cast<uint32_t>(c.group), activation_op(c)}, &push, sizeof push, grid.x, grid.y);
    if (status != GGML_STATUS_SUCCESS || !scratch) return status;
    return service()->copy(backend, &out.binding.range, &q.binding.range);
}

bool register_activation_fusions(ggml_backend_dev_t device) {
    return register_fusion(device, "sd.scale_convrot.vulkan", activation_match<GGML_OP_SCALE, 2>,
                           activation_execute, nullptr, kReplayFusionFlags) &&
           register_fusion(device, "sd.swiglu_convrot.vulkan", activation_match<GGML_OP_GLU, 2>,
                           activation_execute, nullptr, kReplayFusionFlags) &&
           register_fusion(device, "sd.activation_mul_convrot.vulkan", activation_match<GGML_OP_UNARY, 3>,
                           activation_execute, activation_optimize, kReplayFusionFlags);
}

}  // namespace

ggml_status record_quantize(ggml_backend_t backend, const Bound & in, const Bound & out, int64_t k,
                            int64_t rows, int group) {
    if (in.info.shader_offset % 4 != 0 || out.info.shader_offset % 4 != 0)
        return fail("sd.quantize_i8_convrot.vulkan: tensors must start on a 4-byte boundary");
    const RowGrid grid = row_grid(rows);
    const struct {
        uint32_t k, rows, rows_pad, a_offset, q_offset, q_words;
    } push{static_cast<uint32_t>(k),
           static_cast<uint32_t>(rows),
           static_cast<uint32_t>(packed_rows_pad(rows)),
           in.info.shader_offset / 4,
           out.info.shader_offset / 4,
           static_cast<uint32_t>(packed_bytes(k, rows) / 4)};
    return dispatch(backend, "sd_convrot", {in.binding, out.binding}, {static_cast<uint32_t>(group)}, &push,
                    sizeof push, grid.x, grid.y);
}

const ggml_ext_kernel_desc * int8_quantize_kernel_desc() {
    static const ggml_ext_kernel_desc desc = custom_kernel_desc(
        "sd.quantize_i8_convrot.vulkan", quantize_op(), quantize_supports, quantize_execute);
    return &desc;
}

bool register_convrot(ggml_backend_dev_t device) {
    ggml_ext_vulkan_device_info info{};
    info.struct_size = sizeof info;
    if (!service() || !service()->device_info(device, &info)) return false;
    if (info.max_workgroup_invocations < kInvocations || info.max_workgroup_size[0] < kInvocations ||
        info.max_shared_memory < kSharedBytes)
        return true;  // the scheduler runs the quantization on the CPU
    // The fused shader binds x, the output and 4 operands, with its own constants and push constants.
    const bool fusion = info.max_bindings >= 6 && info.max_constants >= kModulateConstants &&
                        info.max_push_constants >= sizeof(ModulatePush);
    return register_replayable_kernel(device, int8_quantize_kernel_desc()) &&
           (!fusion || register_replayable_fusion(device, modulate_fusion_desc())) &&
           (info.max_bindings < 3 || info.max_constants < 2 ||
            info.max_push_constants < sizeof(ActivationPush) || register_activation_fusions(device));
}

}  // namespace sd::vulkan
