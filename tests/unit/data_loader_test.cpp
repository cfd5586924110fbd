// The data loader: its micro-batches are the sampler's order in batches, a resumed epoch continues
// at its position with exactly the batches the whole epoch would have had there, and validation's
// share counts every sample once. Its batches made ahead by worker threads (num_workers): in the
// plan's order whatever order the workers finish in, restartable with a new plan, a worker's error
// rethrown at its batch, stopped cleanly with work pending; and a run with workers trains bit for
// bit as one without. Also built into the ThreadSanitizer phase's executable.
#include "train/data_loader.h"
#include "resume_reference.h"
#include "test_helpers.h"
#include "train/batch_prefetcher.h"
#include "train/validation_loop.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace {

using fthost::BatchPrefetcher;

// Sample i is the single token i, made after a pseudo-random pause so workers finish out of
// order; sample `bad` throws.
class SlowDataset final : public ft::Dataset {
 public:
  explicit SlowDataset(std::size_t size, std::size_t bad = SIZE_MAX) : size_(size), bad_(bad) {}
  std::size_t size() const override { return size_; }
  ft::Sample get(std::size_t index) const override {
    std::this_thread::sleep_for(std::chrono::microseconds((index * 7919) % 2000));
    if (index == bad_) throw ft::Error("record " + std::to_string(index) + " is bad");
    ft::Sample s;
    s.tokens = {static_cast<std::int64_t>(index)};
    s.labels = s.tokens;
    return s;
  }

 private:
  std::size_t size_, bad_;
};

// The batch's tokens, one row per sample.
class RowsCollate final : public ft::Collate {
 public:
  ft::Batch collate(const std::vector<ft::Sample>& samples) const override {
    std::vector<std::int64_t> ids;
    for (const auto& s : samples) ids.push_back(s.tokens.at(0));
    ft::Batch b;
    b.tokens = at::tensor(ids, at::kLong).reshape({static_cast<std::int64_t>(ids.size()), 1});
    b.labels = b.tokens.clone();
    return b;
  }
};

// The sample ids of a loaded micro-batch; its collated rows must be the same samples.
std::vector<std::int64_t> ids_of(const fthost::LoadedBatch& loaded) {
  std::vector<std::int64_t> ids;
  for (const auto& s : loaded.samples) ids.push_back(s.tokens.at(0));
  if (loaded.batch.tokens.defined()) {
    const at::Tensor flat = loaded.batch.tokens.reshape({-1}).contiguous();
    EXPECT_EQ(std::vector<std::int64_t>(flat.data_ptr<std::int64_t>(), flat.data_ptr<std::int64_t>() + flat.numel()),
              ids);
  }
  return ids;
}

BatchPrefetcher::Plan shuffled_plan(std::size_t batches, std::size_t batch_size, unsigned seed) {
  std::vector<std::int64_t> order(batches * batch_size);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  BatchPrefetcher::Plan plan;
  for (std::size_t b = 0; b < batches; ++b)
    plan.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(b * batch_size),
                      order.begin() + static_cast<std::ptrdiff_t>((b + 1) * batch_size));
  return plan;
}

TEST(BatchPrefetcher, BatchesComeInThePlansOrderWithAnyNumberOfWorkers) {
  const auto dataset = std::make_shared<SlowDataset>(120);
  const auto collate = std::make_shared<RowsCollate>();
  for (int workers : {0, 1, 3}) {
    SCOPED_TRACE(workers);
    BatchPrefetcher prefetcher(dataset, collate, workers);
    for (unsigned epoch = 0; epoch < 2; ++epoch) {
      const auto plan = shuffled_plan(30, 4, epoch);
      prefetcher.start(plan);
      for (const auto& expected : plan) EXPECT_EQ(ids_of(prefetcher.next()), expected);
      EXPECT_THROW(prefetcher.next(), std::out_of_range);
    }
  }
}

