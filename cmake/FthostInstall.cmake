# Install layout: bin/fthost, lib/libftsdk.so, lib/libftsdk_torch.so, lib/libftsdk_nn.so, lib/libfthost_training.so,
# lib/fthost/plugins/*.so with their *.so.manifest.json, include/ft/,
# share/fthost/configs/ (the shipped configs and the demo's data), and the
# CMake package `find_package(fthost)` -> fthost::sdk, fthost::sdk_core, fthost::nn + fthost_add_plugin().
include(FthostPythonPackage)  # FTHOST_WHEEL: the layout inside site-packages/fthost
include(FthostLibraryPaths)   # fthost_set_install_rpath()

install(TARGETS fthost RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
fthost_set_install_rpath(fthost ${CMAKE_INSTALL_BINDIR})
# Installed, the SDK's libraries find each other in lib/ and LibTorch in its wheel: a plugin
# linking fthost::nn alone (--as-needed drops the libraries it calls nothing of) loads
# libftsdk_nn.so, which must then find libftsdk_torch.so by itself.
foreach(library ftsdk ftsdk_torch ftsdk_nn fthost_training ft_sentencepiece_shim)
  fthost_set_install_rpath(${library} lib)
endforeach()
install(TARGETS ftsdk ftsdk_torch ftsdk_nn EXPORT fthostTargets LIBRARY DESTINATION lib)
install(TARGETS fthost_training LIBRARY DESTINATION lib)
install(DIRECTORY sdk/include/ft DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY configs/ DESTINATION ${FTHOST_CONFIG_SUBDIR})
# The shipped plugins, each with the manifest its link wrote (the build ID keeps it current
# through the install's RPATH rewrite).
get_property(fthost_shipped_plugins GLOBAL PROPERTY FTHOST_SHIPPED_PLUGINS)
foreach(plugin IN LISTS fthost_shipped_plugins)
  fthost_set_install_rpath(${plugin} "${FTHOST_PLUGIN_SUBDIR}")
  install(TARGETS ${plugin} LIBRARY DESTINATION "${FTHOST_PLUGIN_SUBDIR}")
  install(FILES "$<TARGET_FILE:${plugin}>.manifest.json" DESTINATION "${FTHOST_PLUGIN_SUBDIR}")
endforeach()
install(EXPORT fthostTargets NAMESPACE fthost:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fthost)
include(CMakePackageConfigHelpers)
# The LibTorch a plugin builds against: the build's, or in the wheel the torch package beside
# site-packages/fthost (a path fthostConfig.cmake resolves where it is installed).
if(FTHOST_WHEEL)
  set(FTHOST_PACKAGE_TORCH_DIR "\${PACKAGE_PREFIX_DIR}/../torch/share/cmake/Torch")
else()
  set(FTHOST_PACKAGE_TORCH_DIR "${Torch_DIR}")
endif()
configure_package_config_file(cmake/fthostConfig.cmake.in "${CMAKE_BINARY_DIR}/fthostConfig.cmake"
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fthost)
write_basic_package_version_file("${CMAKE_BINARY_DIR}/fthostConfigVersion.cmake" COMPATIBILITY SameMajorVersion)
install(FILES "${CMAKE_BINARY_DIR}/fthostConfig.cmake" "${CMAKE_BINARY_DIR}/fthostConfigVersion.cmake"
              cmake/FthostPlugin.cmake cmake/FthostLibTorch.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fthost)
