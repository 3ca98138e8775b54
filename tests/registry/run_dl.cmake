# Dynamic backend loading end to end: configures and builds the project in WORK_DIR with
# GGX_BACKEND_DL=ON (shared libraries, the backends as modules), installs it, then builds and runs
# tests/registry/dl_consumer (and the install test's sd pack consumer) against the installed package. Run as:
#   cmake -DSOURCE_DIR=<root> -DWORK_DIR=<dir> -DVULKAN=ON|OFF [-DLAUNCHER=ccache] -P run_dl.cmake
file(REMOVE_RECURSE ${WORK_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/../support/run.cmake)
set(launcher "")
if(LAUNCHER)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER} -DCMAKE_C_COMPILER_LAUNCHER=${LAUNCHER})
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -DGGX_BACKEND_DL=ON -DBUILD_SHARED_LIBS=ON
    -DGGX_BACKEND_VULKAN=${VULKAN} -DGGX_WERROR=ON ${launcher})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build --parallel 2)
run(${CMAKE_COMMAND} --install ${WORK_DIR}/build --prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/registry/dl_consumer -B ${WORK_DIR}/consumer
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run(${WORK_DIR}/consumer/dl_consumer)
run(${WORK_DIR}/consumer/sd_consumer)
