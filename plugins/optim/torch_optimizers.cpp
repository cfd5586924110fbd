// Plugin ft_optim: torch.optim.AdamW, torch.optim.Adam and torch.optim.SGD over torch::optim.
#include <ft/log.h>
#include <ft/optimizer.h>
#include <ft/plugin.h>

#include <ft/errors.h>
#include <ft/text.h>
#include <ft/torch_compat.h>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <map>
#include <string>
#include <type_traits>
#include <utility>

namespace {

using ft::ValueType;

// One parameter's state tensors by field name, as found in a checkpoint.
using FieldTensors = std::map<std::string, at::Tensor>;

// A copy of `saved` shaped and typed like `like`, for one state field.
at::Tensor restored_like(const at::Tensor& like, const at::Tensor& saved, const std::string& name) {
  if (saved.sizes() != like.sizes())
    throw ft::Error("optimizer state \"" + name + "\": shape " + ft::shape_text(saved.sizes()) +
                    " but the parameter is " + ft::shape_text(like.sizes()));
  if (saved.scalar_type() != like.scalar_type())
    throw ft::Error("optimizer state \"" + name + "\": dtype " + c10::toString(saved.scalar_type()) +
                    " but the parameter is " + c10::toString(like.scalar_type()));
  return at::empty_like(like).copy_(saved);
}

std::int64_t restored_step(const at::Tensor& saved, const std::string& name) {
  if (saved.numel() != 1 || saved.scalar_type() != at::kLong)
    throw ft::Error("optimizer state \"" + name + "\": expected one int64 step count");
  return saved.item<std::int64_t>();
}

// The state of torch.optim.Adam / AdamW per parameter: step, exp_avg, exp_avg_sq and (amsgrad)
// max_exp_avg_sq, as torch.optim names them.
template <class AdamParamState>
struct AdamStateCodec {
  using ParamState = AdamParamState;
  static void save(const ParamState& st, const std::string& prefix, std::vector<ft::NamedTensor>& out) {
    out.push_back({prefix + "step", at::scalar_tensor(st.step(), at::kLong)});
    out.push_back({prefix + "exp_avg", st.exp_avg()});
    out.push_back({prefix + "exp_avg_sq", st.exp_avg_sq()});
    if (st.max_exp_avg_sq().defined()) out.push_back({prefix + "max_exp_avg_sq", st.max_exp_avg_sq()});
  }
  static std::unique_ptr<ParamState> load(const at::Tensor& param, const FieldTensors& fields,
                                          const std::string& prefix) {
    auto st = std::make_unique<ParamState>();
    for (const char* required : {"step", "exp_avg", "exp_avg_sq"})
      if (!fields.count(required)) throw ft::Error("optimizer state \"" + prefix + required + "\" is missing");
    st->step(restored_step(fields.at("step"), prefix + "step"));
    st->exp_avg(restored_like(param, fields.at("exp_avg"), prefix + "exp_avg"));
    st->exp_avg_sq(restored_like(param, fields.at("exp_avg_sq"), prefix + "exp_avg_sq"));
    if (auto it = fields.find("max_exp_avg_sq"); it != fields.end())
      st->max_exp_avg_sq(restored_like(param, it->second, prefix + "max_exp_avg_sq"));
    return st;
  }
};

// torch.optim.SGD's only state: the momentum buffer (absent without momentum).
struct SgdStateCodec {
  using ParamState = torch::optim::SGDParamState;
  static void save(const ParamState& st, const std::string& prefix, std::vector<ft::NamedTensor>& out) {
    if (st.momentum_buffer().defined()) out.push_back({prefix + "momentum_buffer", st.momentum_buffer()});
  }
  static std::unique_ptr<ParamState> load(const at::Tensor& param, const FieldTensors& fields,
                                          const std::string& prefix) {
    auto st = std::make_unique<ParamState>();
    if (!fields.count("momentum_buffer"))
      throw ft::Error("optimizer state \"" + prefix + "momentum_buffer\" is missing");
    st->momentum_buffer(restored_like(param, fields.at("momentum_buffer"), prefix + "momentum_buffer"));
    return st;
  }
};

template <class TorchOptimizer, class Options, class StateCodec>
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
  double lr() const override { return static_cast<const Options&>(impl_.param_groups().front().options()).lr(); }
  void set_lr(double lr) override {
    for (auto& group : impl_.param_groups()) static_cast<Options&>(group.options()).lr(lr);
  }

