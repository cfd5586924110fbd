#include "gradient_ops.h"

#include <ATen/ATen.h>

#include <cmath>

namespace fthost {

void scale_gradients(const std::vector<at::Tensor>& params, double factor) {
  at::NoGradGuard no_grad;
  for (const auto& p : params) {
    if (p.grad().defined()) p.mutable_grad().mul_(factor);
  }
}

double clip_gradient_norm(const std::vector<at::Tensor>& params, double max_norm) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> norms;
  for (const auto& p : params) {
    if (p.grad().defined()) norms.push_back(at::linalg_vector_norm(p.grad(), 2, {}, false, at::kFloat));
  }
  if (norms.empty()) return 0.0;
  const at::Tensor total = at::linalg_vector_norm(at::stack(norms), 2, {}, false, at::kFloat);
  const double norm = total.item<double>();
  if (std::isfinite(max_norm)) {
    const double coefficient = max_norm / (norm + 1e-6);
    if (coefficient < 1.0) {
      for (const auto& p : params) {
        if (p.grad().defined()) p.mutable_grad().mul_(coefficient);
      }
    }
  }
  return norm;
}

}  // namespace fthost
