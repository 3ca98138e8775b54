// Shape ops: REPEAT, CONCAT, PAD, UPSCALE (nearest) and TIMESTEP_EMBEDDING.
//
// REPEAT, CONCAT, PAD and UPSCALE copy elements without conversion (the result has the source's
// type): each is an index map from a result element to the source element it copies, or to zero.
#include <ggml.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/internal.h"
#include "cpu/kernels/common.h"

namespace ggx::cpu::kernels {
namespace {

// Fills dst row by row with elements of Size bytes. row_source(i1, i2, i3) returns a callable mapping
// i0 to the address of the source element to copy into dst[i0, i1, i2, i3], or nullptr for zero.
template <size_t Size, class RowSource>
void gather_sized(const ComputeParams & params, ggml_tensor * dst, RowSource && row_source) {
    for_each_row(params, dst, [&](int64_t i1, int64_t i2, int64_t i3) {
        if (params.should_stop()) return;
        const auto source = row_source(i1, i2, i3);
        char * out = row_at(dst, i1, i2, i3);
        for (int64_t i0 = 0; i0 < dst->ne[0]; ++i0, out += dst->nb[0]) {
            const char * in = source(i0);
            if (in)
                std::memcpy(out, in, Size);
            else
                std::memset(out, 0, Size);
        }
    });
}

// gather_sized for dst's element size (2 or 4 bytes: the float types and I32).
template <class RowSource>
void gather(const ComputeParams & params, ggml_tensor * dst, RowSource && row_source) {
    if (ggml_type_size(dst->type) == 2)
        gather_sized<2>(params, dst, row_source);
    else
        gather_sized<4>(params, dst, row_source);
}

bool float_or_i32(ggml_type type) { return is_float(type) || type == GGML_TYPE_I32; }

bool same_type(const ggml_tensor * node, const ggml_tensor * a) { return a && a->type == node->type; }

// ---- REPEAT: dst[i] = a[i mod a.ne] ------------------------------------------------------------------

bool supports_repeat(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return same_type(node, a) && float_or_i32(a->type) && ggml_can_repeat(a, node);
}

void compute_repeat(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    gather(params, node, [a](int64_t i1, int64_t i2, int64_t i3) {
        const char * row = row_at(a, i1 % a->ne[1], i2 % a->ne[2], i3 % a->ne[3]);
        return [a, row](int64_t i0) { return row + i0 % a->ne[0] * a->nb[0]; };
    });
}

// ---- CONCAT: a then b along dim ----------------------------------------------------------------------

bool supports_concat(const ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const int dim = core::params<ggml_ext_concat_params>(node).dim;
    if (!same_type(node, a) || !same_type(node, b) || !float_or_i32(a->type) || dim < 0 ||
        dim >= GGML_MAX_DIMS)
        return false;
    for (int k = 0; k < GGML_MAX_DIMS; ++k) {
        const int64_t expected = k == dim ? a->ne[k] + b->ne[k] : a->ne[k];
        if (node->ne[k] != expected || (k != dim && b->ne[k] != a->ne[k])) return false;
    }
    return true;
}

void compute_concat(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor *a = node->src[0], *b = node->src[1];
    const int dim = core::params<ggml_ext_concat_params>(node).dim;
    gather(params, node, [a, b, dim](int64_t i1, int64_t i2, int64_t i3) {
        return [a, b, dim, i1, i2, i3](int64_t i0) {
            int64_t i[GGML_MAX_DIMS] = {i0, i1, i2, i3};
            const ggml_tensor * src = a;
            if (i[dim] >= a->ne[dim]) {
                i[dim] -= a->ne[dim];
                src = b;
            }
            return static_cast<const char *>(element_at(src, i[0], i[1], i[2], i[3]));
        };
    });
}

// ---- PAD: lp_k zeros before and rp_k after dimension k -----------------------------------------------

bool supports_pad(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (!same_type(node, a) || !is_float(a->type)) return false;
    const auto pad = core::params<ggml_ext_pad_params>(node);
    if (pad.circular) return false;  // no kernel wraps around yet
    for (int k = 0; k < GGML_MAX_DIMS; ++k) {
        const int32_t lp = pad.pads[k][0], rp = pad.pads[k][1];
        if (lp < 0 || rp < 0 || node->ne[k] != a->ne[k] + lp + rp) return false;
    }
    return true;
}

void compute_pad(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const auto pad = core::params<ggml_ext_pad_params>(node);
    int64_t lp[GGML_MAX_DIMS];
    for (int k = 0; k < GGML_MAX_DIMS; ++k)
        lp[k] = pad.pads[k][0];
    const auto inside = [a, &lp](int k, int64_t j) { return j >= lp[k] && j - lp[k] < a->ne[k]; };
    gather(params, node, [&](int64_t i1, int64_t i2, int64_t i3) {
        const bool row_inside = inside(1, i1) && inside(2, i2) && inside(3, i3);
        const char * row = row_inside ? row_at(a, i1 - lp[1], i2 - lp[2], i3 - lp[3]) : nullptr;
        return
            [&, row](int64_t i0) { return row && inside(0, i0) ? row + (i0 - lp[0]) * a->nb[0] : nullptr; };
    });
}

// ---- UPSCALE (nearest): a[floor(i * a.ne / ne)] per dimension ----------------------------------------

bool supports_upscale(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return same_type(node, a) && a->type == GGML_TYPE_F32 && !ggml_is_empty(a) &&
           core::params<ggml_ext_upscale_params>(node).mode == GGML_SCALE_MODE_NEAREST;
}

void compute_upscale(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const auto nearest = [a, node](int k, int64_t i) { return i * a->ne[k] / node->ne[k]; };
    gather(params, node, [&](int64_t i1, int64_t i2, int64_t i3) {
        const char * row = row_at(a, nearest(1, i1), nearest(2, i2), nearest(3, i3));
        return [&, row](int64_t i0) { return row + nearest(0, i0) * a->nb[0]; };
    });
}

// ---- TIMESTEP_EMBEDDING -------------------------------------------------------------------------------
// Row n: cos(t_n f_j) for j < half, then sin(t_n f_j), then zeros; f_j = exp(-ln(max_period) j / half).
// Computed in double: t_n f_j can be large (t up to ~1000), where F32 arguments would lose digits.

bool supports_timestep_embedding(const ggml_tensor * node) {
    const ggml_tensor * t = node->src[0];
    const auto p = core::params<ggml_ext_timestep_embedding_params>(node);
    return t && t->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_is_vector(t) && p.dim >= 2 &&
           p.max_period >= 1 && node->ne[0] >= p.dim / 2 * 2 && node->ne[1] == t->ne[0];
}

void compute_timestep_embedding(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * t = node->src[0];
    const auto p = core::params<ggml_ext_timestep_embedding_params>(node);
    const int64_t half = p.dim / 2;
    const double log_period = std::log(static_cast<double>(p.max_period));
    const auto [begin, end] = chunk_range(node->ne[1], params.ith(), params.nth());
    for (int64_t n = begin; n < end && !params.should_stop(); ++n) {
        const double time = load_float(GGML_TYPE_F32, element_at(t, n, 0));
        char * row = row_at(node, n);
        for (int64_t j = 0; j < half; ++j) {
            const double arg =
                time * std::exp(-log_period * static_cast<double>(j) / static_cast<double>(half));
            store_float(GGML_TYPE_F32, row + j * node->nb[0], static_cast<float>(std::cos(arg)));
            store_float(GGML_TYPE_F32, row + (j + half) * node->nb[0], static_cast<float>(std::sin(arg)));
        }
        for (int64_t j = 2 * half; j < node->ne[0]; ++j)
            store_float(GGML_TYPE_F32, row + j * node->nb[0], 0.0f);
    }
}

}  // namespace

const Kernel repeat = cpu_kernel<supports_repeat, nullptr, compute_repeat>("cpu.repeat");
const Kernel concat = cpu_kernel<supports_concat, nullptr, compute_concat>("cpu.concat");
const Kernel pad = cpu_kernel<supports_pad, nullptr, compute_pad>("cpu.pad");
const Kernel upscale = cpu_kernel<supports_upscale, nullptr, compute_upscale>("cpu.upscale");
const Kernel timestep_embedding =
    cpu_kernel<supports_timestep_embedding, nullptr, compute_timestep_embedding>("cpu.timestep_embedding");

}  // namespace ggx::cpu::kernels
