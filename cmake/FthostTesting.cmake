# fthost_add_test(<name> SOURCES <src>... [LINK <lib>...] [PLUGINS <target>...] [LABELS <l>...]
#                 [FAMILY_GOLDENS])
#
# A GoogleTest executable of the in-tree suite: links fthost_core, GoogleTest's main and the
# warning flags (plus LINK), and gets the paths the tests reach the build through as compile
# definitions:
#   FT_BUILTIN_PLUGIN_DIR  the built-in plugins the host loads by default
#   FT_TEST_PLUGIN_ROOT    the deliberately broken test plugins, one directory each
#   FTHOST_BINARY          the fthost executable, for end-to-end runs (with its training library)
#   FT_SOURCE_DIR          the source tree (configs, and ../shared/fixtures next to it)
#   FT_FAMILY_GOLDEN_DIR   the newer families' golden cases, generated into the build tree
# FAMILY_GOLDENS: its tests read those cases, so they require the ctest fixture that generates them.
# It builds after fthost and the PLUGINS its tests load, and each of its tests becomes a ctest
# test of the same name.
include_guard(GLOBAL)
include(GoogleTest)

option(FTHOST_TEST_PCH "Precompile the headers nearly every test includes, once for all test executables" ON)
# LibTorch's ATen and the rest, parsed once instead of in each of the ~70 test sources (measured:
# 581 s of compile jobs for the test sources instead of 745 s). One target owns the precompiled
# header and the others reuse it, which GCC allows because every test executable has the same
# compile definitions and flags.
set(FTHOST_TEST_PCH_HEADERS <ATen/ATen.h> <torch/csrc/autograd/autograd.h> <gtest/gtest.h> <nlohmann/json.hpp>
    <boost/filesystem.hpp>)

set(FTHOST_TEST_PLUGIN_ROOT "${CMAKE_BINARY_DIR}/test_plugins")
set(FTHOST_FAMILY_GOLDEN_DIR "${CMAKE_BINARY_DIR}/family_goldens")
set(FTHOST_DATASET_FIXTURE_DIR "${CMAKE_BINARY_DIR}/dataset_fixtures")

# What every test executable compiles with: the helpers' directory, the libraries and the paths
# above as definitions.
function(fthost_test_compile_settings target)
  target_include_directories(${target} PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
  target_link_libraries(${target} PRIVATE fthost_core fthost_warnings GTest::gtest_main nlohmann_json::nlohmann_json)
  target_compile_definitions(${target} PRIVATE
    FT_TEST_PLUGIN_ROOT="${FTHOST_TEST_PLUGIN_ROOT}"
    FT_BUILTIN_PLUGIN_DIR="${FTHOST_PLUGIN_OUTPUT_DIR}"
    FTHOST_BINARY="$<TARGET_FILE:fthost>"
    FT_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    FT_FAMILY_GOLDEN_DIR="${FTHOST_FAMILY_GOLDEN_DIR}"
    FT_DATASET_FIXTURE_DIR="${FTHOST_DATASET_FIXTURE_DIR}")
endfunction()

# The precompiled header's own small executable (an empty source and GoogleTest's main), so that
# building one test executable does not build another to get the header.
function(fthost_test_pch_owner)
  if(TARGET fthost_test_pch)
    return()
  endif()
  add_executable(fthost_test_pch "${PROJECT_SOURCE_DIR}/tests/test_pch_anchor.cpp")
  fthost_test_compile_settings(fthost_test_pch)
  target_precompile_headers(fthost_test_pch PRIVATE ${FTHOST_TEST_PCH_HEADERS})
endfunction()

function(fthost_add_test name)
  cmake_parse_arguments(ARG "FAMILY_GOLDENS" "" "SOURCES;LINK;PLUGINS;LABELS;FIXTURES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "fthost_add_test(${name}): SOURCES is required")
  endif()
  add_executable(${name} ${ARG_SOURCES})
  # Test sources in subfolders (tests/unit/plugins/) include the shared helpers by bare name.
  fthost_test_compile_settings(${name})
  target_link_libraries(${name} PRIVATE ${ARG_LINK})
  add_dependencies(${name} fthost fthost_training ${ARG_PLUGINS})
  if(FTHOST_TEST_PCH)
    fthost_test_pch_owner()
    target_precompile_headers(${name} REUSE_FROM fthost_test_pch)
  endif()
  set(properties)
  if(ARG_LABELS)
    list(APPEND properties LABELS "${ARG_LABELS}")
  endif()
  if(ARG_FAMILY_GOLDENS)
    list(APPEND ARG_FIXTURES family_goldens)
  endif()
  if(ARG_FIXTURES)
    list(APPEND properties FIXTURES_REQUIRED "${ARG_FIXTURES}")
  endif()
  if(properties)
    set(properties PROPERTIES ${properties})
  endif()
  gtest_discover_tests(${name} WORKING_DIRECTORY "${CMAKE_BINARY_DIR}" DISCOVERY_TIMEOUT 60 ${properties})
endfunction()
