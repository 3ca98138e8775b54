# kernels/softmax.cpp: SOFT_MAX (soft_max, by mask type).
foreach(t f32 f16)
  ggx_vulkan_shader(soft_max_${t} soft_max.comp M_TYPE=${t})
endforeach()
