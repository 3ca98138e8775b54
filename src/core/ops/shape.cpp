// Constructors of the shape family: REPEAT(_BACK), CONCAT, PAD (zeros or circular), PAD_REFLECT_1D, ROLL,
// UPSCALE, ARANGE, TIMESTEP_EMBEDDING, WIN_PART/UNPART, GET_REL_POS, ADD_REL_POS, TRI, DIAG, SOLVE_TRI.
#include <array>
#include <cmath>
#include <cstdlib>

#include "core/ops/common.h"

using namespace ggx::core;

namespace {

ggml_tensor * pad(ggml_context * ctx, const char * name, ggml_tensor * a,
                  const ggml_ext_pad_params & params) {
    Check check(ctx, name, {{"a", a}});
    if (!check) return nullptr;
    bool in_range = true;
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        const auto & p = params.pads[i];
        in_range = in_range && p[0] >= 0 && p[1] >= 0 &&
                   (!params.circular || (p[0] <= a->ne[i] && p[1] <= a->ne[i]));
    }
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require(in_range, params.circular ? "paddings must be in 0..ne" : "paddings must be >= 0");
    if (!check) return nullptr;
    auto ne = shape_of(a);
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        ne[i] += params.pads[i][0] + params.pads[i][1];
    return with_params(make_node(ctx, name, GGML_OP_PAD, a->type, ne, {a}), params);
}

// UPSCALE to the target sizes ne; mode is a ggml_scale_mode or-ed with ggml_scale_flag values.
ggml_tensor * interpolate(ggml_context * ctx, const char * name, ggml_tensor * a, std::array<int64_t, 4> ne,
                          uint32_t mode) {
    Check check(ctx, name, {{"a", a}});
    if (!check) return nullptr;
    constexpr uint32_t flags = GGML_SCALE_FLAG_ALIGN_CORNERS | GGML_SCALE_FLAG_ANTIALIAS;
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require((mode & 0xFFu) < GGML_SCALE_MODE_COUNT && (mode & ~(0xFFu | flags)) == 0,
                 "unknown mode or flag")
        .require(!(mode & GGML_SCALE_FLAG_ANTIALIAS) || (mode & 0xFFu) == GGML_SCALE_MODE_BILINEAR,
                 "antialias needs bilinear mode")
        .require(ne[0] >= 1 && ne[1] >= 1 && ne[2] >= 1 && ne[3] >= 1, "target sizes must be >= 1")
        .require(!ggml_is_empty(a), "a must not be empty");
    if (!check) return nullptr;
    return with_params(make_node(ctx, name, GGML_OP_UPSCALE, a->type, ne, {a}),
                       ggml_ext_upscale_params{static_cast<int32_t>(mode)});
}

// A node of a's type and shape (parameters recorded by the caller).
ggml_tensor * like_a(ggml_context * ctx, const char * name, ggml_op op, ggml_tensor * a,
                     std::initializer_list<ggml_tensor *> srcs, bool inplace = false) {
    return make_node(ctx, name, op, a->type, shape_of(a), srcs, inplace ? a : nullptr);
}

ggml_tensor * add_rel_pos(ggml_context * ctx, const char * name, ggml_tensor * a, ggml_tensor * pw,
                          ggml_tensor * ph, bool inplace) {
    Check check(ctx, name, {{"a", a}, {"pw", pw}, {"ph", ph}});
    if (!check) return nullptr;
    check
        .require(a->type == GGML_TYPE_F32 && pw->type == GGML_TYPE_F32 && ph->type == GGML_TYPE_F32,
                 "a, pw and ph must be f32")
        .require(ggml_is_contiguous(a) && ggml_is_contiguous(pw) && ggml_is_contiguous(ph),
                 "a, pw and ph must be contiguous")
        .require(ggml_are_same_shape(pw, ph), "pw and ph must have the same shape")
        .require(
            pw->ne[3] == a->ne[2] && pw->ne[0] * pw->ne[0] == a->ne[0] && pw->ne[1] * pw->ne[2] == a->ne[1],
            "pw must be [W, H, W, a.ne2] with a [W*W, H*W, ...]");
    if (!check) return nullptr;
    return with_params(like_a(ctx, name, GGML_OP_ADD_REL_POS, a, {a, pw, ph}, inplace),
                       ggml_ext_add_rel_pos_params{inplace ? 1 : 0});
}

}  // namespace

