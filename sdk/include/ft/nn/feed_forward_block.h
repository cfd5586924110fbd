// What a decoder layer transforms each position with after attention, as a block the family's
// builder hands in: the gated dense MLP (feed_forward.h) today, a mixture of experts or a
// family's own tomorrow.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <functional>
#include <memory>

namespace ft::nn {

class FeedForwardBlockImpl : public torch::nn::Module {
 public:
  // x: [b, s, dim] -> [b, s, dim].
  virtual at::Tensor forward(const at::Tensor& x) const = 0;
  // Random initialisation (initialize_weights): fill(tensor, stddev) draws each weight from the
  // decoder's one generator, in the block's fixed order; `residual_stddev` is for the projections
  // that write into the residual stream.
  using Fill = std::function<void(at::Tensor&, double stddev)>;
  virtual void initialize(const Fill& fill, double stddev, double residual_stddev) = 0;
};
using FeedForwardBlock = std::shared_ptr<FeedForwardBlockImpl>;

}  // namespace ft::nn
