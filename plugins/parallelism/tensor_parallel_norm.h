// The gradient norm under tensor parallelism: a parameter the model split across its
// tensor-parallel group contributes every rank's slice, a replicated one (identical on every
// rank of the group) only once, as torch's clip_grad_norm_ counts DTensor shards.
#pragma once

#include <ft/collectives.h>
#include <ft/model.h>

#include <ATen/core/Tensor.h>

#include <memory>
#include <unordered_set>
#include <vector>

namespace ft_parallelism {

class TensorParallelNorm {
 public:
  // `group` nullptr: no tensor parallelism (active() is false).
  TensorParallelNorm() = default;
  TensorParallelNorm(std::shared_ptr<ft::Collectives> group, ft::Model& model);

  bool active() const { return group_ != nullptr; }
  // Whether `parameter` (a parameter of the model, compared by identity) is a slice.
  bool is_slice(const at::Tensor& parameter) const;
  // Squared norms of this rank's gradients, the slices' and the replicated parameters' apart.
  struct Squares {
    double slices = 0;
    double replicated = 0;
  };
  // From parameters whose .grad is whole on this rank (no data-parallel sharding).
  Squares squares_of(const std::vector<at::Tensor>& parameters) const;
  // The whole model's squared norm: `squares` already summed over the data-parallel shards;
  // the slices' part is summed over the tensor-parallel group.
  double total_squared(const Squares& squares) const;

 private:
  std::shared_ptr<ft::Collectives> group_;
  std::unordered_set<const void*> slices_;
};

// Sum of squared float32 norms, as ft::gradient_norm_squared combines them.
double squared_sum_of_norms(const std::vector<at::Tensor>& norms);

}  // namespace ft_parallelism
