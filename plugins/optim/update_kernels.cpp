// The update loops of update_kernels.h, compiled once per instruction set (FT_OPTIM_ISA). Each
// loop is instantiated for its weight-decay and AMSGrad / momentum settings, so its body has no
// branch and the compiler vectorises it; a branch in the loop kept it scalar.
#include "update_kernels.h"

#include "elementwise_storage.h"

#include <algorithm>
#include <cmath>

#ifndef FT_OPTIM_ISA
#error "FT_OPTIM_ISA must name the instruction set this copy is compiled for"
#endif

namespace ftoptim {
namespace FT_OPTIM_ISA {
namespace {

// The gradient times the recipe's scale, rounded to the stored type as LibTorch's in-place
// multiply of the gradient would round it: the same value as scaling first, then stepping.
template <class Stored>
inline ComputeType<Stored> scaled_gradient(Stored g, ComputeType<Stored> scale) {
  return static_cast<ComputeType<Stored>>(static_cast<Stored>(static_cast<ComputeType<Stored>>(g) * scale));
}

template <class Stored, bool Decoupled, bool Coupled, bool Amsgrad>
void adam_loop(Stored* __restrict p, const Stored* __restrict g, Stored* __restrict m, Stored* __restrict v,
               Stored* __restrict vmax, std::int64_t begin, std::int64_t end, std::int64_t step,
               const AdamHyperparameters& h, double gradient_scale) {
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
  const C scale = static_cast<C>(gradient_scale);
  for (std::int64_t i = begin; i < end; ++i) {
    C param = static_cast<C>(p[i]);
    C grad = scaled_gradient<Stored>(g[i], scale);
    if constexpr (Decoupled) param *= decay;
    if constexpr (Coupled) grad += l2 * param;
    const C exp_avg = beta1 * static_cast<C>(m[i]) + one_minus_beta1 * grad;
    const C exp_avg_sq = beta2 * static_cast<C>(v[i]) + one_minus_beta2 * grad * grad;
    m[i] = static_cast<Stored>(exp_avg);
    v[i] = static_cast<Stored>(exp_avg_sq);
    C second_moment = exp_avg_sq;
    if constexpr (Amsgrad) {
      second_moment = std::max(static_cast<C>(vmax[i]), exp_avg_sq);
      vmax[i] = static_cast<Stored>(second_moment);
    }
    const C denom = std::sqrt(second_moment) * inv_bias_correction2_sqrt + eps;
    p[i] = static_cast<Stored>(param - step_size * (exp_avg / denom));
  }
}

template <class Stored>
void adam_dispatch(Stored* p, const Stored* g, Stored* m, Stored* v, Stored* vmax, std::int64_t begin, std::int64_t end,
                   std::int64_t step, const AdamHyperparameters& h, double gradient_scale) {
  const bool decoupled = h.decoupled_weight_decay && h.weight_decay != 0;
  const bool coupled = !h.decoupled_weight_decay && h.weight_decay != 0;
  const bool amsgrad = vmax != nullptr;
  auto run = [&](auto decoupled_c, auto coupled_c) {
    if (amsgrad)
      adam_loop<Stored, decltype(decoupled_c)::value, decltype(coupled_c)::value, true>(p, g, m, v, vmax, begin, end,
                                                                                        step, h, gradient_scale);
    else
      adam_loop<Stored, decltype(decoupled_c)::value, decltype(coupled_c)::value, false>(p, g, m, v, vmax, begin, end,
                                                                                         step, h, gradient_scale);
  };
  if (decoupled)
    run(std::true_type{}, std::false_type{});
  else if (coupled)
    run(std::false_type{}, std::true_type{});
  else
    run(std::false_type{}, std::false_type{});
}

template <class Stored, bool WeightDecay, bool Momentum, bool Nesterov>
void sgd_loop(Stored* __restrict p, const Stored* __restrict g, Stored* __restrict buf, bool first_step,
              std::int64_t begin, std::int64_t end, const SgdHyperparameters& h, double gradient_scale) {
  using C = ComputeType<Stored>;
  const C scale = static_cast<C>(gradient_scale);
  const C lr = static_cast<C>(h.lr), momentum = static_cast<C>(h.momentum);
  const C one_minus_dampening = static_cast<C>(1 - h.dampening), l2 = static_cast<C>(h.weight_decay);
  for (std::int64_t i = begin; i < end; ++i) {
    const C param = static_cast<C>(p[i]);
    C direction = scaled_gradient<Stored>(g[i], scale);
    if constexpr (WeightDecay) direction += l2 * param;
    if constexpr (Momentum) {
      const C velocity = first_step ? direction : momentum * static_cast<C>(buf[i]) + one_minus_dampening * direction;
      buf[i] = static_cast<Stored>(velocity);
      if constexpr (Nesterov)
        direction = direction + momentum * velocity;
      else
        direction = velocity;
    }
    p[i] = static_cast<Stored>(param - lr * direction);
  }
}

template <class Stored>
void sgd_dispatch(Stored* p, const Stored* g, Stored* buf, bool first_step, std::int64_t begin, std::int64_t end,
                  const SgdHyperparameters& h, double gradient_scale) {
  auto run = [&](auto weight_decay_c) {
    constexpr bool wd = decltype(weight_decay_c)::value;
    if (!buf)
      sgd_loop<Stored, wd, false, false>(p, g, buf, first_step, begin, end, h, gradient_scale);
    else if (h.nesterov)
      sgd_loop<Stored, wd, true, true>(p, g, buf, first_step, begin, end, h, gradient_scale);
    else
      sgd_loop<Stored, wd, true, false>(p, g, buf, first_step, begin, end, h, gradient_scale);
  };
  if (h.weight_decay != 0)
    run(std::true_type{});
  else
    run(std::false_type{});
}

}  // namespace

#define FT_OPTIM_DEFINE_UPDATE_KERNELS(Stored)                                                                   \
  void adam_range(Stored* p, const Stored* g, Stored* m, Stored* v, Stored* vmax, std::int64_t begin,            \
                  std::int64_t end, std::int64_t step, const AdamHyperparameters& h, double gradient_scale) {    \
    adam_dispatch(p, g, m, v, vmax, begin, end, step, h, gradient_scale);                                        \
  }                                                                                                              \
  void sgd_range(Stored* p, const Stored* g, Stored* buf, bool first_step, std::int64_t begin, std::int64_t end, \
                 const SgdHyperparameters& h, double gradient_scale) {                                           \
    sgd_dispatch(p, g, buf, first_step, begin, end, h, gradient_scale);                                          \
  }

FT_OPTIM_DEFINE_UPDATE_KERNELS(float)
FT_OPTIM_DEFINE_UPDATE_KERNELS(double)
FT_OPTIM_DEFINE_UPDATE_KERNELS(c10::BFloat16)
#undef FT_OPTIM_DEFINE_UPDATE_KERNELS

}  // namespace FT_OPTIM_ISA
}  // namespace ftoptim
