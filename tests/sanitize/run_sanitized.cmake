# Configures and builds the project with GGX_SANITIZE=${SANITIZE} in WORK_DIR and runs its unit tests.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DGGX_SANITIZE=${SANITIZE} -DGGX_WERROR=ON)
run(${CMAKE_COMMAND} --build ${WORK_DIR} --parallel 2)
run(${CMAKE_CTEST_COMMAND} --test-dir ${WORK_DIR} --output-on-failure -L "unit|ops" -E "^(install_consumer|sanitize_)")
