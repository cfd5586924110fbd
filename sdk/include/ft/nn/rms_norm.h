// RMSNorm: x / sqrt(mean(x^2) + eps), scaled per feature. Llama's scales by the weight (HF rounds
// the normalised value to the input dtype before the scale, as the fused kernel does); Gemma's
// by (1 + weight), all in float32 with one rounding at the end, as its checkpoints were trained.
#pragma once

#include <ft/collectives.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>

namespace ft::nn {

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(std::int64_t dim, double eps, bool adds_one = false);
  // Normalises over the last dimension (a head's features for Qwen 3's q/k norms).
  at::Tensor forward(const at::Tensor& x) const;
  at::Tensor scale;  // registered as "scale" (torchtune's name); HF calls it "weight"
  double eps;
  bool adds_one;
  // Tensor parallelism: this rank normalises only its own heads (Qwen 3's q/k norms), so its
  // gradient of the shared scale is partial and is summed over this group. nullptr: complete.
  std::shared_ptr<ft::Collectives> sums_scale_gradient_over;
};
TORCH_MODULE(RMSNorm);

}  // namespace ft::nn
