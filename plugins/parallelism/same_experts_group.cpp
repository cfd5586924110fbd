#include "same_experts_group.h"

#include <ft/errors.h>
#include <ft/one_rank_group.h>

#include <string>
#include <vector>

namespace ft_parallelism {

std::shared_ptr<ft::Collectives> same_experts_group(const ft::GroupFactory& new_group, int data_parallel_rank,
                                                    int data_parallel_size, int block_size, int expert_parallel_size) {
  const int ep = expert_parallel_size;
  if (block_size % ep != 0 || data_parallel_size % block_size != 0)
    throw ft::Error("expert parallelism: groups of " + std::to_string(ep) + " ranks do not tile blocks of " +
                    std::to_string(block_size) + " of the " + std::to_string(data_parallel_size) +
                    " data-parallel ranks");
  if (block_size == ep) return ft::one_rank_group();
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
