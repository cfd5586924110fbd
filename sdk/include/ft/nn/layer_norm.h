// LayerNorm: (x - mean) / sqrt(variance + eps) over the last dimension, scaled and shifted per
// feature (the CLIP-style vision encoders: Llama 3.2 Vision's tile encoder). The scale is
// registered as "scale" like every Norm's, the shift as "bias".
#pragma once

#include <ft/nn/norm.h>

#include <cstdint>
#include <memory>

namespace ft::nn {

class LayerNormImpl final : public NormImpl {
 public:
  LayerNormImpl(std::int64_t dim, double eps);
  at::Tensor forward(const at::Tensor& x) const override;
  at::Tensor bias;
  double eps;
};

inline Norm layer_norm(std::int64_t dim, double eps) { return std::make_shared<LayerNormImpl>(dim, eps); }

}  // namespace ft::nn
