# Checks that the tests mirror the source tree and that one list of op families is used everywhere
# (docs/architecture.md, "Tests"). Run as: cmake -DSOURCE_DIR=<root> -P check_mirror.cmake
#
# - The families are docs/ops.md's sections, each heading ending in "(<family>)".
# - Every family has a case table tests/ops/<family>_cases.cpp; every case table is a family's.
# - Every kernel file src/<backend>/kernels/<name>.cpp and every constructor file
#   src/core/ops/<name>.cpp is named after a family (table.cpp and common.cpp hold a backend's table
#   and shared helpers).
# - Every folder of src/ and extensions/ has its tests in the same path under tests/, and every test
#   source tests/<path>/test_*.cpp sits in such a mirror (or in tests/reference, the oracle's).
cmake_minimum_required(VERSION 3.25)

set(problems "")

file(STRINGS ${SOURCE_DIR}/docs/ops.md headings REGEX "^## .*\\([a-z]+\\)$")
set(families "")
foreach(heading IN LISTS headings)
  string(REGEX REPLACE ".*\\(([a-z]+)\\)$" "\\1" family "${heading}")
  list(APPEND families ${family})
  if(NOT EXISTS ${SOURCE_DIR}/tests/ops/${family}_cases.cpp)
    string(APPEND problems "family '${family}' (docs/ops.md) has no tests/ops/${family}_cases.cpp\n")
  endif()
endforeach()
if(NOT families)
  string(APPEND problems "docs/ops.md names no family (headings \"## Title (family)\")\n")
endif()

file(GLOB case_tables RELATIVE ${SOURCE_DIR}/tests/ops ${SOURCE_DIR}/tests/ops/*_cases.cpp)
foreach(table IN LISTS case_tables)
  string(REGEX REPLACE "_cases[.]cpp$" "" family "${table}")
  if(NOT family IN_LIST families)
    string(APPEND problems "tests/ops/${table} is not a family of docs/ops.md\n")
  endif()
endforeach()

file(GLOB kernel_files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/src/*/kernels/*.cpp ${SOURCE_DIR}/src/core/ops/*.cpp)
foreach(file IN LISTS kernel_files)
  get_filename_component(name ${file} NAME_WE)
  if(NOT name IN_LIST families AND NOT name STREQUAL "table" AND NOT name STREQUAL "common")
    string(APPEND problems "${file} is not named after a family of docs/ops.md\n")
  endif()
endforeach()

# Source folders whose tests must sit at the same path under tests/.
file(GLOB mirrored RELATIVE ${SOURCE_DIR} LIST_DIRECTORIES true ${SOURCE_DIR}/src/* ${SOURCE_DIR}/extensions/*)
set(mirrors reference)
foreach(folder IN LISTS mirrored)
  if(NOT IS_DIRECTORY ${SOURCE_DIR}/${folder})
    continue()
  endif()
  string(REGEX REPLACE "^src/" "" mirror "${folder}")
  list(APPEND mirrors ${mirror})
  file(GLOB tests ${SOURCE_DIR}/tests/${mirror}/test_*.cpp)
  if(NOT tests)
    string(APPEND problems "${folder}/ has no tests in tests/${mirror}/\n")
  endif()
endforeach()
file(GLOB tools RELATIVE ${SOURCE_DIR} LIST_DIRECTORIES true ${SOURCE_DIR}/tools/*)
list(APPEND mirrors ${tools})

file(GLOB_RECURSE test_sources RELATIVE ${SOURCE_DIR}/tests ${SOURCE_DIR}/tests/test_*.cpp)
foreach(file IN LISTS test_sources)
  get_filename_component(dir ${file} DIRECTORY)
  if(NOT dir IN_LIST mirrors)
    string(APPEND problems "tests/${file} mirrors no source folder (src/, extensions/, tools/)\n")
  endif()
endforeach()

if(problems)
  message(FATAL_ERROR "the tests do not mirror the source tree:\n${problems}")
endif()
list(LENGTH families n_families)
message(STATUS "tests mirror the source tree; ${n_families} op families: ${families}")
