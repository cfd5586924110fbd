#include <ft/gradient_math.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

namespace ft {

void scale_gradients(const std::vector<at::Tensor>& tensors, double factor) {
  at::NoGradGuard no_grad;
  for (const auto& t : tensors) {
    if (t.grad().defined()) t.mutable_grad().mul_(factor);
  }
}

double gradient_norm_squared(const std::vector<at::Tensor>& tensors) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> norms;
  for (const auto& t : tensors) {
    if (t.grad().defined()) norms.push_back(at::linalg_vector_norm(t.grad(), 2, {}, false, at::kFloat));
  }
  if (norms.empty()) return 0.0;
  return at::stack(norms).to(at::kDouble).square().sum().item<double>();
}

void clip_gradients(const std::vector<at::Tensor>& tensors, double total_norm, double max_norm) {
  if (!std::isfinite(max_norm)) return;
  const double coefficient = max_norm / (total_norm + 1e-6);
  if (coefficient >= 1.0) return;
  at::NoGradGuard no_grad;
  for (const auto& t : tensors) {
    if (t.grad().defined()) t.mutable_grad().mul_(coefficient);
  }
}

double clip_grad_norm(const std::vector<at::Tensor>& tensors, double max_norm) {
  const double norm = std::sqrt(gradient_norm_squared(tensors));
  clip_gradients(tensors, norm, max_norm);
  return norm;
}

}  // namespace ft
