# fthost_use_libtorch(TORCH_DIR): find_package(Torch) from exactly the LibTorch at TORCH_DIR (a
# PyTorch wheel's share/cmake/Torch), for fthost's own build and for plugins built against the
# installed SDK (fthostConfig.cmake records the build's TORCH_DIR).
#
# TorchConfig.cmake searches the system's library directories before the wheel's, and finds its
# Caffe2Config.cmake (the imported targets) with PATHS, also searched after the system's
# prefixes: another LibTorch there (Debian's libtorch-dev) would be linked against the wheel's
# headers. Every library and the Caffe2 package are pinned to the wheel first.
#
# The wheel also carries its own fmt headers, newer than the system's fmt that spdlog was built
# against, and /usr/include is an implicit directory CMake will not move before them: a directory
# holding only a link to the system's fmt goes ahead of LibTorch's include path instead.
function(fthost_use_libtorch torch_dir)
  get_filename_component(torch_root "${torch_dir}/../../.." ABSOLUTE)
  set(Torch_DIR "${torch_dir}" CACHE PATH "LibTorch's CMake package" FORCE)
  set(Caffe2_DIR "${torch_root}/share/cmake/Caffe2" CACHE PATH "LibTorch's Caffe2 CMake package" FORCE)
  foreach(lib torch torch_cpu torch_cuda c10 c10_cuda caffe2_nvrtc kineto)
    string(TOUPPER "${lib}" lib_upper)
    find_library(fthost_torch_lib_${lib} ${lib} PATHS "${torch_root}/lib" NO_DEFAULT_PATH)
    if(fthost_torch_lib_${lib})
      # The names TorchConfig.cmake and Caffe2Config.cmake look up.
      set(${lib}_LIBRARY "${fthost_torch_lib_${lib}}" CACHE FILEPATH "" FORCE)
      set(${lib_upper}_LIBRARY "${fthost_torch_lib_${lib}}" CACHE FILEPATH "" FORCE)
    endif()
  endforeach()
  # The architectures users train on (A100, H100/H200); TorchConfig reads this, not
  # CMAKE_CUDA_ARCHITECTURES.
  if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST} AND NOT TORCH_CUDA_ARCH_LIST)
    set(TORCH_CUDA_ARCH_LIST "8.0;9.0" CACHE STRING "CUDA architectures (TorchConfig's spelling)")
  endif()

  find_package(Torch REQUIRED)
  if(NOT TORCH_LIBRARY MATCHES "^${torch_root}/")
    message(FATAL_ERROR "fthost: LibTorch's library ${TORCH_LIBRARY} is not the one under ${torch_root}")
  endif()

  if(EXISTS "${torch_root}/include/fmt/core.h")
    find_path(FTHOST_SYSTEM_FMT_INCLUDE_DIR fmt/core.h PATHS /usr/include NO_CMAKE_PATH NO_CMAKE_ENVIRONMENT_PATH)
    set(shadow "${CMAKE_BINARY_DIR}/fmt_before_torch")
    file(MAKE_DIRECTORY "${shadow}")
    file(CREATE_LINK "${FTHOST_SYSTEM_FMT_INCLUDE_DIR}/fmt" "${shadow}/fmt" SYMBOLIC)
    include_directories(BEFORE SYSTEM "${shadow}")
  endif()
  foreach(var Torch_VERSION TORCH_LIBRARIES TORCH_INCLUDE_DIRS TORCH_CXX_FLAGS TORCH_LIBRARY TORCH_CUDA_LIBRARIES)
    set(${var} "${${var}}" PARENT_SCOPE)
  endforeach()
  set(fthost_torch_root "${torch_root}" PARENT_SCOPE)
endfunction()
