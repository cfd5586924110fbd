// The full-finetune recipe: torchtune's full_finetune_distributed as a class of the same shape.
// setup() builds every component from plugins in the seed's order, train() runs the epochs as a
// short loop over train_step(), and cleanup() ends the run on every path. Each feature of the
// loop lives in one method. See docs/parity.md for where the numbers deliberately differ from
// the seed.
#pragma once

#include "config/distributed_environment.h"
#include "config/training_settings.h"
#include "train/c10d_collectives.h"
#include "train/checkpoint_manager.h"
#include "train/context_parallel_batch.h"
#include "train/data_loader.h"
#include "train/device_mesh.h"
#include "train/model_flops.h"
#include "train/optimizer_step_policy.h"
#include "train/planned_memory_check.h"
#include "train/progress_line.h"
#include "train/validation_loop.h"

#include <ft/checkpointer.h>
#include <ft/clock.h>
#include <ft/collate.h>
#include <ft/config.h>
#include <ft/dataset.h>
#include <ft/loss.h>
#include <ft/lr_scheduler.h>
#include <ft/metric_logger.h>
#include <ft/model.h>
#include <ft/optimizer.h>
#include <ft/parallelism.h>
#include <ft/profiler.h>
#include <ft/registry.h>
#include <ft/tensor_parallel.h>
#include <ft/tokenizer.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace fthost {

class FullFinetuneRecipe {
 public:
  // Finds the checkpoint to resume from (adopting its settings); builds nothing yet.
  FullFinetuneRecipe(const ft::Registry& registry, ft::ConfigNode root, TrainingSettings settings);
  ~FullFinetuneRecipe();
  FullFinetuneRecipe(const FullFinetuneRecipe&) = delete;
  FullFinetuneRecipe& operator=(const FullFinetuneRecipe&) = delete;

  // Process groups and parallelism, metric loggers, model (+ checkpoint), tokenizer, optimizer,
  // loss, data, lr scheduler, checkpoints, profiler; last, the resumed optimizer and RNG state.
  void setup();
  // How train() ended: every step run, or stopped on request (preemption_signals) after saving
  // the step it was on (nothing, when the request came before the first step).
  enum class RunEnd { Finished, Stopped };
  RunEnd train();
  // Stops the profiler, waits for the last checkpoint and closes the loggers, telling them how
  // the run ended. Never throws; returns the run's exit code (non-zero when closing failed).
  int cleanup(int exit_code) noexcept;

  // The run's settings: the config's, with a resumed checkpoint's seed and max_steps_per_epoch.
  const TrainingSettings& settings() const { return s_; }

 private:
  // One optimizer step's figures, summed over every data-parallel rank.
  struct StepTotals {
    double loss = 0;  // the loss sum over the step's tokens, divided by their number
    std::int64_t tokens = 0;
    std::optional<double> grad_norm;  // when clip_grad_norm is set
    double seconds = 0;
    std::int64_t positions = 0;  // this rank's positions through the model, padding included
    std::int64_t seq_len = 0;    // the longest (padded) sequence of the step
    // The most images a sample of the step had, and tiles an image (the collate's padding).
    std::int64_t images_per_sample = 0, tiles_per_image = 0;
    std::int64_t real_tiles = 0;  // the most real tiles of one micro-batch
    double image_flops = 0;       // this rank's FLOPs encoding images (ModelImageInput), for the mfu
    // Mixture-of-experts models: the weighted load-balancing loss (each micro-batch's weighted by
    // its tokens, as its cross-entropy is) when the model computes one, and the step's token
    // choices per expert over every data-parallel rank, [sparse layers, experts].
    std::optional<double> auxiliary_loss;
    at::Tensor expert_load;
    bool stop_requested = false;  // a stop signal reached some rank before the step's all-reduce
  };
  // One micro-batch's forward: the loss summed over its tokens, and what a mixture of experts
  // adds (ModelOutput::auxiliary_loss, expert_load; undefined for a dense model).
  struct ForwardLoss {
    at::Tensor loss_sum;
    at::Tensor auxiliary_loss;
    at::Tensor expert_load;
  };

  void setup_process_groups();
  void setup_metric_loggers();
  void setup_model();
  void apply_activation_checkpointing();
  void apply_tensor_parallel();
  void apply_expert_parallel();
  void apply_context_parallel();
  // The batch this rank computes and its targets (labels shifted as the loss reads them): under
  // context parallelism its share of every row, else the whole batch.
  ContextParallelShare rank_share(const ft::Batch& batch) const;
  void setup_tokenizer();
  void setup_optimizer();
  void setup_data();
  void setup_lr_scheduler();
  // One dataset or, for a list of tables, their concatenation (dataset, dataset_val).
  void setup_validation();

