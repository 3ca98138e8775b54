// The sd pack's Vulkan rope kernels (being written: registers nothing yet).
#include "vulkan/vulkan.h"

namespace sd::vulkan {

bool register_rope(ggml_backend_dev_t, ggml_ext_op_t) { return true; }

}  // namespace sd::vulkan
