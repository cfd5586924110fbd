// torchtune's llama4/scout_17B_16E_full YAML as shipped, with a tiny Llama 4 with images
// (tests/vision_references/make_llama4_references.py's llama4_trainable) in place of Scout and
// The Cauldron's records through llama4_transform (tests/vision_references/
// make_llama4_data_references.py) as its data: bfloat16, activation checkpointing, CPU offload,
// the linear cross-entropy, over two ranks as its tensor_parallel_dim 2 lays them out (one
// tensor-parallel group; the collate pads each sequence to a multiple of 2). The frozen encoder
// comes back bit for bit; the decoder and the fusion parameters train.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "build_tree.h"
#include "jsonl.h"
#include "published_tokenizers.h"
#include "safetensors.h"
#include "test_helpers.h"

namespace {

using ft_checkpointers::SafetensorsFile;

std::string model_dir() { return fttest::build_tree("vision_references/llama4_trainable"); }

// The Scout YAML on the tiny model: its checkpoint and tokenizer, metrics as JSON lines.
std::string scout_on_tiny_model(const std::string& out) {
  return "--config " + std::string(FT_SOURCE_DIR) + "/configs/llama4/scout_17B_16E_full.yaml" + " output_dir=" + out +
         " model._component_=fthost.models.llama4.from_hf_config model.path=" + model_dir() +
         " tokenizer.path=" + fttest::published::file("llama4", "tokenizer.model") +
         " tokenizer.image_size=28 tokenizer.max_seq_len=2048 checkpointer.checkpoint_dir=" + model_dir() +
         " 'checkpointer.checkpoint_files=[\"model.safetensors\"]' metric_logger.output_fmt=jsonl"
         " metric_logger.filename=metrics.jsonl";
}

// ... reading The Cauldron's records with images.
std::string on_images() {
  return " dataset._component_=torchtune.datasets.multimodal.the_cauldron_dataset '~dataset.packed'"
         " dataset.source=parquet dataset.data_files=" +
         fttest::build_tree("vision_references/llama4_data/cauldron.parquet") +
         " collate_fn=torchtune.data.padded_collate_tiled_images_and_mask";
}

// float32, in dataset order, without offload or recomputation, a weight decay that shows.
const char* const kComparable =
    " seed=0 shuffle=false dtype=fp32 enable_activation_checkpointing=false optimizer.weight_decay=0.1"
    " epochs=1 max_steps_per_epoch=2";

// DDP: the whole model on every rank, no FSDP keys.
const char* const kDdp =
    " parallelism._component_=fthost.parallelism.ddp tensor_parallel_dim=1 '~tensor_parallel_plan'"
    " '~data_parallel_shard_dim' '~data_parallel_replicate_dim' '~fsdp_cpu_offload'";

TEST(Llama4VisionTraining, TorchtunesScoutYamlTrainsTheTinyModelOnImages) {
  const std::string dir = fttest::temp_dir();
  const std::string model = model_dir();
  const auto r = fttest::run_fthost("--nproc-per-node 2 " + scout_on_tiny_model(dir + "/run") + on_images() +
                                    " seed=0 epochs=1 max_steps_per_epoch=2 batch_size=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto logged = fttest::read_jsonl(dir + "/run/logs/metrics.jsonl");
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

// Each named tensor trained (moved from the checkpoint) and equal to the one-rank run's. Two AdamW
// steps of lr 2e-5 move each weight by about 4e-5; a lost gradient leaves only the weight decay's
// 1e-7 or so. Summation order differs by ranks: 2e-8 here.
void expect_trained_as_one_rank(const SafetensorsFile& one_rank, const SafetensorsFile& two_ranks,
                                const std::vector<const char*>& names) {
  const SafetensorsFile initial(model_dir() + "/model.safetensors");
  for (const char* name : names) {
    SCOPED_TRACE(name);
    const at::Tensor before = initial.tensor(name), expected = one_rank.tensor(name), mine = two_ranks.tensor(name);
    EXPECT_GT((expected - before).abs().max().item<double>(), 3e-5);
    EXPECT_LE((mine - expected).abs().max().item<double>(), 1e-7);
  }
}

// Two ranks train as one: DDP ranks of one sample each (the vision tower's gradients are complete
// only when the whole backward is, since it runs before the decoder) and the YAML's tensor
// parallelism over both samples (the vision tower whole on both ranks, the decoder split).
TEST(Llama4VisionTraining, TwoRanksTrainTheFusionParametersAsOneRank) {
  const std::string dir = fttest::temp_dir();
  const auto one = fttest::run_fthost(scout_on_tiny_model(dir + "/one") + on_images() + kComparable +
                                      " batch_size=2 tensor_parallel_dim=1 '~tensor_parallel_plan'");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const SafetensorsFile one_rank(dir + "/one/epoch_0/model.safetensors");
  for (const auto& [layout, options] : {std::pair<std::string, std::string>{"ddp", std::string(kDdp) + " batch_size=1"},
                                        {"tp2", " batch_size=2 fsdp_cpu_offload=false"}}) {
    SCOPED_TRACE(layout);
    const auto two = fttest::run_fthost("--nproc-per-node 2 " + scout_on_tiny_model(dir + "/" + layout) + on_images() +
                                        kComparable + options);
    ASSERT_EQ(two.exit_code, 0) << two.output;
    expect_trained_as_one_rank(one_rank, SafetensorsFile(dir + "/" + layout + "/epoch_0/model.safetensors"),
                               {"multi_modal_projector.linear_1.weight", "vision_model.vision_adapter.mlp.fc1.weight",
                                "vision_model.vision_adapter.mlp.fc2.weight", "language_model.lm_head.weight",
                                "language_model.model.layers.1.feed_forward.experts.gate_up_proj"});
  }
}

// The encoder trained too (encoder_trainable): FSDP gathers the vision tower a stage at a time
// (embedding, each layer, head), in backward as in forward, and trains it as one rank does.
TEST(Llama4VisionTraining, FsdpTrainsTheWholeVisionTowerAsOneRank) {
  const std::string dir = fttest::temp_dir();
  const std::string encoder = " model.encoder_trainable=true tensor_parallel_dim=1 '~tensor_parallel_plan'";
  const auto one =
      fttest::run_fthost(scout_on_tiny_model(dir + "/one") + on_images() + kComparable + encoder + " batch_size=2");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto two = fttest::run_fthost("--nproc-per-node 2 " + scout_on_tiny_model(dir + "/two") + on_images() +
                                      kComparable + encoder + " batch_size=1 fsdp_cpu_offload=false");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("fsdp: 6 units"), std::string::npos) << "2 layers, the root, 3 vision stages";
  expect_trained_as_one_rank(
      SafetensorsFile(dir + "/one/epoch_0/model.safetensors"), SafetensorsFile(dir + "/two/epoch_0/model.safetensors"),
      {"vision_model.patch_embedding.linear.weight", "vision_model.class_embedding",
       "vision_model.model.layers.0.self_attn.q_proj.weight", "vision_model.model.layers.0.mlp.fc2.bias",
       "vision_model.layernorm_post.weight", "multi_modal_projector.linear_1.weight"});
}

// A text-only batch gives the vision tower and projector no gradient; under DDP as under FSDP,
// AdamW then leaves them bit for bit as they were (no weight decay either), as torch's optimizer
// skips a parameter whose grad is None.
TEST(Llama4VisionTraining, TextOnlyBatchesLeaveTheFusionParametersUntouched) {
  const std::string dir = fttest::temp_dir();
  const std::string text_only =
      " dataset._component_=torchtune.datasets.alpaca_dataset dataset.source=" + fttest::fixtures_dir() +
      "/data/alpaca_tiny.json";
  const SafetensorsFile initial(model_dir() + "/model.safetensors");
  for (const auto& [strategy_name, strategy] :
       {std::pair<std::string, std::string>{"ddp", kDdp}, {"fsdp", " tensor_parallel_dim=1"}}) {
    SCOPED_TRACE(strategy_name);
    const std::string out = dir + "/" + strategy_name;
    const auto r = fttest::run_fthost("--nproc-per-node 2 " + scout_on_tiny_model(out) + text_only + kComparable +
                                      strategy + " batch_size=1");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const SafetensorsFile trained(out + "/epoch_0/model.safetensors");
    for (const char* name : {"multi_modal_projector.linear_1.weight", "vision_model.vision_adapter.mlp.fc1.weight"})
      EXPECT_TRUE(trained.tensor(name).equal(initial.tensor(name))) << name;
    EXPECT_FALSE(
        trained.tensor("language_model.lm_head.weight").equal(initial.tensor("language_model.lm_head.weight")));
  }
}

}  // namespace

// torchtune's llama4/maverick_17B_128E_full YAML as shipped, with images: its
// tensor_parallel_dim 8 lays 8 ranks out as one tensor-parallel group, which splits the tiny
// model's 8 heads (make_llama4_references.py's llama4_trainable_tp8) and its experts' hidden
// features; the collate pads every sequence to a multiple of 8. The frozen encoder comes back bit
// for bit, the projector and the decoder train.
TEST(Llama4VisionTraining, TorchtunesMaverickYamlTrainsOnImagesOverEightTensorParallelRanks) {
  const std::string dir = fttest::temp_dir();
  const std::string model = fttest::build_tree("vision_references/llama4_trainable_tp8");
  const auto r = fttest::run_fthost(
      "--nproc-per-node 8 --config " + std::string(FT_SOURCE_DIR) + "/configs/llama4/maverick_17B_128E_full.yaml" +
      " output_dir=" + dir + "/run model._component_=fthost.models.llama4.from_hf_config model.path=" + model +
      " tokenizer.path=" + fttest::published::file("llama4", "tokenizer.model") +
      " tokenizer.image_size=28 tokenizer.max_seq_len=2048 checkpointer.checkpoint_dir=" + model +
      " 'checkpointer.checkpoint_files=[\"model.safetensors\"]' metric_logger.output_fmt=jsonl"
      " metric_logger.filename=metrics.jsonl" +
      on_images() + " seed=0 epochs=1 max_steps_per_epoch=2 batch_size=1 num_threads=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 data-parallel x 8 tensor-parallel ranks"), std::string::npos) << r.output;
  const auto logged = fttest::read_jsonl(dir + "/run/logs/metrics.jsonl");
  ASSERT_EQ(logged.size(), 2U) << r.output;
  for (const auto& step : logged) EXPECT_TRUE(std::isfinite(step.at("loss").get<double>())) << step.dump();
  const SafetensorsFile trained(dir + "/run/epoch_0/model.safetensors");
  const SafetensorsFile initial(model + "/model.safetensors");
  for (const char* frozen :
       {"vision_model.patch_embedding.linear.weight", "vision_model.model.layers.0.self_attn.q_proj.weight"})
    EXPECT_TRUE(trained.tensor(frozen).equal(initial.tensor(frozen).to(at::kBFloat16))) << frozen;
  for (const char* trained_name :
       {"multi_modal_projector.linear_1.weight", "language_model.model.layers.0.self_attn.q_proj.weight",
        "language_model.model.layers.1.feed_forward.experts.gate_up_proj"})
    EXPECT_FALSE(trained.tensor(trained_name).equal(initial.tensor(trained_name).to(at::kBFloat16))) << trained_name;
}
