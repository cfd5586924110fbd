// RMSNorm: x / sqrt(mean(x^2) + eps), scaled per feature. Llama's scales by the weight (HF rounds
// the normalised value to the input dtype before the scale, as the fused kernel does); Gemma's
// by (1 + weight), all in float32 with one rounding at the end, as its checkpoints were trained.
#pragma once

#include <ft/nn/norm.h>

#include <cstdint>
#include <memory>

namespace ft::nn {

enum class NormScale {
  Weight,         // x_normed * w, w initialised to ones
  OnePlusWeight,  // x_normed * (1 + w), w initialised to zeros (Gemma)
};

class RMSNormImpl final : public NormImpl {
 public:
  RMSNormImpl(std::int64_t dim, double eps, NormScale scaling = NormScale::Weight);
  at::Tensor forward(const at::Tensor& x) const override;
  double eps;
  NormScale scaling;
};

inline Norm rms_norm(std::int64_t dim, double eps, NormScale scaling = NormScale::Weight) {
  return std::make_shared<RMSNormImpl>(dim, eps, scaling);
}

}  // namespace ft::nn
