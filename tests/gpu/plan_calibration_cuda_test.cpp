// The memory plan against the CUDA caching allocator's peak (max_memory_allocated): a 0.2B-parameter
// Llama-3-shaped model in bf16 on one GPU, without and with activation checkpointing, trains two
// steps and logs its plan beside the allocator's peak; they agree within 15% (docs/plan.md).
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <regex>
#include <string>

namespace {

double bytes_of(const std::string& number, const std::string& unit) {
  const double n = std::stod(number);
  return unit == "GiB" ? n * 1024 * 1024 * 1024 : n * 1024 * 1024;
}

class PlanCalibrationCuda : public ::testing::TestWithParam<const char*> {};

TEST_P(PlanCalibrationCuda, PlannedPeakWithinFifteenPercentOfTheAllocators) {
  fttest::TempDir dir;
  std::mt19937 draw(7);
  std::uniform_int_distribution<int> token(4, 31000);
  {
    std::ofstream data(dir.file("long.jsonl"));
    for (int s = 0; s < 16; ++s) {
      std::string ids;
      for (int i = 0; i < 2048; ++i) ids += (i ? "," : "") + std::to_string(token(draw));
      data << "{\"tokens\":[" << ids << "],\"labels\":[" << ids << "]}\n";
    }
  }
  std::ofstream(dir.file("run.toml")) << R"(seed = 0
epochs = 1
max_steps_per_epoch = 2
batch_size = 2
dtype = "bf16"
device = "cuda"

[model]
_component_ = "torchtune.models.llama3.llama3"
vocab_size = 32000
num_layers = 8
num_heads = 16
num_kv_heads = 8
embed_dim = 1024
intermediate_dim = 3072
max_seq_len = 2048

[checkpointer]
_component_ = "torchtune.training.FullModelHFCheckpointer"
checkpoint_dir = ""
model_type = "LLAMA3"
output_dir = "${output_dir}"

[dataset]
_component_ = "fthost.datasets.tokenized_jsonl"

[loss]
_component_ = "torchtune.modules.loss.CEWithChunkedOutputLoss"

[optimizer]
_component_ = "torch.optim.AdamW"
lr = 1e-4

[metric_logger]
_component_ = "torchtune.training.metric_logging.StdoutLogger"
)";
  const auto r = fttest::run_fthost("--config " + dir.file("run.toml") + " dataset.source=" + dir.file("long.jsonl") +
                                    " output_dir=" + dir.file("out") + " " + GetParam());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  static const std::regex line(
      R"(memory: planned peak ([0-9.]+) (GiB|MiB) per rank .*measured ([0-9.]+) (GiB|MiB) \(the CUDA caching )"
      R"(allocator's peak\) after step 2)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, line)) << r.output;
  const double planned = bytes_of(m[1], m[2]), measured = bytes_of(m[3], m[4]);
  EXPECT_NEAR(measured / planned, 1.0, 0.15) << m[0];
  std::cout << m[0] << "\n";
}

INSTANTIATE_TEST_SUITE_P(Layouts, PlanCalibrationCuda,
                         ::testing::Values("enable_activation_checkpointing=false",
                                           "enable_activation_checkpointing=true"));

}  // namespace
