// Ranks as threads of one process, for testing the SDK's collective-using blocks without
// processes: the collectives exchange tensors through shared memory with c10d's semantics.
#pragma once

#include <ft/collectives.h>

#include <ATen/ATen.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace fttest {

class ThreadRanks {
 public:
  explicit ThreadRanks(int size) : size_(size), inputs_(static_cast<std::size_t>(size)), splits_(inputs_.size()) {}
  int size() const { return size_; }

  // c10d's all_to_all: consecutive blocks of splits[r] rows to rank r, received in rank order.
  void all_to_all(int rank, at::Tensor& output, const at::Tensor& input, const std::vector<std::int64_t>& splits) {
    publish(rank, input, splits);
    std::vector<at::Tensor> received;
    for (int source = 0; source < size_; ++source) {
      std::int64_t offset = 0;
      for (int r = 0; r < rank; ++r) offset += splits_[at(source)][at(r)];
      received.push_back(inputs_[at(source)].narrow(0, offset, splits_[at(source)][at(rank)]));
    }
    output.copy_(at::cat(received));
    wait_for_every_rank();  // nobody overwrites an input another rank still reads
  }

  void all_gather(int rank, at::Tensor& full, const at::Tensor& shard) {
    publish(rank, shard, {});
    std::vector<at::Tensor> every;
    for (int source = 0; source < size_; ++source) every.push_back(inputs_[at(source)].reshape({-1}));
    full.view({-1}).copy_(at::cat(every));
    wait_for_every_rank();
  }

  void reduce_scatter_sum(int rank, at::Tensor& shard, const at::Tensor& full) {
    publish(rank, full, {});
    at::Tensor sum = at::zeros_like(shard).view({-1});
    for (int source = 0; source < size_; ++source)
      sum += inputs_[at(source)].reshape({-1}).narrow(0, rank * shard.numel(), shard.numel());
    shard.view({-1}).copy_(sum);
    wait_for_every_rank();
  }

  void all_reduce_sum(int rank, at::Tensor& tensor) {
    publish(rank, tensor, {});
    at::Tensor sum = at::zeros_like(tensor);
    for (int source = 0; source < size_; ++source) sum += inputs_[at(source)];
    wait_for_every_rank();
    tensor.copy_(sum);
  }

 private:
  static std::size_t at(int index) { return static_cast<std::size_t>(index); }

  void publish(int rank, const at::Tensor& tensor, const std::vector<std::int64_t>& splits) {
    inputs_[at(rank)] = tensor.clone();
    splits_[at(rank)] = splits;
    wait_for_every_rank();
  }

  void wait_for_every_rank() {
    std::unique_lock<std::mutex> lock(mutex_);
    const int generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      all_arrived_.notify_all();
    } else {
      all_arrived_.wait(lock, [&] { return generation_ != generation; });
    }
  }

  int size_;
  std::vector<at::Tensor> inputs_;
  std::vector<std::vector<std::int64_t>> splits_;
  std::mutex mutex_;
  std::condition_variable all_arrived_;
  int arrived_ = 0;
  int generation_ = 0;
};

class ThreadRank final : public ft::Collectives {
 public:
  ThreadRank(ThreadRanks& ranks, int rank) : ranks_(ranks), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return ranks_.size(); }
  void all_to_all(at::Tensor& output, const at::Tensor& input, const std::vector<std::int64_t>&,
                  const std::vector<std::int64_t>& input_splits) override {
    ranks_.all_to_all(rank_, output, input, input_splits);
  }
  void all_reduce_sum(at::Tensor& tensor) override { ranks_.all_reduce_sum(rank_, tensor); }
  std::unique_ptr<ft::PendingCollective> all_reduce_sum_async(at::Tensor& tensor) override {
    all_reduce_sum(tensor);
    return std::make_unique<ft::CompletedCollective>();
  }
  void all_gather(at::Tensor& full, const at::Tensor& shard) override { ranks_.all_gather(rank_, full, shard); }
  void reduce_scatter_sum(at::Tensor& shard, const at::Tensor& full) override {
    ranks_.reduce_scatter_sum(rank_, shard, full);
  }
  void broadcast(at::Tensor&, int) override { throw std::logic_error("ThreadRank: broadcast is not used"); }
  void barrier() override {}

 private:
  ThreadRanks& ranks_;
  int rank_;
};

}  // namespace fttest
