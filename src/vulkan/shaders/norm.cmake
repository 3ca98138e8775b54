# kernels/norm.cpp: NORM, RMS_NORM, L2_NORM, GROUP_NORM (norm).
ggx_vulkan_shader(norm norm.comp)
# kernels/norm.cpp: RMS_NORM_BACK and kernels/softmax.cpp: SOFT_MAX_BACK (row_back).
ggx_vulkan_shader(row_back row_back.comp)
