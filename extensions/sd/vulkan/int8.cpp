// The sd pack's INT8 kernels on Vulkan (sd-ops.md section 3), bit-identical to the CPU kernels:
//  * sd.quantize_i8_convrot.v1 for G = 256 (shaders/convrot.comp, one workgroup per row); other
//    group sizes are unsupported here and run on the CPU.
//  * sd.linear_i8.v1 for int8 activations: the packed output of the quantize op, or ordinary I8
//    codes with an optional input_scale (shaders/linear_i8.comp, a tiled GEMM with exact int32 sums
//    and the F32 epilogue in the spec's order). F32 activations (quantized inside the op) are
//    unsupported here and run on the CPU.
// Both need 256 invocations per workgroup and a few KiB of shared memory; a device without them
// registers neither. The allocator never places an extension node over its inputs; an output that
// overlaps an input anyway (a hand-made layout) is refused at execution.
#include <algorithm>
#include <cstring>

#include "common/int8.h"
#include "vulkan/vulkan.h"

namespace sd::vulkan {
namespace {

using namespace sd::int8;

constexpr uint32_t kInvocations = 256;   // both shaders' workgroup size (16 x 16 for the GEMM)
constexpr uint32_t kSharedBytes = 5120;  // convrot.comp: 1024 + 256 floats (linear_i8.comp: 4608 bytes)
constexpr int64_t kGemmTile = 64;        // linear_i8.comp: outputs and activation rows per workgroup
constexpr int64_t kMaxGroups = 65535;

// A binding of a byte range of a tensor (size 0: to its end) and where it is.
struct Bound {
    ggml_ext_vulkan_binding binding;
    ggml_ext_vulkan_buffer_info info;
};

bool bind(ggml_backend_t backend, const ggml_tensor * t, bool written, Bound * out, size_t offset = 0,
          size_t size = 0) {
    out->binding = {{t, nullptr, offset, size}, written};
    return service()->buffer_info(backend, &out->binding.range, &out->info);
}

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

bool overlaps(const Bound & a, const Bound & b) {
    return a.info.storage == b.info.storage && a.info.begin < b.info.end && b.info.begin < a.info.end;
}

ggml_status fail(const char * message) {
    ggml_ext_set_error(message);
    return GGML_STATUS_FAILED;
}

// Whether a byte range of `bytes` fits one binding of the device.
bool fits_binding(ggml_backend_dev_t device, size_t bytes) {
    ggml_ext_vulkan_device_info info{};
    info.struct_size = sizeof info;
    return service()->device_info(device, &info) && bytes <= info.max_storage_range &&
           bytes < (size_t{1} << 32);
}

ggml_ext_kernel_desc make_desc(const char * name, ggml_ext_op_t op,
                               bool (*supports)(ggml_backend_dev_t, const ggml_tensor *, void *),
                               ggml_status (*execute)(const ggml_ext_execute_params *)) {
    ggml_ext_kernel_desc d{};
    d.struct_size = sizeof d;
    d.version = GGML_EXT_KERNEL_DESC_VERSION;
    d.name = name;
    d.op = GGML_OP_CUSTOM;
    d.custom_op = op;
    d.supports = supports;
    d.execute = execute;
    return d;
}

// ---- sd.quantize_i8_convrot.v1 ----------------------------------------------------------------

bool quantize_supports(ggml_backend_dev_t device, const ggml_tensor * node, void *) {
    if (ggml_ext_node_op(node) != quantize_op() || node->type != GGML_TYPE_I8) return false;
    const ggml_tensor * a = node->src[0];
    return quantize_attrs_of(node).group == 256 && a && a->type == GGML_TYPE_F32 && ggml_is_contiguous(a) &&
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
    return dispatch(params->backend, "sd_convrot_g256", {in.binding, out.binding}, {}, &push, sizeof push,
                    groups_x, groups_y);
}

// ---- sd.linear_i8.v1 ----------------------------------------------------------------------------

// The inputs of a linear node by role (NULL where the flags have none).
struct LinearInputs {
    LinearAttrs attrs;
    const ggml_tensor *w, *x, *ws, *bias, *xs;
    int64_t k, n, rows;
};

LinearInputs linear_inputs(const ggml_tensor * node) {
    LinearInputs in{};
    in.attrs = linear_attrs_of(node);
    in.w = node->src[0];
    in.x = node->src[1];
    int next = 2;
    if (in.attrs.flags & kHasWeightScale) in.ws = node->src[next++];
    if (in.attrs.flags & kHasBias) in.bias = node->src[next++];
    if (in.attrs.flags & kHasInputScale) in.xs = node->src[next++];
    in.k = in.w->ne[0];
    in.n = in.w->ne[1];
    in.rows = in.attrs.ne[0] * in.attrs.ne[1] * in.attrs.ne[2];
    return in;
}

bool linear_supports(ggml_backend_dev_t device, const ggml_tensor * node, void *) {
    if (ggml_ext_node_op(node) != linear_op() || node->type != GGML_TYPE_F32) return false;
    const LinearInputs in = linear_inputs(node);
    if (in.attrs.kind != kInputPacked && in.attrs.kind != kInputI8) return false;  // F32: the CPU quantizes
    return in.w->type == GGML_TYPE_I8 && ggml_is_contiguous(in.w) && in.x->type == GGML_TYPE_I8 &&
           ggml_is_contiguous(in.x) && (in.n + kGemmTile - 1) / kGemmTile <= kMaxGroups &&
           (in.rows + kGemmTile - 1) / kGemmTile <= kMaxGroups && fits_binding(device, ggml_nbytes(in.w)) &&
           fits_binding(device, ggml_nbytes(in.x)) && fits_binding(device, ggml_nbytes(node));
}

ggml_status linear_execute(const ggml_ext_execute_params * params) {
    const ggml_tensor * node = params->node;
    const LinearInputs in = linear_inputs(node);
    if (in.rows == 0 || in.n == 0) return GGML_STATUS_SUCCESS;
    ggml_backend_t backend = params->backend;
    Bound w, x, y, sx, sw, b;
    if (!bind_codes(backend, in.w, &w) || !bind_codes(backend, in.x, &x) || !bind(backend, node, true, &y))
        return GGML_STATUS_FAILED;
    // Absent optional inputs bind the weights (declared by the shader, never read: its constants say so).
    const bool bound = in.attrs.kind == kInputPacked
                           ? bind(backend, in.x, false, &sx, size_t(in.k * packed_rows_pad(in.rows)),
                                  sizeof(float) * size_t(in.rows))
                           : bind(backend, in.xs ? in.xs : in.w, false, &sx);
    if (!bound || !bind(backend, in.ws ? in.ws : in.w, false, &sw) ||
        !bind(backend, in.bias ? in.bias : in.w, false, &b))
        return GGML_STATUS_FAILED;
    for (const Bound * input : {&w, &x, &sw, &b, &sx})
        if (overlaps(*input, y)) return fail("sd.linear_i8.vulkan: the output overlaps an input");
    for (const Bound * floats : {&y, &sx, &sw, &b})
        if (floats->info.shader_offset % 4 != 0)
            return fail("sd.linear_i8.vulkan: F32 tensors must start on a 4-byte boundary");
    const uint32_t aligned = in.k % 4 == 0 && w.info.shader_offset % 4 == 0 && x.info.shader_offset % 4 == 0;
    const uint32_t has_xs = in.attrs.kind == kInputPacked || in.xs != nullptr;
    const struct {
        uint32_t k, n, m, w_byte, x_byte, y_offset, sx_offset, sw_offset, b_offset;
    } push{static_cast<uint32_t>(in.k), static_cast<uint32_t>(in.n), static_cast<uint32_t>(in.rows),
           w.info.shader_offset,        x.info.shader_offset,        y.info.shader_offset / 4,
           sx.info.shader_offset / 4,   sw.info.shader_offset / 4,   b.info.shader_offset / 4};
    return dispatch(backend, "sd_linear_i8",
                    {w.binding, x.binding, y.binding, sx.binding, sw.binding, b.binding},
                    {aligned, has_xs, uint32_t(in.ws != nullptr), uint32_t(in.bias != nullptr)}, &push,
                    sizeof push, static_cast<uint32_t>((in.n + kGemmTile - 1) / kGemmTile),
                    static_cast<uint32_t>((in.rows + kGemmTile - 1) / kGemmTile));
}

}  // namespace

const ggml_ext_kernel_desc * int8_quantize_kernel_desc() {
    static const ggml_ext_kernel_desc desc =
        make_desc("sd.quantize_i8_convrot.vulkan", quantize_op(), quantize_supports, quantize_execute);
    return &desc;
}

const ggml_ext_kernel_desc * int8_linear_kernel_desc() {
    static const ggml_ext_kernel_desc desc =
        make_desc("sd.linear_i8.vulkan", linear_op(), linear_supports, linear_execute);
    return &desc;
}

bool register_int8(ggml_backend_dev_t device) {
    ggml_ext_vulkan_device_info info{};
    info.struct_size = sizeof info;
    if (!service() || !service()->device_info(device, &info)) return false;
    if (info.max_workgroup_invocations < kInvocations || info.max_workgroup_size[0] < kInvocations ||
        info.max_workgroup_size[1] < 16 || info.max_shared_memory < kSharedBytes)
        return true;  // the scheduler runs the INT8 nodes on the CPU
    return ggml_ext_register_kernel(device, int8_quantize_kernel_desc()) &&
           ggml_ext_register_kernel(device, int8_linear_kernel_desc());
}

}  // namespace sd::vulkan
