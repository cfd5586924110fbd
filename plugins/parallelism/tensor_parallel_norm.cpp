#include "tensor_parallel_norm.h"

#include <ft/model_tensor_parallelism.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

namespace ft_parallelism {

TensorParallelNorm::TensorParallelNorm(std::shared_ptr<ft::Collectives> group, ft::Model& model)
    : group_(std::move(group)) {
  if (!group_) return;
  if (auto* tensor_parallelism = ft::role_of<ft::ModelTensorParallelism>(model))
    for (const auto& p : tensor_parallelism->tensor_parallel_shards()) slices_.insert(p.unsafeGetTensorImpl());
}

bool TensorParallelNorm::is_slice(const at::Tensor& parameter) const {
  return slices_.count(parameter.unsafeGetTensorImpl()) != 0;
}

double squared_sum_of_norms(const std::vector<at::Tensor>& norms) {
  if (norms.empty()) return 0.0;
  return at::stack(norms).to(at::kDouble).square().sum().item<double>();
}

TensorParallelNorm::Squares TensorParallelNorm::squares_of(const std::vector<at::Tensor>& parameters) const {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> slice_norms, replicated_norms;
  for (const auto& p : parameters) {
    if (!p.grad().defined()) continue;
    at::Tensor norm = at::linalg_vector_norm(p.grad(), 2, {}, false, at::kFloat);
    (is_slice(p) ? slice_norms : replicated_norms).push_back(norm);
  }
  return {squared_sum_of_norms(slice_norms), squared_sum_of_norms(replicated_norms)};
}

double TensorParallelNorm::total_squared(const Squares& squares) const {
  at::Tensor slices = at::full({1}, squares.slices, at::kDouble);
  group_->all_reduce_sum(slices);
  return slices.item<double>() + squares.replicated;
}

}  // namespace ft_parallelism
