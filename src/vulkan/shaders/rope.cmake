# kernels/rope.cpp: ROPE.
foreach(t f32 f16)
  ggx_vulkan_shader(rope_${t} rope.comp T=${t})
endforeach()
