#include <ft/nn/parameter_device.h>
#include <ft/nn/tanh_gate.h>

#include <ATen/ATen.h>

namespace ft::nn {

TanhGateImpl::TanhGateImpl(double initial) {
  scale = register_parameter("scale", at::full({1}, initial, parameter_options()));
}

at::Tensor TanhGateImpl::forward(const at::Tensor& x) const { return x * scale.tanh(); }

}  // namespace ft::nn
