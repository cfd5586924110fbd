#include "train/device_mesh.h"

#include "config/mesh_dimensions.h"

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/one_rank_group.h>

#include <string>
#include <utility>
#include <vector>

namespace fthost {

namespace {

// Creates, in the same order on every rank, the group of world ranks `ranks(t)` for every
// tensor-parallel coordinate t, and returns the one this rank is in.
template <class RanksOf>
std::shared_ptr<ft::Collectives> one_group_per_coordinate(const ProcessGroups& groups, int coordinates,
                                                          RanksOf ranks_of) {
  std::shared_ptr<ft::Collectives> mine;
  for (int t = 0; t < coordinates; ++t) {
    const std::vector<int> ranks = ranks_of(t);
    const bool member = [&] {
      for (int r : ranks)
        if (r == groups.world->rank()) return true;
      return false;
    }();
    std::shared_ptr<ft::Collectives> group =
        ranks.size() == 1 ? (member ? ft::one_rank_group() : nullptr) : groups.new_group(ranks);
    if (group) mine = std::move(group);
  }
  return mine;
}

DeviceMesh build_data_and_tensor_parallel(const ProcessGroups& groups, int tensor_parallel_size) {
  const int world = groups.world->size();
  DeviceMesh mesh;
  mesh.tensor_parallel_size = tensor_parallel_size;
  if (tensor_parallel_size == 1) {
    mesh.data_parallel = groups.world;
    mesh.data_parallel_new_group = groups.new_group;
    return mesh;
  }
  const int tp = tensor_parallel_size;
  const int dp = world / tp;
  // Tensor-parallel groups: consecutive ranks.
  mesh.tensor_parallel = one_group_per_coordinate(groups, dp, [tp](int d) {
    std::vector<int> ranks;
    for (int t = 0; t < tp; ++t) ranks.push_back(d * tp + t);
    return ranks;
  });
  // Data-parallel groups: the ranks of one tensor-parallel coordinate.
  auto data_parallel_ranks = [tp](const std::vector<int>& dp_ranks, int t) {
    std::vector<int> ranks;
    for (int d : dp_ranks) ranks.push_back(d * tp + t);
    return ranks;
  };
  std::vector<int> every_dp_rank;
  for (int d = 0; d < dp; ++d) every_dp_rank.push_back(d);
  mesh.data_parallel =
      one_group_per_coordinate(groups, tp, [&](int t) { return data_parallel_ranks(every_dp_rank, t); });
  // The strategy's sub-groups name data-parallel ranks; every rank asks for the same ones in
  // the same order, so creating the group for every coordinate keeps the creation order equal.
  mesh.data_parallel_new_group = [groups, tp, data_parallel_ranks](const std::vector<int>& dp_ranks) {
    return one_group_per_coordinate(groups, tp, [&](int t) { return data_parallel_ranks(dp_ranks, t); });
  };
  if (!mesh.tensor_parallel || !mesh.data_parallel)
    throw ft::Error("rank " + std::to_string(groups.world->rank()) +
                    " is in no tensor-parallel or data-parallel group");
  if (groups.world->rank() == 0)
    ft::log::info(
        "device mesh: {} data-parallel x {} tensor-parallel ranks (tensor-parallel groups are consecutive ranks)", dp,
        tp);
  return mesh;
}

// Groups of `size` consecutive data-parallel ranks (expert and context parallelism), each created
// for every tensor-parallel coordinate; returns this rank's, nullptr when `size` is 1. `key`
// names the setting in the error of a rank in none. `size` divides the data-parallel ranks
// (check_mesh_dimensions).
std::shared_ptr<ft::Collectives> consecutive_data_parallel_group(const DeviceMesh& mesh, const char* key, int size) {
  const int dp = mesh.data_parallel->size();
  if (size == 1) return nullptr;
  std::shared_ptr<ft::Collectives> mine;
  for (int g = 0; g < dp / size; ++g) {
    std::vector<int> ranks;
    for (int i = 0; i < size; ++i) ranks.push_back(g * size + i);
    if (auto group = mesh.data_parallel_new_group(ranks)) mine = std::move(group);
  }
  if (!mine) throw ft::Error(std::string("this rank is in no group of ") + key + " consecutive data-parallel ranks");
  return mine;
}

}  // namespace

DeviceMesh build_device_mesh(const ProcessGroups& groups, const ft::ConfigNode& root, int tensor_parallel_size,
                             int expert_parallel_size, int context_parallel_size) {
  check_mesh_dimensions(root, groups.world->size(), tensor_parallel_size, expert_parallel_size, context_parallel_size);
  DeviceMesh mesh = build_data_and_tensor_parallel(groups, tensor_parallel_size);
  mesh.expert_parallel = consecutive_data_parallel_group(mesh, "expert_parallel_dim", expert_parallel_size);
  mesh.expert_parallel_size = expert_parallel_size;
  mesh.context_parallel = consecutive_data_parallel_group(mesh, "context_parallel_dim", context_parallel_size);
  mesh.context_parallel_size = context_parallel_size;
  if (mesh.context_parallel && groups.world->rank() == 0)
    ft::log::info(
        "device mesh: each sequence split over {} consecutive data-parallel ranks ({} such groups, each "
        "reading its own samples)",
        context_parallel_size, mesh.data_parallel->size() / context_parallel_size);
  if (mesh.expert_parallel && groups.world->rank() == 0)
    ft::log::info("device mesh: experts split over groups of {} consecutive data-parallel ranks ({} groups)",
                  expert_parallel_size, mesh.data_parallel->size() / expert_parallel_size);
  return mesh;
}

}  // namespace fthost
