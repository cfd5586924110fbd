// L2 norm without a learned scale: x / sqrt(mean(x^2) + eps), computed in float32 and rounded to
// the input dtype (Llama 4's q/k norm, Hugging Face's Llama4TextL2Norm).
#pragma once

#include <ft/nn/norm.h>

#include <memory>

namespace ft::nn {

class L2NormImpl final : public NormImpl {
 public:
  explicit L2NormImpl(double eps_) : eps(eps_) {}
  at::Tensor forward(const at::Tensor& x) const override;
  double eps;
};

inline Norm l2_norm(double eps) { return std::make_shared<L2NormImpl>(eps); }

}  // namespace ft::nn
