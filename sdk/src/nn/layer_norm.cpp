#include <ft/nn/layer_norm.h>
#include <ft/nn/parameter_device.h>

#include <ATen/ATen.h>

namespace ft::nn {

LayerNormImpl::LayerNormImpl(std::int64_t dim, double eps_) : eps(eps_) {
  scale = register_parameter("scale", at::ones({dim}, parameter_options()));
  bias = register_parameter("bias", at::zeros({dim}, parameter_options()));
}

at::Tensor LayerNormImpl::forward(const at::Tensor& x) const {
  return at::layer_norm(x, {x.size(-1)}, scale, bias, eps);
}

}  // namespace ft::nn
