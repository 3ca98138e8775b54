# kernels/shape.cpp: REPEAT/CONCAT/PAD/ROLL/PAD_REFLECT_1D/DIAG/TRI/DIAG_MASK/WIN_PART/WIN_UNPART/
# ARANGE (gather), UPSCALE (upscale, upscale_filter), TIMESTEP_EMBEDDING (timestep_embedding).
ggx_vulkan_shader(gather_u32 gather.comp RAW=uint)
ggx_vulkan_shader(gather_u16 gather.comp RAW=uint16_t)
ggx_vulkan_shader(gather_u8 gather.comp RAW=uint8_t RAW_U8=1)
ggx_vulkan_shader(upscale upscale.comp)
foreach(t f32 f16 bf16)
  ggx_vulkan_shader(upscale_filter_${t} upscale_filter.comp T=${t})
endforeach()
ggx_vulkan_shader(timestep_embedding timestep_embedding.comp)
