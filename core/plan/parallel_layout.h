// The parallel layout a run of `world` ranks would build, read from its config as the device mesh
// (train/device_mesh.h) and the shipped parallelism strategies read it, with their refusals: a
// tensor_parallel_dim that does not divide the ranks, FSDP dims that do not multiply to them.
#pragma once

#include "config/training_settings.h"
#include "plan/memory_plan.h"

#include <ft/config.h>

namespace fthost {

// Throws ft::ConfigError naming the key, worded as the run's own refusal. A strategy other than
// fthost's (single, ddp, fsdp, hsdp) is refused by name: the plan cannot know how it shards.
ParallelLayout read_parallel_layout(const ft::ConfigNode& root, const TrainingSettings& settings, int world, int nodes);

}  // namespace fthost
