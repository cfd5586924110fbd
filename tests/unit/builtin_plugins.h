// The built-in plugins as the tests use them: loaded through the host's PluginLoader from the
// build's plugin directory (as `fthost run` loads them), and config tables parsed from TOML text
// by the host's config loader, so components are instantiated exactly as the recipe does.
#pragma once

#include "config/config_loader.h"
#include "plugin_host/plugin_loader.h"
#include "test_helpers.h"

#include <ft/config.h>
#include <ft/registry.h>

#include <string>

namespace fttest {

// Loaded on first use and kept for the whole test process: loading the LibTorch-linked libraries
// once saves seconds per suite, and never unloading them keeps their code valid for anything a
// test leaves alive until exit.
inline fthost::PluginLoader& builtin_plugins() {
  static fthost::PluginLoader* loader = [] {
    auto* l = new fthost::PluginLoader;
    l->load_all({{FT_BUILTIN_PLUGIN_DIR, "default"}});
    return l;
  }();
  return *loader;
}

inline const ft::Registry& builtin_registry() { return builtin_plugins().registry(); }

// The root of a config parsed from `toml` text.
inline ft::ConfigNode config_root(const std::string& toml) {
  return ft::detail::root_node(fthost::load_config(write_temp("run.toml", toml), {}));
}

// Base of test fixtures that instantiate built-in components from TOML text.
class BuiltinPluginsTest : public ::testing::Test {
 protected:
  static const ft::Registry& registry() { return builtin_registry(); }
  static ft::ConfigNode root(const std::string& toml) { return config_root(toml); }
};

}  // namespace fttest
