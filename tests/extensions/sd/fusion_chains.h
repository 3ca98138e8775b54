// The chains of the sd pack's ConvRot and affine fusion rules and the checks the CPU and Vulkan suites
// run on them (test_sd_fusions.cpp, test_sd_fusions_vulkan.cpp): each rule fires on its chains, gives
// bytes identical to the unfused nodes (run with an eval callback, which keeps individual operations),
// leaves its eliminated intermediates without storage (GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE), and
// does not fire when an intermediate has a consumer outside the chain, with the legality check's
// reason in explain mode.
#pragma once

#include <ggml-backend.h>
#include <ggml-ext.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "common/plan_steps.h"
#include "sd-ggml-ext.h"
#include "support/test_util.h"

namespace ggx::test::sd_fusions {

using ggx::test::contains;
using ggx::test::Context;
using ggx::test::Sched;

// A chain's graph: its inputs, the intermediates the rule eliminates and its output.
struct Chain {
    std::vector<ggml_tensor *> inputs;
    std::vector<ggml_tensor *> intermediates;
    ggml_tensor * out = nullptr;
    const ggml_tensor * out_in_place_over = nullptr;  // the block the fused output must take, if any
};

using Build = std::function<Chain(ggml_context *)>;

struct FusionCase {
    const char * name;
    const char * rule;  // without the device suffix (".cpu", ".vulkan")
    Build build;
};

inline ggml_tensor * input(ggml_context * c, Chain & ch, int64_t n0, int64_t n1, int64_t n2 = 1,
                           int64_t n3 = 1) {
    ggml_tensor * t = ggml_new_tensor_4d(c, GGML_TYPE_F32, n0, n1, n2, n3);
    ggml_set_input(t);
    ch.inputs.push_back(t);
    return t;
}

// Values over the activations' interesting range, with the exp clamp's edges, zeros and a few large
// magnitudes.
inline std::vector<float> values(std::mt19937 & rng, size_t n) {
    std::uniform_real_distribution<float> dist(-6.0f, 6.0f);
    const float special[] = {0.0f, -0.0f, 95.0f, -95.0f, 110.0f, -110.0f, 1e-30f, 3e4f};
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = i % 37 == 5 ? special[(i / 37) % std::size(special)] : dist(rng);
    return v;
}

inline std::vector<uint8_t> bytes_of(const ggml_tensor * t) {
    std::vector<uint8_t> b(ggml_nbytes(t));
    ggml_backend_tensor_get(t, b.data(), 0, b.size());
    return b;
}

struct ChainRun {
    Context ctx{ggml_init({size_t{1} << 20, nullptr, true})};
    Chain chain;
    ggml_cgraph * graph = nullptr;
    Sched sched;
    std::string explanation;

