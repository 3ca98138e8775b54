// The backends enabled in CMake and linked into this library; each is optional and only its public
// entry point is named here. With GGX_BACKEND_DL none is linked: ggml_backend_load_all loads them.
#include "registry/registry.h"

#ifdef GGX_BACKEND_CPU
#include <ggml-cpu.h>
#endif
#ifdef GGX_BACKEND_VULKAN
#include <ggml-vulkan.h>
#endif

namespace ggx::registry {

std::vector<ggml_backend_reg_t> builtin_registries() {
    std::vector<ggml_backend_reg_t> regs;
#ifdef GGX_BACKEND_VULKAN
    regs.push_back(ggml_backend_vk_reg());
#endif
#ifdef GGX_BACKEND_CPU
    regs.push_back(ggml_backend_cpu_reg());
#endif
    return regs;
}

}  // namespace ggx::registry
