# Runs tests/gguf/gguf_oracle.py (SCRIPT) with the virtual environment's PYTHON on the helper HELPER,
# in WORK_DIR; says "gguf_oracle: skipped" when the environment is absent (a build without .ci/deps).
include(${CMAKE_CURRENT_LIST_DIR}/../support/run.cmake)
if(NOT EXISTS ${PYTHON})
  message("gguf_oracle: skipped: no ${PYTHON} (bash .ci/deps creates the virtual environment with PyPI's gguf package)")
  return()
endif()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
run(${PYTHON} ${SCRIPT} ${HELPER} ${WORK_DIR})
