// The memory plan against what runs measure: six layouts of a 36M-parameter Llama-3-shaped model
// (one rank in fp32 and bf16, activation checkpointing, FSDP over 2 ranks, tensor parallelism 2,
// context parallelism 2) each train two steps and log the plan for their micro-batches beside
// the process's peak resident set (the kernel's VmHWM); every one agrees within 15%. The
// process's memory before the model exists is part of both, so each layout must also plan at
// least 35% of its peak in tensors the plan counts, or the agreement would say little.
#include "test_helpers.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <regex>
#include <string>

namespace {

double bytes_of(const std::string& number, const std::string& unit) {
  const double n = std::stod(number);
  if (unit == "GiB") return n * 1024 * 1024 * 1024;
  if (unit == "MiB") return n * 1024 * 1024;
  if (unit == "KiB") return n * 1024;
  return n;
}

class PlanCalibration : public ::testing::Test {
 protected:
  void SetUp() override {
    // 64 samples of 512 random tokens: every micro-batch is 2 x 512 with no padding.
    std::mt19937 draw(7);
    std::uniform_int_distribution<int> token(4, 8000);
    std::ofstream data(dir_.str() + "/long.jsonl");
    for (int s = 0; s < 64; ++s) {
      std::string ids;
      for (int i = 0; i < 512; ++i) ids += (i ? "," : "") + std::to_string(token(draw));
      data << "{\"tokens\":[" << ids << "],\"labels\":[" << ids << "]}\n";
    }
    std::ofstream(dir_.str() + "/run.toml") << R"(seed = 0
epochs = 1
max_steps_per_epoch = 2
batch_size = 2
dtype = "fp32"
device = "cpu"
num_threads = 1

[model]
_component_ = "torchtune.models.llama3.llama3"
vocab_size = 16384
num_layers = 6
num_heads = 8
num_kv_heads = 4
embed_dim = 512
intermediate_dim = 1536
max_seq_len = 512

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
  }

  // Trains the layout and checks its logged plan against its measured peak.
  void expect_calibrated(const std::string& name, const std::string& args) {
    const auto r = fttest::run_fthost(args + " --config " + dir_.str() + "/run.toml dataset.source=" + dir_.str() +
                                      "/long.jsonl output_dir=" + dir_.str() + "/" + name);
    ASSERT_EQ(r.exit_code, 0) << name << "\n" << r.output;
    static const std::regex line(
        R"(memory: planned peak ([0-9.]+) (GiB|MiB) per rank \(([^;]+); ([0-9.]+) (GiB|MiB) of it the process before )"
        R"(the model\), measured ([0-9.]+) (GiB|MiB) \(peak resident set\) after step 2)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.output, m, line)) << name << "\n" << r.output;
    const double planned = bytes_of(m[1], m[2]), before_model = bytes_of(m[4], m[5]), measured = bytes_of(m[6], m[7]);
    EXPECT_GE((planned - before_model) / planned, 0.35) << name << ": " << m[0];
    EXPECT_NEAR(measured / planned, 1.0, 0.15) << name << ": " << m[0];
    std::cout << name << ": " << m[0] << "\n";
  }

  fttest::TempDir dir_;
};

TEST_F(PlanCalibration, OneRankFloat32AndBfloat16) {
  expect_calibrated("fp32", "");
  expect_calibrated("bf16", "dtype=bf16");
}

TEST_F(PlanCalibration, ActivationCheckpointing) {
  expect_calibrated("checkpointed", "enable_activation_checkpointing=true");
}

TEST_F(PlanCalibration, FsdpOverTwoRanks) { expect_calibrated("fsdp2", "--nproc-per-node 2"); }

TEST_F(PlanCalibration, TensorParallelTwo) {
  expect_calibrated("tp2",
                    "--nproc-per-node 2 tensor_parallel_dim=2 "
                    "tensor_parallel_plan._component_=torchtune.models.llama3.base_llama_tp_plan");
}

TEST_F(PlanCalibration, ContextParallelTwo) { expect_calibrated("cp2", "--nproc-per-node 2 context_parallel_dim=2"); }

}  // namespace
