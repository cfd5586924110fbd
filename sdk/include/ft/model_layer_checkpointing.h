// Model role: activation checkpointing layer by layer (ft/activation_checkpointing.h), and
// offloading what the checkpointed layers keep to host memory.
#pragma once

#include <ft/model.h>

#include <cstdint>
#include <vector>

namespace ft {

class ModelLayerCheckpointing {
 public:
  static constexpr ModelRole role = ModelRole::LayerCheckpointing;
  virtual ~ModelLayerCheckpointing() = default;
  // How many layers the model can checkpoint one by one.
  virtual std::int64_t num_checkpointable_layers() const = 0;
  // Which of them to checkpoint from now on, one flag per layer in forward order. The host calls
  // it before parallelizing the model.
  virtual void set_activation_checkpointing(const std::vector<bool>& layers) = 0;
  // The inputs the checkpointed layers keep for their recompute stay in host memory until
  // backward (ft::CheckpointOptions::offload_input). Called after set_activation_checkpointing,
  // on CUDA runs only.
  virtual void set_activation_offloading(bool offload) = 0;
};

}  // namespace ft
