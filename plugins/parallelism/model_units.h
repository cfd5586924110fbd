// The model's parameters grouped as the strategies communicate them: the model's sharding
// units in forward order, then a root unit with every parameter in no unit (embeddings, final
// norm, output projection), as torchtune's FSDP wrapping leaves them to the root module.
#pragma once

#include <ft/model.h>

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

std::int64_t total_numel(const std::vector<at::Tensor>& tensors);
std::int64_t total_bytes(const std::vector<at::Tensor>& tensors);

}  // namespace ft_parallelism
