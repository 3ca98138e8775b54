// ggx-ops case table: ROPE and ROPE_BACK in every mode (NORMAL, NEOX and the multi-axis MROPE, IMROPE,
// VISION with several section splits), F32 and F16, full and partial rotation, rotation offsets,
// with and without frequency factors, plain, linear and YaRN scaling, over every input layout.
#include <algorithm>

#include "ggx-ops/case.h"

namespace ggx::ops {

namespace {

struct RopeShape {
    Shape ne;  // [head_dim, n_head, n_tokens, batch]
    int n_dims;
};
const RopeShape kShapes[] = {{{64, 3, 5, 1}, 64}, {{64, 1, 5, 2}, 32}, {{6, 3, 1, 1}, 6},
                             {{80, 2, 3, 1}, 64}, {{2, 1, 7, 1}, 2},   {{128, 2, 4, 1}, 128}};

struct Scaling {
    const char * name;
    int n_ctx_orig;
    float freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
};
const Scaling kScalings[] = {{"plain", 0, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f},
                             {"linear", 0, 0.5f, 0.0f, 0.7f, 32.0f, 1.0f},
                             {"yarn", 4096, 0.25f, 1.0f, 1.0f, 32.0f, 1.0f}};

// Multi-axis modes: a split of the rotation pairs between the position axes t, h, w, e.
struct Multi {
    int mode;
    RopeShape shape;
    int sections[GGML_MROPE_SECTIONS];
};
// clang-format off
const Multi kMulti[] = {
    {GGML_ROPE_TYPE_MROPE,  {{64, 3, 5, 1}, 64},  {12, 10, 10, 0}},  // the pairs split once
    {GGML_ROPE_TYPE_MROPE,  {{80, 2, 3, 1}, 64},  {3, 2, 2, 1}},     // runs repeating, axis e, partial
    {GGML_ROPE_TYPE_MROPE,  {{6, 2, 4, 1}, 6},    {1, 0, 2, 0}},     // an empty section
    {GGML_ROPE_TYPE_IMROPE, {{64, 3, 5, 1}, 64},  {11, 11, 10, 0}},
    {GGML_ROPE_TYPE_IMROPE, {{80, 2, 3, 2}, 64},  {4, 3, 2, 3}},
    {GGML_ROPE_TYPE_VISION, {{64, 3, 5, 1}, 32},  {16, 16, 0, 0}},
    {GGML_ROPE_TYPE_VISION, {{32, 2, 4, 1}, 16},  {4, 2, 1, 1}},     // runs repeating
};
// clang-format on

const char * mode_name(int mode) {
    switch (mode) {
        case GGML_ROPE_TYPE_NEOX:
            return "neox";
        case GGML_ROPE_TYPE_MROPE:
            return "mrope";
        case GGML_ROPE_TYPE_IMROPE:
            return "imrope";
        case GGML_ROPE_TYPE_VISION:
            return "vision";
        default:
            return "normal";
    }
}

// One ROPE or ROPE_BACK node; multi-axis modes take sections and four positions per token.
struct RopeCase {
    ggml_op op;
    ggml_type type;
    int mode;
    RopeShape shape;
    const int * sections;  // NULL: a single-axis mode
    bool factors;
    Scaling scaling;
    Layout layout;
    int offset;
};

ggml_tensor * build_rope(Graph & g, const RopeCase & c) {
    const bool multi = c.sections != nullptr;
    const int pairs = c.mode == GGML_ROPE_TYPE_VISION ? c.shape.n_dims : c.shape.n_dims / 2;
    ggml_tensor * a = g.input(c.type, c.shape.ne, c.layout);
    ggml_tensor * pos = g.input(GGML_TYPE_I32, {(multi ? 4 : 1) * c.shape.ne[2], 1, 1, 1}, Layout::Contiguous,
                                Gen::integer(0, 1024));
    ggml_tensor * ff =
        c.factors ? g.input(GGML_TYPE_F32, {pairs, 1, 1, 1}, Layout::Contiguous, Gen::uniform(0.5, 4.0))
                  : nullptr;
    const Scaling & k = c.scaling;
    int sections[GGML_MROPE_SECTIONS] = {};
    if (multi) std::copy(c.sections, c.sections + GGML_MROPE_SECTIONS, sections);
    ggml_tensor * r = nullptr;
    if (c.op == GGML_OP_ROPE && multi)
        r = ggml_rope_multi(g.ctx(), a, pos, ff, c.shape.n_dims, sections, c.mode, k.n_ctx_orig, 10000.0f,
                            k.freq_scale, k.ext_factor, k.attn_factor, k.beta_fast, k.beta_slow);
    else if (c.op == GGML_OP_ROPE)
        r = ggml_rope_ext(g.ctx(), a, pos, ff, c.shape.n_dims, c.mode, k.n_ctx_orig, 10000.0f, k.freq_scale,
                          k.ext_factor, k.attn_factor, k.beta_fast, k.beta_slow);
    else if (multi)
        r = ggml_rope_multi_back(g.ctx(), a, pos, ff, c.shape.n_dims, sections, c.mode, k.n_ctx_orig,
                                 10000.0f, k.freq_scale, k.ext_factor, k.attn_factor, k.beta_fast,
                                 k.beta_slow);
    else
        r = ggml_rope_ext_back(g.ctx(), a, pos, ff, c.shape.n_dims, c.mode, k.n_ctx_orig, 10000.0f,
                               k.freq_scale, k.ext_factor, k.attn_factor, k.beta_fast, k.beta_slow);
    return c.offset != 0 ? ggml_rope_set_offset(r, c.offset) : r;
}

void add_rope_case(CaseList & list, const RopeCase & c) {
    std::string name = std::string(mode_name(c.mode)) + " " + str(c.type) + " " + str(c.shape.ne) +
                       " n_dims " + std::to_string(c.shape.n_dims);
    if (c.sections)
        name += format(" sections %d,%d,%d,%d", c.sections[0], c.sections[1], c.sections[2], c.sections[3]);
    if (c.offset) name += " offset " + std::to_string(c.offset);
    name += std::string(c.factors ? " factors " : " ") + c.scaling.name + " " + layout_name(c.layout);
    list.add(c.op, (c.op == GGML_OP_ROPE_BACK ? "back " : "") + name,
             [=](Graph & g) { return build_rope(g, c); });
}

// Both ops in every mode: every scaling with and without frequency factors, every layout, offsets.
void add_mode_cases(CaseList & list, ggml_op op, ggml_type type) {
    for (int mode : {GGML_ROPE_TYPE_NORMAL, GGML_ROPE_TYPE_NEOX}) {
        for (const RopeShape & s : kShapes) {
            for (bool factors : {false, true}) {
                for (const Scaling & k : kScalings)
                    add_rope_case(list, {op, type, mode, s, nullptr, factors, k, Layout::Contiguous, 0});
            }
            for (Layout layout : {Layout::Transposed, Layout::Permuted, Layout::Strided})
                add_rope_case(list, {op, type, mode, s, nullptr, false, kScalings[0], layout, 0});
        }
        // Offsets: rotate the middle or the last n_dims channels of a row.
        for (int offset : {8, 16}) {
            for (Layout layout : {Layout::Contiguous, Layout::Permuted})
                add_rope_case(
                    list, {op, type, mode, {{80, 2, 3, 1}, 64}, nullptr, true, kScalings[2], layout, offset});
        }
        add_rope_case(
            list,
            {op, type, mode, {{64, 1, 5, 2}, 32}, nullptr, false, kScalings[1], Layout::Contiguous, 32});
    }
    for (const Multi & m : kMulti) {
        for (bool factors : {false, true}) {
            for (const Scaling & k : kScalings)
                add_rope_case(list,
                              {op, type, m.mode, m.shape, m.sections, factors, k, Layout::Contiguous, 0});
        }
        for (Layout layout : {Layout::Transposed, Layout::Permuted, Layout::Strided})
            add_rope_case(list, {op, type, m.mode, m.shape, m.sections, false, kScalings[0], layout, 0});
        if (m.mode != GGML_ROPE_TYPE_VISION && m.shape.n_dims < m.shape.ne[0])
            add_rope_case(
                list, {op, type, m.mode, m.shape, m.sections, false, kScalings[2], Layout::Contiguous, 16});
    }
}

void add_perf_cases(CaseList & list) {
    const Shape ne = {128, 32, 4096, 1};  // 64 MiB in F32, 32 MiB in F16: beyond the last-level cache
    for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16}) {
        list.add_perf(
            GGML_OP_ROPE, "perf neox " + str(type) + " " + str(ne), 6.0 * 128 * 32 * 4096, [=](Graph & g) {
                ggml_tensor * pos =
                    g.input(GGML_TYPE_I32, {ne[2], 1, 1, 1}, Layout::Contiguous, Gen::integer(0, 4096));
                return ggml_rope_ext(g.ctx(), g.input(type, ne), pos, nullptr, 128, GGML_ROPE_TYPE_NEOX, 0,
                                     10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
            });
    }
}

}  // namespace

void add_rope_cases(CaseList & list) {
    for (ggml_op op : {GGML_OP_ROPE, GGML_OP_ROPE_BACK}) {
        for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16})
            add_mode_cases(list, op, type);
    }
    add_perf_cases(list);
}

}  // namespace ggx::ops