  // Forward and backward over the loader's next `micro_batches` micro-batches, then the step
  // itself.
  StepTotals train_step(std::size_t micro_batches);
  // The step's token count summed over the data-parallel ranks; throws when it is 0.
  std::int64_t total_tokens(const at::Tensor& rank_tokens);
  // The loss summed over `targets`' tokens; the model's outputs are freed before it returns.
  at::Tensor loss_sum(const ft::Batch& batch, const at::Tensor& targets);
  ForwardLoss forward_loss(const ft::Batch& batch, const at::Tensor& targets);
  // The model's forward with a multimodal batch's images (its ModelImageInput role).
  ft::ModelOutput forward_with_images(const ft::ModelInput& input, const ft::BatchImages& images);
  void log_step(std::int64_t epoch, const StepTotals& totals);
  // After a step of `epoch`: the epoch's checkpoint after its last step, a step_N checkpoint
  // every save_every_n_steps steps.
  // Returns whether it saved (or started saving) a checkpoint of this step.
  bool save_if_due(std::int64_t epoch);
  // Collective: whether a stop signal reached any rank (one all-reduce of a flag over every rank).
  bool stop_requested_anywhere();
  // After the step where the ranks agreed to stop: its checkpoint complete (saved now, unless
  // save_if_due already did), then the run ends.
  void save_stop_step(std::int64_t epoch, bool saved_already);
  // The manifest's progress after the step just taken in `epoch`: the loader's position.
  TrainingProgress progress_after(std::int64_t epoch) const;
  // torchtune's validate(): after each step that makes the step count a multiple of
  // run_val_every_n_steps, the loss over the whole dataset_val, logged as val_loss.
  void validate_if_due(bool epoch_ends);
  void validate();

  const ft::Registry& registry_;
  const ft::ConfigNode root_;
  TrainingSettings s_;
  const DistributedEnvironment env_;
  std::optional<ResumePoint> resume_;
  const ft::Clock::time_point start_ = ft::Clock::now();

  // Destroyed in reverse order of declaration: the strategy (which holds hooks in the model)
  // before the model, everything before the process groups.
  ProcessGroups groups_;
  DeviceMesh mesh_;
  std::shared_ptr<ft::MetricLogger> logger_;
  std::shared_ptr<ft::Model> model_;
  std::shared_ptr<ft::Parallelism> parallelism_;
  std::shared_ptr<ft::Checkpointer> checkpointer_;
  std::shared_ptr<ft::Tokenizer> tokenizer_;
  std::shared_ptr<ft::Dataset> dataset_;
  std::shared_ptr<ft::Collate> collate_;
  std::unique_ptr<DataLoader> loader_;  // dataset_ and collate_'s micro-batches
  std::shared_ptr<ft::Loss> loss_;
  std::shared_ptr<ft::Optimizer> optimizer_;
  std::unique_ptr<OptimizerStepPolicy> step_policy_;
  std::shared_ptr<ft::LRScheduler> scheduler_;
  std::shared_ptr<ft::Profiler> profiler_;
  std::vector<at::Tensor> trainable_;  // what the optimizer steps: parameters, or this rank's shards
  std::vector<ParameterShape> model_parameters_;
  std::unique_ptr<CheckpointManager> checkpoints_;
  std::unique_ptr<ProgressLine> progress_;
  std::unique_ptr<ModelFlops> model_flops_;           // rank 0, which logs
  std::unique_ptr<PlannedMemoryCheck> memory_check_;  // rank 0: the memory plan beside the measured peak
  std::unique_ptr<ValidationLoop> validation_;        // when dataset_val is configured

  // Where the loop stands.
  std::int64_t steps_per_epoch_ = 0;
  std::int64_t total_steps_ = 0;
  std::int64_t global_step_ = 0;
  std::int64_t first_epoch_ = 0;
  std::size_t resumed_micro_batches_ = 0;  // of first_epoch_, always whole optimizer steps
};

// Runs the recipe from setup to cleanup; the process's exit code. `settled` (may be empty) sees
// the settings the run goes on with, a resumed checkpoint's adopted, before setup.
int run_full_finetune(const ft::Registry& registry, const ft::ConfigNode& root, const TrainingSettings& settings,
                      const std::function<void(const TrainingSettings&)>& settled = {});

}  // namespace fthost
