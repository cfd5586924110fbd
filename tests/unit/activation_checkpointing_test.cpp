// Activation checkpointing: ft::checkpointed itself (gradients, dropout's random mask, what the
// graph keeps), and whole runs through the fthost binary that checkpoint every layer or every
// second layer and must train exactly as the same run without checkpointing, on one rank, with
// FSDP and with DDP; the config refusals name their key.
#include "autograd_graph.h"
#include "golden_cases.h"
#include "test_helpers.h"

#include <ft/activation_checkpointing.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

#include <regex>
#include <set>
#include <vector>

namespace {

using namespace fttest::golden;

// ---- ft::checkpointed -------------------------------------------------------------------------

struct SmallNetwork {
  at::Tensor w1 = at::randn({8, 16}).requires_grad_(true);
  at::Tensor b1 = at::randn({16}).requires_grad_(true);
  at::Tensor w2 = at::randn({16, 8}).requires_grad_(true);
  double dropout = 0;

  at::Tensor step(const at::Tensor& x) const {
    at::Tensor h = at::tanh(at::matmul(x, w1) + b1);
    if (dropout > 0) h = at::dropout(h, dropout, /*train=*/true);
    return x + at::matmul(h * h, w2);  // the input is used twice, as a residual layer's is
  }
  std::vector<at::Tensor> parameters() const { return {w1, b1, w2}; }
};

struct Gradients {
  at::Tensor loss;
  std::vector<at::Tensor> of_parameters;
  at::Tensor of_input;
};

// Two steps in a row between a leaf input and a loss; `checkpoint` chooses whether they run
// through ft::checkpointed.
Gradients train_once(const SmallNetwork& net, const at::Tensor& input_leaf, bool checkpoint) {
  for (const at::Tensor& p : net.parameters()) p.mutable_grad() = at::Tensor();
  input_leaf.mutable_grad() = at::Tensor();
  const auto step = [&net](const at::Tensor& x) { return net.step(x); };
  at::Tensor h = input_leaf * 2;  // the step's input has a history of its own
  for (int i = 0; i < 2; ++i) h = checkpoint ? ft::checkpointed(step, h) : step(h);
  at::Tensor loss = (h * h).sum();
  torch::autograd::backward({loss});
  Gradients g{loss.detach(), {}, input_leaf.grad().clone()};
  for (const at::Tensor& p : net.parameters()) g.of_parameters.push_back(p.grad().clone());
  return g;
}

void expect_identical(const Gradients& a, const Gradients& b) {
  EXPECT_TRUE(at::equal(a.loss, b.loss)) << a.loss << " vs " << b.loss;
  EXPECT_TRUE(at::equal(a.of_input, b.of_input));
  ASSERT_EQ(a.of_parameters.size(), b.of_parameters.size());
  for (std::size_t i = 0; i < a.of_parameters.size(); ++i)
    EXPECT_TRUE(at::equal(a.of_parameters[i], b.of_parameters[i])) << "parameter " << i;
}

// The recompute runs the same float32 operations in the same order as the plain forward and
// backward, so the gradients are equal bit for bit.
TEST(Checkpointed, GradientsEqualTheUncheckpointedOnes) {
  at::manual_seed(1);
  const SmallNetwork net;
  const at::Tensor input = at::randn({4, 8}).requires_grad_(true);
  const Gradients plain = train_once(net, input, false);
  const Gradients checkpointed = train_once(net, input, true);
  expect_identical(plain, checkpointed);
  EXPECT_GT(plain.of_input.abs().sum().item<double>(), 0);
}

// Dropout draws its mask from the generator in forward; the recompute must draw the same mask,
// and afterwards the generator continues as if nothing had been recomputed.
TEST(Checkpointed, DropoutDrawsTheSameMaskInTheRecompute) {
  at::manual_seed(2);
  SmallNetwork net;
  net.dropout = 0.5;
  const at::Tensor input = at::randn({4, 8}).requires_grad_(true);

  at::manual_seed(3);
  const Gradients plain = train_once(net, input, false);
  const at::Tensor next_plain = at::rand({4});
  at::manual_seed(3);
  const Gradients checkpointed = train_once(net, input, true);
  const at::Tensor next_checkpointed = at::rand({4});

  expect_identical(plain, checkpointed);
  EXPECT_TRUE(at::equal(next_plain, next_checkpointed)) << "the recompute moved the generator on";
  // Other masks give other gradients, so a recompute that drew fresh masks would be caught.
  at::manual_seed(4);
  const Gradients other_masks = train_once(net, input, false);
  EXPECT_FALSE(at::equal(plain.of_parameters[0], other_masks.of_parameters[0]));
}

using fttest::graph_size;

// The checkpointed steps leave one node each in the graph, holding only their input: none of
// the matmul / tanh / mul nodes (and the activations they save) exist until backward.
TEST(Checkpointed, KeepsNoActivationsUntilBackward) {
  at::manual_seed(4);
  const SmallNetwork net;
  const auto step = [&net](const at::Tensor& x) { return net.step(x); };
  const at::Tensor input = at::randn({4, 8}).requires_grad_(true);
  at::Tensor plain = input * 2, checkpointed = input * 2;
  for (int i = 0; i < 3; ++i) {
    plain = step(plain);
    checkpointed = ft::checkpointed(step, checkpointed);
  }
  std::set<std::string> names;
  const std::size_t checkpointed_nodes = graph_size(checkpointed.grad_fn(), &names);
  const std::size_t plain_nodes = graph_size(plain.grad_fn());
  // MulBackward0 (input * 2), its input's AccumulateGrad, and one node per checkpointed step.
  EXPECT_EQ(checkpointed_nodes, 5u);
  EXPECT_EQ(names.count("ft::CheckpointedStepBackward"), 1u);
  EXPECT_GE(plain_nodes, 3 * 6u) << "each plain step has 6 nodes of its own (mm, add, tanh, mul, mm, add)";
}

// Without gradients (evaluation) a checkpointed step is the step itself.
TEST(Checkpointed, WithoutGradModeRunsThePlainStep) {
  at::manual_seed(5);
  const SmallNetwork net;
  const at::Tensor input = at::randn({4, 8}).requires_grad_(true);
  at::NoGradGuard no_grad;
  const at::Tensor out = ft::checkpointed([&net](const at::Tensor& x) { return net.step(x); }, input);
  EXPECT_FALSE(out.requires_grad());
  EXPECT_TRUE(at::equal(out, net.step(input)));
}

// ---- whole runs --------------------------------------------------------------------------------

const char* kLoss = "torchtune.modules.loss.CEWithChunkedOutputLoss";

struct FinishedRun {
  std::string out;
  fttest::CommandResult result;
};

FinishedRun run_case(const std::string& case_name, int ranks, int batch_size, int grad_accum,
                     const std::string& overrides) {
  FinishedRun r;
  r.out = fttest::temp_dir();
  const std::string config =
      fttest::write_temp("run.toml", config_for(case_name, kLoss, r.out, batch_size, grad_accum));
  const std::string launch = ranks > 1 ? "--nproc-per-node " + std::to_string(ranks) + " " : "";
  r.result = fttest::run_fthost(launch + "--config " + config + " " + overrides);
  return r;
}

// Checkpointing changes where activations live, not what is computed: the recompute runs the
// same float32 operations in the same order on the same values, so every logged loss and grad
// norm and every saved weight must be equal bit for bit to the run without it.
void expect_same_training(const FinishedRun& reference, const FinishedRun& checkpointed) {
  ASSERT_EQ(reference.result.exit_code, 0) << reference.result.output;
  ASSERT_EQ(checkpointed.result.exit_code, 0) << checkpointed.result.output;
  const auto expected = read_jsonl(reference.out + "/logs/metrics.jsonl");
  const auto logged = read_jsonl(checkpointed.out + "/logs/metrics.jsonl");
  ASSERT_EQ(logged.size(), expected.size());
  ASSERT_FALSE(logged.empty());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    EXPECT_EQ(logged[i].at("loss").get<double>(), expected[i].at("loss").get<double>());
    EXPECT_EQ(logged[i].at("grad_norm").get<double>(), expected[i].at("grad_norm").get<double>());
    EXPECT_EQ(logged[i].at("num_tokens").get<double>(), expected[i].at("num_tokens").get<double>());
  }
  const auto reference_weights = read_saved_model(reference.out + "/epoch_0");
  const auto weights = read_saved_model(checkpointed.out + "/epoch_0");
  ASSERT_EQ(weights.size(), reference_weights.size());
  for (const auto& [name, values] : reference_weights) {
    auto it = weights.find(name);
    ASSERT_NE(it, weights.end()) << name;
    EXPECT_TRUE(it->second == values) << name << " differs";
  }
}

