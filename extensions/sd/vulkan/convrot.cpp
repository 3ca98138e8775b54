// The sd pack's ConvRot quantization on Vulkan (sd-ops.md 3.2, 3.3): the kernel
// "sd.quantize_i8_convrot.vulkan" for sd.quantize_i8_convrot.v1, every group size G in {1, 4, 16,
// 64, 256} (shaders/convrot.comp, one workgroup per row, G a specialisation constant), bit-identical
// to the CPU kernel. Codes are written as 32-bit words, so rows of K % 4 != 0 codes (G = 1 only) run
// on the CPU.
#include <algorithm>

#include "common/int8.h"
#include "common/pack.h"
#include "vulkan/sd_vulkan.h"

namespace sd::vulkan {
namespace {

using namespace sd::int8;

constexpr uint32_t kInvocations = 256;   // convrot.comp's workgroup size
constexpr uint32_t kSharedBytes = 5120;  // convrot.comp: 1024 + 256 floats
constexpr int64_t kMaxGroups = 65535;

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
    if (in.info.shader_offset % 4 != 0 || out.info.shader_offset % 4 != 0)
        return fail("sd.quantize_i8_convrot.vulkan: tensors must start on a 4-byte boundary");
    const int64_t k = a->ne[0], rows = ggml_nrows(a);
    const int64_t groups = rows + 1;  // one per row, one zeroing the padding
    const auto groups_x = static_cast<uint32_t>(std::min(groups, kMaxGroups));
    const auto groups_y = static_cast<uint32_t>((groups + groups_x - 1) / groups_x);
    const struct {
        uint32_t k, rows, rows_pad, groups_x, a_offset, q_offset, q_words;
    } push{static_cast<uint32_t>(k),
           static_cast<uint32_t>(rows),
           static_cast<uint32_t>(packed_rows_pad(rows)),
           groups_x,
           in.info.shader_offset / 4,
           out.info.shader_offset / 4,
           static_cast<uint32_t>(ggml_nbytes(node) / 4)};
    return dispatch(params->backend, "sd_convrot", {in.binding, out.binding},
                    {static_cast<uint32_t>(quantize_attrs_of(node).group)}, &push, sizeof push, groups_x,
                    groups_y);
}

}  // namespace

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
    return ggml_ext_register_kernel(device, int8_quantize_kernel_desc());
}

}  // namespace sd::vulkan
