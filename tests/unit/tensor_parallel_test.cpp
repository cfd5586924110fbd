// Tensor parallelism with real ranks over loopback (Gloo): tensor_parallel_dim ranks split every
// layer (Megatron layout) and the loss (vocabulary-parallel cross-entropy), and must reproduce
// torchtune's single-process golden trajectories and final weights, alone and composed with
// FSDP / HSDP / DDP on the data-parallel ranks, with activation checkpointing and across a
// resume. Plans that the model cannot apply fail with the plan entry named.
#include "golden_cases.h"
#include "resume_reference.h"
#include "test_helpers.h"

#include <boost/filesystem.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace fttest::golden;

const char* kChunked = "torchtune.modules.loss.CEWithChunkedOutputLoss";
const std::string kTp2 =
    " tensor_parallel_dim=2 tensor_parallel_plan._component_=torchtune.models.llama3.base_llama_tp_plan";

struct TensorParallelCase {
  std::string name;
  std::string golden;
  std::string loss;
  int ranks;
  // Per data-parallel rank; 0: the case's own (tensor-parallel ranks of one group read the same
  // samples, so with one data-parallel rank the case's own batch is the global batch).
  int batch_size;
  int grad_accum;
  std::string overrides;
};

std::string run_args(const TensorParallelCase& c, const std::string& out) {
  const std::string config =
      fttest::write_temp("run.toml", config_for(c.golden, c.loss, out, c.batch_size, c.grad_accum));
  return "--nproc-per-node " + std::to_string(c.ranks) + " --config " + config + kTp2 + " " + c.overrides;
}

class TensorParallelGolden : public ::testing::TestWithParam<TensorParallelCase> {};

TEST_P(TensorParallelGolden, MatchesSingleProcessTorchtune) {
  const TensorParallelCase& c = GetParam();
  const std::string out = fttest::temp_dir();
  const auto r = fttest::run_fthost(run_args(c, out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("tensor parallelism: 2 ranks per group"), std::string::npos) << r.output;
  expect_matches_golden(c.golden, out, r.output);
}

const char* kLinear = "torchtune.modules.loss.LinearCrossEntropyLoss";
const char* kFull = "torch.nn.CrossEntropyLoss";

INSTANTIATE_TEST_SUITE_P(
    Layouts, TensorParallelGolden,
    ::testing::Values(
        // 2 ranks, one tensor-parallel group: every golden case, each loss.
        TensorParallelCase{"tp2_untied", "llama3_untied_ga2", kChunked, 2, 0, 0, ""},
        TensorParallelCase{"tp2_tied_llama31_clipped", "llama31_tied_clip", kChunked, 2, 0, 0, ""},
        TensorParallelCase{"tp2_tied_qwen2_clipped", "qwen2_tied_ga2_clip", kChunked, 2, 0, 0, ""},
        TensorParallelCase{"tp2_full_cross_entropy", "llama3_untied_ga2", kFull, 2, 0, 0, ""},
        TensorParallelCase{"tp2_linear_cross_entropy_untied", "llama3_untied_ga2", kLinear, 2, 0, 0, ""},
        TensorParallelCase{"tp2_linear_cross_entropy_tied", "qwen2_tied_ga2_clip", kLinear, 2, 0, 0, ""},
        TensorParallelCase{"tp2_inference_plan", "llama31_tied_clip", kChunked, 2, 0, 0,
                           "tensor_parallel_plan.inference=true"},
        TensorParallelCase{"tp2_activation_checkpointing", "qwen2_tied_ga2_clip", kChunked, 2, 0, 0,
                           "enable_activation_checkpointing=true"},
        // 4 ranks: 2 data-parallel ranks of 2 tensor-parallel ranks; half the case's batch each.
        TensorParallelCase{"tp2_x_fsdp2", "llama3_untied_ga2", kChunked, 4, 1, 2, ""},
        TensorParallelCase{"tp2_x_fsdp2_tied_clipped", "qwen2_tied_ga2_clip", kChunked, 4, 1, 2, ""},
        TensorParallelCase{"tp2_x_fsdp2_clipped_custom_sharded_layers", "llama31_tied_clip", kChunked, 4, 1, 1,
                           "'custom_sharded_layers=[\"tok_embeddings\", \"output\"]'"},
        TensorParallelCase{"tp2_x_hsdp_2x1", "llama3_untied_ga2", kChunked, 4, 1, 2,
                           "parallelism._component_=fthost.parallelism.hsdp parallelism.data_parallel_replicate_dim=2"},
        TensorParallelCase{"tp2_x_ddp2_clipped", "qwen2_tied_ga2_clip", kChunked, 4, 1, 2,
                           "parallelism._component_=fthost.parallelism.ddp"},
        TensorParallelCase{"tp2_x_fsdp2_activation_checkpointing_linear", "llama3_untied_ga2", kLinear, 4, 1, 2,
                           "enable_activation_checkpointing=true"}),
    [](const auto& param_info) { return param_info.param.name; });

// Each rank holds half of every split matrix; only the norms (a few hundred numbers) are whole.
TEST(TensorParallel, EachRankHoldsHalfTheParameters) {
  const std::string out = fttest::temp_dir();
  const auto r = fttest::run_fthost(run_args({"", "llama3_untied_ga2", kChunked, 2, 0, 0, ""}, out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch total, held;
  ASSERT_TRUE(std::regex_search(r.output, total, std::regex("model: (\\d+) parameters"))) << r.output;
  ASSERT_TRUE(std::regex_search(r.output, held, std::regex("this rank holds (\\d+) of the model's parameters")))
      << r.output;
  const double ratio = std::stod(held[1]) / std::stod(total[1]);
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 0.51);
}

// With the same layers checkpointed, the recompute repeats the same operations: bitwise the
// same losses, norms and weights as without.
TEST(TensorParallel, ActivationCheckpointingChangesNoNumber) {
  std::map<bool, std::string> metrics, weights;
  for (bool checkpointing : {false, true}) {
    const std::string out = fttest::temp_dir();
    const auto r = fttest::run_fthost(run_args(
        {"", "qwen2_tied_ga2_clip", kChunked, 2, 0, 0, checkpointing ? "enable_activation_checkpointing=true" : ""},
        out));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::string logged;
    const std::regex numbers("\"(loss|lr|grad_norm|num_tokens)\": ?[-0-9.e+]+");
    const std::string text = fttest::read_file(out + "/logs/metrics.jsonl");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), numbers); it != std::sregex_iterator(); ++it)
      logged += it->str() + "\n";
    metrics[checkpointing] = logged;
    weights[checkpointing] = fttest::read_file(out + "/epoch_0/model.safetensors");
  }
  EXPECT_FALSE(metrics[false].empty());
  EXPECT_EQ(metrics[true], metrics[false]);
  EXPECT_TRUE(weights[true] == weights[false]) << "final weights differ";
}

