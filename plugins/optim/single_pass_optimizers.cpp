// Plugin ft_optim: torch.optim.AdamW, torch.optim.Adam and torch.optim.SGD with torch.optim's
// update rules and state layout, and bitsandbytes' Adam family (bitsandbytes_optimizers.h). Two implementations of the
// same update:
//   - fthost's single-pass CPU kernel (adam_update.h, sgd_update.h), for CPU parameters;
//   - LibTorch's fused kernels (at::_fused_adamw_ and friends, torch's `fused=True`), for
//     `fused = true` on any device, and always for CUDA parameters, where the CPU kernel cannot run.
// `foreach` chooses between torch's for-loop and multi-tensor forms of its unfused update; neither
// runs here, which the log says.
#include "adam_update.h"
#include "bitsandbytes_optimizers.h"
#include "optimizer_state_parts.h"
#include "sgd_update.h"

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/optimizer.h>
#include <ft/plugin.h>
#include <ft/text.h>

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_fused_adam.h>
#include <ATen/ops/_fused_adamw.h>
#include <ATen/ops/_fused_sgd.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace {

using ft::ValueType;

using ftoptim::FieldTensors;
using ftoptim::restored_step;

// A copy of `saved` shaped and typed like `like`, for one state field.
at::Tensor restored_like(const at::Tensor& like, const FieldTensors& fields, const std::string& field,
                         const std::string& prefix) {
  auto it = fields.find(field);
  if (it == fields.end()) throw ft::Error("optimizer state \"" + prefix + field + "\" is missing");
  const at::Tensor& saved = it->second;
  if (saved.sizes() != like.sizes())
    throw ft::Error("optimizer state \"" + prefix + field + "\": shape " + ft::shape_text(saved.sizes()) +
                    " but the parameter is " + ft::shape_text(like.sizes()));
  if (saved.scalar_type() != like.scalar_type())
    throw ft::Error("optimizer state \"" + prefix + field + "\": dtype " + c10::toString(saved.scalar_type()) +
                    " but the parameter is " + c10::toString(like.scalar_type()));
  return at::empty_like(like, at::MemoryFormat::Contiguous).copy_(saved);
}

// torch.optim.Adam / AdamW's per-parameter state, under torch.optim's names.
struct AdamState {
  std::int64_t step = 0;
  at::Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
  at::Tensor device_step;  // `step` as LibTorch's fused kernels read it (float32, on the device)

  void save(const std::string& prefix, std::vector<ft::NamedTensor>& out) const {
    out.push_back({prefix + "step", at::scalar_tensor(step, at::kLong)});
    out.push_back({prefix + "exp_avg", exp_avg});
    out.push_back({prefix + "exp_avg_sq", exp_avg_sq});
    if (max_exp_avg_sq.defined()) out.push_back({prefix + "max_exp_avg_sq", max_exp_avg_sq});
  }
  static AdamState load(const at::Tensor& param, const FieldTensors& fields, const std::string& prefix) {
    AdamState st;
    st.step = restored_step(fields, prefix);
    st.exp_avg = restored_like(param, fields, "exp_avg", prefix);
    st.exp_avg_sq = restored_like(param, fields, "exp_avg_sq", prefix);
    if (fields.count("max_exp_avg_sq")) st.max_exp_avg_sq = restored_like(param, fields, "max_exp_avg_sq", prefix);
    return st;
  }
};

// torch.optim.SGD's only state: the momentum buffer (none without momentum).
struct SgdState {
  at::Tensor momentum_buffer;

  void save(const std::string& prefix, std::vector<ft::NamedTensor>& out) const {
    if (momentum_buffer.defined()) out.push_back({prefix + "momentum_buffer", momentum_buffer});
  }
  static SgdState load(const at::Tensor& param, const FieldTensors& fields, const std::string& prefix) {
    return SgdState{restored_like(param, fields, "momentum_buffer", prefix)};
  }
};

