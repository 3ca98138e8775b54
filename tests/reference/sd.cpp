// The oracle of the sd pack's operators, written from ../shared/spec/sd-ops.md (sections 1, 3 and 5)
// and the pack's public header; see sd.h. Attributes are read from the nodes' attribute bytes in the
// layout the pack's schemas document (sd-ggml-ext.h and docs/sd-pack.md).
#include "reference/sd.h"

#include <ggml-ext.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "reference/reference.h"

namespace ggx::ref::sd {
namespace {

[[noreturn]] void fail(const ggml_tensor * node, const std::string & why) {
    throw Error(std::string("ggx::ref::sd: '") + node->name + "' (" +
                (ggml_ext_op_name(ggml_ext_node_op(node)) ? ggml_ext_op_name(ggml_ext_node_op(node)) : "?") +
                "): " + why);
}

int64_t rows_of(const ggml_tensor * t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

template <class T>
T attr(const ggml_tensor * node, size_t offset) {
    size_t size = 0;
    const void * bytes = ggml_ext_node_attrs(node, &size);
    if (!bytes || offset + sizeof(T) > size) fail(node, "attributes too short");
    T value;
    std::memcpy(&value, static_cast<const char *>(bytes) + offset, sizeof value);
    return value;
}

bool valid_group(int64_t g) { return g == 1 || g == 4 || g == 16 || g == 64 || g == 256; }

// ---- sd.rope_apply.v1 (sd-ops.md 1.3; partial rotation and split halves (j, j + P)) ------------

std::vector<double> rope_apply(const ggml_tensor * node, std::span<const std::vector<double>> in) {
    const ggml_tensor * a = node->src[0];
    const ggml_tensor * pe = node->src[1];
    if (!a || !pe) fail(node, "needs a and pe");
    const bool interleaved = attr<int32_t>(node, 0) != 0;
    const int64_t d = a->ne[0], h = a->ne[1], l = a->ne[2], b = a->ne[3], p = pe->ne[2];
    if (d % 2 != 0 || pe->ne[0] != 2 || pe->ne[1] != 2 || p < 1 || 2 * p > d || pe->ne[3] != l)
        fail(node, "shapes outside the operator's contract");
    const std::vector<double> & x = in[0];
    const std::vector<double> & m = in[1];
    // M[r][c] of pair j at token t: pe[c, r, j, t].
    const auto mat = [&](int64_t r, int64_t c, int64_t j, int64_t t) {
        return m[static_cast<size_t>(c + 2 * (r + 2 * (j + p * t)))];
    };
    std::vector<double> y(static_cast<size_t>(d * l * h * b));
    for (int64_t ib = 0; ib < b; ++ib)
        for (int64_t ih = 0; ih < h; ++ih)
            for (int64_t t = 0; t < l; ++t) {
                const double * row = x.data() + d * (ih + h * (t + l * ib));
                double * out = y.data() + d * (t + l * (ih + h * ib));
                for (int64_t i = 2 * p; i < d; ++i)
                    out[i] = row[i];
                for (int64_t j = 0; j < p; ++j) {
                    const int64_t i0 = interleaved ? 2 * j : j, i1 = interleaved ? 2 * j + 1 : j + p;
                    const double v0 = row[i0], v1 = row[i1];
                    if (interleaved) {
                        out[i0] = v0 * mat(0, 0, j, t) + v1 * mat(0, 1, j, t);
                        out[i1] = v0 * mat(1, 0, j, t) + v1 * mat(1, 1, j, t);
                    } else {
                        const double c = mat(0, 0, j, t), s = mat(1, 0, j, t);
                        out[i0] = v0 * c - v1 * s;
                        out[i1] = v0 * s + v1 * c;
                    }
                }
            }
    return y;
}

// ---- packed activations -------------------------------------------------------------------------

int64_t rows_pad(int64_t rows) { return (rows + 3) / 4 * 4; }
int64_t scale_rows(int64_t rows, int64_t k) { return (rows * 4 + k - 1) / k; }

std::vector<double> as_values(const std::vector<uint8_t> & bytes) {
    std::vector<double> v(bytes.size());
    for (size_t i = 0; i < bytes.size(); ++i)
        v[i] = static_cast<int8_t>(bytes[i]);
    return v;
}

uint8_t byte_of(double v) { return static_cast<uint8_t>(static_cast<int8_t>(v)); }

// Rows of codes and scales of a packed tensor of `rows` rows of k codes.
std::vector<QuantizedRow> unpack(std::span<const double> bytes, int64_t k, int64_t rows) {
    const size_t scales = static_cast<size_t>(k * rows_pad(rows));
    if (bytes.size() < scales + 4 * static_cast<size_t>(rows))
        throw Error("ggx::ref::sd: packed tensor too small");
    std::vector<QuantizedRow> out(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        QuantizedRow & q = out[static_cast<size_t>(r)];
        q.codes.resize(static_cast<size_t>(k));
        for (int64_t i = 0; i < k; ++i)
            q.codes[static_cast<size_t>(i)] = static_cast<int8_t>(bytes[static_cast<size_t>(r * k + i)]);
        uint8_t raw[4];
        for (int i = 0; i < 4; ++i)
            raw[i] = byte_of(bytes[scales + 4 * static_cast<size_t>(r) + static_cast<size_t>(i)]);
        std::memcpy(&q.scale, raw, sizeof q.scale);
    }
    return out;
}

std::vector<QuantizedRow> quantize_rows(std::span<const double> x, int64_t k, int64_t rows, int64_t g) {
    std::vector<QuantizedRow> out;
    out.reserve(static_cast<size_t>(rows));
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < k; ++i)
            row[static_cast<size_t>(i)] = static_cast<float>(x[static_cast<size_t>(r * k + i)]);
        out.push_back(quantize_row(row, g));
    }
    return out;
}

// ---- sd.quantize_i8_convrot.v1 (sd-ops.md 3.3) --------------------------------------------------

std::vector<double> quantize(const ggml_tensor * node, std::span<const std::vector<double>> in) {
    const ggml_tensor * a = node->src[0];
    const int64_t g = attr<int32_t>(node, 0);
    if (!a || !valid_group(g) || a->ne[0] % g != 0) fail(node, "input or group outside the contract");
    const int64_t k = a->ne[0], rows = rows_of(a);
    return as_values(pack(quantize_rows(in[0], k, rows, g), k));
}

// ---- sd.linear_i8.v1 (sd-ops.md 3.4, with the pack's plain I8 input kind) -----------------------

// The attributes: kind, group, requested, flags (int32 each), then ne1..ne3 of the activations.
constexpr int32_t kInputF32 = 0, kInputPacked = 1, kInputI8 = 2;
constexpr int32_t kHasWeightScale = 1, kHasBias = 2, kHasInputScale = 4;

std::vector<double> linear(const ggml_tensor * node, std::span<const std::vector<double>> in) {
    const int32_t kind = attr<int32_t>(node, 0), group = attr<int32_t>(node, 4),
                  flags = attr<int32_t>(node, 12);
    int64_t ne[3];
    for (int i = 0; i < 3; ++i)
        ne[i] = attr<int64_t>(node, 16 + 8 * static_cast<size_t>(i));
    const ggml_tensor * w = node->src[0];
    if (!w || !node->src[1]) fail(node, "needs a weight and activations");
    const int64_t k = w->ne[0], n = w->ne[1], rows = ne[0] * ne[1] * ne[2];
    int next = 2;
    const std::vector<double> * ws = (flags & kHasWeightScale) ? &in[static_cast<size_t>(next++)] : nullptr;
    const std::vector<double> * bias = (flags & kHasBias) ? &in[static_cast<size_t>(next++)] : nullptr;
    const std::vector<double> * xs = (flags & kHasInputScale) ? &in[static_cast<size_t>(next++)] : nullptr;

    std::vector<QuantizedRow> x;
    switch (kind) {
        case kInputF32:
            x = quantize_rows(in[1], k, rows, group <= 1 ? 1 : group);
            break;
        case kInputPacked:
            x = unpack(in[1], k, rows);
            break;
        case kInputI8:
            x.resize(static_cast<size_t>(rows));
            for (int64_t r = 0; r < rows; ++r) {
                QuantizedRow & q = x[static_cast<size_t>(r)];
                q.codes.resize(static_cast<size_t>(k));
                for (int64_t i = 0; i < k; ++i)
                    q.codes[static_cast<size_t>(i)] =
                        static_cast<int8_t>(in[1][static_cast<size_t>(r * k + i)]);
                q.scale = xs ? static_cast<float>((*xs)[static_cast<size_t>(r)]) : 1.0f;
            }
            break;
        default:
            fail(node, "unknown input kind " + std::to_string(kind));
    }
    std::vector<double> y(static_cast<size_t>(n * rows));
    for (int64_t r = 0; r < rows; ++r) {
        const QuantizedRow & q = x[static_cast<size_t>(r)];
        for (int64_t o = 0; o < n; ++o) {
            int64_t acc = 0;
            for (int64_t i = 0; i < k; ++i)
                acc += static_cast<int64_t>(in[0][static_cast<size_t>(o * k + i)]) *
                       q.codes[static_cast<size_t>(i)];
            float v = static_cast<float>(static_cast<int32_t>(acc));
            v = v * q.scale;
            if (ws) v = v * static_cast<float>((*ws)[static_cast<size_t>(o)]);
            if (bias) v = v + static_cast<float>((*bias)[static_cast<size_t>(o)]);
            y[static_cast<size_t>(o + n * r)] = v;
        }
    }
    return y;
}

// ---- sd.sage_attn.v1 and sd.sol_attn.v1 (sd-ops.md 5; Sol's selection per docs/sd-pack.md) -----

constexpr int64_t kSolTile = 64;  // tokens per KV tile and per query block
constexpr int64_t kSolDenseTiles = 2;

double dot(const double * a, const double * b, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i)
        s += a[i] * b[i];
    return s;
}

