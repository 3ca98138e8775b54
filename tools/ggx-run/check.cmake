# Runs ggx-run (ARGS: a ;-list of its arguments) and checks its exit status (0) and its report:
#   MODE=table: the table's lines (the result check, the fusion line, the speedup);
#   MODE=json:  the --json report's keys and values.
#   cmake -DGGX_RUN=path/to/ggx-run -DARGS="--layers;1;..." -DWEIGHTS=f32|int8-convrot -DMODE=json -P check.cmake
if(MODE STREQUAL "json")
  list(APPEND ARGS --json)
endif()
execute_process(COMMAND ${GGX_RUN} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ggx-run exited with ${rc}\nstdout: ${out}\nstderr: ${err}")
endif()

if(MODE STREQUAL "table")
  # The CPU rules that fire on one layer: the Q/K norm chains, the gated residuals, and with INT8
  # weights the SwiGLU before the down projection's ConvRot.
  set(fused "sd.mul_add.cpu x2, sd.rms_norm_mul_rope.cpu x2")
  if(WEIGHTS STREQUAL "int8-convrot")
    string(APPEND fused ", sd.swiglu_convrot.cpu x1")
  endif()
  foreach(line
      "\n  check: ext-on vs ext-off within bounds"
      "\n  time per step \\(ms\\) +[0-9.]+ +[0-9.]+  speedup [0-9.]+x\n"
      "\n  nodes after fusion +[0-9]+ +[0-9]+ *\n"
      "\n  fusions fired \\(ext on\\): ${fused}\n"
      "\n  fusions fired \\(ext off\\): none\n")
    if(NOT out MATCHES "${line}")
      message(FATAL_ERROR "no line matching '${line}' in\n${out}")
    endif()
  endforeach()
  message(STATUS "ggx-run ${WEIGHTS}: exit status 0, table lines present")
  return()
endif()

function(expect path)
  string(JSON value ERROR_VARIABLE error GET "${out}" ${path})
  if(error)
    message(FATAL_ERROR "missing key ${path}: ${error}\n${out}")
  endif()
  if(ARGC GREATER 1 AND NOT "${value}" STREQUAL "${ARGV1}")
    message(FATAL_ERROR "${path} is '${value}', expected '${ARGV1}'\n${out}")
  endif()
endfunction()

expect("model;weights" "${WEIGHTS}")
expect("model;layers" 1)
expect("ext" compare)
expect("source" "built-in, seed 42")
expect("within_bounds" ON)
foreach(variant ext_on ext_off)
  foreach(key time_per_step_ms setup_ms nodes nodes_after_fusion fusions extension_kernels compute_buffer_bytes
              weight_bytes profile_ms profile_total_ms stages_ms velocity_fnv1a)
    expect("${variant};${key}")
  endforeach()
endforeach()
expect("speedup")
expect("difference;velocity;max_abs")
expect("difference;velocity;nmse")
expect("difference;latent;nmse")
expect("difference;nmse_bound")
expect("peak_rss_bytes")
# One layer: the Q and the K chain fuse (RMSNorm -> Mul -> RoPE) with the pack, nothing without it.
expect("ext_on;fusions;sd.rms_norm_mul_rope.cpu" 2)
expect("ext_off;nodes_after_fusion")
string(JSON off_fusions LENGTH "${out}" ext_off fusions)
if(NOT off_fusions EQUAL 0)
  message(FATAL_ERROR "fusions fired with the extensions off\n${out}")
endif()
if(WEIGHTS STREQUAL "int8-convrot")
  expect("ext_on;extension_kernels;sd.linear_i8.cpu")
  expect("ext_on;extension_kernels;sd.quantize_i8_convrot.cpu")
else()
  expect("difference;velocity;bit_identical" ON)
endif()
message(STATUS "ggx-run --json ${WEIGHTS}: all keys present")
