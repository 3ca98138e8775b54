// Vulkan kernels of the image family (being written).
#include "vulkan/kernels.h"

namespace ggx::vulkan {

void add_image_kernels(KernelTable &) {}

}  // namespace ggx::vulkan