// How many of how many layers the run said it checkpoints.
std::string checkpointed_layers(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("activation checkpointing: (\\d+ of \\d+) layers"))) return "none";
  return m[1];
}

// llama31_tied_clip: 3 layers, tied embedding, clipping, shuffled data.
TEST(ActivationCheckpointingRun, SingleRankTrainsExactlyAsWithout) {
  const FinishedRun reference = run_case("llama31_tied_clip", 1, 0, 0, "");
  EXPECT_EQ(checkpointed_layers(reference.result.output), "none");

  const FinishedRun every_layer = run_case("llama31_tied_clip", 1, 0, 0, "enable_activation_checkpointing=true");
  EXPECT_EQ(checkpointed_layers(every_layer.result.output), "3 of 3") << every_layer.result.output;
  expect_same_training(reference, every_layer);

  // torchtune's counter: layers 2, 4, ... counting from 1, so only layer 1 (0-based) of three.
  const FinishedRun every_second = run_case("llama31_tied_clip", 1, 0, 0, "ac_mode=selective ac_option=2");
  EXPECT_EQ(checkpointed_layers(every_second.result.output), "1 of 3") << every_second.result.output;
  expect_same_training(reference, every_second);

  // Matches torchtune's own trajectory as well (the fixtures' tolerances).
  expect_matches_golden("llama31_tied_clip", every_layer.out, every_layer.result.output);
}