    // extra_consumer: also computes a use of the first intermediate, outside the chain.
    ChainRun(std::vector<ggml_backend_t> backends, const Build & build, bool keep_operations,
             bool extra_consumer = false) {
        chain = build(ctx.get());
        if (!chain.out) {
            ADD_FAILURE() << "building the chain failed: " << ggml_get_error(ctx.get());
            return;
        }
        ggml_set_output(chain.out);
        graph = ggml_new_graph(ctx.get());
        ggml_build_forward_expand(graph, chain.out);
        if (extra_consumer) {
            ggml_tensor * extra = ggml_scale(ctx.get(), chain.intermediates.front(), 2.0f);
            ggml_set_output(extra);
            ggml_build_forward_expand(graph, extra);
        }
        sched.reset(ggml_backend_sched_new(backends.data(), nullptr, static_cast<int>(backends.size()), 512,
                                           false, false));
        ggml_ext_sched_set_explain(sched.get(), true);
        if (keep_operations)
            ggml_backend_sched_set_eval_callback(
                sched.get(), [](ggml_tensor *, bool, void *) { return true; }, nullptr);
    }
    std::vector<uint8_t> compute(uint32_t seed) {
        if (!graph) return {};
        EXPECT_TRUE(ggml_backend_sched_alloc_graph(sched.get(), graph)) << ggml_backend_get_last_error();
        explanation = ggml_ext_sched_explanation(sched.get());
        std::mt19937 rng(seed);
        for (ggml_tensor * t : chain.inputs) {
            const std::vector<float> v = values(rng, static_cast<size_t>(ggml_nelements(t)));
            ggml_backend_tensor_set(t, v.data(), 0, ggml_nbytes(t));
        }
        EXPECT_EQ(ggml_backend_sched_graph_compute(sched.get(), graph), GGML_STATUS_SUCCESS)
            << ggml_backend_get_last_error();
        return bytes_of(chain.out);
    }
};

// ---- the chains ---------------------------------------------------------------------------------

inline Chain scale_convrot(ggml_context * c, int64_t k, int64_t rows, int group) {
    Chain ch;
    ggml_tensor * s = ggml_scale_bias(c, input(c, ch, k, rows, 2), 0.37f, -0.25f);
    ch.intermediates = {s};
    ch.out = ggml_quantize_i8_convrot(c, s, group);
    return ch;
}

enum class Glu { packed, swapped, split };

inline Chain swiglu_convrot(ggml_context * c, Glu form, int64_t k, int64_t rows, int group) {
    Chain ch;
    ggml_tensor * g = nullptr;
    if (form == Glu::split) {
        ggml_tensor * gate = input(c, ch, k, rows);
        g = ggml_swiglu_split(c, gate, input(c, ch, k, rows));
    } else {
        ggml_tensor * x = input(c, ch, 2 * k, rows);
        g = form == Glu::packed ? ggml_swiglu(c, x) : ggml_swiglu_swapped(c, x);
    }
    ch.intermediates = {g};
    ch.out = ggml_quantize_i8_convrot(c, g, group);
    return ch;
}

// The up operand is computed by a node of its own, placed between the activation and the Mul by the
// graph's order: the rule's optimize callback makes the chain consecutive.
inline Chain activation_mul_convrot(ggml_context * c, bool sigmoid, bool activation_first, bool broadcast_up,
                                    int64_t k, int64_t rows, int group) {
    Chain ch;
    ggml_tensor * x = input(c, ch, k, rows, 3);
    ggml_tensor * act = sigmoid ? ggml_sigmoid(c, x) : ggml_silu(c, x);
    ggml_tensor * up = ggml_scale(c, input(c, ch, k, broadcast_up ? 1 : rows, 3), 1.5f);
    ggml_tensor * m = activation_first ? ggml_mul(c, act, up) : ggml_mul(c, up, act);
    ch.intermediates = {act, m};
    ch.out = ggml_quantize_i8_convrot(c, m, group);
    return ch;
}

enum class Residual { after, before, in_place };

// computed_x: x is a node's result, which the fused output may take over in place
// (GGML_EXT_FUSION_OUTPUT_IN_PLACE), as the unfused in-place Mul and Add would.
inline Chain mul_add(ggml_context * c, Residual form, bool scalar_gate, bool computed_x, int64_t k,
                     int64_t rows) {
    Chain ch;
    ggml_tensor * x = input(c, ch, k, rows, 2);
    if (computed_x) x = ggml_scale(c, x, 0.75f);
    ggml_tensor * m = ggml_mul(c, x, input(c, ch, scalar_gate ? 1 : k, 1, 2));
    ggml_tensor * r = input(c, ch, k, rows, 2);
    ch.intermediates = {m};
    ch.out = form == Residual::after    ? ggml_add(c, m, r)
             : form == Residual::before ? ggml_add(c, r, m)
                                        : ggml_add_inplace(c, m, r);
    if (computed_x && form == Residual::after) ch.out_in_place_over = x;
    return ch;
}

inline Chain concat_f16(ggml_context * c, bool permuted, int dim) {
    Chain ch;
    ggml_tensor * a = input(c, ch, 24, 5, 3);
    ggml_tensor * b = input(c, ch, dim == 0 ? 8 : 24, dim == 1 ? 4 : 5, dim == 2 ? 2 : 3);
    ggml_tensor * cat = ggml_concat(c, a, b, dim);
    ch.intermediates = {cat};
    if (!permuted) {
        ch.out = ggml_cast(c, cat, GGML_TYPE_F16);
        return ch;
    }
    ggml_tensor * p = ggml_permute(c, cat, 0, 2, 1, 3);
    ch.intermediates.push_back(p);
    ch.out = ggml_cpy(c, p, ggml_new_tensor(c, GGML_TYPE_F16, GGML_MAX_DIMS, p->ne));
    return ch;
}

inline Chain cont_scale_f16(ggml_context * c) {
    Chain ch;
    ggml_tensor * y = input(c, ch, 6, 40, 4);
    ggml_tensor * cont = ggml_cont(c, ggml_transpose(c, y));  // [40, 6, 4]
    ggml_tensor * s = ggml_scale_bias(c, cont, 0.125f, 0.5f);
    ggml_tensor * p = ggml_permute(c, s, 1, 0, 2, 3);
    ch.intermediates = {cont, s, p};
    ch.out = ggml_cast(c, p, GGML_TYPE_F16);
    return ch;
}

// The chains ending in ConvRot quantization (every row length a multiple of 4, as Vulkan wants).
inline std::vector<FusionCase> convrot_cases() {
    std::vector<FusionCase> list;
    for (int g : {1, 4, 64, 256})
        list.push_back({"scale_convrot", "sd.scale_convrot",
                        [g](ggml_context * c) { return scale_convrot(c, 256, 5, g); }});
    list.push_back({"scale_convrot_long", "sd.scale_convrot",
                    [](ggml_context * c) { return scale_convrot(c, 5120, 3, 256); }});
    for (Glu form : {Glu::packed, Glu::swapped, Glu::split})
        list.push_back({"swiglu_convrot", "sd.swiglu_convrot",
                        [form](ggml_context * c) { return swiglu_convrot(c, form, 320, 7, 64); }});
    for (bool sigmoid : {false, true})
        for (bool first : {true, false})
            for (bool broadcast : {false, first})  // (the broadcast operand must be the Mul's src1)
                list.push_back({"activation_mul_convrot", "sd.activation_mul_convrot", [=](ggml_context * c) {
                                    return activation_mul_convrot(c, sigmoid, first, broadcast, 144, 5, 16);
                                }});
    return list;
}

// The Mul(gate) -> Add(residual) chains.
inline std::vector<FusionCase> mul_add_cases() {
    std::vector<FusionCase> list;
    for (Residual form : {Residual::after, Residual::before, Residual::in_place})
        for (bool scalar : {false, true})
            for (bool computed_x : {false, true})
                list.push_back({"mul_add", "sd.mul_add", [=](ggml_context * c) {
                                    return mul_add(c, form, scalar, computed_x, 37, 6);
                                }});
    return list;
}

// The affine chains: Mul -> Add, then the F16 copies.
inline std::vector<FusionCase> affine_cases() {
    std::vector<FusionCase> list = mul_add_cases();
    for (int dim : {0, 1, 2})
        for (bool permuted : {false, true})
            list.push_back({"concat_f16", "sd.concat_f16",
                            [=](ggml_context * c) { return concat_f16(c, permuted, dim); }});
    list.push_back({"cont_scale_f16", "sd.cont_scale_f16", cont_scale_f16});
    return list;
}

// Each case's rule (name + suffix) fires on backends[0]'s device and gives the bytes of the unfused
// chain (the same graph with an eval callback); its eliminated intermediates have no storage.
inline void expect_fused_equals_unfused(const std::vector<ggml_backend_t> & backends,
                                        const std::vector<FusionCase> & cases, const std::string & suffix) {
    int index = 0;
    for (const FusionCase & fc : cases) {
        SCOPED_TRACE(std::string(fc.name) + " #" + std::to_string(index++));
        const std::string rule = fc.rule + suffix;
        ChainRun fused(backends, fc.build, false), unfused(backends, fc.build, true);
        const std::vector<uint8_t> got = fused.compute(7), want = unfused.compute(7);
        EXPECT_TRUE(ggx::tools::fusion_fired(fused.sched.get(), rule.c_str()))
            << ggx::tools::describe_plan(fused.sched.get()) << "\n"
            << fused.explanation;
        EXPECT_FALSE(ggx::tools::fusion_fired(unfused.sched.get(), rule.c_str()));
        EXPECT_EQ(got, want);
        // Declared GGML_EXT_FUSION_NO_INTERMEDIATE_STORAGE: the eliminated owners take no memory (the
        // in-place Add writes back into the Mul, which keeps its storage).
        for (const ggml_tensor * t : fused.chain.intermediates)
            if (!t->view_src && t != fused.chain.out->view_src) {
                EXPECT_EQ(t->data, nullptr) << t->name;
            }
        for (const ggml_tensor * t : unfused.chain.intermediates)
            EXPECT_NE(t->data, nullptr);
        if (const ggml_tensor * head = fused.chain.out_in_place_over) {
            EXPECT_EQ(fused.chain.out->data, head->data);
        }
    }
}

// With another consumer of an intermediate no rule fires, the results are the unfused ones, and
// explain mode names the rule and the legality rule that failed.
inline void expect_external_consumer_blocks(const std::vector<ggml_backend_t> & backends,
                                            const std::vector<FusionCase> & cases,
                                            const std::string & suffix) {
    for (const FusionCase & fc : cases) {
        SCOPED_TRACE(fc.name);
        const std::string rule = fc.rule + suffix;
        ChainRun observed(backends, fc.build, false, true), unfused(backends, fc.build, true, true);
        EXPECT_EQ(observed.compute(3), unfused.compute(3));
        EXPECT_FALSE(ggx::tools::fusion_fired(observed.sched.get(), rule.c_str()));
        EXPECT_TRUE(contains(observed.explanation, "fusion '" + rule + "' matched")) << observed.explanation;
        EXPECT_TRUE(contains(observed.explanation, "rule 'external uses' fails")) << observed.explanation;
    }
}

}  // namespace ggx::test::sd_fusions
