// Plugin ft_optim: torch.optim.AdamW, torch.optim.Adam and torch.optim.SGD over torch::optim.
#include <ft/log.h>
#include <ft/optimizer.h>
#include <ft/plugin.h>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

namespace {

using ft::ValueType;

template <class TorchOptimizer, class Options>
class TorchOptimizerAdapter final : public ft::Optimizer {
 public:
  TorchOptimizerAdapter(std::vector<at::Tensor> params, Options options) : impl_(std::move(params), options) {}
  void step() override { impl_.step(); }
  // torch::optim's zero_grad() changed signature across LibTorch versions; do it directly.
  void zero_grad(bool set_to_none) override {
    for (auto& group : impl_.param_groups())
      for (auto& p : group.params()) {
        if (!p.mutable_grad().defined()) continue;
        if (set_to_none) {
          p.mutable_grad() = at::Tensor();
        } else {
          p.mutable_grad().detach_();
          p.mutable_grad().zero_();
        }
      }
  }
  double lr() const override {
    return static_cast<const Options&>(impl_.param_groups().front().options()).lr();
  }
  void set_lr(double lr) override {
    for (auto& group : impl_.param_groups()) static_cast<Options&>(group.options()).lr(lr);
  }

 private:
  TorchOptimizer impl_;
};

std::tuple<double, double> betas_of(const ft::ConfigNode& cfg) {
  auto b = cfg.get<std::vector<double>>("betas");
  if (b.size() != 2) cfg.fail("betas", "expected two numbers [beta1, beta2], got " + std::to_string(b.size()));
  return {b[0], b[1]};
}

void note_fused(const ft::ConfigNode& cfg) {
  if (cfg.get<bool>("fused")) ft::log::info("{}: fused=true has no fused kernel on this build; using the standard one", cfg.path());
}

ft::Schema adam_schema(const char* weight_decay_default) {
  ft::Schema s;
  s.optional("lr", ValueType::Float, "1e-3", "learning rate")
      .optional("betas", ValueType::List, "[0.9, 0.999]", "coefficients of the running averages")
      .optional("eps", ValueType::Float, "1e-8", "denominator term for numerical stability")
      .optional("weight_decay", ValueType::Float, weight_decay_default, "weight decay")
      .optional("amsgrad", ValueType::Bool, "false", "use the AMSGrad variant")
      .optional("fused", ValueType::Bool, "false", "accepted for torchtune configs")
      .optional("foreach", ValueType::Bool, "false", "accepted for torchtune configs");
  return s;
}

template <class Options>
Options adam_options(const ft::ConfigNode& cfg) {
  note_fused(cfg);
  return Options(cfg.get<double>("lr"))
      .betas(betas_of(cfg))
      .eps(cfg.get<double>("eps"))
      .weight_decay(cfg.get<double>("weight_decay"))
      .amsgrad(cfg.get<bool>("amsgrad"));
}

void register_components(ft::Registry& reg) {
  reg.add<ft::Optimizer>("torch.optim.AdamW", adam_schema("1e-2"), "Adam with decoupled weight decay (torch.optim.AdamW)",
                         [](const ft::ConfigNode& cfg, ft::Optimizer::Args args) {
                           return std::make_unique<TorchOptimizerAdapter<torch::optim::AdamW, torch::optim::AdamWOptions>>(
                               std::move(args.params), adam_options<torch::optim::AdamWOptions>(cfg));
                         });
  reg.add<ft::Optimizer>("torch.optim.Adam", adam_schema("0.0"), "Adam with L2 weight decay (torch.optim.Adam)",
                         [](const ft::ConfigNode& cfg, ft::Optimizer::Args args) {
                           return std::make_unique<TorchOptimizerAdapter<torch::optim::Adam, torch::optim::AdamOptions>>(
                               std::move(args.params), adam_options<torch::optim::AdamOptions>(cfg));
                         });
  ft::Schema sgd;
  sgd.required("lr", ValueType::Float, "learning rate")
      .optional("momentum", ValueType::Float, "0.0", "momentum factor")
      .optional("dampening", ValueType::Float, "0.0", "dampening for momentum")
      .optional("weight_decay", ValueType::Float, "0.0", "L2 weight decay")
      .optional("nesterov", ValueType::Bool, "false", "Nesterov momentum")
      .optional("fused", ValueType::Bool, "false", "accepted for torchtune configs")
      .optional("foreach", ValueType::Bool, "false", "accepted for torchtune configs");
  reg.add<ft::Optimizer>("torch.optim.SGD", sgd, "stochastic gradient descent (torch.optim.SGD)",
                         [](const ft::ConfigNode& cfg, ft::Optimizer::Args args) {
                           note_fused(cfg);
                           auto opts = torch::optim::SGDOptions(cfg.get<double>("lr"))
                                           .momentum(cfg.get<double>("momentum"))
                                           .dampening(cfg.get<double>("dampening"))
                                           .weight_decay(cfg.get<double>("weight_decay"))
                                           .nesterov(cfg.get<bool>("nesterov"));
                           if (opts.nesterov() && (opts.momentum() <= 0 || opts.dampening() != 0))
                             cfg.fail("nesterov", "requires momentum > 0 and dampening = 0");
                           return std::make_unique<TorchOptimizerAdapter<torch::optim::SGD, torch::optim::SGDOptions>>(
                               std::move(args.params), opts);
                         });
}

}  // namespace

FT_PLUGIN("ft_optim", "0.1.0", register_components)
