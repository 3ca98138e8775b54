#include "ggx-run/model.h"

#include <ggml-alloc.h>
#include <gguf.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "sd-ggml-ext.h"

namespace ggx::run {

std::string weight_type_name(WeightType type) {
    return type.int8_convrot() ? "int8-convrot" : ggml_type_name(type.type);
}

bool parse_weight_type(const std::string & name, WeightType & type) {
    if (name == "int8-convrot") {
        type = {};
        return true;
    }
    auto lower = [](std::string text) {
        for (char & c : text)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return text;
    };
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const auto candidate = static_cast<ggml_type>(t);
        if (lower(name) != lower(ggml_type_name(candidate))) continue;  // q4_k names q4_K
        if (!ggml_is_float_type(candidate) && !ggml_is_quantized(candidate)) return false;
        // ggml_dequantize_row refuses a type ggx has no conversion for.
        std::vector<uint8_t> block(ggml_type_size(candidate));
        std::vector<float> values(static_cast<size_t>(ggml_blck_size(candidate)));
        if (!ggml_dequantize_row(candidate, block.data(), values.data(), ggml_blck_size(candidate))) return false;
        type.type = candidate;
        return true;
    }
    return false;
}

bool ModelConfig::derive(std::string & error) {
    if (layers < 1 || hidden < 1 || heads < 1 || tokens < 1) {
        error = "--layers, --hidden, --heads and --tokens must be positive";
        return false;
    }
    if (hidden % heads != 0 || (hidden / heads) % 8 != 0) {
        error = "--hidden must be --heads times a multiple of 8 (the head dimension)";
        return false;
    }
    if (hidden % 64 != 0) {
        error = "--hidden must be a multiple of 64 (q8_0 blocks and ConvRot groups)";
        return false;
    }
    head_dim = hidden / heads;
    // SwiGLU hidden size: 8/3 of the model width rounded up to a multiple of 256 (as LLaMA-style
    // and Z-Image-style MLPs size it), so ConvRot groups of 256 divide it.
    if (ffn == 0) ffn = (hidden * 8 / 3 + 255) / 256 * 256;
    // 2-D patch grid as close to square as tokens allow.
    grid_h = 1;
    for (int h = 1; h * h <= tokens; ++h)
        if (tokens % h == 0) grid_h = h;
    grid_w = tokens / grid_h;
    // RoPE axes like Z-Image's {32, 48, 48} for head_dim 128: 3/8 of the pairs for each image axis.
    if (axes_dim[0] == 0 && axes_dim[1] == 0 && axes_dim[2] == 0) {
        axes_dim[1] = axes_dim[2] = head_dim * 3 / 8 / 2 * 2;
        axes_dim[0] = head_dim - 2 * axes_dim[1];
    }
    if (axes_dim[0] < 0 || axes_dim[1] < 0 || axes_dim[2] < 0 || axes_dim[0] % 2 || axes_dim[1] % 2 ||
        axes_dim[2] % 2 || axes_dim[0] + axes_dim[1] + axes_dim[2] != head_dim) {
        error = "RoPE axes must be even and sum to the head dimension " + std::to_string(head_dim);
        return false;
    }
    if (ffn < 1 || patch_dim < 1 || time_dim < 2 || time_dim % 2) {
        error = "bad ffn, patch or timestep embedding size";
        return false;
    }
    return true;
}

Model::~Model() {
    if (buffer) ggml_backend_buffer_free(buffer);
    if (ctx) ggml_free(ctx);
}

Forward::~Forward() {
    if (ctx) ggml_free(ctx);
}

