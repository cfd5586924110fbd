// optimizer_in_bwd through the fthost binary: stepping each parameter in backward trains the
// same model as the ordinary optimizer step (single rank, 2-rank FSDP and DDP), resumes
// bitwise from its own checkpoints, never holds the whole model's gradient at once, and keeps
// the seed's conflicts with clipping and gradient accumulation; and, in process, its
// per-tensor optimizers' state has the layout and values of one optimizer over every tensor.
#include "train/optimizer_in_backward.h"
#include "builtin_plugins.h"
#include "golden_cases.h"
#include "test_helpers.h"

#include <ATen/ATen.h>

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>

namespace {

using fttest::golden::json;
using fttest::golden::read_jsonl;
using fttest::golden::rel_diff;

// llama3_untied_ga2 without clipping (config_for logs an unclipped norm with "inf"; clipping
// is refused with optimizer_in_bwd) and one micro-batch of 4 samples per step: the same samples
// per step as the golden case's 2 x 2.
const char* kCase = "llama3_untied_ga2";
const char* kLoss = "torchtune.modules.loss.CEWithChunkedOutputLoss";
const std::string kUnclipped = " ~clip_grad_norm";

std::string config_in(const std::string& out, int batch_size) {
  return fttest::write_temp("run.toml", fttest::golden::config_for(kCase, kLoss, out, batch_size, 1));
}

fttest::CommandResult train(const std::string& out, const std::string& args, int batch_size = 4) {
  return fttest::run_fthost("--config " + config_in(out, batch_size) + kUnclipped + " " + args);
}

std::vector<json> metrics_of(const std::string& out) { return read_jsonl(out + "/logs/metrics.jsonl"); }

// The ordinary single-rank run every optimizer_in_bwd run is compared with.
class OptimizerInBackward : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    reference_dir_ = new std::string(fttest::temp_dir());
    auto r = train(*reference_dir_, "");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { delete reference_dir_; }

  // The same lr and token counts at every step, the same losses within a relative 1e-5 and
  // the same final weights within 1e-6: AdamW updates each tensor from its own gradient alone, so one optimizer per
  // tensor computes what one optimizer over all does; only rounding differs, since the loss is
  // scaled by 1 / tokens before backward instead of the gradients after it (float32 products
  // in another order, ~1e-7 relative per step, amplified a little by Adam's normalisation over
  // 10 steps). The golden trajectory (torchtune's) is an independent anchor at its 2e-4.
  static void expect_same_training(const std::string& out, const std::string& log) {
    const auto reference = metrics_of(*reference_dir_);
    const auto rows = metrics_of(out);
    const auto golden = read_jsonl(fttest::golden::golden_dir() + "/" + kCase + ".expected.jsonl");
    ASSERT_EQ(rows.size(), reference.size()) << log;
    ASSERT_EQ(rows.size(), golden.size()) << log;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(i + 1));
      EXPECT_EQ(rows[i].at("step"), reference[i].at("step"));
      EXPECT_EQ(rows[i].at("num_tokens").get<double>(), reference[i].at("num_tokens").get<double>());
      EXPECT_EQ(rows[i].at("lr").get<double>(), reference[i].at("lr").get<double>());
      EXPECT_LT(rel_diff(rows[i].at("loss"), reference[i].at("loss")), 1e-5)
          << rows[i].at("loss") << " vs " << reference[i].at("loss");
      EXPECT_LT(rel_diff(rows[i].at("loss"), golden[i].at("loss")), 2e-4);
      EXPECT_FALSE(rows[i].contains("grad_norm")) << "nothing is clipped, so no norm is computed";
    }
    const auto weights = fttest::golden::read_saved_model(out + "/epoch_0");
    const auto reference_weights = fttest::golden::read_saved_model(*reference_dir_ + "/epoch_0");
    ASSERT_EQ(weights.size(), reference_weights.size());
    for (const auto& [name, values] : reference_weights) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(weights.count(name));
      const auto& got = weights.at(name);
      ASSERT_EQ(got.size(), values.size());
      // A few float32 ulps of weights of order 1, a thousandth of one Adam step (lr 1e-3): the
      // ordinary 2-rank runs differ from the single-rank one by as much (summation order).
      double worst = 0;
      for (std::size_t k = 0; k < values.size(); ++k)
        worst = std::max(worst, static_cast<double>(std::abs(got[k] - values[k])));
      EXPECT_LT(worst, 1e-6);
    }
  }

  // "at most K of N trainable tensors held a gradient when one stepped", as the run logged it.
  static std::pair<int, int> gradients_alive(const std::string& log) {
    std::smatch m;
    if (!std::regex_search(log, m, std::regex("at most (\\d+) of (\\d+) trainable tensors held a gradient"))) {
      ADD_FAILURE() << "no gradients-alive line in\n" << log;
      return {0, 0};
    }
    return {std::stoi(m[1]), std::stoi(m[2])};
  }

  static std::string* reference_dir_;
};

