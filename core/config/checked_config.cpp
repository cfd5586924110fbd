#include "config/checked_config.h"

#include "config/config_loader.h"
#include "config/log_level.h"
#include "config/preflight.h"
#include "config/recipe_schema.h"
#include "config/shipped_configs.h"
#include "config/torchtune_key_rewrites.h"
#include "plugin_host/checkpointer_role.h"

#include "ft_host/schema_check.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fthost {

namespace {

std::vector<std::string> config_plugin_paths(const ft::ConfigNode& root) {
  if (!root.is_table("plugins")) return {};
  return root.table("plugins").get<std::vector<std::string>>("paths", {});
}

// torchtune's configs hold top-level keys the recipe never reads, there only to be referenced
// (`name: llama3_2_1B` for `output_dir: /tmp/torchtune/${name}/full`), as OmegaConf allows. Once
// the references are resolved such a key has served: it leaves the document, so it is not
// refused as unknown and the effective config loads again without it. A key nothing references
// stays, and the schema check refuses it.
void drop_interpolation_only_keys(ft::detail::ConfigDocument& doc, const std::set<std::string>& referenced) {
  std::set<std::string> referenced_top_level;
  for (const auto& key : referenced) referenced_top_level.insert(key.substr(0, key.find('.')));
  std::vector<std::string> served;
  for (const auto& [key, value] : doc.root())
    if (referenced_top_level.count(std::string(key.str())) && !recipe_schema().find(key.str()))
      served.emplace_back(key.str());
  for (const auto& key : served) doc.root().erase(key);
}

}  // namespace

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
    // One error may carry several problems, a line each (a component table's schema check
    // reports all of its keys in one): the count is of the lines printed, not of the errors.
    std::vector<std::string> lines;
    for (const auto& p : problems) {
      std::size_t start = 0;
      while (start < p.size()) {
        auto nl = p.find('\n', start);
        lines.push_back(p.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
        if (nl == std::string::npos) break;
        start = nl + 1;
      }
    }
    std::string msg = std::to_string(lines.size()) + " problem(s) in the configuration:";
    for (const auto& line : lines) msg += "\n  " + line;
    throw ft::ConfigError(msg);
  }
  return settings;
}

namespace {

// The world the config is checked for: this process's, or the launcher's ranks-to-be.
struct RanksToCheck {
  int world_size;
  int rank;
};

CheckedConfig load_and_check(const Invocation& inv, PluginLoader plugins,
                             const std::function<void(ft::detail::ConfigDocument&)>& adjust,
                             const std::optional<RanksToCheck>& ranks) {
  if (inv.config_path.empty())
    throw ft::ConfigError("--config: required (a run configuration in TOML or YAML, or a shipped config's name)");
  auto doc = load_config_file(resolve_config_argument(inv.config_path));
  apply_overrides(*doc, inv.args);
  drop_interpolation_only_keys(*doc, interpolate(*doc));
  if (adjust) adjust(*doc);
  ft::ConfigNode root = ft::detail::root_node(doc);
  if (ranks)
    rewrite_torchtune_keys(*doc, root, ranks->world_size, ranks->rank);
  else
    rewrite_torchtune_keys(*doc, root);
  apply_log_level(root);  // before anything else logs
  plugins.load_all(PluginLoader::search_paths(inv.plugin_dirs, config_plugin_paths(root)));
  TrainingSettings settings = validate_config(plugins.registry(), root);
  return CheckedConfig{std::move(doc), std::move(root), std::move(plugins), std::move(settings)};
}

}  // namespace

CheckedConfig load_checked_config(const Invocation& inv, PluginLoader plugins,
                                  const std::function<void(ft::detail::ConfigDocument&)>& adjust) {
  return load_and_check(inv, std::move(plugins), adjust, std::nullopt);
}

CheckedConfig load_checked_config_for_world(const Invocation& inv, PluginLoader plugins, int world_size,
                                            const std::function<void(ft::detail::ConfigDocument&)>& adjust) {
  return load_and_check(inv, std::move(plugins), adjust, RanksToCheck{world_size, -1});
}

void check_config_before_launch(const Invocation& inv, int world_size) {
  const CheckedConfig checked =
      load_and_check(inv, PluginLoader(PluginLoader::Manifests::Use), {}, RanksToCheck{world_size, -1});
  const PreflightReport report = preflight(checked.plugins.registry(), checked.root, checked.settings);
  if (!report.problems.empty()) throw ft::ConfigError(preflight_message(report));
}

}  // namespace fthost
