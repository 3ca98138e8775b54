// CPU kernels of GET_ROWS, GET_ROWS_BACK and SET_ROWS. Indices are I32 and checked: an index outside [0, R)
// fails the node (ComputeParams::fail) and its row is skipped, never read or written out of bounds.
#include <string>

#include "core/internal.h"
#include "cpu/kernels/common.h"

namespace ggx::cpu {
namespace {

constexpr size_t kAlign = 64;

int32_t index_at(const ggml_tensor * idx, int64_t i0, int64_t i1, int64_t i2) {
    int32_t v;
    std::memcpy(&v, element_at(idx, i0, i1, i2), sizeof v);
    return v;
}

// Reports an out-of-range index; false when idx is a valid row of rows.
bool check_index(const ComputeParams & params, const char * op, int32_t idx, int64_t rows, int64_t i0,
                 int64_t i1, int64_t i2) {
    if (idx >= 0 && idx < rows) return true;
    params.fail(std::string(op) + ": index " + std::to_string(idx) + " out of range [0, " +
                std::to_string(rows) + ") at [" + std::to_string(i0) + ", " + std::to_string(i1) + ", " +
                std::to_string(i2) + "]");
    return false;
}

// Quantized rows are read and written whole, a block at a time.
bool dense_blocks(const ggml_tensor * t) {
    return !ggml_is_quantized(t->type) ||
           (t->ne[0] % ggml_blck_size(t->type) == 0 && t->nb[0] == ggml_type_size(t->type));
}

bool float_or_quantized(ggml_type type) { return is_float(type) || core::is_computed_quantized(type); }

size_t row_bytes(const ggml_tensor * node) { return core::align_up(node->ne[0] * sizeof(float), kAlign); }

float * scratch(const ComputeParams & params, const ggml_tensor * node) {
    return reinterpret_cast<float *>(static_cast<char *>(params.workspace) + row_bytes(node) * params.ith());
}

// ---------------------------------------------------------------------------------------------
// GET_ROWS: dst[:, i, j, k] = a[:, idx[i, j, k], j, k]; F32 result (I32 copied exactly).

bool get_rows_supports(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * idx = node->src[1];
    if (a == nullptr || idx == nullptr || idx->type != GGML_TYPE_I32) return false;
    const bool types = a->type == GGML_TYPE_I32 ? node->type == GGML_TYPE_I32
                                                : float_or_quantized(a->type) && node->type == GGML_TYPE_F32;
    return types && dense_blocks(a) && node->ne[0] == a->ne[0] && node->ne[1] == idx->ne[0] &&
           node->ne[2] == idx->ne[1] && node->ne[3] == idx->ne[2] && node->ne[2] == a->ne[2] &&
           node->ne[3] == a->ne[3];
}

// A scratch row only for an F32 result with strided rows.
size_t get_rows_workspace(const ggml_tensor * node, int n_threads) {
    return node->type == GGML_TYPE_F32 && node->nb[0] != sizeof(float) ? row_bytes(node) * n_threads : 0;
}

void copy_i32_row(const ggml_tensor * a, const char * src, ggml_tensor * dst, char * out) {
    if (a->nb[0] == sizeof(int32_t) && dst->nb[0] == sizeof(int32_t)) {
        std::memcpy(out, src, dst->ne[0] * sizeof(int32_t));
        return;
    }
    for (int64_t e = 0; e < dst->ne[0]; ++e)
        std::memcpy(out + e * dst->nb[0], src + e * a->nb[0], sizeof(int32_t));
}

void get_rows_compute(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * idx = node->src[1];
    const int64_t n = node->ne[0];
    const auto [begin, end] = chunk_range(ggml_nrows(node), params.ith(), params.nth());
    for (int64_t r = begin; r < end && !params.should_stop(); ++r) {
        const int64_t i = r % node->ne[1], j = r / node->ne[1] % node->ne[2],
                      k = r / (node->ne[1] * node->ne[2]);
        const int32_t row = index_at(idx, i, j, k);
        if (!check_index(params, "get_rows", row, a->ne[1], i, j, k)) continue;
        const char * src = row_at(a, row, j, k);
        char * out = row_at(node, i, j, k);
        if (node->type == GGML_TYPE_I32) {
            copy_i32_row(a, src, node, out);
        } else if (node->nb[0] == sizeof(float)) {
            load_row(a->type, src, a->nb[0], n, reinterpret_cast<float *>(out));
        } else {
            float * buf = scratch(params, node);
            load_row(a->type, src, a->nb[0], n, buf);
            store_row(GGML_TYPE_F32, buf, out, node->nb[0], n);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// GET_ROWS_BACK: dst [E, R] = 0, then dst[:, idx[i]] += a[:, i] for i in order. Each destination row
// belongs to one thread (row % nth), which zeroes it and adds its source rows in index order: the sums
// do not depend on the thread count.

bool get_rows_back_supports(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * idx = node->src[1];
    return a != nullptr && idx != nullptr && a->type == GGML_TYPE_F32 && ggml_is_matrix(a) &&
           idx->type == GGML_TYPE_I32 && ggml_is_vector(idx) && idx->ne[0] == a->ne[1] &&
           node->type == GGML_TYPE_F32 && ggml_is_matrix(node) && node->ne[0] == a->ne[0] &&
           node->nb[0] == sizeof(float);
}

void get_rows_back_compute(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * idx = node->src[1];
    const int64_t n = node->ne[0], rows = node->ne[1];
    const int nth = params.nth();
    for (int64_t r = params.ith(); r < rows; r += nth)
        std::fill_n(reinterpret_cast<float *>(row_at(node, r)), n, 0.0f);
    for (int64_t i = 0; i < a->ne[1] && !params.should_stop(); ++i) {
        const int32_t row = index_at(idx, i, 0, 0);
        if (!check_index(params, "get_rows_back", row, rows, i, 0, 0)) continue;
        if (row % nth != params.ith()) continue;
        auto * out = reinterpret_cast<float *>(row_at(node, row));
        const char * src = row_at(a, i);
        for (int64_t e = 0; e < n; ++e)
            out[e] += load_float(GGML_TYPE_F32, src + e * a->nb[0]);
    }
}

// ---------------------------------------------------------------------------------------------
// SET_ROWS: dst[:, idx[i, j % C2, k % C3], j, k] = b[:, i, j, k]; dst views a. Each destination row
// belongs to one thread (flat row % nth), which writes it in source order: a repeated index keeps
// the last source row, deterministically, and no two threads write the same (quantized) row.

bool set_rows_supports(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * b = node->src[1];
    const ggml_tensor * idx = node->src[2];
    return a != nullptr && b != nullptr && idx != nullptr && float_or_quantized(node->type) &&
           node->type == a->type && ggml_are_same_shape(a, node) && dense_blocks(node) &&
           b->type == GGML_TYPE_F32 && idx->type == GGML_TYPE_I32 && b->ne[0] == node->ne[0] &&
           b->ne[2] == node->ne[2] && b->ne[3] == node->ne[3] && idx->ne[0] == b->ne[1] && idx->ne[1] > 0 &&
           idx->ne[2] > 0 && idx->ne[3] == 1 && b->ne[2] % idx->ne[1] == 0 && b->ne[3] % idx->ne[2] == 0;
}

// A scratch row only for b with strided rows.
size_t set_rows_workspace(const ggml_tensor * node, int n_threads) {
    return node->src[1]->nb[0] != sizeof(float) ? row_bytes(node) * n_threads : 0;
}

void set_rows_compute(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * b = node->src[1];
    const ggml_tensor * idx = node->src[2];
    const int64_t n = node->ne[0], rows = node->ne[1];
    const int nth = params.nth();
    for (int64_t k = 0; k < b->ne[3]; ++k)
        for (int64_t j = 0; j < b->ne[2] && !params.should_stop(); ++j)
            for (int64_t i = 0; i < b->ne[1]; ++i) {
                const int64_t ci = j % idx->ne[1], ck = k % idx->ne[2];
                const int32_t row = index_at(idx, i, ci, ck);
                if (!check_index(params, "set_rows", row, rows, i, ci, ck)) continue;
                if ((row + rows * (j + node->ne[2] * k)) % nth != params.ith()) continue;
                const char * src = row_at(b, i, j, k);
                const float * x = reinterpret_cast<const float *>(src);
                if (b->nb[0] != sizeof(float)) {
                    float * buf = scratch(params, node);
                    load_row(GGML_TYPE_F32, src, b->nb[0], n, buf);
                    x = buf;
                }
                store_row(node->type, x, row_at(node, row, j, k), node->nb[0], n);
            }
}

}  // namespace

namespace kernels {
const Kernel get_rows = cpu_kernel<get_rows_supports, get_rows_workspace, get_rows_compute>("cpu.get_rows");
const Kernel get_rows_back =
    cpu_kernel<get_rows_back_supports, nullptr, get_rows_back_compute>("cpu.get_rows_back");
const Kernel set_rows = cpu_kernel<set_rows_supports, set_rows_workspace, set_rows_compute>("cpu.set_rows");
}  // namespace kernels

}  // namespace ggx::cpu
