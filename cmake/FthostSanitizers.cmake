# Sanitizer and fuzzer instrumentation, applied to every in-tree target from this one place.
#
#   -DFTHOST_SANITIZE=address,undefined   ASan + UBSan on the host, the SDK, every plugin and the tests
#   -DFTHOST_SANITIZE=thread              TSan, the same way (scripts/test.sh --tsan)
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

set(fthost_sanitize_list "${FTHOST_SANITIZE}")
if(FTHOST_FUZZ)
  # Coverage instrumentation everywhere; only the fuzz executables link libFuzzer's main().
  list(APPEND fthost_sanitize_list fuzzer-no-link)
endif()
string(REPLACE ";" "," fthost_sanitize_flags "${fthost_sanitize_list}")

if(fthost_sanitize_flags)
  # Frame pointers make the sanitizers' fast unwinder give whole stacks; -O1 keeps the suite's
  # run time close to a release build while leaving reports readable.
  add_compile_options(-fsanitize=${fthost_sanitize_flags} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${fthost_sanitize_flags})
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
