# run(COMMAND...): one step of a CTest script (cmake -P); a step that fails stops the test with its
# exit status and command line.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
