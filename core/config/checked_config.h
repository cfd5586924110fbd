// A run's configuration, loaded and checked as a whole: the file and its overrides, torchtune's
// keys rewritten, the top level against the recipe's schema and rules, and every component
// table against its registry entry. `fthost validate` stops here; run and data go on to train
// or show data with the same objects.
#pragma once

#include "config/invocation.h"
#include "config/training_settings.h"
#include "plugin_host/plugin_loader.h"

#include "ft_host/config_document.h"

#include <ft/config.h>
#include <ft/registry.h>

#include <functional>
#include <memory>

namespace fthost {

struct CheckedConfig {
  std::shared_ptr<ft::detail::ConfigDocument> doc;
  ft::ConfigNode root;
  PluginLoader plugins;
  TrainingSettings settings;
};

// Schema-checks the top level and every component table; all problems are reported together
// in one ft::ConfigError. Returns the run's settings.
TrainingSettings validate_config(const ft::Registry& registry, const ft::ConfigNode& root);

// Loads `inv.config_path` with its overrides, then `adjust` (may be empty) edits the document
// before anything reads it; plugins load through `plugins` (manifests or not, as it was made).
CheckedConfig load_checked_config(const Invocation& inv, PluginLoader plugins,
                                  const std::function<void(ft::detail::ConfigDocument&)>& adjust = {});

// The same, for a run of `world_size` ranks (torchtune's keys rewritten for that many), quietly:
// what `fthost plan` reads for the layout it plans.
CheckedConfig load_checked_config_for_world(const Invocation& inv, PluginLoader plugins, int world_size,
                                            const std::function<void(ft::detail::ConfigDocument&)>& adjust = {});

// What is checked before a run starts `world_size` ranks of `inv` (once, by the launcher or the
// one process, before LibTorch loads): the config each rank will load (torchtune's keys
// rewritten for that many ranks), against the plugins' manifests as `fthost validate` reads
// them, then the pre-flight check of every path it names (config/preflight.h). Throws what
// loading the config would throw in a rank, or one ft::ConfigError listing every pre-flight
// problem.
void check_config_before_launch(const Invocation& inv, int world_size);

}  // namespace fthost
