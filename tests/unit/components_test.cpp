// The built-in optimizer, scheduler and logger plugins, instantiated through the registry as the
// recipe does. Expected values are worked by hand from the algorithms' definitions.
#include "config_loader.h"
#include "plugin_loader.h"
#include "test_helpers.h"

#include <ft/lr_scheduler.h>
#include <ft/metric_logger.h>
#include <ft/optimizer.h>

#include <torch/torch.h>

#include <cmath>

namespace {

class Components : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    loader_ = new fthost::PluginLoader;
    loader_->load_all({{FT_BUILTIN_PLUGIN_DIR, "default"}});
  }
  static void TearDownTestSuite() { delete loader_; }
  ft::ConfigNode root(const std::string& text) {
    return ft::detail::root_node(fthost::load_config(fttest::write_temp("run.toml", text), {}));
  }
  static fthost::PluginLoader* loader_;
};
fthost::PluginLoader* Components::loader_ = nullptr;

torch::Tensor param_with_grad(double value, double grad) {
  auto p = torch::full({1}, value, torch::dtype(torch::kFloat64).requires_grad(true));
  p.mutable_grad() = torch::full({1}, grad, torch::kFloat64);
  return p;
}

TEST_F(Components, SgdStep) {
  auto p = param_with_grad(1.0, 2.0);
  auto opt = loader_->registry().instantiate<ft::Optimizer>(
      root("[optimizer]\n_component_ = \"torch.optim.SGD\"\nlr = 0.1\n").table("optimizer"), {{p}});
  opt->step();
  EXPECT_NEAR(p.item<double>(), 1.0 - 0.1 * 2.0, 1e-12);
  opt->zero_grad(true);
  EXPECT_FALSE(p.grad().defined());
}

TEST_F(Components, AdamWFirstStepDecouplesWeightDecay) {
  auto p = param_with_grad(1.0, 2.0);
  auto opt = loader_->registry().instantiate<ft::Optimizer>(
      root("[optimizer]\n_component_ = \"torch.optim.AdamW\"\nlr = 0.1\n").table("optimizer"), {{p}});
  opt->step();
  // Step 1: bias-corrected m = g, v = g^2, so the Adam update is lr * g / (|g| + eps); decay is lr * wd * p.
  const double expected = 1.0 * (1.0 - 0.1 * 0.01) - 0.1 * 2.0 / (2.0 + 1e-8);
  EXPECT_NEAR(p.item<double>(), expected, 1e-12);
  opt->set_lr(0.5);
  EXPECT_DOUBLE_EQ(opt->lr(), 0.5);
}

TEST_F(Components, OptimizerRejectsBadBetas) {
  auto p = param_with_grad(1.0, 2.0);
  auto msg = fttest::error_of<ft::ConfigError>([&] {
    loader_->registry().instantiate<ft::Optimizer>(
        root("[optimizer]\n_component_ = \"torch.optim.Adam\"\nbetas = [0.9]\n").table("optimizer"), {{p}});
  });
  EXPECT_NE(msg.find("optimizer.betas: expected two numbers"), std::string::npos) << msg;
}

// SGD at lr 1.0 (so the lr is the schedule's multiplier) under a 10-step-warmup cosine.
const char* const kCosineConfig =
    "[optimizer]\n_component_ = \"torch.optim.SGD\"\nlr = 1.0\n"
    "[lr_scheduler]\n_component_ = \"torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup\"\n"
    "num_warmup_steps = 10\n";

