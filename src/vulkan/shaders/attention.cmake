# kernels/attention.cpp: FLASH_ATTN_EXT (one pass, or key splits and their combination).
foreach(k f32 f16)
  foreach(v f32 f16)
    foreach(m f32 f16)
      ggx_vulkan_shader(flash_attn_${k}_${v}_${m} flash_attn.comp K_TYPE=${k} V_TYPE=${v} M_TYPE=${m})
    endforeach()
  endforeach()
endforeach()
ggx_vulkan_shader(flash_attn_combine flash_attn_combine.comp)
