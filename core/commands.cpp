#include "commands.h"

#include "checkpoint_manager.h"
#include "config_commands.h"
#include "config_loader.h"
#include "data_command.h"
#include "distributed_environment.h"
#include "full_finetune_recipe.h"
#include "log_level.h"
#include "plugin_loader.h"
#include "rank_logging.h"
#include "recipe_schema.h"
#include "shipped_configs.h"
#include "torchtune_key_rewrites.h"
#include "training_settings.h"

#include "ft_host/schema_check.h"

#include <ft/log.h>

#include <boost/filesystem.hpp>

#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace fthost {

std::string version_text() {
  return "fthost " FTHOST_VERSION " (plugin ABI " + std::to_string(FT_ABI_MAJOR) + "." + std::to_string(FT_ABI_MINOR) +
         ", " + describe_fingerprint(ft::this_build_fingerprint()) + ")";
}

namespace {

std::vector<std::string> config_plugin_paths(const ft::ConfigNode& root) {
  if (!root.is_table("plugins")) return {};
  return root.table("plugins").get<std::vector<std::string>>("paths", {});
}

PluginLoader load_plugins(const Invocation& inv, const ft::ConfigNode* root) {
  PluginLoader loader;
  loader.load_all(
      PluginLoader::search_paths(inv.plugin_dirs, root ? config_plugin_paths(*root) : std::vector<std::string>{}));
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
  PluginLoader loader = load_plugins(inv, nullptr);
  for (ft::Kind k : ft::all_kinds()) {
    if (filter && *filter != k) continue;
    auto comps = loader.registry().list(k);
    if (comps.empty()) continue;
    std::cout << ft::kind_name(k) << ":\n";
    for (const auto* c : comps) {
      std::cout << "  " << std::left << std::setw(62) << c->name << " "
                << boost::filesystem::path(c->library).filename().string() << "\n";
      if (!inv.verbose) continue;
      if (!c->summary.empty()) std::cout << "      " << c->summary << "\n";
      if (!c->capabilities.empty()) {
        std::string roles;
        for (const auto& role : c->capabilities) roles += (roles.empty() ? "" : ", ") + role;
        std::cout << "      provides: " << roles << "\n";
      }
      for (const auto& key : c->schema.keys()) {
        std::string def = key.required ? "required" : key.default_toml.empty() ? "optional" : "= " + key.default_toml;
        std::cout << "      " << std::left << std::setw(28) << key.name << std::setw(8) << ft::value_type_name(key.type)
                  << std::setw(22) << def << key.help << "\n";
      }
    }
  }
  return 0;
}

int cmd_plugins(const Invocation& inv) {
  PluginLoader loader = load_plugins(inv, nullptr);
  for (const auto& p : loader.plugins()) {
    std::cout << p.name << " " << p.version << "  (ABI " << p.abi_major << "." << p.abi_minor << ")\n  " << p.path
              << "\n";
    for (const auto& c : p.components) std::cout << "    " << c << "\n";
  }
  for (const auto& w : loader.warnings()) std::cout << "warning: " << w << "\n";
  std::cout << loader.plugins().size() << " plugin libraries, " << loader.registry().size() << " components\n";
  return 0;
}

// Schema-checks the top level and every component table; all problems are reported together.
// Returns the run's settings.
TrainingSettings validate_config(const ft::Registry& registry, const ft::ConfigNode& root) {
  std::vector<std::string> problems = ft::detail::check_and_complete(root, recipe_schema());
  TrainingSettings settings;
  if (problems.empty()) {
    try {
      settings = read_training_settings(root);
    } catch (const ft::ConfigError& e) {
      problems.push_back(e.what());
    }
  }
  for (const auto& key : root.keys()) {
    auto kind = kind_of_table(key);
    if (!kind || !(root.is_table(key) || root.is_table_list(key))) continue;
    for (const auto& table : root.table_list(key)) {
      try {
        registry.resolve(table, *kind);
      } catch (const ft::ConfigError& e) {
        problems.push_back(e.what());
      }
    }
  }
  if (auto problem = checkpointer_role_problem(registry, root)) problems.push_back(*problem);
  if (!problems.empty()) {
    std::string msg = std::to_string(problems.size()) + " problem(s) in the configuration:";
    for (const auto& p : problems) {
      std::size_t start = 0;
      while (start < p.size()) {
        auto nl = p.find('\n', start);
        msg += "\n  " + p.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        if (nl == std::string::npos) break;
        start = nl + 1;
      }
    }
    throw ft::ConfigError(msg);
  }
  return settings;
}

int cmd_validate_or_run(const Invocation& inv) {
  if (inv.config_path.empty())
    throw ft::ConfigError("--config: required (a run configuration in TOML or YAML, or a shipped config's name)");
  if (inv.command == "data") log_to_stderr();  // stdout is the data view
  auto doc = load_config(resolve_config_argument(inv.config_path), inv.args);
  if (inv.command == "data" && inv.data.packed) set_datasets_packed(*doc);
  ft::ConfigNode root = ft::detail::root_node(doc);
  rewrite_torchtune_keys(*doc, root);
  apply_log_level(root);  // before anything else logs
  PluginLoader loader = load_plugins(inv, &root);
  const TrainingSettings settings = validate_config(loader.registry(), root);
  if (inv.command == "validate") {
    std::cout << inv.config_path << ": OK (" << loader.registry().size() << " components available)\n";
    return 0;
  }
  if (inv.command == "data") return show_data(loader.registry(), root, settings, inv.data);
  const DistributedEnvironment env = read_distributed_environment();
  configure_rank_logging(env.rank, env.world_size);
  if (env.rank == 0) {
    boost::filesystem::create_directories(settings.output_dir);
    const std::string effective = root.to_toml();
    ft::log::info("effective config:\n{}", effective);
    std::ofstream f(settings.output_dir + "/config.effective.toml");
    f << effective << "\n";
  }
  return run_full_finetune(loader.registry(), root, settings);
}

}  // namespace

int dispatch(const Invocation& inv) {
  if (inv.command != "data" && (inv.data.samples || inv.data.packed || inv.data.json))
    throw ft::ConfigError("--samples, --packed and --json are options of `fthost data`");
  if (inv.command == "ls") return cmd_ls(inv);
  if (inv.command == "plugins") return cmd_plugins(inv);
  if (inv.command == "cp") return cmd_cp(inv.args, CopyOptions{inv.force, inv.make_parents});
  return cmd_validate_or_run(inv);
}

}  // namespace fthost
