// sd_ggml_register_extensions: the pack's single registration entry point.
#include <mutex>

#include "common/pack.h"
#include "sd-ggml-ext.h"

extern "C" sd_ggml_ext_status sd_ggml_register_extensions(void) {
    static std::mutex mutex;
    static sd_ggml_ext_status state = SD_GGML_EXT_FAILED;
    static bool attempted = false;
    std::lock_guard lock(mutex);
    if (attempted && state == SD_GGML_EXT_REGISTERED) {
        ggml_ext_set_error("sd_ggml_register_extensions: already registered; nothing changed");
        return SD_GGML_EXT_ALREADY_REGISTERED;
    }
    attempted = true;
    state = sd::register_rope() && sd::register_int8() && sd::register_attention() && sd::register_affine()
                ? SD_GGML_EXT_REGISTERED
                : SD_GGML_EXT_FAILED;
    return state;
}

namespace sd {

ggml_ext_op_t register_op(const char * name, size_t attr_size, int min_inputs, int max_inputs,
                          ggml_ext_infer_fn infer) {
    ggml_ext_op_desc desc{};
    desc.struct_size = sizeof desc;
    desc.version = GGML_EXT_OP_DESC_VERSION;
    desc.name = name;
    desc.attr_size = attr_size;
    desc.min_inputs = min_inputs;
    desc.max_inputs = max_inputs;
    desc.infer = infer;
    return ggml_ext_register_op(&desc);
}

ggml_ext_kernel_desc custom_kernel_desc(const char * name, ggml_ext_op_t op,
                                        decltype(ggml_ext_kernel_desc::supports) supports,
                                        decltype(ggml_ext_kernel_desc::execute) execute,
                                        decltype(ggml_ext_kernel_desc::prepare) prepare) {
    ggml_ext_kernel_desc d{};
    d.struct_size = sizeof d;
    d.version = GGML_EXT_KERNEL_DESC_VERSION;
    d.name = name;
    d.op = GGML_OP_CUSTOM;
    d.custom_op = op;
    d.supports = supports;
    d.prepare = prepare;
    d.execute = execute;
    return d;
}

ggml_ext_fusion_desc fusion_desc(const char * name, decltype(ggml_ext_fusion_desc::match) match,
                                 decltype(ggml_ext_fusion_desc::execute) execute) {
    ggml_ext_fusion_desc d{};
    d.struct_size = sizeof d;
    d.version = GGML_EXT_FUSION_DESC_VERSION;
    d.name = name;
    d.match = match;
    d.execute = execute;
    // Every rule of the pack computes from its range's external inputs only.
    d.flags = GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE;
    return d;
}

ggml_status output_sized_workspace(const ggml_ext_fusion_prepare_params * params, void ** state,
                                   size_t * workspace_bytes) {
    *state = nullptr;
    *workspace_bytes = ggml_nbytes(params->nodes[params->n_nodes - 1]);
    return GGML_STATUS_SUCCESS;
}

bool register_fusion(ggml_backend_dev_t device, const char * name,
                     decltype(ggml_ext_fusion_desc::match) match,
                     decltype(ggml_ext_fusion_desc::execute) execute,
                     decltype(ggml_ext_fusion_desc::optimize) optimize, uint32_t flags) {
    ggml_ext_fusion_desc d = fusion_desc(name, match, execute);
    d.prepare = output_sized_workspace;
    d.optimize = optimize;
    d.flags |= flags;
    return ggml_ext_register_fusion(device, &d);
}

}  // namespace sd
