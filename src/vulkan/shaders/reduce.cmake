# kernels/reduce.cpp: SUM_ROWS/MEAN/SUM (sum), ARGMAX (argmax), CUMSUM (cumsum), COUNT_EQUAL
# (count_equal, count_equal_total), ARGSORT/TOP_K (argsort, argsort_step), CROSS_ENTROPY_LOSS(_BACK)
# (cross_entropy, then sum for the loss).
foreach(t f32 f16 bf16)
  ggx_vulkan_shader(sum_${t}_${t} sum.comp A_TYPE=${t} D_TYPE=${t})
  if(NOT t STREQUAL f32)
    # the two stages of SUM through F32 partial sums
    ggx_vulkan_shader(sum_${t}_f32 sum.comp A_TYPE=${t} D_TYPE=f32)
    ggx_vulkan_shader(sum_f32_${t} sum.comp A_TYPE=f32 D_TYPE=${t})
  endif()
  ggx_vulkan_shader(cumsum_${t} cumsum.comp A_TYPE=${t})
  ggx_vulkan_shader(count_equal_${t} count_equal.comp A_TYPE=${t})
  ggx_vulkan_shader(argsort_${t} argsort.comp A_TYPE=${t})
  ggx_vulkan_shader(cross_entropy_${t} cross_entropy.comp T=${t})
endforeach()
ggx_vulkan_shader(argmax argmax.comp)
ggx_vulkan_shader(count_equal_i32 count_equal.comp A_TYPE=i32 IS_I32=1)
ggx_vulkan_shader(count_equal_total count_equal.comp TOTAL=1)
ggx_vulkan_shader(argsort_step argsort_step.comp)
