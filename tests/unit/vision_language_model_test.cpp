// Llama 3.2 Vision's image encoder, projector and fusion decoder against transformers' Mllama
// itself (tests/vision_references/make_mllama_references.py, the ctest fixture
// vision_references), in float64 on a tiny model with every mechanism: tiles padded within an
// image and images padded within a batch, tokens padded to a multiple of 8, gated embeddings and
// layers, intermediate layer outputs, grouped-query cross-attention with q/k norms, text before
// the first image, and text alone. The reference zeroes a text row that sees no image in both
// blocks of a cross-attention layer, as Meta's published model does (docs/parity.md).
#include <ft/errors.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "build_tree.h"
#include "builtin_plugins.h"
#include "hf_reference_checks.h"
#include "safetensors.h"
#include "test_helpers.h"
#include "vision_language_flops.h"
#include "vision_language_model.h"

namespace {

using ft_checkpointers::SafetensorsFile;
using fttest::error_of;
using fttest::expect_close;

// The fixture vision_references (tests/CMakeLists.txt).
std::string reference_dir() { return fttest::build_tree("vision_references/mllama_tiny"); }

const SafetensorsFile& reference_case() {
  static const SafetensorsFile file(reference_dir() + "/case.safetensors");
  return file;
}

ft_models::VisionLanguageConfig tiny_config() {
  const ft::ConfigNode node = fttest::config_root("[model]\npath = \"" + reference_dir() + "\"\n").table("model");
  return ft_models::read_mllama_config(ft_models::ConfigJsonReader(node, reference_dir()));
}

// The tiny model in float64 with the reference's weights.
ft_models::VisionLanguageModel loaded_model() {
  ft_models::VisionLanguageModel model(tiny_config());
  model->to(at::kDouble);
  const SafetensorsFile weights(reference_dir() + "/model.safetensors");
  for (const auto& named : ft_models::mllama_hf_parameters(*model))
    ft::assign_checkpoint_value(named, weights.tensor(named.name));
  return model;
}

ft_models::VisionLanguageInput reference_input() {
  const auto& r = reference_case();
  ft_models::VisionLanguageInput input;
  input.tokens = r.tensor("input_ids").clone();
  input.images = r.tensor("pixel_values").clone();
  input.aspect_ratio_ids = r.tensor("aspect_ratio_ids").clone();
  input.tile_mask = r.tensor("aspect_ratio_mask").clone();
  // Hugging Face's [b, s, images, tiles] mask, each tile widened to its tokens: the layout
  // padded_collate_tiled_images_and_mask builds.
  const at::Tensor per_tile = r.tensor("cross_attention_mask");
  const std::int64_t tokens = tiny_config().vision.tokens_per_tile();
  input.encoder_mask = per_tile.repeat_interleave(tokens, 3).flatten(2).ne(0);
  return input;
}

TEST(Llama32Vision, ReadsTheConfigTransformersWrote) {
  const auto c = tiny_config();
  EXPECT_EQ(c.vision.tokens_per_tile(), 5);
  EXPECT_EQ(c.vision.output_dim, 96);
  EXPECT_EQ(c.vision.max_aspect_ratio_id(), 8);
  EXPECT_EQ(c.vision.aspect_ratio_id(2, 1), 5);
  EXPECT_EQ(c.vision.aspect_ratio_id(3, 3), 0);
  EXPECT_EQ(c.decoder.text.num_layers, 3);  // num_hidden_layers 5, of which 2 cross-attention
  EXPECT_EQ(c.decoder.cross_attention_layers, (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(c.image_token_index, 300);
}

TEST(Llama32Vision, EveryCheckpointTensorIsOneParameter) {
  ft_models::VisionLanguageModel model(tiny_config());
  const SafetensorsFile weights(reference_dir() + "/model.safetensors");
  fttest::expect_one_parameter_per_checkpoint_tensor(ft_models::mllama_hf_parameters(*model), weights, *model);
}

TEST(Llama32Vision, EncoderOutputIsTransformers) {
  auto model = loaded_model();
  const auto input = reference_input();
  const at::Tensor states = model->encoder->forward(input.images, input.aspect_ratio_ids, input.tile_mask);
  expect_close(states, reference_case().tensor("vision_output"), "vision_output", 1e-11);
}

// The published model always sees max_num_tiles tiles per image: a batch padded to fewer (here
// sample 0 alone, whose images have 2 and 1 tiles) gives the same states for the tiles it has.
TEST(Llama32Vision, TheEncoderPadsEveryImageToTheMostTilesItself) {
  auto model = loaded_model();
  const auto input = reference_input();
  const at::Tensor states =
      model->encoder->forward(input.images.narrow(0, 0, 1).narrow(2, 0, 2), input.aspect_ratio_ids.narrow(0, 0, 1),
                              input.tile_mask.narrow(0, 0, 1).narrow(2, 0, 2));
  expect_close(states, reference_case().tensor("vision_output").narrow(0, 0, 1).narrow(2, 0, 2),
               "vision_output of two tiles", 1e-11);
}

TEST(Llama32Vision, LogitsLossAndEveryGradientAreTransformers) {
  auto model = loaded_model();
  const auto& r = reference_case();
  const at::Tensor logits = model->logits(reference_input());
  expect_close(logits, r.tensor("logits"), "logits", 1e-11);

  const at::Tensor loss = fttest::hf_causal_lm_loss(logits, r.tensor("labels"));
  expect_close(loss, r.tensor("loss"), "loss", 1e-11);
  loss.backward();
  const auto named = ft_models::mllama_hf_parameters(*model);
  EXPECT_EQ(fttest::expect_gradients_close(named, r, 1e-11), static_cast<int>(named.size()));
}

TEST(Llama32Vision, TextAloneSkipsTheCrossAttentionLayers) {
  auto model = loaded_model();
  const SafetensorsFile text_only(reference_dir() + "/text_only.safetensors");
  ft_models::VisionLanguageInput input;
  input.tokens = text_only.tensor("input_ids").clone();
  expect_close(model->logits(input), text_only.tensor("logits"), "text-only logits", 1e-11);
}

TEST(Llama32Vision, AMaskOfTheWrongShapeIsRefusedWithBothShapes) {
  auto model = loaded_model();
  auto input = reference_input();
  input.encoder_mask = input.encoder_mask.narrow(2, 0, 7);
  const std::string message = error_of<ft::Error>([&] { model->logits(input); });
  EXPECT_NE(message.find("[2, 12, 40]"), std::string::npos) << message;
  EXPECT_NE(message.find("[2, 12, 7]"), std::string::npos) << message;
}

// The mfu's FLOPs, worked out from config.json's published architecture (Hugging Face's Mllama:
// text layers of q/k/v/o and a SwiGLU MLP, cross-attention layers at cross_attention_layers whose
// keys and values read the image states, lm_head over the vocabulary; a vision tower of local and
// global layers over every tile's tokens, padded to a multiple of 8, of max_num_tiles tiles per
// image; the projector from vision_output_dim).
TEST(Llama32Vision, FlopsFollowThePublishedArchitecture) {
  const auto config = nlohmann::json::parse(fttest::read_file(reference_dir() + "/config.json"));
  const auto& t = config.at("text_config");
  const auto& v = config.at("vision_config");
  const auto get = [](const nlohmann::json& j, const char* key) { return j.at(key).get<double>(); };
  const double h = get(t, "hidden_size"), mlp = get(t, "intermediate_size");
  const double kv_width = h / get(t, "num_attention_heads") * get(t, "num_key_value_heads");
  const double cross = static_cast<double>(t.at("cross_attention_layers").size());
  const double self = get(t, "num_hidden_layers") - cross;
  const double per_position = 6 * (self * (2 * h * h + 2 * h * kv_width + 3 * h * mlp) +
                                   cross * (2 * h * h + 3 * h * mlp) + get(t, "vocab_size") * h);
  const double vh = get(v, "hidden_size"), patch = get(v, "patch_size"), tiles = get(v, "max_num_tiles");
  const double side = get(v, "image_size") / patch, tokens = side * side + 1;
  const double padded_tokens = tiles * (std::ceil(tokens / 8) * 8);
  const double vision_layers = get(v, "num_hidden_layers") + get(v, "num_global_layers");
  const double per_image = 6 * (tiles * (tokens - 1) * get(v, "num_channels") * patch * patch * vh +
                                padded_tokens * vision_layers * (4 * vh * vh + 2 * vh * get(v, "intermediate_size"))) +
                           12 * vision_layers * vh * padded_tokens * padded_tokens;
  const double per_state = 6 * (get(v, "vision_output_dim") * h + cross * 2 * h * kv_width);

  const ft_models::VisionLanguageModel model(tiny_config());
  const ft_models::VisionLanguageFlops flops(*model);
  const std::int64_t seq_len = 10;
  EXPECT_DOUBLE_EQ(flops.per_position(seq_len), per_position + 12 * self * h * seq_len);
  // 2 rows of 2 images (padding ones count: the encoder runs them) of 3 tiles in the batch.
  ft::BatchImages images;
  images.images = at::zeros({2, 2, 3, 3, 28, 28});
  const std::int64_t states = 2 * 3 * static_cast<std::int64_t>(tokens);
  images.encoder_mask = at::zeros({2, seq_len, states}, at::kBool);
  EXPECT_DOUBLE_EQ(flops.of_images(images), 4 * per_image + 2 * static_cast<double>(states) * per_state +
                                                2 * 12 * cross * h * seq_len * static_cast<double>(states));
}

}  // namespace
