#include <ft/nn/grouped_experts.h>
#include <ft/nn/parameter_device.h>

#include <ft_kernels/fused_ops.h>
#include <ft_kernels/grouped_mm.h>

#include <ATen/ATen.h>

namespace ft::nn {

GroupedExpertsImpl::GroupedExpertsImpl(std::int64_t num_experts, std::int64_t dim, std::int64_t hidden_dim,
                                       MlpActivation activation_)
    : activation(activation_) {
  w1 = register_parameter("w1", at::empty({num_experts, hidden_dim, dim}, parameter_options()));
  w2 = register_parameter("w2", at::empty({num_experts, dim, hidden_dim}, parameter_options()));
  w3 = register_parameter("w3", at::empty({num_experts, hidden_dim, dim}, parameter_options()));
}

at::Tensor GroupedExpertsImpl::forward(const at::Tensor& x, const at::Tensor& rows_per_expert) const {
  const at::Tensor gate = ft_kernels::grouped_mm(x, w1, rows_per_expert);
  const at::Tensor up = ft_kernels::grouped_mm(x, w3, rows_per_expert);
  const at::Tensor hidden =
      activation == MlpActivation::SiLU ? ft_kernels::swiglu(gate, up) : at::gelu(gate, "tanh") * up;
  return ft_kernels::grouped_mm(hidden, w2, rows_per_expert);
}

}  // namespace ft::nn
