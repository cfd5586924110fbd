# Where fthost's installed libraries, plugins and executable find their shared libraries: their
# own (lib/ of the prefix) and those of the Python wheels fthost was built against (torch's
# LibTorch, pyarrow's Arrow, the CUDA runtime of PyTorch's nvidia wheels). Never copied: an
# installed fthost uses the wheels' own files.
#
#   cmake --install   the wheels' directories as they are on this machine (absolute)
#   FTHOST_WHEEL=ON   relative to the library ($ORIGIN/...): the `fthost` Python package sits in
#                     the same site-packages as torch and pyarrow (cmake/FthostPythonPackage.cmake)

# The wheel directories the build links from, absolute.
set(FTHOST_WHEEL_LIBRARY_DIRS "${FTHOST_TORCH_LIBRARY_DIR}")
if(FTHOST_ARROW_LIBRARY_DIR)
  list(APPEND FTHOST_WHEEL_LIBRARY_DIRS "${FTHOST_ARROW_LIBRARY_DIR}")
endif()
if(FTHOST_WITH_CUDA)
  # libcudart.so.13 (the CUDA kernels link the runtime); LibTorch finds the rest itself.
  foreach(dir "${fthost_site_packages}/nvidia/cu13/lib" "${fthost_site_packages}/nvidia/cuda_runtime/lib")
    if(EXISTS "${dir}")
      list(APPEND FTHOST_WHEEL_LIBRARY_DIRS "${dir}")
    endif()
  endforeach()
endif()

# fthost_set_install_rpath(<target> <destination>): the installed <target>'s RUNPATH, for its
# <destination> relative to the install prefix (lib, bin, lib/fthost/plugins).
function(fthost_set_install_rpath target destination)
  file(RELATIVE_PATH to_prefix "/prefix/${destination}" "/prefix")
  set(prefix_from_origin "$ORIGIN/${to_prefix}")
  set(paths "${prefix_from_origin}/lib")
  foreach(dir IN LISTS FTHOST_WHEEL_LIBRARY_DIRS)
    if(FTHOST_WHEEL)
      # The package is site-packages/fthost: its prefix's parent is site-packages.
      file(RELATIVE_PATH in_site_packages "${fthost_site_packages}" "${dir}")
      if(in_site_packages MATCHES "^\\.\\.")
        message(FATAL_ERROR "fthost: ${dir} is not inside ${fthost_site_packages}: a wheel cannot refer to it")
      endif()
      list(APPEND paths "${prefix_from_origin}/../${in_site_packages}")
    else()
      list(APPEND paths "${dir}")
    endif()
  endforeach()
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "${paths}")
endfunction()
