# kernels/reduce.cpp: ARGMAX.
ggx_vulkan_shader(argmax argmax.comp)
