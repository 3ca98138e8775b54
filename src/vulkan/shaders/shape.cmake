# kernels/shape.cpp: REPEAT/CONCAT/PAD/ROLL/PAD_REFLECT_1D/DIAG/TRI/DIAG_MASK/WIN_PART/WIN_UNPART/
# ARANGE (gather), UPSCALE (upscale, upscale_filter), TIMESTEP_EMBEDDING (timestep_embedding),
# SOLVE_TRI (solve_tri).
ggx_vulkan_shader(gather_u32 gather.comp RAW=uint)
ggx_vulkan_shader(gather_u16 gather.comp RAW=uint16_t)
ggx_vulkan_shader(gather_u8 gather.comp RAW=uint8_t RAW_U8=1)
ggx_vulkan_shader(upscale upscale.comp)
foreach(t f32 f16 bf16)
  ggx_vulkan_shader(upscale_filter_${t} upscale_filter.comp T=${t})
  # REPEAT_BACK (same type), GET_REL_POS (into F16), ADD_REL_POS (F32).
  ggx_vulkan_shader(shape_sum_${t}_${t} shape_sum.comp T=${t} D_TYPE=${t})
  if(NOT t STREQUAL f16)
    ggx_vulkan_shader(shape_sum_${t}_f16 shape_sum.comp T=${t} D_TYPE=f16)
  endif()
endforeach()
ggx_vulkan_shader(timestep_embedding timestep_embedding.comp)
ggx_vulkan_shader(solve_tri solve_tri.comp)
