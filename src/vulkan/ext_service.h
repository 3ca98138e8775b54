// The ggml_ext_vulkan_v1 table (ext_service.cpp), which the Vulkan registry's proc_address returns.
#pragma once

#include <ggml-ext-vulkan.h>

#include "vulkan/device.h"

namespace ggx::vulkan {

const ggml_ext_vulkan_v1 * ext_service();
// The Vulkan device behind a ggml device of the Vulkan registry, or nullptr (registry.cpp).
Device * vulkan_device(ggml_backend_dev_t device);

}  // namespace ggx::vulkan
