// Vulkan kernels of the matmul family (being written).
#include "vulkan/kernels.h"

namespace ggx::vulkan {

void add_matmul_kernels(KernelTable &) {}

}  // namespace ggx::vulkan
