# Configures a clang build with GGX_FUZZ=ON (libFuzzer + ASan + UBSan) in WORK_DIR, builds only the
# libraries (with the GGUF sources instrumented) and the fuzz target NAME, and runs it for SECONDS over a fresh copy of CORPUS
# (the repo's corpus is never modified). New crashes are written to WORK_DIR/artifacts.
include(${CMAKE_CURRENT_LIST_DIR}/../support/run.cmake)
find_program(CLANG clang)
find_program(CLANGXX clang++)
if(NOT CLANG OR NOT CLANGXX)
  message(FATAL_ERROR "clang and clang++ are needed for the fuzz build (.ci/deps installs them)")
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DCMAKE_C_COMPILER=${CLANG} -DCMAKE_CXX_COMPILER=${CLANGXX} -DGGX_FUZZ=ON -DGGX_SANITIZE=address
    -DGGX_BUILD_BENCHMARKS=OFF -DGGX_BACKEND_CPU=OFF -DGGX_BACKEND_VULKAN=OFF)  # the reader needs no kernels: a much shorter build
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build --parallel 2 --target ${NAME})
file(REMOVE_RECURSE ${WORK_DIR}/corpus ${WORK_DIR}/artifacts)
file(COPY ${CORPUS}/ DESTINATION ${WORK_DIR}/corpus)
file(MAKE_DIRECTORY ${WORK_DIR}/artifacts)
run(${WORK_DIR}/build/tests/${NAME} -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048
    -print_final_stats=1 -artifact_prefix=${WORK_DIR}/artifacts/ ${WORK_DIR}/corpus)
