# Sanitizer and fuzzer instrumentation, applied to every in-tree target from this one place.
#
#   -DFTHOST_SANITIZE=address,undefined   ASan + UBSan on the host, the SDK, every plugin and the tests
#   -DFTHOST_SANITIZE=thread              TSan, the same way (scripts/test.sh --tsan)
#   -DFTHOST_UNDEFINED_SANITIZER_TARGETS="a;b"
#                                         with `undefined` in FTHOST_SANITIZE: UBSan's checks compiled
#                                         into these targets only (scripts/test.sh --sanitize), the
#                                         rest ASan only; empty (the default): into every target
#   -DFTHOST_FUZZ=ON                      also build the libFuzzer targets in tests/fuzz (clang only)
#
# LibTorch and the other system libraries stay uninstrumented; the executables link the sanitizer
# runtimes, so dlopen'ed plugins find them already loaded. Runtime options (suppressions,
# halt_on_error) live in tests/sanitizers/env.sh, which scripts/test.sh sources.
set(FTHOST_SANITIZE "" CACHE STRING "Comma-separated -fsanitize= list for every in-tree target (e.g. address,undefined)")
option(FTHOST_FUZZ "Build the libFuzzer targets in tests/fuzz (needs clang)" OFF)

if(FTHOST_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "FTHOST_FUZZ needs clang (libFuzzer); configure with -DCMAKE_CXX_COMPILER=clang++")
endif()

set(FTHOST_UNDEFINED_SANITIZER_TARGETS "" CACHE STRING
    "With undefined in FTHOST_SANITIZE: the targets UBSan instruments (empty: all)")

set(fthost_sanitize_list "${FTHOST_SANITIZE}")
string(REPLACE "," ";" fthost_sanitize_list "${fthost_sanitize_list}")
# UBSan on LibTorch-heavy sources costs ~40% more compile time (measured: 19 s -> 27 s for
# sdk/src/nn/decoder_model.cpp at -O1 -g1), most of it in LibTorch's inlined templates. A scoped
# build compiles the checks into the listed targets (cmake: fthost_apply_scoped_undefined_sanitizer
# at the end of the top-level CMakeLists.txt) and links the runtime everywhere.
set(fthost_link_sanitize_list ${fthost_sanitize_list})
set(fthost_scoped_undefined OFF)
if("undefined" IN_LIST fthost_sanitize_list AND FTHOST_UNDEFINED_SANITIZER_TARGETS)
  list(REMOVE_ITEM fthost_sanitize_list undefined)
  set(fthost_scoped_undefined ON)
endif()
if(FTHOST_FUZZ)
  # Coverage instrumentation everywhere; only the fuzz executables link libFuzzer's main().
  list(APPEND fthost_sanitize_list fuzzer-no-link)
  list(APPEND fthost_link_sanitize_list fuzzer-no-link)
endif()
string(REPLACE ";" "," fthost_sanitize_flags "${fthost_sanitize_list}")
string(REPLACE ";" "," fthost_link_sanitize_flags "${fthost_link_sanitize_list}")

if(fthost_sanitize_flags)
  # Frame pointers make the sanitizers' fast unwinder give whole stacks; -O1 keeps the suite's
  # run time close to a release build while leaving reports readable.
  add_compile_options(-fsanitize=${fthost_sanitize_flags} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${fthost_link_sanitize_flags})
  set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O1 -g1 -DNDEBUG")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC's own manual: sanitizer instrumentation makes -Wmaybe-uninitialized report false
    # positives (here inside libstdc++'s <regex>), which FTHOST_WERROR would turn into errors.
    add_compile_options(-Wno-maybe-uninitialized)
    if(fthost_sanitize_flags MATCHES "thread")
      # LibTorch's headers inline std::atomic_thread_fence (c10's PyObjectSlot), which GCC's TSan
      # does not model and warns of in every TU that includes them; none of fthost's code uses a
      # fence, so the warning says nothing about it.
      add_compile_options(-Wno-tsan)
    endif()
  endif()
  message(STATUS "fthost: instrumenting with -fsanitize=${fthost_sanitize_flags}")
endif()

function(fthost_apply_scoped_undefined_sanitizer)
  if(NOT fthost_scoped_undefined)
    return()
  endif()
  foreach(target IN LISTS FTHOST_UNDEFINED_SANITIZER_TARGETS)
    if(NOT TARGET ${target})
      message(FATAL_ERROR "FTHOST_UNDEFINED_SANITIZER_TARGETS names ${target}, which is not a target of this build")
    endif()
    target_compile_options(${target} PRIVATE -fsanitize=undefined)
  endforeach()
  message(STATUS "fthost: -fsanitize=undefined in ${FTHOST_UNDEFINED_SANITIZER_TARGETS}")
endfunction()
