// Builds a small graph, y = silu(W x + b), and computes it with the reference evaluator.
#include <ggml.h>
#include <reference/reference.h>

#include <cstdio>

int main() {
    ggml_context * ctx = ggml_init({.mem_size = 1 << 20, .mem_buffer = nullptr, .no_alloc = false});
    ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2);  // 2 rows of 3 inputs
    ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2);
    ggml_tensor * y = ggml_silu(ctx, ggml_add(ctx, ggml_mul_mat(ctx, w, x), b));

    ggx::ref::write_tensor(w, std::vector<double>{1, 2, 3, 4, 5, 6});
    ggx::ref::write_tensor(x, std::vector<double>{1, 0, -1});
    ggx::ref::write_tensor(b, std::vector<double>{0.5, -0.5});

    ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, y);
    ggx::ref::Evaluator evaluator;
    evaluator.compute(graph);
    const std::vector<double> result = evaluator.values(y);
    std::printf("result: [%.6f, %.6f]\n", result[0], result[1]);  // silu(-1.5), silu(-2.5)
    ggml_free(ctx);
}
