# fthost_add_plugin(<name> SOURCES <src>... [LINK <lib>...] [OUTPUT_DIRECTORY <dir>] [NO_MANIFEST])
#
# Builds lib<name>.so as an fthost plugin: links the SDK, hides every symbol but the
# Boost.DLL entry point, and places it where the host looks for plugins. After each link,
# `fthost plugins --write-manifest` loads the library and writes lib<name>.so.manifest.json
# next to it: `fthost ls`, `plugins` and `validate` read that instead of loading the library
# (and LibTorch). A library that fails to load fails the build here; NO_MANIFEST skips the step
# (for deliberately broken test plugins). Shared by the in-tree build and the installed SDK
# package (fthostConfig.cmake, which sets FTHOST_EXECUTABLE to the installed fthost).
function(fthost_add_plugin name)
  cmake_parse_arguments(ARG "NO_MANIFEST" "OUTPUT_DIRECTORY" "SOURCES;LINK" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "fthost_add_plugin(${name}): SOURCES is required")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE fthost::sdk ${ARG_LINK})
  if(TARGET fthost_warnings)  # in-tree only: third-party plugins choose their own flags
    target_link_libraries(${name} PRIVATE fthost_warnings)
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  elseif(DEFINED FTHOST_PLUGIN_OUTPUT_DIR)  # in-tree, a shipped plugin: cmake/FthostInstall.cmake installs it
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${FTHOST_PLUGIN_OUTPUT_DIR}")
    set_property(GLOBAL APPEND PROPERTY FTHOST_SHIPPED_PLUGINS ${name})
  endif()
  if(NOT ARG_NO_MANIFEST)
    if(TARGET fthost)  # in-tree
      set(writer "$<TARGET_FILE:fthost>")
      add_dependencies(${name} fthost)
    elseif(FTHOST_EXECUTABLE)
      set(writer "${FTHOST_EXECUTABLE}")
    else()
      message(FATAL_ERROR "fthost_add_plugin(${name}): no fthost executable to write the manifest with "
                          "(set FTHOST_EXECUTABLE, or pass NO_MANIFEST)")
    endif()
    set(writer_env "")
    if(FTHOST_SANITIZE)  # in-tree sanitizer builds: the writer's exit-time leak check is not the build's business
      set(writer_env ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0)
    endif()
    add_custom_command(TARGET ${name} POST_BUILD
      COMMAND ${writer_env} "${writer}" plugins --write-manifest "$<TARGET_FILE:${name}>"
      COMMENT "Writing the plugin manifest of lib${name}.so"
      VERBATIM)
  endif()
endfunction()