using fttest::expect_refused;

std::string plain_config(const std::string& out) {
  return " --config " + fttest::write_temp("run.toml", config_for("llama3_untied_ga2", kChunked, out));
}

TEST(TensorParallel, RefusesHeadCountsTheDegreeDoesNotDivide) {
  // 4 query heads split 4 ways, but only 2 key/value heads.
  expect_refused(
      "--nproc-per-node 4" + plain_config(fttest::temp_dir()) +
          " tensor_parallel_dim=4 tensor_parallel_plan._component_=torchtune.models.llama3.base_llama_tp_plan",
      {"tensor_parallel_plan",
       "layers.0.attn: num_kv_heads (2) must be divisible by the tensor-parallel "
       "size (tensor_parallel_dim = 4)"});
}

TEST(TensorParallel, RefusesAWorldSizeTheDegreeDoesNotDivide) {
  expect_refused("--nproc-per-node 3" + plain_config(fttest::temp_dir()) + kTp2,
                 {"tensor_parallel_dim: 2 does not divide the 3 ranks of this run",
                  "data_parallel_replicate_dim x data_parallel_shard_dim x tensor_parallel_dim"});
  // The data-parallel dimensions must fill the rest of the world.
  expect_refused("--nproc-per-node 4" + plain_config(fttest::temp_dir()) + kTp2 + " data_parallel_shard_dim=4",
                 {"data_parallel_shard_dim",
                  "replicate (1) x shard (4) x tensor_parallel_dim (2) must equal the 4 ranks of this run"});
}

TEST(TensorParallel, RefusesAPlanTheModelCannotApply) {
  const std::string custom = " tensor_parallel_dim=2 tensor_parallel_plan._component_=fthost.tensor_parallel_plan";
  // A module the model lacks.
  expect_refused("--nproc-per-node 2" + plain_config(fttest::temp_dir()) + custom +
                     " 'tensor_parallel_plan.colwise=[\"layers.*.attn.wq\"]'",
                 {"tensor_parallel_plan", "plan entry \"layers.*.attn.wq\" (colwise) names no module of this model",
                  "layers.0 .. layers.1"});
  // Half of an attention block.
  expect_refused("--nproc-per-node 2" + plain_config(fttest::temp_dir()) + custom +
                     " 'tensor_parallel_plan.colwise=[\"layers.*.attn.q_proj\"]'",
                 {"layers.0.attn: the plan splits only some of q_proj, k_proj, v_proj, output_proj"});
  // A style the module cannot take.
  expect_refused(
      "--nproc-per-node 2" + plain_config(fttest::temp_dir()) + custom + " 'tensor_parallel_plan.rowwise=[\"output\"]'",
      {"plan entry \"output\" (rowwise) would split output rowwise", "it accepts colwise there"});
  // No plan at all.
  expect_refused("--nproc-per-node 2" + plain_config(fttest::temp_dir()) + " tensor_parallel_dim=2",
                 {"tensor_parallel_dim", "Tensor Parallel plan needs to be provided"});
}

