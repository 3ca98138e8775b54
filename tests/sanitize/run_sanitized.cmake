# Configures and builds the project with GGX_SANITIZE=${SANITIZE} in WORK_DIR and runs the tests whose
# label (address) or name (thread) matches TESTS.
include(${CMAKE_CURRENT_LIST_DIR}/../support/run.cmake)
# The TSan suites are the CPU thread pool and backend: without Vulkan, whose driver threads
# (lavapipe) are not instrumented and would only add noise.
if(SANITIZE STREQUAL "thread")
  set(backends -DGGX_BACKEND_VULKAN=OFF)
endif()
# The tree is built for this machine (-march=native): Highway then compiles the native target and
# the ones above it rather than every x86 target from SSSE3 up, which cuts the build to about a third,
# and the paths checked are the ones this machine runs. Line tables (-g1) name the source lines of a
# report at a fraction of full debug information's cost. No benchmarks: nothing here runs them.
# The gguf_oracle test uses the main tree's virtual environment (GGUF_VENV).
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -DCMAKE_BUILD_TYPE=RelWithDebInfo
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG -march=native"
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG -march=native" -DGGX_BUILD_BENCHMARKS=OFF
    -DGGX_SANITIZE=${SANITIZE} -DGGX_WERROR=ON -DGGX_GGUF_VENV=${GGUF_VENV} ${backends})
run(${CMAKE_COMMAND} --build ${WORK_DIR} --parallel 2)
# Tests of failed allocations expect NULL rather than a sanitizer abort.
set(ENV{ASAN_OPTIONS} "allocator_may_return_null=1")
set(ENV{TSAN_OPTIONS} "allocator_may_return_null=1")
set(ENV{LSAN_OPTIONS} "suppressions=${SOURCE_DIR}/tests/sanitize/lsan.supp")
# Two suites at a time: the sanitizer test itself runs alone (RUN_SERIAL).
if(SANITIZE STREQUAL "thread")
  run(${CMAKE_CTEST_COMMAND} --test-dir ${WORK_DIR} --output-on-failure --parallel 2 -R "${TESTS}")
else()
  run(${CMAKE_CTEST_COMMAND} --test-dir ${WORK_DIR} --output-on-failure --parallel 2 -L "${TESTS}")
endif()