// The mean of n rows of d values (row stride d).
std::vector<double> mean_rows(const double * x, int64_t n, int64_t d) {
    std::vector<double> m(static_cast<size_t>(d), 0.0);
    for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < d; ++c)
            m[static_cast<size_t>(c)] += x[r * d + c];
    for (double & x_c : m)
        x_c /= static_cast<double>(n);
    return m;
}

// One softmax entry: `weight` tokens of logit `logit` and value row `value`.
struct Entry {
    double logit, weight;
    const double * value;
};

// sum_e w_e exp(l_e - max) value_e / sum_e w_e exp(l_e - max) into out (d values).
void softmax_average(const std::vector<Entry> & entries, int64_t d, double * out) {
    double m = -INFINITY;
    for (const Entry & e : entries)
        m = std::max(m, e.logit);
    double sum = 0.0;
    std::fill(out, out + d, 0.0);
    for (const Entry & e : entries) {
        const double p = e.weight * std::exp(e.logit - m);
        sum += p;
        for (int64_t c = 0; c < d; ++c)
            out[c] += p * e.value[c];
    }
    for (int64_t c = 0; c < d; ++c)
        out[c] /= sum;
}

// Softmax attention of q [d, tq, hq, b] over k, v [d, tk, hkv, b] into [d, hq, tq, b]; with sol set,
// the tiles Sol does not keep for a query block enter as their pooled summary.
std::vector<double> attend(const ggml_tensor * node, std::span<const std::vector<double>> in, bool sol) {
    const ggml_tensor *q = node->src[0], *k = node->src[1];
    if (!q || !k || !node->src[2]) fail(node, "needs q, k and v");
    const int64_t d = q->ne[0], tq = q->ne[1], hq = q->ne[2], tk = k->ne[1], hkv = k->ne[2], b = q->ne[3];
    if (k->ne[0] != d || hkv < 1 || hq % hkv != 0 || k->ne[3] != b || tk < 1)
        fail(node, "shapes outside the operator's contract");
    const double scale = attr<float>(node, 0);
    const double tau = sol ? attr<float>(node, 4) : 0.0;
    const int64_t tiles = (tk + kSolTile - 1) / kSolTile;
    std::vector<double> y(static_cast<size_t>(d * hq * tq * b));
    for (int64_t ib = 0; ib < b; ++ib)
        for (int64_t h = 0; h < hq; ++h) {
            const int64_t g = ib * hkv + h / (hq / hkv);
            const double * qh = in[0].data() + (ib * hq + h) * tq * d;
            const double * kh = in[1].data() + g * tk * d;
            const double * vh = in[2].data() + g * tk * d;
            std::vector<std::vector<double>> kbar, vbar;
            for (int64_t t = 0; sol && t < tiles; ++t) {
                const int64_t n = std::min(kSolTile, tk - t * kSolTile);
                kbar.push_back(mean_rows(kh + t * kSolTile * d, n, d));
                vbar.push_back(mean_rows(vh + t * kSolTile * d, n, d));
            }
            std::vector<bool> keep(static_cast<size_t>(tiles), true);
            for (int64_t i = 0; i < tq; ++i) {
                if (sol && i % kSolTile == 0 && tiles > kSolDenseTiles) {  // the block's selection
                    const std::vector<double> qbar = mean_rows(qh + i * d, std::min(kSolTile, tq - i), d);
                    std::vector<double> score(static_cast<size_t>(tiles));
                    for (int64_t t = 0; t < tiles; ++t)
                        score[static_cast<size_t>(t)] =
                            scale * dot(qbar.data(), kbar[static_cast<size_t>(t)].data(), d);
                    const auto best = std::max_element(score.begin(), score.end()) - score.begin();
                    double z = 0.0;
                    for (int64_t t = 0; t < tiles; ++t)
                        z += static_cast<double>(std::min(kSolTile, tk - t * kSolTile)) *
                             std::exp(score[static_cast<size_t>(t)] - score[static_cast<size_t>(best)]);
                    for (int64_t t = 0; t < tiles; ++t)
                        keep[static_cast<size_t>(t)] =
                            t == best || static_cast<double>(tk) *
                                                 std::exp(score[static_cast<size_t>(t)] -
                                                          score[static_cast<size_t>(best)]) /
                                                 z >=
                                             tau;
                }
                const double * qi = qh + i * d;
                std::vector<Entry> entries;
                for (int64_t t = 0; t < tiles; ++t) {
                    const int64_t j0 = t * kSolTile, n = std::min(kSolTile, tk - j0);
                    if (!keep[static_cast<size_t>(t)]) {
                        const std::vector<double> & kb = kbar[static_cast<size_t>(t)];
                        entries.push_back({scale * dot(qi, kb.data(), d), static_cast<double>(n),
                                           vbar[static_cast<size_t>(t)].data()});
                        continue;
                    }
                    for (int64_t j = j0; j < j0 + n; ++j)
                        entries.push_back({scale * dot(qi, kh + j * d, d), 1.0, vh + j * d});
                }
                softmax_average(entries, d, y.data() + d * (h + hq * (i + tq * ib)));
            }
        }
    return y;
}

}  // namespace

