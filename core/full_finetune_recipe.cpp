#include "full_finetune_recipe.h"

#include "c10d_collectives.h"
#include "checkpoint_manager.h"
#include "concat_dataset.h"
#include "device_support.h"
#include "distributed_environment.h"
#include "distributed_sampler.h"
#include "metric_logger_fanout.h"
#include "progress_line.h"
#include "thread_settings.h"
#include "training_settings.h"

#include <ft/checkpointer.h>
#include <ft/collate.h>
#include <ft/dataset.h>
#include <ft/errors.h>
#include <ft/log.h>
#include <ft/loss.h>
#include <ft/lr_scheduler.h>
#include <ft/metric_logger.h>
#include <ft/model.h>
#include <ft/optimizer.h>
#include <ft/parallelism.h>
#include <ft/profiler.h>
#include <ft/tokenizer.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <memory>

namespace fthost {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Everything the loop needs, built in the seed's order: logger, model (+ checkpoint), tokenizer,
// data, loss, optimizer, scheduler.
// Members are destroyed in reverse order: the strategy (which holds hooks in the model) before
// the model.
struct Components {
  std::shared_ptr<ft::MetricLogger> logger;
  std::shared_ptr<ft::Model> model;
  std::shared_ptr<ft::Parallelism> parallelism;
  std::shared_ptr<ft::Checkpointer> checkpointer;
  std::shared_ptr<ft::Tokenizer> tokenizer;
  std::shared_ptr<ft::Dataset> dataset;
  std::shared_ptr<ft::Collate> collate;
  std::shared_ptr<ft::Loss> loss;
  std::shared_ptr<ft::Optimizer> optimizer;
  std::shared_ptr<ft::LRScheduler> scheduler;
  std::shared_ptr<ft::Profiler> profiler;
  std::vector<at::Tensor> trainable;  // what the optimizer steps: parameters, or this rank's shards
};

// Closes the logger on every exit path, so a failed run still flushes what it logged, and
// tells it how the run ended.
struct LoggerCloser {
  ft::MetricLogger* logger;
  ~LoggerCloser() {
    if (!logger) return;
    if (auto failure = logger->close(std::uncaught_exceptions() > 0 ? 1 : 0))
      ft::log::error("closing the metric logger failed: {}", *failure);
  }
};

// Stops the profiler on every exit path, so a failed run still leaves its trace.
struct ProfilerStopper {
  ft::Profiler* profiler;
  ~ProfilerStopper() {
    if (profiler) profiler->stop();
  }
};

// Targets in the loss: labels shifted left by one, the last position ignored (torchtune's
// hstack with its ignore-labels cache).
at::Tensor shifted_targets(const at::Tensor& labels, std::int64_t ignore_index) {
  at::Tensor ignored = at::full({labels.size(0), 1}, ignore_index, labels.options());
  return at::cat({labels.slice(1, 1), ignored}, 1);
}

std::int64_t count_parameters(const std::vector<at::Tensor>& params) {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}

}  // namespace

