// The gated MLP of every family here: w2(act(w1 x) * w3 x), with act SiLU (SwiGLU) or the tanh
// approximation of GELU (GeGLU). w1/w2/w3 are torchtune's names for HF's gate/down/up projections.
#pragma once

#include <ft/nn/decoder_config.h>
#include <ft/nn/linear.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

namespace ft::nn {

class FeedForwardImpl : public torch::nn::Module {
 public:
  FeedForwardImpl(std::int64_t dim, std::int64_t hidden_dim, MlpActivation activation = MlpActivation::SiLU);
  at::Tensor forward(const at::Tensor& x) const;
  Linear w1{nullptr}, w2{nullptr}, w3{nullptr};  // gate, down, up
  MlpActivation activation;
};
TORCH_MODULE(FeedForward);

}  // namespace ft::nn