namespace {

// Deterministic random numbers independent of the standard library's distributions.
struct Rng {
    uint64_t state;
    explicit Rng(uint64_t seed) : state(seed) {}
    uint64_t next() {  // splitmix64
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    float uniform() { return static_cast<float>(next() >> 40) * (2.0f / 16777216.0f) - 1.0f; }  // [-1, 1)
    float normal() {  // sum of four uniforms, rescaled to unit variance: close enough to Gaussian
        return (uniform() + uniform() + uniform() + uniform()) * std::sqrt(0.75f);
    }
};

uint64_t mix(uint64_t seed, uint64_t id) { return Rng(seed ^ (id * 0xD1B54A32D192ED03ull)).next(); }

int convrot_group(int64_t k) {
    for (int g : {256, 64, 16, 4})
        if (k % g == 0) return g;
    return 1;
}

// A weight to fill once the buffer exists: its master values come from the seed and id.
struct Pending {
    enum Kind { kMatrix, kBias, kNorm } kind;
    uint64_t id;
    std::string name;
    ggml_tensor * tensor;
    ggml_tensor * scale;  // I8 matrices
    int group;
    float amplitude;
};

// The type of a dense linear's weight with `in` inputs: the chosen one, or F16 where a block format's
// blocks do not divide the rows (as converters keep such tensors in a float type); int8-convrot
// without the pack runs F32 on the dequantized weights.
ggml_type dense_type(WeightType weights, int64_t in) {
    if (weights.int8_convrot()) return GGML_TYPE_F32;
    return in % ggml_blck_size(weights.type) == 0 ? weights.type : GGML_TYPE_F16;
}

// A weight read from a file keeps the file's type when it is one the linears take: a float type or a
// block format ggx converts whose blocks divide the rows (files converted by other tools choose per
// tensor).
std::optional<ggml_type> file_type(const ModelFile * file, const std::string & name, int64_t in) {
    const ggml_tensor * t = file ? ggml_get_tensor(file->tensors.get(), name.c_str()) : nullptr;
    if (!t || t->ne[0] != in) return std::nullopt;
    WeightType type;
    if (!parse_weight_type(ggml_type_name(t->type), type) || in % ggml_blck_size(t->type) != 0) return std::nullopt;
    return t->type;
}

struct Builder {
    Model & m;
    const ModelFile * file;
    std::vector<Pending> pending;
    uint64_t next_id = 1;

    Linear linear(const std::string & name, int64_t in, int64_t out, bool bias, float gain = 1.0f) {
        Linear l;
        const WeightType weights = m.cfg.weights;
        const float amp = gain * std::sqrt(3.0f / static_cast<float>(in));  // variance gain^2 / in
        const uint64_t id = next_id++;
        if (weights.int8_convrot() && m.ext) {
            l.w = ggml_new_tensor_2d(m.ctx, GGML_TYPE_I8, in, out);
            l.scale = ggml_new_tensor_1d(m.ctx, GGML_TYPE_F32, out);
            l.group = convrot_group(in);
        } else {
            const std::optional<ggml_type> stored =
                weights.int8_convrot() ? std::nullopt : file_type(file, name + ".weight", in);
            l.w = ggml_new_tensor_2d(m.ctx, stored.value_or(dense_type(weights, in)), in, out);
            l.group = weights.int8_convrot() ? convrot_group(in) : 0;
        }
        pending.push_back({Pending::kMatrix, id, name + ".weight", l.w, l.scale, l.group, amp});
        if (bias) {
            l.b = ggml_new_tensor_1d(m.ctx, GGML_TYPE_F32, out);
            pending.push_back({Pending::kBias, id, name + ".bias", l.b, nullptr, 0, 0.02f});
        }
        return l;
    }

