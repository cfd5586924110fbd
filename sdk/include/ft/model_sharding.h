// Model role: sharding units for data parallelism (FSDP, HSDP, DDP's hooks) and torchtune's
// custom_sharded_layers. A model without it is sharded as one unit.
#pragma once

#include <ft/model.h>

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <string>
#include <vector>

namespace ft {

// A group of parameters that sharded data parallelism gathers and frees together: torchtune's
// FSDP wraps each transformer layer this way. Units are listed in forward order.
struct ShardingUnit {
  std::string name;                    // e.g. "layers.3"
  std::vector<at::Tensor> parameters;  // the live parameters (same storage as the module's)

  // --- Separately sharded modules (torchtune's custom_sharded_layers) ---
  // false for a unit whose backward needs no parameter values (an embedding lookup): its
  // parameters can be freed right after its forward, whatever reshard_after_forward says.
  bool backward_needs_parameters = true;
  // true for a unit used after the layers, possibly by the loss after the model's forward has
  // returned (the output projection): the model calls before_forward() on every use and never
  // after_forward(); its parameters stay gathered until the backward reaches the last layer.
  bool used_after_layers = false;
  // true for a unit some forwards do not use (Llama 4's vision tower on a batch without images):
  // not one of the layers. A strategy reduces its gradient only when some rank used it in the
  // micro-batch; where none did, its gradient stays undefined and the optimizer leaves it alone,
  // as torch's optimizers skip a parameter whose grad is None.
  bool optional = false;
};

// Called by the model around each unit's forward, so a strategy can gather the unit's
// parameters just before use and hook its backward. `after_forward` returns the tensor the
// model continues with (the strategy may wrap it in an autograd node).
class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  virtual void before_forward(std::size_t unit) = 0;
  virtual at::Tensor after_forward(std::size_t unit, at::Tensor output) = 0;
};

class ModelSharding {
 public:
  static constexpr ModelRole role = ModelRole::Sharding;
  virtual ~ModelSharding() = default;
  // Units for sharded data parallelism; parameters in no unit form the root unit.
  virtual std::vector<ShardingUnit> sharding_units() = 0;
  // `hooks` (not owned; nullptr removes them) is called around every unit's forward.
  virtual void set_unit_hooks(UnitHooks* hooks) = 0;
  // Separately sharded modules (torchtune's custom_sharded_layers): makes each named module
  // (torchtune's module names: "tok_embeddings", "output") a sharding unit of its own, listed by
  // sharding_units() after the layers, and has the model call the unit hooks around its use.
  // Names of modules that already are units ("layers.3") are accepted as they are. Returns a
  // note for each name accepted without effect (a tied "output"). Throws ft::Error naming every
  // name the model has no module for.
  virtual std::vector<std::string> shard_separately(const std::vector<std::string>& module_names) = 0;
};

}  // namespace ft
