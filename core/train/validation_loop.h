// Validation during training, torchtune's validate(): the loss of the current weights over a
// whole validation set (`dataset_val`), in eval mode without gradients, every
// `run_val_every_n_steps` optimizer steps. The loss is token-weighted over the whole set (the sum
// of per-token losses over the number of counted tokens, not a mean of batch means), each
// data-parallel rank evaluating its share and the two sums all-reduced.
#pragma once

#include "train/data_loader.h"

#include <ft/collate.h>
#include <ft/dataset.h>
#include <ft/model.h>
#include <ft/parallelism.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace fthost {

// What a data-parallel rank evaluates: the loader's micro-batches over its share of the set in
// dataset order (in_dataset_order). Every rank gets the same number of batches (a sharded
// model's forward is collective), so the sampler's tail padding is kept; the first
// validation_samples_counted of the rank's samples are its own, the others repeat the head of
// the set and contribute no tokens. Over all ranks each sample is counted exactly once.
std::size_t validation_samples_counted(std::size_t dataset_size, int dp_rank, int dp_size);

class ValidationLoop {
 public:
  // A batch's loss summed over its counted tokens, and their number (0-dim tensors): the same
  // forward, label shift and loss as a training step.
  struct LossAndTokens {
    at::Tensor loss_sum;
    at::Tensor tokens;
  };
  using LossOfBatch = std::function<LossAndTokens(const ft::Batch&)>;
  struct Parts {
    ft::Model* model = nullptr;
    ft::Parallelism* parallelism = nullptr;
    std::shared_ptr<const ft::Collate> collate;
    std::int64_t ignore_index = -100;
    LossOfBatch loss_of_batch;
    // Which share of the set this rank evaluates: the data-parallel ranks, those of one
    // context-parallel group counted once (they evaluate the same samples, split).
    int sample_replica = 0;
    int sample_replicas = 1;
    int workers = 0;  // num_workers
  };
  struct Result {
    double loss = 0;  // +inf when no token is counted, as torchtune's
    std::int64_t tokens = 0;
    double seconds = 0;
  };

  ValidationLoop(std::shared_ptr<ft::Dataset> dataset, std::int64_t batch_size, Parts parts);
  std::size_t size() const { return size_; }
  // Collective over the data-parallel ranks. Leaves the model in training mode and draws
  // nothing from any random generator, so the training that follows is unchanged.
  Result run();

 private:
  std::size_t size_;
  Parts parts_;
  DataLoader loader_;
  std::size_t counted_;
};

}  // namespace fthost