TEST_F(Components, CosineWithWarmupMatchesTorchtuneSchedule) {
  auto p = param_with_grad(1.0, 0.0);
  auto cfg = root(kCosineConfig);
  auto opt = loader_->registry().instantiate<ft::Optimizer>(cfg.table("optimizer"), {{p}});
  auto sched = loader_->registry().instantiate<ft::LRScheduler>(cfg.table("lr_scheduler"), {opt.get(), 100, -1});
  EXPECT_DOUBLE_EQ(opt->lr(), 0.0);  // step 0 of warmup
  auto advance = [&](int n) {
    for (int i = 0; i < n; ++i) sched->step();
  };
  advance(5);
  EXPECT_DOUBLE_EQ(opt->lr(), 0.5);  // 5 / 10
  advance(5);
  EXPECT_DOUBLE_EQ(opt->lr(), 1.0);  // end of warmup, cos(0)
  advance(45);
  EXPECT_NEAR(opt->lr(), 0.5, 1e-12);  // halfway through the decay: 0.5 * (1 + cos(pi/2))
  advance(45);
  EXPECT_NEAR(opt->lr(), 0.0, 1e-12);
  EXPECT_EQ(sched->last_epoch(), 100);
}

TEST_F(Components, LinearWithWarmupDecaysToZero) {
  auto p = param_with_grad(1.0, 0.0);
  auto cfg = root(R"(
[optimizer]
_component_ = "torch.optim.SGD"
lr = 2.0
[lr_scheduler]
_component_ = "fthost.lr_schedulers.linear_with_warmup"
num_warmup_steps = 4
)");
  auto opt = loader_->registry().instantiate<ft::Optimizer>(cfg.table("optimizer"), {{p}});
  auto sched = loader_->registry().instantiate<ft::LRScheduler>(cfg.table("lr_scheduler"), {opt.get(), 20, -1});
  std::vector<double> lrs{opt->lr()};
  for (int i = 0; i < 20; ++i) {
    sched->step();
    lrs.push_back(opt->lr());
  }
  EXPECT_DOUBLE_EQ(lrs[0], 0.0);
  EXPECT_DOUBLE_EQ(lrs[2], 1.0);    // 2 * 2/4
  EXPECT_DOUBLE_EQ(lrs[4], 2.0);    // warmup done
  EXPECT_DOUBLE_EQ(lrs[12], 1.0);   // 2 * (20 - 12) / 16
  EXPECT_DOUBLE_EQ(lrs[20], 0.0);
}

TEST_F(Components, SchedulerResumesFromLastEpoch) {
  auto p = param_with_grad(1.0, 0.0);
  auto cfg = root(kCosineConfig);
  auto opt = loader_->registry().instantiate<ft::Optimizer>(cfg.table("optimizer"), {{p}});
  auto sched = loader_->registry().instantiate<ft::LRScheduler>(cfg.table("lr_scheduler"), {opt.get(), 100, 54});
  EXPECT_EQ(sched->last_epoch(), 55);
  EXPECT_NEAR(opt->lr(), 0.5, 1e-12);
}

TEST_F(Components, DiskLoggerWritesTorchtuneTextAndJsonl) {
  auto dir = boost::filesystem::path(fttest::write_temp("x", "")).parent_path().string();
  for (std::string fmt : {"txt", "jsonl"}) {
    auto cfg = root("[metric_logger]\n_component_ = \"torchtune.training.metric_logging.DiskLogger\"\nlog_dir = \"" +
                    dir + "\"\nfilename = \"m." + fmt + "\"\noutput_fmt = \"" + fmt + "\"\n");
    auto logger = loader_->registry().instantiate<ft::MetricLogger>(cfg.table("metric_logger"));
    logger->log_dict({{"loss", 0.5}, {"lr", 2e-05}}, 1);
    logger->log("tokens_per_second", 12.0, 2);
    logger->close();
    const std::string text = fttest::read_file(dir + "/m." + fmt);
    if (fmt == "txt")
      EXPECT_EQ(text, "Step 1 | loss:0.5 lr:2e-05 \nStep 2 | tokens_per_second:12 \n");
    else
      EXPECT_EQ(text, "{\"step\": 1, \"loss\": 0.5, \"lr\": 2e-05}\n{\"step\": 2, \"tokens_per_second\": 12}\n");
  }
}

}  // namespace
