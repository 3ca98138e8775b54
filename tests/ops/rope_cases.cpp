// ggx-ops case table: ROPE, NORMAL and NEOX, F32 and F16, full and partial rotation, with and
// without frequency factors, plain, linear and YaRN scaling, over every input layout.
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

void add_case(CaseList & list, ggml_type type, int mode, const RopeShape & s, bool factors, const Scaling & k,
              Layout layout) {
    list.add(GGML_OP_ROPE,
             std::string(mode == GGML_ROPE_TYPE_NEOX ? "neox " : "normal ") + str(type) + " " + str(s.ne) +
                 " n_dims " + std::to_string(s.n_dims) + (factors ? " factors " : " ") + k.name + " " +
                 layout_name(layout),
             [=](Graph & g) {
                 ggml_tensor * a = g.input(type, s.ne, layout);
                 ggml_tensor * pos =
                     g.input(GGML_TYPE_I32, {s.ne[2], 1, 1, 1}, Layout::Contiguous, Gen::integer(0, 1024));
                 ggml_tensor * ff = factors ? g.input(GGML_TYPE_F32, {s.n_dims / 2, 1, 1, 1},
                                                      Layout::Contiguous, Gen::uniform(0.5, 4.0))
                                            : nullptr;
                 return ggml_rope_ext(g.ctx(), a, pos, ff, s.n_dims, mode, k.n_ctx_orig, 10000.0f,
                                      k.freq_scale, k.ext_factor, k.attn_factor, k.beta_fast, k.beta_slow);
             });
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
    for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16}) {
        for (int mode : {GGML_ROPE_TYPE_NORMAL, GGML_ROPE_TYPE_NEOX}) {
            for (const RopeShape & s : kShapes) {
                for (bool factors : {false, true}) {
                    for (const Scaling & k : kScalings)
                        add_case(list, type, mode, s, factors, k, Layout::Contiguous);
                }
                for (Layout layout : {Layout::Transposed, Layout::Permuted, Layout::Strided}) {
                    add_case(list, type, mode, s, false, kScalings[0], layout);
                }
            }
        }
    }
    add_perf_cases(list);
}

}  // namespace ggx::ops
