# Install layout: bin/fthost, lib/libftsdk.so, lib/libftsdk_torch.so, lib/libftsdk_nn.so, lib/libfthost_training.so,
# lib/fthost/plugins/*.so with their *.so.manifest.json, include/ft/,
# share/fthost/configs/ (the shipped configs and the demo's data), and the
# CMake package `find_package(fthost)` -> fthost::sdk, fthost::sdk_core, fthost::nn + fthost_add_plugin().
install(TARGETS fthost RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Installed, the SDK's libraries find each other in lib/ ($ORIGIN) and LibTorch in its wheel: a
# plugin linking fthost::nn alone (--as-needed drops the libraries it calls nothing of) loads
# libftsdk_nn.so, which must then find libftsdk_torch.so by itself.
set_target_properties(ftsdk_torch ftsdk_nn PROPERTIES INSTALL_RPATH "$ORIGIN;${FTHOST_TORCH_LIBRARY_DIR}")
install(TARGETS ftsdk ftsdk_torch ftsdk_nn EXPORT fthostTargets LIBRARY DESTINATION lib)
install(TARGETS fthost_training LIBRARY DESTINATION lib)
install(DIRECTORY sdk/include/ft DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY configs/ DESTINATION ${FTHOST_CONFIG_SUBDIR})
install(DIRECTORY "${FTHOST_PLUGIN_OUTPUT_DIR}/" DESTINATION "${FTHOST_PLUGIN_SUBDIR}"
        FILES_MATCHING PATTERN "*.so" PATTERN "*.so.manifest.json")
install(EXPORT fthostTargets NAMESPACE fthost:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fthost)
include(CMakePackageConfigHelpers)
configure_package_config_file(cmake/fthostConfig.cmake.in "${CMAKE_BINARY_DIR}/fthostConfig.cmake"
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fthost)
write_basic_package_version_file("${CMAKE_BINARY_DIR}/fthostConfigVersion.cmake" COMPATIBILITY SameMajorVersion)
install(FILES "${CMAKE_BINARY_DIR}/fthostConfig.cmake" "${CMAKE_BINARY_DIR}/fthostConfigVersion.cmake"
              cmake/FthostPlugin.cmake cmake/FthostLibTorch.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fthost)
