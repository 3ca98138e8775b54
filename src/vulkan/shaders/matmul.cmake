# kernels/matmul.cpp: MUL_MAT, tiled (mul_mat) and for few columns (mul_mat_vec), and MUL_MAT_ID
# (mul_mat_id: the matrix-vector kernel, routed), per weight type x activation type.
foreach(b f32 f16 bf16)
  foreach(a f32 f16 bf16)
    ggx_vulkan_shader(mul_mat_${a}_${b} mul_mat.comp A_TYPE=${a} B_TYPE=${b})
    ggx_vulkan_shader(mul_mat_vec_${a}_${b} mul_mat_vec.comp A_TYPE=${a} B_TYPE=${b})
    ggx_vulkan_shader(mul_mat_id_${a}_${b} mul_mat_vec.comp A_TYPE=${a} B_TYPE=${b} ROUTED=1)
  endforeach()
  foreach(a ${ggx_vulkan_block_types})
    ggx_vulkan_shader(mul_mat_${a}_${b} mul_mat.comp A_QUANT=${a} B_TYPE=${b})
    ggx_vulkan_shader(mul_mat_vec_${a}_${b} mul_mat_vec.comp A_QUANT=${a} B_TYPE=${b})
    ggx_vulkan_shader(mul_mat_id_${a}_${b} mul_mat_vec.comp A_QUANT=${a} B_TYPE=${b} ROUTED=1)
  endforeach()
endforeach()
