// CPU kernel of ROPE: rotary position embedding with YaRN scaling, a [D, H, T, B] F32/F16 (any
// strides) at positions pos (I32 [T]), optional F32 frequency factors; the result has a's type.
//
// Each thread walks its rows (head fastest, then token, then batch) and refills a cache of
// mscale * (cos, sin) of the n_dims / 2 angles whenever the token changes; the angles are computed
// in double (positions can be large), the rotation itself in F32.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/internal.h"
#include "cpu/kernels/common.h"

namespace ggx::cpu {
namespace {

constexpr size_t kAlign = 64;

// The node's rotation parameters (op_params ints [1] n_dims, [2] mode, [4] n_ctx_orig; floats [5..10]).
struct Rope {
    explicit Rope(const ggml_tensor * node)
        : n_dims(core::get_param<int32_t>(node, 1)),
          neox(core::get_param<int32_t>(node, 2) == GGML_ROPE_TYPE_NEOX),
          freq_factors(node->src[2]),
          theta_scale(std::pow(static_cast<double>(core::get_param<float>(node, 5)), -2.0 / n_dims)),
          freq_scale(core::get_param<float>(node, 6)),
          ext_factor(core::get_param<float>(node, 7)),
          attn_factor(core::get_param<float>(node, 8)) {
        const double n_ctx_orig = core::get_param<int32_t>(node, 4);
        const double base = core::get_param<float>(node, 5);
        const auto corr_dim = [&](double n_rot) {
            return n_dims * std::log(n_ctx_orig / (n_rot * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
        };
        low = std::max(0.0, std::floor(corr_dim(core::get_param<float>(node, 9))));
        high =
            std::min(static_cast<double>(n_dims - 1), std::ceil(corr_dim(core::get_param<float>(node, 10))));
    }

    // cache[2i], cache[2i + 1] = mscale * (cos, sin) of pair i's angle at position pos.
    void fill(double pos, float * cache) const {
        for (int64_t i = 0; i < n_dims / 2; ++i) {
            const double factor =
                freq_factors ? load_float(GGML_TYPE_F32, element_at(freq_factors, i, 0)) : 1.0;
            const double extrap = pos * std::pow(theta_scale, static_cast<double>(i)) / factor;
            const double interp = freq_scale * extrap;
            double theta = interp, mscale = attn_factor;
            if (ext_factor != 0.0) {
                const double ramp =
                    1.0 - std::min(1.0, std::max(0.0, (i - low) / std::max(0.001, high - low)));
                const double mix = ramp * ext_factor;
                theta = interp * (1.0 - mix) + extrap * mix;
                mscale *= 1.0 + 0.1 * std::log(1.0 / freq_scale);
            }
            cache[2 * i] = static_cast<float>(std::cos(theta) * mscale);
            cache[2 * i + 1] = static_cast<float>(std::sin(theta) * mscale);
        }
    }

    // y = x rotated with cache; channels from n_dims on are copied. x and y hold d floats.
    void rotate(const float * x, float * y, int64_t d, const float * cache) const {
        const int64_t half = n_dims / 2, step = neox ? 1 : 2, offset = neox ? half : 1;
        for (int64_t i = 0; i < half; ++i) {
            const int64_t j0 = i * step, j1 = j0 + offset;
            const float x0 = x[j0], x1 = x[j1], c = cache[2 * i], s = cache[2 * i + 1];
            y[j0] = x0 * c - x1 * s;
            y[j1] = x0 * s + x1 * c;
        }
        std::copy(x + n_dims, x + d, y + n_dims);
    }

    int64_t n_dims;
    bool neox;
    const ggml_tensor * freq_factors;
    double theta_scale, freq_scale, ext_factor, attn_factor;
    double low = 0.0, high = 0.0;
};

bool dense_f32(const ggml_tensor * t) { return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float); }

// Per thread: the angle cache (n_dims floats), then an input and an output row (ne0 floats each).
size_t cache_bytes(const ggml_tensor * node) {
    return core::align_up(core::get_param<int32_t>(node, 1) * sizeof(float), kAlign);
}
size_t row_bytes(const ggml_tensor * node) { return core::align_up(node->ne[0] * sizeof(float), kAlign); }
size_t thread_bytes(const ggml_tensor * node) { return cache_bytes(node) + 2 * row_bytes(node); }
size_t workspace(const ggml_tensor * node, int n_threads) { return thread_bytes(node) * n_threads; }

bool supports(const ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * pos = node->src[1];
    const ggml_tensor * ff = node->src[2];
    const int32_t n_dims = core::get_param<int32_t>(node, 1), mode = core::get_param<int32_t>(node, 2);
    return a != nullptr && pos != nullptr && (a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16) &&
           node->type == a->type && ggml_are_same_shape(a, node) && pos->type == GGML_TYPE_I32 &&
           ggml_is_vector(pos) && pos->ne[0] >= a->ne[2] &&
           (mode == GGML_ROPE_TYPE_NORMAL || mode == GGML_ROPE_TYPE_NEOX) && n_dims > 0 && n_dims % 2 == 0 &&
           n_dims <= a->ne[0] &&
           (ff == nullptr || (ff->type == GGML_TYPE_F32 && ggml_is_vector(ff) && ff->ne[0] >= n_dims / 2));
}

void compute(const ComputeParams & params, ggml_tensor * node) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * pos = node->src[1];
    const Rope rope(node);
    const int64_t d = node->ne[0];
    char * scratch = static_cast<char *>(params.workspace) + thread_bytes(node) * params.ith();
    float * cache = reinterpret_cast<float *>(scratch);
    float * in = reinterpret_cast<float *>(scratch + cache_bytes(node));
    float * out = reinterpret_cast<float *>(scratch + cache_bytes(node) + row_bytes(node));
    int64_t cached_token = -1;
    const auto [begin, end] = chunk_range(ggml_nrows(node), params.ith(), params.nth());
    for (int64_t r = begin; r < end && !params.should_stop(); ++r) {
        const int64_t i1 = r % node->ne[1], i2 = r / node->ne[1] % node->ne[2],
                      i3 = r / (node->ne[1] * node->ne[2]);
        if (i2 != cached_token) {
            int32_t p;
            std::memcpy(&p, element_at(pos, i2, 0), sizeof p);
            rope.fill(p, cache);
            cached_token = i2;
        }
        const char * src_row = row_at(a, i1, i2, i3);
        char * dst_row = row_at(node, i1, i2, i3);
        if (!dense_f32(a)) load_row(a->type, src_row, a->nb[0], d, in);
        const float * x = dense_f32(a) ? reinterpret_cast<const float *>(src_row) : in;
        float * y = dense_f32(node) ? reinterpret_cast<float *>(dst_row) : out;
        rope.rotate(x, y, d, cache);
        if (y == out) store_row(node->type, out, dst_row, node->nb[0], d);
    }
}

}  // namespace

namespace kernels {
const Kernel rope{supports, workspace, compute};
}  // namespace kernels

}  // namespace ggx::cpu
