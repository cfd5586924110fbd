// A DataLoader's micro-batches, index -> sample -> collate, made ahead of the caller by `workers`
// background threads (num_workers, torchtune's DataLoader key; 0: the caller makes each one when
// it needs it). Batches come out in the plan's order whatever order the workers finish
// them in, so training is the same bit for bit; a worker's error is rethrown by next().
// Datasets and collates are called from the worker threads: ft::Dataset::get and
// ft::Collate::collate are const, and must be safe to call concurrently (docs/plugins.md).
#pragma once

#include <ft/collate.h>
#include <ft/dataset.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fthost {

// A micro-batch: its samples as the dataset made them, and collated.
struct LoadedBatch {
  std::vector<ft::Sample> samples;
  ft::Batch batch;  // empty without a collate
};

// The micro-batch of `indices`: each sample from `dataset`, then collated by `collate` (may be
// null: samples only).
LoadedBatch load_batch(const ft::Dataset& dataset, const ft::Collate* collate,
                       const std::vector<std::int64_t>& indices);

class BatchPrefetcher {
 public:
  using Plan = std::vector<std::vector<std::int64_t>>;  // sample indices, per micro-batch

  // `collate` may be null: batches of samples only.
  BatchPrefetcher(std::shared_ptr<const ft::Dataset> dataset, std::shared_ptr<const ft::Collate> collate, int workers);
  // Stops the workers (a batch being made is finished and dropped) and joins them.
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // Makes `plan`'s batches from now on; the previous plan's unfinished ones are dropped.
  void start(Plan plan);
  // The plan's next batch (its samples collated), waiting for it when a worker is still on it.
  // Throws the error making it threw; std::out_of_range past the plan's end.
  LoadedBatch next();

 private:
  struct Made {
    LoadedBatch batch;
    std::exception_ptr error;
  };
  void work();

  std::shared_ptr<const ft::Dataset> dataset_;
  std::shared_ptr<const ft::Collate> collate_;
  const std::size_t ahead_;  // batches made beyond the one next() waits for

  std::mutex mutex_;
  std::condition_variable changed_;
  Plan plan_;
  std::uint64_t generation_ = 0;  // counts start() calls: a batch of an older plan is dropped
  std::size_t next_to_make_ = 0, next_to_take_ = 0;
  std::map<std::size_t, Made> made_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace fthost
