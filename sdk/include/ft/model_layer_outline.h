// Model role: a model's layers as `fthost plan` counts their activations, for a model whose forward
// is more than one ft::nn::TransformerDecoder: Llama 3.2 Vision's tiled image encoder and fusion
// decoder, Llama 4's vision tower before its decoder. Each layer is an ft::nn block whose widths
// the plan reads, with the tokens it runs over; the image side's shapes are the model's, as built.
#pragma once

#include <ft/model.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ft {

// What a layer's forward runs over.
enum class LayerTokens : std::uint8_t {
  Text,   // the micro-batch's positions
  Image,  // every image tile's encoder tokens (ImageTiles::encoder_tokens each)
};

struct OutlinedLayer {
  std::string name;  // its sharding unit's ("encoder.layers.3")
  // An ft::nn::TransformerLayerImpl, or an ft::nn::CrossAttentionLayerImpl over the image states
  // (ImageTiles::image_states a tile).
  std::shared_ptr<torch::nn::Module> module;
  LayerTokens tokens = LayerTokens::Text;
  // Its place among ModelLayerCheckpointing's layers; -1: never checkpointed.
  std::int64_t checkpoint_index = -1;
};

// One image as the model's encoder takes it.
struct ImageTiles {
  std::int64_t image_size = 0;     // a tile's side in pixels
  std::int64_t max_num_tiles = 0;  // the most tiles of one image the model takes
  // The encoder runs every image as max_num_tiles tiles (fewer are padded inside it).
  bool every_image_max_tiles = false;
  std::int64_t encoder_tokens = 0;  // a tile's tokens in each encoder layer, padding included
  // The encoder's layers share one additive attention bias, [images, tiles x encoder_tokens,
  // tiles x encoder_tokens] in the model's dtype, kept until their backward.
  bool shared_attention_bias = false;
  // A tile's states the decoder's cross-attention layers read; 0: the tile's features replace
  // text positions instead (early fusion), and no decoder layer reads them apart.
  std::int64_t image_states = 0;
  // Elements a tile keeps for backward outside the layers (the patch embedding and its position
  // embeddings, the projection head), under the parameters' requires_grad as they are now.
  double elements_kept_outside_layers = 0;
  // The features the decoder receives need a gradient (some encoder or projection parameter trains).
  bool features_need_grad = false;
};

class ModelLayerOutline {
 public:
  // Role 8, after ModelImageInput's 7 (model_image_input.h).
  static constexpr ModelRole role = static_cast<ModelRole>(8);
  virtual ~ModelLayerOutline() = default;
  // Every layer in forward order, the image encoder's first.
  virtual std::vector<OutlinedLayer> outlined_layers() = 0;
  virtual ImageTiles image_tiles() const = 0;
  // The text embedding's parameters, the image tokens' rows included.
  virtual std::vector<at::Tensor> text_embedding_parameters() = 0;
};

}  // namespace ft
