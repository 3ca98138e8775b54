// DUP, CONT and CPY: dst (the node; for ggml_cpy a view of the destination src[1]) receives src[0]'s
// elements in flat logical order (element k of src, ne0 fastest, becomes element k of dst), converted
// to dst's type. Shapes may differ; element counts match.
//
//  - same type, both contiguous: one memcpy split among the threads;
//  - same type and shape, source rows strided (transposed views): tiles of rows, column by column;
//  - same type otherwise: bytes copied unit by unit, where a unit is one element, or one whole block
//    for quantized types (whose rows are dense blocks, so flat block order follows element order);
//  - float -> float / a block format, and F32 <-> F64: each dst row is gathered as F32, then converted (quantized rows
//    whole, with ggml_quantize_row via store_row);
//  - block format -> F32: each src row is dequantized whole, then scattered into dst.
// Rows are split among the threads; the F32 row buffers live in the node's workspace.
#include <ggml.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cpu/kernels/common.h"

namespace ggx::cpu::kernels {
namespace {

// A tensor as a 4-d grid of units: elements, or whole blocks when blocks is set.
struct Grid {
    char * data;
    int64_t ne[GGML_MAX_DIMS];
    size_t nb[GGML_MAX_DIMS];

    Grid(const ggml_tensor * t, bool blocks) : data(static_cast<char *>(t->data)) {
        std::copy(std::begin(t->ne), std::end(t->ne), ne);
        std::copy(std::begin(t->nb), std::end(t->nb), nb);
        if (blocks) ne[0] /= ggml_blck_size(t->type);
    }
    int64_t nrows() const { return ne[1] * ne[2] * ne[3]; }
    char * row(int64_t r) const {
        return data + r % ne[1] * nb[1] + r / ne[1] % ne[2] * nb[2] + r / (ne[1] * ne[2]) * nb[3];
    }
};

// Calls f(offset, ptr, len) for the runs making up flat units [k, k + n) of g: each run covers units
// k + offset .. k + offset + len - 1, which lie along dimension 0 from ptr on, g.nb[0] bytes apart.
template <class F>
void for_each_run(const Grid & g, int64_t k, int64_t n, F && f) {
    int64_t i0 = k % g.ne[0], r = k / g.ne[0];
    for (int64_t off = 0; off < n; i0 = 0, ++r) {
        const int64_t len = std::min(n - off, g.ne[0] - i0);
        f(off, g.row(r) + i0 * g.nb[0], len);
        off += len;
    }
}

// Calls f(row pointer, k) for this thread's share of g's rows; k is the row's first flat unit.
template <class F>
void for_each_grid_row(const ComputeParams & params, const Grid & g, F && f) {
    const auto [begin, end] = chunk_range(g.nrows(), params.ith(), params.nth());
    for (int64_t r = begin; r < end && !params.should_stop(); ++r)
        f(g.row(r), r * g.ne[0]);
}

// Strided copy of n units of Unit bytes (a compile-time size, so each copy is one load and store).
template <size_t Unit>
void copy_strided(const char * src, size_t src_stride, char * dst, size_t dst_stride, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        std::memcpy(dst + i * dst_stride, src + i * src_stride, Unit);
}

void copy_units(const char * src, size_t src_stride, char * dst, size_t dst_stride, int64_t n, size_t unit) {
    if (src_stride == unit && dst_stride == unit) {
        std::memcpy(dst, src, static_cast<size_t>(n) * unit);
        return;
    }
    switch (unit) {
        case 1:
            return copy_strided<1>(src, src_stride, dst, dst_stride, n);
        case 2:
            return copy_strided<2>(src, src_stride, dst, dst_stride, n);
        case 4:
            return copy_strided<4>(src, src_stride, dst, dst_stride, n);
        case 8:
            return copy_strided<8>(src, src_stride, dst, dst_stride, n);
        default:
            for (int64_t i = 0; i < n; ++i)
                std::memcpy(dst + i * dst_stride, src + i * src_stride, unit);
    }
}

// Quantized rows must be dense, whole blocks.
bool dense_blocks(const ggml_tensor * t) {
    return !ggml_is_quantized(t->type) ||
           (t->ne[0] % ggml_blck_size(t->type) == 0 && t->nb[0] == ggml_type_size(t->type));
}

bool convertible(ggml_type from, ggml_type to) {
    if (from == to) return core::has_conversion(from);
    if (core::is_f64_conversion(from, to)) return true;
    if (ggml_is_float_type(from)) return ggml_is_float_type(to) || core::is_computed_quantized(to);
    return core::is_computed_quantized(from) && to == GGML_TYPE_F32;
}

bool supports_copy(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a && convertible(a->type, node->type) && ggml_nelements(a) == ggml_nelements(node) &&
           dense_blocks(a) && dense_blocks(node);
}

// Row buffer bytes per thread (a multiple of 64), for conversions only.
size_t row_buffer_bytes(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (a->type == node->type) return 0;
    const int64_t n = ggml_is_quantized(a->type) ? a->ne[0] : node->ne[0];
    return (static_cast<size_t>(n) * sizeof(float) + 63) / 64 * 64;
}

size_t copy_workspace(const ggml_tensor * node, int n_threads) {
    return row_buffer_bytes(node) * static_cast<size_t>(n_threads);
}

void copy_contiguous(const ComputeParams & params, ggml_tensor * node) {
    const auto [begin, end] =
        chunk_range(static_cast<int64_t>(ggml_nbytes(node)), params.ith(), params.nth());
    if (end > begin)
        std::memcpy(static_cast<char *>(node->data) + begin,
                    static_cast<const char *>(node->src[0]->data) + begin, static_cast<size_t>(end - begin));
}

void copy_same_type(const ComputeParams & params, ggml_tensor * node) {
    const bool blocks = ggml_is_quantized(node->type);
    const Grid src(node->src[0], blocks), dst(node, blocks);
    const size_t unit = ggml_type_size(node->type);
    for_each_grid_row(params, dst, [&](char * row, int64_t k) {
        for_each_run(src, k, dst.ne[0], [&](int64_t off, const char * p, int64_t len) {
            copy_units(p, src.nb[0], row + off * dst.nb[0], dst.nb[0], len, unit);
        });
    });
}

// Same type and shape with strided source rows (a transposed view, say): walking dst rows would read
// src with a large stride per element, so copy tiles of kTile rows column by column instead; each
// column of a tile is then a short run along dimension 1 of both tensors.
constexpr int64_t kTile = 16;

void copy_tiled(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const size_t unit = ggml_type_size(node->type);
    const int64_t tiles = (node->ne[1] + kTile - 1) / kTile;
    const auto [begin, end] = chunk_range(tiles * node->ne[2] * node->ne[3], params.ith(), params.nth());
    for (int64_t t = begin; t < end && !params.should_stop(); ++t) {
        const int64_t i1 = t % tiles * kTile, i2 = t / tiles % node->ne[2], i3 = t / tiles / node->ne[2];
        const int64_t rows = std::min(kTile, node->ne[1] - i1);
        const char * src = row_at(a, i1, i2, i3);
        char * dst = row_at(node, i1, i2, i3);
        for (int64_t i0 = 0; i0 < node->ne[0]; ++i0)
            copy_units(src + i0 * a->nb[0], a->nb[1], dst + i0 * node->nb[0], node->nb[1], rows, unit);
    }
}

// Float source: gather each dst row as F32, then store it in dst's type.
void copy_gather(const ComputeParams & params, ggml_tensor * node, float * buf) {
    const ggml_tensor * a = node->src[0];
    const Grid src(a, false), dst(node, true);
    const int64_t n = node->ne[0];
    for_each_grid_row(params, dst, [&](char * row, int64_t k) {
        for_each_run(src, k * ggml_blck_size(node->type), n, [&](int64_t off, const char * p, int64_t len) {
            load_row(a->type, p, a->nb[0], len, buf + off);
        });
        store_row(node->type, buf, row, node->nb[0], n);
    });
}

// Quantized source: dequantize each src row, then scatter it into dst.
void copy_scatter(const ComputeParams & params, ggml_tensor * node, float * buf) {
    const ggml_tensor * a = node->src[0];
    const Grid src(a, true), dst(node, false);
    const int64_t n = a->ne[0];
    for_each_grid_row(params, src, [&](const char * row, int64_t k) {
        load_row(a->type, row, a->nb[0], n, buf);
        for_each_run(dst, k * ggml_blck_size(a->type), n, [&](int64_t off, char * p, int64_t len) {
            store_row(node->type, buf + off, p, node->nb[0], len);
        });
    });
}

void compute_copy(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (ggml_nelements(node) == 0) return;
    if (a->type == node->type) {
        if (ggml_is_contiguous(a) && ggml_is_contiguous(node)) return copy_contiguous(params, node);
        if (!ggml_is_quantized(a->type) && ggml_are_same_shape(a, node) &&
            a->nb[0] != ggml_type_size(a->type))
            return copy_tiled(params, node);
        return copy_same_type(params, node);
    }
    float * buf = reinterpret_cast<float *>(static_cast<char *>(params.workspace) +
                                            row_buffer_bytes(node) * static_cast<size_t>(params.ith()));
    if (ggml_is_quantized(a->type)) return copy_scatter(params, node, buf);
    copy_gather(params, node, buf);
}

}  // namespace

const Kernel copy = cpu_kernel<supports_copy, copy_workspace, compute_copy>("cpu.copy");

}  // namespace ggx::cpu::kernels
