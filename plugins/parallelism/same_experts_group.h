// Under expert parallelism (ft/model_expert_parallelism.h) the ranks holding the same experts:
// data-parallel rank d holds the share d % ep of the experts, so within a block of consecutive
// data-parallel ranks (all of them for DDP, one shard group for FSDP) the ranks with the same
// d % ep form the group the experts' gradients are reduced (and their buffers sharded) over.
#pragma once

#include <ft/collectives.h>

#include <memory>

namespace ft_parallelism {

// Collective: creates, for every block of `block_size` consecutive data-parallel ranks and every
// expert-parallel coordinate, the group of that block's ranks with that coordinate, in the same
// order on every rank, and returns this rank's. A one-rank group is ft::one_rank_group (no
// communication).
std::shared_ptr<ft::Collectives> same_experts_group(const ft::GroupFactory& new_group, int data_parallel_rank,
                                                    int data_parallel_size, int block_size, int expert_parallel_size);

}  // namespace ft_parallelism