    ggml_tensor * norm_weight(const std::string & name, int64_t n) {
        ggml_tensor * t = ggml_new_tensor_1d(m.ctx, GGML_TYPE_F32, n);
        pending.push_back({Pending::kNorm, next_id++, name, t, nullptr, 0, 0.1f});
        return t;
    }
};

void fill(const Pending & p, uint64_t seed, WeightType type, bool ext) {
    Rng rng(mix(seed, p.id * 4 + static_cast<uint64_t>(p.kind)));
    const int64_t k = p.tensor->ne[0], n = p.tensor->ne[1];
    if (p.kind != Pending::kMatrix) {
        std::vector<float> v(static_cast<size_t>(k));
        for (float & f : v)
            f = (p.kind == Pending::kNorm ? 1.0f : 0.0f) + p.amplitude * rng.uniform();
        ggml_backend_tensor_set(p.tensor, v.data(), 0, ggml_nbytes(p.tensor));
        return;
    }
    std::vector<float> row(static_cast<size_t>(k));
    std::vector<uint8_t> bytes(ggml_nbytes(p.tensor));
    std::vector<float> scales(static_cast<size_t>(n));
    const size_t row_bytes = p.tensor->nb[1];
    for (int64_t o = 0; o < n; ++o) {
        for (float & f : row)
            f = p.amplitude * rng.uniform();
        uint8_t * dst = bytes.data() + static_cast<size_t>(o) * row_bytes;
        if (type.int8_convrot()) {
            // Offline ConvRot quantization (sd-ops.md 3.1): W_rot = W H, per-row absmax scale.
            convrot_rows(row.data(), k, p.group);
            float amax = 0.0f;
            for (float f : row)
                amax = std::max(amax, std::fabs(f));
            const float s = amax / 127.0f, inv = s == 0.0f ? 0.0f : 1.0f / s;
            for (int64_t i = 0; i < k; ++i) {
                const float q =
                    std::clamp(std::nearbyint(row[static_cast<size_t>(i)] * inv), -127.0f, 127.0f);
                if (ext)
                    reinterpret_cast<int8_t *>(dst)[i] = static_cast<int8_t>(q);
                else
                    row[static_cast<size_t>(i)] = q * s;  // dequantized, still rotated
            }
            scales[static_cast<size_t>(o)] = s;
            if (!ext) {
                convrot_rows(row.data(), k, p.group);  // back to the input basis (H H = I)
                std::memcpy(dst, row.data(), row_bytes);
            }
        } else {
            ggml_quantize_row(p.tensor->type, row.data(), dst, k);
        }
    }
    ggml_backend_tensor_set(p.tensor, bytes.data(), 0, bytes.size());
    if (p.scale) ggml_backend_tensor_set(p.scale, scales.data(), 0, ggml_nbytes(p.scale));
}

std::string shape_text(const int64_t * ne, int n) {
    std::string s = "[";
    for (int i = 0; i < n; ++i)
        s += std::to_string(ne[i]) + (i + 1 < n ? ", " : "]");
    return s;
}

// Copies p's values from the file, checking type and shape. For the ext-off variant of INT8 weights
// the I8 codes and the row scales are dequantized and rotated back to the input basis.
bool load(const Pending & p, const ModelFile & file, WeightType type, bool ext, std::string & error) {
    const ggml_tensor * t = ggml_get_tensor(file.tensors.get(), p.name.c_str());
    if (!t) {
        error = "the model has no tensor '" + p.name + "'";
        return false;
    }
    const int64_t k = p.tensor->ne[0], n = p.tensor->ne[1];
    const bool dequantize = p.kind == Pending::kMatrix && type.int8_convrot() && !ext;
    const ggml_type want = dequantize ? GGML_TYPE_I8 : p.tensor->type;
    const int64_t ne[2] = {k, n};
    if (t->type != want || t->ne[0] != k || t->ne[1] != n || t->ne[2] != 1 || t->ne[3] != 1) {
        error = "tensor '" + p.name + "' is " + ggml_type_name(t->type) + " " +
                shape_text(t->ne, ggml_n_dims(t)) + ", expected " + ggml_type_name(want) + " " +
                shape_text(ne, p.kind == Pending::kMatrix ? 2 : 1);
        return false;
    }
    if (p.kind == Pending::kMatrix && type.int8_convrot()) {
        const std::string module = p.name.substr(0, p.name.size() - std::string(".weight").size());
        const ggml_tensor * cq = ggml_get_tensor(file.tensors.get(), (module + ".comfy_quant").c_str());
        const std::string json = cq ? std::string(static_cast<const char *>(cq->data), ggml_nbytes(cq)) : "";
        const size_t at = json.find("\"convrot_groupsize\":");
        const int group = at == std::string::npos ? -1 : std::atoi(json.c_str() + at + 20);
        if (group != p.group) {
            error = "tensor '" + module + ".comfy_quant' must give convrot_groupsize " +
                    std::to_string(p.group) + " (the largest power of 4 up to 256 dividing the input size)";
            return false;
        }
    }
    const ggml_tensor * s = nullptr;
    if (p.scale || dequantize) {
        s = ggml_get_tensor(file.tensors.get(), (p.name + "_scale").c_str());
        if (!s || s->type != GGML_TYPE_F32 || ggml_nelements(s) != n) {
            error =
                "tensor '" + p.name + "_scale' is missing or not F32 with " + std::to_string(n) + " values";
            return false;
        }
    }
    if (!dequantize) {
        ggml_backend_tensor_set(p.tensor, t->data, 0, ggml_nbytes(p.tensor));
        if (p.scale) ggml_backend_tensor_set(p.scale, s->data, 0, ggml_nbytes(p.scale));
        return true;
    }
    std::vector<float> w(static_cast<size_t>(k * n));
    const auto * q = static_cast<const int8_t *>(t->data);
    for (int64_t o = 0; o < n; ++o) {
        float scale;
        std::memcpy(&scale, static_cast<const uint8_t *>(s->data) + 4 * o, sizeof scale);
        float * row = &w[static_cast<size_t>(o * k)];
        for (int64_t i = 0; i < k; ++i)
            row[i] = static_cast<float>(q[o * k + i]) * scale;
        convrot_rows(row, k, p.group);
    }
    ggml_backend_tensor_set(p.tensor, w.data(), 0, ggml_nbytes(p.tensor));
    return true;
}

}  // namespace

void convrot_rows(float * row, int64_t n, int g) {
    if (g <= 1) return;
    const float norm = 1.0f / std::sqrt(static_cast<float>(g));
    for (int64_t base = 0; base + g <= n; base += g) {
        float * v = row + base;
        for (int i = 0; i < g; ++i)
            v[i] *= norm;
        for (int s = 1; s < g; s *= 4)
            for (int b = 0; b < g; b += 4 * s)
                for (int j = 0; j < s; ++j) {
                    float & a = v[b + j];
                    float & bb = v[b + j + s];
                    float & c = v[b + j + 2 * s];
                    float & d = v[b + j + 3 * s];
                    const float y0 = a + bb + c - d, y1 = a + bb - c + d, y2 = a - bb + c + d,
                                y3 = -a + bb + c + d;
                    a = y0, bb = y1, c = y2, d = y3;
                }
    }
}

bool create_model(Model & m, const ModelConfig & cfg, bool ext, ggml_backend_t backend, std::string & error,
                  const ModelFile * file) {
    m.cfg = cfg;
    m.ext = ext;
    const size_t n_tensors = 16 + static_cast<size_t>(cfg.layers) * 24;
    m.ctx = ggml_init({ggml_tensor_overhead() * n_tensors, nullptr, true});
    if (!m.ctx) {
        error = "ggml_init failed";
        return false;
    }
    Builder b{m, file, {}, 1};
    const int64_t h = cfg.hidden;
    m.patch_embed = b.linear("x_embedder", cfg.patch_dim, h, true);
    m.t_in = b.linear("t_embedder.mlp.0", cfg.time_dim, h, true);
    m.t_out = b.linear("t_embedder.mlp.2", h, h, true);
    for (int l = 0; l < cfg.layers; ++l) {
        const std::string p = "layers." + std::to_string(l) + ".";
        Block blk;
        blk.mod = b.linear(p + "adaLN_modulation", h, 6 * h, true, 0.5f);
        blk.wq = b.linear(p + "attention.to_q", h, h, false);
        blk.wk = b.linear(p + "attention.to_k", h, h, false);
        blk.wv = b.linear(p + "attention.to_v", h, h, false);
        blk.wo = b.linear(p + "attention.to_out", h, h, true);
        blk.q_norm = b.norm_weight(p + "attention.q_norm.weight", cfg.head_dim);
        blk.k_norm = b.norm_weight(p + "attention.k_norm.weight", cfg.head_dim);
        blk.w1 = b.linear(p + "feed_forward.w1", h, cfg.ffn, false);
        blk.w3 = b.linear(p + "feed_forward.w3", h, cfg.ffn, false);
        blk.w2 = b.linear(p + "feed_forward.w2", cfg.ffn, h, false);
        m.blocks.push_back(blk);
    }
    m.final_mod = b.linear("final_layer.adaLN_modulation", h, 2 * h, true, 0.5f);
    m.final_out = b.linear("final_layer.linear", h, cfg.patch_dim, true);
    m.buffer = ggml_backend_alloc_ctx_tensors(m.ctx, backend);
    if (!m.buffer) {
        error = std::string("allocating the weights failed: ") + ggml_backend_get_last_error();
        return false;
    }
    m.weight_bytes = ggml_backend_buffer_get_size(m.buffer);
    for (const Pending & p : b.pending) {
        if (file) {
            if (!load(p, *file, cfg.weights, ext, error)) return false;
        } else {
            fill(p, cfg.seed, cfg.weights, ext);
        }
        m.named.push_back({p.name, p.tensor, p.group});
        if (p.scale) m.named.push_back({p.name + "_scale", p.scale, 0});
    }
    return true;
}

namespace {

struct GraphBuilder {
    ggml_context * ctx;
    const Model & m;
    Forward & f;
    ggml_tensor * cursor = nullptr;  // the last tensor of ctx given a stage

