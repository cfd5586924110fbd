// `fthost plan` through the binary on torchtune's own 8B and 70B configs: the parameter counts the
// model outline finds are the publishers' (Meta's model cards), the per-rank shares follow from
// them, a budget too small lists changes that lower the peak and one that fits, and every listed
// change is a config the run accepts (planned again from its own overrides, it fits). Bad input
// gets the errors `fthost validate` and the run give.
#include "test_helpers.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>
#include <string>

namespace {

// Meta's published parameter counts (Hugging Face model cards, safetensors metadata).
constexpr double kLlama3_8B = 8030261248.0;
constexpr double kLlama3_1_70B = 70553706496.0;

nlohmann::json plan_json(const std::string& args, int expected_exit) {
  const auto r = fttest::run_command_stdout(std::string(FTHOST_BINARY) + " plan --json " + args + " 2>/dev/null");
  EXPECT_EQ(r.exit_code, expected_exit) << r.output;
  return nlohmann::json::parse(r.output);
}

TEST(PlanCommand, TorchtunesEightBillionConfigOnOneNode) {
  const auto plan = plan_json("--config llama3/8B_full --nproc-per-node 8 --device h100 --seq-len 2048", 0);
  EXPECT_EQ(plan["model"]["parameters"].get<double>(), kLlama3_8B);
  EXPECT_EQ(plan["model"]["layers"], 32);
  EXPECT_EQ(plan["layout"]["shard"], 8);
  EXPECT_TRUE(plan["fits"].get<bool>());
  EXPECT_EQ(plan["device_memory_bytes"].get<double>(), 80.0 * 1024 * 1024 * 1024);
  // bf16 parameters sharded 8 ways (FSDP pads each tensor's rows to a multiple of 8: a few KB),
  // AdamW's two moments in the same dtype.
  const auto& memory = plan["memory"];
  const double shard = kLlama3_8B * 2 / 8;
  EXPECT_NEAR(memory["parameters_bytes"].get<double>(), shard, shard * 1e-4);
  EXPECT_NEAR(memory["optimizer_state_bytes"].get<double>(), 2 * shard, 2 * shard * 1e-4);
  // Every layer checkpointed: each keeps only its [2 x 2048, 4096] bf16 input.
  EXPECT_GE(memory["activations_bytes"].get<double>(), 32.0 * 2 * 2048 * 4096 * 2);
  EXPECT_GE(memory["phases"].size(), 4u);
  double largest = 0;
  for (const auto& phase : memory["phases"]) largest = std::max(largest, phase["bytes"].get<double>());
  EXPECT_EQ(memory["peak_bytes"].get<double>(), largest);
  EXPECT_GT(plan["step"]["seconds"].get<double>(), 0);
  // The checkpoint: bf16 weights and the optimizer's two moments, about 3 x 16 GB.
  EXPECT_NEAR(plan["checkpoint"]["bytes"].get<double>(), 3 * kLlama3_8B * 2, kLlama3_8B * 0.01);
}

TEST(PlanCommand, SeventyBillionOnEightGpusWithTheConfigsCpuOffload) {
  const auto plan = plan_json("--config llama3_1/70B_full --nproc-per-node 8 --device h100 --seq-len 2048", 0);
  EXPECT_EQ(plan["model"]["parameters"].get<double>(), kLlama3_1_70B);
  // fsdp_cpu_offload: the shards, their gradients and AdamW's moments wait in host memory.
  const double host = plan["memory"]["host_bytes"].get<double>();
  EXPECT_NEAR(host, 4 * kLlama3_1_70B * 2 / 8, kLlama3_1_70B * 0.01);
  EXPECT_LT(plan["memory"]["peak_bytes"].get<double>(), 80.0 * 1024 * 1024 * 1024);
}

TEST(PlanCommand, ExpertsSplitByExpertParallelismAreShardedOnlyOverTheRanksHoldingThem) {
  // Qwen3-30B-A3B (Qwen's config.json): 48 layers of 128 experts, each gate, up and down
  // 2048 x 768, 30,532,122,624 parameters in all.
  const double experts = 48.0 * 128 * 3 * 2048 * 768;
  const double rest = 30532122624.0 - experts;
  const auto plan = plan_json(
      "--config qwen3_moe/30B_A3B_full --nproc-per-node 8 --device h100 --seq-len 2048 expert_parallel_dim=8", 0);
  EXPECT_EQ(plan["model"]["parameters"].get<double>(), 30532122624.0);
  // Each rank holds 16 of every layer's experts whole (8 FSDP ranks / 8 expert-parallel ranks
  // leave one rank per shard group) and an eighth of the rest, in bf16.
  const double expected = (experts / 8 + rest / 8) * 2;
  EXPECT_NEAR(plan["memory"]["parameters_bytes"].get<double>(), expected, expected * 1e-4);
}

// Llama 4 Scout with its vision tower (torchtune's scout YAML, images possible): the tower is held
// (sharded) beside the decoder, and its frozen encoder (encoder_trainable false) has no optimizer
// state. The encoder's size from Meta's published vision_config: 34 layers of width 1408, MLP
// 5632, 336-pixel tiles of 14-pixel patches.
TEST(PlanCommand, LlamaFoursFrozenVisionEncoderIsHeldWithoutOptimizerState) {
  const double d = 1408, mlp = 5632, positions = 24 * 24 + 1;
  const double layer = 4 * d * d + 4 * d + d * mlp + mlp + mlp * d + d + 4 * d;
  const double encoder = 34 * layer + 3 * 14 * 14 * d + d + positions * d + 4 * d;
  // Without the YAML's CPU offload it does not fit 8 H100s (exit 1); the shares are planned alike.
  const auto plan = plan_json(
      "--config llama4/scout_17B_16E_full --nproc-per-node 8 --device h100 --seq-len 2048 fsdp_cpu_offload=false", 1);
  ASSERT_EQ(plan["layout"]["shard"], 4);  // tensor_parallel_dim 2: the tower is whole on both, then sharded 4 ways
  const double parameters = plan["memory"]["parameters_bytes"].get<double>();
  const double frozen = encoder * 2 / 4;  // bf16
  // AdamW's two bf16 moments for every parameter but the frozen encoder's (FSDP's row padding: a
  // few KB).
  EXPECT_NEAR(plan["memory"]["optimizer_state_bytes"].get<double>(), 2 * (parameters - frozen), 1e6);
}

TEST(PlanCommand, ADeviceTooSmallListsChangesThatFitAndEachOneDoes) {
  const std::string config = "--config llama3/8B_full --device a10g --seq-len 2048";
  const auto plan = plan_json(config, 1);
  EXPECT_FALSE(plan["fits"].get<bool>());
  const double peak = plan["memory"]["peak_bytes"].get<double>();
  // A whole 8B model with AdamW in bf16 is 16 bytes per parameter before any activation.
  EXPECT_GT(peak, 4 * 2 * kLlama3_8B);
  bool one_fits = false;
  for (const auto& change : plan["changes"]) {
    EXPECT_LT(change["peak_bytes"].get<double>(), peak) << change.dump();
    if (!change["fits"].get<bool>()) continue;
    one_fits = true;
    std::string args = config + " --nproc-per-node " + std::to_string(change["nproc_per_node"].get<int>()) +
                       " --nnodes " + std::to_string(change["nnodes"].get<int>());
    for (const auto& o : change["overrides"]) args += " " + o.get<std::string>();
    const auto again = plan_json(args, 0);
    EXPECT_EQ(again["memory"]["peak_bytes"].get<double>(), change["peak_bytes"].get<double>()) << args;
  }
  EXPECT_TRUE(one_fits) << plan["changes"].dump(2);

  const auto text = fttest::run_fthost("plan " + config);
  EXPECT_EQ(text.exit_code, 1);
  for (const char* part : {"DOES NOT FIT", "changes that lower the peak", "fits", "per rank at the peak"})
    EXPECT_NE(text.output.find(part), std::string::npos) << part << "\n" << text.output;
}

TEST(PlanCommand, SeqLenDataPlansTheDatasetsLongestSample) {
  // The tiny Alpaca run without its tokenizer's max_seq_len: samples keep their own lengths.
  const std::string fixtures = fttest::fixtures_dir();
  const std::string config = "--config " + std::string(FT_SOURCE_DIR) + "/configs/tiny_alpaca_llama3.toml" +
                             " tokenizer.path=" + fixtures +
                             "/tokenizers/llama3/tokenizer.json dataset.source=" + fixtures +
                             "/data/alpaca_tiny.json '~tokenizer.max_seq_len'";
  // The longest sample as `fthost data --json` lists them, one JSON object per sample.
  const auto data = fttest::run_command_stdout(std::string(FTHOST_BINARY) + " data --json " + config + " 2>/dev/null");
  ASSERT_EQ(data.exit_code, 0) << data.output;
  std::size_t longest = 0, samples = 0;
  std::istringstream lines(data.output);
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (!j.contains("sample")) continue;
    ++samples;
    longest = std::max(longest, j["tokens"].size());
  }
  ASSERT_EQ(samples, 100u);
  const auto plan = plan_json(config + " --seq-len data", 0);
  EXPECT_EQ(plan["batch"]["seq_len"].get<std::size_t>(), longest);
  EXPECT_EQ(plan["batch"]["seq_len_source"], "the longest of the dataset's 100 samples");
  fttest::expect_refused("plan " + config + " --seq-len many", {"--seq-len many: expected a number of tokens"});
}

