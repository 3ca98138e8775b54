// Vulkan kernels of MUL_MAT and MUL_MAT_ID: d[r, c] = sum_k a[k, r] * b[k, c] accumulated in F32, a
// broadcast over dims 2 and 3. Weights a: F32, F16, BF16 (any strides) or a block type the shaders
// dequantize (rows of whole blocks, quant.glsl); activations b: F32, F16, BF16 (any strides); d: F32
// (any strides). Up to kVecColumns columns of b take mul_mat_vec.comp (a workgroup per row of d),
// more the tiled GEMM mul_mat.comp. 2-D weights larger than one binding (an LM head on a device
// with 128 MiB bindings) are computed in slices of rows, each bound on its own. MUL_MAT_ID runs
// mul_mat_vec.comp routed: a workgroup per row of d and (slot, token), reading its expert from ids.
#include <algorithm>
#include <string>
#include <utility>

#include "vulkan/kernels.h"

namespace ggx::vulkan {

namespace {

constexpr int64_t kVecColumns = 8;
constexpr int64_t kTile = 64;  // mul_mat.comp's TILE

// Bytes per shader array element of the weights: block types are addressed by byte.
uint32_t weight_unit(ggml_type type) { return ggml_is_quantized(type) ? kBlockUnit : float_unit(type); }

// The shader-name suffix of weights a times activations b ("q4_K_f32").
std::string types_of(const ggml_tensor * a, const ggml_tensor * b) {
    const char * weights = block_type_name(a->type) ? block_type_name(a->type) : float_type_name(a->type);
    return std::string(weights) + "_" + float_type_name(b->type);
}

// Whether a's strides are whole shader elements (and quantized rows whole blocks).
bool weights_layout_supported(const ggml_tensor * a) {
    if (!block_type_name(a->type)) {
        if (!float_type_name(a->type)) return false;
    } else if (a->nb[0] != ggml_type_size(a->type) || a->ne[0] % ggml_blck_size(a->type) != 0) {
        return false;
    }
    const uint32_t unit = weight_unit(a->type);
    return std::all_of(a->nb, a->nb + GGML_MAX_DIMS, [unit](size_t nb) { return nb % unit == 0; });
}

// Rows of the weights a that each dispatch binds: all of them, or for 2-D weights larger than one
// binding as many as one binding holds (0 when not even one row fits or a cannot be split).
int64_t rows_per_slice(const Device & device, const ggml_tensor * a) {
    const uint64_t range = device.limits().max_storage_range,
                   alignment = device.limits().storage_offset_alignment;
    if (ggml_nbytes(a) + alignment <= range) return a->ne[1];
    if (a->ne[2] != 1 || a->ne[3] != 1 || a->nb[1] < a->nb[0] || range <= alignment) return 0;
    // A slice of n rows spans (n - 1) nb1 + the bytes of one row.
    const uint64_t row_bytes = ggml_row_size(a->type, a->ne[0]);
    if (row_bytes + alignment > range) return 0;
    return std::min<int64_t>(a->ne[1], static_cast<int64_t>((range - alignment - row_bytes) / a->nb[1] + 1));
}

bool weights_supported(const Device & device, const ggml_tensor * a) {
    return weights_layout_supported(a) && (rows_per_slice(device, a) > 0 || a->ne[1] == 0) && small_enough(a);
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

// Records d = a * b for one binding's worth of weights (a and d may be row slices of the node's).
void record_range(Recorder & rec, const ggml_tensor * a, const ggml_tensor * b, const ggml_tensor * d) {
    const int64_t rows = d->ne[0], columns = d->ne[1], batches = d->ne[2] * d->ne[3];
    struct {
        uint32_t ne[4];
        View a, b, d;
        uint32_t r2, r3, batches;
    } push{{static_cast<uint32_t>(rows), static_cast<uint32_t>(columns), static_cast<uint32_t>(a->ne[0]),
            static_cast<uint32_t>(d->ne[2])},
           view_of(rec, a, weight_unit(a->type)),
           view_of(rec, b, float_unit(b->type)),
           view_of(rec, d, sizeof(float)),
           static_cast<uint32_t>(b->ne[2] / a->ne[2]),
           static_cast<uint32_t>(b->ne[3] / a->ne[3]),
           static_cast<uint32_t>(batches)};
    const std::string types = types_of(a, b);
    std::vector<Arg> args = {rec.arg(a, false), rec.arg(b, false), rec.arg(d, true)};
    add_grids(rec, a->type, args);
    if (columns <= kVecColumns) {
        rec.dispatch("mul_mat_vec_" + types, args, push, rec.groups_for(rows * batches, 1),
                     {static_cast<uint32_t>(columns)});
    } else {
        const int64_t tiles = (rows + kTile - 1) / kTile * ((columns + kTile - 1) / kTile);
        rec.dispatch("mul_mat_" + types, args, push, rec.groups_for(tiles * batches, 1));
    }
}

// Rows [first, first + n) of t along dimension dim, as a tensor of the same storage.
ggml_tensor row_slice(const ggml_tensor * t, int dim, int64_t first, int64_t n) {
    ggml_tensor slice = *t;
    slice.ne[dim] = n;
    slice.data = static_cast<char *>(t->data) + first * static_cast<int64_t>(t->nb[dim]);
    return slice;
}

void record_mul_mat(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    if (ggml_nelements(node) == 0) return;
    const int64_t slice_rows = rows_per_slice(rec.device(), a);
    if (slice_rows == a->ne[1]) return record_range(rec, a, b, node);
    for (int64_t first = 0; first < a->ne[1]; first += slice_rows) {
        const int64_t n = std::min(slice_rows, a->ne[1] - first);
        const ggml_tensor a_rows = row_slice(a, 1, first, n), d_rows = row_slice(node, 0, first, n);
        record_range(rec, &a_rows, b, &d_rows);
    }
}

// ---- OUT_PROD: r[m, p] = sum_n a[m, n] b[p, n], the MUL_MAT of a's and b's transposed views ---------

ggml_tensor transposed(const ggml_tensor * t) {
    ggml_tensor v = *t;
    std::swap(v.ne[0], v.ne[1]);
    std::swap(v.nb[0], v.nb[1]);
    return v;
}

// An OUT_PROD node as the MUL_MAT it equals (a float a: block rows cannot be transposed).
struct OutProdAsMulMat {
    ggml_tensor a, b, node;
    explicit OutProdAsMulMat(const ggml_tensor * out_prod)
        : a(transposed(out_prod->src[0])), b(transposed(out_prod->src[1])), node(*out_prod) {
        node.op = GGML_OP_MUL_MAT;
        node.src[0] = &a;
        node.src[1] = &b;
    }
    OutProdAsMulMat(const OutProdAsMulMat &) = delete;
    OutProdAsMulMat & operator=(const OutProdAsMulMat &) = delete;
};

bool supports_out_prod(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!a || !b || !float_type_name(a->type)) return false;
    const OutProdAsMulMat m(node);
    return supports_mul_mat(device, &m.node);
}

void record_out_prod(Recorder & rec, const ggml_tensor * node) {
    const OutProdAsMulMat m(node);
    record_mul_mat(rec, &m.node);
}

// ---- MUL_MAT_ID: d[:, e, t] = as[ids[e, t]] * b[:, e % n_b, t] -------------------------------------

bool supports_mul_mat_id(const Device & device, const ggml_tensor * node) {
    const ggml_tensor *as = node->src[0], *b = node->src[1], *ids = node->src[2];
    if (!as || !b || !ids || node->type != GGML_TYPE_F32 || ids->type != GGML_TYPE_I32 ||
        !float_tensor(device, node) || !float_tensor(device, b) || !raw_tensor(device, ids) ||
        !weights_layout_supported(as) || !addressable(device, as, weight_unit(as->type)) || !small_enough(as))
        return false;
    const int64_t n_used = ids->ne[0], tokens = ids->ne[1];
    return as->ne[0] == b->ne[0] && as->ne[3] == 1 && b->ne[3] == 1 && b->ne[2] == tokens && b->ne[1] > 0 &&
           n_used % b->ne[1] == 0 && ids->ne[2] == 1 && ids->ne[3] == 1 && node->ne[0] == as->ne[1] &&
           node->ne[1] == n_used && node->ne[2] == tokens && node->ne[3] == 1;
}

void record_mul_mat_id(Recorder & rec, const ggml_tensor * node) {
    const ggml_tensor *as = node->src[0], *b = node->src[1], *ids = node->src[2];
    const int64_t rows = node->ne[0], batches = node->ne[1] * node->ne[2];
    if (rows == 0 || batches == 0) return;
    const struct {
        uint32_t ne[4];
        View a, b, d, ids;
        uint32_t n_b, n_as, batches;
    } push{{static_cast<uint32_t>(rows), 1, static_cast<uint32_t>(as->ne[0]),
            static_cast<uint32_t>(node->ne[1])},
           view_of(rec, as, weight_unit(as->type)),
           view_of(rec, b, float_unit(b->type)),
           view_of(rec, node, sizeof(float)),
           view_of(rec, ids, sizeof(int32_t)),
           static_cast<uint32_t>(b->ne[1]),
           static_cast<uint32_t>(as->ne[2]),
           static_cast<uint32_t>(batches)};
    std::vector<Arg> args = {rec.arg(as, false), rec.arg(b, false), rec.arg(node, true), rec.arg(ids, false)};
    add_grids(rec, as->type, args);
    rec.dispatch("mul_mat_id_" + types_of(as, b), args, push, rec.groups_for(rows * batches, 1), {1u});
}

}  // namespace

namespace kernels {
const Kernel mul_mat = vulkan_kernel<supports_mul_mat, nullptr, record_mul_mat>("vulkan.mul_mat");
const Kernel out_prod = vulkan_kernel<supports_out_prod, nullptr, record_out_prod>("vulkan.out_prod");
const Kernel mul_mat_id = vulkan_kernel<supports_mul_mat_id, nullptr, record_mul_mat_id>("vulkan.mul_mat_id");
}  // namespace kernels

}  // namespace ggx::vulkan