    // Gives every tensor created since the last call the stage name.
    void tag(const char * stage) {
        for (ggml_tensor * t = cursor ? ggml_get_next_tensor(ctx, cursor) : ggml_get_first_tensor(ctx); t;
             t = ggml_get_next_tensor(ctx, t)) {
            f.stage.emplace(t, stage);
            cursor = t;
        }
    }

    ggml_tensor * linear(ggml_tensor * x, const Linear & l) {
        tag(kStageOther);
        ggml_tensor * y = nullptr;
        if (l.scale) {
            y = ggml_ext_linear_i8_tensorwise(ctx, x, l.w, l.scale, l.b, l.group, 1.0f);
        } else {
            y = ggml_mul_mat(ctx, l.w, x);
            if (l.b) y = ggml_add(ctx, y, l.b);
        }
        tag(kStageLinear);
        return y;
    }

    // Chunk i of a modulation vector [n * hidden, 1] as [hidden].
    ggml_tensor * chunk(ggml_tensor * mod, int i) {
        const int64_t h = m.cfg.hidden;
        return ggml_view_1d(ctx, mod, h, static_cast<size_t>(i * h) * sizeof(float));
    }

    // adaLN: LayerNorm without affine, then * (1 + scale) + shift.
    ggml_tensor * modulate(ggml_tensor * x, ggml_tensor * shift, ggml_tensor * scale) {
        ggml_tensor * n = ggml_norm(ctx, x, 1e-6f);
        return ggml_add(ctx, ggml_mul(ctx, n, ggml_scale_bias(ctx, scale, 1.0f, 1.0f)), shift);
    }

