// The memory plan against the CUDA caching allocator's peak (max_memory_allocated): a 0.2B-parameter
// Llama-3-shaped model in bf16 on one GPU, without and with activation checkpointing, trains two
// steps and logs its plan beside the allocator's peak; they agree within 15% (docs/plan.md).
#include "plan_calibration.h"

#include <gtest/gtest.h>

#include <iostream>
#include <string>

namespace {

namespace calibration = fttest::plan_calibration;

class PlanCalibrationCuda : public ::testing::TestWithParam<const char*> {};

TEST_P(PlanCalibrationCuda, PlannedPeakWithinFifteenPercentOfTheAllocators) {
  fttest::TempDir dir;
  calibration::write_random_tokens(dir.file("long.jsonl"), 16, 2048, 31000);
  // bench/configs/llama_36m.toml widened to 0.2B parameters and 2 x 2048 tokens, in bf16 on the GPU.
  const auto r = fttest::run_fthost(
      "--config " + calibration::config() +
      " device=cuda dtype=bf16 model.vocab_size=32000 model.num_layers=8 model.num_heads=16 model.num_kv_heads=8 "
      "model.embed_dim=1024 model.intermediate_dim=3072 model.max_seq_len=2048 dataset.source=" +
      dir.file("long.jsonl") + " output_dir=" + dir.file("out") + " " + GetParam());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto logged = calibration::planned_against_measured(r.output);
  ASSERT_TRUE(logged) << r.output;
  EXPECT_NE(logged->line.find("the CUDA caching allocator's peak"), std::string::npos) << logged->line;
  EXPECT_NEAR(logged->measured / logged->planned, 1.0, 0.15) << logged->line;
  std::cout << logged->line << "\n";
}

INSTANTIATE_TEST_SUITE_P(Layouts, PlanCalibrationCuda,
                         ::testing::Values("enable_activation_checkpointing=false",
                                           "enable_activation_checkpointing=true"));

}  // namespace
