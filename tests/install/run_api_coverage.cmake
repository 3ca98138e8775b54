# Installs the already built tree into WORK_DIR/prefix and runs ../shared/tools/api-coverage (TOOL) on
# it: which of ggml's public functions the install declares and defines. Prints the tool's report on
# the whole list; fails while a name outside the headers still to come (LATER, below) is missing;
# says "api_coverage: skipped" when the tool is absent.
cmake_minimum_required(VERSION 3.25)
set(LATER "")  # headers still to come: none
if(NOT EXISTS ${TOOL})
  message("api_coverage: skipped: ${TOOL} not found")
  return()
endif()
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                OUTPUT_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
execute_process(COMMAND ${TOOL} ${WORK_DIR}/prefix OUTPUT_VARIABLE report ERROR_VARIABLE report)
message("${report}")

get_filename_component(tool_dir ${TOOL} DIRECTORY)
file(STRINGS ${tool_dir}/../compat/ggml-public-api.tsv names)
set(required "")
foreach(line IN LISTS names)
  string(REGEX REPLACE "\t.*" "" header "${line}")
  if(NOT header IN_LIST LATER)
    string(APPEND required "${line}\n")
  endif()
endforeach()
file(WRITE ${WORK_DIR}/required.tsv "${required}")
execute_process(COMMAND ${TOOL} ${WORK_DIR}/prefix ${WORK_DIR}/required.tsv OUTPUT_VARIABLE verdict
                ERROR_VARIABLE verdict RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "api-coverage: names of ggml's public API missing (headers to come: '${LATER}'):\n${verdict}")
endif()
message("api_coverage: every name is present (headers to come: '${LATER}')")
