// Vulkan kernel of MUL_MAT: d[r, c] = sum_k a[k, r] * b[k, c] accumulated in F32, a broadcast over
// dims 2 and 3. Weights a: F32, F16, BF16 (any strides) or Q8_0, Q4_0 (rows of whole blocks);
// activations b: F32, F16, BF16 (any strides); d: F32 (any strides). Up to kVecColumns columns of b
// take mul_mat_vec.comp (a workgroup per row of d), more the tiled GEMM mul_mat.comp.
#include <string>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

constexpr int64_t kVecColumns = 8;
constexpr int64_t kTile = 64;  // mul_mat.comp's TILE

// Bytes per shader array element of the weights: block types are read as 16-bit words.
uint32_t weight_unit(ggml_type type) { return ggml_is_quantized(type) ? 2 : float_unit(type); }

bool weights_supported(const Device & device, const ggml_tensor * a) {
    if (!block_type_name(a->type)) return float_tensor(device, a);
    return a->nb[0] == ggml_type_size(a->type) && a->ne[0] % ggml_blck_size(a->type) == 0 &&
           addressable(device, a, 2) && small_enough(a);
}

bool supports_mul_mat(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!a || !b || node->type != GGML_TYPE_F32 || !float_tensor(device, node) || !float_tensor(device, b) ||
        !weights_supported(device, a))
        return false;
    if (a->ne[0] != b->ne[0] || a->ne[2] <= 0 || a->ne[3] <= 0 || b->ne[2] % a->ne[2] != 0 ||
        b->ne[3] % a->ne[3] != 0)
        return false;
    return node->ne[0] == a->ne[1] && node->ne[1] == b->ne[1] && node->ne[2] == b->ne[2] &&
           node->ne[3] == b->ne[3];
}

void record_mul_mat(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const int64_t rows = node->ne[0], columns = node->ne[1], batches = node->ne[2] * node->ne[3];
    struct {
        uint32_t ne[4];
        View a, b, d;
        uint32_t r2, r3, batches;
    } push{{static_cast<uint32_t>(rows), static_cast<uint32_t>(columns), static_cast<uint32_t>(a->ne[0]),
            static_cast<uint32_t>(node->ne[2])},
           view_of(rec, a, weight_unit(a->type)),
           view_of(rec, b, float_unit(b->type)),
           view_of(rec, node, sizeof(float)),
           static_cast<uint32_t>(b->ne[2] / a->ne[2]),
           static_cast<uint32_t>(b->ne[3] / a->ne[3]),
           static_cast<uint32_t>(batches)};
    const char * weights = block_type_name(a->type) ? block_type_name(a->type) : float_type_name(a->type);
    const std::string types = std::string(weights) + "_" + float_type_name(b->type);
    const std::vector<Arg> args = {rec.arg(a, false), rec.arg(b, false), rec.arg(node, true)};
    if (columns <= kVecColumns) {
        rec.dispatch("mul_mat_vec_" + types, args, push, rec.groups_for(rows * batches, 1),
                     {static_cast<uint32_t>(columns)});
    } else {
        const int64_t tiles = (rows + kTile - 1) / kTile * ((columns + kTile - 1) / kTile);
        rec.dispatch("mul_mat_" + types, args, push, rec.groups_for(tiles * batches, 1));
    }
}

}  // namespace

void add_matmul_kernels(KernelTable & table) {
    table[GGML_OP_MUL_MAT] = {supports_mul_mat, nullptr, record_mul_mat};
}

}  // namespace ggx::vulkan
