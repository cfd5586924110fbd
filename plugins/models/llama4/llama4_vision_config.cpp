#include "llama4_vision_config.h"

#include <cmath>

namespace ft_models {

std::int64_t Llama4VisionConfig::features_per_tile() const {
  const double side = static_cast<double>(patches_per_side()) * pixel_shuffle_ratio;
  return static_cast<std::int64_t>(side * side);
}

std::int64_t Llama4VisionConfig::shuffled_dim() const {
  return static_cast<std::int64_t>(static_cast<double>(hidden_size) / (pixel_shuffle_ratio * pixel_shuffle_ratio));
}

std::string Llama4VisionConfig::problem() const {
  if (hidden_size % num_heads != 0) return "hidden_size must be a multiple of num_attention_heads";
  if ((hidden_size / num_heads) % 4 != 0)
    return "each head's width (hidden_size / num_attention_heads) must be a multiple of 4: the rotary embedding "
           "turns half of its pairs by the patch's column and half by its row";
  if (image_size % patch_size != 0) return "image_size must be a multiple of patch_size";
  // Hugging Face's pixel shuffle folds ratio x ratio neighbouring patches into one feature: the
  // grid and the width must divide exactly.
  const double side = static_cast<double>(patches_per_side()) * pixel_shuffle_ratio;
  const double width = static_cast<double>(hidden_size) / (pixel_shuffle_ratio * pixel_shuffle_ratio);
  if (!(pixel_shuffle_ratio > 0 && pixel_shuffle_ratio <= 1) || side != std::floor(side) || width != std::floor(width))
    return "pixel_shuffle_ratio must fold the " + std::to_string(patches_per_side()) +
           " patches per side and hidden_size into whole numbers";
  if (intermediate_size != shuffled_dim())
    return "intermediate_size (" + std::to_string(intermediate_size) +
           ") must be the pixel-shuffled width hidden_size / pixel_shuffle_ratio^2 = " +
           std::to_string(shuffled_dim()) +
           ": Hugging Face's adapter reads the shuffled features with a layer of that input width";
  if (projector_input_dim != projector_output_dim)
    return "projector_input_dim and projector_output_dim must be equal: the adapter's second layer maps "
           "projector_output_dim to itself after the first made projector_input_dim";
  if (vision_output_dim != projector_output_dim)
    return "vision_output_dim must equal projector_output_dim: the projector reads the adapter's output";
  return {};
}

Llama4VisionConfig read_llama4_vision_config(const ConfigJsonReader& top) {
  Llama4VisionConfig c;
  c.image_token_index = top.size("image_token_index", 200092);
  c.boi_token_index = top.size("boi_token_index", 200080);
  c.eoi_token_index = top.size("eoi_token_index", 200081);
  if (!top.has("vision_config")) top.fail("vision_config", "required: the vision tower's shapes");
  const ConfigJsonReader json = top.nested("vision_config");
  const std::string act = json.string("hidden_act", "gelu");
  if (act != "gelu") json.fail("hidden_act", "\"" + act + "\": Llama 4's vision tower computes the exact GELU");
  c.hidden_size = json.size("hidden_size", 768);
  c.num_layers = json.size("num_hidden_layers", 34);
  c.num_heads = json.size("num_attention_heads", 16);
  c.num_channels = json.size("num_channels", 3);
  c.intermediate_size = json.size("intermediate_size", 5632);
  c.image_size = json.size("image_size", 448);
  c.patch_size = json.size("patch_size", 14);
  c.pixel_shuffle_ratio = json.number("pixel_shuffle_ratio", 0.5);
  c.projector_input_dim = json.size("projector_input_dim", 4096);
  c.projector_output_dim = json.size("projector_output_dim", 4096);
  c.vision_output_dim = json.size("vision_output_dim", 7680);
  c.rope_theta = json.number("rope_theta", 10000);
  if (!(c.rope_theta > 0)) json.fail("rope_theta", "must be positive");
  // What Hugging Face's model computes whatever these say, refused where they would mean more.
  if (json.boolean("multi_modal_projector_bias", false))
    json.fail("multi_modal_projector_bias", "true: Llama 4's projector has no bias");
  if (json.has("vision_feature_layer") && json.integer("vision_feature_layer") != -1)
    json.fail("vision_feature_layer", "only -1 (the last layer's output) is supported, as Hugging Face computes");
  const std::string strategy = json.string("vision_feature_select_strategy", "default");
  if (strategy != "default" && strategy != "full")
    json.fail("vision_feature_select_strategy", "\"" + strategy + "\": expected default or full");
  for (const char* dropout : {"attention_dropout", "projector_dropout"})
    if (json.has(dropout) && json.number(dropout) != 0) json.fail(dropout, "dropout is not supported (0)");
  if (std::string problem = c.problem(); !problem.empty()) json.fail("hidden_size", problem);
  return c;
}

void write_llama4_vision_config(const Llama4VisionConfig& c, nlohmann::ordered_json& top) {
  nlohmann::ordered_json v;
  v["model_type"] = "llama4_vision_model";
  v["hidden_size"] = c.hidden_size;
  v["hidden_act"] = "gelu";
  v["num_hidden_layers"] = c.num_layers;
  v["num_attention_heads"] = c.num_heads;
  v["num_channels"] = c.num_channels;
  v["intermediate_size"] = c.intermediate_size;
  v["vision_output_dim"] = c.vision_output_dim;
  v["image_size"] = c.image_size;
  v["patch_size"] = c.patch_size;
  v["norm_eps"] = 1e-5;
  v["vision_feature_layer"] = -1;
  v["vision_feature_select_strategy"] = "default";
  v["pixel_shuffle_ratio"] = c.pixel_shuffle_ratio;
  v["projector_input_dim"] = c.projector_input_dim;
  v["projector_output_dim"] = c.projector_output_dim;
  v["multi_modal_projector_bias"] = false;
  v["projector_dropout"] = 0.0;
  v["attention_dropout"] = 0.0;
  v["rope_theta"] = c.rope_theta;
  top["vision_config"] = v;
  top["boi_token_index"] = c.boi_token_index;
  top["eoi_token_index"] = c.eoi_token_index;
  top["image_token_index"] = c.image_token_index;
}

}  // namespace ft_models