// What Adam and SGD share: the parameters, their lazily created state (torch creates a
// parameter's state on its first step with a gradient), the hyperparameters with their learning
// rate, zero_grad and the state's export.
template <class State, class Hyperparameters>
class SinglePassOptimizer : public ft::Optimizer {
 public:
  SinglePassOptimizer(std::vector<at::Tensor> params, Hyperparameters hyper, bool fused)
      : params_(std::move(params)),
        state_(params_.size()),
        hyper_(hyper),
        libtorch_fused_(fused || std::any_of(params_.begin(), params_.end(),
                                             [](const at::Tensor& p) { return !p.device().is_cpu(); })) {}

  // Which kernel steps the parameters, for the log.
  const char* implementation() const {
    return libtorch_fused_ ? "LibTorch's fused kernel (torch's fused=True)" : "fthost's single-pass CPU kernel";
  }

  double lr() const override { return hyper_.lr; }

  void step() override { step_scaled(1.0); }
  bool step_with_gradient_scale(double gradient_scale) override {
    if (!folds_gradient_scale()) return false;
    step_scaled(gradient_scale);
    return true;
  }

  void set_lr(double lr) override { hyper_.lr = lr; }

  void zero_grad(bool set_to_none) override { ftoptim::zero_gradients(params_, set_to_none); }

  std::vector<ft::NamedTensor> state() const override {
    std::vector<ft::NamedTensor> out;
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (state_[i]) state_[i]->save(prefix(i), out);
    return out;
  }

  void load_state(const std::vector<ft::NamedTensor>& state) override {
    const auto by_param = ftoptim::state_by_parameter(state, params_.size(), "this optimizer");
    std::vector<std::optional<State>> loaded(params_.size());
    for (const auto& [index, fields] : by_param) loaded[index] = State::load(params_[index], fields, prefix(index));
    state_ = std::move(loaded);
  }

 protected:
  // One step on every gradient times `gradient_scale` (1 for a plain step()).
  virtual void step_scaled(double gradient_scale) = 0;

  static std::string prefix(std::size_t index) { return "state." + std::to_string(index) + "."; }

  // LibTorch rounds the factor of an in-place bfloat16 multiply to bfloat16 in some versions and
  // not in others, so only float32 and float64 gradients are scaled inside the step, where the
  // result is the same in every version.
  bool folds_gradient_scale() const {
    // LibTorch's fused kernels divide by a scale (AMP's) rather than multiply: the recipe scales.
    if (libtorch_fused_) return false;
    return std::all_of(params_.begin(), params_.end(), [](const at::Tensor& p) {
      return p.scalar_type() == at::kFloat || p.scalar_type() == at::kDouble;
    });
  }

  std::vector<at::Tensor> params_;
  std::vector<std::optional<State>> state_;
  Hyperparameters hyper_;
  bool libtorch_fused_;
};

class AdamOptimizer final : public SinglePassOptimizer<AdamState, ftoptim::AdamHyperparameters> {
 public:
  using SinglePassOptimizer::SinglePassOptimizer;

