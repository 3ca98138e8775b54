# A model file converted by PyPI's gguf package runs: ggx-run --export writes the built-in model with
# F32 weights, tools/ggx-run/convert.py re-quantizes its linears to TYPE with the package, and
# ggx-run --model runs the result (each weight in the file's type) with the pack on and off within
# the bounds. Skipped when the virtual environment of .ci/deps is absent.
#   cmake -DGGX_RUN=... -DPYTHON=venv/bin/python -DSCRIPT=convert.py -DTYPE=q5_0 -DDIR=work -P check_convert.cmake
include(${CMAKE_CURRENT_LIST_DIR}/../../tests/support/run.cmake)
if(NOT EXISTS ${PYTHON})
  message("ggx_run_convert: skipped: no ${PYTHON} (bash .ci/deps creates the virtual environment with PyPI's gguf package)")
  return()
endif()
file(MAKE_DIRECTORY ${DIR})
set(f32 ${DIR}/dit-f32.gguf)
set(converted ${DIR}/dit-${TYPE}.gguf)
run(${GGX_RUN} --layers 1 --hidden 256 --heads 2 --tokens 64 --steps 1 --no-profile --weights f32 --export ${f32})
run(${PYTHON} ${SCRIPT} ${f32} ${converted} ${TYPE})
execute_process(COMMAND ${GGX_RUN} --model ${converted} --steps 1 --no-profile RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "weights ${TYPE} " OR NOT out MATCHES "check: ext-on vs ext-off within bounds")
  message(FATAL_ERROR "ggx-run --model ${converted} exited with ${rc}:\n${out}\n${err}")
endif()
message(STATUS "${converted} (converted by the gguf package) runs within bounds")
