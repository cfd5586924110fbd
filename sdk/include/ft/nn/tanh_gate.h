// A learned scalar gate on a block's output before its residual add: x * tanh(gate) (torchtune's
// TanhGate; Llama 3.2 Vision's gated encoder layers and its cross-attention layers). It fills a
// transformer layer's post-block slots (sa_scale, mlp_scale), which take a Norm, so it is one;
// its single parameter is registered as "scale", torchtune's name. Starting at 0 closes the block:
// a fusion layer added to a pretrained decoder changes nothing until it is trained.
#pragma once

#include <ft/nn/norm.h>

#include <memory>

namespace ft::nn {

class TanhGateImpl final : public NormImpl {
 public:
  explicit TanhGateImpl(double initial);
  at::Tensor forward(const at::Tensor& x) const override;
};

inline Norm tanh_gate(double initial = 0.0) { return std::make_shared<TanhGateImpl>(initial); }

}  // namespace ft::nn