// A new plan mid-way (a resumed epoch, the next epoch) drops what was made for the old one.
TEST(BatchPrefetcher, ANewPlanReplacesTheOldOneMidWay) {
  BatchPrefetcher prefetcher(std::make_shared<SlowDataset>(120), std::make_shared<RowsCollate>(), 3);
  const auto first = shuffled_plan(30, 4, 1), second = shuffled_plan(30, 4, 2);
  prefetcher.start(first);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(ids_of(prefetcher.next()), first[static_cast<std::size_t>(i)]);
  prefetcher.start(second);
  for (const auto& expected : second) EXPECT_EQ(ids_of(prefetcher.next()), expected);
}

// The error of the batch holding a bad record comes out of next() at that batch, not earlier;
// the batches before it are whole.
TEST(BatchPrefetcher, AWorkersErrorIsRethrownAtItsBatch) {
  const auto plan = shuffled_plan(30, 4, 3);
  const std::int64_t bad = plan[17][2];
  BatchPrefetcher prefetcher(std::make_shared<SlowDataset>(120, static_cast<std::size_t>(bad)),
                             std::make_shared<RowsCollate>(), 3);
  prefetcher.start(plan);
  for (std::size_t b = 0; b < 17; ++b) EXPECT_EQ(ids_of(prefetcher.next()), plan[b]);
  try {
    prefetcher.next();
    FAIL() << "batch 17 holds the bad record";
  } catch (const ft::Error& e) {
    EXPECT_EQ(std::string(e.what()), "record " + std::to_string(bad) + " is bad");
  }
}

// Destroyed with batches being made and others waiting: it returns, nothing leaks or hangs.
TEST(BatchPrefetcher, StopsWithWorkPending) {
  for (int round = 0; round < 5; ++round) {
    BatchPrefetcher prefetcher(std::make_shared<SlowDataset>(120), std::make_shared<RowsCollate>(), 4);
    prefetcher.start(shuffled_plan(30, 4, static_cast<unsigned>(round)));
    if (round % 2) prefetcher.next();
  }
  SUCCEED();
}

// The sampler's order (torch's DistributedSampler: seeded per epoch, every replica-th index), in
// micro-batches; a short last one kept only without drop_last.
TEST(DataLoader, MicroBatchesAreTheSamplersOrderInBatches) {
  auto dataset = std::make_shared<SlowDataset>(23);
  for (const bool drop_last : {true, false}) {
    for (int workers : {0, 2}) {
      SCOPED_TRACE("drop_last " + std::to_string(drop_last) + ", workers " + std::to_string(workers));
      fthost::DataLoaderOptions options;
      options.sampler = fthost::SamplerOptions{2, 1, /*shuffle=*/true, 7, drop_last};
      options.batch_size = 3;
      options.workers = workers;
      fthost::DataLoader loader(dataset, std::make_shared<RowsCollate>(), options);
      const std::vector<std::int64_t> order = fthost::DistributedSampler(23, options.sampler).indices(4);
      EXPECT_EQ(order.size(), drop_last ? 11u : 12u);
      EXPECT_EQ(loader.micro_batches_per_epoch(), drop_last ? 3u : 4u);
      loader.start_epoch(4);
      std::vector<std::int64_t> seen;
      while (!loader.epoch_done()) {
        const auto ids = ids_of(loader.next());
        EXPECT_LE(ids.size(), 3u);
        seen.insert(seen.end(), ids.begin(), ids.end());
        EXPECT_EQ(loader.position() * 3 >= seen.size(), true);
      }
      EXPECT_EQ(seen, std::vector<std::int64_t>(order.begin(), order.begin() + (drop_last ? 9 : 12)));
      EXPECT_THROW(loader.next(), std::out_of_range);
    }
  }
}

