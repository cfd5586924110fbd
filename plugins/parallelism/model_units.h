// The model's parameters grouped as the strategies communicate them: the model's sharding
// units in forward order, then a root unit with every parameter in no unit (embeddings, final
// norm, output projection), as torchtune's FSDP wrapping leaves them to the root module.
#pragma once

#include <ft/collectives.h>
#include <ft/model.h>

#include <cstddef>

#include <string>
#include <vector>

namespace ft_parallelism {

struct ParameterGroup {
  std::string name;
  std::vector<at::Tensor> parameters;
  bool backward_needs_parameters = true;  // as ft::ShardingUnit
  bool used_after_layers = false;
  bool optional = false;
};

// units[0 .. n-1]: the model's sharding units; units[n]: the root. Throws when a parameter is
// in two units.
std::vector<ParameterGroup> group_parameters(ft::Model& model);

// How many of `units` (before the root, at `root`) are the model's layers in forward order: the
// leading ones that need their parameters in backward, are used only in their turn and run in
// every forward. A strategy may reduce such a unit's gradients as soon as the backward moves past
// it; the others (separately sharded embedding and output, optional units) only at its end.
template <class Unit>
std::size_t leading_layer_count(const std::vector<Unit>& units, std::size_t root) {
  std::size_t n = 0;
  while (n < root && units[n].backward_needs_parameters && !units[n].used_after_layers && !units[n].optional) ++n;
  return n;
}

// Whether any rank of `world` used each optional unit (`used_here`, this rank's answers): every
// rank reduces a unit some rank used (the others add zeros) and none reduces the rest, so the
// collectives match.
std::vector<bool> used_on_any_rank(ft::Collectives& world, const std::vector<bool>& used_here);

std::int64_t total_numel(const std::vector<at::Tensor>& tensors);
std::int64_t total_bytes(const std::vector<at::Tensor>& tensors);

}  // namespace ft_parallelism
