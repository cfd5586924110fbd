// Whether a run's checkpointer can store training checkpoints, read from the registry alone:
// `fthost validate` asks it without LibTorch, the recipe before it trains.
#pragma once

#include <ft/config.h>
#include <ft/registry.h>

#include <optional>
#include <string>

namespace fthost {

// Every run saves a resumable checkpoint at the end of each epoch, so its checkpointer must
// provide ft::TrainingCheckpointStorage. Checked from the registry entry's capabilities, without
// constructing the component: the problem (naming `checkpointer._component_`), or nullopt when
// the checkpointer provides the role or is unknown or missing (reported by the other checks).
std::optional<std::string> checkpointer_role_problem(const ft::Registry& registry, const ft::ConfigNode& root);

}  // namespace fthost
