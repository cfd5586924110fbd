#include <ft/nn/linear.h>
#include <ft/nn/parameter_device.h>
#include <ft/nn/tensor_parallel_ops.h>

#include <ATen/ATen.h>

namespace ft::nn {

LinearImpl::LinearImpl(std::int64_t in_features, std::int64_t out_features, bool with_bias) {
  weight = register_parameter("weight", at::empty({out_features, in_features}, parameter_options()));
  if (with_bias) bias = register_parameter("bias", at::zeros({out_features}, parameter_options()));
}

at::Tensor LinearImpl::forward(const at::Tensor& x) const {
  if (sums_output_over) return rowwise_parallel_linear(x, weight, bias, sums_output_over);
  return at::linear(x, weight, bias);
}

}  // namespace ft::nn
