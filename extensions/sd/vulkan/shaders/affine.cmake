# vulkan/affine.cpp: the F32 MUL(gate) -> ADD(residual) fusion.
sd_vulkan_shader(sd_mul_add mul_add.comp)
