#include "train/device_mesh.h"

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

DeviceMesh build_data_and_tensor_parallel(const ProcessGroups& groups, const ft::ConfigNode& root,
                                          int tensor_parallel_size) {
  const int world = groups.world->size();
  if (tensor_parallel_size < 1) root.fail("tensor_parallel_dim", "expected an integer >= 1");
  if (world % tensor_parallel_size != 0)
    root.fail("tensor_parallel_dim",
              std::to_string(tensor_parallel_size) + " does not divide the " + std::to_string(world) +
                  " ranks of this run: world size = data_parallel_replicate_dim x data_parallel_shard_dim x "
                  "tensor_parallel_dim");
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

// Consecutive data-parallel ranks, each group created for every tensor-parallel coordinate.
void add_expert_parallel_groups(DeviceMesh& mesh, const ft::ConfigNode& root, int expert_parallel_size) {
  const int dp = mesh.data_parallel->size();
  const int ep = expert_parallel_size;
  if (ep < 1) root.fail("expert_parallel_dim", "expected an integer >= 1");
  if (dp % ep != 0)
    root.fail("expert_parallel_dim",
              std::to_string(ep) + " does not divide the " + std::to_string(dp) +
                  " data-parallel ranks of this run (its ranks / tensor_parallel_dim): the experts are split over "
                  "groups of expert_parallel_dim consecutive data-parallel ranks");
  mesh.expert_parallel_size = ep;
  if (ep == 1) return;
  for (int g = 0; g < dp / ep; ++g) {
    std::vector<int> ranks;
    for (int e = 0; e < ep; ++e) ranks.push_back(g * ep + e);
    if (auto group = mesh.data_parallel_new_group(ranks)) mesh.expert_parallel = std::move(group);
  }
  if (!mesh.expert_parallel) throw ft::Error("this rank is in no expert-parallel group");
}

// Consecutive data-parallel ranks, as the expert-parallel groups.
void add_context_parallel_groups(DeviceMesh& mesh, const ft::ConfigNode& root, int context_parallel_size) {
  const int dp = mesh.data_parallel->size();
  const int cp = context_parallel_size;
  if (cp < 1) root.fail("context_parallel_dim", "expected an integer >= 1");
  if (dp % cp != 0)
    root.fail("context_parallel_dim",
              std::to_string(cp) + " does not divide the " + std::to_string(dp) +
                  " data-parallel ranks of this run (its ranks / tensor_parallel_dim): world size = "
                  "data_parallel_replicate_dim x data_parallel_shard_dim x context_parallel_dim x tensor_parallel_dim");
  mesh.context_parallel_size = cp;
  if (cp == 1) return;
  for (int g = 0; g < dp / cp; ++g) {
    std::vector<int> ranks;
    for (int c = 0; c < cp; ++c) ranks.push_back(g * cp + c);
    if (auto group = mesh.data_parallel_new_group(ranks)) mesh.context_parallel = std::move(group);
  }
  if (!mesh.context_parallel) throw ft::Error("this rank is in no context-parallel group");
}

}  // namespace

DeviceMesh build_device_mesh(const ProcessGroups& groups, const ft::ConfigNode& root, int tensor_parallel_size,
                             int expert_parallel_size, int context_parallel_size) {
  DeviceMesh mesh = build_data_and_tensor_parallel(groups, root, tensor_parallel_size);
  add_expert_parallel_groups(mesh, root, expert_parallel_size);
  add_context_parallel_groups(mesh, root, context_parallel_size);
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
