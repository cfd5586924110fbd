#include "same_experts_group.h"

#include <ft/errors.h>

#include <string>
#include <vector>

namespace ft_parallelism {

namespace {

class OneRank final : public ft::Collectives {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(at::Tensor&) override {}
  std::unique_ptr<ft::PendingCollective> all_reduce_sum_async(at::Tensor&) override {
    return std::make_unique<ft::CompletedCollective>();
  }
  void all_gather(at::Tensor& full, const at::Tensor& shard) override { full.view({-1}).copy_(shard.reshape({-1})); }
  void reduce_scatter_sum(at::Tensor& shard, const at::Tensor& full) override {
    shard.view({-1}).copy_(full.reshape({-1}));
  }
  void all_to_all(at::Tensor& output, const at::Tensor& input, const std::vector<std::int64_t>&,
                  const std::vector<std::int64_t>&) override {
    output.copy_(input);
  }
  void broadcast(at::Tensor&, int) override {}
  void barrier() override {}
};

}  // namespace

std::shared_ptr<ft::Collectives> one_rank_group() { return std::make_shared<OneRank>(); }

std::shared_ptr<ft::Collectives> same_experts_group(const ft::GroupFactory& new_group, int data_parallel_rank,
                                                    int data_parallel_size, int block_size, int expert_parallel_size) {
  const int ep = expert_parallel_size;
  if (block_size % ep != 0 || data_parallel_size % block_size != 0)
    throw ft::Error("expert parallelism: groups of " + std::to_string(ep) + " ranks do not tile blocks of " +
                    std::to_string(block_size) + " of the " + std::to_string(data_parallel_size) +
                    " data-parallel ranks");
  if (block_size == ep) return one_rank_group();
  std::shared_ptr<ft::Collectives> mine;
  for (int block = 0; block < data_parallel_size / block_size; ++block) {
    for (int coordinate = 0; coordinate < ep; ++coordinate) {
      std::vector<int> ranks;
      for (int r = block * block_size + coordinate; r < (block + 1) * block_size; r += ep) ranks.push_back(r);
      auto group = new_group(ranks);
      if (group) mine = std::move(group);
    }
  }
  if (!mine)
    throw ft::Error("expert parallelism: data-parallel rank " + std::to_string(data_parallel_rank) +
                    " is in no group of ranks holding the same experts");
  return mine;
}

}  // namespace ft_parallelism