    // Per-head RMSNorm -> Mul(weight) -> RoPE of a projection [hidden, T]: [D, T, H].
    ggml_tensor * qk(ggml_tensor * proj, ggml_tensor * norm, ggml_tensor * pe) {
        const ModelConfig & c = m.cfg;
        tag(kStageOther);
        ggml_tensor * a = ggml_reshape_4d(ctx, proj, c.head_dim, c.heads, c.tokens, 1);
        a = ggml_mul(ctx, ggml_rms_norm(ctx, a, 1e-6f), norm);
        a = m.ext ? ggml_rope_apply(ctx, a, pe, true) : sd_ggml_rope_apply_decomposed(ctx, a, pe, true);
        tag(kStageRope);
        return a;
    }

    ggml_tensor * block(ggml_tensor * x, const Block & blk, ggml_tensor * c_act, ggml_tensor * pe) {
        const ModelConfig & c = m.cfg;
        ggml_tensor * mod = linear(c_act, blk.mod);  // [6 * hidden, 1]
        ggml_tensor * h = modulate(x, chunk(mod, 0), chunk(mod, 1));
        ggml_tensor * q = qk(linear(h, blk.wq), blk.q_norm, pe);
        ggml_tensor * k = qk(linear(h, blk.wk), blk.k_norm, pe);
        ggml_tensor * v = ggml_reshape_4d(ctx, linear(h, blk.wv), c.head_dim, c.heads, c.tokens, 1);
        v = ggml_permute(ctx, v, 0, 2, 1, 3);  // [D, T, H] view
        tag(kStageOther);
        ggml_tensor * att = ggml_flash_attn_ext(ctx, q, k, v, nullptr,
                                                1.0f / std::sqrt(static_cast<float>(c.head_dim)), 0.0f, 0.0f);
        tag(kStageAttention);
        att = ggml_reshape_2d(ctx, att, c.hidden, c.tokens);
        x = ggml_add(ctx, x, ggml_mul(ctx, linear(att, blk.wo), chunk(mod, 2)));
        h = modulate(x, chunk(mod, 3), chunk(mod, 4));
        ggml_tensor * g = ggml_swiglu_split(ctx, linear(h, blk.w1), linear(h, blk.w3));
        return ggml_add(ctx, x, ggml_mul(ctx, linear(g, blk.w2), chunk(mod, 5)));
    }
};

}  // namespace

bool build_forward(Forward & f, const Model & m, std::string & error) {
    const ModelConfig & c = m.cfg;
    const size_t graph_size = 256 + static_cast<size_t>(c.layers) * 160;
    f.ctx =
        ggml_init({ggml_tensor_overhead() * graph_size * 2 + ggml_graph_overhead_custom(graph_size, false),
                   nullptr, true});
    if (!f.ctx) {
        error = "ggml_init failed";
        return false;
    }
    ggml_context * ctx = f.ctx;
    f.x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, c.patch_dim, c.tokens);
    f.t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    f.pe = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2, 2, c.head_dim / 2, c.tokens);
    ggml_set_name(f.x, "latent");
    ggml_set_name(f.t, "timestep");
    ggml_set_name(f.pe, "pe");
    for (ggml_tensor * t : {f.x, f.t, f.pe})
        ggml_set_input(t);

    GraphBuilder g{ctx, m, f};
    // Conditioning: sinusoidal timestep embedding -> MLP -> c; every modulation reads silu(c).
    ggml_tensor * temb = ggml_timestep_embedding(ctx, f.t, c.time_dim, 10000);
    ggml_tensor * cond = g.linear(ggml_silu(ctx, g.linear(temb, m.t_in)), m.t_out);
    ggml_tensor * c_act = ggml_silu(ctx, cond);

    ggml_tensor * x = g.linear(f.x, m.patch_embed);  // [hidden, T]
    for (const Block & blk : m.blocks)
        x = g.block(x, blk, c_act, f.pe);
    ggml_tensor * fm = g.linear(c_act, m.final_mod);
    f.out = g.linear(g.modulate(x, g.chunk(fm, 0), g.chunk(fm, 1)), m.final_out);
    if (!f.out) {
        error = std::string("graph construction failed: ") + (ggml_get_error(ctx) ? ggml_get_error(ctx) : "");
        return false;
    }
    g.tag(kStageOther);
    ggml_set_name(f.out, "velocity");
    ggml_set_output(f.out);
    f.graph = ggml_new_graph_custom(ctx, graph_size, false);
    ggml_build_forward_expand(f.graph, f.out);
    if (!ggml_graph_is_valid(f.graph)) {
        error = std::string("graph construction failed: ") + (ggml_get_error(ctx) ? ggml_get_error(ctx) : "");
        return false;
    }
    return true;
}