int run_full_finetune(const ft::Registry& registry, const ft::ConfigNode& root) {
  TrainingSettings s = read_training_settings(root);
  const CheckpointSettings checkpoint_settings = read_checkpoint_settings(root, s.output_dir);
  const std::optional<ResumePoint> resume = find_resume_point(checkpoint_settings);
  if (resume) adopt_checkpoint_settings(s, *resume);
  const DistributedEnvironment env = read_distributed_environment();
  // Ranks on one machine share its cores: by default each takes its share, not all of them.
  apply_thread_settings(s.num_threads > 0 ? s.num_threads : threads_per_rank(env.local_world_size));
  torch::manual_seed(s.seed);
  const bool is_rank_zero = env.rank == 0;

  Components c;
  const auto timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(root.get<double>("distributed_timeout_s") * 1000));
  ProcessGroups groups = env.world_size > 1 ? connect_process_groups(env, timeout) : single_process_groups();
  c.parallelism = registry.instantiate<ft::Parallelism>(
      root.table("parallelism"), {groups.world, groups.new_group, env.local_rank, env.local_world_size, s.device});
  {
    // Every rank gets its loggers: each logger decides where it writes (torchtune's write from
    // rank 0 only; WandB's log_strategy can choose every node or rank).
    std::vector<std::shared_ptr<ft::MetricLogger>> loggers;
    for (const auto& table : root.table_list("metric_logger"))
      loggers.push_back(registry.instantiate<ft::MetricLogger>(table, {env.rank, env.local_rank, env.world_size}));
    c.logger = loggers.size() == 1 ? loggers[0] : std::make_shared<MetricLoggerFanout>(std::move(loggers));
  }
  LoggerCloser closer{c.logger.get()};
  if (c.logger) c.logger->log_config(root);

  const auto init_start = Clock::now();
  c.model = registry.instantiate<ft::Model>(root.table("model"), {s.dtype, s.device, s.seed});
  c.checkpointer = registry.instantiate<ft::Checkpointer>(root.table("checkpointer"), {s.output_dir});
  const std::vector<ParameterShape> model_parameters = parameter_shapes(*c.model);
  if (resume) {
    check_resumable(resume->manifest, resume->manifest_path, model_parameters, env.world_size,
                    c.parallelism->data_parallel_size());
    load_resumed_model(*c.checkpointer, *c.model, *resume);
  }
  const bool loaded = resume || c.checkpointer->load_model(*c.model);
  const std::int64_t num_parameters = count_parameters(c.model->module().parameters());
  c.trainable = c.parallelism->parallelize(*c.model);
  ft::log::info("model: {} parameters, {}, {} ({:.2f} s)", num_parameters,
                loaded ? "weights from the checkpoint" : "random initialisation (seed " + std::to_string(s.seed) + ")",
                c10::toString(s.dtype), seconds_since(init_start));

  if (root.is_table("tokenizer")) c.tokenizer = registry.instantiate<ft::Tokenizer>(root.table("tokenizer"));
  if (c.tokenizer && c.tokenizer->vocab_size() > c.model->vocab_size())
    root.fail("tokenizer", "the tokenizer has " + std::to_string(c.tokenizer->vocab_size()) +
                               " tokens but the model embeds only " + std::to_string(c.model->vocab_size()));
  std::vector<std::shared_ptr<ft::Dataset>> datasets;
  for (const auto& table : root.table_list("dataset"))
    datasets.push_back(registry.instantiate<ft::Dataset>(table, {c.tokenizer}));
  c.dataset = datasets.size() == 1 ? datasets[0] : std::make_shared<ConcatDataset>(std::move(datasets));
  c.loss = registry.instantiate<ft::Loss>(root.table("loss"));
  // Without a tokenizer (pre-tokenized data) pad with 0: padded positions are ignored by the
  // loss and, being at the end, are never attended to by real tokens under the causal mask.
  const std::int64_t pad_id = c.tokenizer ? c.tokenizer->pad_id() : 0;
  c.collate = registry.instantiate<ft::Collate>(root.table("collate"), {pad_id, c.loss->ignore_index()});
  c.optimizer = registry.instantiate<ft::Optimizer>(root.table("optimizer"), {c.trainable});

  // torchtune's loader: DistributedSampler(drop_last) over the data-parallel ranks, DataLoader(drop_last).
  const int dp_size = c.parallelism->data_parallel_size();
  DistributedSampler sampler(c.dataset->size(),
                             SamplerOptions{dp_size, c.parallelism->data_parallel_rank(), s.shuffle, s.seed, true});
  const auto micro_batches_per_epoch = static_cast<std::int64_t>(sampler.num_samples()) / s.batch_size;
  std::int64_t steps_per_epoch = micro_batches_per_epoch / s.gradient_accumulation_steps;
  if (s.max_steps_per_epoch && *s.max_steps_per_epoch < steps_per_epoch) steps_per_epoch = *s.max_steps_per_epoch;
  if (steps_per_epoch == 0)
    root.fail("batch_size",
              "the dataset's " + std::to_string(c.dataset->size()) +
                  " samples do not fill one optimizer step of batch_size x gradient_accumulation_steps x ranks = " +
                  std::to_string(s.batch_size * s.gradient_accumulation_steps * dp_size) + " samples");
  const std::int64_t total_steps = s.epochs * steps_per_epoch;
  if (root.is_table("lr_scheduler"))
    c.scheduler = registry.instantiate<ft::LRScheduler>(
        root.table("lr_scheduler"),
        {c.optimizer.get(), total_steps,
         resume ? resume->manifest.progress.lr_scheduler_last_epoch.value_or(resume->manifest.progress.steps_run) - 1
                : -1});
  CheckpointManager checkpoints(
      checkpoint_settings, groups.world,
      {c.model.get(), c.parallelism.get(), c.checkpointer.get(), c.optimizer.get(), c.scheduler.get()},
      model_parameters);
  // Where the run stands after `micro_batches_done` micro-batches of `epoch` (the recipe state of a checkpoint).
  auto position = [&](std::int64_t global_step, std::int64_t epoch, std::int64_t micro_batches_done) {
    TrainingProgress p;
    p.seed = s.seed;
    p.epochs_run = epoch;
    p.total_epochs = s.epochs;
    p.max_steps_per_epoch = s.max_steps_per_epoch;
    p.steps_run = global_step;
    p.epoch = epoch;
    p.micro_batches_in_epoch = micro_batches_done;
    p.batch_size = s.batch_size;
    p.gradient_accumulation_steps = s.gradient_accumulation_steps;
    p.world_size = env.world_size;
    p.data_parallel_size = dp_size;
    if (c.scheduler) p.lr_scheduler_last_epoch = c.scheduler->last_epoch();
    return p;
  };

  ft::log::info("training: {} epoch(s) x {} steps, {} samples, batch {} x {} accumulation x {} data-parallel ranks",
                s.epochs, steps_per_epoch, c.dataset->size(), s.batch_size, s.gradient_accumulation_steps, dp_size);

  const ft::OutputRequest output_request = c.loss->output_request();
  const std::int64_t ignore_index = c.loss->ignore_index();
  c.model->module().train();
  c.optimizer->zero_grad(true);
  std::int64_t global_step = 0, first_epoch = 0, resumed_micro_batches = 0;
  if (resume) {
    checkpoints.restore(*resume);  // last: nothing after it may draw from the RNG it restores
    global_step = resume->manifest.progress.steps_run;
    first_epoch = resume->manifest.progress.epoch;
    resumed_micro_batches = resume->manifest.progress.micro_batches_in_epoch;
    ft::log::info("resumed from {}: step {}, epoch {}, {} micro-batches of it done", resume->dir, global_step,
                  first_epoch + 1, resumed_micro_batches);
  }
  std::unique_ptr<ProgressLine> progress;
  if (is_rank_zero) progress = std::make_unique<ProgressLine>(stdout, total_steps, ProgressLine::is_terminal(stdout));
  if (root.is_table("profiler"))
    c.profiler = registry.instantiate<ft::Profiler>(root.table("profiler"), {env.rank, env.world_size});
  ProfilerStopper profiler_stopper{c.profiler.get()};
  if (c.profiler) c.profiler->start();
  for (std::int64_t epoch = first_epoch; epoch < s.epochs; ++epoch) {
    const auto batches = batches_of(sampler.indices(epoch), static_cast<std::size_t>(s.batch_size), true);
    // Only whole optimizer steps: a partial accumulation at the end of an epoch would otherwise
    // leak its gradients into the next epoch's first step (the seed's behaviour; docs/parity.md).
    const std::int64_t micro_batches = steps_per_epoch * s.gradient_accumulation_steps;
    at::Tensor running_loss = at::zeros({}, at::kFloat);
    std::int64_t num_tokens = 0;
    auto step_start = Clock::now();
    for (std::int64_t idx = epoch == first_epoch ? resumed_micro_batches : 0; idx < micro_batches; ++idx) {
      std::vector<ft::Sample> samples;
      samples.reserve(batches[idx].size());
      for (auto i : batches[idx]) samples.push_back(c.dataset->get(static_cast<std::size_t>(i)));
      ft::Batch batch = c.collate->collate(samples);
      const bool ends_step = (idx + 1) % s.gradient_accumulation_steps == 0;

      const at::Tensor targets = shifted_targets(batch.labels, ignore_index).to(s.device);
      // Counted after the shift: exactly the tokens the loss sums over (docs/parity.md).
      num_tokens += targets.ne(ignore_index).sum().item<std::int64_t>();
      ft::ModelInput input{batch.tokens.to(s.device),
                           batch.input_pos.defined() ? batch.input_pos.to(s.device) : at::Tensor(),
                           batch.mask.defined() ? batch.mask.to(s.device) : at::Tensor()};
      c.parallelism->begin_micro_batch(ends_step);
      at::Tensor loss_sum;
      {
        ft::ModelOutput output = c.model->forward(input, output_request);
        loss_sum = c.loss->sum(output, targets, *c.model);
      }  // the logits go before backward, which would otherwise peak with them alive
      running_loss += loss_sum.detach().to(at::kCPU, at::kFloat);
      loss_sum.backward();
      c.parallelism->end_micro_batch();
      if (!ends_step) continue;

      // The step's totals over every data-parallel rank: what the gradients are normalised by
      // and what the logged loss means.
      at::Tensor totals =
          at::stack({at::scalar_tensor(static_cast<double>(num_tokens), at::kDouble), running_loss.to(at::kDouble)});
      c.parallelism->all_reduce_sum(totals);
      const auto step_tokens = static_cast<std::int64_t>(totals[0].item<double>());
      const double step_loss_sum = totals[1].item<double>();
      if (step_tokens == 0)
        throw ft::Error("step " + std::to_string(global_step + 1) +
                        ": every label of the step is ignored (-100), so there is no loss to normalise by; "
                        "check the dataset's label masking (train_on_input) and max_seq_len");
      // Gradients arrive summed over ranks, so one division normalises them.
      c.parallelism->scale_gradients(1.0 / static_cast<double>(step_tokens));
      std::optional<double> grad_norm;
      if (s.clip_grad_norm) grad_norm = c.parallelism->clip_grad_norm(*s.clip_grad_norm);
      c.optimizer->step();
      c.optimizer->zero_grad(true);
      ++global_step;
      if (c.scheduler) c.scheduler->step();
      if (c.profiler) c.profiler->step();

      const double loss_to_log = step_loss_sum / static_cast<double>(step_tokens);
      if (!std::isfinite(loss_to_log)) ft::log::warn("step {}: loss is {}", global_step, loss_to_log);
      if (progress)
        progress->update(epoch + 1, global_step, step_loss_sum / static_cast<double>(step_tokens),
                         static_cast<double>(step_tokens) / seconds_since(step_start));
      if (c.logger && global_step % s.log_every_n_steps == 0) {
        const double step_seconds = seconds_since(step_start);
        ft::Metrics metrics{
            {"loss", loss_to_log},
            {"lr", c.optimizer->lr()},
            {"tokens_per_second_per_gpu", static_cast<double>(step_tokens) / (step_seconds * env.world_size)}};
        if (s.log_peak_memory_stats) {
          for (auto& m : peak_memory_stats(s.device)) metrics.push_back(std::move(m));
        }
        if (grad_norm) metrics.emplace_back("grad_norm", *grad_norm);
        metrics.emplace_back("num_tokens", static_cast<double>(step_tokens));
        c.logger->log_dict(metrics, global_step);
      }
      running_loss.zero_();
      num_tokens = 0;
      // The last step of an epoch is saved as the epoch's checkpoint.
      if (checkpoints.saves_after_step(global_step) && idx + 1 < micro_batches)
        checkpoints.save("step_" + std::to_string(global_step), position(global_step, epoch, idx + 1));
      step_start = Clock::now();
    }
    const auto save_start = Clock::now();
    checkpoints.save("epoch_" + std::to_string(epoch), position(global_step, epoch + 1, 0));
    if (is_rank_zero)
      ft::log::info("epoch {}/{} done; training blocked {:.2f} s by its checkpoint", epoch + 1, s.epochs,
                    seconds_since(save_start));
  }
  if (progress) progress->finish();
  checkpoints.wait();
  groups.world->barrier();  // no rank reports success before rank 0's last save is complete
  if (is_rank_zero)
    ft::log::info(
        "done: {} optimizer steps in {:.1f} s; checkpoints (Hugging Face layout) in {}/epoch_N; "
        "effective config in {}/config.effective.toml",
        global_step, seconds_since(init_start), s.output_dir, s.output_dir);
  return 0;
}

}  // namespace fthost
