#include "whole_model_strategy.h"

#include "model_units.h"

#include <ft/gradient_math.h>

#include <cmath>

namespace ft_parallelism {

void WholeModelStrategy::scale_gradients(double factor) { ft::scale_gradients(params_, factor); }

double WholeModelStrategy::clip_grad_norm(double max_norm) {
  if (!norm_.active()) return ft::clip_grad_norm(params_, max_norm);
  const double norm = std::sqrt(norm_.total_squared(norm_.squares_of(params_)));
  ft::clip_gradients(params_, norm, max_norm);
  return norm;
}

std::int64_t WholeModelStrategy::local_parameter_bytes() const { return total_bytes(params_); }

const std::vector<at::Tensor>& WholeModelStrategy::adopt_parameters(ft::Model& model) {
  // Frozen parameters (requires_grad false: a vision model's frozen decoder) get no gradient and
  // no optimizer state.
  params_.clear();
  for (const auto& p : model.module().parameters())
    if (p.requires_grad()) params_.push_back(p);
  norm_ = SplitParameterNorm(tensor_parallel_, model);
  return params_;
}

}  // namespace ft_parallelism
