#include <ft/nn/l2_norm.h>

#include <ATen/ATen.h>

namespace ft::nn {

at::Tensor L2NormImpl::forward(const at::Tensor& x) const {
  // float32 for the half types, as Hugging Face computes it; a float64 model stays float64.
  const at::Tensor wide = x.to(x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat);
  return (wide * at::rsqrt(wide.pow(2).mean(-1, /*keepdim=*/true) + eps)).to(x.scalar_type());
}

}  // namespace ft::nn
