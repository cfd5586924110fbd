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
  fthost_find_libtorch_openmp("${torch_root}")
  foreach(var Torch_VERSION TORCH_LIBRARIES TORCH_INCLUDE_DIRS TORCH_CXX_FLAGS TORCH_LIBRARY TORCH_CUDA_LIBRARIES)
    set(${var} "${${var}}" PARENT_SCOPE)
  endforeach()
  set(fthost_torch_root "${torch_root}" PARENT_SCOPE)
endfunction()

# fthost::libtorch_openmp: compiles a target's at::parallel_for loops with OpenMP, against the
# OpenMP runtime LibTorch itself runs. ATen's parallel_for is a header template: compiled without
# -fopenmp it runs its body on the calling thread alone, whatever torch::set_num_threads says
# (fthost's fused CPU kernels and optimizer updates did, at half speed on 2 cores). Linked to the
# wheel's own libgomp.so.1, so there is one runtime and one thread pool, sized by LibTorch's
# thread setting. Not for TSan builds (it cannot see libgomp's synchronisation and would report
# every parallel loop as a race) nor for compilers other than GCC (clang's -fopenmp wants its own
# runtime): those run the loops on one thread, which the configure step says.
function(fthost_find_libtorch_openmp torch_root)
  if(TARGET fthost::libtorch_openmp)
    return()
  endif()
  add_library(fthost::libtorch_openmp INTERFACE IMPORTED GLOBAL)
  set(one_thread "fthost: at::parallel_for loops in fthost's CPU kernels run on one thread")
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    message(STATUS "${one_thread}: the compiler is ${CMAKE_CXX_COMPILER_ID}, not GCC")
    return()
  elseif(FTHOST_SANITIZE MATCHES "thread")
    message(STATUS "${one_thread}: ThreadSanitizer cannot see libgomp's synchronisation")
    return()
  endif()
  find_library(FTHOST_LIBTORCH_OPENMP_LIBRARY NAMES libgomp.so.1 PATHS "${torch_root}/lib" NO_DEFAULT_PATH)
  if(NOT FTHOST_LIBTORCH_OPENMP_LIBRARY)
    message(WARNING "${one_thread}: LibTorch at ${torch_root} has no lib/libgomp.so.1")
    return()
  endif()
  set_target_properties(fthost::libtorch_openmp PROPERTIES
    INTERFACE_COMPILE_OPTIONS "$<$<COMPILE_LANGUAGE:CXX>:-fopenmp>"
    INTERFACE_LINK_LIBRARIES "${FTHOST_LIBTORCH_OPENMP_LIBRARY}")
endfunction()
