// The sd pack's Vulkan int8 kernels (being written: registers nothing yet).
#include "vulkan/vulkan.h"

namespace sd::vulkan {

bool register_int8(ggml_backend_dev_t) { return true; }

}  // namespace sd::vulkan