std::vector<double> attention(const ggml_tensor * node, std::span<const std::vector<double>> inputs) {
    const char * name = ggml_ext_op_name(ggml_ext_node_op(node));
    if (!name || (std::strcmp(name, kSage) != 0 && std::strcmp(name, kSol) != 0))
        fail(node, "not an attention node of the sd pack");
    return attend(node, inputs, std::strcmp(name, kSol) == 0);
}

void convrot_row(float * row, int64_t k, int64_t g) {
    const float norm = 1.0f / std::sqrt(static_cast<float>(g));  // an exact power of two for g = 4^n
    for (int64_t base = 0; base < k; base += g) {
        float * v = row + base;
        for (int64_t i = 0; i < g; ++i)
            v[i] = v[i] * norm;
        for (int64_t s = 1; s < g; s *= 4)
            for (int64_t start = 0; start < g; start += 4 * s)
                for (int64_t j = 0; j < s; ++j) {
                    float & a = v[start + j];
                    float & b = v[start + j + s];
                    float & c = v[start + j + 2 * s];
                    float & d = v[start + j + 3 * s];
                    const float a0 = a, b0 = b, c0 = c, d0 = d;
                    a = a0 + b0 + c0 - d0;
                    b = a0 + b0 - c0 + d0;
                    c = a0 - b0 + c0 + d0;
                    d = -a0 + b0 + c0 + d0;
                }
    }
}

