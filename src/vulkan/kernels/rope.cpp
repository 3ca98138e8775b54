// Vulkan kernels of the rope family (being written).
#include "vulkan/kernels.h"

namespace ggx::vulkan {

void add_rope_kernels(KernelTable &) {}

}  // namespace ggx::vulkan
