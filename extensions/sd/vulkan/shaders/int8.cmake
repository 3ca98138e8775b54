# The sd pack's INT8 GEMM on Vulkan (vulkan/int8.cpp) with its F32 epilogue, alone, continued by
# [SCALE] -> MUL(gate) -> ADD(residual), continued by SWIGLU of its merged output, and two linears over
# the same activations continued by SWIGLU of both (ggml_swiglu_split).
sd_vulkan_shader(sd_linear_i8 linear_i8.comp)
sd_vulkan_shader(sd_linear_i8_gated_residual linear_i8.comp GATED_RESIDUAL=1)
sd_vulkan_shader(sd_linear_i8_swiglu linear_i8.comp SWIGLU=1)
sd_vulkan_shader(sd_linear_i8_swiglu_split linear_i8.comp SWIGLU=1 SPLIT=1)
# The other operand of a row concatenation copied into its slice, at any float-aligned strides.
sd_vulkan_shader(sd_concat_copy concat_copy.comp)
