// Vulkan kernels of the copy family (being written).
#include "vulkan/kernels.h"

namespace ggx::vulkan {

void add_copy_kernels(KernelTable &) {}

}  // namespace ggx::vulkan
