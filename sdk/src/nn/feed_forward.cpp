#include <ft/nn/feed_forward.h>

#include <ft_kernels/fused_ops.h>

#include <ATen/ATen.h>

namespace ft::nn {

FeedForwardImpl::FeedForwardImpl(std::int64_t dim, std::int64_t hidden_dim, MlpActivation activation_)
    : activation(activation_) {
  w1 = register_module("w1", Linear(dim, hidden_dim, false));
  w2 = register_module("w2", Linear(hidden_dim, dim, false));
  w3 = register_module("w3", Linear(dim, hidden_dim, false));
}

at::Tensor FeedForwardImpl::forward(const at::Tensor& x) const {
  if (activation == MlpActivation::SiLU) return w2->forward(ft_kernels::swiglu(w1->forward(x), w3->forward(x)));
  return w2->forward(at::gelu(w1->forward(x), "tanh") * w3->forward(x));
}

}  // namespace ft::nn

namespace ft::nn {

void FeedForwardImpl::initialize(const Fill& fill, double stddev, double residual_stddev) {
  fill(w1->weight, stddev);
  fill(w3->weight, stddev);
  fill(w2->weight, residual_stddev);
}

}  // namespace ft::nn