 private:
  void step_scaled(double gradient_scale) override {
    if (libtorch_fused_) return fused_step();
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const at::Tensor& p = params_[i];
      const at::Tensor& grad = p.grad();
      if (!grad.defined()) continue;
      AdamState& st = state_for(i);
      st.step += 1;
      ftoptim::adam_update(p, grad.is_contiguous() ? grad : grad.contiguous(), st.exp_avg, st.exp_avg_sq,
                           st.max_exp_avg_sq, st.step, hyper_, gradient_scale);
    }
  }

  // torch's _fused_adam(w) over every parameter with a gradient at once. Its step counts are
  // float32 tensors on the parameters' device (as torch.optim keeps them for fused=True); the
  // int64 count in AdamState stays the one that is saved.
  void fused_step() {
    std::vector<at::Tensor> p, g, m, v, vmax, steps;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const at::Tensor& param = params_[i];
      if (!param.grad().defined()) continue;
      AdamState& st = state_for(i);
      if (!st.device_step.defined() || st.device_step.device() != param.device())
        st.device_step = at::full({}, static_cast<double>(st.step), param.options().dtype(at::kFloat));
      st.step += 1;
      p.push_back(param);
      g.push_back(param.grad());
      m.push_back(st.exp_avg);
      v.push_back(st.exp_avg_sq);
      if (hyper_.amsgrad) vmax.push_back(st.max_exp_avg_sq);
      steps.push_back(st.device_step);
    }
    if (p.empty()) return;
    at::_foreach_add_(steps, 1.0);
    const auto& h = hyper_;
    if (h.decoupled_weight_decay)
      at::_fused_adamw_(p, g, m, v, vmax, steps, h.lr, h.beta1, h.beta2, h.weight_decay, h.eps, h.amsgrad, false);
    else
      at::_fused_adam_(p, g, m, v, vmax, steps, h.lr, h.beta1, h.beta2, h.weight_decay, h.eps, h.amsgrad, false);
  }

  AdamState& state_for(std::size_t i) {
    const at::Tensor& p = params_[i];
    if (!state_[i]) {
      AdamState fresh;
      fresh.exp_avg = at::zeros_like(p, at::MemoryFormat::Contiguous);
      fresh.exp_avg_sq = at::zeros_like(p, at::MemoryFormat::Contiguous);
      if (hyper_.amsgrad) fresh.max_exp_avg_sq = at::zeros_like(p, at::MemoryFormat::Contiguous);
      state_[i] = std::move(fresh);
    }
    AdamState& st = *state_[i];
    if (hyper_.amsgrad && !st.max_exp_avg_sq.defined())
      throw ft::Error("optimizer state \"" + prefix(i) +
                      "max_exp_avg_sq\" is missing: the state was saved without amsgrad");
    return st;
  }
};

class SgdOptimizer final : public SinglePassOptimizer<SgdState, ftoptim::SgdHyperparameters> {
 public:
  using SinglePassOptimizer::SinglePassOptimizer;

 private:
  void step_scaled(double gradient_scale) override {
    if (libtorch_fused_) return fused_step();
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const at::Tensor& p = params_[i];
      const at::Tensor& grad = p.grad();
      if (!grad.defined()) continue;
      bool first_step = false;
      if (hyper_.momentum != 0 && (!state_[i] || !state_[i]->momentum_buffer.defined())) {
        state_[i] = SgdState{at::empty_like(p, at::MemoryFormat::Contiguous)};
        first_step = true;
      }
      ftoptim::sgd_update(p, grad.is_contiguous() ? grad : grad.contiguous(),
                          state_[i] ? state_[i]->momentum_buffer : at::Tensor(), first_step, hyper_, gradient_scale);
    }
  }

  // torch's _fused_sgd over every parameter with a gradient, in two calls: the parameters whose
  // momentum buffer is new (torch's is_first_step copies the gradient into it) and the rest.
  void fused_step() {
    std::vector<at::Tensor> p[2], g[2], buffers[2];
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const at::Tensor& param = params_[i];
      if (!param.grad().defined()) continue;
      int first = 0;
      if (hyper_.momentum != 0 && (!state_[i] || !state_[i]->momentum_buffer.defined())) {
        state_[i] = SgdState{at::empty_like(param, at::MemoryFormat::Contiguous)};
        first = 1;
      }
      p[first].push_back(param);
      g[first].push_back(param.grad());
      if (hyper_.momentum != 0) buffers[first].push_back(state_[i]->momentum_buffer);
    }
    const auto& h = hyper_;
    for (int first = 0; first < 2; ++first)
      if (!p[first].empty())
        at::_fused_sgd_(p[first], g[first], buffers[first], h.weight_decay, h.momentum, h.lr, h.dampening, h.nesterov,
                        false, first == 1);
  }
};

// Recorded so a user sees which kernel steps the parameters, and that `foreach` changes nothing.
template <class Optimizer>
std::unique_ptr<ft::Optimizer> logged(const ft::ConfigNode& cfg, std::unique_ptr<Optimizer> optimizer) {
  ft::log::info(
      "{}: {}{}", cfg.path(), optimizer->implementation(),
      cfg.get<bool>("foreach") ? " (foreach=true asks for torch's unfused multi-tensor form, which does not run)" : "");
  return optimizer;
}

