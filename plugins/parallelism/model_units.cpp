#include "model_units.h"

#include <ft/errors.h>
#include <ft/model_sharding.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <unordered_set>

namespace ft_parallelism {

std::vector<ParameterGroup> group_parameters(ft::Model& model) {
  std::vector<ParameterGroup> groups;
  std::unordered_set<const void*> seen;
  auto* sharding = ft::role_of<ft::ModelSharding>(model);
  // A model without sharding units is one unit: the root.
  for (auto& unit : sharding ? sharding->sharding_units() : std::vector<ft::ShardingUnit>{}) {
    for (const auto& p : unit.parameters) {
      if (!seen.insert(p.unsafeGetTensorImpl()).second)
        throw ft::Error("parallelism: parameter appears in two sharding units (second: " + unit.name + ")");
    }
    groups.push_back(
        {unit.name, unit.parameters, unit.backward_needs_parameters, unit.used_after_layers, unit.optional});
  }
  ParameterGroup root{"root", {}, true, false};
  for (const auto& p : model.module().parameters()) {
    if (seen.insert(p.unsafeGetTensorImpl()).second) root.parameters.push_back(p);
  }
  groups.push_back(std::move(root));
  return groups;
}

std::vector<bool> used_on_any_rank(ft::Collectives& world, const std::vector<bool>& used_here) {
  at::NoGradGuard no_grad;
  at::Tensor used = at::zeros({static_cast<std::int64_t>(used_here.size())}, at::kFloat);
  for (std::size_t i = 0; i < used_here.size(); ++i)
    if (used_here[i]) used[static_cast<std::int64_t>(i)] = 1;
  world.all_reduce_sum(used);
  std::vector<bool> any(used_here.size());
  for (std::size_t i = 0; i < any.size(); ++i) any[i] = used[static_cast<std::int64_t>(i)].item<float>() > 0;
  return any;
}

std::int64_t total_numel(const std::vector<at::Tensor>& tensors) {
  std::int64_t n = 0;
  for (const auto& t : tensors) n += t.numel();
  return n;
}

std::int64_t total_bytes(const std::vector<at::Tensor>& tensors) {
  std::int64_t bytes = 0;
  for (const auto& t : tensors) bytes += t.numel() * static_cast<std::int64_t>(t.element_size());
  return bytes;
}

}  // namespace ft_parallelism
