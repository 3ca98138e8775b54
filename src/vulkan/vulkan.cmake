# The Vulkan backend: host code in this folder, kernels in kernels/, GLSL compute shaders in
# shaders/ compiled by glslc at build time and embedded in the library (cmake/GgxSpirv.cmake).
# Each kernel family lists its shader variants in shaders/<family>.cmake with ggx_vulkan_shader.

# Included from src/CMakeLists.txt (custom-command outputs must be in the directory of their target).
include(GgxSpirv)
set(ggx_vulkan_dir ${CMAKE_CURRENT_LIST_DIR})
set(ggx_vulkan_spv_dir ${CMAKE_CURRENT_BINARY_DIR}/vulkan/spv)
set(ggx_vulkan_names "")
set(ggx_vulkan_files "")

# ggx_vulkan_shader(name source.comp [DEFINE=VALUE ...]): one SPIR-V module from shaders/source.comp.
macro(ggx_vulkan_shader name source)
  ggx_spirv_shader(ggx_vulkan ${name} ${ggx_vulkan_dir}/shaders/${source} ${ARGN})
endmacro()

# The block types the shaders dequantize (shaders/quant.glsl), and those they also quantize.
set(ggx_vulkan_grid_types iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m)
set(ggx_vulkan_block_types q4_0 q4_1 q5_0 q5_1 q8_0 q8_1 q2_K q3_K q4_K q5_K q6_K q8_K iq4_nl iq4_xs mxfp4 nvfp4
    tq1_0 tq2_0 q1_0 q2_0 ${ggx_vulkan_grid_types})
set(ggx_vulkan_quantize_types q4_0 q4_1 q5_0 q5_1 q8_0 q8_1 iq4_nl mxfp4 nvfp4 tq1_0 tq2_0 q1_0 q2_0)

# ggx_vulkan_block_defines(<out> <type>): the defines a shader reading block type <type> needs
# (QUANT_GRIDS for the i-quants, whose grids the host binds).
function(ggx_vulkan_block_defines out type)
  if(type IN_LIST ggx_vulkan_grid_types)
    set(${out} QUANT_GRIDS=1 PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

file(MAKE_DIRECTORY ${ggx_vulkan_spv_dir})
file(GLOB ggx_vulkan_shader_lists CONFIGURE_DEPENDS ${ggx_vulkan_dir}/shaders/*.cmake)
foreach(list_file IN LISTS ggx_vulkan_shader_lists)
  include(${list_file})
endforeach()

set(ggx_vulkan_table ${CMAKE_CURRENT_BINARY_DIR}/vulkan/shader_table.cpp)
ggx_spirv_table(ggx_vulkan ${ggx_vulkan_table} HEADER vulkan/shaders.h NAMESPACE ggx::vulkan TYPE ShaderCode
                FUNCTION shader_table)

file(GLOB ggx_vulkan_kernel_sources CONFIGURE_DEPENDS ${ggx_vulkan_dir}/kernels/*.cpp)
set(ggx_vulkan_sources
  ${ggx_vulkan_dir}/device.cpp
  ${ggx_vulkan_dir}/buffer.cpp
  ${ggx_vulkan_dir}/backend.cpp
  ${ggx_vulkan_dir}/pipeline_cache.cpp
  ${ggx_vulkan_dir}/recorder.cpp
  ${ggx_vulkan_dir}/registry.cpp
  ${ggx_vulkan_dir}/ext_service.cpp
  ${ggx_vulkan_kernel_sources})
ggx_backend(ggml-vulkan ${ggx_vulkan_sources} ${ggx_vulkan_table})
# Vulkan structures are initialised as {sType} with the rest zeroed, by design.
set_source_files_properties(${ggx_vulkan_sources}
  PROPERTIES COMPILE_OPTIONS -Wno-missing-field-initializers)
target_link_libraries(ggml-vulkan PRIVATE Vulkan::Vulkan)