  std::vector<ft::NamedTensor> state() const override {
    std::vector<ft::NamedTensor> out;
    const auto params = parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      auto it = impl_.state().find(state_key(params[i]));
      if (it == impl_.state().end()) continue;  // not stepped yet (torch creates state lazily)
      StateCodec::save(static_cast<const typename StateCodec::ParamState&>(*it->second), prefix(i), out);
    }
    return out;
  }

  void load_state(const std::vector<ft::NamedTensor>& state) override {
    const auto params = parameters();
    std::map<std::size_t, FieldTensors> by_param;
    for (const ft::NamedTensor& t : state) {
      // state.<i>.<field>
      const auto dot = t.name.find('.', 6);
      std::size_t index = params.size();
      if (t.name.rfind("state.", 0) == 0 && dot != std::string::npos) {
        try {
          index = std::stoul(t.name.substr(6, dot - 6));
        } catch (const std::exception&) {
        }
      }
      if (index >= params.size())
        throw ft::Error("optimizer state \"" + t.name + "\": not state.<i>.<field> for one of the " +
                        std::to_string(params.size()) + " parameters this optimizer steps");
      by_param[index][t.name.substr(dot + 1)] = t.tensor;
    }
    auto& live = impl_.state();
    live.clear();
    for (const auto& [index, fields] : by_param)
      live[state_key(params[index])] = StateCodec::load(params[index], fields, prefix(index));
  }

 private:
  static std::string prefix(std::size_t index) { return "state." + std::to_string(index) + "."; }
  // torch::optim keys its state by the parameter's TensorImpl address (serialize.h does the same).
  static auto state_key(const at::Tensor& param) {
    return ft::compat::optimizer_state_key<std::decay_t<decltype(std::declval<TorchOptimizer&>().state())>>(param);
  }
  std::vector<at::Tensor> parameters() const {
    std::vector<at::Tensor> out;
    for (const auto& group : impl_.param_groups())
      for (const auto& p : group.params()) out.push_back(p);
    return out;
  }

  TorchOptimizer impl_;
};

using AdamWAdapter = TorchOptimizerAdapter<torch::optim::AdamW, torch::optim::AdamWOptions,
                                           AdamStateCodec<torch::optim::AdamWParamState>>;
using AdamAdapter =
    TorchOptimizerAdapter<torch::optim::Adam, torch::optim::AdamOptions, AdamStateCodec<torch::optim::AdamParamState>>;
using SgdAdapter = TorchOptimizerAdapter<torch::optim::SGD, torch::optim::SGDOptions, SgdStateCodec>;

std::tuple<double, double> betas_of(const ft::ConfigNode& cfg) {
  auto b = cfg.get<std::vector<double>>("betas");
  if (b.size() != 2) cfg.fail("betas", "expected two numbers [beta1, beta2], got " + std::to_string(b.size()));
  return {b[0], b[1]};
}

// fused and foreach choose among torch's implementations of the same update; LibTorch's C++
// optimizers have one, so the numbers are those of either choice.
void note_fused(const ft::ConfigNode& cfg) {
  if (cfg.get<bool>("fused"))
    ft::log::info("{}: fused=true has no fused kernel on this build; using the standard one", cfg.path());
  if (cfg.get<bool>("foreach"))
    ft::log::info("{}: foreach=true has no multi-tensor kernel on this build; using the standard one", cfg.path());
}

ft::Schema adam_schema(const char* weight_decay_default) {
  ft::Schema s;
  s.optional("lr", ValueType::Float, "1e-3", "learning rate")
      .optional("betas", ValueType::List, "[0.9, 0.999]", "coefficients of the running averages")
      .optional("eps", ValueType::Float, "1e-8", "denominator term for numerical stability")
      .optional("weight_decay", ValueType::Float, weight_decay_default, "weight decay")
      .optional("amsgrad", ValueType::Bool, "false", "use the AMSGrad variant")
      .optional("fused", ValueType::Bool, "false", "torch's fused kernel: same update, the standard kernel runs here")
      .optional("foreach", ValueType::Bool, "false",
                "torch's multi-tensor kernel: same update, the standard one runs here");
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
  reg.add<ft::Optimizer>(
      "torch.optim.AdamW", adam_schema("1e-2"), "Adam with decoupled weight decay (torch.optim.AdamW)",
      [](const ft::ConfigNode& cfg, ft::Optimizer::Args args) {
        return std::make_unique<AdamWAdapter>(std::move(args.params), adam_options<torch::optim::AdamWOptions>(cfg));
      });
  reg.add<ft::Optimizer>("torch.optim.Adam", adam_schema("0.0"), "Adam with L2 weight decay (torch.optim.Adam)",
                         [](const ft::ConfigNode& cfg, ft::Optimizer::Args args) {
                           return std::make_unique<AdamAdapter>(std::move(args.params),
                                                                adam_options<torch::optim::AdamOptions>(cfg));
                         });
  ft::Schema sgd;
  sgd.required("lr", ValueType::Float, "learning rate")
      .optional("momentum", ValueType::Float, "0.0", "momentum factor")
      .optional("dampening", ValueType::Float, "0.0", "dampening for momentum")
      .optional("weight_decay", ValueType::Float, "0.0", "L2 weight decay")
      .optional("nesterov", ValueType::Bool, "false", "Nesterov momentum")
      .optional("fused", ValueType::Bool, "false", "torch's fused kernel: same update, the standard kernel runs here")
      .optional("foreach", ValueType::Bool, "false",
                "torch's multi-tensor kernel: same update, the standard one runs here");
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
                           return std::make_unique<SgdAdapter>(std::move(args.params), opts);
                         });
}

}  // namespace

FT_PLUGIN("ft_optim", "0.1.0", register_components)
