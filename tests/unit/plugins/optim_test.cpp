// ft_optim (torch.optim.SGD, Adam, AdamW) through the registry as the recipe builds it. Expected
// parameters are computed by hand in each test from the update rules in the torch.optim docs
// (SGD, Adam, AdamW pseudo-code), not from a run of the plugin.
#include "builtin_plugins.h"

#include <ft/optimizer.h>

#include <ATen/Parallel.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/torch.h>

#include <functional>

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

// The plugin's single-pass kernels against LibTorch's own torch::optim (an independent
// implementation of the same update rules, one whole-tensor op at a time) over several steps on
// tensors large enough to be split across threads: within 1e-6 relative in float32.
struct ReferenceCase {
  std::string keys;  // the plugin's config
  std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)> reference;
};

std::vector<torch::Tensor> random_params(torch::ScalarType dtype) {
  torch::manual_seed(11);
  return {torch::randn({300, 257}).to(dtype), torch::randn({1000}).to(dtype), torch::randn({3}).to(dtype)};
}

void set_random_grads(std::vector<torch::Tensor>& params, int step) {
  torch::manual_seed(100 + step);
  for (auto& p : params) p.mutable_grad() = torch::randn(p.sizes()).to(p.scalar_type());
}

// Largest element difference relative to the tensor's largest value: element-wise relative
// differences of values near zero measure only float32's absolute resolution.
double max_relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  auto a64 = a.to(torch::kFloat64), b64 = b.to(torch::kFloat64);
  return ((a64 - b64).abs().max() / b64.abs().max()).item<double>();
}

std::vector<ReferenceCase> reference_cases() {
  using namespace torch::optim;
  return {
      {"_component_ = \"torch.optim.AdamW\"\nlr = 0.01\nweight_decay = 0.1\n",
       [](auto p) { return std::make_unique<AdamW>(p, AdamWOptions(0.01).weight_decay(0.1)); }},
      {"_component_ = \"torch.optim.AdamW\"\nlr = 0.003\nbetas = [0.8, 0.95]\neps = 1e-6\namsgrad = true\n",
       [](auto p) {
         return std::make_unique<AdamW>(p, AdamWOptions(0.003).betas({0.8, 0.95}).eps(1e-6).amsgrad(true));
       }},
      {"_component_ = \"torch.optim.Adam\"\nlr = 0.01\nweight_decay = 0.05\n",
       [](auto p) { return std::make_unique<Adam>(p, AdamOptions(0.01).weight_decay(0.05)); }},
      {"_component_ = \"torch.optim.SGD\"\nlr = 0.05\nmomentum = 0.9\ndampening = 0.1\nweight_decay = 0.01\n",
       [](auto p) {
         return std::make_unique<SGD>(p, SGDOptions(0.05).momentum(0.9).dampening(0.1).weight_decay(0.01));
       }},
      {"_component_ = \"torch.optim.SGD\"\nlr = 0.05\nmomentum = 0.9\nnesterov = true\n",
       [](auto p) { return std::make_unique<SGD>(p, SGDOptions(0.05).momentum(0.9).nesterov(true)); }},
  };
}

TEST_F(Optimizers, SinglePassKernelsMatchTorchOptimWithin1e6) {
  for (const auto& c : reference_cases()) {
    auto ours = random_params(torch::kFloat32), theirs = random_params(torch::kFloat32);
    auto opt = registry().instantiate<ft::Optimizer>(root("[optimizer]\n" + c.keys).table("optimizer"), {ours});
    auto reference = c.reference(theirs);
    for (int step = 0; step < 5; ++step) {
      set_random_grads(ours, step);
      set_random_grads(theirs, step);
      opt->step();
      reference->step();
    }
    for (std::size_t i = 0; i < ours.size(); ++i)
      EXPECT_LT(max_relative_difference(ours[i], theirs[i]), 1e-6) << c.keys << " parameter " << i;
  }
}

// `fused = true`: LibTorch's fused kernels (the ones CUDA parameters always take), here on their
// CPU build, against torch::optim's one-op-at-a-time update, over steps that create the state,
// with and without momentum buffers, and after a state round trip.
TEST_F(Optimizers, LibTorchFusedKernelsMatchTorchOptimWithin1e6) {
  for (const auto& c : reference_cases()) {
    const std::string keys = c.keys + "fused = true\n";
    auto ours = random_params(torch::kFloat32), theirs = random_params(torch::kFloat32);
    auto opt = registry().instantiate<ft::Optimizer>(root("[optimizer]\n" + keys).table("optimizer"), {ours});
    auto reference = c.reference(theirs);
    EXPECT_FALSE(opt->step_with_gradient_scale(0.5)) << "the fused kernels leave gradient scaling to the recipe";
    for (int step = 0; step < 5; ++step) {
      set_random_grads(ours, step);
      set_random_grads(theirs, step);
      if (step == 3) {  // a resumed optimizer continues from the saved step counts and moments
        auto restored = registry().instantiate<ft::Optimizer>(root("[optimizer]\n" + keys).table("optimizer"), {ours});
        restored->load_state(opt->state());
        opt = std::move(restored);
      }
      opt->step();
      reference->step();
    }
    for (std::size_t i = 0; i < ours.size(); ++i)
      EXPECT_LT(max_relative_difference(ours[i], theirs[i]), 1e-6) << keys << " parameter " << i;
  }
}

