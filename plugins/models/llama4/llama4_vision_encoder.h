// Llama 4's vision tower (Hugging Face's Llama4VisionModel): each tile on its own, cut into
// patches embedded by one linear map, a class token appended last, learned positions, a
// transformer whose attention turns each head's pairs by the patch's column and row (2-D rotary
// embedding), and the adapter that folds 2 x 2 neighbouring patches into one feature (pixel
// shuffle) and projects it through a two-layer MLP. The projector to the decoder's width is the
// model's (llama4_vision_model.h).
#pragma once

#include "llama4_vision_config.h"

#include <ft/nn/linear.h>
#include <ft/nn/norm.h>
#include <ft/nn/positional_embedding.h>
#include <ft/nn/transformer_layer.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <vector>

namespace ft_models {

// The 2-D rotary embedding of a tile's tokens in their fixed order (the patches row by row, then
// the class token, which is not turned): pair i of a head, as Hugging Face pairs dimensions
// (2i, 2i + 1), turns by (column + 1) x f_i in the first quarter of the head's dimensions and by
// (row + 1) x f_i in the second, f_i = theta^(-4i / head_dim). The angles are computed in
// float32 as Hugging Face does, in float64 for a float64 model.
class PatchGridRotary final : public ft::nn::PositionalEmbedding {
 public:
  PatchGridRotary(std::int64_t patches_per_side, std::int64_t head_dim, double theta);
  // x: [b, tokens, heads, head_dim]; positions are ignored (the grid fixes them).
  at::Tensor apply(const at::Tensor& x, const at::Tensor& positions) const override;

 private:
  at::Tensor angles(c10::ScalarType dtype) const;  // [tokens, head_dim / 2]
  std::int64_t patches_per_side_, head_dim_;
  double theta_;
  // cos and sin of the angles, computed once: in float32 (every dtype but float64) and float64.
  at::Tensor cos32_, sin32_, cos64_, sin64_;
};

class Llama4VisionEncoderImpl : public torch::nn::Module {
 public:
  explicit Llama4VisionEncoderImpl(const Llama4VisionConfig& config);
  // tiles: [n, channels, image_size, image_size] -> [n, features_per_tile, projector_output_dim]:
  // head(layer(L - 1, ... layer(0, embed(tiles)))). The stages are the sharding units' parts.
  at::Tensor forward(const at::Tensor& tiles) const;
  // The patches embedded, the class token appended, positions added, layernorm_pre:
  // [n, patches + 1, hidden].
  at::Tensor embed(const at::Tensor& tiles) const;
  // Layer `index` over the tokens of every tile.
  at::Tensor layer(std::size_t index, const at::Tensor& x) const;
  // layernorm_post, the class token dropped, the pixel shuffle and its MLP.
  at::Tensor head(const at::Tensor& x) const;

  const Llama4VisionConfig& config() const { return config_; }
  ft::nn::Linear patch_embedding{nullptr};  // [hidden, channels x patch x patch], no bias
  at::Tensor class_embedding;               // [hidden]
  at::Tensor positional_embedding;          // [patches + 1, hidden]
  ft::nn::Norm layernorm_pre, layernorm_post;
  std::vector<ft::nn::TransformerLayer> layers;
  ft::nn::Linear adapter_fc1{nullptr}, adapter_fc2{nullptr};  // the pixel-shuffle MLP, no biases

 private:
  Llama4VisionConfig config_;
};
TORCH_MODULE(Llama4VisionEncoder);

// Hugging Face's pixel shuffle of [n, side x side, dim] patch features (row-major) with `ratio`:
// [n, (side x ratio)^2, dim / ratio^2].
at::Tensor pixel_shuffle(const at::Tensor& x, double ratio);

}  // namespace ft_models
