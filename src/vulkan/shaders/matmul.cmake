# kernels/matmul.cpp: MUL_MAT, tiled (mul_mat) and for few columns (mul_mat_vec), per weight type x
# activation type.
foreach(b f32 f16 bf16)
  foreach(a f32 f16 bf16)
    ggx_vulkan_shader(mul_mat_${a}_${b} mul_mat.comp A_TYPE=${a} B_TYPE=${b})
    ggx_vulkan_shader(mul_mat_vec_${a}_${b} mul_mat_vec.comp A_TYPE=${a} B_TYPE=${b})
  endforeach()
  foreach(a q8_0 q4_0)
    ggx_vulkan_shader(mul_mat_${a}_${b} mul_mat.comp A_QUANT=${a} B_TYPE=${b})
    ggx_vulkan_shader(mul_mat_vec_${a}_${b} mul_mat_vec.comp A_QUANT=${a} B_TYPE=${b})
  endforeach()
endforeach()
