# vulkan/rope.cpp: sd.rope_apply.v1, the RMSNorm -> Mul -> RoPE fusion and its continuation
# -> Scale -> F16 Copy.
sd_vulkan_shader(sd_rope_apply rope_apply.comp)
sd_vulkan_shader(sd_rms_norm_mul_rope rms_norm_mul_rope.comp)
sd_vulkan_shader(sd_rms_norm_mul_rope_scale_f16 rms_norm_mul_rope.comp SCALE_F16=1)
