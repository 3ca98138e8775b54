// The sd pack's access to ggml_ext_vulkan_v1 and its embedded shaders.
#include <ggml-vulkan.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "vulkan/sd_vulkan.h"

namespace sd::vulkan {

const ggml_ext_vulkan_v1 * service() {
    static const ggml_ext_vulkan_v1 * table = [] {
        const auto * t = static_cast<const ggml_ext_vulkan_v1 *>(
            ggml_backend_reg_get_proc_address(ggml_backend_vk_reg(), GGML_EXT_VULKAN_V1));
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

bool make_consecutive(ggml_cgraph * graph, const std::vector<int> & chain) {
    bool moved = false;
    int start = chain[0];  // links 0 .. k - 1 sit at [start, start + k)
    for (size_t k = 1; k < chain.size(); ++k) {
        const int n = static_cast<int>(k);
        if (chain[k] == start + n) continue;
        if (!ggml_ext_graph_delay(graph, start, n, chain[k] - 1)) return moved;
        start = chain[k] - n;  // later positions are unchanged by the move
        moved = true;
    }
    return moved;
}

std::vector<ggml_backend_dev_t> devices() {
    std::vector<ggml_backend_dev_t> list;
    ggml_backend_reg_t reg = ggml_backend_vk_reg();
    for (size_t i = 0; i < ggml_backend_reg_dev_count(reg); ++i)
        list.push_back(ggml_backend_reg_dev_get(reg, i));
    return list;
}

ggml_status dispatch(ggml_backend_t backend, const char * shader,
                     std::initializer_list<ggml_ext_vulkan_binding> bindings,
                     std::initializer_list<uint32_t> constants, const void * push, uint32_t push_bytes,
                     uint32_t groups_x, uint32_t groups_y, uint32_t groups_z) {
    const SpirvModule * module = nullptr;
    for (const SpirvModule & m : shader_table())
        if (std::strcmp(m.name, shader) == 0) module = &m;
    if (!module || !service()) {
        ggml_ext_set_error(
            (std::string("sd vulkan: no shader '") + shader + "' or no Vulkan service").c_str());
        return GGML_STATUS_FAILED;
    }
    const std::vector<ggml_ext_vulkan_binding> b(bindings);
    const std::vector<uint32_t> c(constants);
    const ggml_ext_vulkan_dispatch d{sizeof d,
                                     shader,
                                     module->words,
                                     module->n_words * 4,
                                     b.data(),
                                     static_cast<uint32_t>(b.size()),
                                     c.data(),
                                     static_cast<uint32_t>(c.size()),
                                     push,
                                     push_bytes,
                                     {groups_x, groups_y, groups_z}};
    return service()->dispatch(backend, &d);
}

}  // namespace sd::vulkan
