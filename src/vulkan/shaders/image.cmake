# kernels/image.cpp: IM2COL, UPSCALE, TIMESTEP_EMBEDDING.
foreach(x f32 f16)
  foreach(d f32 f16)
    ggx_vulkan_shader(im2col_${x}_${d} im2col.comp X_TYPE=${x} D_TYPE=${d})
  endforeach()
endforeach()
ggx_vulkan_shader(upscale upscale.comp)
ggx_vulkan_shader(timestep_embedding timestep_embedding.comp)
