# Installs the already built tree into WORK_DIR/prefix, then configures, builds and runs the
# consumers of tests/install/consumer against it (find_package(ggml), find_package(ggx), ggml.pc).
file(REMOVE_RECURSE ${WORK_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/../support/run.cmake)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
set(ENV{PKG_CONFIG_PATH} ${WORK_DIR}/prefix/${LIBDIR}/pkgconfig)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer -B ${WORK_DIR}/build
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
foreach(consumer consumer_c consumer_cxx consumer_c_ggx consumer_c_pkgconfig)
  run(${WORK_DIR}/build/${consumer})
endforeach()
