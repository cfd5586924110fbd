# fthost_warnings: the one place the project's warning flags live. Every in-tree target links it
# (plugins through fthost_add_plugin); out-of-tree plugins built against the installed SDK do not.
# FTHOST_WERROR turns warnings into errors (CI sets it), for C++ and CUDA sources alike: nvcc's
# own warnings (-Werror all-warnings) and the host compiler's on the host code it passes on.
option(FTHOST_WERROR "Treat compiler warnings as errors" OFF)
add_library(fthost_warnings INTERFACE)
target_compile_options(fthost_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${FTHOST_WERROR}>>:-Werror>
  "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall$<COMMA>-Wextra$<COMMA>-Wshadow>"
  "$<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${FTHOST_WERROR}>>:-Werror=all-warnings;-Xcompiler=-Werror>")