namespace {
constexpr const char * kArch = "ggx-dit";
}

bool export_model(const Model & m, const std::string & path, std::string & error) {
    if (!m.ext) {
        error = "export_model needs the ext variant of the model";
        return false;
    }
    const ModelConfig & c = m.cfg;
    gguf_context_ptr out(gguf_init_empty());
    gguf_context * g = out.get();
    gguf_set_val_str(g, "general.architecture", kArch);
    gguf_set_val_str(g, "general.name", "ggx-run built-in DiT (synthetic weights)");
    gguf_set_val_u32(g, "ggx-dit.block_count", static_cast<uint32_t>(c.layers));
    gguf_set_val_u32(g, "ggx-dit.hidden_size", static_cast<uint32_t>(c.hidden));
    gguf_set_val_u32(g, "ggx-dit.head_count", static_cast<uint32_t>(c.heads));
    gguf_set_val_u32(g, "ggx-dit.ffn_size", static_cast<uint32_t>(c.ffn));
    gguf_set_val_u32(g, "ggx-dit.patch_dim", static_cast<uint32_t>(c.patch_dim));
    gguf_set_val_u32(g, "ggx-dit.time_dim", static_cast<uint32_t>(c.time_dim));
    gguf_set_val_f32(g, "ggx-dit.rope.theta", c.rope_theta);
    const int32_t axes[3] = {c.axes_dim[0], c.axes_dim[1], c.axes_dim[2]};
    gguf_set_arr_data(g, "ggx-dit.rope.axes_dim", GGUF_TYPE_INT32, axes, 3);
    gguf_set_val_str(g, "ggx-dit.weight_type", weight_type_name(c.weights).c_str());
    gguf_set_val_u64(g, "ggx-dit.seed", c.seed);
    // The file's tensors, under their GGUF names, with host copies of their data (until written).
    ggml_context_ptr infos(ggml_init({ggml_tensor_overhead() * m.named.size() * 2, nullptr, true}));
    std::vector<std::vector<uint8_t>> data;
    data.reserve(m.named.size() * 2);
    auto add = [&](const std::string & name, ggml_type type, const int64_t * ne, std::vector<uint8_t> bytes) {
        ggml_tensor * t = ggml_new_tensor(infos.get(), type, ne[1] > 1 ? 2 : 1, ne);
        ggml_set_name(t, name.c_str());
        data.push_back(std::move(bytes));
        gguf_add_tensor(g, t);
        gguf_set_tensor_data(g, name.c_str(), data.back().data());
    };
    for (const Model::Named & n : m.named) {
        const ggml_tensor * t = n.tensor;
        std::vector<uint8_t> bytes(ggml_nbytes(t));
        ggml_backend_tensor_get(t, bytes.data(), 0, bytes.size());
        add(n.name, t->type, t->ne, std::move(bytes));
        const std::string suffix = ".weight";
        if (t->type == GGML_TYPE_I8 && n.name.ends_with(suffix)) {
            // ComfyUI's int8_tensorwise marker (sd-ops.md 3.1): the JSON bytes, as I8 (GGUF has no U8
            // tensors).
            const std::string json =
                "{\"format\":\"int8_tensorwise\",\"convrot\":" + std::string(n.group > 1 ? "true" : "false") +
                ",\"convrot_groupsize\":" + std::to_string(n.group) + "}";
            const int64_t ne[2] = {static_cast<int64_t>(json.size()), 1};
            add(n.name.substr(0, n.name.size() - suffix.size()) + ".comfy_quant", GGML_TYPE_I8, ne,
                std::vector<uint8_t>(json.begin(), json.end()));
        }
    }
    if (gguf_write_to_file(g, path.c_str(), false)) return true;
    error = ggml_backend_get_last_error();
    return false;
}

