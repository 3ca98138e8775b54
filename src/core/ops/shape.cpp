// Constructors of the shape family: REPEAT, CONCAT, PAD, UPSCALE, TIMESTEP_EMBEDDING.
#include "core/ops/common.h"

using namespace ggx::core;

extern "C" {

ggml_tensor * ggml_repeat(ggml_context * ctx, ggml_tensor * a, const ggml_tensor * b) {
    Check check(ctx, "ggml_repeat", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_float(a) || a->type == GGML_TYPE_I32, "a must be f32, f16, bf16 or i32")
        .require(ggml_can_repeat(a, b), "a cannot be tiled to b's shape (b.ne[i] % a.ne[i] != 0)");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_repeat", GGML_OP_REPEAT, a->type, shape_of(b), {a});
}

ggml_tensor * ggml_concat(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int dim) {
    Check check(ctx, "ggml_concat", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(dim >= 0 && dim < GGML_MAX_DIMS, "dim must be 0..3")
        .require(a->type == b->type, "a and b must have the same type")
        .require(is_float(a) || a->type == GGML_TYPE_I32, "a must be f32, f16, bf16 or i32");
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        check.require(i == dim || a->ne[i] == b->ne[i], "dimensions other than dim must match");
    }
    if (!check) return nullptr;
    auto ne = shape_of(a);
    ne[dim] += b->ne[dim];
    return with_params(make_node(ctx, "ggml_concat", GGML_OP_CONCAT, a->type, ne, {a, b}),
                       ggml_ext_concat_params{dim});
}

ggml_tensor * ggml_pad_ext(ggml_context * ctx, ggml_tensor * a, int lp0, int rp0, int lp1, int rp1, int lp2,
                           int rp2, int lp3, int rp3) {
    Check check(ctx, "ggml_pad_ext", {{"a", a}});
    if (!check) return nullptr;
    const ggml_ext_pad_params params{{{lp0, rp0}, {lp1, rp1}, {lp2, rp2}, {lp3, rp3}}};
    bool non_negative = true;
    for (const auto & pad : params.pads)
        non_negative = non_negative && pad[0] >= 0 && pad[1] >= 0;
    check.require(is_float(a), "a must be f32, f16 or bf16").require(non_negative, "paddings must be >= 0");
    if (!check) return nullptr;
    auto ne = shape_of(a);
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        ne[i] += params.pads[i][0] + params.pads[i][1];
    return with_params(make_node(ctx, "ggml_pad_ext", GGML_OP_PAD, a->type, ne, {a}), params);
}

ggml_tensor * ggml_pad(ggml_context * ctx, ggml_tensor * a, int p0, int p1, int p2, int p3) {
    return ggml_pad_ext(ctx, a, 0, p0, 0, p1, 0, p2, 0, p3);
}

ggml_tensor * ggml_upscale_ext(ggml_context * ctx, ggml_tensor * a, int ne0, int ne1, int ne2, int ne3,
                               ggml_scale_mode mode) {
    Check check(ctx, "ggml_upscale_ext", {{"a", a}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32, "a must be f32")
        .require(mode == GGML_SCALE_MODE_NEAREST, "only nearest scaling is supported")
        .require(ne0 >= 1 && ne1 >= 1 && ne2 >= 1 && ne3 >= 1, "target sizes must be >= 1")
        .require(!ggml_is_empty(a), "a must not be empty");
    if (!check) return nullptr;
    return with_params(
        make_node(ctx, "ggml_upscale_ext", GGML_OP_UPSCALE, a->type, {ne0, ne1, ne2, ne3}, {a}),
        ggml_ext_upscale_params{static_cast<int32_t>(mode)});
}

ggml_tensor * ggml_upscale(ggml_context * ctx, ggml_tensor * a, int scale_factor, ggml_scale_mode mode) {
    Check check(ctx, "ggml_upscale", {{"a", a}});
    if (!check || !check.require(scale_factor >= 1, "scale_factor must be >= 1")) return nullptr;
    return ggml_upscale_ext(ctx, a, static_cast<int>(a->ne[0] * scale_factor),
                            static_cast<int>(a->ne[1] * scale_factor), static_cast<int>(a->ne[2]),
                            static_cast<int>(a->ne[3]), mode);
}

ggml_tensor * ggml_timestep_embedding(ggml_context * ctx, ggml_tensor * timesteps, int dim, int max_period) {
    Check check(ctx, "ggml_timestep_embedding", {{"timesteps", timesteps}});
    if (!check) return nullptr;
    check
        .require(timesteps->type == GGML_TYPE_F32 && ggml_is_vector(timesteps),
                 "timesteps must be an f32 vector")
        .require(dim >= 2, "dim must be >= 2")
        .require(max_period >= 1, "max_period must be >= 1");
    if (!check) return nullptr;
    return with_params(make_node(ctx, "ggml_timestep_embedding", GGML_OP_TIMESTEP_EMBEDDING, GGML_TYPE_F32,
                                 {dim, timesteps->ne[0], 1, 1}, {timesteps}),
                       ggml_ext_timestep_embedding_params{dim, max_period});
}

}  // extern "C"
