# vulkan/convrot.cpp: ConvRot quantization, G a specialisation constant.
sd_vulkan_shader(sd_convrot convrot.comp)