std::string* OptimizerInBackward::reference_dir_ = nullptr;

TEST_F(OptimizerInBackward, SingleRankTrainsAsTheOrdinaryStep) {
  const std::string out = fttest::temp_dir();
  auto r = train(out, "optimizer_in_bwd=true");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_same_training(out, r.output);
  // On one device a parameter steps the moment autograd accumulates its gradient, which is
  // freed right after: only the stepping tensor ever holds one.
  const auto [most, tensors] = gradients_alive(r.output);
  EXPECT_EQ(most, 1) << r.output;
  EXPECT_GT(tensors, 10);
}

TEST_F(OptimizerInBackward, FsdpTwoRanksTrainAsTheOrdinaryStep) {
  const std::string out = fttest::temp_dir();
  auto r = train(out, "--nproc-per-node 2 parallelism._component_=fthost.parallelism.fsdp optimizer_in_bwd=true", 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_same_training(out, r.output);
  // One shard per unit (2 layers + the root): each is stepped and freed right after its
  // reduce-scatter, before the next unit's arrives.
  const auto [most, tensors] = gradients_alive(r.output);
  EXPECT_EQ(tensors, 3) << r.output;
  EXPECT_EQ(most, 1) << r.output;
}

TEST_F(OptimizerInBackward, DdpTwoRanksTrainAsTheOrdinaryStep) {
  const std::string out = fttest::temp_dir();
  auto r = train(out, "--nproc-per-node 2 parallelism._component_=fthost.parallelism.ddp optimizer_in_bwd=true", 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_same_training(out, r.output);
  // Released per layer bucket: a layer's 9 tensors plus the root's 3 (embedding, norm, output,
  // whose gradients arrive first and are reduced last), never the 21 of the whole model.
  const auto [most, tensors] = gradients_alive(r.output);
  EXPECT_EQ(tensors, 21) << r.output;
  EXPECT_LE(most, 12) << r.output;
}

// A run saving step checkpoints, resumed from one, continues bitwise as the uninterrupted run:
// the per-tensor optimizers' state is saved and restored exactly.
// Context parallelism: both ranks read the same 4 samples per step, each holding half of every
// sequence; DDP all-reduces each bucket as its gradients arrive and the optimizer steps it.
TEST_F(OptimizerInBackward, ContextParallelTwoRanksTrainAsTheOrdinaryStep) {
  const std::string out = fttest::temp_dir();
  auto r = train(out,
                 "--nproc-per-node 2 parallelism._component_=fthost.parallelism.ddp optimizer_in_bwd=true "
                 "context_parallel_dim=2 context_parallel_rotate_method=alltoall");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("context parallelism: each sequence split over 2 ranks"), std::string::npos) << r.output;
  expect_same_training(out, r.output);
}

TEST_F(OptimizerInBackward, ResumesBitwiseFromItsCheckpoint) {
  for (const std::string ranks : {"", "--nproc-per-node 2 parallelism._component_=fthost.parallelism.fsdp"}) {
    SCOPED_TRACE(ranks.empty() ? "single rank" : "fsdp");
    const int batch = ranks.empty() ? 4 : 2;
    const std::string full = fttest::temp_dir();
    auto a = train(full, ranks + " optimizer_in_bwd=true save_every_n_steps=4", batch);
    ASSERT_EQ(a.exit_code, 0) << a.output;
    const std::string resumed = fttest::temp_dir();
    auto b = train(resumed, ranks + " optimizer_in_bwd=true resume_from_checkpoint=" + full + "/step_4", batch);
    ASSERT_EQ(b.exit_code, 0) << b.output;
    std::map<int, json> reference;
    for (const auto& row : metrics_of(full)) reference[row.at("step").get<int>()] = row;
    const auto rows = metrics_of(resumed);
    ASSERT_EQ(rows.size(), 6u) << b.output;
    for (const auto& row : rows) {
      const int step = row.at("step").get<int>();
      SCOPED_TRACE("step " + std::to_string(step));
      ASSERT_TRUE(reference.count(step));
      EXPECT_GE(step, 5);
      EXPECT_EQ(row.at("loss").get<double>(), reference.at(step).at("loss").get<double>());
      EXPECT_EQ(row.at("lr").get<double>(), reference.at(step).at("lr").get<double>());
      EXPECT_EQ(row.at("num_tokens").get<double>(), reference.at(step).at("num_tokens").get<double>());
    }
    EXPECT_TRUE(fttest::read_file(resumed + "/epoch_0/model.safetensors") ==
                fttest::read_file(full + "/epoch_0/model.safetensors"));
  }
}

// The checkpoint layout does not depend on the setting: an ordinary run resumes from an
// optimizer_in_bwd checkpoint and trains on as the ordinary run does (within rounding).
TEST_F(OptimizerInBackward, OrdinaryRunResumesFromItsCheckpoint) {
  const std::string full = fttest::temp_dir();
  auto a = train(full, "optimizer_in_bwd=true save_every_n_steps=4");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const std::string resumed = fttest::temp_dir();
  auto b = train(resumed, "resume_from_checkpoint=" + full + "/step_4");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  std::map<int, json> reference;
  for (const auto& row : metrics_of(*reference_dir_)) reference[row.at("step").get<int>()] = row;
  const auto rows = metrics_of(resumed);
  ASSERT_EQ(rows.size(), 6u) << b.output;
  for (const auto& row : rows) {
    const int step = row.at("step").get<int>();
    SCOPED_TRACE("step " + std::to_string(step));
    EXPECT_LT(rel_diff(row.at("loss"), reference.at(step).at("loss")), 1e-5);
  }
}

// The seed's two conflicts, with its wording, name the key; without them the config is valid.
// Both memory features at once: checkpointing recomputes each layer inside backward, where the
// in-backward steps of that layer's parameters then run. The recompute repeats the same float32
// operations, so the run is bit for bit the optimizer-in-backward run without checkpointing,
// on one rank and with FSDP (which must gather a layer again before its recompute).
TEST_F(OptimizerInBackward, ActivationCheckpointingLeavesItBitwiseUnchanged) {
  for (const std::string launch : {"", "--nproc-per-node 2 parallelism._component_=fthost.parallelism.fsdp"}) {
    SCOPED_TRACE(launch.empty() ? "single rank" : launch);
    const int batch_size = launch.empty() ? 4 : 2;
    const std::string plain = fttest::temp_dir(), checkpointed = fttest::temp_dir();
    auto a = train(plain, launch + " optimizer_in_bwd=true", batch_size);
    ASSERT_EQ(a.exit_code, 0) << a.output;
    auto b = train(checkpointed, launch + " optimizer_in_bwd=true enable_activation_checkpointing=true", batch_size);
    ASSERT_EQ(b.exit_code, 0) << b.output;
    EXPECT_NE(b.output.find("activation checkpointing: 2 of 2 layers"), std::string::npos) << b.output;
    const auto rows_a = metrics_of(plain), rows_b = metrics_of(checkpointed);
    ASSERT_EQ(rows_a.size(), rows_b.size());
    ASSERT_FALSE(rows_a.empty());
    for (std::size_t i = 0; i < rows_a.size(); ++i)
      EXPECT_EQ(rows_a[i].at("loss").get<double>(), rows_b[i].at("loss").get<double>()) << "step " << i + 1;
    EXPECT_TRUE(fttest::golden::read_saved_model(plain + "/epoch_0") ==
                fttest::golden::read_saved_model(checkpointed + "/epoch_0"))
        << "final weights differ";
  }
}

TEST(OptimizerInBackwardConfig, ConflictsWithClippingAndAccumulation) {
  const std::string out = fttest::temp_dir();
  const std::string config = fttest::write_temp("run.toml", fttest::golden::config_for(kCase, kLoss, out, 4, 1));
  auto clipped = fttest::run_fthost("validate --config " + config + " optimizer_in_bwd=true clip_grad_norm=1.0");
  EXPECT_EQ(clipped.exit_code, 2) << clipped.output;
  EXPECT_NE(clipped.output.find("optimizer_in_bwd"), std::string::npos) << clipped.output;
  EXPECT_NE(clipped.output.find("Gradient clipping is not supported with optimizer in bwd. Please set "
                                "clip_grad_norm=None, or optimizer_in_bwd=False."),
            std::string::npos)
      << clipped.output;
  auto accumulating = fttest::run_fthost("validate --config " + config + kUnclipped +
                                         " optimizer_in_bwd=true gradient_accumulation_steps=2");
  EXPECT_EQ(accumulating.exit_code, 2) << accumulating.output;
  EXPECT_NE(accumulating.output.find("optimizer_in_bwd"), std::string::npos) << accumulating.output;
  EXPECT_NE(accumulating.output.find("Gradient accumulation is not supported with optimizer in bwd. Please set "
                                     "gradient_accumulation_steps=1, or optimizer_in_bwd=False."),
            std::string::npos)
      << accumulating.output;
  auto valid = fttest::run_fthost("validate --config " + config + kUnclipped + " optimizer_in_bwd=true");
  EXPECT_EQ(valid.exit_code, 0) << valid.output;
}

// In process: stepping every tensor in turn gives the state one AdamW over all tensors has after
// one step, under the same names and bit for bit, and that state loads back; a name for no
// tensor is refused by name.
TEST(OptimizerInBackwardState, SameLayoutAsOneOptimizerOverEveryTensor) {
  const ft::ConfigNode root =
      fttest::config_root("[optimizer]\n_component_ = \"torch.optim.AdamW\"\nlr = 0.01\nweight_decay = 0.1\n");
  auto make_params = [] {
    at::manual_seed(3);
    return std::vector<at::Tensor>{at::randn({3, 2}).requires_grad_(), at::randn({4}).requires_grad_()};
  };
  auto set_grads = [](std::vector<at::Tensor>& params) {
    for (std::size_t i = 0; i < params.size(); ++i)
      params[i].mutable_grad() = at::full_like(params[i], 0.5 * static_cast<double>(i + 1));
  };
  std::vector<at::Tensor> whole_params = make_params(), split_params = make_params();
  auto whole = fttest::builtin_registry().instantiate<ft::Optimizer>(root.table("optimizer"), {whole_params});
  fthost::OptimizerInBackward split(fttest::builtin_registry(), root.table("optimizer"), split_params);
  set_grads(whole_params);
  set_grads(split_params);
  whole->step();
  for (std::size_t i = 0; i < split_params.size(); ++i) {
    split.step_parameter(i);
    EXPECT_FALSE(split_params[i].grad().defined()) << "the gradient is freed right after its step";
  }
  EXPECT_EQ(split.most_gradients_alive(), 2u);  // both were set before the first step
  const auto expected = whole->state();
  const auto state = split.state();
  ASSERT_EQ(state.size(), expected.size());
  for (std::size_t k = 0; k < state.size(); ++k) {
    EXPECT_EQ(state[k].name, expected[k].name);
    EXPECT_TRUE(at::equal(state[k].tensor, expected[k].tensor)) << state[k].name;
  }

  std::vector<ft::NamedTensor> copies;
  for (const auto& t : state) copies.push_back({t.name, t.tensor.clone()});
  std::vector<at::Tensor> fresh_params = make_params();
  fthost::OptimizerInBackward restored(fttest::builtin_registry(), root.table("optimizer"), fresh_params);
  restored.load_state(copies);
  const auto reloaded = restored.state();
  ASSERT_EQ(reloaded.size(), state.size());
  for (std::size_t k = 0; k < state.size(); ++k) EXPECT_TRUE(at::equal(reloaded[k].tensor, state[k].tensor));

  const std::string unknown = fttest::error_of<ft::Error>([&] {
    restored.load_state({{"state.2.exp_avg", at::zeros({4})}});
  });
  EXPECT_NE(unknown.find("\"state.2.exp_avg\""), std::string::npos) << unknown;
  const std::string misshapen = fttest::error_of<ft::Error>([&] {
    restored.load_state({{"state.1.exp_avg", at::zeros({5})}});
  });
  EXPECT_NE(misshapen.find("\"state.1."), std::string::npos) << misshapen;
  EXPECT_THROW(split.step(), ft::Error);
}

}  // namespace
