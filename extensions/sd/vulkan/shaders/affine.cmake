# vulkan/affine.cpp: the F32 MUL(gate) -> ADD(residual) fusion.
sd_vulkan_shader(sd_mul_add mul_add.comp)
# The F16 copies of a Concat or a scaled Contiguous, through an optional Permute.
sd_vulkan_shader(sd_f16_copy f16_copy.comp)
