#include "cli/commands.h"

#include "cli/config_commands.h"
#include "config/checked_config.h"
#include "config/preflight.h"
#include "plugin_host/plugin_loader.h"
#include "plugin_host/plugin_manifest.h"

#include <boost/filesystem.hpp>

#include <iomanip>
#include <iostream>
#include <sstream>

namespace fthost {

std::string version_text() {
  return "fthost " FTHOST_VERSION " (plugin ABI " + std::to_string(FT_ABI_MAJOR) + "." + std::to_string(FT_ABI_MINOR) +
         ", " + describe_fingerprint(ft::this_build_fingerprint()) + ")\n" FTHOST_ACCELERATORS;
}

void print_components(std::ostream& out, const ft::Registry& registry, std::optional<ft::Kind> filter, bool verbose) {
  for (ft::Kind k : ft::all_kinds()) {
    if (filter && *filter != k) continue;
    auto comps = registry.list(k);
    if (comps.empty()) continue;
    out << ft::kind_name(k) << ":\n";
    for (const auto* c : comps) {
      out << "  " << std::left << std::setw(62) << c->name << " "
          << boost::filesystem::path(c->library).filename().string() << "\n";
      if (!verbose) continue;
      if (!c->summary.empty()) out << "      " << c->summary << "\n";
      if (!c->capabilities.empty()) {
        std::string roles;
        for (const auto& role : c->capabilities) roles += (roles.empty() ? "" : ", ") + role;
        out << "      provides: " << roles << "\n";
      }
      for (const auto& key : c->schema.keys()) {
        std::string def = key.required ? "required" : key.default_toml.empty() ? "optional" : "= " + key.default_toml;
        out << "      " << std::left << std::setw(28) << key.name << std::setw(8) << ft::value_type_name(key.type)
            << std::setw(22) << def << key.help << "\n";
      }
    }
  }
}

namespace {

// ls and plugins describe the plugins: their manifests suffice where they are current.
PluginLoader load_plugins(const Invocation& inv) {
  PluginLoader loader(PluginLoader::Manifests::Use);
  loader.load_all(PluginLoader::search_paths(inv.plugin_dirs, {}));
  return loader;
}

int cmd_ls(const Invocation& inv) {
  std::optional<ft::Kind> filter;
  if (!inv.args.empty() && inv.args[0] == "configs") return cmd_ls_configs();
  if (!inv.args.empty()) {
    filter = ft::kind_from_name(inv.args[0]);
    if (!filter) {
      std::string kinds;
      for (auto k : ft::all_kinds()) kinds += (kinds.empty() ? "" : ", ") + std::string(ft::kind_name(k));
      throw ft::Error("ls: unknown kind '" + inv.args[0] + "'; kinds are: " + kinds + " (or `ls configs`)");
    }
  }
  print_components(std::cout, load_plugins(inv).registry(), filter, inv.verbose);
  return 0;
}

int cmd_plugins(const Invocation& inv) {
  PluginLoader loader = load_plugins(inv);
  for (const auto& p : loader.plugins()) {
    std::cout << p.name << " " << p.version << "  (ABI " << p.abi_major << "." << p.abi_minor << ")\n  " << p.path
              << "\n";
    for (const auto& c : p.components) std::cout << "    " << c << "\n";
  }
  for (const auto& w : loader.warnings()) std::cout << "warning: " << w << "\n";
  std::cout << loader.plugins().size() << " plugin libraries, " << loader.registry().size() << " components\n";
  return 0;
}

int cmd_validate(const Invocation& inv) {
  // Manifests describe every component: validation instantiates nothing, so no plugin loads.
  const CheckedConfig checked = load_checked_config(inv, PluginLoader(PluginLoader::Manifests::Use));
  // What the config names on disk: warnings, so a config can be checked on a machine without
  // the model; errors with --strict.
  const PreflightReport report = preflight(checked.plugins.registry(), checked.root, checked.settings);
  if (!report.problems.empty()) {
    if (inv.strict) throw ft::ConfigError(preflight_message(report));
    for (const auto& problem : report.problems) std::cerr << "fthost: warning: " << problem << "\n";
    std::cout << inv.config_path << ": the configuration is valid, but " << report.problems.size()
              << " file(s) it names are missing or unreadable here (see the warnings; --strict makes them "
                 "errors)\n";
    return 0;
  }
  std::cout << inv.config_path << ": OK (" << checked.plugins.registry().size() << " components available";
  if (report.checkpoint_bytes)
    std::cout << "; one checkpoint takes about " << (*report.checkpoint_bytes >> 20) << " MiB";
  std::cout << ")\n";
  return 0;
}

}  // namespace

int dispatch(const Invocation& inv) {
  check_invocation(inv);
  if (inv.command == "ls") return cmd_ls(inv);
  if (inv.command == "plugins") {
    if (!inv.write_manifest.empty()) {
      write_plugin_manifest(inv.write_manifest);
      return 0;
    }
    return cmd_plugins(inv);
  }
  if (inv.command == "cp") return cmd_cp(inv.args, CopyOptions{inv.force, inv.make_parents});
  if (inv.command == "validate") return cmd_validate(inv);
  throw ft::Error("`fthost " + inv.command + "` trains or reads data: it runs in the training library");
}

}  // namespace fthost
