// Random graphs for the scheduler suites: three F32 [n, rows] inputs and 4-23 ops drawn from a
// menu (element-wise, norms, softmax, transposed copies, products, views), summed into one output.
#pragma once

#include <ggml.h>

#include <vector>

#include "support/test_util.h"

namespace ggx::test {

struct RandomGraph {
    // The ops the graphs are made of.
    static constexpr ggml_op kMenu[] = {GGML_OP_ADD,   GGML_OP_MUL,      GGML_OP_UNARY,
                                        GGML_OP_SCALE, GGML_OP_RMS_NORM, GGML_OP_SOFT_MAX,
                                        GGML_OP_CONT,  GGML_OP_MUL_MAT,  GGML_OP_SUM_ROWS};

    RandomGraph(ggml_context * ctx, Rng & rng) {
        const auto pick = [&](int n) { return static_cast<int>(rng.uniform(0, n)); };
        const int64_t n = 1 + pick(24), rows = 1 + pick(5);
        for (int i = 0; i < 3; ++i) {
            ggml_tensor * leaf = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, rows);
            ggml_set_input(leaf);
            inputs.push_back(leaf);
        }
        std::vector<ggml_tensor *> pool = inputs;
        const auto any = [&] { return pool[pick(static_cast<int>(pool.size()))]; };
        const int n_ops = 4 + pick(20);
        for (int i = 0; i < n_ops; ++i) {
            ggml_tensor * a = any();
            ggml_tensor * b = any();
            ggml_tensor * t = nullptr;
            switch (pick(9)) {
                case 0:
                    t = ggml_add(ctx, a, b);
                    break;
                case 1:
                    t = ggml_mul(ctx, a, b);
                    break;
                case 2:
                    t = ggml_silu(ctx, a);
                    break;
                case 3:
                    t = ggml_scale(ctx, a, 0.75f);
                    break;
                case 4:
                    t = ggml_rms_norm(ctx, a, 1e-5f);
                    break;
                case 5:
                    t = ggml_soft_max(ctx, a);
                    break;
                case 6:
                    t = ggml_cont(ctx, ggml_transpose(ctx, ggml_transpose(ctx, a)));
                    break;
                case 7:
                    t = ggml_mul_mat(ctx, a, b);
                    break;  // [rows, rows]: keeps the pool square-free
                default:
                    t = ggml_add(ctx, ggml_view_2d(ctx, a, n, rows, a->nb[1], 0), b);
                    break;
            }
            if (t->ne[0] != n) {  // a mul_mat, [rows, rows]: fold back to [n, rows]
                t = ggml_add(ctx, ggml_scale(ctx, a, 0.5f), ggml_sum_rows(ctx, t));
            }
            pool.push_back(t);
        }
        output = pool.back();
        for (ggml_tensor * t : pool)
            if (t != output) output = ggml_add(ctx, output, ggml_scale(ctx, t, 0.125f));
        ggml_set_output(output);
        graph = ggml_new_graph(ctx);
        ggml_build_forward_expand(graph, output);
    }
    // Sets the same ramps into the inputs of g and of its reference copy ref (allocated graphs).
    static void write_inputs(const RandomGraph & g, const RandomGraph & ref) {
        for (size_t i = 0; i < g.inputs.size(); ++i) {
            const std::vector<float> v = ramp(ggml_nelements(g.inputs[i]), -1.0f + 0.3f * i, 0.037f);
            write_f32(g.inputs[i], v);
            write_f32(ref.inputs[i], v);
        }
    }

    std::vector<ggml_tensor *> inputs;
    ggml_tensor * output;
    ggml_cgraph * graph;
};

}  // namespace ggx::test
