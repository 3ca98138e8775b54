// Vulkan kernel of ARGMAX: the first maximum of each row of an F32 matrix of any strides, as I32
// (argmax.comp).
#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

constexpr uint32_t kLocalSize = 128;  // argmax.comp local_size_x

bool supports_argmax(const Device & device, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_I32 && a->ne[0] > 0 &&
           ggml_is_matrix(a) && node->ne[0] == a->ne[1] && ggml_nelements(node) == a->ne[1] &&
           float_tensor(device, a) && addressable(device, node, 4);
}

void record_argmax(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    struct {
        View a, d;
        uint32_t ne0, rows;
    } push{view_of(rec, a, 4), view_of(rec, node, 4), static_cast<uint32_t>(a->ne[0]),
           static_cast<uint32_t>(a->ne[1])};
    rec.dispatch("argmax", {rec.arg(a, false), rec.arg(node, true)}, push,
                 rec.groups_for(static_cast<uint64_t>(a->ne[1]) * kLocalSize, kLocalSize));
}

}  // namespace

namespace kernels {
const Kernel argmax = vulkan_kernel<supports_argmax, nullptr, record_argmax>("vulkan.argmax");
}  // namespace kernels

}  // namespace ggx::vulkan