// FSDP frees a layer's gathered parameters after forward and gathers them again when the
// layer's backward starts, before the checkpointed recompute reads them.
TEST(ActivationCheckpointingRun, FsdpTwoRanksTrainsExactlyAsWithout) {
  const std::string fsdp = "parallelism._component_=fthost.parallelism.fsdp ";
  const FinishedRun reference = run_case("llama3_untied_ga2", 2, 2, 1, fsdp);
  const FinishedRun every_layer = run_case("llama3_untied_ga2", 2, 2, 1, fsdp + "enable_activation_checkpointing=true");
  EXPECT_EQ(checkpointed_layers(every_layer.result.output), "2 of 2") << every_layer.result.output;
  expect_same_training(reference, every_layer);
  const FinishedRun every_second = run_case("llama3_untied_ga2", 2, 2, 1, fsdp + "ac_mode=selective ac_option=2");
  EXPECT_EQ(checkpointed_layers(every_second.result.output), "1 of 2") << every_second.result.output;
  expect_same_training(reference, every_second);
  expect_matches_golden("llama3_untied_ga2", every_layer.out, every_layer.result.output);
}

// DDP launches a layer's gradient all-reduce when the backward of the layer before it starts.
TEST(ActivationCheckpointingRun, DdpTwoRanksTrainsExactlyAsWithout) {
  const std::string ddp = "parallelism._component_=fthost.parallelism.ddp ";
  const FinishedRun reference = run_case("llama3_untied_ga2", 2, 1, 2, ddp);
  const FinishedRun every_layer = run_case("llama3_untied_ga2", 2, 1, 2, ddp + "ac_mode=full");
  EXPECT_EQ(checkpointed_layers(every_layer.result.output), "2 of 2") << every_layer.result.output;
  expect_same_training(reference, every_layer);
}

// ---- configuration ---------------------------------------------------------------------------

// `fthost validate` reads the keys as the run does; each refusal names its key.
TEST(ActivationCheckpointingConfig, RefusalsNameTheirKey) {
  const std::string config = fttest::write_temp("run.toml", config_for("llama3_untied_ga2", kLoss, "/tmp/unused"));
  auto validate = [&](const std::string& overrides) {
    return fttest::run_fthost("validate --config " + config + " " + overrides);
  };

  EXPECT_EQ(validate("enable_activation_checkpointing=true").exit_code, 0);
  EXPECT_EQ(validate("ac_mode=selective ac_option=3").exit_code, 0);
  EXPECT_EQ(validate("ac_mode=none").exit_code, 0);

  struct Refusal {
    std::string overrides, key, words;
  };
  const std::vector<Refusal> refusals = {
      {"enable_activation_checkpointing=true ac_mode=full", "ac_mode", "enable_activation_checkpointing = true"},
      {"ac_mode=sometimes", "ac_mode", "\"full\" (every layer), \"selective\""},
      {"ac_mode=selective", "ac_option", "needs ac_option"},
      {"ac_mode=selective ac_option=-1", "ac_option",
       "Selective layer AC policy (every_x_layer) expects a positive integer, received -1"},
      {"ac_mode=selective ac_option=op", "ac_option", "op-level selective activation checkpointing"},
      {"ac_mode=selective ac_option=often", "ac_option", "got \"often\""},
  };
  for (const Refusal& r : refusals) {
    SCOPED_TRACE(r.overrides);
    const auto result = validate(r.overrides);
    EXPECT_NE(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find(r.key + ":"), std::string::npos) << result.output;
    EXPECT_NE(result.output.find(r.words), std::string::npos) << result.output;
  }
}

}  // namespace

namespace {

// Offloading is for device inputs: on a CPU input it is refused, not silently a no-op.
TEST(Checkpointed, OffloadingACpuInputIsRefused) {
  const at::Tensor input = at::randn({2, 3}).requires_grad_(true);
  try {
    ft::checkpointed([](const at::Tensor& x) { return x * 2; }, input * 1, ft::CheckpointOptions{true});
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("activation offloading needs an input on a CUDA device"), std::string::npos)
        << e.what();
  }
}

}  // namespace
