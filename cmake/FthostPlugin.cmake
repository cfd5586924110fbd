# fthost_add_plugin(<name> SOURCES <src>... [LINK <lib>...])
#
# Builds lib<name>.so as an fthost plugin: links the SDK, hides every symbol but the
# Boost.DLL entry point, and places it where the host looks for plugins. Shared by the
# in-tree build and the installed SDK package (fthostConfig.cmake).
function(fthost_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;LINK" ${ARGN})
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
  elseif(DEFINED FTHOST_PLUGIN_OUTPUT_DIR)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${FTHOST_PLUGIN_OUTPUT_DIR}")
  endif()
endfunction()
