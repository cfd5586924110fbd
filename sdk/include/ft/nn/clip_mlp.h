// The two-layer MLP of CLIP-style encoders: w2(gelu(w1 x + b1)) + b2, GELU exact (erf), both
// projections with biases (Llama 3.2 Vision's encoder layers; Hugging Face's fc1 / fc2).
#pragma once

#include <ft/nn/feed_forward_block.h>
#include <ft/nn/linear.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>

namespace ft::nn {

class ClipMlpImpl final : public FeedForwardBlockImpl {
 public:
  ClipMlpImpl(std::int64_t dim, std::int64_t hidden_dim);
  at::Tensor forward(const at::Tensor& x) const override;
  void initialize(const Fill& fill, double stddev, double residual_stddev) override;
  Linear w1{nullptr}, w2{nullptr};  // fc1, fc2
};

inline std::shared_ptr<ClipMlpImpl> clip_mlp(std::int64_t dim, std::int64_t hidden_dim) {
  return std::make_shared<ClipMlpImpl>(dim, hidden_dim);
}

}  // namespace ft::nn
