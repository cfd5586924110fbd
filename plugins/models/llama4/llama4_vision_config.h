// Llama 4's vision tower as its Hugging Face config.json describes it (Llama4VisionConfig under
// "vision_config", and the top level's image_token_index): read with the checks that keep the
// published model's shapes consistent, and written back.
#pragma once

#include "config_json_reader.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace ft_models {

struct Llama4VisionConfig {
  std::int64_t hidden_size = 1408;
  std::int64_t num_layers = 34;
  std::int64_t num_heads = 16;
  std::int64_t num_channels = 3;
  std::int64_t intermediate_size = 5632;  // the encoder MLP's width, and the pixel-shuffled width
  std::int64_t image_size = 336;          // a tile's side in pixels
  std::int64_t patch_size = 14;
  double pixel_shuffle_ratio = 0.5;
  std::int64_t projector_input_dim = 4096;
  std::int64_t projector_output_dim = 4096;
  std::int64_t vision_output_dim = 4096;
  double rope_theta = 10000;
  // The text token each image feature replaces (<|patch|>), and those around an image
  // (<|image_start|>, <|image_end|>), which the model does not read but config.json carries.
  std::int64_t image_token_index = 200092;
  std::int64_t boi_token_index = 200080;
  std::int64_t eoi_token_index = 200081;

  std::int64_t patches_per_side() const { return image_size / patch_size; }
  // The features one tile gives the decoder: its patches after the pixel shuffle.
  std::int64_t features_per_tile() const;
  // The width of a pixel-shuffled patch feature.
  std::int64_t shuffled_dim() const;
  // Empty when the shapes fit together, else what does not.
  std::string problem() const;
};

// Reads `vision_config` of a Llama4ForConditionalGeneration config.json (`json` is the top level).
Llama4VisionConfig read_llama4_vision_config(const ConfigJsonReader& json);
// Adds vision_config and the image token keys to a written Llama 4 config.json.
void write_llama4_vision_config(const Llama4VisionConfig& config, nlohmann::ordered_json& top_level);

}  // namespace ft_models
