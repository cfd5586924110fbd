# FTHOST_WHEEL=ON (set by pyproject.toml: `pip wheel .` through scikit-build-core) installs
# fthost as the Python package `fthost`, the install prefix being site-packages/fthost:
#   bin/fthost, lib/ (the SDK and training libraries, lib/fthost/plugins), include/ft,
#   share/fthost/configs, lib/cmake/fthost (find_package(fthost) with
#   CMAKE_PREFIX_PATH=`python -c 'import fthost; print(fthost.cmake_prefix_path)'`),
#   and the Python modules: __init__.py, _launcher.py (the `fthost` console script, which checks
#   the PyTorch beside it before running bin/fthost) and _build.py (what this build was made with).
# LibTorch, Arrow and CUDA's runtime stay in the torch, pyarrow and nvidia wheels beside it
# (cmake/FthostLibraryPaths.cmake); the package requires exactly the torch it was built against.
option(FTHOST_WHEEL "Install as the Python package fthost (pip wheel .), finding LibTorch in the torch wheel beside it" OFF)
if(NOT FTHOST_WHEEL)
  return()
endif()

# The torch pin pyproject.toml declares must be the torch this build compiles against: a wheel
# requiring one PyTorch and linked against another would fail at load time on users' machines.
file(STRINGS "${PROJECT_SOURCE_DIR}/pyproject.toml" fthost_torch_requirement REGEX "^[ \t]*\"torch==")
string(REGEX REPLACE ".*\"torch==([^\"]+)\".*" "\\1" fthost_pinned_torch "${fthost_torch_requirement}")
file(STRINGS "${fthost_torch_root}/version.py" fthost_torch_version_line REGEX "^__version__")
string(REGEX REPLACE "^__version__ *= *'([^']+)'.*" "\\1" FTHOST_TORCH_FULL_VERSION "${fthost_torch_version_line}")
string(REGEX REPLACE "\\+.*" "" fthost_torch_public_version "${FTHOST_TORCH_FULL_VERSION}")
if(NOT fthost_pinned_torch STREQUAL fthost_torch_public_version)
  message(FATAL_ERROR "fthost: pyproject.toml requires torch==${fthost_pinned_torch} but the build found PyTorch "
                      "${FTHOST_TORCH_FULL_VERSION} at ${fthost_torch_root}: build the wheel against the pinned version")
endif()
set(FTHOST_ARROW_FULL_VERSION "${FTHOST_ARROW_VERSION}")

configure_file("${PROJECT_SOURCE_DIR}/python/fthost/_build.py.in" "${CMAKE_BINARY_DIR}/python/_build.py" @ONLY)
install(FILES "${PROJECT_SOURCE_DIR}/python/fthost/__init__.py" "${PROJECT_SOURCE_DIR}/python/fthost/_launcher.py"
              "${CMAKE_BINARY_DIR}/python/_build.py" DESTINATION .)
message(STATUS "fthost: the Python package (wheel) for PyTorch ${FTHOST_TORCH_FULL_VERSION}")
