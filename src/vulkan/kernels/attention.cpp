// Vulkan kernels of the attention family (being written).
#include "vulkan/kernels.h"

namespace ggx::vulkan {

void add_attention_kernels(KernelTable &) {}

}  // namespace ggx::vulkan
