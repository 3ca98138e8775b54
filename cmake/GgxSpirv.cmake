# GLSL compute shaders compiled to SPIR-V by glslc at build time and embedded as a table of words
# (cmake/EmbedSpirv.cmake), for the Vulkan backend and for extension packs alike.
#
#   ggx_spirv_shader(<prefix> <name> <source> [NO_OPTIMIZE] [DEFINE=VALUE ...])
#     compiles <source> (with -I its folder) to <prefix>_spv_dir/<name>.spv and appends the name and
#     file to <prefix>_names and <prefix>_files in the caller's scope. NO_OPTIMIZE compiles with -O0,
#     for shaders whose results the SPIR-V optimiser may change (e.g. by re-associating reductions).
#   ggx_spirv_table(<prefix> <output.cpp> HEADER <h> NAMESPACE <ns> TYPE <t> FUNCTION <f>)
#     writes output.cpp defining `const std::vector<t> & ns::f()` over the compiled modules; t is an
#     aggregate {const char * name; const uint32_t * words; size_t n_words;} declared in header h.
set(GGX_EMBED_SPIRV_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/EmbedSpirv.cmake)

macro(ggx_spirv_shader prefix name source)
  set(_spv ${${prefix}_spv_dir}/${name}.spv)
  set(_defines "")
  set(_optimize -O)
  foreach(_define ${ARGN})
    if(_define STREQUAL "NO_OPTIMIZE")
      set(_optimize -O0)
    else()
      list(APPEND _defines -D${_define})
    endif()
  endforeach()
  get_filename_component(_source_dir ${source} DIRECTORY)
  add_custom_command(OUTPUT ${_spv}
    COMMAND ${Vulkan_GLSLC_EXECUTABLE} --target-env=vulkan1.2 -fshader-stage=compute ${_optimize} -Werror
            -I ${_source_dir} ${_defines} -MD -MF ${_spv}.d -o ${_spv} ${source}
    DEPENDS ${source}
    DEPFILE ${_spv}.d
    COMMENT "glslc ${name}"
    VERBATIM)
  list(APPEND ${prefix}_names ${name})
  list(APPEND ${prefix}_files ${_spv})
endmacro()

function(ggx_spirv_table prefix output)
  cmake_parse_arguments(arg "" "HEADER;NAMESPACE;TYPE;FUNCTION" "" ${ARGN})
  add_custom_command(OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${output} "-DNAMES=${${prefix}_names}" -DSPV_DIR=${${prefix}_spv_dir}
            -DHEADER=${arg_HEADER} -DNAMESPACE=${arg_NAMESPACE} -DTYPE=${arg_TYPE} -DFUNCTION=${arg_FUNCTION}
            -P ${GGX_EMBED_SPIRV_SCRIPT}
    DEPENDS ${${prefix}_files} ${GGX_EMBED_SPIRV_SCRIPT}
    COMMENT "Embedding ${prefix} SPIR-V"
    VERBATIM)
endfunction()
