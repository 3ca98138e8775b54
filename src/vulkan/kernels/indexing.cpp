// Vulkan kernels of the indexing ops: GET_ROWS (get_rows.comp), SET_ROWS (set_rows.comp) and
// GET_ROWS_BACK (get_rows_back.comp), with
// I32 indices; block rows are dense blocks addressed by byte (quant.glsl), dequantized by GET_ROWS
// and quantized by SET_ROWS into the quantizable types.
#include <string>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

constexpr uint32_t kLocalSize = 256;

// ---- GET_ROWS ---------------------------------------------------------------------------------------

bool supports_get_rows(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *idx = node->src[1];
    if (!a || !idx || idx->type != GGML_TYPE_I32 || !raw_tensor(device, idx)) return false;
    if (node->ne[0] != a->ne[0] || node->ne[1] != idx->ne[0] || node->ne[2] != idx->ne[1] ||
        node->ne[3] != idx->ne[2] || node->ne[2] != a->ne[2] || node->ne[3] != a->ne[3])
        return false;
    if (a->type == GGML_TYPE_I32)
        return node->type == GGML_TYPE_I32 && raw_tensor(device, a) && raw_tensor(device, node);
    const bool source = block_type_name(a->type) ? block_tensor(device, a) : float_tensor(device, a);
    return source && node->type == GGML_TYPE_F32 && float_tensor(device, node);
}

void record_get_rows(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *idx = node->src[1];
    if (ggml_nelements(node) == 0) return;
    const char * type = a->type == GGML_TYPE_I32 ? "i32" : block_type_name(a->type);
    const uint32_t a_unit =
        block_type_name(a->type) ? kBlockUnit : static_cast<uint32_t>(ggml_type_size(a->type));
    const struct {
        Shape ne;
        View a, idx, d;
        uint32_t rows;
    } push{shape_of(node), view_of(rec, a, a_unit), view_of(rec, idx, 4), view_of(rec, node, 4),
           static_cast<uint32_t>(a->ne[1])};
    std::vector<Arg> args = {rec.arg(a, false), rec.arg(idx, false), rec.arg(node, true)};
    add_grids(rec, a->type, args);
    rec.dispatch(std::string("get_rows_") + (type ? type : float_type_name(a->type)), args, push,
                 rec.groups_for(ggml_nelements(node), kLocalSize));
}

// ---- SET_ROWS ---------------------------------------------------------------------------------------

bool supports_set_rows(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1], *idx = node->src[2];
    if (!a || !b || !idx || a->type != node->type || !ggml_are_same_shape(a, node) ||
        b->type != GGML_TYPE_F32 || idx->type != GGML_TYPE_I32 || !float_tensor(device, b) ||
        !raw_tensor(device, idx))
        return false;
    if (b->ne[0] != node->ne[0] || b->ne[2] != node->ne[2] || b->ne[3] != node->ne[3] ||
        idx->ne[0] != b->ne[1] || idx->ne[1] <= 0 || idx->ne[2] <= 0 || idx->ne[3] != 1 ||
        b->ne[2] % idx->ne[1] != 0 || b->ne[3] % idx->ne[2] != 0)
        return false;
    if (block_type_name(node->type)) return quantizable_block_type(node->type) && block_tensor(device, node);
    return float_tensor(device, node);
}

void record_set_rows(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *b = node->src[1], *idx = node->src[2];
    if (ggml_nelements(b) == 0) return;
    const char * block = block_type_name(node->type);
    const struct {
        Shape ne, idx_ne;
        View b, idx, d;
        uint32_t rows;
    } push{block ? block_shape(b, node->type) : shape_of(b),
           shape_of(idx),
           view_of(rec, b, 4),
           view_of(rec, idx, 4),
           view_of(rec, node, block ? kBlockUnit : float_unit(node->type)),
           static_cast<uint32_t>(node->ne[1])};
    rec.dispatch(std::string("set_rows_") + (block ? block : float_type_name(node->type)),
                 {rec.arg(b, false), rec.arg(idx, false), rec.arg(node, true)}, push,
                 rec.groups_for(count(push.ne), kLocalSize));
}

// GET_ROWS_BACK(a, idx): F32 matrices, I32 index vector; d [E, R] is zeroed and a's rows added.
bool supports_get_rows_back(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *idx = node->src[1];
    return a && idx && a->type == GGML_TYPE_F32 && float_tensor(device, a) && ggml_is_matrix(a) &&
           idx->type == GGML_TYPE_I32 && raw_tensor(device, idx) && ggml_is_vector(idx) &&
           idx->ne[0] == a->ne[1] && node->type == GGML_TYPE_F32 && float_tensor(device, node) &&
           ggml_is_matrix(node) && node->ne[0] == a->ne[0];
}

void record_get_rows_back(Recorder & rec, const ggml_tensor * node) {
    if (ggml_nelements(node) == 0) return;
    const ggml_tensor *a = node->src[0], *idx = node->src[1];
    const struct {
        uint32_t e, rows, n;
        View a, idx, d;
    } push{static_cast<uint32_t>(node->ne[0]),
           static_cast<uint32_t>(node->ne[1]),
           static_cast<uint32_t>(a->ne[1]),
           view_of(rec, a, 4),
           view_of(rec, idx, 4),
           view_of(rec, node, 4)};
    rec.dispatch("get_rows_back", {rec.arg(a, false), rec.arg(idx, false), rec.arg(node, true)}, push,
                 rec.groups_for(static_cast<uint64_t>(ggml_nelements(node)), 256));
}

}  // namespace

namespace kernels {
const Kernel get_rows = vulkan_kernel<supports_get_rows, nullptr, record_get_rows>("vulkan.get_rows");
const Kernel set_rows = vulkan_kernel<supports_set_rows, nullptr, record_set_rows>("vulkan.set_rows");
const Kernel get_rows_back =
    vulkan_kernel<supports_get_rows_back, nullptr, record_get_rows_back>("vulkan.get_rows_back");
}  // namespace kernels

}  // namespace ggx::vulkan
