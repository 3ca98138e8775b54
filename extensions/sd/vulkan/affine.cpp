// The sd pack's affine fusions on Vulkan (ggml-extensions.md's affine rules; chains of
// common/affine_chain.h), each bit-identical to its unfused chain on Vulkan:
//  * "sd.mul_add.vulkan": F32 MUL(x, gate) -> ADD(residual) in one pass (shaders/mul_add.comp), the
//    product and the sum rounded separately as the native MUL and ADD store them. The output may take
//    x's block in place (GGML_EXT_FUSION_OUTPUT_IN_PLACE: each element is read before it is written);
//    any other overlap of the output with an input is computed in the plan workspace and copied.
//  * "sd.concat_f16.vulkan" (CONCAT -> [PERMUTE] -> CPY into F16) and "sd.cont_scale_f16.vulkan"
//    (CONT -> SCALE -> PERMUTE -> CPY into F16) in one pass (shaders/f16_copy.comp): values read where
//    the eliminated contiguous tensor's come from, SCALE's native expression, the native F16 rounding.
//    A contiguous copy over an input is staged in the workspace; a strided one is refused.
// GGML_VK_DISABLE_FUSION set to anything but "0" makes them match nothing.
#include <algorithm>

#include "common/affine_chain.h"
#include "common/pack.h"
#include "vulkan/sd_vulkan.h"

