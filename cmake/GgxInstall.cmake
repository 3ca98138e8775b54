# `cmake --install` exports ggx::ggx for find_package(ggx).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ggx EXPORT ggxTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT ggxTargets NAMESPACE ggx:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ggx)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ggxConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ggxConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ggx)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ggxConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ggxConfig.cmake ${PROJECT_BINARY_DIR}/ggxConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ggx)
