#include "train/full_finetune_recipe.h"

#include "train/data_pipeline.h"
#include "train/device_support.h"
#include "train/expert_load_metrics.h"
#include "train/heap_reuse.h"
#include "train/metric_logger_fanout.h"
#include "train/preemption_signals.h"
#include "train/thread_settings.h"

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/model_context_parallelism.h>
#include <ft/model_expert_parallelism.h>
#include <ft/model_image_input.h>
#include <ft/model_layer_checkpointing.h>
#include <ft/model_tensor_parallelism.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <string>
#include <utility>

namespace fthost {

namespace {

// What asked this rank to stop, for the log.
std::string stop_origin() {
  const int signal = PreemptionSignals::requested();
  return signal ? signal_name(signal) : "a signal to another rank";
}

// Targets in the loss: labels shifted left by one, the last position ignored (torchtune's
// hstack with its ignore-labels cache).
at::Tensor shifted_targets(const at::Tensor& labels, std::int64_t ignore_index) {
  at::Tensor ignored = at::full({labels.size(0), 1}, ignore_index, labels.options());
  return at::cat({labels.slice(1, 1), ignored}, 1);
}

void check_tokens(std::int64_t tokens, std::int64_t step) {
  if (tokens == 0)
    throw ft::Error("step " + std::to_string(step) +
                    ": every label of the step is ignored (-100), so there is no loss to normalise by; "
                    "check the dataset's label masking (train_on_input) and max_seq_len");
}

std::int64_t count_parameters(const std::vector<at::Tensor>& params) {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}

}  // namespace

FullFinetuneRecipe::FullFinetuneRecipe(const ft::Registry& registry, ft::ConfigNode root, TrainingSettings settings)
    : registry_(registry),
      root_(std::move(root)),
      s_(std::move(settings)),
      env_(read_distributed_environment()),
      resume_(find_resume_point(s_.checkpoint)) {
  if (resume_) adopt_checkpoint_settings(s_, *resume_);
}

FullFinetuneRecipe::~FullFinetuneRecipe() = default;

void FullFinetuneRecipe::setup() {
  setup_process_groups();
  setup_metric_loggers();
  if (env_.rank == 0) memory_check_ = std::make_unique<PlannedMemoryCheck>(s_.device);  // before the model
  setup_model();
  setup_tokenizer();
  setup_optimizer();
  loss_ = registry_.instantiate<ft::Loss>(root_.table("loss"));
  if (mesh_.tensor_parallel && !loss_->supports_vocab_parallel())
    root_.fail("loss",
               "this loss cannot compute the cross-entropy from logits sharded over the vocabulary, which "
               "tensor parallelism (tensor_parallel_dim > 1) produces");
  setup_data();
  setup_lr_scheduler();
  setup_validation();
  checkpoints_ = std::make_unique<CheckpointManager>(
      s_.checkpoint, groups_.world,
      CheckpointManager::Parts{model_.get(), parallelism_.get(), checkpointer_.get(), optimizer_.get(),
                               scheduler_.get()},
      model_parameters_);
  if (root_.is_table("profiler"))
    profiler_ = registry_.instantiate<ft::Profiler>(root_.table("profiler"), {env_.rank, env_.world_size});
  if (env_.rank == 0) model_flops_ = std::make_unique<ModelFlops>(*model_, s_.device, s_.dtype);

  model_->module().train();
  optimizer_->zero_grad(true);
  if (resume_) {
    checkpoints_->restore(*resume_);  // last: nothing after it may draw from the RNG it restores
    const TrainingProgress& p = resume_->manifest.progress;
    global_step_ = p.steps_run;
    first_epoch_ = p.epoch;
    resumed_micro_batches_ = static_cast<std::size_t>(p.micro_batches_in_epoch);
    ft::log::info("resumed from {}: step {}, epoch {}, {} micro-batches of it done", resume_->dir, global_step_,
                  first_epoch_ + 1, resumed_micro_batches_);
  }
}

void FullFinetuneRecipe::setup_process_groups() {
  // Ranks on one machine share its cores: by default each takes its share, not all of them.
  apply_thread_settings(s_.num_threads > 0 ? s_.num_threads : threads_per_rank(env_.local_world_size));
  if (s_.device.is_cpu() && keep_freed_memory_for_reuse().applied)
    ft::log::debug("memory: freed blocks stay in the heap for the next step (no mmap per large block, no trim)");
  s_.device = device_for_rank(root_, s_.device, env_.local_rank);
  groups_ = env_.world_size > 1 ? connect_process_groups(env_, s_.distributed_timeout, s_.device.type())
                                : single_process_groups();
  if (s_.seed_drawn) {
    // Each rank drew its own; all take rank 0's, the one config.effective.toml records.
    at::Tensor seed = at::full({1}, static_cast<std::int64_t>(s_.seed), at::kLong);
    groups_.world->broadcast(seed, 0);
    s_.seed = static_cast<std::uint64_t>(seed.item<std::int64_t>());
    ft::log::info("seed: {} (drawn at random; set seed = {} to repeat this run)", s_.seed, s_.seed);
  }
  torch::manual_seed(s_.seed);
  mesh_ = build_device_mesh(groups_, root_, s_.tensor_parallel_dim, s_.expert_parallel_dim, s_.context_parallel_dim);
  parallelism_ = registry_.instantiate<ft::Parallelism>(
      root_.table("parallelism"),
      {mesh_.data_parallel, mesh_.data_parallel_new_group, env_.local_rank, env_.local_world_size, s_.device,
       mesh_.tensor_parallel, mesh_.context_parallel_size});
}

void FullFinetuneRecipe::setup_metric_loggers() {
  // Every rank gets its loggers: each logger decides where it writes (torchtune's write from
  // rank 0 only; WandB's log_strategy can choose every node or rank).
  std::vector<std::shared_ptr<ft::MetricLogger>> loggers;
  for (const auto& table : root_.table_list("metric_logger"))
    loggers.push_back(registry_.instantiate<ft::MetricLogger>(table, {env_.rank, env_.local_rank, env_.world_size}));
  logger_ = loggers.size() == 1 ? loggers[0] : std::make_shared<MetricLoggerFanout>(std::move(loggers));
  logger_->log_config(root_);
}

void FullFinetuneRecipe::setup_model() {
  const auto start = ft::Clock::now();
  model_ = registry_.instantiate<ft::Model>(root_.table("model"), {s_.dtype, s_.device, s_.seed});
  checkpointer_ = registry_.instantiate<ft::Checkpointer>(root_.table("checkpointer"), {s_.output_dir});
  model_parameters_ = parameter_shapes(*model_);
  if (resume_) {
    check_resumable(resume_->manifest, resume_->manifest_path, model_parameters_, env_.world_size,
                    parallelism_->data_parallel_size(), mesh_.expert_parallel_size, mesh_.context_parallel_size);
    load_resumed_model(*checkpointer_, *model_, *resume_);
  }
  const bool loaded = resume_ || checkpointer_->load_model(*model_);
  const std::int64_t num_parameters = count_parameters(model_->module().parameters());
  apply_tensor_parallel();
  apply_expert_parallel();
  apply_context_parallel();
  apply_activation_checkpointing();
  trainable_ = parallelism_->parallelize(*model_);
  ft::log::info("model: {} parameters, {}, {} ({:.2f} s)", num_parameters,
                loaded ? "weights from the checkpoint" : "random initialisation (seed " + std::to_string(s_.seed) + ")",
                c10::toString(s_.dtype), ft::seconds_since(start));
}

void FullFinetuneRecipe::apply_context_parallel() {
  if (!mesh_.context_parallel) return;
  const std::string size = std::to_string(mesh_.context_parallel_size);
  auto* context_parallelism = ft::role_of<ft::ModelContextParallelism>(*model_);
  if (!context_parallelism)
    root_.fail("context_parallel_dim",
               size +
                   ": this model cannot split its sequences across ranks (its plugin does not play the "
                   "ContextParallelism role); use context_parallel_dim = 1");
  if (const std::string problem = context_parallelism->context_parallel_problem(); !problem.empty())
    root_.fail("context_parallel_dim", size + ": " + problem + "; use context_parallel_dim = 1");
  const ft::RotateMethod rotate =
      s_.context_parallel_rotate_method == "alltoall" ? ft::RotateMethod::AllToAll : ft::RotateMethod::AllGather;
  try {
    context_parallelism->apply_context_parallel(mesh_.context_parallel, rotate);
  } catch (const ft::Error& e) {
    root_.fail("context_parallel_dim", e.what());
  }
  if (env_.rank == 0)
    ft::log::info(
        "context parallelism: each sequence split over {} ranks in {} load-balanced chunks; keys and "
        "values travel by {}",
        mesh_.context_parallel_size, 2 * mesh_.context_parallel_size, ft::rotate_method_name(rotate));
}

ContextParallelShare FullFinetuneRecipe::rank_share(const ft::Batch& batch) const {
  const at::Tensor targets = shifted_targets(batch.labels, loss_->ignore_index());
  if (!mesh_.context_parallel) return {batch, targets};
  ContextParallelSplit split;
  split.size = mesh_.context_parallel_size;
  split.rank = mesh_.context_parallel->rank();
  split.multiple = 2 * static_cast<std::int64_t>(mesh_.context_parallel_size) * mesh_.tensor_parallel_size;
  split.pad_id = tokenizer_ ? tokenizer_->pad_id() : 0;
  split.ignore_index = loss_->ignore_index();
  return context_parallel_share(batch, targets, split);
}

// Before parallelize, as torchtune wraps the layers before FSDP does.
void FullFinetuneRecipe::apply_activation_checkpointing() {
  const ActivationCheckpointingSettings& ac = s_.activation_checkpointing;
  if (ac.every_nth_layer < 1) return;
  auto* checkpointing = ft::role_of<ft::ModelLayerCheckpointing>(*model_);
  if (!checkpointing) throw ft::ConfigError(ac.key + ": this model does not support activation checkpointing");
  const std::int64_t num_layers = checkpointing->num_checkpointable_layers();
  const std::vector<bool> layers = ac.layers(num_layers);
  try {
    checkpointing->set_activation_checkpointing(layers);
    if (ac.offload) checkpointing->set_activation_offloading(true);
  } catch (const ft::Error& e) {
    throw ft::ConfigError(ac.key + ": " + e.what());
  }
  ft::log::info("activation checkpointing: {} of {} layers recompute their activations in backward{}",
                std::count(layers.begin(), layers.end(), true), num_layers,
                ac.offload ? "; their inputs wait in pinned host memory (activation offloading)" : "");
}

// After the weights are loaded (every rank reads the whole model, then keeps its slices), before
// the strategy shards the slices over the data-parallel ranks: torchtune's order.
void FullFinetuneRecipe::apply_tensor_parallel() {
  if (!mesh_.tensor_parallel) return;
  const auto plan = registry_.instantiate<ft::TensorParallelPlan>(root_.table("tensor_parallel_plan"));
  auto* tensor_parallelism = ft::role_of<ft::ModelTensorParallelism>(*model_);
  if (!tensor_parallelism) throw ft::ConfigError("tensor_parallel_dim: this model does not support tensor parallelism");
  try {
    tensor_parallelism->apply_tensor_parallel(plan->modules(), mesh_.tensor_parallel);
  } catch (const ft::ConfigError&) {
    throw;
  } catch (const ft::Error& e) {
    throw ft::ConfigError("tensor_parallel_plan: " + std::string(e.what()));
  }
  ft::log::info(
      "tensor parallelism: {} ranks per group, {} plan entries applied; this rank holds {} of the model's "
      "parameters",
      mesh_.tensor_parallel_size, plan->modules().size(), count_parameters(model_->module().parameters()));
}

// After tensor parallelism (an expert's hidden features may already be split), before the
// strategy distributes what each rank keeps.
void FullFinetuneRecipe::apply_expert_parallel() {
  if (!mesh_.expert_parallel) return;
  auto* expert_parallelism = ft::role_of<ft::ModelExpertParallelism>(*model_);
  if (!expert_parallelism || !expert_parallelism->has_experts())
    root_.fail("expert_parallel_dim", std::to_string(mesh_.expert_parallel_size) +
                                          ": the model has no mixture-of-experts layer whose experts could be split "
                                          "(a dense model trains with expert_parallel_dim = 1)");
  if (!parallelism_->handles_expert_parallel())
    root_.fail("expert_parallel_dim",
               std::to_string(mesh_.expert_parallel_size) + ": the parallelism strategy " +
                   root_.table("parallelism").get<std::string>("_component_") +
                   " cannot reduce gradients of experts split across ranks; use fthost.parallelism.fsdp, hsdp or ddp");
  const std::int64_t experts = expert_parallelism->experts_per_layer();
  if (experts % mesh_.expert_parallel_size != 0)
    root_.fail("expert_parallel_dim", std::to_string(mesh_.expert_parallel_size) + " does not divide the model's " +
                                          std::to_string(experts) + " experts per layer");
  try {
    expert_parallelism->apply_expert_parallel(mesh_.expert_parallel);
  } catch (const ft::ConfigError&) {
    throw;
  } catch (const ft::Error& e) {
    root_.fail("expert_parallel_dim", e.what());
  }
  ft::log::info("expert parallelism: {} experts per layer over {} ranks, {} on each; this rank holds {} parameters",
                experts, mesh_.expert_parallel_size, experts / mesh_.expert_parallel_size,
                count_parameters(model_->module().parameters()));
}

void FullFinetuneRecipe::setup_tokenizer() {
  tokenizer_ = build_tokenizer(registry_, root_);
  if (!tokenizer_) return;  // pre-tokenized data
  if (tokenizer_->vocab_size() > model_->vocab_size())
    root_.fail("tokenizer", "the tokenizer has " + std::to_string(tokenizer_->vocab_size()) +
                                " tokens but the model embeds only " + std::to_string(model_->vocab_size()));
}

// optimizer_in_bwd: the seed's optim_dict, one optimizer per trainable tensor, each stepped by
// the strategy's report that its gradient is final.
void FullFinetuneRecipe::setup_optimizer() {
  if (!s_.optimizer_in_bwd) {
    optimizer_ = registry_.instantiate<ft::Optimizer>(root_.table("optimizer"), {trainable_});
    step_policy_ = step_after_backward(*parallelism_, *optimizer_, s_.clip_grad_norm);
    return;
  }
  auto per_tensor = std::make_shared<OptimizerInBackward>(registry_, root_.table("optimizer"), trainable_);
  optimizer_ = per_tensor;
  step_policy_ = step_in_backward(*parallelism_, std::move(per_tensor));
}

// torchtune's loader: DistributedSampler(drop_last) over the data-parallel ranks, DataLoader(drop_last).
void FullFinetuneRecipe::setup_data() {
  dataset_ = build_dataset(registry_, root_, tokenizer_, "dataset");
  // torchtune's pad_to_multiple_of: the tensor-parallel degree, times 2 x context_parallel_dim
  // (each of its ranks holds two equal chunks).
  const std::int64_t pad_to_multiple_of =
      mesh_.tensor_parallel_size *
      (mesh_.context_parallel ? 2 * static_cast<std::int64_t>(mesh_.context_parallel_size) : 1);
  collate_ = build_collate(registry_, root_, tokenizer_.get(), loss_->ignore_index(), pad_to_multiple_of);

  // The ranks of one context-parallel group read the same samples.
  const int dp_size = mesh_.sample_replicas(parallelism_->data_parallel_size());
  DataLoaderOptions options;
  options.sampler =
      SamplerOptions{dp_size, mesh_.sample_replica(parallelism_->data_parallel_rank()), s_.shuffle, s_.seed, true};
  options.batch_size = s_.batch_size;
  options.workers = s_.num_workers;
  loader_ = std::make_unique<DataLoader>(dataset_, collate_, options);
  steps_per_epoch_ = static_cast<std::int64_t>(loader_->micro_batches_per_epoch()) / s_.gradient_accumulation_steps;
  if (s_.max_steps_per_epoch && *s_.max_steps_per_epoch < steps_per_epoch_) steps_per_epoch_ = *s_.max_steps_per_epoch;
  if (steps_per_epoch_ == 0)
    root_.fail("batch_size",
               "the dataset's " + std::to_string(dataset_->size()) +
                   " samples do not fill one optimizer step of batch_size x gradient_accumulation_steps x "
                   "ranks = " +
                   std::to_string(s_.batch_size * s_.gradient_accumulation_steps * dp_size) + " samples");
  total_steps_ = s_.epochs * steps_per_epoch_;
  ft::log::info("training: {} epoch(s) x {} steps, {} samples, batch {} x {} accumulation x {} data-parallel ranks",
                s_.epochs, steps_per_epoch_, dataset_->size(), s_.batch_size, s_.gradient_accumulation_steps, dp_size);
}

// torchtune builds the validation set whenever dataset_val is configured, even when
// run_val_every_n_steps is not set and it is never evaluated.
void FullFinetuneRecipe::setup_validation() {
  const ValidationSettings& v = s_.validation;
  if (!v.has_dataset) return;
  ValidationLoop::Parts parts;
  parts.model = model_.get();
  parts.parallelism = parallelism_.get();
  parts.collate = collate_;
  parts.workers = s_.num_workers;
  parts.ignore_index = loss_->ignore_index();
  parts.loss_of_batch = [this](const ft::Batch& batch) {
    const ContextParallelShare share = rank_share(batch);
    const at::Tensor targets = share.targets.to(s_.device);
    return ValidationLoop::LossAndTokens{loss_sum(share.batch, targets), targets.ne(loss_->ignore_index()).sum()};
  };
  parts.sample_replica = mesh_.sample_replica(parallelism_->data_parallel_rank());
  parts.sample_replicas = mesh_.sample_replicas(parallelism_->data_parallel_size());
  validation_ = std::make_unique<ValidationLoop>(build_dataset(registry_, root_, tokenizer_, "dataset_val"),
                                                 v.batch_size, std::move(parts));
  if (v.every_n_steps)
    ft::log::info("validation: {} samples, batch {}, every {} steps", validation_->size(), v.batch_size,
                  *v.every_n_steps);
  else
    ft::log::info("validation: dataset_val has {} samples, but run_val_every_n_steps is not set, so it never runs",
                  validation_->size());
}

void FullFinetuneRecipe::setup_lr_scheduler() {
  if (!root_.is_table("lr_scheduler")) return;
  // A resumed scheduler continues from the step it had reached (torchtune's last_epoch).
  std::int64_t last_epoch = -1;
  if (resume_) {
    const TrainingProgress& p = resume_->manifest.progress;
    last_epoch = p.lr_scheduler_last_epoch.value_or(p.steps_run) - 1;
  }
  scheduler_ =
      registry_.instantiate<ft::LRScheduler>(root_.table("lr_scheduler"), {optimizer_.get(), total_steps_, last_epoch});
}

FullFinetuneRecipe::RunEnd FullFinetuneRecipe::train() {
  if (!s_.preemption.signals.empty() && stop_requested_anywhere()) {
    if (env_.rank == 0)
      ft::log::warn("stop requested ({}) before the first step of this run: nothing new to save{}; exit status {}",
                    stop_origin(), resume_ ? ", " + resume_->dir + " stays the newest checkpoint" : std::string(),
                    kPreemptedExitCode);
    return RunEnd::Stopped;
  }
  if (env_.rank == 0) {
    ProgressLine::Options options;
    options.initial_step = global_step_;  // a resumed run's rate counts its own steps only
    progress_ = std::make_unique<ProgressLine>(stdout, total_steps_, ProgressLine::is_terminal(stdout), options);
  }
  if (profiler_) profiler_->start();
  const auto accumulation = static_cast<std::size_t>(s_.gradient_accumulation_steps);
  for (std::int64_t epoch = first_epoch_; epoch < s_.epochs; ++epoch) {
    loader_->start_epoch(epoch, epoch == first_epoch_ ? resumed_micro_batches_ : 0,
                         static_cast<std::size_t>(steps_per_epoch_) * accumulation);
    while (!loader_->epoch_done()) {
      const StepTotals totals = train_step(accumulation);
      ++global_step_;
      log_step(epoch, totals);
      if (memory_check_)
        memory_check_->after_step(global_step_ == total_steps_, s_.batch_size, totals.seq_len,
                                  {totals.images_per_sample, totals.tiles_per_image, totals.real_tiles}, registry_,
                                  root_, s_, env_);
      const bool saved = save_if_due(epoch);
      if (totals.stop_requested && global_step_ < total_steps_) {
        save_stop_step(epoch, saved);
        return RunEnd::Stopped;
      }
      validate_if_due(/*epoch_ends=*/loader_->epoch_done());
    }
  }
  if (progress_) progress_->finish();
  checkpoints_->wait();
  groups_.world->barrier();  // no rank reports success before rank 0's last save is complete
  if (env_.rank == 0)
    ft::log::info(
        "done: {} optimizer steps in {:.1f} s; checkpoints (Hugging Face layout) in {}/epoch_N; "
        "effective config in {}/config.effective.toml",
        global_step_, ft::seconds_since(start_), s_.checkpoint.dir, s_.output_dir);
  return RunEnd::Finished;
}

bool FullFinetuneRecipe::stop_requested_anywhere() {
  at::Tensor flag = at::full({1}, PreemptionSignals::requested() ? 1.0 : 0.0, at::kDouble);
  groups_.world->all_reduce_sum(flag);
  return flag.item<double>() > 0;
}

void FullFinetuneRecipe::save_stop_step(std::int64_t epoch, bool saved_already) {
  if (progress_) progress_->finish();
  if (env_.rank == 0)
    ft::log::warn("stop requested ({}): saving step {} and ending the run", stop_origin(), global_step_);
  const std::string tag =
      loader_->epoch_done() ? "epoch_" + std::to_string(epoch) : "step_" + std::to_string(global_step_);
  if (saved_already)
    checkpoints_->wait();  // a background save of this very step: finished before the exit
  else
    checkpoints_->save(tag, progress_after(epoch), CheckpointManager::Mode::Synchronous);
  groups_.world->barrier();
  if (env_.rank == 0)
    ft::log::warn(
        "preempted at step {} of {}: checkpoint {}/{} is complete; exit status {}. Run again with "
        "resume_from_checkpoint = true to continue from it",
        global_step_, total_steps_, s_.checkpoint.dir, tag, kPreemptedExitCode);
}

FullFinetuneRecipe::StepTotals FullFinetuneRecipe::train_step(std::size_t micro_batches) {
  const auto start = ft::Clock::now();
  const std::int64_t ignore_index = loss_->ignore_index();
  // Summed on the device: no host synchronisation until the step's totals are needed.
  at::Tensor rank_loss = at::zeros({}, at::TensorOptions(at::kFloat).device(s_.device));
  at::Tensor rank_tokens = at::zeros({}, at::TensorOptions(at::kLong).device(s_.device));
  at::Tensor rank_auxiliary, rank_expert_load;
  StepTotals step;
  for (std::size_t i = 0; i < micro_batches; ++i) {
    const ft::Batch whole = loader_->next().batch;
    step.seq_len = std::max(step.seq_len, whole.tokens.size(-1));
    if (whole.images.images.defined()) {
      step.images_per_sample = std::max(step.images_per_sample, whole.images.images.size(1));
      step.tiles_per_image = std::max(step.tiles_per_image, whole.images.images.size(2));
      step.real_tiles = std::max(step.real_tiles, whole.images.tile_count.sum().item<std::int64_t>());
    }
    // Under context parallelism this rank's positions of each row; else the rows themselves.
    const ContextParallelShare share = rank_share(whole);
    const ft::Batch& batch = share.batch;
    step.positions += batch.tokens.numel();
    if (model_flops_ && batch.images.defined())
      if (const auto* reader = ft::role_of<ft::ModelImageInput>(*model_))
        step.image_flops += reader->image_training_flops(batch.images);
    const at::Tensor targets = share.targets.to(s_.device);
    // Counted after the shift: exactly the tokens the loss sums over (docs/parity.md).
    const at::Tensor micro_batch_tokens = targets.ne(ignore_index).sum();
    rank_tokens += micro_batch_tokens;
    // The seed sums the count over the ranks before backward; a policy that normalises in
    // backward needs it there, the other reads it once after the last micro-batch.
    if (step_policy_->needs_step_tokens_before_backward()) step.tokens = total_tokens(rank_tokens);
    parallelism_->begin_micro_batch(/*syncs_gradients=*/i + 1 == micro_batches);
    ForwardLoss forward = forward_loss(batch, targets);
    rank_loss += forward.loss_sum.detach().to(at::kFloat);
    at::Tensor objective = forward.loss_sum;
    if (forward.auxiliary_loss.defined()) {
      // Weighted by the micro-batch's tokens, then normalised with the cross-entropy by the
      // step's: one micro-batch on one rank gives Hugging Face's CE mean + coef x aux exactly.
      const at::Tensor weighted = forward.auxiliary_loss * micro_batch_tokens.to(at::kFloat);
      rank_auxiliary = rank_auxiliary.defined() ? rank_auxiliary + weighted.detach() : weighted.detach();
      objective = objective + weighted;
    }
    if (forward.expert_load.defined())
      rank_expert_load = rank_expert_load.defined() ? rank_expert_load + forward.expert_load : forward.expert_load;
    step_policy_->backward_target(objective, step.tokens).backward();
    parallelism_->end_micro_batch();
  }

  // The totals over every data-parallel rank: what the gradients are normalised by and what
  // the logged loss means; a mixture of experts' auxiliary loss and expert load ride along.
  std::vector<at::Tensor> sums{rank_tokens.to(at::kCPU, at::kDouble).reshape({1}),
                               rank_loss.to(at::kCPU, at::kDouble).reshape({1})};
  // A stop request rides in this all-reduce when it spans every rank (tensor parallelism's
  // groups do not: then one more all-reduce of the flag alone).
  const bool watches_stop = !s_.preemption.signals.empty();
  const bool stop_rides_along = watches_stop && parallelism_->data_parallel_size() == env_.world_size;
  if (stop_rides_along) sums.push_back(at::full({1}, PreemptionSignals::requested() ? 1.0 : 0.0, at::kDouble));
  if (rank_auxiliary.defined()) sums.push_back(rank_auxiliary.to(at::kCPU, at::kDouble).reshape({1}));
  if (rank_expert_load.defined()) sums.push_back(rank_expert_load.to(at::kCPU, at::kDouble).reshape({-1}));
  at::Tensor totals = at::cat(sums);
  parallelism_->all_reduce_sum(totals);
  step.tokens = static_cast<std::int64_t>(totals[0].item<double>());
  check_tokens(step.tokens, global_step_ + 1);
  step.loss = totals[1].item<double>() / static_cast<double>(step.tokens);
  std::int64_t next = 2;
  if (stop_rides_along)
    step.stop_requested = totals[next++].item<double>() > 0;
  else if (watches_stop)
    step.stop_requested = stop_requested_anywhere();
  if (rank_auxiliary.defined()) step.auxiliary_loss = totals[next++].item<double>() / static_cast<double>(step.tokens);
  if (rank_expert_load.defined())
    step.expert_load = totals.narrow(0, next, rank_expert_load.numel()).view(rank_expert_load.sizes());
  step.grad_norm = step_policy_->update(step.tokens);
  if (scheduler_) scheduler_->step();
  if (profiler_) profiler_->step();
  step.seconds = ft::seconds_since(start);
  return step;
}

std::int64_t FullFinetuneRecipe::total_tokens(const at::Tensor& rank_tokens) {
  at::Tensor tokens = rank_tokens.to(at::kCPU, at::kDouble).reshape({1});
  parallelism_->all_reduce_sum(tokens);
  const auto total = static_cast<std::int64_t>(tokens.item<double>());
  check_tokens(total, global_step_ + 1);
  return total;
}

at::Tensor FullFinetuneRecipe::loss_sum(const ft::Batch& batch, const at::Tensor& targets) {
  return forward_loss(batch, targets).loss_sum;
}

FullFinetuneRecipe::ForwardLoss FullFinetuneRecipe::forward_loss(const ft::Batch& batch, const at::Tensor& targets) {
  ft::ModelInput input{batch.tokens.to(s_.device),
                       batch.input_pos.defined() ? batch.input_pos.to(s_.device) : at::Tensor(),
                       batch.mask.defined() ? batch.mask.to(s_.device) : at::Tensor(),
                       {}};
  if (!batch.document_lengths.empty()) {
    if (model_->attends_within_documents())
      input.document_lengths = batch.document_lengths;
    else
      input.mask = ft::block_causal_mask(batch.document_lengths, batch.tokens.size(1)).to(s_.device);
  }
  const ft::ModelOutput output = batch.images.defined() ? forward_with_images(input, batch.images)
                                                        : model_->forward(input, loss_->output_request());
  return {loss_->sum(output, targets, *model_), output.auxiliary_loss, output.expert_load};
}  // the logits go here, before backward, which would otherwise peak with them alive

ft::ModelOutput FullFinetuneRecipe::forward_with_images(const ft::ModelInput& input, const ft::BatchImages& images) {
  auto* reader = ft::role_of<ft::ModelImageInput>(*model_);
  if (!reader)
    throw ft::Error("the dataset gives images, and the model (" + root_.table("model").get<std::string>("_component_") +
                    ") takes none: a multimodal dataset needs a vision model (e.g. "
                    "torchtune.models.llama3_2_vision.llama3_2_vision_11b)");
  const auto on_device = [&](const at::Tensor& t) { return t.defined() ? t.to(s_.device) : t; };
  const ft::BatchImages moved{on_device(images.images), on_device(images.aspect_ratio), on_device(images.tile_count),
                              on_device(images.encoder_mask)};
  return reader->forward_with_images(input, moved, loss_->output_request());
}

void FullFinetuneRecipe::log_step(std::int64_t epoch, const StepTotals& step) {
  if (!std::isfinite(step.loss)) ft::log::warn("step {}: loss is {}", global_step_, step.loss);
  const double tokens_per_second = static_cast<double>(step.tokens) / step.seconds;
  if (progress_) progress_->update(epoch + 1, global_step_, step.loss, tokens_per_second);
  if (global_step_ % s_.log_every_n_steps != 0) return;
  ft::Metrics metrics{{"loss", step.loss},
                      {"lr", optimizer_->lr()},
                      {"tokens_per_second_per_gpu", tokens_per_second / env_.world_size}};
  if (s_.log_peak_memory_stats)
    for (auto& m : peak_memory_stats(s_.device)) metrics.push_back(std::move(m));
  if (step.grad_norm) metrics.emplace_back("grad_norm", *step.grad_norm);
  metrics.emplace_back("num_tokens", static_cast<double>(step.tokens));
  if (step.auxiliary_loss) metrics.emplace_back("router_aux_loss", *step.auxiliary_loss);
  if (step.expert_load.defined())
    for (auto& m : expert_load_metrics(step.expert_load)) metrics.push_back(std::move(m));
  // FLOPs are spent on every position the model processes, padding and prompts included, and
  // on every image tile encoded; the ranks of a tensor-parallel group share a data rank's.
  if (model_flops_) {
    const double per_rank = static_cast<double>(parallelism_->data_parallel_size()) / env_.world_size / step.seconds;
    for (auto& m : model_flops_->metrics(static_cast<double>(step.positions) * per_rank, step.seq_len, global_step_,
                                         step.image_flops * per_rank))
      metrics.push_back(std::move(m));
  }
  logger_->log_dict(metrics, global_step_);
}

TrainingProgress FullFinetuneRecipe::progress_after(std::int64_t epoch) const {
  const auto scheduler_position = scheduler_ ? std::optional<std::int64_t>(scheduler_->last_epoch()) : std::nullopt;
  const int dp_size = parallelism_->data_parallel_size();
  if (!loader_->epoch_done())
    return progress_at(s_, env_.world_size, dp_size, global_step_, epoch,
                       static_cast<std::int64_t>(loader_->position()), scheduler_position);
  return progress_at(s_, env_.world_size, dp_size, global_step_, epoch + 1, 0, scheduler_position);
}

bool FullFinetuneRecipe::save_if_due(std::int64_t epoch) {
  if (!loader_->epoch_done()) {
    if (!checkpoints_->saves_after_step(global_step_)) return false;
    checkpoints_->save("step_" + std::to_string(global_step_), progress_after(epoch));
    return true;
  }
  // The last step of an epoch is saved as the epoch's checkpoint.
  const auto start = ft::Clock::now();
  checkpoints_->save("epoch_" + std::to_string(epoch), progress_after(epoch));
  if (env_.rank == 0)
    ft::log::info("epoch {}/{} done; training blocked {:.2f} s by its checkpoint", epoch + 1, s_.epochs,
                  ft::seconds_since(start));
  return true;
}

// Every N optimizer steps, and at the end of each epoch unless its last step was one of them, so
// every epoch's final weights are validated.
void FullFinetuneRecipe::validate_if_due(bool epoch_ends) {
  const auto& every = s_.validation.every_n_steps;
  if (validation_ && every && (global_step_ % *every == 0 || epoch_ends)) validate();
}

void FullFinetuneRecipe::validate() {
  const ValidationLoop::Result result = validation_->run();
  if (!std::isfinite(result.loss)) ft::log::warn("step {}: validation loss is {}", global_step_, result.loss);
  if (progress_) progress_->set_validation_loss(result.loss);
  if (env_.rank == 0)
    ft::log::info("step {}: val_loss {:.4f} over {} tokens ({:.2f} s)", global_step_, result.loss, result.tokens,
                  result.seconds);
  logger_->log_dict({{"val_loss", result.loss}}, global_step_);
}

int FullFinetuneRecipe::cleanup(int exit_code) noexcept {
  try {
    if (profiler_) profiler_->stop();  // a failed run still leaves its trace
  } catch (const std::exception& e) {
    ft::log::error("profiler: stopping failed: {}", e.what());
  }
  if (progress_) progress_->finish();
  // A failed run still flushes what it logged, and the loggers learn how it ended.
  if (logger_) {
    if (const auto failure = logger_->close(exit_code)) {
      ft::log::error("closing the metric logger failed: {}", *failure);
      return exit_code != 0 ? exit_code : 1;  // a run whose logs are incomplete has not succeeded
    }
  }
  return exit_code;
}

int run_full_finetune(const ft::Registry& registry, const ft::ConfigNode& root, const TrainingSettings& settings,
                      const std::function<void(const TrainingSettings&)>& settled) {
  // Installed before anything is built: a stop requested during set-up ends the run before its
  // first step.
  const PreemptionSignals stop_signals(settings.preemption);
  FullFinetuneRecipe recipe(registry, root, settings);
  FullFinetuneRecipe::RunEnd end = FullFinetuneRecipe::RunEnd::Finished;
  try {
    if (settled) settled(recipe.settings());
    recipe.setup();
    end = recipe.train();
  } catch (...) {
    recipe.cleanup(1);
    throw;
  }
  return recipe.cleanup(end == FullFinetuneRecipe::RunEnd::Stopped ? kPreemptedExitCode : 0);
}

}  // namespace fthost
