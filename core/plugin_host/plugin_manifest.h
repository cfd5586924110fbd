// Plugin manifests: a plugin library's registry entries, written next to the library when it is
// built, so the commands that only describe components (ls, plugins, validate) read them instead
// of loading the library, and LibTorch with it.
//
// `fthost plugins --write-manifest LIB` (run by fthost_add_plugin after each link) loads LIB
// as training would and writes LIB.manifest.json: the plugin's name, version and ABI; the ABI
// and build fingerprint of the host that wrote it; LIB's file name and identity (its GNU build
// ID, which strip, an install and a wheel's unpacking keep; without one, its size and
// modification time in seconds); and every component: name, kind, summary, capabilities and schema (each key's type,
// whether it is required, its default and its help). A manifest is used only while all of these match LIB and this
// host; otherwise the host loads LIB and checks it as before.
#pragma once

#include "plugin_host/loaded_plugin.h"

#include <ft/registry.h>

#include <optional>
#include <string>

namespace fthost {

struct DescribedPlugin {
  LoadedPlugin plugin;
  ft::Registry components;  // describes; its entries cannot instantiate (training loads the library)
};

// "<library>.manifest.json".
std::string manifest_path(const std::string& library);

// Writes `library`'s manifest from the plugin as loaded and its registry; throws ft::Error
// naming the manifest when it cannot.
void write_plugin_manifest(const std::string& library, const LoadedPlugin& plugin, const ft::Registry& components);

// The plugin as `library`'s manifest describes it, when the manifest exists and matches the
// library and this host; otherwise nullopt, with the reason in `why_not`.
std::optional<DescribedPlugin> read_plugin_manifest(const std::string& library, std::string& why_not);

}  // namespace fthost
