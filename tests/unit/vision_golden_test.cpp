// Llama 3.2 Vision trained end to end by the fthost binary against its golden trajectory
// (tests/vision_references/make_vision_golden.py, the ctest fixture vision_golden): torchtune's
// own multimodal_chat_dataset, llama3_2_vision_transform and padded_collate_tiled_images_and_mask
// feeding transformers' Mllama (with Meta's masking of text rows that see no image) under
// torchtune's llama3_2_vision_11b trainable split and the recipe's loss and AdamW. The data path
// is checked first against torchtune's batch; then every step's loss and token count and the
// final weights, on one rank and on two FSDP ranks; the frozen parts bitwise unchanged.
#include <ft/collate.h>
#include <ft/dataset.h>
#include <ft/errors.h>
#include <ft/tokenizer.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "build_tree.h"
#include "builtin_plugins.h"
#include "jsonl.h"
#include "safetensors.h"
#include "test_helpers.h"

namespace {

using ft_checkpointers::SafetensorsFile;
using json = nlohmann::json;

// The build tree's vision_references/vision_golden (tests/CMakeLists.txt).
std::string golden_dir() { return fttest::build_tree("vision_references/vision_golden"); }

std::string tokenizer_toml() {
  return "[tokenizer]\n_component_ = \"torchtune.models.llama3_2_vision.llama3_2_vision_transform\"\n"
         "path = \"" +
         fttest::fixtures_dir() + "/torchtune_assets/tiktoken_small.model\"\nmax_seq_len = 256\nimage_size = 28\n\n";
}

std::string dataset_toml(const std::string& image_dir) {
  return "[dataset]\n_component_ = \"torchtune.datasets.multimodal.multimodal_chat_dataset\"\n"
         "source = \"json\"\ndata_files = \"" +
         golden_dir() + "/data.json\"\nimage_dir = \"" + image_dir + "\"\nimage_tag = \"<image>\"\n\n";
}

// The golden's run: 4 steps of 2 samples (per rank: 2 / ranks), the recipe's loss, AdamW.
std::string run_config(const std::string& out, int batch_size) {
  const std::string g = golden_dir();
  return "output_dir = \"" + out +
         "\"\nseed = 0\nepochs = 1\nmax_steps_per_epoch = 4\nbatch_size = " + std::to_string(batch_size) +
         "\ngradient_accumulation_steps = 1\nclip_grad_norm = \"inf\"\nshuffle = false\ndtype = \"fp32\"\n"
         "num_threads = 1\ncollate_fn = \"torchtune.data.padded_collate_tiled_images_and_mask\"\n\n"
         "[model]\n_component_ = \"fthost.models.llama3_2_vision.from_hf_config\"\npath = \"" +
         g +
         "/mllama_tiny\"\n"
         // torchtune's llama3_2_vision_11b defaults: the language model frozen.
         "decoder_trainable = false\nencoder_trainable = true\nfusion_trainable = true\n\n" +
         tokenizer_toml() +
         "[checkpointer]\n_component_ = \"torchtune.training.FullModelHFCheckpointer\"\ncheckpoint_dir = \"" + g +
         "/mllama_tiny\"\ncheckpoint_files = [\"model.safetensors\"]\nmodel_type = \"LLAMA3_VISION\"\noutput_dir = \"" +
         out + "\"\n\n" + dataset_toml(g + "/images") +
         "[loss]\n_component_ = \"torchtune.modules.loss.CEWithChunkedOutputLoss\"\n\n"
         "[optimizer]\n_component_ = \"torch.optim.AdamW\"\nlr = 2e-3\nbetas = [0.9, 0.999]\neps = 1e-8\n"
         "weight_decay = 0.01\n\n"
         "[metric_logger]\n_component_ = \"torchtune.training.metric_logging.DiskLogger\"\nlog_dir = \"" +
         out + "/logs\"\nfilename = \"metrics.jsonl\"\noutput_fmt = \"jsonl\"\n";
}

void expect_golden_trajectory(const std::string& out) {
  const auto expected = fttest::read_jsonl(golden_dir() + "/expected.jsonl");
  const auto logged = fttest::read_jsonl(out + "/logs/metrics.jsonl");
  ASSERT_EQ(logged.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    EXPECT_EQ(logged[i].at("num_tokens").get<std::int64_t>(), expected[i].at("tokens").get<std::int64_t>());
    const double loss = expected[i].at("loss").get<double>();
    // float32 steps: the golden's own float64 rerun moves its losses by 8e-8 (relative).
    EXPECT_NEAR(logged[i].at("loss").get<double>(), loss, 1e-6 * loss);
  }
  const SafetensorsFile initial(golden_dir() + "/mllama_tiny/model.safetensors");
  const SafetensorsFile final_golden(golden_dir() + "/final.safetensors");
  const SafetensorsFile trained(out + "/epoch_0/model.safetensors");
  std::ifstream frozen_file(golden_dir() + "/initial_equals_final.json");
  const json frozen = json::parse(frozen_file);
  std::set<std::string> unchanged;
  for (const auto& name : frozen.at("unchanged")) unchanged.insert(name.get<std::string>());
  ASSERT_EQ(trained.records().size(), final_golden.records().size());
  for (const auto& record : final_golden.records()) {
    SCOPED_TRACE(record.name);
    const at::Tensor mine = trained.tensor(record.name), theirs = final_golden.tensor(record),
                     before = initial.tensor(record.name);
    if (unchanged.count(record.name)) {
      EXPECT_TRUE(mine.equal(before)) << "a frozen parameter changed";
      continue;
    }
    if (record.name == "language_model.model.embed_tokens.weight") {
      // The vocabulary's rows are the frozen decoder's; the image token's and its kin's train.
      const std::int64_t vocab = 128256;
      EXPECT_TRUE(mine.narrow(0, 0, vocab).equal(before.narrow(0, 0, vocab))) << "a frozen embedding row changed";
    }
    // AdamW's first steps move each weight by about lr (2e-3) whatever its gradient's size, so a
    // gradient near zero differing in float32 rounding moves a weight by up to ~1e-5 here.
    const double difference = (mine - theirs).abs().max().item<double>();
    EXPECT_LE(difference, 5e-5) << "moved " << (theirs - before).abs().max().item<double>();
    EXPECT_FALSE(mine.equal(before)) << "a trainable parameter did not change";
  }
}

TEST(VisionGolden, OneRankTrainsTheGoldenTrajectory) {
  const std::string out = fttest::temp_dir();
  const auto r = fttest::run_fthost("--config " + fttest::write_temp("run.toml", run_config(out, 2)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_golden_trajectory(out);
}

// Each layer a sharding unit, the embedding one of its own (torchtune's 11B config shards
// decoder.tok_embeddings separately), the self-attention layers recomputed in backward: the same
// trajectory, the frozen parts sharded in buffers no gradient reaches.
TEST(VisionGolden, TwoFsdpRanksWithCheckpointedLayersTrainTheGoldenTrajectory) {
  const std::string out = fttest::temp_dir();
  const auto r =
      fttest::run_fthost("--nproc-per-node 2 --config " + fttest::write_temp("run.toml", run_config(out, 1)) +
                         " enable_activation_checkpointing=true"
                         " 'custom_sharded_layers=[\"decoder.tok_embeddings\", \"decoder.output\"]'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_golden_trajectory(out);
}

// torchtune's llama3_2_vision/11B_full YAML as shipped, with the golden's tiny model in place of
// the 11B checkpoint and The Cauldron's records (images stored inline) as its data: its bfloat16,
// activation checkpointing, separately sharded decoder.tok_embeddings, gradient clipping and
// frozen decoder, over two FSDP ranks.
TEST(VisionGolden, TorchtunesElevenBillionYamlTrainsTheTinyModel) {
  const std::string dir = fttest::temp_dir();
  const std::string g = golden_dir();
  const auto r = fttest::run_fthost(
      "--nproc-per-node 2 --config " + std::string(FT_SOURCE_DIR) + "/configs/llama3_2_vision/11B_full.yaml" +
      " output_dir=" + dir + "/run model._component_=fthost.models.llama3_2_vision.from_hf_config model.path=" + g +
      "/mllama_tiny '~model.image_size' tokenizer.path=" + fttest::fixtures_dir() +
      "/torchtune_assets/tiktoken_small.model tokenizer.image_size=28 tokenizer.max_seq_len=256"
      " checkpointer.checkpoint_dir=" +
      g +
      "/mllama_tiny 'checkpointer.checkpoint_files=[\"model.safetensors\"]'"
      " dataset.source=parquet dataset.data_files=" +
      g +
      "/../multimodal_data/cauldron.parquet"
      " epochs=1 max_steps_per_epoch=1 batch_size=1 gradient_accumulation_steps=1 metric_logger.output_fmt=jsonl "
      "metric_logger.filename=metrics.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("activation checkpointing: 8 of 8 layers"), std::string::npos) << r.output;
  const auto logged = fttest::read_jsonl(dir + "/run/logs/metrics.jsonl");
  ASSERT_EQ(logged.size(), 1U) << r.output;
  EXPECT_TRUE(std::isfinite(logged[0].at("loss").get<double>())) << r.output;
  const SafetensorsFile trained(dir + "/run/epoch_0/model.safetensors");
  const SafetensorsFile initial(g + "/mllama_tiny/model.safetensors");
  // The frozen decoder comes back as loaded, in the run's bfloat16.
  EXPECT_TRUE(trained.tensor("language_model.lm_head.weight")
                  .equal(initial.tensor("language_model.lm_head.weight").to(at::kBFloat16)));
  EXPECT_FALSE(trained.tensor("multi_modal_projector.weight")
                   .equal(initial.tensor("multi_modal_projector.weight").to(at::kBFloat16)));
}

// `fthost data` shows an image sample's canvas, tiles and the text positions that see it.
TEST(VisionGolden, DataShowsEachImagesTilesAndTheTextThatSeesIt) {
  const std::string out = fttest::temp_dir();
  const std::string config = fttest::write_temp("run.toml", run_config(out, 2));
  const auto r = fttest::run_command_stdout(std::string(FTHOST_BINARY) + " data --config " + config +
                                            " --samples 1 --json 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json sample = json::parse(r.output.substr(0, r.output.find('\n')));
  const auto tokens = sample.at("tokens").get<std::vector<std::int64_t>>();
  const std::int64_t image_token = std::find(tokens.begin(), tokens.end(), 128256) - tokens.begin();
  ASSERT_LT(image_token, static_cast<std::int64_t>(tokens.size()));
  ASSERT_EQ(sample.at("images").size(), 1U);
  const json& image = sample.at("images")[0];
  // The golden's first image is 50x24 pixels: a 1x2 canvas of 28-pixel tiles.
  EXPECT_EQ(image.at("rows"), 1);
  EXPECT_EQ(image.at("columns"), 2);
  EXPECT_EQ(image.at("tiles"), 2);
  EXPECT_EQ(image.at("tile_size"), 28);
  EXPECT_EQ(image.at("seen_by"),
            json::parse("[[" + std::to_string(image_token) + ", " + std::to_string(tokens.size()) + "]]"));
  const auto text =
      fttest::run_command_stdout(std::string(FTHOST_BINARY) + " data --config " + config + " --samples 1 2>/dev/null");
  EXPECT_NE(text.output.find("image 0: 1x2 canvas, 2 tile(s) of 28x28 px; seen by tokens " +
                             std::to_string(image_token) + "-" + std::to_string(tokens.size() - 1)),
            std::string::npos)
      << text.output;
}

class VisionData : public fttest::BuiltinPluginsTest {};

// The first step's batch as torchtune's dataset, transform and collate made it, bit for bit.
TEST_F(VisionData, TheFirstBatchIsTorchtunes) {
  const ft::ConfigNode config =
      root(tokenizer_toml() + dataset_toml(golden_dir() + "/images") +
           "[collate]\n_component_ = \"torchtune.data.padded_collate_tiled_images_and_mask\"\n");
  const std::shared_ptr<const ft::Tokenizer> tokenizer =
      registry().instantiate<ft::Tokenizer>(config.table("tokenizer"));
  const auto dataset = registry().instantiate<ft::Dataset>(config.table("dataset"), {tokenizer});
  const auto collate = registry().instantiate<ft::Collate>(config.table("collate"), {tokenizer->pad_id(), -100, 1});
  ASSERT_EQ(dataset->size(), 8U);
  const ft::Batch batch = collate->collate({dataset->get(0), dataset->get(1)});
  const SafetensorsFile expected(golden_dir() + "/batches.safetensors");
  EXPECT_TRUE(batch.tokens.equal(expected.tensor("tokens")));
  EXPECT_TRUE(batch.labels.equal(expected.tensor("labels")));
  ASSERT_TRUE(batch.images.defined());
  EXPECT_TRUE(batch.images.aspect_ratio.equal(expected.tensor("aspect_ratio")));
  // The golden was collated with pad_max_tiles 4 (its model takes 4 tiles); this collate pads to
  // the batch's most, as the recipe calls it: the same tiles, masks and pixels, fewer zero tiles.
  const at::Tensor images = expected.tensor("images");
  const std::int64_t tiles = batch.images.images.size(2);
  const at::Tensor mask = expected.tensor("encoder_mask");
  const at::Tensor per_tile = mask.view({mask.size(0), mask.size(1), images.size(1), images.size(2), -1});
  EXPECT_TRUE(batch.images.encoder_mask.equal(per_tile.narrow(3, 0, tiles).flatten(2)));
  EXPECT_FALSE(per_tile.narrow(3, tiles, images.size(2) - tiles).any().item<bool>());
  EXPECT_TRUE(batch.images.images.equal(images.narrow(2, 0, tiles)));
  EXPECT_TRUE(images.narrow(2, tiles, images.size(2) - tiles).eq(0).all().item<bool>());
  EXPECT_EQ(batch.images.tile_count.sizes(), (std::vector<std::int64_t>{2, 1}));
}

// The Cauldron's records with their images stored inline (Parquet), and visual questions with
// images by path and inline: every sample's tokens, labels, tiles, canvases and per-image masks
// as torchtune's own the_cauldron_dataset and vqa_dataset make them
// (tests/vision_references/make_multimodal_data_references.py).
TEST_F(VisionData, TheCauldronAndVisualQuestionsAreTorchtunes) {
  const std::string dir = golden_dir() + "/../multimodal_data";
  const SafetensorsFile expected(dir + "/references.safetensors");
  const json counts = json::parse(expected.metadata().at("counts"));
  const std::vector<std::pair<std::string, std::string>> datasets{
      {"cauldron",
       "_component_ = \"torchtune.datasets.multimodal.the_cauldron_dataset\"\nsource = \"parquet\"\n"
       "data_files = \"" +
           dir + "/cauldron.parquet\"\n"},
      {"vqa_json",
       "_component_ = \"torchtune.datasets.multimodal.vqa_dataset\"\nsource = \"json\"\n"
       "data_files = \"" +
           dir + "/vqa.json\"\nimage_dir = \"" + dir + "/images\"\n"},
      {"vqa_parquet",
       "_component_ = \"torchtune.datasets.multimodal.vqa_dataset\"\nsource = \"parquet\"\n"
       "data_files = \"" +
           dir + "/vqa.parquet\"\n"}};
  int images = 0;
  for (const auto& [name, table] : datasets) {
    SCOPED_TRACE(name);
    const ft::ConfigNode config = root(tokenizer_toml() + "[dataset]\n" + table);
    const std::shared_ptr<const ft::Tokenizer> tokenizer =
        registry().instantiate<ft::Tokenizer>(config.table("tokenizer"));
    const auto dataset = registry().instantiate<ft::Dataset>(config.table("dataset"), {tokenizer});
    ASSERT_EQ(dataset->size(), counts.at(name).at("samples").get<std::size_t>());
    for (std::size_t i = 0; i < dataset->size(); ++i) {
      const std::string key = name + "." + std::to_string(i);
      SCOPED_TRACE(key);
      const ft::Sample sample = dataset->get(i);
      EXPECT_TRUE(at::tensor(sample.tokens).equal(expected.tensor(key + ".tokens")));
      EXPECT_TRUE(at::tensor(sample.labels).equal(expected.tensor(key + ".labels")));
      ASSERT_EQ(sample.images.size(), counts.at(name).at("images")[i].get<std::size_t>());
      for (std::size_t j = 0; j < sample.images.size(); ++j) {
        const std::string image = key + ".image." + std::to_string(j);
        EXPECT_TRUE(sample.images[j].tiles.equal(expected.tensor(image + ".tiles")));
        const at::Tensor ratio = expected.tensor(image + ".aspect_ratio");
        EXPECT_EQ(sample.images[j].rows, ratio[0].item<std::int64_t>());
        EXPECT_EQ(sample.images[j].columns, ratio[1].item<std::int64_t>());
        EXPECT_TRUE(sample.images[j].encoder_mask.equal(expected.tensor(image + ".encoder_mask")));
        ++images;
      }
    }
  }
  EXPECT_EQ(images, 8);
}

TEST_F(VisionData, AnImagePathOutsideImageDirIsRefusedNamingTheSample) {
  const std::string dir = fttest::temp_dir();
  std::ofstream(dir + "/data.json")
      << R"([{"image": "../secret.png", "conversations": [)"
      << R"({"from": "human", "value": "<image> What is it?"}, {"from": "gpt", "value": "A cat."}]}])";
  const ft::ConfigNode config = root(tokenizer_toml() +
                                     "[dataset]\n_component_ = "
                                     "\"torchtune.datasets.multimodal.multimodal_chat_dataset\"\n"
                                     "source = \"json\"\ndata_files = \"" +
                                     dir + "/data.json\"\nimage_dir = \"" + dir + "\"\nimage_tag = \"<image>\"\n");
  const std::shared_ptr<const ft::Tokenizer> tokenizer =
      registry().instantiate<ft::Tokenizer>(config.table("tokenizer"));
  const std::string message =
      fttest::error_of<ft::Error>([&] { registry().instantiate<ft::Dataset>(config.table("dataset"), {tokenizer}); });
  EXPECT_NE(message.find("record 0"), std::string::npos) << message;
  EXPECT_NE(message.find("../secret.png"), std::string::npos) << message;
  EXPECT_NE(message.find("outside image_dir"), std::string::npos) << message;
}

TEST_F(VisionData, AMultimodalDatasetNeedsTheModelsImageTransform) {
  const ft::ConfigNode config = root(
      "[tokenizer]\n_component_ = \"torchtune.models.llama3.llama3_tokenizer\"\npath = \"" + fttest::fixtures_dir() +
      "/torchtune_assets/tiktoken_small.model\"\n\n" + dataset_toml(golden_dir() + "/images"));
  const std::shared_ptr<const ft::Tokenizer> tokenizer =
      registry().instantiate<ft::Tokenizer>(config.table("tokenizer"));
  const std::string message =
      fttest::error_of<ft::Error>([&] { registry().instantiate<ft::Dataset>(config.table("dataset"), {tokenizer}); });
  EXPECT_NE(message.find("llama3_2_vision_transform"), std::string::npos) << message;
}

}  // namespace
