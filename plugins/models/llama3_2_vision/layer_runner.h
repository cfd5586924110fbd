// How the vision model runs each of its layers: inside a sharding strategy's unit hooks (each
// layer a unit, in forward order: the encoder's local and global layers, then the decoder's), and
// through activation checkpointing where the host asked for it. The encoder and the decoder share
// one, which the model's roles configure.
#pragma once

#include <ft/activation_checkpointing.h>
#include <ft/model_sharding.h>

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

namespace ft_models {

struct LayerRunner {
  ft::UnitHooks* hooks = nullptr;  // nullptr: not sharded layer by layer
  std::vector<bool> checkpointed;  // by unit
  bool offload = false;            // checkpointed layers' inputs wait in host memory
  // Units of their own for the embedding and the output projection (custom_sharded_layers).
  std::optional<std::size_t> embedding_unit, output_unit;

  // `step` is the unit's forward from `input`. A checkpointed step must read no other tensor
  // that needs a gradient (it is recomputed from `input` alone).
  at::Tensor run(std::size_t unit, const at::Tensor& input, const ft::CheckpointedStep& step) const {
    if (hooks) hooks->before_forward(unit);
    at::Tensor out = unit < checkpointed.size() && checkpointed[unit]
                         ? ft::checkpointed(step, input, ft::CheckpointOptions{offload})
                         : step(input);
    if (hooks) out = hooks->after_forward(unit, std::move(out));
    return out;
  }
  void before(const std::optional<std::size_t>& unit) const {
    if (hooks && unit) hooks->before_forward(*unit);
  }
  at::Tensor after(const std::optional<std::size_t>& unit, at::Tensor output) const {
    return hooks && unit ? hooks->after_forward(*unit, std::move(output)) : output;
  }
};

}  // namespace ft_models
