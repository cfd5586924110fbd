// Llama 3.2 Vision's architecture as values (Hugging Face's MllamaConfig): the tiled image encoder
// and the fusion decoder, read from a config.json. Everything that decides parameter shapes and
// the forward computation.
#pragma once

#include "config_json_reader.h"
#include "decoder_config.h"

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ft_models {

// MllamaVisionConfig: a CLIP-style encoder over each image's tiles, with learned tile and
// position embeddings per aspect ratio, a local transformer, a gated global one, and the outputs
// of some local layers concatenated to the final one.
struct TiledVisionConfig {
  std::int64_t image_size = 0;  // a tile's side in pixels
  std::int64_t patch_size = 0;
  std::int64_t num_channels = 3;
  std::int64_t hidden_size = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_layers = 0;         // the local transformer
  std::int64_t num_global_layers = 0;  // the gated global transformer after it
  std::int64_t intermediate_size = 0;
  std::int64_t max_num_tiles = 0;
  double norm_eps = 1e-5;
  std::vector<std::int64_t> intermediate_layers;  // local layers whose outputs join the final one
  // The tile grids (rows, columns) the tile embeddings are learned for; an image's aspect-ratio
  // id is its grid's index here plus one (0: a padding image).
  std::vector<std::pair<std::int64_t, std::int64_t>> supported_aspect_ratios;
  std::int64_t output_dim = 0;  // vision_output_dim: hidden_size x (1 + intermediate layers)

  // A tile's tokens: its patches and the class token.
  std::int64_t tokens_per_tile() const { return (image_size / patch_size) * (image_size / patch_size) + 1; }
  std::int64_t max_aspect_ratio_id() const { return static_cast<std::int64_t>(supported_aspect_ratios.size()); }
  // The id of a (rows, columns) grid; 0 when the grid is not supported.
  std::int64_t aspect_ratio_id(std::int64_t rows, std::int64_t columns) const;
  // Empty when consistent, else what is wrong.
  std::string problem() const;
};

// MllamaTextConfig: a Llama 3 decoder with cross-attention layers at some indices of its layer
// stack, and extra embedding rows for the image token and its kin.
struct FusionDecoderConfig {
  DecoderConfig text;                                // the self-attention layers; text.num_layers counts only them
  std::vector<std::int64_t> cross_attention_layers;  // indices in the whole stack, ascending
  std::int64_t fusion_vocab_size = 8;                // embedding rows after the vocabulary (Hugging Face's + 8)

  std::int64_t total_layers() const {
    return text.num_layers + static_cast<std::int64_t>(cross_attention_layers.size());
  }
  bool is_cross_attention_layer(std::int64_t index) const;
  std::string problem() const;
};

struct VisionLanguageConfig {
  TiledVisionConfig vision;
  FusionDecoderConfig decoder;
  std::int64_t image_token_index = 0;
  std::string problem() const;
};

// The architecture a MllamaForConditionalGeneration config.json describes; fails naming the key.
VisionLanguageConfig read_mllama_config(const ConfigJsonReader& json);
// Its config.json, with torch_dtype `dtype` (what read_mllama_config reads back).
std::string write_mllama_config(const VisionLanguageConfig& config, c10::ScalarType dtype);

}  // namespace ft_models
