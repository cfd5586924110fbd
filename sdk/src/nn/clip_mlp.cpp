#include <ft/nn/clip_mlp.h>

#include <ATen/ATen.h>

namespace ft::nn {

ClipMlpImpl::ClipMlpImpl(std::int64_t dim, std::int64_t hidden_dim) {
  w1 = register_module("w1", Linear(dim, hidden_dim, true));
  w2 = register_module("w2", Linear(hidden_dim, dim, true));
}

at::Tensor ClipMlpImpl::forward(const at::Tensor& x) const { return w2->forward(at::gelu(w1->forward(x))); }

void ClipMlpImpl::initialize(const Fill& fill, double stddev, double residual_stddev) {
  fill(w1->weight, stddev);
  fill(w2->weight, residual_stddev);
}

}  // namespace ft::nn