// Started at a position (a resumed run's), an epoch hands out exactly the batches the whole epoch
// hands out from there, up to the end it was given (max_steps_per_epoch's share).
TEST(DataLoader, AnEpochStartedAtAPositionContinuesTheWholeEpoch) {
  fthost::DataLoaderOptions options;
  options.sampler = fthost::SamplerOptions{3, 2, /*shuffle=*/true, 11, /*drop_last=*/true};
  options.batch_size = 2;
  options.workers = 2;
  fthost::DataLoader loader(std::make_shared<SlowDataset>(60), std::make_shared<RowsCollate>(), options);
  ASSERT_EQ(loader.micro_batches_per_epoch(), 10u);
  loader.start_epoch(1);
  std::vector<std::vector<std::int64_t>> whole;
  while (!loader.epoch_done()) whole.push_back(ids_of(loader.next()));
  ASSERT_EQ(whole.size(), 10u);
  for (std::size_t position : {0u, 1u, 4u, 9u, 10u}) {
    SCOPED_TRACE("from " + std::to_string(position));
    loader.start_epoch(1, position, 10);
    EXPECT_EQ(loader.position(), position);
    for (std::size_t b = position; b < 10; ++b) {
      EXPECT_FALSE(loader.epoch_done());
      EXPECT_EQ(ids_of(loader.next()), whole[b]);
      EXPECT_EQ(loader.position(), b + 1);
    }
    EXPECT_TRUE(loader.epoch_done());
  }
  loader.start_epoch(1, 2, 6);
  std::size_t taken = 0;
  while (!loader.epoch_done()) EXPECT_EQ(ids_of(loader.next()), whole[2 + taken++]);
  EXPECT_EQ(taken, 4u);
  EXPECT_THROW(loader.start_epoch(1, 7, 6), ft::Error);
  EXPECT_THROW(loader.start_epoch(1, 0, 11), ft::Error);
}

// Without a collate (the documents of packs, which a pack collate cannot take) the loader hands
// out the samples alone.
TEST(DataLoader, WithoutACollateHandsOutSamples) {
  fthost::DataLoaderOptions options;
  options.batch_size = 4;
  options.workers = 1;
  fthost::DataLoader loader(std::make_shared<SlowDataset>(6), nullptr, options);
  loader.start_epoch(0);
  const fthost::LoadedBatch first = loader.next();
  EXPECT_FALSE(first.batch.tokens.defined());
  EXPECT_EQ(ids_of(first), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(ids_of(loader.next()), (std::vector<std::int64_t>{4, 5}));
  EXPECT_TRUE(loader.epoch_done());
}

// The demo with 3 workers making its micro-batches logs the same rows and ends with the same
// weights as the demo making them on the step's own thread.
TEST(BatchPrefetcher, TrainingWithWorkersIsBitwiseTrainingWithout) {
  auto run = [](int workers) {
    const std::string out = fttest::temp_dir();
    const auto r = fttest::run_fthost(
        "--config " + std::string(FT_SOURCE_DIR) + "/configs/tiny_demo.toml dataset.source=" +
        std::string(FT_SOURCE_DIR) + "/configs/demo/sort_tokens.jsonl output_dir=" + out +
        " epochs=2 max_steps_per_epoch=12 gradient_accumulation_steps=2 log_every_n_steps=1 num_workers=" +
        std::to_string(workers) +
        " metric_logger._component_=torchtune.training.metric_logging.DiskLogger metric_logger.log_dir=" + out +
        "/logs metric_logger.filename=metrics.jsonl metric_logger.output_fmt=jsonl");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return out;
  };
  const std::string without = run(0), with = run(3);
  EXPECT_EQ(fttest::resume::trajectory(with).size(), 24u);
  EXPECT_EQ(fttest::resume::trajectory(with), fttest::resume::trajectory(without));
  EXPECT_TRUE(fttest::read_file(with + "/epoch_1/model.safetensors") ==
              fttest::read_file(without + "/epoch_1/model.safetensors"));
}

}  // namespace
