#include "vision_language_config.h"

#include "family_model.h"

#include <algorithm>

namespace ft_models {

std::int64_t TiledVisionConfig::aspect_ratio_id(std::int64_t rows, std::int64_t columns) const {
  const auto it = std::find(supported_aspect_ratios.begin(), supported_aspect_ratios.end(), std::pair{rows, columns});
  return it == supported_aspect_ratios.end() ? 0 : (it - supported_aspect_ratios.begin()) + 1;
}

std::string TiledVisionConfig::problem() const {
  if (image_size <= 0 || patch_size <= 0 || num_channels <= 0 || hidden_size <= 0 || num_heads <= 0 ||
      num_layers <= 0 || num_global_layers <= 0 || intermediate_size <= 0 || max_num_tiles <= 0)
    return "vision sizes must be positive";
  if (image_size % patch_size != 0)
    return "image_size (" + std::to_string(image_size) + ") must be a multiple of patch_size (" +
           std::to_string(patch_size) + ")";
  if (hidden_size % num_heads != 0) return "hidden_size must be a multiple of attention_heads";
  for (const std::int64_t layer : intermediate_layers)
    if (layer < 0 || layer >= num_layers)
      return "intermediate_layers_indices: layer " + std::to_string(layer) + " is not one of the " +
             std::to_string(num_layers) + " local layers";
  if (supported_aspect_ratios.empty()) return "supported_aspect_ratios is empty";
  for (const auto& [rows, columns] : supported_aspect_ratios)
    if (rows <= 0 || columns <= 0 || rows * columns > max_num_tiles)
      return "supported_aspect_ratios: " + std::to_string(rows) + "x" + std::to_string(columns) +
             " is not a grid of at most max_num_tiles (" + std::to_string(max_num_tiles) + ") tiles";
  const auto expected = hidden_size * (1 + static_cast<std::int64_t>(intermediate_layers.size()));
  if (output_dim != expected)
    return "vision_output_dim (" + std::to_string(output_dim) +
           ") must be hidden_size x (1 + intermediate layers) = " + std::to_string(expected);
  return {};
}

bool FusionDecoderConfig::is_cross_attention_layer(std::int64_t index) const {
  return std::binary_search(cross_attention_layers.begin(), cross_attention_layers.end(), index);
}

std::string FusionDecoderConfig::problem() const {
  if (std::string problem = text.problem(); !problem.empty()) return problem;
  if (!std::is_sorted(cross_attention_layers.begin(), cross_attention_layers.end()) ||
      std::adjacent_find(cross_attention_layers.begin(), cross_attention_layers.end()) != cross_attention_layers.end())
    return "cross_attention_layers must be ascending without repeats";
  for (const std::int64_t layer : cross_attention_layers)
    if (layer < 0 || layer >= total_layers())
      return "cross_attention_layers: " + std::to_string(layer) + " is not one of the " +
             std::to_string(total_layers()) + " layers";
  if (fusion_vocab_size < 0) return "the fusion vocabulary cannot be negative";
  return {};
}

std::string VisionLanguageConfig::problem() const {
  if (std::string problem = vision.problem(); !problem.empty()) return problem;
  if (std::string problem = decoder.problem(); !problem.empty()) return problem;
  if (image_token_index < 0 || image_token_index >= decoder.text.vocab_size + decoder.fusion_vocab_size)
    return "image_token_index (" + std::to_string(image_token_index) + ") is not a row of the embedding (" +
           std::to_string(decoder.text.vocab_size + decoder.fusion_vocab_size) + ")";
  return {};
}

namespace {

std::vector<std::int64_t> integer_list(const ConfigJsonReader& json, const std::string& field) {
  const auto& value = json.at(field);
  if (!value.is_array()) json.fail(field, "expected a list of integers, got " + value.dump());
  std::vector<std::int64_t> out;
  for (const auto& item : value) {
    if (!item.is_number_integer()) json.fail(field, "expected a list of integers, got " + value.dump());
    out.push_back(item.get<std::int64_t>());
  }
  return out;
}

TiledVisionConfig read_vision(const ConfigJsonReader& json) {
  TiledVisionConfig v;
  const std::string act = json.string("hidden_act", "gelu");
  if (act != "gelu") json.fail("hidden_act", "\"" + act + "\" is not supported for the vision encoder (gelu)");
  v.hidden_size = json.size("hidden_size", 1280);
  // MllamaVisionConfig stores num_attention_heads as attention_heads, which its config.json holds.
  v.num_heads = json.has("attention_heads") ? json.size("attention_heads") : json.size("num_attention_heads", 16);
  v.num_layers = json.size("num_hidden_layers", 32);
  v.num_global_layers = json.size("num_global_layers", 8);
  v.num_channels = json.size("num_channels", 3);
  v.intermediate_size = json.size("intermediate_size", 5120);
  v.output_dim = json.size("vision_output_dim", 7680);
  v.image_size = json.size("image_size", 448);
  v.patch_size = json.size("patch_size", 14);
  v.norm_eps = json.number("norm_eps", 1e-5);
  if (!(v.norm_eps > 0)) json.fail("norm_eps", "must be positive");
  v.max_num_tiles = json.size("max_num_tiles", 4);
  v.intermediate_layers = json.has("intermediate_layers_indices") ? integer_list(json, "intermediate_layers_indices")
                                                                  : std::vector<std::int64_t>{3, 7, 15, 23, 30};
  if (json.has("supported_aspect_ratios")) {
    const auto& value = json.at("supported_aspect_ratios");
    const auto bad = [&] {
      json.fail("supported_aspect_ratios", "expected [[rows, columns], ...], got " + value.dump());
    };
    if (!value.is_array()) bad();
    for (const auto& grid : value) {
      if (!grid.is_array() || grid.size() != 2 || !grid[0].is_number_integer() || !grid[1].is_number_integer()) bad();
      v.supported_aspect_ratios.emplace_back(grid[0].get<std::int64_t>(), grid[1].get<std::int64_t>());
    }
  } else {
    // Hugging Face's default, defined for four tiles only.
    if (v.max_num_tiles != 4)
      json.fail("supported_aspect_ratios", "required when max_num_tiles is not 4 (Hugging Face's default is for 4)");
    v.supported_aspect_ratios = {{1, 1}, {1, 2}, {1, 3}, {1, 4}, {2, 1}, {2, 2}, {3, 1}, {4, 1}};
  }
  return v;
}

FusionDecoderConfig read_text(const ConfigJsonReader& json) {
  FamilyHf family;
  family.model_type = "mllama_text_model";
  family.absent_rms_norm_eps = 1e-5;
  FusionDecoderConfig d;
  d.cross_attention_layers = json.has("cross_attention_layers")
                                 ? integer_list(json, "cross_attention_layers")
                                 : std::vector<std::int64_t>{3, 8, 13, 18, 23, 28, 33, 38};
  d.text = read_hf_config(json, family);
  // num_hidden_layers counts the cross-attention layers too.
  const auto cross = static_cast<std::int64_t>(d.cross_attention_layers.size());
  if (d.text.num_layers <= cross)
    json.fail("num_hidden_layers", "must exceed the number of cross_attention_layers (" + std::to_string(cross) + ")");
  d.text.num_layers -= cross;
  return d;
}

}  // namespace

VisionLanguageConfig read_mllama_config(const ConfigJsonReader& json) {
  const std::string model_type = json.string("model_type", "");
  if (model_type != "mllama") json.fail("model_type", "expected \"mllama\", got \"" + model_type + "\"");
  VisionLanguageConfig c;
  c.vision = read_vision(json.nested("vision_config"));
  c.decoder = read_text(json.nested("text_config"));
  c.image_token_index = json.integer("image_token_index", 128256);
  if (std::string problem = c.problem(); !problem.empty()) json.fail("config", problem);
  return c;
}

std::string write_mllama_config(const VisionLanguageConfig& c, c10::ScalarType dtype) {
  FamilyHf text_family;
  text_family.model_type = "mllama_text_model";
  DecoderConfig text = c.decoder.text;
  text.num_layers = c.decoder.total_layers();
  nlohmann::ordered_json text_json = nlohmann::ordered_json::parse(write_hf_config(text, text_family, dtype));
  text_json.erase("architectures");
  text_json.erase("head_dim");  // MllamaTextConfig derives it
  text_json["cross_attention_layers"] = c.decoder.cross_attention_layers;
  const TiledVisionConfig& v = c.vision;
  nlohmann::ordered_json vision;
  vision["model_type"] = "mllama_vision_model";
  vision["hidden_size"] = v.hidden_size;
  vision["hidden_act"] = "gelu";
  vision["num_hidden_layers"] = v.num_layers;
  vision["num_global_layers"] = v.num_global_layers;
  vision["attention_heads"] = v.num_heads;
  vision["num_channels"] = v.num_channels;
  vision["intermediate_size"] = v.intermediate_size;
  vision["vision_output_dim"] = v.output_dim;
  vision["image_size"] = v.image_size;
  vision["patch_size"] = v.patch_size;
  vision["norm_eps"] = v.norm_eps;
  vision["max_num_tiles"] = v.max_num_tiles;
  vision["intermediate_layers_indices"] = v.intermediate_layers;
  nlohmann::ordered_json ratios = nlohmann::ordered_json::array();
  for (const auto& [rows, columns] : v.supported_aspect_ratios) ratios.push_back({rows, columns});
  vision["supported_aspect_ratios"] = ratios;
  nlohmann::ordered_json j;
  j["architectures"] = {"MllamaForConditionalGeneration"};
  j["model_type"] = "mllama";
  j["image_token_index"] = c.image_token_index;
  j["text_config"] = text_json;
  j["vision_config"] = vision;
  j["torch_dtype"] = text_json["torch_dtype"];
  return j.dump(2) + "\n";
}

}  // namespace ft_models
