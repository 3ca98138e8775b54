# vulkan/rope.cpp: sd.rope_apply.v1 and the RMSNorm -> Mul -> RoPE fusion.
sd_vulkan_shader(sd_rope_apply rope_apply.comp)
sd_vulkan_shader(sd_rms_norm_mul_rope rms_norm_mul_rope.comp)
