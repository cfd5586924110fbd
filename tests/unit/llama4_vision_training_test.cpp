// torchtune's llama4/scout_17B_16E_full YAML as shipped, with a tiny Llama 4 with images
// (tests/vision_references/make_llama4_references.py's llama4_trainable) in place of Scout and
// The Cauldron's records through llama4_transform (tests/vision_references/
// make_llama4_data_references.py) as its data: bfloat16, activation checkpointing, CPU offload,
// the linear cross-entropy, over two FSDP ranks (tensor_parallel_dim 1: the tiled-image collate
// pads no sequence to a multiple of the tensor-parallel degree yet, and says so). The frozen encoder comes
// back bit for bit; the decoder and the fusion parameters train.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "build_tree.h"
#include "published_tokenizers.h"
#include "safetensors.h"
#include "test_helpers.h"

namespace {

using ft_checkpointers::SafetensorsFile;

std::vector<nlohmann::json> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(Llama4VisionTraining, TorchtunesScoutYamlTrainsTheTinyModelOnImages) {
  const std::string dir = fttest::temp_dir();
  const std::string model = fttest::build_tree("vision_references/llama4_trainable");
  const auto r = fttest::run_fthost(
      "--nproc-per-node 2 --config " + std::string(FT_SOURCE_DIR) + "/configs/llama4/scout_17B_16E_full.yaml" +
      " output_dir=" + dir + "/run model._component_=fthost.models.llama4.from_hf_config model.path=" + model +
      " tokenizer.path=" + fttest::published::file("llama4", "tokenizer.model") +
      " tokenizer.image_size=28 tokenizer.max_seq_len=2048 checkpointer.checkpoint_dir=" + model +
      " 'checkpointer.checkpoint_files=[\"model.safetensors\"]'"
      " dataset._component_=torchtune.datasets.multimodal.the_cauldron_dataset '~dataset.packed'"
      " dataset.source=parquet dataset.data_files=" +
      fttest::build_tree("vision_references/llama4_data/cauldron.parquet") +
      " collate_fn=torchtune.data.padded_collate_tiled_images_and_mask seed=0 tensor_parallel_dim=1"
      " epochs=1 max_steps_per_epoch=2 batch_size=1 metric_logger.output_fmt=jsonl "
      "metric_logger.filename=metrics.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto logged = lines_of(dir + "/run/logs/metrics.jsonl");
  ASSERT_EQ(logged.size(), 2U) << r.output;
  for (const auto& step : logged) EXPECT_TRUE(std::isfinite(step.at("loss").get<double>())) << step.dump();
  const SafetensorsFile trained(dir + "/run/epoch_0/model.safetensors");
  const SafetensorsFile initial(model + "/model.safetensors");
  ASSERT_EQ(trained.records().size(), initial.records().size());
  int frozen = 0;
  for (const auto& record : initial.records()) {
    const std::string& name = record.name;
    const at::Tensor before = initial.tensor(name).to(at::kBFloat16);
    const at::Tensor after = trained.tensor(name);
    const bool encoder = name.rfind("vision_model.", 0) == 0 && name.find("vision_adapter") == std::string::npos;
    if (encoder) {
      EXPECT_TRUE(after.equal(before)) << name << " is frozen (encoder_trainable false)";
      ++frozen;
    }
  }
  EXPECT_EQ(frozen, 23);  // patch and position embeddings, class token, 2 layer norms (4), the layer (16)
  for (const char* trained_name :
       {"multi_modal_projector.linear_1.weight", "vision_model.vision_adapter.mlp.fc1.weight",
        "language_model.model.layers.0.self_attn.q_proj.weight", "language_model.lm_head.weight"})
    EXPECT_FALSE(trained.tensor(trained_name).equal(initial.tensor(trained_name).to(at::kBFloat16))) << trained_name;
}

}  // namespace
