# Build-speed helpers: ccache and a fast linker when the machine has them.
find_program(FTHOST_CCACHE ccache)
if(FTHOST_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  # CCACHE_BASEDIR makes paths inside the checkout relative, so two clones of the project on
  # one machine (a developer's and CI's) share cache hits. CCACHE_NOHASHDIR keeps the build
  # directory out of the hash: with debug info on, ccache would otherwise hash it and every
  # clone would miss. The sloppiness lets ccache cache sources compiled with the tests'
  # precompiled header (FTHOST_TEST_PCH), which it otherwise compiles uncached.
  set(CMAKE_CXX_COMPILER_LAUNCHER "${CMAKE_COMMAND}" -E env
      "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" "CCACHE_NOHASHDIR=1" "CCACHE_SLOPPINESS=pch_defines,time_macros"
      "${FTHOST_CCACHE}")
  message(STATUS "fthost: using ccache ${FTHOST_CCACHE}")
endif()
foreach(linker mold lld)
  find_program(FTHOST_LINKER_${linker} "ld.${linker}")
  if(FTHOST_LINKER_${linker})
    include(CheckCXXSourceCompiles)
    set(CMAKE_REQUIRED_LINK_OPTIONS "-fuse-ld=${linker}")
    check_cxx_source_compiles("int main(){return 0;}" FTHOST_HAS_LD_${linker})
    unset(CMAKE_REQUIRED_LINK_OPTIONS)
    if(FTHOST_HAS_LD_${linker})
      add_link_options("-fuse-ld=${linker}")
      message(STATUS "fthost: linking with ${linker}")
      break()
    endif()
  endif()
endforeach()
