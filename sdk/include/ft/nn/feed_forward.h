// The gated MLP of every dense family here: w2(act(w1 x) * w3 x), with act SiLU (SwiGLU) or the
// tanh approximation of GELU (GeGLU). w1/w2/w3 are torchtune's names for HF's gate/down/up
// projections.
#pragma once

#include <ft/nn/feed_forward_block.h>
#include <ft/nn/linear.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

namespace ft::nn {

// SwiGLU (Llama, Qwen, Mistral, Phi) or GeGLU with the tanh approximation of GELU (Gemma's
// hidden_activation "gelu_pytorch_tanh").
enum class MlpActivation { SiLU, GeluTanh };

class FeedForwardImpl final : public FeedForwardBlockImpl {
 public:
  FeedForwardImpl(std::int64_t dim, std::int64_t hidden_dim, MlpActivation activation = MlpActivation::SiLU);
  at::Tensor forward(const at::Tensor& x) const override;
  void initialize(const Fill& fill, double stddev, double residual_stddev) override;
  Linear w1{nullptr}, w2{nullptr}, w3{nullptr};  // gate, down, up
  MlpActivation activation;
};

inline std::shared_ptr<FeedForwardImpl> feed_forward(std::int64_t dim, std::int64_t hidden_dim,
                                                     MlpActivation activation = MlpActivation::SiLU) {
  return std::make_shared<FeedForwardImpl>(dim, hidden_dim, activation);
}

}  // namespace ft::nn
