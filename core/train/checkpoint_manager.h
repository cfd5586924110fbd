// Training checkpoints of the full-finetune recipe: when to save, the staged multi-rank save
// (every rank writes into one hidden directory, rank 0 commits it with a rename once all are
// done), the background save, keep_last_n, and finding and restoring a checkpoint to resume.
// Layout and keys: docs/checkpointing.md.
#pragma once

#include "config/training_settings.h"
#include "plugin_host/checkpointer_role.h"
#include "train/training_state.h"

#include <ft/checkpointer.h>
#include <ft/collectives.h>
#include <ft/config.h>
#include <ft/lr_scheduler.h>
#include <ft/model.h>
#include <ft/optimizer.h>
#include <ft/parallelism.h>
#include <ft/registry.h>

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace fthost {

struct ResumePoint {
  std::string dir;
  std::string manifest_path;
  RecipeStateManifest manifest;
};

// The checkpoint resume_from_checkpoint names, its manifest read. nullopt when not resuming, or
// for `true` with no complete checkpoint yet (the run starts from the beginning, with a warning).
std::optional<ResumePoint> find_resume_point(const CheckpointSettings& settings);

// The seed's rules: seed and max_steps_per_epoch come from the checkpoint, epochs from the
// config, each with a warning when they differ; a different batch_size or
// gradient_accumulation_steps would change what the saved data position means and is an error.
void adopt_checkpoint_settings(TrainingSettings& s, const ResumePoint& point);

// The checkpoint's weights into `model`, with the checkpointer's checks; errors name the file.
// Throws ft::Error when the checkpointer has no training-checkpoint storage.
void load_resumed_model(ft::Checkpointer& checkpointer, ft::Model& model, const ResumePoint& point);

class CheckpointManager {
 public:
  struct Parts {
    ft::Model* model = nullptr;
    ft::Parallelism* parallelism = nullptr;
    ft::Checkpointer* checkpointer = nullptr;
    ft::Optimizer* optimizer = nullptr;
    ft::LRScheduler* scheduler = nullptr;
  };
  // Collective (agrees on the staging directories' id). Rank 0 cleans up what interrupted
  // saves left in the checkpoint directory. Throws ft::Error when parts.checkpointer has no
  // training-checkpoint storage.
  CheckpointManager(CheckpointSettings settings, std::shared_ptr<ft::Collectives> world, Parts parts,
                    std::vector<ParameterShape> model_parameters);
  // Waits for a background save; its failure is logged (wait() is where it is thrown).
  ~CheckpointManager();
  CheckpointManager(const CheckpointManager&) = delete;
  CheckpointManager& operator=(const CheckpointManager&) = delete;

  bool saves_after_step(std::int64_t global_step) const {
    return s_.save_every_n_steps > 0 && global_step % s_.save_every_n_steps == 0;
  }

  // Collective. Saves the run as `<dir>/<tag>/`. Synchronous: returns when the checkpoint is
  // complete. Async (enable_async_checkpointing, unless `mode` says Synchronous): returns once
  // the tensors are copied; the files are written in the background and the next save() or
  // wait() waits for them.
  enum class Mode { AsConfigured, Synchronous };
  void save(const std::string& tag, const TrainingProgress& progress, Mode mode = Mode::AsConfigured);
  // Waits for the background save; throws ft::Error if it failed.
  void wait();

  // This rank's optimizer state and the RNG state from `point` (the model is loaded before the
  // strategy distributes it). Errors name the file.
  void restore(const ResumePoint& point);

 private:
  struct Snapshot;
  void restore_state(const ResumePoint& point);
  void write(const Snapshot& snapshot);
  void commit(const Snapshot& snapshot);

  CheckpointSettings s_;
  std::shared_ptr<ft::Collectives> world_;
  Parts parts_;
  ft::TrainingCheckpointStorage* storage_ = nullptr;  // parts_.checkpointer's
  std::vector<ParameterShape> model_parameters_;
  std::int64_t run_id_ = 0;
  std::thread background_;
  std::string background_tag_;
  std::exception_ptr background_error_;
};

}  // namespace fthost
