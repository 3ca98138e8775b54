/* A C program on the installed headers and libraries: builds a graph, computes it on the CPU
 * device found through the registry, checks the result, and calls a function of every public header
 * with ggml's signature. Links ggml::ggml (also through ggx::ggx and through pkg-config's ggml.pc). */
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml-graph.h>
#include <ggml.h>
#include <gguf.h>
#include <stdio.h>
#ifdef CONSUMER_HAS_VULKAN
#include <ggml-vulkan.h>
#endif

/* One call per header, as ggml's programs make them; 1 when each answers sensibly. */
static int headers_answer(void) {
    struct ggml_init_params params = {ggml_graph_overhead_custom(64, false) + ggml_tensor_overhead(), NULL, true};
    struct ggml_context * ctx = ggml_init(params);
    int ok = ctx != NULL && ggml_new_graph_custom(ctx, 64, false) != NULL;
    ggml_free(ctx);
    ggml_time_init();
    ok = ok && ggml_time_us() >= 0 && ggml_cpu_has_avx2() >= 0;
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    ok = ok && galloc != NULL;
    ggml_gallocr_free(galloc);
    struct gguf_context * gguf = gguf_init_empty();
    gguf_set_val_u32(gguf, "general.alignment", 64);
    ok = ok && gguf_get_n_kv(gguf) == 1 && gguf_get_alignment(gguf) == 64;
    gguf_free(gguf);
#ifdef CONSUMER_HAS_VULKAN
    ok = ok && ggml_backend_vk_get_device_count() >= 0;
#endif
    return ok;
}

int main(void) {
    ggml_backend_load_all();
    ggml_backend_t cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    struct ggml_init_params params = {1 << 20, NULL, true};
    struct ggml_context * ctx = ggml_init(params);
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * sum = ggml_add(ctx, a, a);
    struct ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, sum);
    ggml_backend_buffer_t buffer = cpu ? ggml_backend_alloc_ctx_tensors(ctx, cpu) : NULL;
    float result[4] = {0};
    if (buffer) {
        const float data[4] = {1, 2, 3, 4};
        ggml_backend_tensor_set(a, data, 0, sizeof data);
        if (ggml_backend_graph_compute(cpu, graph) == GGML_STATUS_SUCCESS)
            ggml_backend_tensor_get(sum, result, 0, sizeof result);
    }
    int ok =
        ggml_graph_is_valid(graph) && ggml_graph_n_nodes(graph) == 1 && result[3] == 8.0f && headers_answer();
    printf("consumer (C): %s\n", ok ? "ok" : "FAILED");
    ggml_backend_buffer_free(buffer);
    ggml_backend_free(cpu);
    ggml_free(ctx);
    return ok ? 0 : 1;
}
