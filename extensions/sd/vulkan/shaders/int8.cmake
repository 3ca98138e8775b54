# The sd pack's INT8 kernels on Vulkan (vulkan/int8.cpp): ConvRot quantization with G = 256 and the
# INT8 GEMM with its F32 epilogue.
sd_vulkan_shader(sd_convrot_g256 convrot.comp)
sd_vulkan_shader(sd_linear_i8 linear_i8.comp)
