# One precompiled LibTorch header, compiled once and reused by every LibTorch-using target.
# A TU including <torch/torch.h> costs ~30 s on this class of machine; with the PCH it costs ~3 s.
add_library(fthost_pch OBJECT "${CMAKE_CURRENT_LIST_DIR}/pch_anchor.cpp")
target_link_libraries(fthost_pch PRIVATE fthost::sdk)
target_precompile_headers(fthost_pch PRIVATE "${PROJECT_SOURCE_DIR}/cmake/fthost_pch.h")

function(fthost_use_pch target)
  target_precompile_headers(${target} REUSE_FROM fthost_pch)
  # Executables get -fPIE, which makes GCC reject a PCH built with -fPIC; -fPIC (last flag wins)
  # is valid for executables too and keeps the PCH usable.
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    target_compile_options(${target} PRIVATE -fPIC)
  endif()
endfunction()
