// Llama 4 with images against transformers' Llama4ForConditionalGeneration itself
// (tests/vision_references/make_llama4_references.py, the ctest fixture llama4_references), in
// float64 on a tiny model with every mechanism of the decoder (experts every second layer,
// chunked attention, NoPE layers with temperature tuning) and of the vision tower (2-D rotary
// attention, the class token, the pixel shuffle and its MLP, the projector): the image features,
// logits, loss and every gradient; the published checkpoint's key set; and the errors.
#include <ft/errors.h>
#include <ft/model_image_input.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "build_tree.h"
#include "builtin_plugins.h"
#include "hf_reference_checks.h"
#include "safetensors.h"
#include "test_helpers.h"

namespace {

using ft_checkpointers::SafetensorsFile;
using fttest::error_of;
using fttest::expect_close;

constexpr std::int64_t kImageToken = 255;

std::string reference_dir() { return fttest::build_tree("vision_references/llama4_tiny"); }

const SafetensorsFile& reference_case() {
  static const SafetensorsFile file(reference_dir() + "/case.safetensors");
  return file;
}

std::shared_ptr<ft::Model> model_of(const std::string& keys = "", c10::ScalarType dtype = at::kDouble) {
  ft::Model::Args args;
  args.dtype = dtype;
  const std::string toml =
      "[model]\n_component_ = \"fthost.models.llama4.from_hf_config\"\npath = \"" + reference_dir() + "\"\n" + keys;
  return fttest::builtin_registry().instantiate<ft::Model>(fttest::config_root(toml).table("model"), args);
}

std::shared_ptr<ft::Model> loaded_model() {
  auto model = model_of();
  const SafetensorsFile weights(reference_dir() + "/model.safetensors");
  for (const auto& named : model->hf_parameters()) ft::assign_checkpoint_value(named, weights.tensor(named.name));
  return model;
}

// The reference's tiles as the collate batches them: sample 0's image of 3 tiles, sample 1's of
// 1 tile padded to 3 with zeros.
ft::BatchImages reference_images() {
  const at::Tensor pixels = reference_case().tensor("pixel_values");
  ft::BatchImages images;
  images.images = at::zeros({2, 1, 3, 3, 16, 16}, pixels.options());
  images.images[0][0].copy_(pixels.narrow(0, 0, 3));
  images.images[1][0].narrow(0, 0, 1).copy_(pixels.narrow(0, 3, 1));
  images.tile_count = at::tensor({3, 1}, at::kLong).view({2, 1});
  images.aspect_ratio = at::tensor({2, 1, 1, 1}, at::kLong).view({2, 1, 2});
  return images;
}

ft::ModelInput reference_input() {
  ft::ModelInput input;
  input.tokens = reference_case().tensor("input_ids").clone();
  return input;
}

ft::ModelImageInput& image_input(ft::Model& model) {
  auto* role = static_cast<ft::ModelImageInput*>(model.find_role(ft::ModelImageInput::role));
  if (!role) throw std::runtime_error("the model plays no image-input role");
  return *role;
}

TEST(Llama4Vision, EveryCheckpointTensorIsOneParameter) {
  auto model = model_of();
  const SafetensorsFile weights(reference_dir() + "/model.safetensors");
  fttest::expect_one_parameter_per_checkpoint_tensor(model->hf_parameters(), weights, model->module());
}

TEST(Llama4Vision, LogitsLossAndEveryGradientAreTransformers) {
  auto model = loaded_model();
  for (auto& p : model->module().parameters()) p.requires_grad_(true);  // every gradient, frozen parts too
  const auto& r = reference_case();
  const ft::ModelOutput out = image_input(*model).forward_with_images(reference_input(), reference_images(), {});
  ASSERT_EQ(out.logits.size(), 1u);
  const at::Tensor& logits = out.logits[0];
  expect_close(logits, r.tensor("logits"), "logits", 1e-11);

  const at::Tensor loss = fttest::hf_causal_lm_loss(logits, r.tensor("labels"));
  expect_close(loss.reshape({1}), r.tensor("loss"), "loss", 1e-11);
  loss.backward();
  const auto named = model->hf_parameters();
  EXPECT_EQ(fttest::expect_gradients_close(named, r, 1e-11), static_cast<int>(named.size()));
}

// torchtune's EarlyFusionModel defaults: the decoder and the fusion parameters (the adapter's MLP
// and the projector) train, the encoder is frozen.
TEST(Llama4Vision, TheTrainableSplitIsTorchtunes) {
  const auto trainable = [](ft::Model& model, const std::string& prefix) {
    int yes = 0, no = 0;
    for (const auto& named : model.hf_parameters())
      if (named.name.rfind(prefix, 0) == 0)
        ((named.parts.empty() ? named.tensor : named.parts[0]).requires_grad() ? yes : no)++;
    return std::pair{yes, no};
  };
  auto defaults = model_of();
  EXPECT_EQ(trainable(*defaults, "language_model."), std::pair(45, 0));
  EXPECT_EQ(trainable(*defaults, "vision_model.model."), std::pair(0, 32));
  EXPECT_EQ(trainable(*defaults, "vision_model.patch_embedding"), std::pair(0, 1));
  EXPECT_EQ(trainable(*defaults, "vision_model.vision_adapter."), std::pair(2, 0));
  EXPECT_EQ(trainable(*defaults, "multi_modal_projector."), std::pair(1, 0));
  auto encoder_only = model_of("decoder_trainable = false\nencoder_trainable = true\nfusion_trainable = false\n");
  EXPECT_EQ(trainable(*encoder_only, "language_model."), std::pair(0, 45));
  EXPECT_EQ(trainable(*encoder_only, "vision_model.model."), std::pair(32, 0));
  EXPECT_EQ(trainable(*encoder_only, "vision_model.vision_adapter."), std::pair(0, 2));
  EXPECT_EQ(trainable(*encoder_only, "multi_modal_projector."), std::pair(0, 1));
}

TEST(Llama4Vision, TilesThatDisagreeWithTheImageTokensAreRefusedWithBothCounts) {
  auto model = loaded_model();
  ft::BatchImages images = reference_images();
  images.tile_count = at::tensor({2, 1}, at::kLong).view({2, 1});  // 12 features for 16 image tokens
  const std::string message =
      error_of<ft::Error>([&] { image_input(*model).forward_with_images(reference_input(), images, {}); });
  EXPECT_NE(message.find("12 features for 16 <|patch|> tokens"), std::string::npos) << message;
}

TEST(Llama4Vision, TextAloneIsTheLanguageModel) {
  auto model = loaded_model();
  ft::ModelInput input;
  input.tokens = reference_case()
                     .tensor("input_ids")
                     .clone()
                     .masked_fill_(reference_case().tensor("input_ids").eq(kImageToken), 7);
  EXPECT_NO_THROW(model->forward(input, {}));
}

// A checkpoint of the model writes the vision_config and image tokens transformers wrote.
TEST(Llama4Vision, TheWrittenConfigIsTheOneTransformersWrote) {
  const auto written = nlohmann::json::parse(model_of()->hf_config_json());
  const auto original = nlohmann::json::parse(fttest::read_file(reference_dir() + "/config.json"));
  for (const char* key : {"boi_token_index", "eoi_token_index", "image_token_index"})
    EXPECT_EQ(written.at(key), original.at(key)) << key;
  for (const char* key : {"model_type", "hidden_size", "hidden_act", "num_hidden_layers", "num_attention_heads",
                          "num_channels", "intermediate_size", "image_size", "patch_size", "pixel_shuffle_ratio",
                          "projector_input_dim", "projector_output_dim", "vision_output_dim", "rope_theta", "norm_eps",
                          "vision_feature_select_strategy", "multi_modal_projector_bias"})
    EXPECT_EQ(written.at("vision_config").at(key), original.at("vision_config").at(key)) << "vision_config." << key;
}

TEST(Llama4Vision, AVisionConfigWhoseShapesDisagreeNamesTheKey) {
  const std::string dir = fttest::temp_dir();
  std::string json = fttest::read_file(reference_dir() + "/config.json");
  const std::string from = "\"intermediate_size\": 64";
  ASSERT_NE(json.find(from), std::string::npos);
  json.replace(json.find(from), from.size(), "\"intermediate_size\": 60");
  std::ofstream(dir + "/config.json") << json;
  const std::string message = error_of<ft::Error>([&] {
    fttest::builtin_registry().instantiate<ft::Model>(
        fttest::config_root("[model]\n_component_ = \"fthost.models.llama4.from_hf_config\"\npath = \"" + dir + "\"\n")
            .table("model"));
  });
  EXPECT_NE(message.find("vision_config.hidden_size"), std::string::npos) << message;
  EXPECT_NE(message.find("pixel-shuffled width"), std::string::npos) << message;
}

}  // namespace

