// CPU kernels of the convolution family.
//
//  * IM2COL, IM2COL_3D: unfold input x (F32/F16, any strides) into columns of type F32/F16:
//    dst[((c*KD + kd)*KH + kh)*KW + kw, ow, oh, n*OD + od] = x[ow*s0 + kw*d0 - p0, oh*s1 + kh*d1 - p1,
//    od*s2 + kd*d2 - p2, c (of sample n)]; 2-D is KD = D = OD = 1, 1-D also KH = H = OH = 1. Positions
//    outside the input read as 0. Columns are packed in blocks exactly as the GEMM's A below, then
//    transposed; work is split over the blocks.
//  * CONV_2D, CONV_3D: implicit GEMMs on the MUL_MAT kernel's driver (gemm.h). The rows of A are the
//    output positions of one sample, its columns the taps (c, kd, kh, kw); A is never built: each
//    panel is packed straight from x (runs of consecutive output positions read runs of x, a copy
//    per tap when the stride is 1). B is the weights, one row per output channel, packed once.
//  * CONV_TRANSPOSE_1D/2D: by sub-pixel decomposition, one implicit GEMM per output phase
//    (ox mod s, oy mod s): a stride-1 convolution of x with the phase's taps, flipped; its result is
//    written to the phase's strided output positions.
//  * CONV_2D_DW: per channel plane and output row, a sum over the taps of scaled input rows;
//    channels-first, per output position a sum of the taps' channel vectors.
//  * IM2COL_BACK, COL2IM_1D, POOL_1D, POOL_2D, POOL_2D_BACK: direct loops, split over output rows or
//    planes (the scatters over the planes they write, so that no two threads add to one element).
#include <array>
#include <cfloat>
#include <vector>

#include "core/internal.h"
#include "cpu/kernels/common.h"
#include "cpu/kernels/gemm.h"

