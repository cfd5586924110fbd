#include "plugin_host/plugin_loader.h"

#include "plugin_host/plugin_manifest.h"

#include <ft/log.h>

#include <boost/dll/library_info.hpp>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <boost/filesystem.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>

namespace fthost {

namespace fs = boost::filesystem;
using ft::PluginError;

std::string describe_fingerprint(const ft::BuildFingerprint& fp) {
  return std::string("LibTorch ") + fp.torch_version + " (" + (fp.cuda ? "cuda" : "cpu") + ", C++11 ABI " +
         std::to_string(fp.cxx11_abi) + ", " + fp.compiler + ")";
}

std::vector<PluginSearchPath> PluginLoader::search_paths(const std::vector<std::string>& cli_dirs,
                                                         const std::vector<std::string>& config_paths) {
  std::vector<PluginSearchPath> out;
  for (const auto& d : cli_dirs) out.push_back({d, "--plugin-dir"});
  for (const auto& d : config_paths) out.push_back({d, "plugins.paths"});
  if (const char* env = std::getenv("FTHOST_PLUGIN_PATH")) {
    std::string s(env);
    std::size_t start = 0;
    while (start <= s.size()) {
      auto colon = s.find(':', start);
      std::string part = s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!part.empty()) out.push_back({part, "FTHOST_PLUGIN_PATH"});
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  fs::path exe = boost::dll::program_location();
  out.push_back({(exe.parent_path().parent_path() / "lib" / "fthost" / "plugins").string(), "default"});
  return out;
}

void PluginLoader::load_all(const std::vector<PluginSearchPath>& paths) {
  std::set<std::string> seen;
  std::string searched;
  for (const auto& sp : paths) {
    searched += (searched.empty() ? "" : ", ") + sp.path;
    boost::system::error_code ec;
    fs::file_status st = fs::status(sp.path, ec);
    if (!fs::exists(st)) {
      if (sp.source == "default" || sp.source == "FTHOST_PLUGIN_PATH") continue;
      throw PluginError(sp.source + ": " + sp.path + ": no such file or directory");
    }
    std::vector<std::string> files;
    bool explicit_file = false;
    if (fs::is_directory(st)) {
      for (const auto& entry : fs::directory_iterator(sp.path))
        if (fs::is_regular_file(entry.status()) && entry.path().extension() == ".so")
          files.push_back(entry.path().string());
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(sp.path);
      explicit_file = true;
    }
    for (const auto& f : files) {
      std::string canonical = fs::weakly_canonical(f).string();
      if (!seen.insert(canonical).second) continue;
      load_library(canonical, explicit_file);
    }
  }
  registry_.set_search_description(searched);
}

namespace {

bool has_entry_point(const std::string& path, std::string& why) {
  // Read the symbol table without running any of the library's code.
  try {
    boost::dll::library_info info(path);
    auto symbols = info.symbols("boostdll");
    return std::find(symbols.begin(), symbols.end(), FT_PLUGIN_ENTRY_SYMBOL) != symbols.end();
  } catch (const std::exception& e) {
    why = "not an ELF shared library";
    return false;
  }
}

}  // namespace

void PluginLoader::add_described(LoadedPlugin plugin, ft::Registry components) {
  const std::string path = plugin.path;
  plugin.from_manifest = true;
  registry_.merge(std::move(components), path, nullptr);
  plugins_.push_back(std::move(plugin));
}

void PluginLoader::load_library(const std::string& path, bool explicit_file) {
  if (manifests_ == Manifests::Use) {
    std::string why_not;
    if (auto described = read_plugin_manifest(path, why_not)) {
      add_described(std::move(described->plugin), std::move(described->components));
      return;
    }
    ft::log::debug("{}: {}; loading the library", path, why_not);
  }
  std::string why = "no '" FT_PLUGIN_ENTRY_SYMBOL "' entry point (build it with FT_PLUGIN)";
  if (!has_entry_point(path, why)) {
    std::string msg = path + ": not an fthost plugin: " + why;
    if (explicit_file) throw PluginError(msg);
    warnings_.push_back("skipping " + msg);
    ft::log::warn("skipping {}", msg);
    return;
  }

  auto library = std::make_shared<boost::dll::shared_library>();
  try {
    library->load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    throw PluginError(path + ": cannot open: " + e.what());
  }

  const ft::PluginInfo* info = nullptr;
  try {
    info = library->get_alias<ft::PluginEntry>(FT_PLUGIN_ENTRY_SYMBOL)();
  } catch (const std::exception& e) {
    throw PluginError(path + ": not an fthost plugin: " + e.what());
  }
  if (!info) throw PluginError(path + ": not an fthost plugin: its entry point returned no plugin info");

  const std::string file = fs::path(path).filename().string();
  if (info->abi_major != FT_ABI_MAJOR || info->abi_minor > FT_ABI_MINOR) {
    throw PluginError("plugin " + file + " was built for fthost plugin ABI " + std::to_string(info->abi_major) + "." +
                      std::to_string(info->abi_minor) + ", this host has ABI " + std::to_string(FT_ABI_MAJOR) + "." +
                      std::to_string(FT_ABI_MINOR) + ": rebuild it against this SDK (" + path + ")");
  }
  const ft::BuildFingerprint mine = ft::this_build_fingerprint();
  const ft::BuildFingerprint& theirs = info->fingerprint;
  if (std::strcmp(mine.torch_version, theirs.torch_version) != 0 || mine.cxx11_abi != theirs.cxx11_abi ||
      mine.cuda != theirs.cuda || std::strcmp(mine.compiler, theirs.compiler) != 0) {
    throw PluginError("plugin " + file + " was built for " + describe_fingerprint(theirs) + ", this host has " +
                      describe_fingerprint(mine) + ": rebuild it against this SDK (" + path + ")");
  }

  ft::Registry staged;
  try {
    info->register_components(staged);
  } catch (const std::exception& e) {
    throw PluginError(path + ": registration failed: " + e.what());
  } catch (...) {
    throw PluginError(path + ": registration failed: unknown exception");
  }

  LoadedPlugin loaded{
      path, info->name ? info->name : "", info->version ? info->version : "", info->abi_major, info->abi_minor, {}};
  for (const auto* c : staged.list()) loaded.components.push_back(c->name);
  registry_.merge(std::move(staged), path, std::shared_ptr<const void>(library, library.get()));
  plugins_.push_back(std::move(loaded));
}

void write_plugin_manifest(const std::string& library_argument) {
  const std::string library = boost::filesystem::weakly_canonical(library_argument).string();
  PluginLoader loader(PluginLoader::Manifests::Ignore);
  loader.load_library(library, /*explicit_file=*/true);
  write_plugin_manifest(library, loader.plugins().front(), loader.registry());
}

}  // namespace fthost
