# kernels/elementwise.cpp: binary ops, maps of one source, GLU.
foreach(t f32 f16 bf16)
  ggx_vulkan_shader(binary_${t}_${t} binary.comp A_TYPE=${t} B_TYPE=${t} D_TYPE=${t})
  if(NOT t STREQUAL f32)
    ggx_vulkan_shader(binary_${t}_f32 binary.comp A_TYPE=${t} B_TYPE=f32 D_TYPE=${t})
  endif()
  ggx_vulkan_shader(map_${t} map.comp T=${t})
  ggx_vulkan_shader(glu_${t} glu.comp T=${t})
endforeach()
