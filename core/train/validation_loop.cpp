#include "train/validation_loop.h"

#include <ft/clock.h>
#include <ft/log.h>

#include <ATen/ATen.h>

#include <limits>
#include <utility>

namespace fthost {

std::size_t validation_samples_counted(std::size_t dataset_size, int dp_rank, int dp_size) {
  // Without drop_last the sampler pads the set's order with its head to a multiple of the
  // ranks; position r + k * dp_size of that order is this rank's k-th sample, so its own
  // samples come first and the padding (positions >= the set's size) last.
  const auto n = static_cast<std::int64_t>(dataset_size);
  return n > dp_rank ? static_cast<std::size_t>((n - dp_rank + dp_size - 1) / dp_size) : 0;
}

ValidationLoop::ValidationLoop(std::shared_ptr<ft::Dataset> dataset, std::int64_t batch_size, Parts parts)
    : size_(dataset->size()),
      parts_(std::move(parts)),
      loader_(dataset, parts_.collate,
              in_dataset_order(batch_size, parts_.workers, parts_.sample_replica, parts_.sample_replicas)),
      counted_(validation_samples_counted(size_, parts_.sample_replica, parts_.sample_replicas)) {
  ft::log::debug("validation: this rank counts {} of the {} samples, in {} batches with {} padding samples", counted_,
                 size_, loader_.micro_batches_per_epoch(), loader_.samples_per_epoch() - counted_);
}

ValidationLoop::Result ValidationLoop::run() {
  const auto start = ft::Clock::now();
  Result result;
  at::Tensor totals = at::zeros({2}, at::kDouble);  // loss sum, tokens
  {
    at::NoGradGuard no_grad;
    parts_.model->module().eval();
    std::size_t position = 0;  // of the batch's first sample in this rank's share
    for (loader_.start_epoch(0); !loader_.epoch_done();) {
      LoadedBatch loaded = loader_.next();
      ft::Batch& batch = loaded.batch;
      const std::size_t samples = loaded.samples.size();
      // Padding samples: their labels are all ignored, so they add neither loss nor tokens.
      if (position + samples > counted_) {
        const auto own = static_cast<std::int64_t>(counted_ > position ? counted_ - position : 0);
        batch.labels = batch.labels.clone();
        batch.labels.slice(0, own).fill_(parts_.ignore_index);
      }
      position += samples;
      // No end_micro_batch: a forward without gradients has nothing to reduce.
      parts_.parallelism->begin_micro_batch(/*syncs_gradients=*/false);
      const LossAndTokens batch_totals = parts_.loss_of_batch(batch);
      totals[0] += batch_totals.loss_sum.to(at::kCPU, at::kDouble);
      totals[1] += batch_totals.tokens.to(at::kCPU, at::kDouble);
    }
    parts_.model->module().train();
  }
  parts_.parallelism->all_reduce_sum(totals);
  result.tokens = static_cast<std::int64_t>(totals[1].item<double>());
  result.loss = result.tokens > 0 ? totals[0].item<double>() / static_cast<double>(result.tokens)
                                  : std::numeric_limits<double>::infinity();
  result.seconds = ft::seconds_since(start);
  return result;
}

}  // namespace fthost