TEST(PlanCommand, BadInputGetsTheRunsErrors) {
  fttest::expect_refused("plan --config llama3/8B_full --device h900",
                         {"--device h900: no datasheet for it; known: h100-pcie", "a10g"});
  fttest::expect_refused(
      "plan --config llama3/8B_full --nproc-per-node 8 tensor_parallel_dim=3 "
      "tensor_parallel_plan._component_=torchtune.models.llama3.base_llama_tp_plan",
      {"tensor_parallel_dim", "3 does not divide the 8 ranks"});
  fttest::expect_refused("plan --config llama3/8B_full --device-memory 80XB", {"--device-memory 80XB: unknown unit"});
  fttest::expect_refused("validate --config llama3/8B_full --device h100", {"--device is an option of `fthost plan`"});
  fttest::expect_refused("plan --config llama3/8B_full --master-addr 10.0.0.1",
                         {"--master-addr starts ranks; `fthost plan` starts none"});
  // A key the schema does not know: the words `fthost validate` uses.
  const auto validate = fttest::run_fthost("validate --config llama3/8B_full batch_sise=4");
  const auto plan = fttest::run_fthost("plan --config llama3/8B_full batch_sise=4");
  EXPECT_NE(validate.exit_code, 0);
  EXPECT_NE(plan.exit_code, 0);
  const auto reason = validate.output.find("batch_sise");
  ASSERT_NE(reason, std::string::npos) << validate.output;
  EXPECT_NE(plan.output.find("batch_sise"), std::string::npos) << plan.output;
}

}  // namespace
