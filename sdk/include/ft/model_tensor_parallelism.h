// Model role: tensor parallelism (ft/tensor_parallel.h), torchtune's prepare_mha_for_tp and
// parallelize_module.
#pragma once

#include <ft/collectives.h>
#include <ft/model.h>
#include <ft/tensor_parallel.h>

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <vector>

namespace ft {

class ModelTensorParallelism {
 public:
  static constexpr ModelRole role = ModelRole::TensorParallelism;
  virtual ~ModelTensorParallelism() = default;
  // Splits the modules `plan` names across the ranks of `group`: each rank keeps its slice of
  // their parameters, attention its share of the heads, and the forward communicates over
  // `group`. Called once, after the weights are loaded and before the parallelism strategy
  // distributes the model. Throws ft::Error naming the plan entry the model cannot apply (a module
  // it lacks, a style it cannot split it by, head counts the group size does not divide).
  virtual void apply_tensor_parallel(const std::vector<ModuleParallelism>& plan,
                                     const std::shared_ptr<Collectives>& group) = 0;
  // The parameters apply_tensor_parallel split (each rank of the group holds a different slice);
  // every other parameter is whole and identical on every rank of the group.
  virtual std::vector<at::Tensor> tensor_parallel_shards() = 0;
  // Collective over the tensor-parallel group: runs `fn` with every split parameter whole
  // (readable through hf_parameters()), then restores the slices.
  virtual void with_full_tensor_parallel_parameters(const std::function<void()>& fn) = 0;
};

}  // namespace ft