// A plan written in the config with the base plan's splits trains the same numbers.
TEST(TensorParallel, ConfigListedPlanEqualsTheBasePlan) {
  const std::string out = fttest::temp_dir();
  const auto r = fttest::run_fthost(
      "--nproc-per-node 2" + plain_config(out) +
      " tensor_parallel_dim=2 tensor_parallel_plan._component_=fthost.tensor_parallel_plan"
      " 'tensor_parallel_plan.colwise=[\"layers.*.attn.[qkv]_proj\", \"layers.*.mlp.w[13]\", \"output\"]'"
      " 'tensor_parallel_plan.rowwise=[\"layers.*.attn.output_proj\", \"layers.*.mlp.w2\", \"tok_embeddings\"]'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_matches_golden("llama3_untied_ga2", out, r.output);
}

TEST(TensorParallel, LsListsThePlans) {
  const auto r = fttest::run_fthost("ls tensor_parallel_plan -v");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("torchtune.models.llama3.base_llama_tp_plan"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fthost.tensor_parallel_plan"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("inference"), std::string::npos) << r.output;
}

// Tensor parallelism x FSDP on 4 ranks (2 x 2): every rank's optimizer slice is saved, the
// checkpoint's model is the whole Hugging Face model, a run stopped mid-epoch (SIGTERM to the
// launcher, which forwards it: the ranks agree on a step outside their tensor-parallel groups'
// collectives, save it and exit 75) and resumed continues bitwise to the same final weights,
// and a different layout of the same 4 ranks is refused.
TEST(TensorParallel, KilledMidEpochResumesBitwiseAndRefusesAnotherLayout) {
  const std::string shape = " epochs=2 max_steps_per_epoch=6";
  auto args = [&](const std::string& out) {
    return run_args({"", "qwen2_tied_ga2_clip", kChunked, 4, 1, 2, ""}, out) + shape;
  };
  const std::string full = fttest::temp_dir();
  const auto a = fttest::run_fthost(args(full) + " save_every_n_steps=3");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_TRUE(boost::filesystem::exists(full + "/step_3/recipe_state/optimizer-rank-0000" + std::to_string(rank) +
                                          "-of-00004.safetensors"));
  const auto saved = read_saved_model(full + "/step_3");
  ASSERT_TRUE(saved.count("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_EQ(saved.at("model.layers.0.self_attn.q_proj.weight").size(), 64u * 64u);  // whole, not a slice
  const auto reference = read_jsonl(full + "/logs/metrics.jsonl");
  ASSERT_EQ(reference.size(), 12u);

  // Stopped once it has logged 5 steps, then resumed from the checkpoint of the step it stopped at.
  const std::string out = fttest::temp_dir();
  const std::string cmd = std::string(FTHOST_BINARY) + " " + args(out) + " save_every_n_steps=2";
  const pid_t launcher = fork();
  if (launcher == 0) {
    const std::string log = out + "/killed.log";
    execl("/bin/sh", "sh", "-c", ("exec " + cmd + " > " + log + " 2>&1").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto logged_steps = [&] {  // complete lines only: the file is being written
    const std::string text = fttest::read_file(out + "/logs/metrics.jsonl");
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  };
  for (int i = 0; i < 1200 && logged_steps() < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  kill(launcher, SIGTERM);
  int status = 0;
  waitpid(launcher, &status, 0);
  const std::size_t before = logged_steps();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 75) << fttest::read_file(out + "/killed.log");
  ASSERT_GE(before, 5u) << fttest::read_file(out + "/killed.log");
  ASSERT_LT(before, 12u) << "the run ended before it was stopped";
  const auto b = fttest::run_fthost(args(out) + " save_every_n_steps=2 resume_from_checkpoint=true");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("resumed from " + out + "/"), std::string::npos) << b.output;
  EXPECT_NE(b.output.find(": step " + std::to_string(before) + ", epoch"), std::string::npos) << b.output;
  EXPECT_EQ(read_jsonl(out + "/logs/metrics.jsonl").size(), 12u) << "a step ran twice or not at all";
  fttest::resume::expect_same_trajectory(fttest::resume::by_step(reference), read_jsonl(out + "/logs/metrics.jsonl"),
                                         b.output);
  EXPECT_TRUE(fttest::read_file(out + "/epoch_1/model.safetensors") ==
              fttest::read_file(full + "/epoch_1/model.safetensors"));

  // The same 4 ranks as plain FSDP: 4 data-parallel ranks instead of 2.
  const std::string other = fttest::temp_dir();
  const std::string fsdp4 = "--nproc-per-node 4 --config " +
                            fttest::write_temp("run.toml", config_for("qwen2_tied_ga2_clip", kChunked, other, 1, 2)) +
                            shape + " resume_from_checkpoint=" + full + "/step_3";
  expect_refused(fsdp4, {"written by a run of world size 4 (2 data-parallel ranks), this run has 4 (4)"});
}

}  // namespace
