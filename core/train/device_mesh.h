// The device mesh of a run, as torch's DeviceMesh with the seed's ParallelDims lays it out:
// world = data-parallel ranks x tensor_parallel_dim, the tensor-parallel dimension innermost, so
// the ranks of one tensor-parallel group are consecutive (ranks 0..tp-1 form the first) and the
// data-parallel ranks holding the same slices are strided by tp. The parallelism strategy sees
// only its data-parallel group (its replicate x shard mesh is built inside it); the model's
// tensor parallelism talks over the tensor-parallel group. Expert parallelism groups consecutive
// data-parallel ranks (ft/model_expert_parallelism.h): data-parallel rank d is rank d % ep of
// expert-parallel group d / ep.
#pragma once

#include "train/c10d_collectives.h"

#include <ft/collectives.h>
#include <ft/config.h>

#include <memory>

namespace fthost {

struct DeviceMesh {
  int tensor_parallel_size = 1;
  // This rank's tensor-parallel group; nullptr when tensor_parallel_size is 1.
  std::shared_ptr<ft::Collectives> tensor_parallel;
  // The ranks with the same tensor-parallel coordinate as this one (the whole world without
  // tensor parallelism), and sub-groups of it named by their ranks within it.
  std::shared_ptr<ft::Collectives> data_parallel;
  ft::GroupFactory data_parallel_new_group;
  int expert_parallel_size = 1;
  // This rank's expert-parallel group; nullptr when expert_parallel_size is 1.
  std::shared_ptr<ft::Collectives> expert_parallel;
  int context_parallel_size = 1;
  // The ranks sharing this rank's sequences: consecutive data-parallel ranks (the strategy
  // reduces gradients over them as over the others, the sampler gives them the same samples);
  // nullptr when context_parallel_size is 1.
  std::shared_ptr<ft::Collectives> context_parallel;
  // Which samples this rank reads: the data-parallel ranks / context_parallel_size replicas.
  int sample_replicas(int data_parallel_size) const { return data_parallel_size / context_parallel_size; }
  int sample_replica(int data_parallel_rank) const { return data_parallel_rank / context_parallel_size; }
};

// Collective: every rank creates every group in the same order. Throws ft::ConfigError naming
// `tensor_parallel_dim` when it is below 1 or does not divide the world size, and
// `expert_parallel_dim` or `context_parallel_dim` when it does not divide the data-parallel ranks.
DeviceMesh build_device_mesh(const ProcessGroups& groups, const ft::ConfigNode& root, int tensor_parallel_size,
                             int expert_parallel_size = 1, int context_parallel_size = 1);

}  // namespace fthost