namespace ggx::cpu {
namespace {

bool f32_or_f16(ggml_type type) { return type == GGML_TYPE_F32 || type == GGML_TYPE_F16; }

// Input position of output o and tap k along one axis (may lie outside the input).
int64_t input_pos(int64_t o, int64_t k, int64_t stride, int64_t pad, int64_t dilation) {
    return o * stride + k * dilation - pad;
}

// ---------------------------------------------------------------------------------------------
// The implicit GEMM's A: output positions m = ow + OW*(oh + OH*od) (plus `first`) of one sample
// against taps k = ((c*KD + kd)*KH + kh)*KW + kw.

struct Unfold {
    std::array<int64_t, 3> s{1, 1, 1}, p{}, d{1, 1, 1}, k{1, 1, 1}, in{1, 1, 1}, out{1, 1, 1};
    std::array<size_t, 3> x_nb{};
    size_t x_c = 0, x_n = 0;
    const char * x = nullptr;
    ggml_type x_type = GGML_TYPE_F32;
    int64_t first = 0;  // position of row 0 (a chunk of the positions)
};

// A panel's height with AVX-512 (two vectors of floats); IM2COL's block of columns.
constexpr int64_t kFullRun = 32;

// The part of a run of outputs that one spatial tap (kw, kh, kd) reads inside the input: rows
// [lo, hi) of the run, starting at byte `offset` of channel 0. The same for every channel.
struct RunTap {
    int64_t lo = 0, hi = 0;
    size_t offset = 0;
};

RunTap run_tap(const Unfold & u, int64_t ow0, int64_t oh, int64_t od, int64_t len, int64_t spatial) {
    const int64_t kw = spatial % u.k[0], kh = spatial / u.k[0] % u.k[1], kd = spatial / (u.k[0] * u.k[1]);
    const int64_t ih = input_pos(oh, kh, u.s[1], u.p[1], u.d[1]);
    const int64_t id = input_pos(od, kd, u.s[2], u.p[2], u.d[2]);
    const int64_t iw0 = input_pos(ow0, kw, u.s[0], u.p[0], u.d[0]);
    RunTap t;
    if (ih < 0 || ih >= u.in[1] || id < 0 || id >= u.in[2] || iw0 + (len - 1) * u.s[0] < 0 || iw0 >= u.in[0])
        return t;
    t.lo = iw0 >= 0 ? 0 : (-iw0 + u.s[0] - 1) / u.s[0];
    t.hi = std::min(len, (u.in[0] - iw0 + u.s[0] - 1) / u.s[0]);
    t.offset = id * u.x_nb[2] + ih * u.x_nb[1] + (iw0 + t.lo * u.s[0]) * u.x_nb[0];
    return t;
}

// Rows [r, r + len) of a panel: consecutive ow from ow0 at (oh, od), over taps [k0, k0 + kc). Taps
// are visited spatial tap first, then channel, so the run's geometry is worked out once per
// spatial tap rather than once per tap.
void pack_run(const Unfold & u, const char * sample, int64_t ow0, int64_t oh, int64_t od, int64_t len,
              int64_t R, int64_t k0, int64_t kc, float * out) {
    const bool dense_f32 = u.x_type == GGML_TYPE_F32 && u.x_nb[0] == sizeof(float) && u.s[0] == 1;
    const int64_t S = u.k[0] * u.k[1] * u.k[2];
    for (int64_t spatial = 0; spatial < S; ++spatial) {
        const RunTap t = run_tap(u, ow0, oh, od, len, spatial);
        const int64_t lo = t.lo, hi = std::max(t.lo, t.hi);
        // The channels c with k = c * S + spatial in [k0, k0 + kc).
        for (int64_t c = (std::max<int64_t>(k0 - spatial, 0) + S - 1) / S, k = c * S + spatial; k < k0 + kc;
             ++c, k += S) {
            float * dst = out + (k - k0) * R;
            std::fill(dst, dst + lo, 0.0f);
            const char * src = sample + c * u.x_c + t.offset;
            // Runs are short: inline loops (a full panel's of constant length) beat a call of memcpy.
            const float * run = reinterpret_cast<const float *>(src);
            if (dense_f32 && hi - lo == kFullRun)
                for (int64_t r = 0; r < kFullRun; ++r)
                    dst[r] = run[r];
            else if (dense_f32)
                for (int64_t r = lo; r < hi; ++r)
                    dst[r] = run[r - lo];
            else if (hi > lo)
                load_row(u.x_type, src, u.x_nb[0] * u.s[0], hi - lo, dst + lo);
            std::fill(dst + hi, dst + len, 0.0f);
        }
    }
}

void pack_unfolded(const void * context, int64_t batch, int64_t r0, int64_t rows, int64_t R, int64_t k0,
                   int64_t kc, float * out) {
    const Unfold & u = *static_cast<const Unfold *>(context);
    const char * sample = u.x + batch * u.x_n;
    for (int64_t r = 0; r < rows;) {
        const int64_t m = u.first + r0 + r;
        const int64_t ow = m % u.out[0], oh = m / u.out[0] % u.out[1], od = m / (u.out[0] * u.out[1]);
        const int64_t len = std::min(rows - r, u.out[0] - ow);
        pack_run(u, sample, ow, oh, od, len, R, k0, kc, out + r);
        r += len;
    }
    for (int64_t k = 0; k < kc && rows < R; ++k)
        std::memset(out + k * R + rows, 0, sizeof(float) * static_cast<size_t>(R - rows));
}

// ---------------------------------------------------------------------------------------------
// IM2COL, IM2COL_3D: the implicit GEMM's A made explicit. Blocks of kRun consecutive columns are
// packed tap-major as for the GEMM (input rows read as runs), kBlockTaps taps at a time, then
// transposed into the columns and stored with one row conversion per column.

// Both blocks of a thread (2 x 16 KiB) stay in L1.
constexpr int64_t kBlockTaps = 128;

struct Columns {
    Unfold unfold;
    int64_t channels, batch, taps;
    size_t dst_row;  // between the rows of a column
    std::array<size_t, 3> dst_nb;
    size_t dst_n;
};

Columns im2col_geometry(const ggml_tensor * node) {
    const ggml_tensor * k = node->src[0];
    const ggml_tensor * x = node->src[1];
    Columns g{};
    Unfold & u = g.unfold;
    u.x = static_cast<const char *>(x->data), u.x_type = x->type;
    g.dst_row = node->nb[0];
    u.k[0] = k->ne[0], u.in[0] = x->ne[0], u.out[0] = node->ne[1];
    u.x_nb[0] = x->nb[0], g.dst_nb[0] = node->nb[1];
    if (node->op == GGML_OP_IM2COL_3D) {
        const auto p = core::params<ggml_ext_im2col_3d_params>(node);
        u.s = {p.s0, p.s1, p.s2}, u.p = {p.p0, p.p1, p.p2}, u.d = {p.d0, p.d1, p.d2};
        u.k = {k->ne[0], k->ne[1], k->ne[2]}, u.in = {x->ne[0], x->ne[1], x->ne[2]};
        g.channels = p.ic, g.batch = x->ne[3] / p.ic;
        u.out = {node->ne[1], node->ne[2], g.batch > 0 ? node->ne[3] / g.batch : 0};
        u.x_nb = {x->nb[0], x->nb[1], x->nb[2]}, u.x_c = x->nb[3],
        u.x_n = x->nb[3] * static_cast<size_t>(p.ic);
        g.dst_nb = {node->nb[1], node->nb[2], node->nb[3]},
        g.dst_n = node->nb[3] * static_cast<size_t>(u.out[2]);
    } else {
        const auto p = core::params<ggml_ext_im2col_params>(node);
        u.s[0] = p.s0, u.p[0] = p.p0, u.d[0] = p.d0;
        if (p.is_2d != 0) {
            u.s[1] = p.s1, u.p[1] = p.p1, u.d[1] = p.d1;
            u.k[1] = k->ne[1], u.in[1] = x->ne[1], u.out[1] = node->ne[2];
            g.channels = x->ne[2], g.batch = node->ne[3];
            u.x_nb[1] = x->nb[1], u.x_c = x->nb[2], u.x_n = x->nb[3];
            g.dst_nb[1] = node->nb[2], g.dst_n = node->nb[3];
        } else {
            g.channels = x->ne[1], g.batch = node->ne[2];
            u.x_c = x->nb[1], u.x_n = x->nb[2], g.dst_n = node->nb[2];
        }
    }
    g.taps = g.channels * u.k[0] * u.k[1] * u.k[2];
    return g;
}

// Per thread: a packed block (taps x kRun) and its transpose (kRun x taps).
size_t workspace_im2col(const ggml_tensor *, int n_threads) {
    return 2 * sizeof(float) * static_cast<size_t>(kBlockTaps * kFullRun) * static_cast<size_t>(n_threads);
}

void compute_im2col(const ComputeParams & params, ggml_tensor * node) {
    const Columns g = im2col_geometry(node);
    const Unfold & u = g.unfold;
    const int64_t plane = u.out[0] * u.out[1] * u.out[2];
    const int64_t blocks = (plane + kFullRun - 1) / kFullRun;
    float * packed = static_cast<float *>(params.workspace) + 2 * kBlockTaps * kFullRun * params.ith();
    float * cols = packed + kBlockTaps * kFullRun;
    const auto [begin, end] = chunk_range(blocks * g.batch, params.ith(), params.nth());
    for (int64_t b = begin; b < end && !params.should_stop(); ++b) {
        const int64_t n = b / blocks, m0 = b % blocks * kFullRun, rows = std::min(kFullRun, plane - m0);
        for (int64_t k0 = 0; k0 < g.taps; k0 += kBlockTaps) {
            const int64_t kc = std::min(kBlockTaps, g.taps - k0);
            pack_unfolded(&u, n, m0, rows, kFullRun, k0, kc, packed);
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t k = 0; k < kc; ++k)
                    cols[r * kc + k] = packed[k * kFullRun + r];
            for (int64_t r = 0; r < rows; ++r) {
                const int64_t m = m0 + r;
                char * dst = static_cast<char *>(node->data) + (m % u.out[0]) * g.dst_nb[0] +
                             (m / u.out[0] % u.out[1]) * g.dst_nb[1] +
                             m / (u.out[0] * u.out[1]) * g.dst_nb[2] + n * g.dst_n + k0 * g.dst_row;
                store_row(node->type, cols + r * kc, dst, g.dst_row, kc);
            }
        }
    }
}

bool supports_im2col(const ggml_tensor * node) {
    const ggml_tensor * k = node->src[0];
    const ggml_tensor * x = node->src[1];
    if (k == nullptr || x == nullptr || !f32_or_f16(x->type) || !f32_or_f16(node->type)) return false;
    const bool is_3d = node->op == GGML_OP_IM2COL_3D;
    if (is_3d) {
        const int64_t ic = core::params<ggml_ext_im2col_3d_params>(node).ic;
        if (ic < 1 || x->ne[3] % ic != 0 || (x->ne[3] > 0 && node->ne[3] % (x->ne[3] / ic) != 0))
            return false;
    }
    const Columns g = im2col_geometry(node);
    for (int a = 0; a < 3; ++a)
        if (g.unfold.s[a] < 1 || g.unfold.d[a] < 1 || g.unfold.p[a] < 0) return false;
    const bool is_2d = !is_3d && core::params<ggml_ext_im2col_params>(node).is_2d != 0;
    const bool batch_ok =
        is_3d || (is_2d ? node->ne[3] == x->ne[3] : node->ne[2] == x->ne[2] && node->ne[3] == 1);
    return batch_ok && node->ne[0] == g.taps;
}

// ---------------------------------------------------------------------------------------------
// Weights as the GEMM's B, and the workspace around the GEMM.

// Element (n, k) of the weights at data + n * nb1 + k * nb0.
struct Weights {
    const char * data;
    ggml_type type;
    size_t nb0, nb1;
};

// A kernel that is not contiguous is first copied into the workspace as a contiguous F32 tensor.
bool needs_dense_copy(const ggml_tensor * kernel) { return !ggml_is_contiguous(kernel); }

size_t dense_copy_bytes(const ggml_tensor * kernel) {
    return needs_dense_copy(kernel)
               ? (sizeof(float) * static_cast<size_t>(ggml_nelements(kernel)) + 63) & ~size_t(63)
               : 0;
}

// The kernel's data in logical order (the tensor's own, or the copy at ws); every thread returns
// after the copy is complete.
const char * dense_kernel(const ComputeParams & params, const ggml_tensor * kernel, char * ws,
                          ggml_type & type) {
    type = kernel->type;
    if (!needs_dense_copy(kernel)) return static_cast<const char *>(kernel->data);
    float * copy = reinterpret_cast<float *>(ws);
    for_each_row(params, kernel, [&](int64_t i1, int64_t i2, int64_t i3) {
        const int64_t row = i1 + kernel->ne[1] * (i2 + kernel->ne[2] * i3);
        load_row(kernel->type, row_at(kernel, i1, i2, i3), kernel->nb[0], kernel->ne[0],
                 copy + row * kernel->ne[0]);
    });
    params.thread.barrier();
    type = GGML_TYPE_F32;
    return ws;
}

// ---------------------------------------------------------------------------------------------
// CONV_2D, CONV_3D

struct DirectConv {
    Unfold unfold;
    int64_t positions, taps, out_channels, samples;
};

DirectConv direct_conv(const ggml_tensor * node) {
    const ggml_tensor * k = node->src[0];
    const ggml_tensor * x = node->src[1];
    DirectConv c;
    Unfold & u = c.unfold;
    u.x = static_cast<const char *>(x->data), u.x_type = x->type;
    if (node->op == GGML_OP_CONV_3D) {
        const auto p = core::params<ggml_ext_conv_3d_params>(node);
        u.s = {p.s0, p.s1, p.s2}, u.p = {p.p0, p.p1, p.p2}, u.d = {p.d0, p.d1, p.d2};
        u.k = {k->ne[0], k->ne[1], k->ne[2]}, u.in = {x->ne[0], x->ne[1], x->ne[2]};
        u.out = {node->ne[0], node->ne[1], node->ne[2]};
        u.x_nb = {x->nb[0], x->nb[1], x->nb[2]}, u.x_c = x->nb[3],
        u.x_n = x->nb[3] * static_cast<size_t>(p.c);
        c.taps = u.k[0] * u.k[1] * u.k[2] * p.c, c.out_channels = p.oc, c.samples = p.n;
    } else {
        const auto p = core::params<ggml_ext_conv_2d_params>(node);
        u.s = {p.s0, p.s1, 1}, u.p = {p.p0, p.p1, 0}, u.d = {p.d0, p.d1, 1};
        u.k = {k->ne[0], k->ne[1], 1}, u.in = {x->ne[0], x->ne[1], 1}, u.out = {node->ne[0], node->ne[1], 1};
        u.x_nb = {x->nb[0], x->nb[1], 0}, u.x_c = x->nb[2], u.x_n = x->nb[3];
        c.taps = u.k[0] * u.k[1] * x->ne[2], c.out_channels = k->ne[3], c.samples = x->ne[3];
    }
    c.positions = u.out[0] * u.out[1] * u.out[2];
    return c;
}

// The GEMM of a direct convolution, without data pointers (the weights of output channel o are
// taps consecutive elements).
gemm::Problem direct_problem(const DirectConv & c, const Weights & w) {
    gemm::Problem p;
    p.M = c.positions, p.N = c.out_channels, p.K = c.taps, p.batches = c.samples;
    p.pack_a = pack_unfolded;
    p.b = w.data, p.b_type = w.type, p.b_nb0 = w.nb0, p.b_nb1 = w.nb1;
    p.ldc = c.positions, p.c_batch = c.positions * c.out_channels;
    return p;
}

// An F16 result is computed into an F32 buffer in the workspace, then converted.
size_t direct_result_bytes(const ggml_tensor * node) {
    return node->type == GGML_TYPE_F32
               ? 0
               : (sizeof(float) * static_cast<size_t>(ggml_nelements(node)) + 63) & ~size_t(63);
}

bool supports_direct_conv(const ggml_tensor * node) {
    const ggml_tensor * k = node->src[0];
    const ggml_tensor * x = node->src[1];
    if (k == nullptr || x == nullptr || !f32_or_f16(k->type) || !f32_or_f16(x->type) ||
        !f32_or_f16(node->type))
        return false;
    if (!ggml_is_contiguous(node)) return false;
    const DirectConv c = direct_conv(node);
    const Unfold & u = c.unfold;
    for (int a = 0; a < 3; ++a)
        if (u.s[a] < 1 || u.d[a] < 1 || u.p[a] < 0) return false;
    if (node->op == GGML_OP_CONV_3D) {
        const auto p = core::params<ggml_ext_conv_3d_params>(node);
        return node->type == GGML_TYPE_F32 && p.c >= 1 && k->ne[3] == int64_t{p.c} * p.oc &&
               x->ne[3] == int64_t{p.c} * p.n && node->ne[3] == int64_t{p.oc} * p.n;
    }
    return node->type == x->type && k->ne[2] == x->ne[2] && node->ne[2] == k->ne[3] &&
           node->ne[3] == x->ne[3];
}

size_t workspace_direct_conv(const ggml_tensor * node, int n_threads) {
    const DirectConv c = direct_conv(node);
    return gemm::workspace(direct_problem(c, {}), n_threads) + dense_copy_bytes(node->src[0]) +
           direct_result_bytes(node);
}

// Converts this thread's share of the F32 result buffer into dst.
void store_result(const ComputeParams & params, const float * result, ggml_tensor * dst) {
    const int64_t n = ggml_nelements(dst);
    constexpr int64_t kPiece = 4096;
    const auto [p0, p1] = chunk_range((n + kPiece - 1) / kPiece, params.ith(), params.nth());
    for (int64_t p = p0; p < p1; ++p) {
        const int64_t i = p * kPiece;
        store_row(dst->type, result + i, static_cast<char *>(dst->data) + i * ggml_type_size(dst->type),
                  ggml_type_size(dst->type), std::min(kPiece, n - i));
    }
}

void compute_direct_conv(const ComputeParams & params, ggml_tensor * node) {
    const DirectConv c = direct_conv(node);
    const ggml_tensor * kernel = node->src[0];
    char * ws = static_cast<char *>(params.workspace);
    const size_t gemm_bytes = gemm::workspace(direct_problem(c, {}), params.nth());
    Weights w{};
    w.data = dense_kernel(params, kernel, ws + gemm_bytes, w.type);
    w.nb0 = ggml_type_size(w.type), w.nb1 = w.nb0 * static_cast<size_t>(c.taps);
    gemm::Problem p = direct_problem(c, w);
    p.a_context = &c.unfold;
    float * result = node->type == GGML_TYPE_F32
                         ? static_cast<float *>(node->data)
                         : reinterpret_cast<float *>(ws + gemm_bytes + dense_copy_bytes(kernel));
    p.c = result;
    gemm::compute(Exec::of(params), p);
    if (node->type != GGML_TYPE_F32) store_result(params, result, node);
}

// ---------------------------------------------------------------------------------------------
// CONV_TRANSPOSE_1D, CONV_TRANSPOSE_2D: both seen as x [W, H, C, N], kernel [KW, KH, OC, C],
// result [OW, OH, OC, N] (1-D: H = KH = OH = N = 1).

struct Transposed {
    int64_t W, H, C, N, KW, KH, OC, stride;
    size_t x_nb[4];  // x strides along w, h, c, n
    size_t k_nb[4];  // kernel strides along kx, ky, oc, c
};

Transposed transposed(const ggml_tensor * node) {
    const ggml_tensor * k = node->src[0];
    const ggml_tensor * x = node->src[1];
    if (node->op == GGML_OP_CONV_TRANSPOSE_1D)
        return {x->ne[0],
                1,
                x->ne[1],
                1,
                k->ne[0],
                1,
                k->ne[1],
                core::params<ggml_ext_conv_transpose_1d_params>(node).s0,
                {x->nb[0], 0, x->nb[1], 0},
                {k->nb[0], 0, k->nb[1], k->nb[2]}};
    return {x->ne[0],
            x->ne[1],
            x->ne[2],
            x->ne[3],
            k->ne[0],
            k->ne[1],
            k->ne[2],
            core::params<ggml_ext_conv_transpose_2d_params>(node).stride,
            {x->nb[0], x->nb[1], x->nb[2], x->nb[3]},
            {k->nb[0], k->nb[1], k->nb[2], k->nb[3]}};
}

// Sub-pixel decomposition: the outputs of phase (px, py), at (q*s + px, r*s + py), see only the taps
// kx = px + s*jx, ky = py + s*jy, and out[q*s + px, r*s + py, oc] = sum over (c, jx, jy) of
// x[q - jx, r - jy, c] * k[px + s*jx, py + s*jy, oc, c]: with the taps flipped, a stride-1
// convolution of x padded by (Jx - 1, Jy - 1), an implicit GEMM like CONV_2D's. Each phase's result
// goes to a buffer, then to its strided output positions; nothing is summed twice.
struct Phase {
    int64_t px, py, jx, jy;  // offset and taps along each axis (jx or jy 0: a phase without taps)
    int64_t qx, qy;          // output positions along each axis
    int64_t taps() const { return jx * jy; }
};

Phase phase_of(const Transposed & t, int64_t OW, int64_t OH, int64_t px, int64_t py) {
    const int64_t s = t.stride;
    const auto count = [s](int64_t n, int64_t offset) { return n > offset ? (n - offset + s - 1) / s : 0; };
    return {px, py, count(t.KW, px), count(t.KH, py), count(OW, px), count(OH, py)};
}

int64_t out_h(const ggml_tensor * node) { return node->op == GGML_OP_CONV_TRANSPOSE_1D ? 1 : node->ne[1]; }

std::vector<Phase> phases_of(const ggml_tensor * node) {
    const Transposed t = transposed(node);
    const bool is_1d = node->op == GGML_OP_CONV_TRANSPOSE_1D;
    std::vector<Phase> phases;
    for (int64_t py = 0; py < (is_1d ? 1 : t.stride); ++py)
        for (int64_t px = 0; px < t.stride; ++px)
            phases.push_back(phase_of(t, node->ne[0], out_h(node), px, py));
    return phases;
}

Unfold phase_unfold(const Transposed & t, const Phase & ph) {
    Unfold u;
    u.p = {ph.jx - 1, ph.jy - 1, 0};
    u.k = {ph.jx, ph.jy, 1}, u.in = {t.W, t.H, 1}, u.out = {ph.qx, ph.qy, 1};
    u.x_nb = {t.x_nb[0], t.x_nb[1], 0}, u.x_c = t.x_nb[2], u.x_n = t.x_nb[3];
    return u;
}

// The GEMM of one phase and sample: positions x (output channels) over its taps; the phase's weights
// are row oc of kp, taps ordered (jx fastest, then jy, then c) as pack_unfolded's.
gemm::Problem phase_problem(const Transposed & t, const Phase & ph, const float * kp, float * result) {
    gemm::Problem p;
    p.M = ph.qx * ph.qy, p.N = t.OC, p.K = ph.taps() * t.C;
    p.pack_a = pack_unfolded;
    p.b = reinterpret_cast<const char *>(kp), p.b_type = GGML_TYPE_F32;
    p.b_nb0 = sizeof(float), p.b_nb1 = sizeof(float) * static_cast<size_t>(p.K);
    p.c = result, p.ldc = p.M;
    return p;
}

size_t align64_bytes(size_t bytes) { return (bytes + 63) & ~size_t(63); }

// The phases' weights, one after another (all of them: as many as the kernel's elements), and the
// largest phase's result.
size_t phase_weights_floats(const Transposed & t) { return static_cast<size_t>(t.KW * t.KH * t.OC * t.C); }
size_t phase_result_bytes(const ggml_tensor * node) {
    size_t most = 0;
    for (const Phase & ph : phases_of(node))
        most = std::max(most, static_cast<size_t>(ph.qx * ph.qy));
    return align64_bytes(sizeof(float) * most * static_cast<size_t>(transposed(node).OC));
}

size_t workspace_transposed(const ggml_tensor * node, int n_threads) {
    const Transposed t = transposed(node);
    size_t gemm_bytes = 0;
    for (const Phase & ph : phases_of(node))
        if (ph.taps() > 0) gemm_bytes = std::max(gemm_bytes, gemm::workspace(phase_problem(t, ph, nullptr, nullptr), n_threads));
    return gemm_bytes + align64_bytes(sizeof(float) * phase_weights_floats(t)) + phase_result_bytes(node);
}

// Fills every phase's weights (kp, phase after phase): kp[oc][c][jy'][jx'] = k[px + s*(Jx - 1 - jx'),
// py + s*(Jy - 1 - jy'), oc, c]; split over output channels, every thread returns after the copy.
void fill_phase_weights(const ComputeParams & params, const ggml_tensor * k, const Transposed & t,
                        const std::vector<Phase> & phases, float * kp) {
    const auto [o0, o1] = chunk_range(t.OC, params.ith(), params.nth());
    const char * base = static_cast<const char *>(k->data);
    for (const Phase & ph : phases) {
        const int64_t K = ph.taps() * t.C;
        for (int64_t oc = o0; oc < o1; ++oc) {
            float * row = kp + oc * K;
            for (int64_t c = 0; c < t.C; ++c)
                for (int64_t jy = 0; jy < ph.jy; ++jy)
                    for (int64_t jx = 0; jx < ph.jx; ++jx) {
                        const int64_t kx = ph.px + t.stride * (ph.jx - 1 - jx);
                        const int64_t ky = ph.py + t.stride * (ph.jy - 1 - jy);
                        row[(c * ph.jy + jy) * ph.jx + jx] = load_float(
                            k->type, base + kx * t.k_nb[0] + ky * t.k_nb[1] + oc * t.k_nb[2] + c * t.k_nb[3]);
                    }
        }
        kp += t.OC * K;
    }
    params.thread.barrier();
}

// Writes this thread's output channels of one phase's result to their strided positions (zeros for
// a phase without taps).
void store_phase(const ComputeParams & params, const Phase & ph, const float * result, int64_t OC,
                 int64_t stride, float * out, int64_t OW, int64_t OH) {
    const auto [o0, o1] = chunk_range(OC, params.ith(), params.nth());
    const int64_t M = ph.qx * ph.qy;
    for (int64_t oc = o0; oc < o1; ++oc)
        for (int64_t r = 0; r < ph.qy; ++r) {
            float * o = out + (oc * OH + r * stride + ph.py) * OW + ph.px;
            const float * v = result + oc * M + r * ph.qx;
            for (int64_t q = 0; q < ph.qx; ++q)
                o[q * stride] = ph.taps() > 0 ? v[q] : 0.0f;
        }
}

bool supports_transposed(const ggml_tensor * node) {
    const ggml_tensor * k = node->src[0];
    const ggml_tensor * x = node->src[1];
    if (k == nullptr || x == nullptr || !f32_or_f16(k->type) || x->type != GGML_TYPE_F32 ||
        node->type != GGML_TYPE_F32 || !ggml_is_contiguous(node))
        return false;
    const Transposed t = transposed(node);
    const bool is_1d = node->op == GGML_OP_CONV_TRANSPOSE_1D;
    return t.stride >= 1 && (is_1d ? k->ne[2] == t.C && k->ne[3] == 1 : k->ne[3] == t.C) &&
           node->ne[0] == (t.W - 1) * t.stride + t.KW &&
           node->ne[1] == (is_1d ? t.OC : (t.H - 1) * t.stride + t.KH);
}

void compute_transposed(const ComputeParams & params, ggml_tensor * node) {
    const Transposed t = transposed(node);
    const std::vector<Phase> phases = phases_of(node);
    size_t gemm_bytes = 0;
    for (const Phase & ph : phases)
        if (ph.taps() > 0)
            gemm_bytes = std::max(gemm_bytes, gemm::workspace(phase_problem(t, ph, nullptr, nullptr), params.nth()));
    char * ws = static_cast<char *>(params.workspace);
    float * kp = reinterpret_cast<float *>(ws + gemm_bytes);
    float * result = reinterpret_cast<float *>(ws + gemm_bytes + align64_bytes(sizeof(float) * phase_weights_floats(t)));
    fill_phase_weights(params, node->src[0], t, phases, kp);
    const int64_t OW = node->ne[0], OH = out_h(node);
    for (int64_t n = 0; n < t.N && !params.should_stop(); ++n) {
        float * out = static_cast<float *>(node->data) + n * t.OC * OW * OH;
        const float * weights = kp;
        for (const Phase & ph : phases) {
            if (ph.taps() > 0) {
                Unfold u = phase_unfold(t, ph);
                u.x_type = node->src[1]->type;
                u.x = static_cast<const char *>(node->src[1]->data) + n * t.x_nb[3];
                gemm::Problem p = phase_problem(t, ph, weights, result);
                p.a_context = &u;
                gemm::compute(Exec::of(params), p);
                weights += t.OC * ph.taps() * t.C;
            }
            store_phase(params, ph, result, t.OC, t.stride, out, OW, OH);
            params.thread.barrier();  // the next phase reuses the result buffer
        }
    }
}

// ---------------------------------------------------------------------------------------------
// CONV_2D_DW: r[ow, oh, c, n] = sum_{kh, kw} k[kw, kh, 0, c] * x[ow*s0 + kw*d0 - p0, oh*s1 + kh*d1 - p1, c,
// n].

bool supports_depthwise(const ggml_tensor * node) {
    const ggml_tensor * k = node->src[0];
    const ggml_tensor * x = node->src[1];
    if (k == nullptr || x == nullptr || !f32_or_f16(k->type) || !f32_or_f16(x->type) || node->type != x->type)
        return false;
    const auto p = core::params<ggml_ext_conv_2d_params>(node);
    return p.s0 >= 1 && p.s1 >= 1 && p.d0 >= 1 && p.d1 >= 1 && p.p0 >= 0 && p.p1 >= 0 && k->ne[2] == 1 &&
           k->ne[3] == x->ne[2] && node->ne[2] == x->ne[2] && node->ne[3] == x->ne[3];
}

// Per thread: an input row with its padding (span of every tap) and an output row, as F32.
size_t depthwise_row_floats(const ggml_tensor * node) {
    const auto p = core::params<ggml_ext_conv_2d_params>(node);
    const int64_t span = (node->ne[0] - 1) * p.s0 + (node->src[0]->ne[0] - 1) * p.d0 + 1;
    return static_cast<size_t>(std::max(span, node->src[1]->ne[0] + p.p0) + node->ne[0] + 16);
}

// Planar, per thread: KH padded input rows (the span of every tap each), then the output row and
// the channel's weights.
size_t depthwise_planar_floats(const ggml_tensor * node) {
    const ggml_tensor * k = node->src[0];
    const int64_t taps = k->ne[0] * k->ne[1];
    return depthwise_row_floats(node) * static_cast<size_t>(k->ne[1]) + static_cast<size_t>(taps);
}

// Input and result stored channels-first (channels innermost, as ggml_conv_2d_dw_direct keeps them).
bool channels_first(const ggml_tensor * node) {
    const ggml_tensor * x = node->src[1];
    return x->ne[2] > 1 && x->nb[2] == ggml_type_size(x->type) && node->nb[2] == ggml_type_size(node->type);
}

// Channels-first: the kernel transposed to F32 kt[(kh*KW + kw)*C + c], then per thread an
// accumulator and an input converted to F32, C floats each.
size_t workspace_depthwise(const ggml_tensor * node, int n_threads) {
    const ggml_tensor * k = node->src[0];
    if (channels_first(node))
        return sizeof(float) * static_cast<size_t>(k->ne[0] * k->ne[1] * k->ne[3] + 2 * k->ne[3] * n_threads);
    return sizeof(float) * depthwise_planar_floats(node) * static_cast<size_t>(n_threads);
}

// Channels-first: each output position sums its taps' channel vectors scaled by the taps' weights.
void compute_depthwise_channels_first(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * k = node->src[0];
    const ggml_tensor * x = node->src[1];
    const auto p = core::params<ggml_ext_conv_2d_params>(node);
    const int64_t C = x->ne[2], KW = k->ne[0], KH = k->ne[1];
    float * kt = static_cast<float *>(params.workspace);
    float * acc = kt + KW * KH * C + 2 * C * params.ith();
    float * in = acc + C;
    const auto [t0, t1] = chunk_range(KW * KH, params.ith(), params.nth());
    for (int64_t t = t0; t < t1; ++t)
        load_row(k->type, element_at(k, t % KW, t / KW, 0, 0), k->nb[3], C, kt + t * C);
    params.thread.barrier();
    const auto [r0, r1] = chunk_range(node->ne[1] * node->ne[3], params.ith(), params.nth());
    for (int64_t r = r0; r < r1 && !params.should_stop(); ++r) {
        const int64_t oh = r % node->ne[1], n = r / node->ne[1];
        for (int64_t ow = 0; ow < node->ne[0]; ++ow) {
            std::fill(acc, acc + C, 0.0f);
            for (int64_t kh = 0; kh < KH; ++kh) {
                const int64_t ih = input_pos(oh, kh, p.s1, p.p1, p.d1);
                for (int64_t kw = 0; ih >= 0 && ih < x->ne[1] && kw < KW; ++kw) {
                    const int64_t iw = input_pos(ow, kw, p.s0, p.p0, p.d0);
                    if (iw < 0 || iw >= x->ne[0]) continue;
                    const char * src = element_at(x, iw, ih, 0, n);
                    const float * v = reinterpret_cast<const float *>(src);
                    if (x->type != GGML_TYPE_F32) {
                        load_row(x->type, src, x->nb[2], C, in);
                        v = in;
                    }
                    const float * w = kt + (kh * KW + kw) * C;
                    for (int64_t c = 0; c < C; ++c)
                        acc[c] += w[c] * v[c];
                }
            }
            store_row(node->type, acc, element_at(node, ow, oh, 0, n), node->nb[2], C);
        }
    }
}

void compute_depthwise(const ComputeParams & params, ggml_tensor * node) {
    if (channels_first(node)) {
        compute_depthwise_channels_first(params, node);
        return;
    }
    const ggml_tensor * k = node->src[0];
    const ggml_tensor * x = node->src[1];
    const auto p = core::params<ggml_ext_conv_2d_params>(node);
    const int64_t OW = node->ne[0], W = x->ne[0], H = x->ne[1], KW = k->ne[0], KH = k->ne[1];
    const int64_t row_floats = static_cast<int64_t>(depthwise_row_floats(node));
    const int64_t span = row_floats - OW - 16;
    float * padded = static_cast<float *>(params.workspace) +
                     depthwise_planar_floats(node) * static_cast<size_t>(params.ith());
    float * acc = padded + span * KH;
    float * weights = padded + row_floats * KH;
    std::vector<const float *> rows(static_cast<size_t>(KH));
    for_each_row(params, node, [&](int64_t oh, int64_t c, int64_t n) {
        for (int64_t t = 0; t < KW * KH; ++t)
            weights[t] = load_float(k->type, element_at(k, t % KW, t / KW, 0, c));
        for (int64_t kh = 0; kh < KH; ++kh) {
            const int64_t ih = input_pos(oh, kh, p.s1, p.p1, p.d1);
            rows[kh] = nullptr;
            if (ih < 0 || ih >= H) continue;
            float * row = padded + kh * span;
            const int64_t width = std::min(W, span - p.p0);
            std::fill(row, row + p.p0, 0.0f);
            load_row(x->type, row_at(x, ih, c, n), x->nb[0], width, row + p.p0);
            std::fill(row + p.p0 + width, row + span, 0.0f);
            rows[kh] = row;
        }
        if (p.s0 == 1) {
            depthwise_row_f32(rows.data(), KH, weights, KW, p.d0, acc, OW);
        } else {
            std::fill(acc, acc + OW, 0.0f);
            for (int64_t kh = 0; kh < KH; ++kh)
                for (int64_t kw = 0; rows[kh] != nullptr && kw < KW; ++kw)
                    for (int64_t ow = 0; ow < OW; ++ow)
                        acc[ow] += weights[kh * KW + kw] * rows[kh][ow * p.s0 + kw * p.d0];
        }
        store_row(node->type, acc, row_at(node, oh, c, n), node->nb[0], OW);
    });
}

// ---------------------------------------------------------------------------------------------
// IM2COL_BACK: result [W, H, C, N] (1-D: [W, C, N]); gradient b [C*KH*KW, OW, OH, N] ([C*KW, OW, N]).

struct Im2colBack {
    int64_t KW, KH, W, H, C, N, OW, OH;
    ggml_ext_im2col_params p;
    bool is_2d;
};

Im2colBack im2col_back(const ggml_tensor * node) {
    const ggml_tensor * k = node->src[0];
    const ggml_tensor * b = node->src[1];
    Im2colBack g{};
    g.p = core::params<ggml_ext_im2col_params>(node);
    g.is_2d = g.p.is_2d != 0;
    g.KW = k->ne[0], g.KH = g.is_2d ? k->ne[1] : 1, g.W = node->ne[0];
    g.H = g.is_2d ? node->ne[1] : 1, g.C = g.is_2d ? node->ne[2] : node->ne[1],
    g.N = g.is_2d ? node->ne[3] : node->ne[2];
    g.OW = b->ne[1], g.OH = g.is_2d ? b->ne[2] : 1;
    if (!g.is_2d) g.p.s1 = 1, g.p.p1 = 0, g.p.d1 = 1;
    return g;
}

bool supports_im2col_back(const ggml_tensor * node) {
    const ggml_tensor * k = node->src[0];
    const ggml_tensor * b = node->src[1];
    if (k == nullptr || b == nullptr || b->type != GGML_TYPE_F32 || node->type != GGML_TYPE_F32 ||
        !ggml_is_contiguous(node))
        return false;
    const Im2colBack g = im2col_back(node);
    return g.p.s0 >= 1 && g.p.s1 >= 1 && g.p.d0 >= 1 && g.p.d1 >= 1 && g.p.p0 >= 0 && g.p.p1 >= 0 &&
           b->ne[0] == g.C * g.KH * g.KW &&
           (g.is_2d ? b->ne[3] == g.N && node->ne[3] >= 1 : b->ne[2] == g.N && node->ne[3] == 1);
}

void compute_im2col_back(const ComputeParams & params, ggml_tensor * node) {
    const Im2colBack g = im2col_back(node);
    const ggml_tensor * b = node->src[1];
    const auto [begin, end] = chunk_range(g.C * g.N, params.ith(), params.nth());
    for (int64_t u = begin; u < end && !params.should_stop(); ++u) {
        const int64_t c = u % g.C, n = u / g.C;
        float * plane = static_cast<float *>(node->data) + u * g.W * g.H;
        std::fill(plane, plane + g.W * g.H, 0.0f);
        for (int64_t oh = 0; oh < g.OH; ++oh)
            for (int64_t ow = 0; ow < g.OW; ++ow) {
                const char * col = g.is_2d ? element_at(b, 0, ow, oh, n) : element_at(b, 0, ow, n);
                for (int64_t kh = 0; kh < g.KH; ++kh) {
                    const int64_t ih = input_pos(oh, kh, g.p.s1, g.p.p1, g.p.d1);
                    for (int64_t kw = 0; ih >= 0 && ih < g.H && kw < g.KW; ++kw) {
                        const int64_t iw = input_pos(ow, kw, g.p.s0, g.p.p0, g.p.d0);
                        if (iw >= 0 && iw < g.W)
                            plane[ih * g.W + iw] +=
                                load_float(GGML_TYPE_F32, col + ((c * g.KH + kh) * g.KW + kw) * b->nb[0]);
                    }
                }
            }
    }
}

// ---------------------------------------------------------------------------------------------
// COL2IM_1D: r[t*s0 + k - p0, oc] += a[oc*K + k, t].

bool supports_col2im_1d(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    if (a == nullptr || !is_float(a->type) || node->type != a->type) return false;
    const auto p = core::params<ggml_ext_col2im_1d_params>(node);
    return p.s0 >= 1 && p.p0 >= 0 && p.oc >= 1 && a->ne[0] % p.oc == 0 && node->ne[1] == p.oc;
}

size_t workspace_col2im_1d(const ggml_tensor * node, int n_threads) {
    return sizeof(float) * static_cast<size_t>(node->ne[0] + node->src[0]->ne[0]) *
           static_cast<size_t>(n_threads);
}

void compute_col2im_1d(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const auto p = core::params<ggml_ext_col2im_1d_params>(node);
    const int64_t K = a->ne[0] / p.oc, T = node->ne[0];
    float * acc = static_cast<float *>(params.workspace) + (T + a->ne[0]) * params.ith();
    float * column = acc + T;
    const auto [o0, o1] = chunk_range(p.oc, params.ith(), params.nth());
    for (int64_t oc = o0; oc < o1; ++oc) {
        std::fill(acc, acc + T, 0.0f);
        for (int64_t t = 0; t < a->ne[1]; ++t) {
            load_row(a->type, element_at(a, oc * K, t), a->nb[0], K, column);
            for (int64_t k = 0; k < K; ++k) {
                const int64_t o = input_pos(t, k, p.s0, p.p0, 1);
                if (o >= 0 && o < T) acc[o] += column[k];
            }
        }
        store_row(node->type, acc, row_at(node, oc), node->nb[0], T);
    }
}

// ---------------------------------------------------------------------------------------------
// POOL_1D, POOL_2D, POOL_2D_BACK

struct Window {
    int64_t k0, k1, s0, s1, p0, p1;
    bool is_max;
};

Window window_of(const ggml_tensor * node) {
    if (node->op == GGML_OP_POOL_1D) {
        const auto p = core::params<ggml_ext_pool_1d_params>(node);
        return {p.k0, 1, p.s0, 1, p.p0, 0, p.op == GGML_OP_POOL_MAX};
    }
    const auto p = core::params<ggml_ext_pool_2d_params>(node);
    // ggml truncates the float paddings to an integer offset.
    return {p.k0,
            p.k1,
            p.s0,
            p.s1,
            static_cast<int64_t>(p.p0),
            static_cast<int64_t>(p.p1),
            p.op == GGML_OP_POOL_MAX};
}

bool valid_window(const ggml_tensor * node) {
    const int op = node->op == GGML_OP_POOL_1D ? core::params<ggml_ext_pool_1d_params>(node).op
                                               : core::params<ggml_ext_pool_2d_params>(node).op;
    const Window w = window_of(node);
    return (op == GGML_OP_POOL_MAX || op == GGML_OP_POOL_AVG) && w.k0 >= 1 && w.k1 >= 1 && w.s0 >= 1 &&
           w.s1 >= 1 && w.p0 >= 0 && w.p1 >= 0;
}

bool supports_pool(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    return a != nullptr && is_float(a->type) && node->type == GGML_TYPE_F32 && valid_window(node) &&
           node->ne[2] == a->ne[2] && node->ne[3] == a->ne[3] &&
           (node->op == GGML_OP_POOL_2D || node->ne[1] == a->ne[1]);
}

// Per thread: the k1 input rows of a window row as F32.
size_t workspace_pool(const ggml_tensor * node, int n_threads) {
    return sizeof(float) * static_cast<size_t>(node->src[0]->ne[0] * window_of(node).k1) *
           static_cast<size_t>(n_threads);
}

void compute_pool(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const Window w = window_of(node);
    const bool is_2d = node->op == GGML_OP_POOL_2D;
    const int64_t W = a->ne[0], H = a->ne[1], OW = node->ne[0];
    float * rows = static_cast<float *>(params.workspace) + W * w.k1 * params.ith();
    const float init = w.is_max ? -FLT_MAX : 0.0f;
    const float scale = 1.0f / static_cast<float>(w.k0 * w.k1);
    for_each_row(params, node, [&](int64_t oy, int64_t i2, int64_t i3) {
        int64_t n_rows = 0;
        for (int64_t ky = 0; ky < w.k1; ++ky) {
            const int64_t iy = is_2d ? input_pos(oy, ky, w.s1, w.p1, 1) : oy;
            if (iy >= 0 && iy < H) load_row(a->type, row_at(a, iy, i2, i3), a->nb[0], W, rows + W * n_rows++);
        }
        float * out = reinterpret_cast<float *>(row_at(node, oy, i2, i3));
        for (int64_t ox = 0; ox < OW; ++ox) {
            const int64_t ix0 = input_pos(ox, 0, w.s0, w.p0, 1);
            const int64_t lo = std::max<int64_t>(ix0, 0), hi = std::min(ix0 + w.k0, W);
            float v = init;
            for (int64_t r = 0; r < n_rows; ++r)
                for (int64_t ix = lo; ix < hi; ++ix) {
                    const float e = rows[r * W + ix];
                    v = w.is_max ? (e > v ? e : v) : v + e;
                }
            out[ox] = w.is_max ? v : v * scale;
        }
    });
}

bool supports_pool_back(const ggml_tensor * node) {
    const ggml_tensor * g = node->src[0];
    const ggml_tensor * af = node->src[1];
    return g != nullptr && af != nullptr && is_float(g->type) && is_float(af->type) &&
           node->type == GGML_TYPE_F32 && ggml_is_contiguous(node) && valid_window(node) &&
           g->ne[2] == node->ne[2] && g->ne[3] == node->ne[3];
}

void compute_pool_back(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * g = node->src[0];
    const ggml_tensor * af = node->src[1];
    const Window w = window_of(node);
    const int64_t W = node->ne[0], H = node->ne[1];
    const float share = 1.0f / static_cast<float>(w.k0 * w.k1);
    const auto [begin, end] = chunk_range(node->ne[2] * node->ne[3], params.ith(), params.nth());
    for (int64_t u = begin; u < end && !params.should_stop(); ++u) {
        const int64_t i2 = u % node->ne[2], i3 = u / node->ne[2];
        float * plane = static_cast<float *>(node->data) + u * W * H;
        std::fill(plane, plane + W * H, 0.0f);
        for (int64_t oy = 0; oy < g->ne[1]; ++oy)
            for (int64_t ox = 0; ox < g->ne[0]; ++ox) {
                const float grad = load_float(g->type, element_at(g, ox, oy, i2, i3));
                int64_t best = -1;
                float best_value = -FLT_MAX;
                for (int64_t ky = 0; ky < w.k1; ++ky) {
                    const int64_t iy = input_pos(oy, ky, w.s1, w.p1, 1);
                    for (int64_t kx = 0; iy >= 0 && iy < H && kx < w.k0; ++kx) {
                        const int64_t ix = input_pos(ox, kx, w.s0, w.p0, 1);
                        if (ix < 0 || ix >= W) continue;
                        if (!w.is_max) {
                            plane[iy * W + ix] += grad * share;
                            continue;
                        }
                        const float v = load_float(af->type, element_at(af, ix, iy, i2, i3));
                        if (v > best_value || best < 0) best = iy * W + ix, best_value = v;
                    }
                }
                if (best >= 0) plane[best] += grad;
            }
    }
}

}  // namespace

namespace kernels {
const Kernel im2col = cpu_kernel<supports_im2col, workspace_im2col, compute_im2col>("cpu.im2col");
const Kernel conv_direct =
    cpu_kernel<supports_direct_conv, workspace_direct_conv, compute_direct_conv>("cpu.conv_direct");
const Kernel conv_transpose =
    cpu_kernel<supports_transposed, workspace_transposed, compute_transposed>("cpu.conv_transpose");
const Kernel conv_2d_dw =
    cpu_kernel<supports_depthwise, workspace_depthwise, compute_depthwise>("cpu.conv_2d_dw");
const Kernel im2col_back = cpu_kernel<supports_im2col_back, nullptr, compute_im2col_back>("cpu.im2col_back");
const Kernel col2im_1d =
    cpu_kernel<supports_col2im_1d, workspace_col2im_1d, compute_col2im_1d>("cpu.col2im_1d");
const Kernel pool = cpu_kernel<supports_pool, workspace_pool, compute_pool>("cpu.pool");
const Kernel pool_2d_back = cpu_kernel<supports_pool_back, nullptr, compute_pool_back>("cpu.pool_2d_back");
}  // namespace kernels

}  // namespace ggx::cpu
