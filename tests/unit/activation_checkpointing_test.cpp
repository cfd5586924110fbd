// Activation checkpointing: ft::checkpointed itself (gradients, dropout's random mask, what the
// graph keeps).
#include "test_helpers.h"

#include <ft/activation_checkpointing.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

#include <set>
#include <vector>

namespace {

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

// Every node reachable from `root`, counted once.
std::size_t graph_size(const std::shared_ptr<torch::autograd::Node>& root, std::set<std::string>* names = nullptr) {
  std::set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> todo{root.get()};
  while (!todo.empty()) {
    torch::autograd::Node* node = todo.back();
    todo.pop_back();
    if (!node || !seen.insert(node).second) continue;
    if (names) names->insert(node->name());
    for (const auto& edge : node->next_edges()) todo.push_back(edge.function.get());
  }
  return seen.size();
}

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

}  // namespace
