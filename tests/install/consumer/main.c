/* A C program that uses the installed ggx headers and library. */
#include <ggml-graph.h>
#include <ggml.h>
#include <stdio.h>

int main(void) {
    struct ggml_init_params params = {1 << 20, NULL, false};
    struct ggml_context * ctx = ggml_init(params);
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, ggml_mul_mat(ctx, a, ggml_add(ctx, b, b)));
    int ok = ggml_graph_is_valid(graph) && ggml_graph_n_nodes(graph) == 2 && ggml_graph_n_leafs(graph) == 2;
    printf("consumer: %s\n", ok ? "ok" : "FAILED");
    ggml_free(ctx);
    return ok ? 0 : 1;
}
