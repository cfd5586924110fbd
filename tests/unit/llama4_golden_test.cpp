// Llama 4 with images trained end to end by the fthost binary against its golden trajectory
// (tests/vision_references/make_llama4_golden.py, the ctest fixture llama4_golden): The Cauldron's
// records through torchtune's llama4_transform (56-pixel tiles, their thumbnails, 4 <|patch|>
// tokens per tile) feeding transformers' Llama4ForConditionalGeneration (a dense and a
// mixture-of-experts layer) under torchtune's llama4_scout_17b_16e trainable split, 2 epochs with
// the recipe's loss and AdamW. Every step's loss and token count and the final weights, on one
// rank, on two FSDP ranks with checkpointed layers and on two tensor-parallel ranks; the frozen
// encoder bitwise unchanged, every trainable tensor moved.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "build_tree.h"
#include "jsonl.h"
#include "published_tokenizers.h"
#include "safetensors.h"
#include "test_helpers.h"

namespace {

using ft_checkpointers::SafetensorsFile;
using json = nlohmann::json;

// The build tree's vision_references/llama4_golden and llama4_data (tests/CMakeLists.txt).
std::string golden_dir() { return fttest::build_tree("vision_references/llama4_golden"); }
std::string data_dir() { return fttest::build_tree("vision_references/llama4_data"); }

// The golden's run: 2 epochs of 2 steps of 2 samples (per rank: 2 / ranks), shuffle off, fp32,
// the recipe's loss, AdamW. The *_trainable keys are left out: fthost's defaults must be
// llama4_scout_17b_16e's, which the golden applies.
std::string run_config(const std::string& out, int batch_size) {
  const std::string model = golden_dir() + "/llama4_tiny";
  return "output_dir = \"" + out + "\"\nseed = 0\nepochs = 2\nbatch_size = " + std::to_string(batch_size) +
         "\ngradient_accumulation_steps = 1\nclip_grad_norm = \"inf\"\nshuffle = false\ndtype = \"fp32\"\n"
         "num_threads = 1\ncollate_fn = \"torchtune.data.padded_collate_tiled_images_and_mask\"\n\n"
         "[model]\n_component_ = \"fthost.models.llama4.from_hf_config\"\npath = \"" +
         model +
         "\"\n\n"
         "[tokenizer]\n_component_ = \"torchtune.models.llama4.llama4_transform\"\npath = \"" +
         fttest::published::file("llama4", "tokenizer.model") +
         "\"\nmax_seq_len = 4096\nimage_size = 56\nmax_num_tiles = 16\n\n"
         "[checkpointer]\n_component_ = \"torchtune.training.FullModelHFCheckpointer\"\ncheckpoint_dir = \"" +
         model + "\"\ncheckpoint_files = [\"model.safetensors\"]\nmodel_type = \"LLAMA4\"\noutput_dir = \"" + out +
         "\"\n\n"
         "[dataset]\n_component_ = \"torchtune.datasets.multimodal.the_cauldron_dataset\"\nsource = \"parquet\"\n"
         "data_files = \"" +
         data_dir() +
         "/cauldron.parquet\"\n\n"
         "[loss]\n_component_ = \"torchtune.modules.loss.CEWithChunkedOutputLoss\"\n\n"
         "[optimizer]\n_component_ = \"torch.optim.AdamW\"\nlr = 2e-3\nbetas = [0.9, 0.999]\neps = 1e-8\n"
         "weight_decay = 0.01\n\n"
         "[metric_logger]\n_component_ = \"torchtune.training.metric_logging.DiskLogger\"\nlog_dir = \"" +
         out + "/logs\"\nfilename = \"metrics.jsonl\"\noutput_fmt = \"jsonl\"\n";
}

void expect_golden_trajectory(const std::string& out) {
  const auto expected = fttest::read_jsonl(golden_dir() + "/expected.jsonl");
  const auto logged = fttest::read_jsonl(out + "/logs/metrics.jsonl");
  ASSERT_EQ(expected.size(), 4U);
  ASSERT_EQ(logged.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    EXPECT_EQ(logged[i].at("num_tokens").get<std::int64_t>(), expected[i].at("tokens").get<std::int64_t>());
    const double loss = expected[i].at("loss").get<double>();
    // float32 steps: the golden's own float64 rerun moves its losses by up to 7e-8 (relative);
    // 1e-6 leaves room for other float32 summation orders (a run without weight decay is 3e-6 off
    // by step 3, one with the encoder trained 1e-3 by step 2).
    EXPECT_NEAR(logged[i].at("loss").get<double>(), loss, 1e-6 * loss);
  }
  const SafetensorsFile initial(golden_dir() + "/llama4_tiny/model.safetensors");
  const SafetensorsFile final_golden(golden_dir() + "/final.safetensors");
  const SafetensorsFile trained(out + "/epoch_1/model.safetensors");
  std::ifstream split_file(golden_dir() + "/initial_equals_final.json");
  const json split = json::parse(split_file);
  std::set<std::string> unchanged, trainable;
  for (const auto& name : split.at("unchanged")) unchanged.insert(name.get<std::string>());
  for (const auto& name : split.at("trainable")) trainable.insert(name.get<std::string>());
  // torchtune's split of this model: the encoder (patch and position embeddings, class token, 2
  // layer norms, the one layer's 16 tensors) frozen; the decoder and the fusion MLP and projector train.
  ASSERT_EQ(unchanged.size(), 23U);
  ASSERT_EQ(unchanged.size() + trainable.size(), final_golden.records().size());
  ASSERT_EQ(trained.records().size(), final_golden.records().size());
  double worst = 0, worst_of_update = 0;
  std::string worst_name;
  for (const auto& record : final_golden.records()) {
    SCOPED_TRACE(record.name);
    const at::Tensor mine = trained.tensor(record.name), theirs = final_golden.tensor(record),
                     before = initial.tensor(record.name);
    ASSERT_EQ(mine.scalar_type(), at::kFloat);
    ASSERT_EQ(mine.sizes(), theirs.sizes());
    if (unchanged.count(record.name)) {
      EXPECT_TRUE(mine.equal(before)) << "a frozen parameter changed";
      continue;
    }
    ASSERT_TRUE(trainable.count(record.name)) << "in neither list";
    EXPECT_FALSE(mine.equal(before)) << "a trainable parameter did not change";
    // AdamW's first steps move each weight by about lr (2e-3) whatever its gradient's size, so a
    // weight whose gradient is near zero (lm_head's rows of tokens no batch holds) moves by an
    // amount that float32 rounding changes: the golden's own float32 and float64 runs end up to
    // 4.9e-5 apart there (the weights move by up to 8e-3), hence 1e-4 for any one weight. Over a
    // whole tensor those few weights weigh little: the two runs' difference is at most 8.8e-5 of
    // the update's norm, hence 5e-4 of it (a run without weight decay is 5e-2 of it away).
    const double difference = (mine - theirs).abs().max().item<double>();
    EXPECT_LE(difference, 1e-4) << "moved " << (theirs - before).abs().max().item<double>();
    const double of_update =
        ((mine - theirs).to(at::kDouble).norm() / (theirs - before).to(at::kDouble).norm()).item<double>();
    EXPECT_LE(of_update, 5e-4) << "differs by this share of the golden's update";
    if (difference > worst) worst = difference, worst_name = record.name;
    worst_of_update = std::max(worst_of_update, of_update);
  }
  std::cout << "largest difference from the golden's final weights: " << worst << " (" << worst_name << "), "
            << worst_of_update << " of a tensor's update\n";
}

TEST(Llama4Golden, OneRankTrainsTheGoldenTrajectory) {
  const std::string out = fttest::temp_dir();
  const auto r = fttest::run_fthost("--config " + fttest::write_temp("run.toml", run_config(out, 2)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_golden_trajectory(out);
}

// Each rank one sample of each step (rank 0 the first, rank 1 the second), every decoder layer
// recomputed in backward, the frozen encoder sharded in buffers no gradient reaches: the same
// trajectory.
TEST(Llama4Golden, TwoFsdpRanksWithCheckpointedLayersTrainTheGoldenTrajectory) {
  const std::string out = fttest::temp_dir();
  const auto r =
      fttest::run_fthost("--nproc-per-node 2 --config " + fttest::write_temp("run.toml", run_config(out, 1)) +
                         " enable_activation_checkpointing=true");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("activation checkpointing: 2 of 2 layers"), std::string::npos) << r.output;
  expect_golden_trajectory(out);
}

}  // namespace

// torchtune's Llama 4 tensor-parallel plan over both ranks, each with both samples: the decoder
// split, the vision tower whole on each, every sequence padded to a multiple of 2: the same
// trajectory.
TEST(Llama4Golden, TwoTensorParallelRanksTrainTheGoldenTrajectory) {
  const std::string out = fttest::temp_dir();
  const auto r = fttest::run_fthost(
      "--nproc-per-node 2 --config " + fttest::write_temp("run.toml", run_config(out, 2)) +
      " tensor_parallel_dim=2 tensor_parallel_plan._component_=torchtune.models.llama4.decoder_only_tp_plan");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 data-parallel x 2 tensor-parallel ranks"), std::string::npos) << r.output;
  expect_golden_trajectory(out);
}
