# kernels/recurrent.cpp: SSM_CONV (ssm_conv, by sx and weight type), SSM_SCAN (ssm_scan), RWKV_WKV6,
# GATED_LINEAR_ATTN and RWKV_WKV7 (linear_attn, by op) and GATED_DELTA_NET (gated_delta_net).
foreach(sx f32 f16 bf16)
  foreach(w f32 f16 bf16)
    ggx_vulkan_shader(ssm_conv_${sx}_${w} ssm_conv.comp X_TYPE=${sx} W_TYPE=${w})
  endforeach()
endforeach()
ggx_vulkan_shader(ssm_scan ssm_scan.comp)
ggx_vulkan_shader(rwkv_wkv6 linear_attn.comp OP=0)
ggx_vulkan_shader(gated_linear_attn linear_attn.comp OP=1)
ggx_vulkan_shader(rwkv_wkv7 linear_attn.comp OP=2)
ggx_vulkan_shader(gated_delta_net gated_delta_net.comp)
