# kernels/norm.cpp: NORM, RMS_NORM, L2_NORM, GROUP_NORM (norm).
ggx_vulkan_shader(norm norm.comp)
