// A C++ program on the installed headers and libraries: the sd extension pack (ggx::ggx-sd) on
// ggml::ggml, an sd operator computed on the CPU, the INT8 linear built as stable-diffusion.cpp
// builds it (six arguments), and ggml-cpp.h's owning pointers.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpp.h>
#include <ggml.h>
#include <sd-ggml-ext.h>

#include <cstdio>
#include <vector>

int main() {
    ggml_backend_load_all();
    if (sd_ggml_register_extensions() == SD_GGML_EXT_FAILED) {
        std::printf("consumer (C++): sd pack: %s\n", ggml_backend_get_last_error());
        return 1;
    }
    ggml_backend_t cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
    ggml_context * ctx = ggml_init({1 << 20, nullptr, true});
    // One head of 4 channels at 1 position, rotated by the identity: the result is the input.
    ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 4, 1, 1, 1);
    ggml_tensor * pe = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2, 2, 2, 1);
    ggml_tensor * rotated = ggml_rope_apply(ctx, a, pe, false);
    ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, rotated);
    ggml_backend_buffer_t buffer = ggml_backend_alloc_ctx_tensors(ctx, cpu);
    const std::vector<float> input = {1, 2, 3, 4}, identity = {1, 0, 0, 1, 1, 0, 0, 1};
    ggml_backend_tensor_set(a, input.data(), 0, input.size() * sizeof(float));
    ggml_backend_tensor_set(pe, identity.data(), 0, identity.size() * sizeof(float));
    std::vector<float> result(4);
    const bool computed = ggml_backend_graph_compute(cpu, graph) == GGML_STATUS_SUCCESS;
    if (computed) ggml_backend_tensor_get(rotated, result.data(), 0, result.size() * sizeof(float));
    // sd.cpp's call: weight I8 [K=8, N=3], F32 input [8, 2], per-channel scale, no bias, no rotation.
    ggml_context_ptr owned(ggml_init({1 << 16, nullptr, true}));
    ggml_tensor * weight = ggml_new_tensor_2d(owned.get(), GGML_TYPE_I8, 8, 3);
    ggml_tensor * x = ggml_new_tensor_2d(owned.get(), GGML_TYPE_F32, 8, 2);
    ggml_tensor * scale = ggml_new_tensor_1d(owned.get(), GGML_TYPE_F32, 3);
    ggml_tensor * linear = ggml_mul_mat_i8_tensorwise(owned.get(), weight, x, scale, nullptr, 0);
    const bool linear_ok = linear && linear->ne[0] == 3 && linear->ne[1] == 2 &&
                           ggml_backend_dev_supports_op(ggml_backend_get_device(cpu), linear);
    const bool ok = computed && result == input && linear_ok;
    std::printf("consumer (C++): %s\n", ok ? "ok" : "FAILED");
    ggml_backend_buffer_free(buffer);
    ggml_backend_free(cpu);
    ggml_free(ctx);
    return ok ? 0 : 1;
}
