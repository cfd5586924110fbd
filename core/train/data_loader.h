// torchtune's DataLoader(dataset, sampler=DistributedSampler, batch_size, drop_last, collate_fn)
// for one rank, an epoch at a time: the sampler's order of the samples in micro-batches, each
// made index -> sample -> collate, ahead of the caller by `workers` threads (num_workers).
// Training, validation and `fthost data` read their data through it. Its position, the epoch's
// micro-batches handed out so far, is the one unit a checkpoint records and a resumed run
// starts from.
#pragma once

#include "train/batch_prefetcher.h"
#include "train/distributed_sampler.h"

#include <ft/collate.h>
#include <ft/dataset.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace fthost {

struct DataLoaderOptions {
  // Whose share of the samples, in which order. Its drop_last also drops a short last
  // micro-batch, as the recipe's DataLoader(drop_last=True) does.
  SamplerOptions sampler;
  std::int64_t batch_size = 1;
  int workers = 0;
};

// Every sample in dataset order, the last micro-batch kept short, this replica's share of
// `replicas`: what validation and `fthost data` read.
DataLoaderOptions in_dataset_order(std::int64_t batch_size, int workers, int replica = 0, int replicas = 1);

class DataLoader {
 public:
  // `collate` may be null: micro-batches of samples only (`fthost data`'s documents of packs).
  DataLoader(std::shared_ptr<const ft::Dataset> dataset, std::shared_ptr<const ft::Collate> collate,
             DataLoaderOptions options);

  std::size_t micro_batches_per_epoch() const { return micro_batches_per_epoch_; }
  // This rank's samples per epoch (with drop_last, those the micro-batches hold).
  std::size_t samples_per_epoch() const { return sampler_.num_samples(); }

  // Starts `epoch` at micro-batch `position` (where a resumed run stopped), ending after
  // micro-batch `end` (max_steps_per_epoch's share; default the epoch's last).
  void start_epoch(std::int64_t epoch, std::size_t position = 0, std::optional<std::size_t> end = std::nullopt);
  bool epoch_done() const { return position_ == end_; }
  // The epoch's next micro-batch. Throws what reading or collating it threw.
  LoadedBatch next();
  // Micro-batches of the current epoch handed out, those a resumed run skipped included.
  std::size_t position() const { return position_; }

 private:
  DistributedSampler sampler_;
  DataLoaderOptions options_;
  std::size_t micro_batches_per_epoch_;
  BatchPrefetcher prefetcher_;
  std::size_t position_ = 0, end_ = 0;
};

}  // namespace fthost
