# Checks the include graph of src/ against the layer order of docs/architecture.md: every
# `#include "folder/..."` of a file under src/<layer>/ must name a folder that layer may use, so no
# include cycle between folders can form. extensions/ may include only public headers (include/) and
# its own files. Run as: cmake -DSOURCE_DIR=<root> -P check_layers.cmake
cmake_minimum_required(VERSION 3.25)
set(allowed_core core)
set(allowed_interface core interface)
set(allowed_ext core interface ext)
set(allowed_cpu core interface cpu)
set(allowed_vulkan core interface vulkan)
set(allowed_runtime core interface ext runtime)
set(allowed_registry core interface registry)
set(layers core interface ext cpu vulkan runtime registry)

set(violations "")
file(GLOB src_folders RELATIVE ${SOURCE_DIR}/src LIST_DIRECTORIES true ${SOURCE_DIR}/src/*)
foreach(folder IN LISTS src_folders)
  if(IS_DIRECTORY ${SOURCE_DIR}/src/${folder} AND NOT folder IN_LIST layers)
    string(APPEND violations "src/${folder}/ is not a layer of docs/architecture.md\n")
  endif()
endforeach()

# Appends to violations every quoted include of files (a list) whose first folder is one of
# `internal` but not one of `allowed`.
function(check_files files internal allowed)
  foreach(file IN LISTS files)
    file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[^\"]+\"")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" header "${line}")
      if(NOT header MATCHES "/")
        continue()
      endif()
      string(REGEX REPLACE "/.*" "" target "${header}")
      get_filename_component(dir ${file} DIRECTORY)
      if(EXISTS ${dir}/${header})  # relative to the including file: its own folder
        continue()
      endif()
      if(target IN_LIST internal AND NOT target IN_LIST allowed)
        file(RELATIVE_PATH shown ${SOURCE_DIR} ${file})
        string(APPEND violations "${shown} includes \"${header}\"\n")
      endif()
    endforeach()
  endforeach()
  set(violations "${violations}" PARENT_SCOPE)
endfunction()

foreach(layer IN LISTS layers)
  file(GLOB_RECURSE files ${SOURCE_DIR}/src/${layer}/*.h ${SOURCE_DIR}/src/${layer}/*.cpp)
  check_files("${files}" "${layers}" "${allowed_${layer}}")
endforeach()

# extensions/: public headers and the pack's own files only (its own vulkan/ folder resolves first).
file(GLOB_RECURSE ext_files ${SOURCE_DIR}/extensions/*.h ${SOURCE_DIR}/extensions/*.cpp)
foreach(file IN LISTS ext_files)
  file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[^\"]+\"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" header "${line}")
    string(REGEX REPLACE "/.*" "" target "${header}")
    if(header MATCHES "/" AND target IN_LIST layers AND NOT EXISTS ${SOURCE_DIR}/extensions/sd/${header})
      file(RELATIVE_PATH shown ${SOURCE_DIR} ${file})
      string(APPEND violations "${shown} includes the runtime's private \"${header}\"\n")
    endif()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "include graph breaks the layer order:\n${violations}")
endif()
message(STATUS "include graph follows the layer order")
