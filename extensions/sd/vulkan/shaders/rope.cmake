# vulkan/rope.cpp: sd.rope_apply.v1, the RMSNorm -> Mul -> RoPE fusion and its continuation
# -> Scale -> F16 Copy. Compiled without SPIR-V optimisation (the spec's policy for these shaders: the
# optimiser may change the reduction's results).
sd_vulkan_shader(sd_rope_apply rope_apply.comp NO_OPTIMIZE)
sd_vulkan_shader(sd_rms_norm_mul_rope rms_norm_mul_rope.comp NO_OPTIMIZE)
sd_vulkan_shader(sd_rms_norm_mul_rope_scale_f16 rms_norm_mul_rope.comp NO_OPTIMIZE SCALE_F16=1)
