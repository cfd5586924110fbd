// Llama 3.2 Vision's image encoder (Hugging Face's MllamaVisionModel, Meta's VisionEncoder): each
// tile cut into patches, embedded with learned class, position and per-aspect-ratio tile
// embeddings, run through a local transformer and a gated global one over all of an image's
// tiles at once, with some local layers' outputs concatenated to the final one.
#pragma once

#include "layer_runner.h"
#include "vision_language_config.h"

#include <ft/nn/norm.h>
#include <ft/nn/transformer_layer.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <vector>

namespace ft_models {

// A learned embedding per aspect-ratio id, added to every token of each tile through a tanh
// gate (Hugging Face's MllamaPrecomputedAspectRatioEmbedding).
class TileEmbeddingImpl : public torch::nn::Module {
 public:
  TileEmbeddingImpl(std::int64_t max_aspect_ratio_id, std::int64_t max_num_tiles, std::int64_t dim);
  // x: [images, tiles, tokens, dim]; aspect_ratio_ids: [images].
  at::Tensor forward(const at::Tensor& x, const at::Tensor& aspect_ratio_ids) const;
  at::Tensor embedding;  // [max id + 1, tiles x dim]
  at::Tensor gate;       // [1]
};
TORCH_MODULE(TileEmbedding);

class TiledVisionEncoderImpl : public torch::nn::Module {
 public:
  explicit TiledVisionEncoderImpl(const TiledVisionConfig& config);
  // pixels: [batch, images, tiles, channels, size, size]; aspect_ratio_ids: [batch, images]
  // int64 (0: a padding image); tile_mask: [batch, images, tiles], nonzero for real tiles. Fewer
  // than max_num_tiles tiles are padded to them inside (the output does not depend on how far a
  // batch was padded). Returns [batch, images, tiles, tokens_per_tile, output_dim].
  at::Tensor forward(const at::Tensor& pixels, const at::Tensor& aspect_ratio_ids, const at::Tensor& tile_mask) const;

  const TiledVisionConfig& config() const { return config_; }
  at::Tensor patch_embedding;  // [hidden, channels, patch, patch], a convolution without bias
  at::Tensor class_embedding;  // [hidden]
  // The position embedding, shared by every tile, and a learned one per aspect ratio and tile,
  // mixed by one gate: (1 - tanh g) x shared + tanh g x per-tile.
  at::Tensor position_embedding;       // [tokens_per_tile, hidden]
  at::Tensor position_gate;            // [1]
  at::Tensor tile_position_embedding;  // [max id + 1, tiles x tokens_per_tile x hidden]
  TileEmbedding pre_tile_embedding{nullptr}, post_tile_embedding{nullptr};
  ft::nn::Norm layernorm_pre, layernorm_post;
  std::vector<ft::nn::TransformerLayer> layers;         // local
  std::vector<ft::nn::TransformerLayer> global_layers;  // gated
  // Units 0 .. layers + global_layers - 1 of the model's runner; nullptr: run plainly.
  std::shared_ptr<const LayerRunner> runner;

 private:
  at::Tensor run_layer(std::size_t unit, const ft::nn::TransformerLayer& layer, const at::Tensor& x,
                       const at::Tensor& bias) const;
  TiledVisionConfig config_;
};
TORCH_MODULE(TiledVisionEncoder);

// The additive attention bias over an image's padded tokens, [images, tiles x padded, tiles x
// padded] in `dtype`: the lowest value where both tokens are padding (a padding tile's, or one of
// the tokens each tile is padded with to a multiple of 8), else 0. Meta's and Hugging Face's
// mask: real tokens see padding, padding sees real tokens.
at::Tensor tile_padding_bias(const at::Tensor& tile_mask, std::int64_t tokens_per_tile, std::int64_t padded_tokens,
                             c10::ScalarType dtype);

}  // namespace ft_models