extern "C" {

ggml_tensor * ggml_repeat(ggml_context * ctx, ggml_tensor * a, const ggml_tensor * b) {
    Check check(ctx, "ggml_repeat", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_float(a) || a->type == GGML_TYPE_I32, "a must be f32, f16, bf16 or i32")
        .require(ggml_can_repeat(a, b), "a cannot be tiled to b's shape (b.ne[i] % a.ne[i] != 0)");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_repeat", GGML_OP_REPEAT, a->type, shape_of(b), {a});
}

ggml_tensor * ggml_repeat_4d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2,
                             int64_t ne3) {
    Check check(ctx, "ggml_repeat_4d", {{"a", a}});
    if (!check) return nullptr;
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    bool tiles = true;
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        tiles = tiles && ne[i] >= 0 && (a->ne[i] == 0 ? ne[i] == 0 : ne[i] % a->ne[i] == 0);
    check.require(is_float(a) || a->type == GGML_TYPE_I32, "a must be f32, f16, bf16 or i32")
        .require(tiles, "a cannot be tiled to the shape (ne[i] % a.ne[i] != 0)");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_repeat_4d", GGML_OP_REPEAT, a->type, {ne0, ne1, ne2, ne3}, {a});
}

ggml_tensor * ggml_repeat_back(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    Check check(ctx, "ggml_repeat_back", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require(ggml_can_repeat(b, a), "b cannot be tiled to a's shape (a.ne[i] % b.ne[i] != 0)");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_repeat_back", GGML_OP_REPEAT_BACK, a->type, shape_of(b), {a});
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
    return pad(ctx, "ggml_pad_ext", a, {{{lp0, rp0}, {lp1, rp1}, {lp2, rp2}, {lp3, rp3}}, 0});
}
ggml_tensor * ggml_pad_ext_circular(ggml_context * ctx, ggml_tensor * a, int lp0, int rp0, int lp1, int rp1,
                                    int lp2, int rp2, int lp3, int rp3) {
    return pad(ctx, "ggml_pad_ext_circular", a, {{{lp0, rp0}, {lp1, rp1}, {lp2, rp2}, {lp3, rp3}}, 1});
}

ggml_tensor * ggml_pad(ggml_context * ctx, ggml_tensor * a, int p0, int p1, int p2, int p3) {
    return ggml_pad_ext(ctx, a, 0, p0, 0, p1, 0, p2, 0, p3);
}
ggml_tensor * ggml_pad_circular(ggml_context * ctx, ggml_tensor * a, int p0, int p1, int p2, int p3) {
    return pad(ctx, "ggml_pad_circular", a, {{{0, p0}, {0, p1}, {0, p2}, {0, p3}}, 1});
}

ggml_tensor * ggml_pad_reflect_1d(ggml_context * ctx, ggml_tensor * a, int p0, int p1) {
    Check check(ctx, "ggml_pad_reflect_1d", {{"a", a}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32 && ggml_is_contiguous(a), "a must be contiguous f32")
        .require(p0 >= 0 && p1 >= 0 && p0 < a->ne[0] && p1 < a->ne[0], "p0 and p1 must be in 0..ne0-1");
    if (!check) return nullptr;
    return with_params(make_node(ctx, "ggml_pad_reflect_1d", GGML_OP_PAD_REFLECT_1D, a->type,
                                 {a->ne[0] + p0 + p1, a->ne[1], a->ne[2], a->ne[3]}, {a}),
                       ggml_ext_pad_reflect_1d_params{p0, p1});
}

ggml_tensor * ggml_roll(ggml_context * ctx, ggml_tensor * a, int shift0, int shift1, int shift2, int shift3) {
    Check check(ctx, "ggml_roll", {{"a", a}});
    if (!check) return nullptr;
    const ggml_ext_roll_params params{{shift0, shift1, shift2, shift3}};
    bool in_range = true;
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        in_range = in_range && std::abs(params.shifts[i]) < std::max<int64_t>(a->ne[i], 1);
    check
        .require(a->nb[0] == ggml_type_size(a->type) && !ggml_is_quantized(a->type),
                 "a must be unquantized with dense rows")
        .require(in_range, "|shift_i| must be < ne_i");
    if (!check) return nullptr;
    return with_params(like_a(ctx, "ggml_roll", GGML_OP_ROLL, a, {a}), params);
}

ggml_tensor * ggml_upscale_ext(ggml_context * ctx, ggml_tensor * a, int ne0, int ne1, int ne2, int ne3,
                               ggml_scale_mode mode) {
    return interpolate(ctx, "ggml_upscale_ext", a, {ne0, ne1, ne2, ne3}, static_cast<uint32_t>(mode));
}

ggml_tensor * ggml_interpolate(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2,
                               int64_t ne3, uint32_t mode) {
    return interpolate(ctx, "ggml_interpolate", a, {ne0, ne1, ne2, ne3}, mode);
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

ggml_tensor * ggml_arange(ggml_context * ctx, float start, float stop, float step) {
    Check check(ctx, "ggml_arange", {});
    check.require(std::isfinite(start) && std::isfinite(stop) && stop > start, "stop must be > start")
        .require(step > 0.0f && std::isfinite(step), "step must be > 0");
    if (!check) return nullptr;
    const auto steps = static_cast<int64_t>(std::ceil((stop - start) / step));
    return with_params(make_node(ctx, "ggml_arange", GGML_OP_ARANGE, GGML_TYPE_F32, {steps, 1, 1, 1}, {}),
                       ggml_ext_arange_params{start, stop, step});
}

ggml_tensor * ggml_win_part(ggml_context * ctx, ggml_tensor * a, int w) {
    Check check(ctx, "ggml_win_part", {{"a", a}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32, "a must be f32")
        .require(a->ne[3] == 1, "a must be 3-d")
        .require(w >= 1, "w must be >= 1");
    if (!check) return nullptr;
    const int32_t npx = static_cast<int32_t>((a->ne[1] + w - 1) / w),
                  npy = static_cast<int32_t>((a->ne[2] + w - 1) / w);
    return with_params(
        make_node(ctx, "ggml_win_part", GGML_OP_WIN_PART, a->type, {a->ne[0], w, w, int64_t{npx} * npy}, {a}),
        ggml_ext_win_part_params{npx, npy, w});
}

ggml_tensor * ggml_win_unpart(ggml_context * ctx, ggml_tensor * a, int w0, int h0, int w) {
    Check check(ctx, "ggml_win_unpart", {{"a", a}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32, "a must be f32")
        .require(w >= 1 && w0 >= 1 && h0 >= 1, "w, w0 and h0 must be >= 1")
        .require(a->ne[1] == w && a->ne[2] == w && a->ne[3] == int64_t{(w0 + w - 1) / w} * ((h0 + w - 1) / w),
                 "a must be [C, w, w, windows of a w0 x h0 image]");
    if (!check) return nullptr;
    return with_params(
        make_node(ctx, "ggml_win_unpart", GGML_OP_WIN_UNPART, a->type, {a->ne[0], w0, h0, 1}, {a}),
        ggml_ext_win_unpart_params{w});
}

ggml_tensor * ggml_get_rel_pos(ggml_context * ctx, ggml_tensor * a, int qh, int kh) {
    Check check(ctx, "ggml_get_rel_pos", {{"a", a}});
    if (!check) return nullptr;
    check.require(is_float(a), "a must be f32, f16 or bf16")
        .require(qh == kh && qh >= 1, "qh and kh must be equal and >= 1")
        .require(a->ne[1] == 2 * int64_t{kh} - 1, "a.ne1 must be 2 * kh - 1");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_get_rel_pos", GGML_OP_GET_REL_POS, GGML_TYPE_F16, {a->ne[0], kh, qh, 1}, {a});
}

ggml_tensor * ggml_add_rel_pos(ggml_context * ctx, ggml_tensor * a, ggml_tensor * pw, ggml_tensor * ph) {
    return add_rel_pos(ctx, "ggml_add_rel_pos", a, pw, ph, false);
}
ggml_tensor * ggml_add_rel_pos_inplace(ggml_context * ctx, ggml_tensor * a, ggml_tensor * pw,
                                       ggml_tensor * ph) {
    return add_rel_pos(ctx, "ggml_add_rel_pos_inplace", a, pw, ph, true);
}

ggml_tensor * ggml_tri(ggml_context * ctx, ggml_tensor * a, ggml_tri_type type) {
    Check check(ctx, "ggml_tri", {{"a", a}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32, "a must be f32")
        .require(a->ne[0] == a->ne[1], "a must be square (ne0 == ne1)")
        .require(type >= GGML_TRI_TYPE_UPPER_DIAG && type <= GGML_TRI_TYPE_LOWER, "unknown tri type");
    if (!check) return nullptr;
    return with_params(like_a(ctx, "ggml_tri", GGML_OP_TRI, a, {a}),
                       ggml_ext_tri_params{static_cast<int32_t>(type)});
}

ggml_tensor * ggml_diag(ggml_context * ctx, ggml_tensor * a) {
    Check check(ctx, "ggml_diag", {{"a", a}});
    if (!check || !check.require(a->ne[1] == 1, "a must be a row per matrix (ne1 == 1)")) return nullptr;
    return make_node(ctx, "ggml_diag", GGML_OP_DIAG, a->type, {a->ne[0], a->ne[0], a->ne[2], a->ne[3]}, {a});
}

ggml_tensor * ggml_solve_tri(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, bool left, bool lower,
                             bool uni) {
    Check check(ctx, "ggml_solve_tri", {{"a", a}, {"b", b}});
    if (!check) return nullptr;
    check.require(a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32, "a and b must be f32")
        .require(ggml_is_contiguous(a) && ggml_is_contiguous(b), "a and b must be contiguous")
        .require(a->ne[0] == a->ne[1], "a must be square (ne0 == ne1)")
        .require(b->ne[1] == a->ne[1] && b->ne[2] == a->ne[2] && b->ne[3] == a->ne[3],
                 "b must be [k, a.ne1, a.ne2, a.ne3]")
        .require(left && lower && !uni, "only left, lower, non-unit-diagonal systems are defined");
    if (!check) return nullptr;
    return make_node(ctx, "ggml_solve_tri", GGML_OP_SOLVE_TRI, GGML_TYPE_F32, shape_of(b), {a, b});
}

}  // extern "C"
