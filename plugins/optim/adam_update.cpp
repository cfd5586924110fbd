#include "adam_update.h"

#include "elementwise_storage.h"

#include <algorithm>
#include <cmath>

namespace ftoptim {
namespace {

template <class Stored>
void adam_range(Stored* p, const Stored* g, Stored* m, Stored* v, Stored* vmax, std::int64_t begin, std::int64_t end,
                std::int64_t step, const AdamHyperparameters& h) {
  using C = ComputeType<Stored>;
  const C beta1 = static_cast<C>(h.beta1), beta2 = static_cast<C>(h.beta2);
  const C one_minus_beta1 = static_cast<C>(1 - h.beta1), one_minus_beta2 = static_cast<C>(1 - h.beta2);
  const C eps = static_cast<C>(h.eps);
  const double bias_correction1 = 1 - std::pow(h.beta1, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(h.beta2, static_cast<double>(step));
  const C step_size = static_cast<C>(h.lr / bias_correction1);
  const C inv_bias_correction2_sqrt = static_cast<C>(1 / std::sqrt(bias_correction2));
  const C decay = static_cast<C>(1 - h.lr * h.weight_decay);
  const C l2 = static_cast<C>(h.weight_decay);
  const bool decoupled = h.decoupled_weight_decay && h.weight_decay != 0;
  const bool coupled = !h.decoupled_weight_decay && h.weight_decay != 0;
  for (std::int64_t i = begin; i < end; ++i) {
    C param = static_cast<C>(p[i]);
    C grad = static_cast<C>(g[i]);
    if (decoupled) param *= decay;
    if (coupled) grad += l2 * param;
    const C exp_avg = beta1 * static_cast<C>(m[i]) + one_minus_beta1 * grad;
    const C exp_avg_sq = beta2 * static_cast<C>(v[i]) + one_minus_beta2 * grad * grad;
    m[i] = static_cast<Stored>(exp_avg);
    v[i] = static_cast<Stored>(exp_avg_sq);
    C second_moment = exp_avg_sq;
    if (vmax) {
      second_moment = std::max(static_cast<C>(vmax[i]), exp_avg_sq);
      vmax[i] = static_cast<Stored>(second_moment);
    }
    const C denom = std::sqrt(second_moment) * inv_bias_correction2_sqrt + eps;
    p[i] = static_cast<Stored>(param - step_size * (exp_avg / denom));
  }
}

}  // namespace

void adam_update(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& exp_avg,
                 const at::Tensor& exp_avg_sq, const at::Tensor& max_exp_avg_sq, std::int64_t step,
                 const AdamHyperparameters& h) {
  if (!param.is_contiguous()) throw ft::Error("optimizer: a parameter is not contiguous");
  require_like(param, grad, "gradient");
  require_like(param, exp_avg, "exp_avg state");
  require_like(param, exp_avg_sq, "exp_avg_sq state");
  if (h.amsgrad) require_like(param, max_exp_avg_sq, "max_exp_avg_sq state");
  dispatch_stored_type(param, [&](auto stored) {
    using Stored = decltype(stored);
    Stored* p = param.data_ptr<Stored>();
    const Stored* g = grad.data_ptr<Stored>();
    Stored* m = exp_avg.data_ptr<Stored>();
    Stored* v = exp_avg_sq.data_ptr<Stored>();
    Stored* vmax = h.amsgrad ? max_exp_avg_sq.data_ptr<Stored>() : nullptr;
    at::parallel_for(0, param.numel(), kGrainSize,
                     [&](std::int64_t begin, std::int64_t end) { adam_range(p, g, m, v, vmax, begin, end, step, h); });
  });
}

}  // namespace ftoptim
