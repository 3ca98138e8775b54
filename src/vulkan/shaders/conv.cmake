# kernels/conv.cpp: IM2COL (im2col).
foreach(x f32 f16)
  foreach(d f32 f16)
    ggx_vulkan_shader(im2col_${x}_${d} im2col.comp X_TYPE=${x} D_TYPE=${d})
  endforeach()
endforeach()
