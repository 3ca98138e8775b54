# Installs the already built tree into WORK_DIR/prefix and runs ../shared/tools/api-coverage (TOOL) on
# it: which of ggml's public functions the install declares and defines. Prints the tool's report;
# fails while a name is missing; says "api_coverage: skipped" when the tool is absent.
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
execute_process(COMMAND ${TOOL} ${WORK_DIR}/prefix OUTPUT_VARIABLE report ERROR_VARIABLE report RESULT_VARIABLE rc)
message("${report}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "api-coverage: not every name of ggml's public API is present (exit status ${rc})")
endif()
