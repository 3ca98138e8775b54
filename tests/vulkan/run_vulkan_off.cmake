# A build without the Vulkan backend (docs/vulkan.md, "Building"): configures the project in
# WORK_DIR with -DGGX_BACKEND_VULKAN=OFF, checks that no Vulkan target exists, builds the libraries,
# the sd pack and two of their tests, and runs those. Run as:
#   cmake -DSOURCE_DIR=<root> -DWORK_DIR=<dir> [-DLAUNCHER=ccache] [-DJOBS=2] -P run_vulkan_off.cmake
include(${CMAKE_CURRENT_LIST_DIR}/../support/run.cmake)
set(build ${WORK_DIR}/build)
if(NOT JOBS)
  set(JOBS 2)
endif()
set(launcher "")
if(LAUNCHER)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER} -DCMAKE_C_COMPILER_LAUNCHER=${LAUNCHER})
endif()
# Reconfigured in place (not removed first), so a rerun rebuilds only what changed.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build} -DGGX_BACKEND_VULKAN=OFF -DGGX_WERROR=ON ${launcher})
execute_process(COMMAND ${CMAKE_COMMAND} --build ${build} --target help OUTPUT_VARIABLE targets)
if(targets MATCHES "ggml-vulkan|test_vulkan")
  message(FATAL_ERROR "GGX_BACKEND_VULKAN=OFF still defines Vulkan targets")
endif()
set(tests test_registry test_sd_rope)
run(${CMAKE_COMMAND} --build ${build} --parallel ${JOBS} --target ggml ggx-sd ${tests})
# CTest lists each program's cases as <program>.<suite>.<case>.
list(JOIN tests "|" programs)
run(${CMAKE_COMMAND} -E env --unset=GGX_REQUIRE_VULKAN
    ctest --test-dir ${build} --output-on-failure --no-tests=error -R "^(${programs})[.]")
