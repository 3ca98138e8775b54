# Configures and builds the project with GGX_SANITIZE=${SANITIZE} in WORK_DIR and runs the tests whose
# label (address) or name (thread) matches TESTS.
include(${CMAKE_CURRENT_LIST_DIR}/../support/run.cmake)
# The TSan suites are the CPU thread pool and backend: without Vulkan, whose driver threads
# (lavapipe) are not instrumented and would only add noise.
if(SANITIZE STREQUAL "thread")
  set(backends -DGGX_BACKEND_VULKAN=OFF)
endif()
# Where this machine has x86-64-v3 (with AES and CLMUL), the tree is built for it: Highway's static
# target is then AVX2 and it compiles AVX2 and the AVX-512 targets above it rather than every x86
# target from SSSE3 up, which cuts the build to about a third. Not -march=native: on an AVX-512
# machine that makes the static target the best one, which Highway 1.0 then compiles alone (or
# rejects, where it is not among the attainable targets). Line tables (-g1) name the source lines of
# a report at a fraction of full debug information's cost. No benchmarks: nothing here runs them.
# The gguf_oracle test uses the main tree's virtual environment (GGUF_VENV).
set(arch_flags "")
if(EXISTS /proc/cpuinfo)
  file(STRINGS /proc/cpuinfo cpu_flags REGEX "^flags" LIMIT_COUNT 1)
  set(has_v3 TRUE)
  foreach(flag avx avx2 bmi1 bmi2 f16c fma abm movbe xsave aes pclmulqdq)
    if(NOT cpu_flags MATCHES " ${flag}( |$)")
      set(has_v3 FALSE)
    endif()
  endforeach()
  if(has_v3)
    set(arch_flags "-march=x86-64-v3 -maes -mpclmul")
  endif()
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -DCMAKE_BUILD_TYPE=RelWithDebInfo
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG ${arch_flags}"
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG ${arch_flags}" -DGGX_BUILD_BENCHMARKS=OFF
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
