// The sd pack's access to ggml_ext_vulkan_v1 and its embedded shaders.
#include <ggml-vulkan.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/pack.h"
#include "vulkan/sd_vulkan.h"

namespace sd::vulkan {

bool register_replayable_kernel(ggml_backend_dev_t device, const ggml_ext_kernel_desc * desc) {
    return ggml_ext_register_kernel_ex(device, desc,
                                       GGML_EXT_KERNEL_CAPTURE_SAFE | GGML_EXT_KERNEL_REPLAY_REUSABLE);
}

bool register_replayable_fusion(ggml_backend_dev_t device, const ggml_ext_fusion_desc * desc) {
    ggml_ext_fusion_desc flagged = *desc;
    flagged.flags |= kReplayFusionFlags;
    return ggml_ext_register_fusion(device, &flagged);
}

const ggml_ext_vulkan_v1 * service() {
    static const ggml_ext_vulkan_v1 * table = [] {
        const auto * t = static_cast<const ggml_ext_vulkan_v1 *>(
            ggml_backend_reg_get_proc_address(ggml_backend_reg_by_name("Vulkan"), GGML_EXT_VULKAN_V1));
        return t && t->struct_size >= sizeof(ggml_ext_vulkan_v1) && t->version >= GGML_EXT_VULKAN_V1_VERSION
                   ? t
                   : nullptr;
    }();
    return table;
}

bool fusion_disabled() {
    const char * value = std::getenv("GGML_VK_DISABLE_FUSION");
    return value && std::strcmp(value, "0") != 0;
}

bool bind(ggml_backend_t backend, const ggml_tensor * t, bool written, Bound * out, size_t offset,
          size_t size) {
    out->binding = {{t, nullptr, offset, size}, written};
    return service()->buffer_info(backend, &out->binding.range, &out->info);
}

bool bind_output(ggml_backend_t backend, const ggml_ext_vulkan_range & range, Bound * out) {
    out->binding = {range, true};
    if (!service()->buffer_info(backend, &range, &out->info)) return false;
    if (out->info.shader_offset % 4 == 0) return true;
    ggml_ext_set_error("sd vulkan: F32 tensors must start on a 4-byte boundary");
    return false;
}

ggml_ext_vulkan_range workspace_range(ggml_backend_buffer_t workspace, const void * workspace_data,
                                      size_t bytes) {
    if (!workspace) return {nullptr, nullptr, 0, bytes};  // (the service reports the missing buffer)
    const auto offset =
        static_cast<size_t>(static_cast<const char *>(workspace_data) -
                            static_cast<const char *>(ggml_backend_buffer_get_base(workspace)));
    return {nullptr, workspace, offset, bytes};
}

bool bind_workspace(const ggml_ext_fusion_execute_params * params, size_t bytes, Bound * out) {
    if (!params->workspace || params->workspace_size < bytes) {
        ggml_ext_set_error("sd vulkan fusion: workspace smaller than prepare requested");
        return false;
    }
    return bind_output(params->backend, workspace_range(params->workspace, params->workspace_data, bytes),
                       out);
}

bool overlaps(const Bound & a, const Bound & b) {
    return a.info.storage == b.info.storage && a.info.begin < b.info.end && b.info.begin < a.info.end;
}

bool same_range(const Bound & a, const Bound & b) {
    return a.info.storage == b.info.storage && a.info.begin == b.info.begin && a.info.end == b.info.end;
}

ggml_status fail(const char * message) {
    ggml_ext_set_error(message);
    return GGML_STATUS_FAILED;
}

bool fits_binding(ggml_backend_dev_t device, size_t bytes) {
    ggml_ext_vulkan_device_info info{};
    info.struct_size = sizeof info;
    return service()->device_info(device, &info) && bytes <= info.max_storage_range &&
           bytes < (size_t{1} << 32);
}

bool bindable_f32(ggml_backend_dev_t device, const ggml_tensor * t) {
    return t->type == GGML_TYPE_F32 && fits_binding(device, ggml_nbytes(t)) &&
           std::all_of(t->nb, t->nb + GGML_MAX_DIMS, [](size_t nb) { return nb % sizeof(float) == 0; });
}

const ggml_tensor * repeated_operand(ggml_backend_dev_t device, const ggml_tensor * node, ggml_op op,
                                     const ggml_tensor * value) {
    if (node->op != op || node->type != GGML_TYPE_F32 || !ggml_are_same_shape(node, value) ||
        (node->src[0] != value && node->src[1] != value))
        return nullptr;
    const ggml_tensor * other = node->src[0] == value ? node->src[1] : node->src[0];
    return other && ggml_can_repeat(other, node) && bindable_f32(device, other) ? other : nullptr;
}

View view_of(const Bound & bound, const ggml_tensor * t) {
    View v{bound.info.shader_offset / 4, {}, {}};
    for (int i = 0; i < 4; ++i) {
        v.ne[i] = static_cast<uint32_t>(t->ne[i]);
        v.nb[i] = static_cast<uint32_t>(t->nb[i] / sizeof(float));
    }
    return v;
}

void make_chains_consecutive(ggml_cgraph * graph, const std::function<std::vector<int>(int)> & chain_at) {
    if (!fusion_disabled()) sd::make_chains_consecutive(graph, chain_at);
}

std::vector<ggml_backend_dev_t> devices() {
    std::vector<ggml_backend_dev_t> list;
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("Vulkan");
    if (!reg) return list;
    for (size_t i = 0; i < ggml_backend_reg_dev_count(reg); ++i)
        list.push_back(ggml_backend_reg_dev_get(reg, i));
    return list;
}

ggml_status dispatch_vectors(ggml_backend_t backend, const char * shader,
                             const std::vector<ggml_ext_vulkan_binding> & bindings,
                             const std::vector<uint32_t> & constants, const void * push, uint32_t push_bytes,
                             uint32_t groups_x, uint32_t groups_y, uint32_t groups_z) {
    const auto module =
        std::find_if(shader_table().begin(), shader_table().end(),
                     [shader](const SpirvModule & m) { return std::strcmp(m.name, shader) == 0; });
    if (module == shader_table().end() || !service()) {
        ggml_ext_set_error(
            (std::string("sd vulkan: no shader '") + shader + "' or no Vulkan service").c_str());
        return GGML_STATUS_FAILED;
    }
    const ggml_ext_vulkan_dispatch d{sizeof d,
                                     shader,
                                     module->words,
                                     module->n_words * 4,
                                     bindings.data(),
                                     static_cast<uint32_t>(bindings.size()),
                                     constants.data(),
                                     static_cast<uint32_t>(constants.size()),
                                     push,
                                     push_bytes,
                                     {groups_x, groups_y, groups_z}};
    return service()->dispatch(backend, &d);
}

ggml_status dispatch(ggml_backend_t backend, const char * shader,
                     std::initializer_list<ggml_ext_vulkan_binding> bindings,
                     std::initializer_list<uint32_t> constants, const void * push, uint32_t push_bytes,
                     uint32_t groups_x, uint32_t groups_y, uint32_t groups_z) {
    return dispatch_vectors(backend, shader, bindings, constants, push, push_bytes, groups_x, groups_y,
                            groups_z);
}

}  // namespace sd::vulkan
