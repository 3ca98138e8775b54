# kernels/reduce.cpp: SUM_ROWS/MEAN/SUM (sum), ARGMAX (argmax).
foreach(t f32 f16 bf16)
  ggx_vulkan_shader(sum_${t}_${t} sum.comp A_TYPE=${t} D_TYPE=${t})
  if(NOT t STREQUAL f32)
    # the two stages of SUM through F32 partial sums
    ggx_vulkan_shader(sum_${t}_f32 sum.comp A_TYPE=${t} D_TYPE=f32)
    ggx_vulkan_shader(sum_f32_${t} sum.comp A_TYPE=f32 D_TYPE=${t})
  endif()
endforeach()
ggx_vulkan_shader(argmax argmax.comp)