// Element-wise kernels: the result cannot depend on how the elements are split across threads,
// nor change between runs.
TEST_F(Optimizers, SinglePassKernelsAreBitwiseRepeatableAcrossThreadCounts) {
  const int threads_before = at::get_num_threads();
  for (const auto& c : reference_cases()) {
    std::vector<std::vector<torch::Tensor>> results;
    for (int threads : {1, 2, 2}) {
      at::set_num_threads(threads);
      auto params = random_params(torch::kFloat32);
      auto opt = registry().instantiate<ft::Optimizer>(root("[optimizer]\n" + c.keys).table("optimizer"), {params});
      for (int step = 0; step < 3; ++step) {
        set_random_grads(params, step);
        opt->step();
      }
      results.push_back(params);
    }
    for (std::size_t run = 1; run < results.size(); ++run)
      for (std::size_t i = 0; i < results[0].size(); ++i)
        EXPECT_TRUE(torch::equal(results[run][i], results[0][i])) << c.keys << " run " << run << " parameter " << i;
  }
  at::set_num_threads(threads_before);
}

// bfloat16 parameters and state are computed in float32 and rounded once per stored value: the
// result stays within bfloat16's resolution (2^-8 relative) of a float32 run on the same values.
TEST_F(Optimizers, Bfloat16StepsStayWithinBfloat16ResolutionOfFloat32) {
  for (const auto& c : reference_cases()) {
    auto half = random_params(torch::kBFloat16);
    std::vector<torch::Tensor> full;
    for (auto& p : half) full.push_back(p.to(torch::kFloat32));
    auto opt_half = registry().instantiate<ft::Optimizer>(root("[optimizer]\n" + c.keys).table("optimizer"), {half});
    auto opt_full = registry().instantiate<ft::Optimizer>(root("[optimizer]\n" + c.keys).table("optimizer"), {full});
    set_random_grads(half, 0);
    for (std::size_t i = 0; i < half.size(); ++i) full[i].mutable_grad() = half[i].grad().to(torch::kFloat32);
    opt_half->step();
    opt_full->step();
    for (std::size_t i = 0; i < half.size(); ++i) {
      EXPECT_EQ(half[i].scalar_type(), torch::kBFloat16);
      const auto diff = (half[i].to(torch::kFloat32) - full[i]).abs();
      EXPECT_TRUE((diff <= full[i].abs() * std::ldexp(1.0, -8) + 1e-30).all().item<bool>()) << c.keys;
    }
  }
}

// Folding the recipe's 1 / tokens into the step must change nothing: the same bits as scaling
// the gradients in place first. bfloat16 parameters are not folded (LibTorch versions round the
// factor differently): the optimizer says so and leaves the step to the recipe.
TEST_F(Optimizers, StepWithGradientScaleEqualsScalingTheGradientsFirst) {
  const double scale = 1.0 / 37.0;
  for (const auto& c : reference_cases()) {
    for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
      auto folded = random_params(dtype), scaled_first = random_params(dtype);
      auto opt_folded =
          registry().instantiate<ft::Optimizer>(root("[optimizer]\n" + c.keys).table("optimizer"), {folded});
      auto opt_scaled_first =
          registry().instantiate<ft::Optimizer>(root("[optimizer]\n" + c.keys).table("optimizer"), {scaled_first});
      for (int step = 0; step < 3; ++step) {
        set_random_grads(folded, step);
        set_random_grads(scaled_first, step);
        for (auto& p : scaled_first) p.mutable_grad().mul_(scale);
        EXPECT_TRUE(opt_folded->step_with_gradient_scale(scale)) << c.keys;
        opt_scaled_first->step();
      }
      for (std::size_t i = 0; i < folded.size(); ++i) {
        EXPECT_TRUE(torch::equal(folded[i], scaled_first[i])) << c.keys << " " << dtype << " parameter " << i;
        // Folding leaves the stored gradient unscaled.
        EXPECT_FALSE(torch::equal(folded[i].grad(), scaled_first[i].grad())) << c.keys;
      }
    }
    auto half = random_params(torch::kBFloat16);
    const auto before = half[0].clone();
    auto opt_half = registry().instantiate<ft::Optimizer>(root("[optimizer]\n" + c.keys).table("optimizer"), {half});
    set_random_grads(half, 0);
    EXPECT_FALSE(opt_half->step_with_gradient_scale(scale)) << c.keys;
    EXPECT_TRUE(torch::equal(half[0], before)) << c.keys;
  }
}

}  // namespace
