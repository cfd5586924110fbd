// The elements of the matrices among some parameters: what a token multiplies through, for the
// vision models' FLOP counts (biases, norms, gates and scalars are not matmuls).
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace ft_models {

inline double matrix_elements(const std::vector<at::Tensor>& parameters) {
  double n = 0;
  for (const auto& p : parameters)
    if (p.dim() >= 2) n += static_cast<double>(p.numel());
  return n;
}

}  // namespace ft_models
