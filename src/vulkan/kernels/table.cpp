// The Vulkan kernel table and the helpers every kernel family shares.
#include <limits>

#include "vulkan/buffer.h"
#include "vulkan/kernels.h"

namespace ggx::vulkan {

const KernelTable & kernel_table() {
    static const KernelTable table = [] {
        KernelTable t{};
        add_elementwise_kernels(t);
        add_copy_kernels(t);
        add_norm_kernels(t);
        add_matmul_kernels(t);
        add_rope_kernels(t);
        add_attention_kernels(t);
        add_image_kernels(t);
        add_argmax_kernels(t);
        return t;
    }();
    return table;
}

View view_of(const Recorder & recorder, const ggml_tensor * tensor, uint32_t unit) {
    const auto stride = [&](int i) { return static_cast<uint32_t>(tensor->nb[i] / unit); };
    return {recorder.element_offset(tensor, unit), stride(0), stride(1), stride(2), stride(3)};
}

bool addressable(const Device & device, const ggml_tensor * tensor, uint32_t unit) {
    for (size_t nb : tensor->nb) {
        if (nb % unit != 0) return false;
    }
    return ggml_nbytes(tensor) + device.limits().storage_offset_alignment <=
           device.limits().max_storage_range;
}

bool small_enough(const ggml_tensor * tensor) {
    return ggml_nelements(tensor) <= std::numeric_limits<int32_t>::max();
}

const char * float_type_name(ggml_type type) {
    switch (type) {
        case GGML_TYPE_F32:
            return "f32";
        case GGML_TYPE_F16:
            return "f16";
        case GGML_TYPE_BF16:
            return "bf16";
        default:
            return nullptr;
    }
}

const char * block_type_name(ggml_type type) {
    switch (type) {
        case GGML_TYPE_Q8_0:
            return "q8_0";
        case GGML_TYPE_Q4_0:
            return "q4_0";
        default:
            return nullptr;
    }
}

uint32_t float_unit(ggml_type type) { return type == GGML_TYPE_F32 ? 4 : 2; }

bool float_tensor(const Device & device, const ggml_tensor * tensor) {
    return float_type_name(tensor->type) && addressable(device, tensor, float_unit(tensor->type)) &&
           small_enough(tensor);
}

Shape shape_of(const ggml_tensor * t) {
    return {{static_cast<uint32_t>(t->ne[0]), static_cast<uint32_t>(t->ne[1]),
             static_cast<uint32_t>(t->ne[2]), static_cast<uint32_t>(t->ne[3])}};
}

}  // namespace ggx::vulkan
