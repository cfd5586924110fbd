// The gradient norm when the model splits parameters across ranks: a tensor-parallel slice
// contributes every rank's slice of its tensor-parallel group, an expert share every rank's
// experts of its expert-parallel group (both, for an expert's tensor-parallel slice), and a
// replicated parameter (identical on the ranks of those groups) only once, as torch's
// clip_grad_norm_ counts DTensor shards.
#pragma once

#include <ft/collectives.h>
#include <ft/model.h>

#include <ATen/core/Tensor.h>

#include <array>
#include <memory>
#include <unordered_set>
#include <vector>

namespace ft_parallelism {

enum class Placement { Replicated = 0, TensorSlice = 1, ExpertShare = 2, ExpertTensorSlice = 3 };

class SplitParameterNorm {
 public:
  SplitParameterNorm() = default;
  // `tensor_parallel` nullptr: no tensor parallelism. The expert-parallel group and shares are
  // the model's (ft/model_expert_parallelism.h), if it applied expert parallelism.
  SplitParameterNorm(std::shared_ptr<ft::Collectives> tensor_parallel, ft::Model& model);

  // Whether any parameter is split (otherwise a norm is local and every parameter counts once).
  bool active() const { return tensor_parallel_ != nullptr || expert_parallel_ != nullptr; }
  const std::shared_ptr<ft::Collectives>& expert_parallel() const { return expert_parallel_; }
  Placement placement_of(const at::Tensor& parameter) const;
  bool is_expert_share(const at::Tensor& parameter) const;

  // Squared norms of this rank's gradients by placement.
  using Squares = std::array<double, 4>;
  // From parameters whose .grad is whole on this rank (no data-parallel sharding).
  Squares squares_of(const std::vector<at::Tensor>& parameters) const;
  // The whole model's squared norm from this rank's squares, each placement's already summed
  // over the data-parallel ranks sharding it: the slices summed over the tensor-parallel group,
  // the expert shares over the expert-parallel group.
  double total_squared(const Squares& squares) const;

 private:
  std::shared_ptr<ft::Collectives> tensor_parallel_;
  std::shared_ptr<ft::Collectives> expert_parallel_;
  std::unordered_set<const void*> tensor_slices_;
  std::unordered_set<const void*> expert_shares_;
};

// Sum of squared float32 norms, as ft::gradient_norm_squared combines them.
double squared_sum_of_norms(const std::vector<at::Tensor>& norms);

// Squared norms of gradient pieces by placement: norms[placement] holds float32 norms.
SplitParameterNorm::Squares squares_by_placement(const std::array<std::vector<at::Tensor>, 4>& norms);

}  // namespace ft_parallelism
