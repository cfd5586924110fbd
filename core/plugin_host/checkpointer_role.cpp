#include "plugin_host/checkpointer_role.h"

// For TrainingCheckpointStorage::capability only (a constant): no LibTorch code is linked.
#include <ft/training_checkpoint_storage.h>

namespace fthost {

std::optional<std::string> checkpointer_role_problem(const ft::Registry& registry, const ft::ConfigNode& root) {
  if (!root.is_table("checkpointer")) return std::nullopt;
  const ft::ConfigNode table = root.table("checkpointer");
  std::string name;
  try {
    name = table.component();
  } catch (const ft::ConfigError&) {
    return std::nullopt;  // not a string: Registry::resolve reports it
  }
  const ft::ComponentInfo* info = registry.find(name);
  if (!info || info->kind != ft::Kind::Checkpointer || info->provides(ft::TrainingCheckpointStorage::capability))
    return std::nullopt;
  try {
    table.fail("_component_",
               "'" + info->name + "' (" + info->library +
                   ") cannot store training checkpoints: every run saves a resumable checkpoint at the end of each "
                   "epoch, so the checkpointer must provide ft::TrainingCheckpointStorage and register the \"" +
                   ft::TrainingCheckpointStorage::capability +
                   "\" capability (docs/plugins.md); use torchtune.training.FullModelHFCheckpointer or such a "
                   "checkpointer");
  } catch (const ft::ConfigError& e) {
    return std::string(e.what());
  }
}

}  // namespace fthost
