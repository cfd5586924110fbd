// The directory protocol of training checkpoints in an output directory. A complete checkpoint
// is a visible `epoch_N/` or `step_N/` holding `recipe_state/manifest.json`; it appears in one
// rename (or exchange) of a fully written and synced hidden staging directory
// (ft::staging_directory), and disappears by first being renamed to a hidden deleting name
// (ft/durable_files.h names them and states who removes what). Hidden directories are never
// resumed from; whatever a crash leaves of them is cleaned up at the next start.
#pragma once

#include "train/training_state.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fthost {

struct CheckpointEntry {
  std::string tag;  // "epoch_0", "step_40"
  std::string dir;
  std::int64_t steps_run = 0;
  RecipeStateManifest manifest;
};

struct CheckpointScan {
  std::vector<CheckpointEntry> readable;  // oldest first, as complete_checkpoints orders them
  struct Unreadable {
    std::string dir;
    std::string why;  // read_manifest's error, naming the manifest
  };
  std::vector<Unreadable> unreadable;
};

// Every checkpoint directory in `output_dir` with a manifest: the ones whose manifest reads, in
// complete_checkpoints' order, and why each other one's does not.
CheckpointScan scan_checkpoints(const std::string& output_dir);

// Complete checkpoints in `output_dir`, oldest first (by steps_run; an epoch checkpoint after a
// step checkpoint of the same step). Reads each manifest's steps_run; a manifest that cannot be
// read is an error naming it.
std::vector<CheckpointEntry> complete_checkpoints(const std::string& output_dir);

struct InterruptedCheckpoints {
  std::vector<std::string> removed;   // hidden leftovers deleted
  std::vector<std::string> restored;  // "<hidden> -> <tag dir>": replaced checkpoints put back
};

// Cleans up what interrupted saves and deletions left. `.<tag>.partial-*` and
// `.<tag>.deleting-*` are removed. `.<tag>.old-*` is a complete checkpoint moved aside to be
// replaced: when `<tag>` is missing (the crash came before its replacement was renamed in) the
// first of them is renamed back to `<tag>`, otherwise they are removed.
InterruptedCheckpoints remove_interrupted_checkpoints(const std::string& output_dir);

}  // namespace fthost