QuantizedRow quantize_row(std::span<const float> input, int64_t g) {
    std::vector<float> v(input.begin(), input.end());
    convrot_row(v.data(), static_cast<int64_t>(v.size()), g);
    float amax = 0.0f;
    for (float x : v)
        amax = std::max(amax, std::fabs(x));
    QuantizedRow q;
    q.scale = amax / 127.0f;
    const float inv = q.scale == 0.0f ? 0.0f : 1.0f / q.scale;
    q.codes.resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        const float scaled = std::clamp(v[i] * inv, -127.0f, 127.0f);
        q.codes[i] = static_cast<int8_t>(std::nearbyint(scaled));  // half-even in the default mode
    }
    return q;
}

std::vector<uint8_t> pack(const std::vector<QuantizedRow> & rows, int64_t k) {
    const int64_t n = static_cast<int64_t>(rows.size());
    std::vector<uint8_t> bytes(static_cast<size_t>(k * (rows_pad(n) + scale_rows(n, k))), 0);
    for (int64_t r = 0; r < n; ++r) {
        const QuantizedRow & q = rows[static_cast<size_t>(r)];
        std::memcpy(bytes.data() + r * k, q.codes.data(), static_cast<size_t>(k));
        std::memcpy(bytes.data() + k * rows_pad(n) + 4 * r, &q.scale, sizeof q.scale);
    }
    return bytes;
}

std::vector<double> dequantize_packed(const ggml_tensor * node, std::span<const double> bytes) {
    const ggml_tensor * a = node->src[0];
    if (!a) fail(node, "no input");
    const int64_t k = a->ne[0], rows = rows_of(a);
    std::vector<double> out;
    out.reserve(static_cast<size_t>(k * rows));
    for (const QuantizedRow & q : unpack(bytes, k, rows))
        for (int8_t c : q.codes)
            out.push_back(static_cast<double>(c) * q.scale);
    return out;
}

void register_ops() {
    register_extension(kRopeApply, rope_apply);
    register_extension(kQuantize, quantize);
    register_extension(kLinear, linear);
    register_extension(kSage, attention);
    register_extension(kSol, attention);
}

}  // namespace ggx::ref::sd