namespace sd::vulkan {
namespace {

struct MulAddPush {
    View x, gate, residual;  // x.ne: the output's extents
    uint32_t d_offset;
};
static_assert(sizeof(MulAddPush) <= 128, "every device takes 128 bytes of push constants");

constexpr uint32_t kInvocations = 256;  // mul_add.comp's workgroup size

bool chain_ok(ggml_backend_dev_t device, const affine_chain::MulAdd & m, const ggml_tensor * add) {
    return bindable_f32(device, m.x) && bindable_f32(device, m.gate) && bindable_f32(device, m.residual) &&
           bindable_f32(device, add);
}

int mul_add_match(ggml_backend_dev_t device, const ggml_cgraph * graph, int first, void *) {
    if (fusion_disabled() || first + 2 > ggml_graph_n_nodes(graph)) return 0;
    affine_chain::MulAdd m;
    const ggml_tensor * add = ggml_graph_node(graph, first + 1);
    return affine_chain::parse_mul_add(ggml_graph_node(graph, first), add, &m) && chain_ok(device, m, add)
               ? 2
               : 0;
}

// An input the output may cover: none of its bytes, or exactly the same range (x or the residual of
// the output's shape, read element by element before the element is written).
bool safe_under(const Bound & in, const ggml_tensor * t, const Bound & out, const ggml_tensor * add) {
    return !overlaps(in, out) ||
           (same_range(in, out) && ggml_are_same_shape(t, add) && ggml_is_contiguous(t));
}

ggml_status mul_add_execute(const ggml_ext_fusion_execute_params * params) {
    ggml_backend_t backend = params->backend;
    ggml_tensor * add = params->nodes[1];
    affine_chain::MulAdd m;
    if (params->n_nodes != 2 || !affine_chain::parse_mul_add(params->nodes[0], add, &m) ||
        !chain_ok(ggml_backend_get_device(backend), m, add))
        return fail("sd.mul_add.vulkan: the nodes are not a chain it computes");
    const size_t bytes = ggml_nbytes(add);
    if (bytes == 0) return GGML_STATUS_SUCCESS;
    Bound x, gate, residual, out;
    if (!bind(backend, m.x, false, &x) || !bind(backend, m.gate, false, &gate) ||
        !bind(backend, m.residual, false, &residual) || !bind_output(backend, {add, nullptr, 0, 0}, &out))
        return GGML_STATUS_FAILED;
    for (const Bound * floats : {&x, &gate, &residual})
        if (floats->info.shader_offset % 4 != 0)
            return fail("sd.mul_add.vulkan: F32 tensors must start on a 4-byte boundary");
    const bool scratch = !safe_under(x, m.x, out, add) || !safe_under(gate, m.gate, out, add) ||
                         !safe_under(residual, m.residual, out, add);
    Bound d = out;
    if (scratch && !bind_workspace(params, bytes, &d)) return GGML_STATUS_FAILED;
    const MulAddPush push{view_of(x, m.x), view_of(gate, m.gate), view_of(residual, m.residual),
                          d.info.shader_offset / 4};
    const auto groups = static_cast<uint32_t>(
        std::clamp<int64_t>((ggml_nelements(add) + kInvocations - 1) / kInvocations, 1, 65535));
    const ggml_status status =
        dispatch(backend, "sd_mul_add", {x.binding, gate.binding, residual.binding, d.binding},
                 {static_cast<uint32_t>(m.mul_first)}, &push, sizeof push, groups);
    if (status != GGML_STATUS_SUCCESS || !scratch) return status;
    return service()->copy(backend, &out.binding.range, &d.binding.range);
}

// ---- [CONCAT | CONT -> SCALE] -> [PERMUTE] -> CPY into F16 -------------------------------------------

struct CopyPush {
    uint32_t ne[4];
    uint32_t a_offset, a_nb[4];
    uint32_t b_offset, b_nb[4];
    uint32_t split, a_extent;
    float s, bias;
    uint32_t d_offset, d_nb[4];
};
static_assert(sizeof(CopyPush) <= 128, "every device takes 128 bytes of push constants");

bool copy_chain_ok(ggml_backend_dev_t device, const affine_chain::CopyChain & ch, const ggml_tensor * cpy) {
    return bindable_f32(device, ch.a) && (!ch.b || bindable_f32(device, ch.b)) &&
           fits_binding(device, ggml_nbytes(cpy)) && ggml_nelements(cpy) < (int64_t{1} << 32);
}

template <ggml_op kFirst, int kNodes>
int copy_match(ggml_backend_dev_t device, const ggml_cgraph * graph, int first, void *) {
    if (fusion_disabled() || first + kNodes > ggml_graph_n_nodes(graph) ||
        ggml_graph_node(graph, first)->op != kFirst)
        return 0;
    affine_chain::CopyChain ch;
    const ggml_tensor * const * nodes = ggml_graph_nodes(graph) + first;
    return affine_chain::parse_copy(nodes, kNodes, &ch) && copy_chain_ok(device, ch, nodes[kNodes - 1])
               ? kNodes
               : 0;
}

// Concat -> Permute -> CPY first (the longer chain), then Concat -> CPY.
int concat_match(ggml_backend_dev_t device, const ggml_cgraph * graph, int first, void * user) {
    const int n = copy_match<GGML_OP_CONCAT, 3>(device, graph, first, user);
    return n ? n : copy_match<GGML_OP_CONCAT, 2>(device, graph, first, user);
}

// t's strides in floats along the copy's dimensions (0 where the copy's dimension walks nothing of t).
void strides_along_copy(const affine_chain::CopyChain & ch, const ggml_tensor * t, uint32_t nb[4]) {
    for (int k = 0; k < 4; ++k)
        nb[k] = 0;
    for (int d = 0; d < 4; ++d)
        if (ch.axis_of[d] >= 0) nb[ch.axis_of[d]] = static_cast<uint32_t>(t->nb[d] / sizeof(float));
}

ggml_status copy_execute(const ggml_ext_fusion_execute_params * params) {
    ggml_backend_t backend = params->backend;
    ggml_tensor * cpy = params->nodes[params->n_nodes - 1];
    affine_chain::CopyChain ch;
    if (!affine_chain::parse_copy(params->nodes, params->n_nodes, &ch) ||
        !copy_chain_ok(ggml_backend_get_device(backend), ch, cpy))
        return fail("sd F16 copy fusion (Vulkan): the nodes are not a chain it computes");
    if (ggml_nelements(cpy) == 0) return GGML_STATUS_SUCCESS;
    Bound a, b, out;
    if (!bind(backend, ch.a, false, &a) || !bind(backend, cpy, true, &out)) return GGML_STATUS_FAILED;
    b = a;  // bound but never read without a second input
    if (ch.b && !bind(backend, ch.b, false, &b)) return GGML_STATUS_FAILED;
    if (a.info.shader_offset % 4 != 0 || b.info.shader_offset % 4 != 0 || out.info.shader_offset % 2 != 0)
        return fail("sd F16 copy fusion (Vulkan): tensors must start on their element size");
    const bool scratch = overlaps(a, out) || (ch.b && overlaps(b, out));
    // A contiguous copy is staged whole in the workspace; a strided destination view cannot be.
    if (scratch && !ggml_is_contiguous(cpy))
        return fail("sd F16 copy fusion (Vulkan): a strided F16 destination over an input is not supported");
    Bound d = out;
    if (scratch && !bind_workspace(params, ggml_nbytes(cpy), &d)) return GGML_STATUS_FAILED;
    CopyPush push{};
    for (int k = 0; k < 4; ++k) {
        push.ne[k] = static_cast<uint32_t>(cpy->ne[k]);
        push.d_nb[k] = static_cast<uint32_t>(cpy->nb[k] / sizeof(uint16_t));
    }
    push.a_offset = a.info.shader_offset / 4;
    push.b_offset = b.info.shader_offset / 4;
    strides_along_copy(ch, ch.a, push.a_nb);
    if (ch.b) strides_along_copy(ch, ch.b, push.b_nb);
    push.split = ch.b ? static_cast<uint32_t>(ch.axis_of[ch.dim]) : 4;
    push.a_extent = ch.b ? static_cast<uint32_t>(ch.a->ne[ch.dim]) : 0;
    push.s = ch.scale;
    push.bias = ch.bias;
    push.d_offset = d.info.shader_offset / 2;
    const auto groups = static_cast<uint32_t>(
        std::clamp<int64_t>((ggml_nelements(cpy) + kInvocations - 1) / kInvocations, 1, 65535));
    const ggml_status status = dispatch(backend, "sd_f16_copy", {a.binding, b.binding, d.binding},
                                        {static_cast<uint32_t>(ch.scaled)}, &push, sizeof push, groups);
    if (status != GGML_STATUS_SUCCESS || !scratch) return status;
    return service()->copy(backend, &out.binding.range, &d.binding.range);
}

}  // namespace

bool register_affine(ggml_backend_dev_t device) {
    ggml_ext_vulkan_device_info info{};
    info.struct_size = sizeof info;
    if (!service() || !service()->device_info(device, &info)) return false;
    if (info.max_bindings < 4 || info.max_constants < 1 || info.max_push_constants < sizeof(MulAddPush) ||
        info.max_push_constants < sizeof(CopyPush) || info.max_workgroup_invocations < kInvocations ||
        info.max_workgroup_size[0] < kInvocations)
        return true;  // the chains run as their native operators
    return register_fusion(device, "sd.mul_add.vulkan", mul_add_match, mul_add_execute, nullptr,
                           GGML_EXT_FUSION_OUTPUT_IN_PLACE | kReplayFusionFlags) &&
           register_fusion(device, "sd.concat_f16.vulkan", concat_match, copy_execute, nullptr,
                           kReplayFusionFlags) &&
           register_fusion(device, "sd.cont_scale_f16.vulkan", copy_match<GGML_OP_CONT, 4>, copy_execute,
                           nullptr, kReplayFusionFlags);
}

}  // namespace sd::vulkan
