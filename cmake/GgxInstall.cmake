# `cmake --install` installs the public headers, the libraries and three descriptions of them:
#   find_package(ggml)  ggml's package: ggml::ggml (the registry of backends, which brings the
#                       others), ggml::ggml-base, one ggml::<backend> per GGML_AVAILABLE_BACKENDS
#                       entry and ggml::all, with the variables ggml's package sets
#   ggml.pc             the same for pkg-config
#   find_package(ggx)   ggx::ggx-sd, the sd extension pack, and ggx::ggx, the target earlier ggx
#                       packages exported, kept for their consumers as another name for ggml::ggml
# Backend modules (GGX_BACKEND_DL) go beside libggml, where ggml_backend_load_all looks for them.
include(CMakePackageConfigHelpers)
get_property(GGML_AVAILABLE_BACKENDS GLOBAL PROPERTY GGX_BACKENDS)

# ggx_package(name config version): installs the package `name` from cmake/<config>.in, with
# <version> for find_package's version check.
function(ggx_package name config version)
  set(destination ${CMAKE_INSTALL_LIBDIR}/cmake/${name})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/${config}.in ${PROJECT_BINARY_DIR}/${config}
    INSTALL_DESTINATION ${destination} PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/${version} COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/${config} ${PROJECT_BINARY_DIR}/${version} DESTINATION ${destination})
endfunction()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ggml-base ggml ${GGML_AVAILABLE_BACKENDS} EXPORT ggml-targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT ggml-targets NAMESPACE ggml:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ggml)
ggx_package(ggml ggml-config.cmake ggml-config-version.cmake)

# ggx_pkg_config(): ggml.pc, with the libraries in link order (the built-in backends between ggml and
# ggml-base) and what static libraries need besides; relocatable: the prefix is found from the
# file's own folder.
function(ggx_pkg_config)
  set(ggml_pc_libs ggml)
  if(NOT GGX_BACKEND_DL)
    list(APPEND ggml_pc_libs ${GGML_AVAILABLE_BACKENDS})
  endif()
  list(APPEND ggml_pc_libs ggml-base)
  list(TRANSFORM ggml_pc_libs PREPEND -l)
  set(ggml_pc_libs_private hwy stdc++ m pthread ${CMAKE_DL_LIBS})
  if(GGX_BACKEND_VULKAN)
    list(PREPEND ggml_pc_libs_private vulkan)
  endif()
  list(TRANSFORM ggml_pc_libs_private PREPEND -l)
  list(JOIN ggml_pc_libs " " ggml_pc_libs)
  list(JOIN ggml_pc_libs_private " " ggml_pc_libs_private)
  file(RELATIVE_PATH ggml_pc_to_prefix /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
  string(REGEX REPLACE "/$" "" ggml_pc_to_prefix ${ggml_pc_to_prefix})
  configure_file(${PROJECT_SOURCE_DIR}/cmake/ggml.pc.in ${PROJECT_BINARY_DIR}/ggml.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/ggml.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
ggx_pkg_config()

set(ggx_sd_pack_installed FALSE)
if(TARGET ggx-sd)
  install(TARGETS ggx-sd EXPORT ggx-targets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/extensions/sd/include/sd-ggml-ext.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT ggx-targets NAMESPACE ggx:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ggx)
  set(ggx_sd_pack_installed TRUE)
endif()
ggx_package(ggx ggxConfig.cmake ggxConfigVersion.cmake)
