// ft_optim (torch.optim.SGD, Adam, AdamW) through the registry as the recipe builds it. Expected
// parameters are computed by hand in each test from the update rules in the torch.optim docs
// (SGD, Adam, AdamW pseudo-code), not from a run of the plugin.
#include "builtin_plugins.h"

#include <ft/optimizer.h>

#include <torch/torch.h>

namespace {

class Optimizers : public fttest::BuiltinPluginsTest {
 protected:
  static std::shared_ptr<ft::Optimizer> optimizer(const std::string& keys, torch::Tensor param) {
    return registry().instantiate<ft::Optimizer>(root("[optimizer]\n" + keys).table("optimizer"), {{param}});
  }
};

torch::Tensor param_with_grad(double value, double grad) {
  auto p = torch::full({1}, value, torch::dtype(torch::kFloat64).requires_grad(true));
  p.mutable_grad() = torch::full({1}, grad, torch::kFloat64);
  return p;
}

TEST_F(Optimizers, SgdStep) {
  auto p = param_with_grad(1.0, 2.0);
  auto opt = optimizer("_component_ = \"torch.optim.SGD\"\nlr = 0.1\n", p);
  opt->step();
  EXPECT_NEAR(p.item<double>(), 1.0 - 0.1 * 2.0, 1e-12);
  opt->zero_grad(true);
  EXPECT_FALSE(p.grad().defined());
}

// torch.optim.SGD with momentum mu: b_1 = g, b_t = mu * b_{t-1} + g; p -= lr * b_t, or with
// Nesterov p -= lr * (g + mu * b_t). The gradient stays 2 for both steps.
TEST_F(Optimizers, SgdMomentumAndNesterovFollowTorchUpdateRule) {
  auto p = param_with_grad(1.0, 2.0);
  auto opt = optimizer("_component_ = \"torch.optim.SGD\"\nlr = 0.1\nmomentum = 0.9\n", p);
  opt->step();
  EXPECT_NEAR(p.item<double>(), 1.0 - 0.1 * 2.0, 1e-12);  // b_1 = 2
  opt->step();
  EXPECT_NEAR(p.item<double>(), 0.8 - 0.1 * 3.8, 1e-12);  // b_2 = 0.9 * 2 + 2

  auto q = param_with_grad(1.0, 2.0);
  auto nesterov = optimizer("_component_ = \"torch.optim.SGD\"\nlr = 0.1\nmomentum = 0.9\nnesterov = true\n", q);
  nesterov->step();
  EXPECT_NEAR(q.item<double>(), 1.0 - 0.1 * (2.0 + 0.9 * 2.0), 1e-12);
  nesterov->step();
  EXPECT_NEAR(q.item<double>(), 0.62 - 0.1 * (2.0 + 0.9 * 3.8), 1e-12);
}

TEST_F(Optimizers, SgdNesterovWithoutMomentumNamesTheKey) {
  auto p = param_with_grad(1.0, 2.0);
  auto msg = fttest::error_of<ft::ConfigError>(
      [&] { optimizer("_component_ = \"torch.optim.SGD\"\nlr = 0.1\nnesterov = true\n", p); });
  EXPECT_NE(msg.find("optimizer.nesterov: requires momentum > 0"), std::string::npos) << msg;
}

TEST_F(Optimizers, AdamWFirstStepDecouplesWeightDecay) {
  auto p = param_with_grad(1.0, 2.0);
  auto opt = optimizer("_component_ = \"torch.optim.AdamW\"\nlr = 0.1\n", p);
  opt->step();
  // Step 1: bias-corrected m = g, v = g^2, so the Adam update is lr * g / (|g| + eps); decay is lr * wd * p.
  const double expected = 1.0 * (1.0 - 0.1 * 0.01) - 0.1 * 2.0 / (2.0 + 1e-8);
  EXPECT_NEAR(p.item<double>(), expected, 1e-12);
  opt->set_lr(0.5);
  EXPECT_DOUBLE_EQ(opt->lr(), 0.5);
}

// torch.optim.Adam adds weight decay to the gradient (L2), unlike AdamW: g' = g + wd * p, and the
// first bias-corrected step is lr * g' / (|g'| + eps). A large eps keeps the step proportional to
// g', so the decay shows in it.
TEST_F(Optimizers, AdamFirstStepAddsWeightDecayToTheGradient) {
  auto p = param_with_grad(1.0, 2.0);
  auto opt = optimizer("_component_ = \"torch.optim.Adam\"\nlr = 0.1\neps = 1.0\nweight_decay = 0.1\n", p);
  opt->step();
  const double g = 2.0 + 0.1 * 1.0;
  EXPECT_NEAR(p.item<double>(), 1.0 - 0.1 * g / (g + 1.0), 1e-12);
}

TEST_F(Optimizers, OptimizerRejectsBadBetas) {
  auto p = param_with_grad(1.0, 2.0);
  auto msg =
      fttest::error_of<ft::ConfigError>([&] { optimizer("_component_ = \"torch.optim.Adam\"\nbetas = [0.9]\n", p); });
  EXPECT_NE(msg.find("optimizer.betas: expected two numbers"), std::string::npos) << msg;
}

}  // namespace
