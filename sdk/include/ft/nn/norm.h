// What a decoder layer normalises with, as a block a family's builder hands in: RMSNorm (scaled by
// its weight or by 1 + weight), an L2 norm without a weight, or a family's own.
#pragma once

#include <ft/collectives.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <memory>

namespace ft::nn {

class NormImpl : public torch::nn::Module {
 public:
  // Normalises over the last dimension (a head's features for q/k norms).
  virtual at::Tensor forward(const at::Tensor& x) const = 0;
  // The learned per-feature scale, registered as "scale" (torchtune's name; Hugging Face's
  // "weight"); undefined for a norm without one.
  at::Tensor scale;
  // Tensor parallelism: this rank normalises only its own heads (per-head q/k norms), so its
  // gradient of the shared scale is partial and is summed over this group. nullptr: complete.
  std::shared_ptr<ft::Collectives> sums_scale_gradient_over;
};
using Norm = std::shared_ptr<NormImpl>;

}  // namespace ft::nn
