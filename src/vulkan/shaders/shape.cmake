# kernels/shape.cpp: REPEAT/CONCAT/PAD (gather), UPSCALE (upscale), TIMESTEP_EMBEDDING
# (timestep_embedding).
ggx_vulkan_shader(gather_u32 gather.comp RAW=uint)
ggx_vulkan_shader(gather_u16 gather.comp RAW=uint16_t)
ggx_vulkan_shader(upscale upscale.comp)
ggx_vulkan_shader(timestep_embedding timestep_embedding.comp)
