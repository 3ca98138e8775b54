// The sd pack's affine fusion on Vulkan (ggml-extensions.md's affine rules): "sd.mul_add.vulkan",
// F32 MUL(x, gate) -> ADD(residual) (common/affine_chain.h) in one pass (shaders/mul_add.comp), the
// product and the sum rounded separately as the native MUL and ADD store them: bit-identical to the
// unfused chain. The output may take x's block in place (GGML_EXT_FUSION_OUTPUT_IN_PLACE: each
// element is read before it is written); any other overlap of the output with an input is computed in
// the plan workspace and copied. GGML_VK_DISABLE_FUSION set to anything but "0" makes it match nothing.
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
    return affine_chain::parse_mul_add(ggml_graph_node(graph, first), add, &m) && chain_ok(device, m, add) ? 2 : 0;
}

ggml_status mul_add_prepare(const ggml_ext_fusion_prepare_params * params, void ** state,
                            size_t * workspace_bytes) {
    *state = nullptr;
    *workspace_bytes = ggml_nbytes(params->nodes[params->n_nodes - 1]);  // an output over an input
    return GGML_STATUS_SUCCESS;
}

// An input the output may cover: none of its bytes, or exactly the same range (x or the residual of
// the output's shape, read element by element before the element is written).
bool safe_under(const Bound & in, const ggml_tensor * t, const Bound & out, const ggml_tensor * add) {
    return !overlaps(in, out) || (same_range(in, out) && ggml_are_same_shape(t, add) && ggml_is_contiguous(t));
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
    if (scratch) {
        if (!params->workspace || params->workspace_size < bytes)
            return fail("sd.mul_add.vulkan: workspace smaller than prepare requested");
        if (!bind_output(backend, workspace_range(params->workspace, params->workspace_data, bytes), &d))
            return GGML_STATUS_FAILED;
    }
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

}  // namespace

bool register_affine(ggml_backend_dev_t device) {
    ggml_ext_vulkan_device_info info{};
    info.struct_size = sizeof info;
    if (!service() || !service()->device_info(device, &info)) return false;
    if (info.max_bindings < 4 || info.max_constants < 1 || info.max_push_constants < sizeof(MulAddPush) ||
        info.max_workgroup_invocations < kInvocations || info.max_workgroup_size[0] < kInvocations)
        return true;  // the chain runs as its two native operators
    ggml_ext_fusion_desc d = fusion_desc("sd.mul_add.vulkan", mul_add_match, mul_add_execute);
    d.prepare = mul_add_prepare;
    d.flags |= GGML_EXT_FUSION_OUTPUT_IN_PLACE;
    return ggml_ext_register_fusion(device, &d);
}

}  // namespace sd::vulkan
