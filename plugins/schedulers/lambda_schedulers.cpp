// Plugin ft_schedulers: torchtune's learning-rate schedules, as multipliers of the optimizer's
// initial lr evaluated at the current optimizer step (PyTorch's LambdaLR semantics: the
// constructor applies step 0, each step() advances one).
#include <ft/lr_scheduler.h>
#include <ft/plugin.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace {

using ft::ValueType;

class LambdaScheduler final : public ft::LRScheduler {
 public:
  LambdaScheduler(ft::Optimizer& optimizer, std::int64_t last_epoch, std::function<double(std::int64_t)> multiplier)
      : optimizer_(optimizer), base_lr_(optimizer.lr()), last_epoch_(last_epoch), multiplier_(std::move(multiplier)) {
    step();
  }
  void step() override {
    ++last_epoch_;
    optimizer_.set_lr(base_lr_ * multiplier_(last_epoch_));
  }
  double lr() const override { return optimizer_.lr(); }
  std::int64_t last_epoch() const override { return last_epoch_; }

 private:
  ft::Optimizer& optimizer_;
  double base_lr_;
  std::int64_t last_epoch_;
  std::function<double(std::int64_t)> multiplier_;
};

ft::Optimizer& optimizer_of(const ft::ConfigNode& cfg, const ft::LRScheduler::Args& args) {
  if (!args.optimizer) cfg.fail("", "an lr_scheduler needs an optimizer");
  return *args.optimizer;
}

void register_components(ft::Registry& reg) {
  ft::Schema cosine;
  cosine.required("num_warmup_steps", ValueType::Int, "linear warmup steps from 0 to the optimizer's lr")
      .optional("num_cycles", ValueType::Float, "0.5", "cosine cycles after warmup (0.5: decay to 0)")
      .optional("last_epoch", ValueType::Int, "-1", "last step already taken (resume)");
  reg.add<ft::LRScheduler>(
      "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup", cosine,
      "linear warmup, then cosine decay over num_training_steps",
      [](const ft::ConfigNode& cfg, ft::LRScheduler::Args args) {
        const auto warmup = cfg.get<std::int64_t>("num_warmup_steps");
        const double cycles = cfg.get<double>("num_cycles");
        const std::int64_t total = args.num_training_steps;
        const std::int64_t last = args.last_epoch != -1 ? args.last_epoch : cfg.get<std::int64_t>("last_epoch");
        return std::make_unique<LambdaScheduler>(optimizer_of(cfg, args), last, [=](std::int64_t step) {
          if (step < warmup) return static_cast<double>(step) / static_cast<double>(std::max<std::int64_t>(1, warmup));
          const double progress =
              static_cast<double>(step - warmup) / static_cast<double>(std::max<std::int64_t>(1, total - warmup));
          return std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * cycles * 2.0 * progress)));
        });
      });

  ft::Schema constant;
  constant.optional("num_warmup_steps", ValueType::Int, "0", "linear warmup steps")
      .optional("last_epoch", ValueType::Int, "-1", "last step already taken (resume)");
  reg.add<ft::LRScheduler>(
      "fthost.lr_schedulers.constant_with_warmup", constant, "linear warmup, then constant",
      [](const ft::ConfigNode& cfg, ft::LRScheduler::Args args) {
        const auto warmup = cfg.get<std::int64_t>("num_warmup_steps");
        const std::int64_t last = args.last_epoch != -1 ? args.last_epoch : cfg.get<std::int64_t>("last_epoch");
        return std::make_unique<LambdaScheduler>(optimizer_of(cfg, args), last, [=](std::int64_t step) {
          return step < warmup ? static_cast<double>(step) / static_cast<double>(warmup) : 1.0;
        });
      });

  ft::Schema linear;
  linear.optional("num_warmup_steps", ValueType::Int, "0", "linear warmup steps from 0 to the optimizer's lr")
      .optional("last_epoch", ValueType::Int, "-1", "last step already taken (resume)");
  reg.add<ft::LRScheduler>(
      "fthost.lr_schedulers.linear_with_warmup", linear,
      "linear warmup, then linear decay to 0 at num_training_steps (transformers' linear schedule)",
      [](const ft::ConfigNode& cfg, ft::LRScheduler::Args args) {
        const auto warmup = cfg.get<std::int64_t>("num_warmup_steps");
        const std::int64_t total = args.num_training_steps;
        const std::int64_t last = args.last_epoch != -1 ? args.last_epoch : cfg.get<std::int64_t>("last_epoch");
        return std::make_unique<LambdaScheduler>(optimizer_of(cfg, args), last, [=](std::int64_t step) {
          if (step < warmup) return static_cast<double>(step) / static_cast<double>(warmup);
          return std::max(
              0.0, static_cast<double>(total - step) / static_cast<double>(std::max<std::int64_t>(1, total - warmup)));
        });
      });
}

}  // namespace

FT_PLUGIN("ft_schedulers", "0.1.0", register_components)
