// ft_schedulers through the registry, each schedule driving SGD at a known base lr. Expected lrs
// are worked by hand from the schedules' definitions: torchtune's
// get_cosine_schedule_with_warmup, and transformers' get_linear_schedule_with_warmup and
// get_constant_schedule_with_warmup (LambdaLR semantics: construction applies step 0).
#include "builtin_plugins.h"

#include <ft/lr_scheduler.h>
#include <ft/optimizer.h>

#include <torch/torch.h>

#include <vector>

namespace {

class LrSchedulers : public fttest::BuiltinPluginsTest {
 protected:
  // `config` holds an [optimizer] and an [lr_scheduler] table; the schedule spans `total` steps.
  void build(const std::string& config, std::int64_t total, std::int64_t last_epoch = -1) {
    auto cfg = root(config);
    opt_ = registry().instantiate<ft::Optimizer>(cfg.table("optimizer"), {{param_}});
    sched_ = registry().instantiate<ft::LRScheduler>(cfg.table("lr_scheduler"), {opt_.get(), total, last_epoch});
  }
  // The lr at steps 0..total: the one set at construction, then one per step().
  std::vector<double> lrs(std::int64_t total) {
    std::vector<double> out{opt_->lr()};
    for (std::int64_t i = 0; i < total; ++i) {
      sched_->step();
      out.push_back(opt_->lr());
    }
    return out;
  }
  void advance(int n) {
    for (int i = 0; i < n; ++i) sched_->step();
  }

  torch::Tensor param_ = torch::zeros({1}, torch::dtype(torch::kFloat64).requires_grad(true));
  std::shared_ptr<ft::Optimizer> opt_;
  std::shared_ptr<ft::LRScheduler> sched_;
};

// SGD at lr 1.0 (so the lr is the schedule's multiplier) under a 10-step-warmup cosine.
const char* const kCosineConfig =
    "[optimizer]\n_component_ = \"torch.optim.SGD\"\nlr = 1.0\n"
    "[lr_scheduler]\n_component_ = \"torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup\"\n"
    "num_warmup_steps = 10\n";

TEST_F(LrSchedulers, CosineWithWarmupMatchesTorchtuneSchedule) {
  build(kCosineConfig, 100);
  EXPECT_DOUBLE_EQ(opt_->lr(), 0.0);  // step 0 of warmup
  advance(5);
  EXPECT_DOUBLE_EQ(opt_->lr(), 0.5);  // 5 / 10
  advance(5);
  EXPECT_DOUBLE_EQ(opt_->lr(), 1.0);  // end of warmup, cos(0)
  advance(45);
  EXPECT_NEAR(opt_->lr(), 0.5, 1e-12);  // halfway through the decay: 0.5 * (1 + cos(pi/2))
  advance(45);
  EXPECT_NEAR(opt_->lr(), 0.0, 1e-12);
  EXPECT_EQ(sched_->last_epoch(), 100);
}

// num_cycles = 1: a whole cosine period, 0.5 * (1 + cos(2 pi progress)), back up to the base lr.
TEST_F(LrSchedulers, CosineWithOneFullCycleReturnsToTheBaseLr) {
  build(
      "[optimizer]\n_component_ = \"torch.optim.SGD\"\nlr = 1.0\n"
      "[lr_scheduler]\n_component_ = \"torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup\"\n"
      "num_warmup_steps = 0\nnum_cycles = 1.0\n",
      100);
  const auto lr = lrs(100);
  EXPECT_DOUBLE_EQ(lr[0], 1.0);
  EXPECT_NEAR(lr[25], 0.5, 1e-12);  // cos(pi/2) = 0
  EXPECT_NEAR(lr[50], 0.0, 1e-12);  // cos(pi) = -1
  EXPECT_NEAR(lr[75], 0.5, 1e-12);
  EXPECT_NEAR(lr[100], 1.0, 1e-12);
}

TEST_F(LrSchedulers, LinearWithWarmupDecaysToZero) {
  build(R"(
[optimizer]
_component_ = "torch.optim.SGD"
lr = 2.0
[lr_scheduler]
_component_ = "fthost.lr_schedulers.linear_with_warmup"
num_warmup_steps = 4
)",
        20);
  const auto lr = lrs(20);
  EXPECT_DOUBLE_EQ(lr[0], 0.0);
  EXPECT_DOUBLE_EQ(lr[2], 1.0);   // 2 * 2/4
  EXPECT_DOUBLE_EQ(lr[4], 2.0);   // warmup done
  EXPECT_DOUBLE_EQ(lr[12], 1.0);  // 2 * (20 - 12) / 16
  EXPECT_DOUBLE_EQ(lr[20], 0.0);
}

// transformers' get_constant_schedule_with_warmup: step / warmup during warmup, then 1.
TEST_F(LrSchedulers, ConstantWithWarmupHoldsTheBaseLr) {
  build(R"(
[optimizer]
_component_ = "torch.optim.SGD"
lr = 2.0
[lr_scheduler]
_component_ = "fthost.lr_schedulers.constant_with_warmup"
num_warmup_steps = 4
)",
        20);
  const auto lr = lrs(20);
  EXPECT_DOUBLE_EQ(lr[0], 0.0);
  EXPECT_DOUBLE_EQ(lr[1], 0.5);  // 2 * 1/4
  EXPECT_DOUBLE_EQ(lr[3], 1.5);  // 2 * 3/4
  EXPECT_DOUBLE_EQ(lr[4], 2.0);
  EXPECT_DOUBLE_EQ(lr[20], 2.0);
}

TEST_F(LrSchedulers, SchedulerResumesFromLastEpoch) {
  build(kCosineConfig, 100, 54);
  EXPECT_EQ(sched_->last_epoch(), 55);
  EXPECT_NEAR(opt_->lr(), 0.5, 1e-12);
}

}  // namespace
