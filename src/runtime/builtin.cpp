// Lists the backends enabled in CMake; each is optional and only its entry point is named here.
#include "interface/builtin.h"

#ifdef GGX_BACKEND_CPU
#include <ggml-cpu.h>
#endif
#ifdef GGX_BACKEND_VULKAN
#include <ggml-vulkan.h>
#endif

namespace ggx::backend {

std::vector<ggml_backend_reg_t> builtin_registries() {
    std::vector<ggml_backend_reg_t> regs;
#ifdef GGX_BACKEND_CPU
    regs.push_back(ggml_backend_cpu_reg());
#endif
#ifdef GGX_BACKEND_VULKAN
    regs.push_back(ggml_backend_vk_reg());
#endif
    return regs;
}

}  // namespace ggx::backend
