# The sd pack's INT8 GEMM on Vulkan (vulkan/int8.cpp) with its F32 epilogue, alone, continued by
# [SCALE] -> MUL(gate) -> ADD(residual), and continued by SWIGLU of its merged output.
sd_vulkan_shader(sd_linear_i8 linear_i8.comp)
sd_vulkan_shader(sd_linear_i8_gated_residual linear_i8.comp GATED_RESIDUAL=1)
sd_vulkan_shader(sd_linear_i8_swiglu linear_i8.comp SWIGLU=1)