// The mfu's image FLOPs: per real tile, 6 x the weights each vision token multiplies through plus
// the layers' attention, from config.json's published architecture (Hugging Face's
// Llama4VisionModel: a patch embedding of channels x patch^2 x hidden, layers of q/k/v/o and a
// two-matrix MLP over the patches and the class token, the pixel-shuffle MLP from the shuffled
// width to projector_input_dim to projector_output_dim, the projector to the text width).
TEST(Llama4Vision, ImageFlopsCountEveryRealTileThroughThePublishedTower) {
  const nlohmann::json config = nlohmann::json::parse(fttest::read_file(reference_dir() + "/config.json"));
  const auto& v = config.at("vision_config");
  const auto get = [&v](const char* key) { return v.at(key).get<double>(); };
  const double h = get("hidden_size"), layers = get("num_hidden_layers"), mlp = get("intermediate_size");
  const double patch = get("patch_size"), ratio = get("pixel_shuffle_ratio");
  const double side = get("image_size") / patch, patches = side * side, tokens = patches + 1;
  const double features = patches * ratio * ratio, shuffled = h / (ratio * ratio);
  const double text_width = config.at("text_config").at("hidden_size").get<double>();
  const double weights =
      patches * get("num_channels") * patch * patch * h + tokens * layers * (4 * h * h + 2 * h * mlp) +
      features * (shuffled * get("projector_input_dim") + get("projector_input_dim") * get("projector_output_dim") +
                  get("vision_output_dim") * text_width);
  const double per_tile = 6 * weights + 12 * layers * h * tokens * tokens;
  auto model = model_of();
  // Sample 0's image of 3 tiles and sample 1's of 1 (padded to 3): 4 real tiles.
  EXPECT_DOUBLE_EQ(image_input(*model).image_training_flops(reference_images()), 4 * per_tile);
}
