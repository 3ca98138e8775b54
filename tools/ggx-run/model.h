// ggx-run's built-in diffusion transformer: a Z-Image/Flux-style single-stream DiT with
// deterministic synthetic weights, built as a ggml graph in two variants:
//  - ext on:  what an sd.cpp-style application runs with the sd extension pack: RoPE through
//             ggml_rope_apply (so the CPU rule sd.rms_norm_mul_rope.cpu can fuse the per-head Q/K
//             RMSNorm -> Mul -> RoPE chain) and, for int8-convrot weights, INT8 linears through
//             ggml_ext_linear_i8_tensorwise (ConvRot activation quantization shared by the linears
//             that read the same input);
//  - ext off: the same model on native ops only: RoPE as sd.cpp's decomposed graph (permute, cont,
//             views, repeat, mul, mul, add) and, for int8-convrot, F32 mul_mat on the dequantized
//             weights rotated back to the input basis (W_deq = dequant(Q) * H, H the ConvRot Hadamard).
#pragma once

#include <ggml-backend.h>
#include <ggml-cpp.h>
#include <ggml.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace ggx::run {

// A model file read through gguf.h: its metadata, and a ggml_context holding every tensor's data.
struct ModelFile {
    gguf_context_ptr gguf;
    ggml_context_ptr tensors;
    // Reads path; false with gguf.h's message when it cannot be read or is malformed.
    bool open(const std::string & path, std::string & error);
};

// The linears' weights: a float type or a block format ggx converts (named as ggml_type_name
// names it: f32, f16, bf16, q8_0, q4_k, ...), or int8-convrot: I8 weights rotated offline by ConvRot
// with per-row scales, the sd pack's INT8 linears.
struct WeightType {
    static constexpr ggml_type kInt8ConvRot = GGML_TYPE_COUNT;  // no ggml type: the INT8 ConvRot linears
    ggml_type type = kInt8ConvRot;

    bool int8_convrot() const { return type == kInt8ConvRot; }
    bool operator==(const WeightType &) const = default;
};

std::string weight_type_name(WeightType type);
bool parse_weight_type(const std::string & name, WeightType & type);

struct ModelConfig {
    int layers = 4;
    int hidden = 1024;
    int heads = 8;
    int tokens = 1024;  // image tokens: a grid_h x grid_w patch grid
    WeightType weights;
    uint64_t seed = 42;

    // Derived (fill with derive()).
    // ffn and axes_dim: 0 to derive them.
    int head_dim = 0, ffn = 0, patch_dim = 64, time_dim = 256, grid_h = 0, grid_w = 0;
    int axes_dim[3] = {0, 0, 0};  // RoPE axes (index, row, column), sum = head_dim
    float rope_theta = 256.0f;    // Z-Image's

    // Fills the derived sizes; false with a message for an unusable configuration.
    bool derive(std::string & error);
};

// One linear layer y = W x + b. For int8-convrot on the ext path: w is I8 [K, N] (rotated by
// ConvRot with group `group`), scale the F32 per-row scales [N].
struct Linear {
    ggml_tensor * w = nullptr;
    ggml_tensor * scale = nullptr;
    ggml_tensor * b = nullptr;
    int group = 0;
};

struct Block {
    Linear mod;  // silu(c) -> 6 * hidden: shift/scale/gate for attention and MLP
    Linear wq, wk, wv, wo;
    ggml_tensor *q_norm = nullptr, *k_norm = nullptr;  // per-head RMSNorm weights [head_dim]
    Linear w1, w3, w2;                                 // SwiGLU MLP: w2(silu(w1 h) * w3 h)
};

struct Model {
    ModelConfig cfg;
    bool ext = true;  // which variant the weights were made for (I8 or dequantized F32)
    ggml_context * ctx = nullptr;
    ggml_backend_buffer_t buffer = nullptr;
    Linear patch_embed, t_in, t_out, final_mod, final_out;
    std::vector<Block> blocks;
    size_t weight_bytes = 0;
    struct Named {
        std::string name;  // the GGUF tensor name (docs in README.md)
        ggml_tensor * tensor;
        int group;  // ConvRot group of an INT8 weight (its .comfy_quant)
    };
    std::vector<Named> named;

    Model() = default;
    Model(const Model &) = delete;
    Model & operator=(const Model &) = delete;
    ~Model();
};

// Creates the weights for the ext or native variant in backend's buffer and fills them from
// cfg.seed (both variants derive from the same F32 master weights), or from file when given (the
// names, types and shapes export_model writes). false with a message on error.
bool create_model(Model & model, const ModelConfig & cfg, bool ext, ggml_backend_t backend,
                  std::string & error, const ModelFile * file = nullptr);

// Writes the model (made for the ext variant) as GGUF: the configuration under "ggx-dit.*" and
// every tensor by name; INT8 weights with their "<m>.weight_scale" and "<m>.comfy_quant".
bool export_model(const Model & model, const std::string & path, std::string & error);

// The configuration stored in a GGUF file written by export_model (tokens and seed are not part of
// it); weights type from the file. false with a message when keys are missing or inconsistent.
bool config_from_gguf(const ModelFile & file, ModelConfig & cfg, std::string & error);

// Stages of the forward pass, for the profile's breakdown.
inline constexpr const char * kStageLinear = "linears (+ bias, act. quantization)";
inline constexpr const char * kStageRope = "Q/K RMSNorm -> Mul -> RoPE";
inline constexpr const char * kStageAttention = "attention (flash_attn_ext)";
inline constexpr const char * kStageOther = "adaLN, SwiGLU, residuals, embed";

// The inputs and output of one forward pass.
struct Forward {
    ggml_context * ctx = nullptr;
    ggml_cgraph * graph = nullptr;
    ggml_tensor * x = nullptr;    // F32 [patch_dim, tokens]: noisy latent patches
    ggml_tensor * t = nullptr;    // F32 [1]: timestep (sigma * 1000)
    ggml_tensor * pe = nullptr;   // F32 [2, 2, head_dim / 2, tokens]: RoPE rotation matrices
    ggml_tensor * out = nullptr;  // F32 [patch_dim, tokens]: predicted velocity
    std::unordered_map<const ggml_tensor *, const char *> stage;  // every tensor's stage

    Forward() = default;
    Forward(const Forward &) = delete;
    Forward & operator=(const Forward &) = delete;
    ~Forward();
};

// Builds the forward graph of model's variant. false with a message on error.
bool build_forward(Forward & fwd, const Model & model, std::string & error);

// Host-side RoPE position encodings (sd-ops.md 1.2): per token (index 0, row, column) of the patch
// grid and per pair, [cos, -sin, sin, cos]; F32 [2, 2, head_dim / 2, tokens].
std::vector<float> rope_pe(const ModelConfig & cfg);

// The deterministic initial latent (standard-normal-like noise from the seed), patch_dim x tokens.
std::vector<float> initial_latent(const ModelConfig & cfg);

// The normalised ConvRot Hadamard of sd-ops.md 3.2 applied in place to each group of g values of
// row (g a power of 4; 1: nothing), in the specification's order.
void convrot_rows(float * row, int64_t n, int g);

}  // namespace ggx::run
