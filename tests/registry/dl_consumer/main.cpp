// Loads the backend modules of a GGX_BACKEND_DL install and computes on the CPU device; bad paths
// fail with a message; loading again, unloading and reloading keep the registry consistent.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include <cstdio>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const std::string & what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
    failures += ok ? 0 : 1;
}

bool cpu_is_last() {
    const size_t count = ggml_backend_dev_count();
    return count > 0 &&
           ggml_backend_dev_type(ggml_backend_dev_get(count - 1)) == GGML_BACKEND_DEVICE_TYPE_CPU;
}

// a + a on the CPU device, through the registry only.
bool cpu_computes() {
    ggml_backend_t cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
    if (!cpu) return false;
    ggml_context * ctx = ggml_init({1 << 20, nullptr, true});
    ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    ggml_tensor * sum = ggml_add(ctx, a, a);
    ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, sum);
    ggml_backend_buffer_t buffer = ggml_backend_alloc_ctx_tensors(ctx, cpu);
    const float data[3] = {1, 2, 3};
    float result[3] = {};
    ggml_backend_tensor_set(a, data, 0, sizeof data);
    const bool computed = ggml_backend_graph_compute(cpu, graph) == GGML_STATUS_SUCCESS;
    ggml_backend_tensor_get(sum, result, 0, sizeof result);
    ggml_backend_buffer_free(buffer);
    ggml_backend_free(cpu);
    ggml_free(ctx);
    return computed && result[0] == 2 && result[2] == 6;
}

}  // namespace

int main() {
    check(ggml_backend_reg_count() == 0, "no backend is built in");
    const bool refused = ggml_backend_load("/no/such/dir/libggml-cpu.so") == nullptr;
    const std::string error = ggml_backend_get_last_error();
    check(refused && error.find("/no/such/dir") != std::string::npos,
          "a bad path fails with a message: " + error);
    ggml_backend_load_all_from_path("/no/such/dir");
    check(ggml_backend_reg_count() == 0, "a folder without modules loads nothing");

    ggml_backend_load_all();  // finds the modules beside libggml
    ggml_backend_reg_t cpu = ggml_backend_reg_by_name("CPU");
    check(cpu != nullptr,
          "load_all registers the CPU module (" + std::to_string(ggml_backend_reg_count()) + " registries)");
    check(!EXPECT_VULKAN || ggml_backend_reg_by_name("Vulkan"),
          "load_all registers the Vulkan module when built");
    check(cpu_is_last(), "the CPU device is listed last");
    check(cpu_computes(), "the CPU device computes");

    const size_t regs = ggml_backend_reg_count();
    ggml_backend_load_all();
    check(ggml_backend_load(CPU_MODULE) == cpu && ggml_backend_reg_count() == regs,
          "loading again changes nothing");

    ggml_backend_unload(cpu);
    check(ggml_backend_reg_count() == regs - 1 && !ggml_backend_reg_by_name("CPU"), "unload unregisters");
    check(ggml_backend_load(CPU_MODULE) != nullptr && cpu_is_last() && cpu_computes(),
          "the module loads again");
    return failures == 0 ? 0 : 1;
}
