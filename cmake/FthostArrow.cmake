# Apache Arrow's C++ libraries (Parquet, Arrow IPC, CSV) for the dataset plugin, from the pyarrow
# wheel scripts/setup.sh installs beside PyTorch (pinned in scripts/python-requirements.txt):
# Debian 12 packages no Arrow. The wheel ships headers and versioned libraries but no CMake
# package, so the imported targets are made here: Arrow::arrow and Arrow::parquet.
#   FTHOST_PYTHON      the interpreter whose pyarrow to use (FthostTorch.cmake's)
#   FTHOST_WITH_ARROW  OFF builds without it: Parquet, Arrow and CSV sources are then refused by
#                      name at run time (the GPU check's image may have no pyarrow)
option(FTHOST_WITH_ARROW "Parquet, Arrow IPC and CSV datasets through Apache Arrow (pyarrow's libraries)" ON)
if(NOT FTHOST_WITH_ARROW)
  message(STATUS "fthost: without Apache Arrow (FTHOST_WITH_ARROW=OFF): no Parquet, Arrow or CSV datasets")
  return()
endif()
execute_process(
  COMMAND "${FTHOST_PYTHON}" -c
          "import pyarrow; print(pyarrow.__version__); print(pyarrow.get_include()); print(pyarrow.get_library_dirs()[0])"
  OUTPUT_VARIABLE fthost_pyarrow OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_VARIABLE fthost_pyarrow_error RESULT_VARIABLE fthost_pyarrow_status)
if(NOT fthost_pyarrow_status EQUAL 0)
  message(FATAL_ERROR "fthost: `${FTHOST_PYTHON}` cannot import pyarrow (Apache Arrow's C++ libraries for Parquet "
                      "and Arrow datasets):\n${fthost_pyarrow_error}\nRun `bash scripts/setup.sh`, or configure with -DFTHOST_WITH_ARROW=OFF.")
endif()
string(REPLACE "\n" ";" fthost_pyarrow "${fthost_pyarrow}")
list(GET fthost_pyarrow 0 FTHOST_ARROW_VERSION)
list(GET fthost_pyarrow 1 fthost_arrow_include)
list(GET fthost_pyarrow 2 FTHOST_ARROW_LIBRARY_DIR)
if(NOT FTHOST_ARROW_VERSION VERSION_LESS 23)
  message(FATAL_ERROR "fthost: pyarrow ${FTHOST_ARROW_VERSION} at ${FTHOST_ARROW_LIBRARY_DIR}: Arrow 23 and later "
                      "need C++20 (their headers use std::span) and fthost is C++17. Install the pinned version "
                      "(`bash scripts/setup.sh`: pyarrow 22.0.0), or configure with -DFTHOST_WITH_ARROW=OFF.")
endif()

function(fthost_import_arrow_library target name)
  # The wheel's libraries are named by their soname (libarrow.so.2200); no unversioned link.
  file(GLOB candidates "${FTHOST_ARROW_LIBRARY_DIR}/lib${name}.so.[0-9]*")
  list(FILTER candidates EXCLUDE REGEX "\\.so\\.[0-9]+\\.")
  list(LENGTH candidates count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "fthost: expected one lib${name}.so.N in ${FTHOST_ARROW_LIBRARY_DIR}, found: ${candidates}")
  endif()
  add_library(${target} SHARED IMPORTED GLOBAL)
  # An imported target's include directories are system ones: Arrow's headers warn under -Wextra.
  set_target_properties(${target} PROPERTIES IMPORTED_LOCATION "${candidates}"
                                             INTERFACE_INCLUDE_DIRECTORIES "${fthost_arrow_include}")
endfunction()

fthost_import_arrow_library(Arrow::arrow arrow)
fthost_import_arrow_library(Arrow::parquet parquet)
set_property(TARGET Arrow::parquet PROPERTY INTERFACE_LINK_LIBRARIES Arrow::arrow)
message(STATUS "fthost: Apache Arrow ${FTHOST_ARROW_VERSION} (pyarrow, ${FTHOST_ARROW_LIBRARY_DIR})")
