// Builds a small graph, y = silu(W x + b), and computes it on the CPU backend.
#include <ggml-alloc.h>
#include <ggml-cpu.h>

#include <cstdio>

int main() {
    ggml_context * ctx = ggml_init({.mem_size = 1 << 20, .mem_buffer = nullptr, .no_alloc = true});
    ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2);  // 2 rows of 3 inputs
    ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2);
    ggml_tensor * y = ggml_silu(ctx, ggml_add(ctx, ggml_mul_mat(ctx, w, x), b));
    ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, y);

    ggml_backend_t backend = ggml_backend_cpu_init();
    ggml_backend_buffer_t buffer = ggml_backend_alloc_ctx_tensors(ctx, backend);
    const float w_data[] = {1, 2, 3, 4, 5, 6}, x_data[] = {1, 0, -1}, b_data[] = {0.5f, -0.5f};
    ggml_backend_tensor_set(w, w_data, 0, sizeof w_data);
    ggml_backend_tensor_set(x, x_data, 0, sizeof x_data);
    ggml_backend_tensor_set(b, b_data, 0, sizeof b_data);
    if (ggml_backend_graph_compute(backend, graph) != GGML_STATUS_SUCCESS) return 1;

    float result[2];
    ggml_backend_tensor_get(y, result, 0, sizeof result);
    std::printf("result: [%.6f, %.6f]\n", result[0], result[1]);  // silu(-1.5), silu(-2.5)
    ggml_backend_buffer_free(buffer);
    ggml_backend_free(backend);
    ggml_free(ctx);
}
