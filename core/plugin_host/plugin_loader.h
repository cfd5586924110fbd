// Finding and loading plugin libraries into one registry.
//
// Search order: --plugin-dir, `plugins.paths` in the config, FTHOST_PLUGIN_PATH (colon-
// separated), then <exe>/../lib/fthost/plugins. Every library found is loaded; a component
// name registered twice is an error naming both libraries.
//
// A loader made with Manifests::Use reads a library's manifest (plugin_manifest.h) instead of
// loading the library, where the manifest is current: its registry then describes the
// components (names, kinds, schemas, capabilities) but cannot instantiate them. Commands that
// only describe (ls, plugins, validate) use it; training loads every library.
#pragma once

#include "plugin_host/loaded_plugin.h"

#include <ft/plugin.h>
#include <ft/registry.h>

#include <memory>
#include <string>
#include <vector>

namespace fthost {

struct PluginSearchPath {
  std::string path;    // a directory to scan, or one library file
  std::string source;  // where it came from: "--plugin-dir", "plugins.paths", "FTHOST_PLUGIN_PATH", "default"
};

class PluginLoader {
 public:
  enum class Manifests { Ignore, Use };
  explicit PluginLoader(Manifests manifests = Manifests::Ignore) : manifests_(manifests) {}

  // Directories from the command line, config and environment, in search order.
  static std::vector<PluginSearchPath> search_paths(const std::vector<std::string>& cli_dirs,
                                                    const std::vector<std::string>& config_paths);

  // Loads every plugin in `paths`; throws ft::PluginError with a specific message on the first failure.
  void load_all(const std::vector<PluginSearchPath>& paths);
  // Loads one library file; `explicit_file` makes "not a plugin" an error rather than a skip.
  void load_library(const std::string& path, bool explicit_file);
  // Adds a plugin described by its manifest (plugin_manifest.h), as load_library adds a loaded one.
  void add_described(LoadedPlugin plugin, ft::Registry components);

  const ft::Registry& registry() const { return registry_; }
  const std::vector<LoadedPlugin>& plugins() const { return plugins_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  Manifests manifests_;
  ft::Registry registry_;
  std::vector<LoadedPlugin> plugins_;
  std::vector<std::string> warnings_;
};

// Loads `library` (as training does, with every check) and writes its manifest
// (plugin_manifest.h); throws ft::PluginError or ft::Error naming the library or the manifest.
void write_plugin_manifest(const std::string& library);

// "LibTorch 1.13.0 (cpu, C++11 ABI 1, gcc 12)".
std::string describe_fingerprint(const ft::BuildFingerprint& fp);

}  // namespace fthost
