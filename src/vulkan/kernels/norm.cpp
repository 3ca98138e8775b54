// Vulkan kernels of the norm family (being written).
#include "vulkan/kernels.h"

namespace ggx::vulkan {

void add_norm_kernels(KernelTable &) {}

}  // namespace ggx::vulkan
