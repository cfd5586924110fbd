# LibTorch comes from the PyTorch wheel that scripts/setup.sh installs into the project's virtual
# environment (.venv): its CMake package is where torch.utils.cmake_prefix_path says.
#   FTHOST_PYTHON  the interpreter whose torch to build against (default: .venv/bin/python; the GPU
#                  check passes the machine's own python3)
#   Torch_DIR      set by hand to bypass the lookup
# The lookup itself (pinned to the wheel, fmt ordered before it) is FthostLibTorch.cmake, which
# the installed SDK package uses too.
# `pip wheel .` (scikit-build-core) builds against the PyTorch of the interpreter running pip.
if(SKBUILD AND Python_EXECUTABLE)
  set(fthost_default_python "${Python_EXECUTABLE}")
else()
  set(fthost_default_python "${PROJECT_SOURCE_DIR}/.venv/bin/python")
endif()
set(FTHOST_PYTHON "${fthost_default_python}" CACHE FILEPATH
    "Python interpreter whose PyTorch provides LibTorch")
set(FTHOST_MIN_TORCH_VERSION 2.11)

if(NOT Torch_DIR)
  if(NOT EXISTS "${FTHOST_PYTHON}")
    message(FATAL_ERROR "fthost: ${FTHOST_PYTHON} does not exist. Run `bash scripts/setup.sh` (it installs "
                        "PyTorch into .venv), or pass -DFTHOST_PYTHON=/path/to/python with torch installed.")
  endif()
  execute_process(
    COMMAND "${FTHOST_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE fthost_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_VARIABLE fthost_torch_error RESULT_VARIABLE fthost_torch_status)
  if(NOT fthost_torch_status EQUAL 0)
    message(FATAL_ERROR "fthost: `${FTHOST_PYTHON}` cannot import torch:\n${fthost_torch_error}\n"
                        "Run `bash scripts/setup.sh`.")
  endif()
  set(Torch_DIR "${fthost_torch_prefix}/Torch" CACHE PATH "LibTorch's CMake package" FORCE)
endif()

include(FthostLibTorch)
fthost_use_libtorch("${Torch_DIR}")
if(Torch_VERSION VERSION_LESS FTHOST_MIN_TORCH_VERSION)
  message(FATAL_ERROR "fthost: LibTorch ${Torch_VERSION} at ${Torch_DIR} is older than ${FTHOST_MIN_TORCH_VERSION}; "
                      "scripts/setup.sh installs the pinned version (docs/building.md)")
endif()
