#include "split_parameter_norm.h"

#include <ft/model_expert_parallelism.h>
#include <ft/model_tensor_parallelism.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

namespace ft_parallelism {

SplitParameterNorm::SplitParameterNorm(std::shared_ptr<ft::Collectives> tensor_parallel, ft::Model& model)
    : tensor_parallel_(std::move(tensor_parallel)) {
  if (tensor_parallel_)
    if (auto* tensor_parallelism = ft::role_of<ft::ModelTensorParallelism>(model))
      for (const auto& p : tensor_parallelism->tensor_parallel_shards()) tensor_slices_.insert(p.unsafeGetTensorImpl());
  if (auto* expert_parallelism = ft::role_of<ft::ModelExpertParallelism>(model)) {
    expert_parallel_ = expert_parallelism->expert_parallel_group();
    for (const auto& p : expert_parallelism->expert_parallel_shards()) expert_shares_.insert(p.unsafeGetTensorImpl());
  }
}

bool SplitParameterNorm::is_expert_share(const at::Tensor& parameter) const {
  return expert_shares_.count(parameter.unsafeGetTensorImpl()) != 0;
}

Placement SplitParameterNorm::placement_of(const at::Tensor& parameter) const {
  const bool slice = tensor_slices_.count(parameter.unsafeGetTensorImpl()) != 0;
  if (is_expert_share(parameter)) return slice ? Placement::ExpertTensorSlice : Placement::ExpertShare;
  return slice ? Placement::TensorSlice : Placement::Replicated;
}

double squared_sum_of_norms(const std::vector<at::Tensor>& norms) {
  if (norms.empty()) return 0.0;
  return at::stack(norms).to(at::kDouble).square().sum().item<double>();
}

SplitParameterNorm::Squares squares_by_placement(const std::array<std::vector<at::Tensor>, 4>& norms) {
  SplitParameterNorm::Squares squares{};
  for (std::size_t i = 0; i < norms.size(); ++i) squares[i] = squared_sum_of_norms(norms[i]);
  return squares;
}

SplitParameterNorm::Squares SplitParameterNorm::squares_of(const std::vector<at::Tensor>& parameters) const {
  at::NoGradGuard no_grad;
  std::array<std::vector<at::Tensor>, 4> norms;
  for (const auto& p : parameters) {
    if (!p.grad().defined()) continue;
    norms[static_cast<std::size_t>(placement_of(p))].push_back(
        at::linalg_vector_norm(p.grad(), 2, {}, false, at::kFloat));
  }
  return squares_by_placement(norms);
}

double SplitParameterNorm::total_squared(const Squares& squares) const {
  auto at_ = [&](Placement p) { return squares[static_cast<std::size_t>(p)]; };
  // [tensor slices, expert tensor slices], summed over the tensor-parallel group.
  at::Tensor slices = at::tensor({at_(Placement::TensorSlice), at_(Placement::ExpertTensorSlice)}, at::kDouble);
  if (tensor_parallel_) tensor_parallel_->all_reduce_sum(slices);
  at::Tensor experts = at::full({1}, at_(Placement::ExpertShare) + slices[1].item<double>(), at::kDouble);
  if (expert_parallel_) expert_parallel_->all_reduce_sum(experts);
  return at_(Placement::Replicated) + slices[0].item<double>() + experts.item<double>();
}

}  // namespace ft_parallelism