bool ModelFile::open(const std::string & path, std::string & error) {
    ggml_context * data = nullptr;
    gguf.reset(gguf_init_from_file(path.c_str(), {false, &data}));
    tensors.reset(data);
    if (!gguf) error = ggml_backend_get_last_error();
    return gguf != nullptr;
}

namespace {

// An integer of type at p; nullopt when the type is not an integer (or a u64 past INT64_MAX).
std::optional<int64_t> integer_at(gguf_type type, const void * p) {
    auto load = [p](auto v) {
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    switch (type) {
        case GGUF_TYPE_UINT8:
            return load(uint8_t{});
        case GGUF_TYPE_INT8:
            return load(int8_t{});
        case GGUF_TYPE_UINT16:
            return load(uint16_t{});
        case GGUF_TYPE_INT16:
            return load(int16_t{});
        case GGUF_TYPE_UINT32:
            return load(uint32_t{});
        case GGUF_TYPE_INT32:
            return load(int32_t{});
        case GGUF_TYPE_INT64:
            return load(int64_t{});
        case GGUF_TYPE_UINT64: {
            const uint64_t v = load(uint64_t{});
            if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
            return static_cast<int64_t>(v);
        }
        default:
            return std::nullopt;
    }
}

// The id of key, or -1 with error saying it is absent.
int64_t key_id(const gguf_context * g, const char * key, std::string & error) {
    const int64_t id = gguf_find_key(g, key);
    if (id < 0) error = "absent";
    return id;
}

std::string type_of(const gguf_context * g, int64_t id) {
    const gguf_type type = gguf_get_kv_type(g, id);
    if (type != GGUF_TYPE_ARRAY) return gguf_type_name(type);
    return std::string("arr of ") + gguf_type_name(gguf_get_arr_type(g, id));
}

std::optional<std::string> get_string(const gguf_context * g, const char * key, std::string & error) {
    const int64_t id = key_id(g, key, error);
    if (id < 0) return std::nullopt;
    if (gguf_get_kv_type(g, id) != GGUF_TYPE_STRING) {
        error = "has type " + type_of(g, id) + ", expected str";
        return std::nullopt;
    }
    return gguf_get_val_str(g, id);
}

std::optional<int64_t> get_int(const gguf_context * g, const char * key, std::string & error) {
    const int64_t id = key_id(g, key, error);
    if (id < 0) return std::nullopt;
    const gguf_type type = gguf_get_kv_type(g, id);
    const std::optional<int64_t> v = type == GGUF_TYPE_ARRAY || type == GGUF_TYPE_STRING
                                         ? std::nullopt
                                         : integer_at(type, gguf_get_val_data(g, id));
    if (!v) error = "has type " + type_of(g, id) + ", expected an integer";
    return v;
}

std::optional<double> get_float(const gguf_context * g, const char * key, std::string & error) {
    const int64_t id = key_id(g, key, error);
    if (id < 0) return std::nullopt;
    const gguf_type type = gguf_get_kv_type(g, id);
    if (type == GGUF_TYPE_FLOAT32) return gguf_get_val_f32(g, id);
    if (type == GGUF_TYPE_FLOAT64) return gguf_get_val_f64(g, id);
    error = "has type " + type_of(g, id) + ", expected f32 or f64";
    return std::nullopt;
}

std::optional<std::vector<int64_t>> get_int_array(const gguf_context * g, const char * key,
                                                  std::string & error) {
    const int64_t id = key_id(g, key, error);
    if (id < 0) return std::nullopt;
    const gguf_type element =
        gguf_get_kv_type(g, id) == GGUF_TYPE_ARRAY ? gguf_get_arr_type(g, id) : GGUF_TYPE_COUNT;
    const bool integers = element != GGUF_TYPE_COUNT && element != GGUF_TYPE_STRING &&
                          element != GGUF_TYPE_BOOL && element != GGUF_TYPE_FLOAT32 &&
                          element != GGUF_TYPE_FLOAT64;
    if (!integers) {
        error = "has type " + type_of(g, id) + ", expected an array of integers";
        return std::nullopt;
    }
    const size_t size = element == GGUF_TYPE_UINT8 || element == GGUF_TYPE_INT8     ? 1
                        : element == GGUF_TYPE_UINT16 || element == GGUF_TYPE_INT16 ? 2
                        : element == GGUF_TYPE_UINT32 || element == GGUF_TYPE_INT32 ? 4
                                                                                    : 8;
    std::vector<int64_t> out;
    const auto * bytes = static_cast<const uint8_t *>(gguf_get_arr_data(g, id));
    for (size_t k = 0; k < gguf_get_arr_n(g, id); ++k) {
        const std::optional<int64_t> v = integer_at(element, bytes + k * size);
        if (!v) {
            error = "element " + std::to_string(k) + " does not fit int64";
            return std::nullopt;
        }
        out.push_back(*v);
    }
    return out;
}

}  // namespace

bool config_from_gguf(const ModelFile & file, ModelConfig & cfg, std::string & error) {
    const gguf_context * g = file.gguf.get();
    const auto arch = get_string(g, "general.architecture", error);
    if (!arch || *arch != kArch) {
        error = "general.architecture: " + (arch ? "'" + std::string(*arch) + "'" : error) + ", expected '" +
                kArch + "'";
        return false;
    }
    const auto get = [&](const char * key, int & out) {
        const auto v = get_int(g, key, error);
        if (!v || *v < 1 || *v > (1 << 20)) {
            error = std::string(key) + ": " + (v ? "out of range" : error);
            return false;
        }
        out = static_cast<int>(*v);
        return true;
    };
    if (!get("ggx-dit.block_count", cfg.layers) || !get("ggx-dit.hidden_size", cfg.hidden) ||
        !get("ggx-dit.head_count", cfg.heads) || !get("ggx-dit.ffn_size", cfg.ffn) ||
        !get("ggx-dit.patch_dim", cfg.patch_dim) || !get("ggx-dit.time_dim", cfg.time_dim))
        return false;
    const auto theta = get_float(g, "ggx-dit.rope.theta", error);
    if (!theta || !(*theta > 0.0)) {
        error = "ggx-dit.rope.theta: " + (theta ? std::string("not positive") : error);
        return false;
    }
    cfg.rope_theta = static_cast<float>(*theta);
    const auto axes = get_int_array(g, "ggx-dit.rope.axes_dim", error);
    if (!axes || axes->size() != 3) {
        error = "ggx-dit.rope.axes_dim: " + (axes ? std::string("needs 3 values") : error);
        return false;
    }
    for (int i = 0; i < 3; ++i) {
        if ((*axes)[static_cast<size_t>(i)] < 0 || (*axes)[static_cast<size_t>(i)] > (1 << 20)) {
            error = "ggx-dit.rope.axes_dim: out of range";
            return false;
        }
        cfg.axes_dim[i] = static_cast<int>((*axes)[static_cast<size_t>(i)]);
    }
    const auto type = get_string(g, "ggx-dit.weight_type", error);
    if (!type || !parse_weight_type(std::string(*type), cfg.weights)) {
        error = "ggx-dit.weight_type: " + (type ? "unknown '" + std::string(*type) + "'" : error);
        return false;
    }
    return true;
}

std::vector<float> rope_pe(const ModelConfig & c) {
    const int pairs = c.head_dim / 2;
    std::vector<float> pe(static_cast<size_t>(4) * pairs * c.tokens);
    for (int t = 0; t < c.tokens; ++t) {
        const float pos[3] = {0.0f, static_cast<float>(t / c.grid_w), static_cast<float>(t % c.grid_w)};
        int j = 0;
        for (int axis = 0; axis < 3; ++axis) {
            const int d = c.axes_dim[axis];
            for (int kk = 0; kk < d / 2; ++kk, ++j) {
                // omega_k = theta^(-2k/d) with the exponent a float linspace 0 .. (d-2)/d.
                const float exponent = static_cast<float>(2 * kk) / static_cast<float>(d);
                const float omega = 1.0f / std::pow(c.rope_theta, exponent);
                const float angle = pos[axis] * omega;
                const float cs = std::cos(angle), sn = std::sin(angle);
                float * mtx =
                    &pe[static_cast<size_t>(4) * (static_cast<size_t>(j) + static_cast<size_t>(pairs) * t)];
                mtx[0] = cs, mtx[1] = -sn, mtx[2] = sn, mtx[3] = cs;
            }
        }
    }
    return pe;
}

std::vector<float> initial_latent(const ModelConfig & c) {
    Rng rng(mix(c.seed, 0xFFFFFFFFull));
    std::vector<float> x(static_cast<size_t>(c.patch_dim) * c.tokens);
    for (float & f : x)
        f = rng.normal();
    return x;
}

}  // namespace ggx::run
