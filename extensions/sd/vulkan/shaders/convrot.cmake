# vulkan/convrot.cpp: ConvRot quantization (convrot.glsl), G a specialisation constant, alone and
# after a fused norm and modulation steps, and after a fused SCALE, SWIGLU or SILU/SIGMOID -> MUL.
sd_vulkan_shader(sd_convrot convrot.comp)
sd_vulkan_shader(sd_modulate_convrot modulate_convrot.comp)
sd_vulkan_shader(sd_activation_convrot activation_convrot.comp)
