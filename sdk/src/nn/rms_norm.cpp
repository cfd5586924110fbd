#include <ft/nn/parameter_device.h>
#include <ft/nn/rms_norm.h>
#include <ft/nn/tensor_parallel_ops.h>

#include <ft_kernels/fused_ops.h>

#include <ATen/ATen.h>

namespace ft::nn {

RMSNormImpl::RMSNormImpl(std::int64_t dim, double eps_, NormScale scaling_) : eps(eps_), scaling(scaling_) {
  // At its identity either way: a norm that scales by (1 + weight) starts from zeros.
  const bool adds_one = scaling == NormScale::OnePlusWeight;
  scale = register_parameter("scale",
                             adds_one ? at::zeros({dim}, parameter_options()) : at::ones({dim}, parameter_options()));
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) const {
  const at::Tensor weight = colwise_parallel_input(scale, sums_scale_gradient_over);
  if (scaling == NormScale::Weight) return ft_kernels::rms_norm(x, weight, eps);
  // In float32 the fused kernel computes Gemma's formula as is. In a narrower dtype Gemma keeps
  // float32 up to the final product (1 + weight would lose the weight's low bits in bfloat16).
  if (x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat)
    return ft_kernels::rms_norm(x, weight + 1.0, eps);
  const at::Tensor wide = x.to(at::kFloat);
  const at::Tensor normed = wide * at::rsqrt(wide.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return (normed * (weight.to(at::kFloat) + 1.0)).to(x.scalar_type());
}

}  // namespace ft::nn