constexpr const char* kFusedHelp =
    "LibTorch's fused kernel (torch's fused=True) on any device; CUDA parameters always use it, CPU ones fthost's "
    "single-pass kernel otherwise";
constexpr const char* kForeachHelp =
    "torch's unfused multi-tensor form: accepted, and the fused or single-pass kernel runs instead (logged)";

ft::Schema adam_schema(const char* weight_decay_default) {
  ft::Schema s;
  s.optional("lr", ValueType::Float, "1e-3", "learning rate")
      .optional("betas", ValueType::List, "[0.9, 0.999]", "coefficients of the running averages")
      .optional("eps", ValueType::Float, "1e-8", "denominator term for numerical stability")
      .optional("weight_decay", ValueType::Float, weight_decay_default, "weight decay")
      .optional("amsgrad", ValueType::Bool, "false", "use the AMSGrad variant")
      .optional("fused", ValueType::Bool, "false", kFusedHelp)
      .optional("foreach", ValueType::Bool, "false", kForeachHelp);
  return s;
}

ftoptim::AdamHyperparameters adam_hyperparameters(const ft::ConfigNode& cfg, bool decoupled) {
  ftoptim::AdamHyperparameters h;
  h.lr = cfg.get<double>("lr");
  std::tie(h.beta1, h.beta2) = ftoptim::adam_betas(cfg);
  h.eps = cfg.get<double>("eps");
  h.weight_decay = cfg.get<double>("weight_decay");
  h.amsgrad = cfg.get<bool>("amsgrad");
  h.decoupled_weight_decay = decoupled;
  return h;
}

void register_components(ft::Registry& reg) {
  ftoptim::register_bitsandbytes_optimizers(reg);
  reg.add<ft::Optimizer>(
      "torch.optim.AdamW", adam_schema("1e-2"), "Adam with decoupled weight decay (torch.optim.AdamW)",
      [](const ft::ConfigNode& cfg, ft::Optimizer::Args args) {
        return logged(cfg, std::make_unique<AdamOptimizer>(std::move(args.params), adam_hyperparameters(cfg, true),
                                                           cfg.get<bool>("fused")));
      });
  reg.add<ft::Optimizer>(
      "torch.optim.Adam", adam_schema("0.0"), "Adam with L2 weight decay (torch.optim.Adam)",
      [](const ft::ConfigNode& cfg, ft::Optimizer::Args args) {
        return logged(cfg, std::make_unique<AdamOptimizer>(std::move(args.params), adam_hyperparameters(cfg, false),
                                                           cfg.get<bool>("fused")));
      });
  ft::Schema sgd;
  sgd.required("lr", ValueType::Float, "learning rate")
      .optional("momentum", ValueType::Float, "0.0", "momentum factor")
      .optional("dampening", ValueType::Float, "0.0", "dampening for momentum")
      .optional("weight_decay", ValueType::Float, "0.0", "L2 weight decay")
      .optional("nesterov", ValueType::Bool, "false", "Nesterov momentum")
      .optional("fused", ValueType::Bool, "false", kFusedHelp)
      .optional("foreach", ValueType::Bool, "false", kForeachHelp);
  reg.add<ft::Optimizer>("torch.optim.SGD", sgd, "stochastic gradient descent (torch.optim.SGD)",
                         [](const ft::ConfigNode& cfg, ft::Optimizer::Args args) {
                           ftoptim::SgdHyperparameters h;
                           h.lr = cfg.get<double>("lr");
                           h.momentum = cfg.get<double>("momentum");
                           h.dampening = cfg.get<double>("dampening");
                           h.weight_decay = cfg.get<double>("weight_decay");
                           h.nesterov = cfg.get<bool>("nesterov");
                           if (h.nesterov && (h.momentum <= 0 || h.dampening != 0))
                             cfg.fail("nesterov", "requires momentum > 0 and dampening = 0");
                           return logged(
                               cfg, std::make_unique<SgdOptimizer>(std::move(args.params), h, cfg.get<bool>("fused")));
                         });
}

}  // namespace

FT_PLUGIN("ft_optim", "0.1.0", register_components)
