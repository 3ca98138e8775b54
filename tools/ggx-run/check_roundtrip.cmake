# The GGUF round trip: ggx-run --export writes the built-in model, ggx-run --model reads it back; both
# runs (same tokens and seed) must produce bit-identical outputs with the pack on and off.
#   cmake -DGGX_RUN=path/to/ggx-run -DARGS="--layers;1;..." -DFILE=path/model.gguf -P check_roundtrip.cmake
file(REMOVE "${FILE}")
execute_process(COMMAND ${GGX_RUN} ${ARGS} --export ${FILE} --json RESULT_VARIABLE rc OUTPUT_VARIABLE built ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ggx-run --export exited with ${rc}: ${err}")
endif()
# Only the runtime arguments: the model's sizes and weight type come from the file.
execute_process(COMMAND ${GGX_RUN} --model ${FILE} --tokens ${TOKENS} --steps 1 --json
                RESULT_VARIABLE rc OUTPUT_VARIABLE loaded ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ggx-run --model exited with ${rc}: ${err}")
endif()
foreach(path "model;weights" "model;layers" "model;hidden" "model;heads" "model;ffn" "ext_on;velocity_fnv1a"
             "ext_off;velocity_fnv1a")
  string(JSON a GET "${built}" ${path})
  string(JSON b GET "${loaded}" ${path})
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "${path}: '${a}' built-in, '${b}' loaded from ${FILE}\n${built}\n${loaded}")
  endif()
endforeach()
file(REMOVE "${FILE}")
message(STATUS "round trip through ${FILE}: identical outputs")
