# fthost_warnings: the one place the project's warning flags live. Every in-tree target links it
# (plugins through fthost_add_plugin); out-of-tree plugins built against the installed SDK do not.
# FTHOST_WERROR turns warnings into errors (CI sets it).
option(FTHOST_WERROR "Treat compiler warnings as errors" OFF)
add_library(fthost_warnings INTERFACE)
target_compile_options(fthost_warnings INTERFACE -Wall -Wextra -Wshadow $<$<BOOL:${FTHOST_WERROR}>:-Werror>)
