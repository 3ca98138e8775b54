// For the suites that drive the Vulkan execution service (ggml-ext-vulkan.h): the service table and
// the SPIR-V of tests/vulkan/ext_scale.comp (built into GGX_TEST_SPV_DIR).
#pragma once

#include <ggml-backend.h>
#include <ggml-ext-vulkan.h>
#include <ggml-vulkan.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace ggx::test {

inline const ggml_ext_vulkan_v1 * service() {
    return static_cast<const ggml_ext_vulkan_v1 *>(
        ggml_backend_reg_get_proc_address(ggml_backend_vk_reg(), GGML_EXT_VULKAN_V1));
}

inline const std::vector<uint32_t> & scale_spirv() {
    static const std::vector<uint32_t> words = [] {
        std::ifstream file(GGX_TEST_SPV_DIR "/ext_scale.spv", std::ios::binary);
        const std::vector<char> bytes{std::istreambuf_iterator<char>(file), {}};
        std::vector<uint32_t> w(bytes.size() / 4);
        std::memcpy(w.data(), bytes.data(), w.size() * 4);
        return w;
    }();
    return words;
}

}  // namespace ggx::test
