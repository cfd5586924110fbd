// Where a run stands, as a training checkpoint records it in `recipe_state/manifest.json`
// (format: docs/checkpointing.md), and what a checkpoint must match to be resumed.
#pragma once

#include "config/training_settings.h"

#include <ft/model.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fthost {

struct TrainingProgress {
  // The seed's recipe-state keys.
  std::uint64_t seed = 0;
  std::int64_t epochs_run = 0;  // completed epochs
  std::int64_t total_epochs = 1;
  std::optional<std::int64_t> max_steps_per_epoch;
  // The position in the data: the next step is of `epoch`, whose first
  // `micro_batches_in_epoch` micro-batches (of every data-parallel rank) are already consumed.
  std::int64_t steps_run = 0;  // optimizer steps of the whole run
  std::int64_t epoch = 0;
  std::int64_t micro_batches_in_epoch = 0;
  // What the position means: the same numbers give the same micro-batches only with these.
  std::int64_t batch_size = 1;
  std::int64_t gradient_accumulation_steps = 1;
  int world_size = 1;
  int data_parallel_size = 1;
  int expert_parallel_size = 1;                         // each rank's optimizer state holds its experts' moments only
  int context_parallel_size = 1;                        // the ranks of one group read the same samples
  std::optional<std::int64_t> lr_scheduler_last_epoch;  // absent: no scheduler
};

// The recipe state of a run of settings `s` after `steps_run` optimizer steps, with the first
// `micro_batches_in_epoch` micro-batches of `epoch` consumed (what a checkpoint taken now records).
TrainingProgress progress_at(const TrainingSettings& s, int world_size, int data_parallel_size, std::int64_t steps_run,
                             std::int64_t epoch, std::int64_t micro_batches_in_epoch,
                             std::optional<std::int64_t> lr_scheduler_last_epoch);

struct ParameterShape {
  std::string name;
  std::vector<std::int64_t> shape;
};

struct RecipeStateManifest {
  TrainingProgress progress;
  bool optimizer_sharded = false;            // one file per rank, else rank 0's file is the whole state
  std::vector<std::string> optimizer_files;  // relative to the checkpoint directory, by rank
  std::string rng_file;
  std::string model_dtype;
  std::vector<ParameterShape> model_parameters;     // the fingerprint: Hugging Face names and shapes
  std::map<std::string, std::uint64_t> file_sizes;  // every file of the checkpoint but the manifest
};

inline constexpr const char* kRecipeStateDir = "recipe_state";
inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kRngFileName = "rng_state.safetensors";

// `recipe_state/optimizer-rank-0000i-of-0000N.safetensors`, relative to the checkpoint directory.
std::string optimizer_file_name(int rank, int world_size);
std::string manifest_path_in(const std::string& checkpoint_dir);

std::string manifest_json(const RecipeStateManifest& manifest);
// Throws ft::Error naming `path` and the key on a missing or mistyped key, or unreadable JSON.
RecipeStateManifest read_manifest(const std::string& path);

std::vector<ParameterShape> parameter_shapes(ft::Model& model);

// Throws ft::Error naming `manifest_path` when the checkpoint was written for another model
// (names or shapes differ) or by a run of another world size, or when one of its files is
// missing or not the size the manifest records (truncated).
void check_resumable(const RecipeStateManifest& manifest, const std::string& manifest_path,
                     const std::vector<ParameterShape>& model, int world_size, int data_parallel_size,
                     int expert_parallel_size, int context_parallel_size = 1);

}  // namespace fthost
